"""Dependence testing of one pair of array references, after Goff, Kennedy and Tseng.

``test_pair`` takes two bound references (``f`` of statement S1 at iteration ``t``, ``g`` of
S2 at ``t'``) and returns every direction vector over their common loops under which they may
touch the same element, or proves that none exists:

1. each subscript position is classified: ZIV (no loop index), SIV (one loop index, common to
   both: strong, weak-zero, weak-crossing), or MIV (several, or one that only one reference
   has); unknown subscripts (not affine, or possibly wrapping) constrain nothing;
2. ZIV and SIV positions are tested exactly and give, per loop, the allowed directions (and
   the distance, for strong SIV); two positions constraining one loop are intersected, which
   handles coupled SIV subscripts soundly (``A[i, i]`` vs ``A[i + 1, i]`` is independent);
3. MIV positions get the GCD test, then the direction vectors are refined loop by loop with the
   Banerjee inequalities (hierarchically: an infeasible prefix prunes all its extensions);
4. where the classical tests are exact only on rectangular spaces (triangular bounds, coupled
   MIV positions), the surviving vectors are checked with Fourier-Motzkin on the whole system
   (those sharing a prefix together, under the prefix's constraints first).

A loop whose index appears in no subscript keeps ``*`` (every direction) without refinement.
Any doubt leaves a dependence in place: every step can only remove impossible vectors.

Steps 3 and 4 grow exponentially with the depth of the nest, so they charge a work budget
(``analysis.budget``: one per pair, within one per nest). Past it the enumeration stops and
the pair gets one vector with, per loop, the single direction steps 1-2 allowed or ``*``;
an unfinished Fourier-Motzkin pass keeps the vectors it has not disproved. More than
``MAX_VECTORS`` vectors are merged per carrying level (``directions.merge_vectors``). Either
way the test's name says so (``explain()`` shows it), and the answer only ever has more
dependences.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

from . import fourier_motzkin
from .binding import BoundAccess, BoundLoop, TForm
from .budget import MARK, MAX_VECTORS, PAIR_UNITS, Budget, BudgetExhausted
from .directions import direction_vectors, merge_vectors
from .tests import (ANY, EQ, GT, LT, direction_of_distance, gcd_test, strong_siv_test,
                    weak_crossing_siv_test, weak_zero_siv_test, ziv_test)

STAR = "*"

log = logging.getLogger("asp.loopnest")

#: Vectors sharing a prefix from which Fourier-Motzkin checks the prefix first (fewer are
#: checked one by one).
SHARED_PREFIX = 4


@dataclass(frozen=True)
class PairResult:
    """Direction vectors (over the common loops, entries ``< = > *``) under which the two
    references may meet, oriented from the first reference to the second; empty if they are
    independent. ``distances`` has, per common loop, the constant distance ``t' - t`` where a
    strong SIV test found one. ``test`` names the test(s) that decided."""

    vectors: tuple[tuple[str, ...], ...]
    distances: tuple[int | None, ...]
    test: str

    @property
    def independent(self) -> bool:
        return not self.vectors


def test_pair(f: BoundAccess, g: BoundAccess, loops1: Sequence[int], loops2: Sequence[int],
              common: Sequence[int], loops: dict[int, BoundLoop], exact: bool = True,
              budget: Budget | None = None) -> PairResult:
    """All direction vectors under which ``f`` (S1) and ``g`` (S2) may access one element.

    ``budget``: the nest's work budget, if any; the pair spends at most ``PAIR_UNITS`` of it
    before answering conservatively (see the module's docstring).
    """
    pair_budget = Budget(PAIR_UNITS, budget)
    allowed: dict[int, frozenset[str]] = {}
    distance: dict[int, int] = {}
    tests: list[str] = []
    miv: list[tuple[dict[int, int], dict[int, int], int]] = []
    involved: set[int] = set()
    unknown = False
    common_set = set(common)
    for fd, gd in zip(f.dims, g.dims):
        if fd is None or gd is None:
            unknown = True
            continue
        fv, gv = fd.as_dict(), gd.as_dict()
        involved |= set(fv) | set(gv)
        if not fv and not gv:
            if not ziv_test(fd.const, gd.const):
                return PairResult((), (), "ZIV")
            continue
        variables = set(fv) | set(gv)
        if len(variables) == 1 and variables <= common_set:
            (lid,) = variables
            a, b = fv.get(lid, 0), gv.get(lid, 0)
            t_max = loops[lid].t_max
            if a == b:
                dist = strong_siv_test(a, fd.const, gd.const, t_max)
                if dist is None or distance.get(lid, dist) != dist:
                    return PairResult((), (), "strong SIV")
                distance[lid] = dist
                dirs, name = frozenset({direction_of_distance(dist)}), "strong SIV"
            elif a == 0:
                dirs, name = weak_zero_siv_test(b, gd.const, fd.const, t_max, True), "weak-zero SIV"
            elif b == 0:
                dirs, name = weak_zero_siv_test(a, fd.const, gd.const, t_max, False), "weak-zero SIV"
            elif a == -b:
                dirs, name = weak_crossing_siv_test(a, fd.const, gd.const, t_max), "weak-crossing SIV"
            else:
                dirs, name = None, None
            if name is not None:
                if dirs is None:
                    return PairResult((), (), name)
                allowed[lid] = allowed.get(lid, ANY) & dirs
                if not allowed[lid]:
                    return PairResult((), (), f"{name} (coupled)")
                tests.append(name)
                continue
        # MIV (or SIV with unequal coefficients): GCD now, Banerjee when refining directions.
        const = gd.const - fd.const  # sum f*t - sum g*t' == g0 - f0
        if not gcd_test(list(fv.values()) + [-c for c in gv.values()], const):
            return PairResult((), (), "GCD")
        miv.append((fv, gv, const))
        tests.append("GCD+Banerjee")
    if unknown:
        tests.append("unknown subscript")

    refine = [lid for lid in common if lid in involved and lid not in distance]
    # Fourier-Motzkin adds precision where the classical tests are not exact: MIV positions
    # coupled with each other, or over triangular iteration spaces (Banerjee uses boxes).
    triangular = any(loops[l].triangular for l in set(loops1) | set(loops2))
    need_exact = exact and bool(miv) and (triangular or len(miv) > 1)
    t_max = {lid: loops[lid].t_max for lid in set(loops1) | set(loops2)}

    def options(lid: int) -> list[str]:
        if lid in distance:
            return [direction_of_distance(distance[lid])]
        dirs = allowed.get(lid, ANY)
        if lid not in involved and dirs == ANY:
            return [STAR]
        return [x for x in (LT, EQ, GT) if x in dirs]

    choices = {lid: options(lid) for lid in common}
    dists = tuple(distance.get(lid) for lid in common)
    try:
        vectors, merged = direction_vectors(common, choices, set(refine), miv, t_max,
                                            pair_budget.spend)
    except BudgetExhausted as exc:
        # Every direction steps 1-2 left open, per loop: a superset of what was being refined.
        vector = tuple(o[0] if len(o) == 1 else STAR for o in choices.values())
        _log_budget(f, g, "directions not refined", exc)
        return PairResult((vector,), dists,
                          _name(tests, False, f"{MARK}: directions not refined"))
    if not vectors:
        return PairResult((), (), "Banerjee")
    used_exact = False
    notes = []
    if need_exact and any(x != EQ for v in vectors for x in v):
        # Fourier-Motzkin once on the whole system, projected on the common loops' variables;
        # the surviving direction vectors are then checked on that small projection, by shared
        # prefixes. (Vectors all "=" only order statements within an iteration: if there are
        # no others, no need to refine.)
        used_exact = True
        vectors, shadow_empty, stopped = _refine_exactly(f, g, loops1, loops2, common, loops,
                                                         vectors, pair_budget)
        if shadow_empty or not vectors:
            return PairResult((), (), "Fourier-Motzkin")
        if stopped is not None:
            _log_budget(f, g, "Fourier-Motzkin stopped", stopped)
            notes.append(f"{MARK}: Fourier-Motzkin stopped")
    if merged or len(vectors) > MAX_VECTORS:
        notes.append("direction vectors merged per carrying loop")
        vectors = merge_vectors(vectors)
    return PairResult(tuple(vectors), dists, _name(tests, used_exact, *notes))


def _refine_exactly(f: BoundAccess, g: BoundAccess, loops1: Sequence[int], loops2: Sequence[int],
                    common: Sequence[int], loops: dict[int, BoundLoop],
                    vectors: list[tuple[str, ...]], budget: Budget
                    ) -> tuple[list[tuple[str, ...]], bool, BudgetExhausted | None]:
    """``vectors`` less those Fourier-Motzkin disproves; whether the whole system is
    infeasible; and, if the budget ran out, why (the vectors not yet checked are kept).

    Hierarchically: the vectors sharing a prefix are checked once under that prefix's
    constraints, and dropped together if it is infeasible. That is sound (a prefix has fewer
    constraints than each of its vectors) and cheaper; it is also more precise than checking
    whole vectors only, as a smaller system stays under ``fourier_motzkin.LIMIT`` rows.
    """
    try:
        shadow = exact_projection(f, g, loops1, loops2, common, loops, budget)
    except BudgetExhausted as exc:
        return vectors, False, exc
    if shadow is None:
        return [], True, None
    kept: list[tuple[str, ...]] = []
    stopped: BudgetExhausted | None = None

    def feasible(prefix: tuple[str, ...], level: int) -> bool:
        """May ``prefix`` hold (its entries from ``level`` on are new)? True once stopped."""
        nonlocal stopped
        if stopped is not None or all(x == STAR for x in prefix[level:]):
            return True  # "*" adds no constraint
        constraints = direction_constraints(common, dict(zip(common, prefix)))
        try:
            return shadow.feasible_with(*constraints, budget=budget)
        except BudgetExhausted as exc:
            stopped = exc
            return True

    def walk(prefix: tuple[str, ...], members: list[tuple[str, ...]]) -> None:
        level = len(prefix)
        if level == len(common):
            kept.extend(members)
            return
        groups: dict[str, list[tuple[str, ...]]] = {}
        for v in members:
            groups.setdefault(v[level], []).append(v)
        for direction, group in groups.items():
            if len(group) < SHARED_PREFIX:  # a few vectors: each is checked whole
                kept.extend(v for v in group if feasible(v, level))
            elif feasible(prefix + (direction,), level):
                walk(prefix + (direction,), group)

    walk((), vectors)
    return kept, False, stopped


def _log_budget(f: BoundAccess, g: BoundAccess, what: str, exc: BudgetExhausted) -> None:
    log.info("dependence test of S%d/S%d on %s: %s, %s (%s); the dependence is assumed",
             f.sid, g.sid, f.array, MARK, what, exc)


def _name(tests: list[str], exact: bool, *notes: str) -> str:
    names = list(dict.fromkeys(tests)) or ["no subscript constraint"]
    if exact:
        names.append("Fourier-Motzkin")
    return " + ".join(names + list(notes))


def _var(side: str, lid: int) -> str:
    return f"{side}{lid}"


def exact_projection(f: BoundAccess, g: BoundAccess, loops1: Sequence[int],
                     loops2: Sequence[int], common: Sequence[int], loops: dict[int, BoundLoop],
                     budget: Budget | None = None) -> fourier_motzkin.Projection | None:
    """The dependence system of ``f`` and ``g`` (subscript equalities, both iteration spaces
    with triangular bounds) projected on the common loops' variables; None proves
    independence. ``budget``: charged by the elimination (``BudgetExhausted`` propagates)."""
    def form(side: str, tf: TForm) -> tuple[dict[str, int], int]:
        return {_var(side, lid): c for lid, c in tf.coeffs}, tf.const

    equalities = []
    inequalities = []
    for side, chain in (("s", loops1), ("d", loops2)):
        for lid in chain:
            loop = loops[lid]
            if loop.t_max < 0:
                return None  # the statement never runs
            x = _var(side, lid)
            inequalities.append(({x: 1}, 0))                              # t >= 0
            coeffs, const = form(side, loop.extent)                       # |s|*t <= extent - 1
            coeffs[x] = coeffs.get(x, 0) - abs(loop.step)
            inequalities.append((coeffs, const - 1))
    for fd, gd in zip(f.dims, g.dims):
        if fd is None or gd is None:
            continue
        fc, fk = form("s", fd)
        gc, gk = form("d", gd)
        eq = dict(fc)
        for v, c in gc.items():
            eq[v] = eq.get(v, 0) - c
        equalities.append((eq, fk - gk))
    keep = {_var(side, lid) for lid in common for side in "sd"}
    return fourier_motzkin.project(equalities, inequalities, keep, budget)


def direction_constraints(common: Sequence[int], vector: dict[int, str]):
    """(equalities, inequalities) saying iteration ``t`` relates to ``t'`` as ``vector``."""
    equalities, inequalities = [], []
    for lid in common:
        direction = vector.get(lid, STAR)
        s, t = _var("s", lid), _var("d", lid)
        if direction == EQ:
            equalities.append(({s: 1, t: -1}, 0))
        elif direction == LT:
            inequalities.append(({t: 1, s: -1}, -1))   # t' - t - 1 >= 0
        elif direction == GT:
            inequalities.append(({s: 1, t: -1}, -1))
    return equalities, inequalities
