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
   MIV positions), each surviving vector is checked with Fourier-Motzkin on the whole system.

A loop whose index appears in no subscript keeps ``*`` (every direction) without refinement.
Any doubt leaves a dependence in place: every step can only remove impossible vectors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from . import fourier_motzkin
from .binding import BoundAccess, BoundLoop, TForm
from .tests import (ANY, EQ, GT, LT, banerjee_test, direction_of_distance, gcd_test,
                    strong_siv_test, weak_crossing_siv_test, weak_zero_siv_test, ziv_test)

STAR = "*"


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
              common: Sequence[int], loops: dict[int, BoundLoop], exact: bool = True) -> PairResult:
    """All direction vectors under which ``f`` (S1) and ``g`` (S2) may access one element."""
    ndim = len(common)
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

    def feasible(vector: dict[int, str]) -> bool:
        fixed = {lid: v for lid, v in vector.items() if v != STAR}
        for fv, gv, const in miv:
            if not banerjee_test(fv, gv, const, fixed, t_max):
                return False
        return True

    vectors: list[tuple[str, ...]] = []

    def extend(level: int, chosen: dict[int, str]) -> None:
        if level == ndim:
            vectors.append(tuple(chosen[lid] for lid in common))
            return
        lid = common[level]
        for option in options(lid):
            trial = dict(chosen)
            trial[lid] = option
            if lid in refine and miv and not feasible(trial):
                continue
            extend(level + 1, trial)

    if miv and not feasible({}):
        return PairResult((), (), "Banerjee")
    if ndim == 0:
        return PairResult(((),), (), _name(tests, False))
    extend(0, {})
    if not vectors:
        return PairResult((), (), "Banerjee")
    used_exact = False
    if need_exact and any(x != EQ for v in vectors for x in v):
        # Fourier-Motzkin once on the whole system, projected on the common loops' variables;
        # each surviving direction vector is then checked on that small projection. (Vectors
        # that are all "=" only order statements within an iteration: no need to refine.)
        used_exact = True
        shadow = exact_projection(f, g, loops1, loops2, common, loops)
        if shadow is None:
            return PairResult((), (), "Fourier-Motzkin")
        vectors = [v for v in vectors
                   if shadow.feasible_with(*direction_constraints(common, dict(zip(common, v))))]
        if not vectors:
            return PairResult((), (), "Fourier-Motzkin")
    dists = tuple(distance.get(lid) for lid in common)
    return PairResult(tuple(vectors), dists, _name(tests, used_exact))


def _name(tests: list[str], exact: bool) -> str:
    names = list(dict.fromkeys(tests)) or ["no subscript constraint"]
    if exact:
        names.append("Fourier-Motzkin")
    return " + ".join(names)


def _var(side: str, lid: int) -> str:
    return f"{side}{lid}"


def exact_projection(f: BoundAccess, g: BoundAccess, loops1: Sequence[int],
                     loops2: Sequence[int], common: Sequence[int], loops: dict[int, BoundLoop]
                     ) -> fourier_motzkin.Projection | None:
    """The dependence system of ``f`` and ``g`` (subscript equalities, both iteration spaces
    with triangular bounds) projected on the common loops' variables; None proves
    independence."""
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
    return fourier_motzkin.project(equalities, inequalities, keep)


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
