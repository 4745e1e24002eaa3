"""Direction-vector enumeration under the Banerjee inequalities (step 3 of ``test_pair``).

``direction_vectors`` builds the vectors loop by loop, outermost first, choosing for each
common loop one of the directions the exact tests left open. Hierarchically: where a loop is
refined, a prefix the Banerjee inequalities rule out is dropped with all its extensions. And
incrementally: each MIV equation ``sum f*t - sum g*t' == const`` keeps the bounds of its left
side under the prefix chosen so far (every loop not yet chosen ranging over its whole box), so
choosing a direction for a loop adds that loop's change to the bounds of the equations it
appears in, instead of testing every loop of every equation again. The vectors are exactly
those ``tests.banerjee_test`` accepts at each refined loop (the tests compare both).

The enumeration can visit ``3**depth`` prefixes: each costs ``spend(units)`` (a
``budget.Budget``'s), which raises ``BudgetExhausted`` to stop it. The vectors found are kept
few: past ``KEEP_VECTORS`` they are merged per carrying level (``merge_vectors``), which only
ever covers more.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from .budget import PREFIX_UNITS
from .tests import EQ, pair_range

STAR = "*"

#: Vectors kept during the enumeration before they are merged (bounds its memory).
KEEP_VECTORS = 4096

Equation = tuple[Mapping[int, int], Mapping[int, int], int]   # (f coeffs, g coeffs, const)
Range = tuple[int, int] | None                                   # None: an empty region


def direction_vectors(common: Sequence[int], options: Mapping[int, Sequence[str]],
                      refine: frozenset[int] | set[int], equations: Sequence[Equation],
                      t_max: Mapping[int, int], spend: Callable[[int], None]
                      ) -> tuple[list[tuple[str, ...]], bool]:
    """Every vector over ``common`` (entries from ``options[lid]``) whose prefix ending at each
    loop in ``refine`` satisfies the Banerjee inequalities of every equation; [] if none does
    (or if some equation has no solution within the bounds whatever the directions). Also
    whether they were merged (then they cover those vectors, and maybe more)."""
    consts = tuple(const for _, _, const in equations)
    base: list[Range] = []
    deltas: list[dict[int, dict[str, Range]]] = []
    for fv, gv, _ in equations:
        free, delta = _equation_bounds(fv, gv, t_max, common)
        base.append(free)
        deltas.append(delta)
    if not _within(base, consts):
        return [], False
    touching = {lid: tuple(k for k, delta in enumerate(deltas) if lid in delta) for lid in common}
    vectors: list[tuple[str, ...]] = []
    merged = False
    ndim = len(common)

    def extend(level: int, bounds: list[Range], prefix: tuple[str, ...]) -> None:
        nonlocal vectors, merged
        if level == ndim:
            vectors.append(prefix)
            if len(vectors) > KEEP_VECTORS:
                vectors, merged = merge_vectors(vectors), True
            return
        lid = common[level]
        eqs = touching[lid]
        check = lid in refine and bool(equations)
        for option in options[lid]:
            spend(PREFIX_UNITS * (1 + len(eqs)))
            trial = bounds
            if option != STAR and eqs:
                trial = list(bounds)
                for k in eqs:
                    trial[k] = _shift(trial[k], deltas[k][lid][option])
            if check and not _within(trial, consts):
                continue
            extend(level + 1, trial, prefix + (option,))

    extend(0, base, ())
    return (merge_vectors(vectors), True) if merged else (vectors, False)


def _equation_bounds(fv: Mapping[int, int], gv: Mapping[int, int], t_max: Mapping[int, int],
                     common: Sequence[int]) -> tuple[Range, dict[int, dict[str, Range]]]:
    """The bounds of ``sum f*t - sum g*t'`` with every loop free (as ``banerjee_test`` computes
    them), and per common loop of the equation, per direction, the change of those bounds."""
    lo = hi = 0
    free_of: dict[int, tuple[int, int]] = {}
    empty = False
    for loop in set(fv) | set(gv):
        u = t_max[loop]
        ra = pair_range(fv[loop], 0, u, STAR) if loop in fv else (0, 0)
        rb = pair_range(0, gv[loop], u, STAR) if loop in gv else (0, 0)
        if ra is None or rb is None:
            empty = True
            continue
        free_of[loop] = (ra[0] + rb[0], ra[1] + rb[1])
        lo += free_of[loop][0]
        hi += free_of[loop][1]
    deltas: dict[int, dict[str, Range]] = {}
    for loop in common:
        if loop not in free_of:
            continue
        a, b, u = fv.get(loop, 0), gv.get(loop, 0), t_max[loop]
        flo, fhi = free_of[loop]
        deltas[loop] = {}
        for direction in ("<", "=", ">"):
            r = pair_range(a, b, u, direction)
            deltas[loop][direction] = None if r is None else (r[0] - flo, r[1] - fhi)
    return (None if empty else (lo, hi)), deltas


def _shift(bounds: Range, delta: Range) -> Range:
    if bounds is None or delta is None:
        return None
    return bounds[0] + delta[0], bounds[1] + delta[1]


def _within(bounds: Sequence[Range], consts: Sequence[int]) -> bool:
    return all(b is not None and b[0] <= c <= b[1] for b, c in zip(bounds, consts))


def merge_vectors(vectors: Sequence[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """Fewer vectors covering ``vectors``: one per prefix up to the first entry other than
    ``=`` (which decides the carrying loop), the later entries kept where all agree, else
    ``*``. Every input vector is covered by the vector of its prefix.

    >>> merge_vectors([("<", "<", "="), ("<", ">", "="), ("=", "<", ">"), ("=", "<", "<")])
    [('<', '*', '='), ('=', '<', '*')]
    """
    groups: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
    for v in vectors:
        first = next((k for k, x in enumerate(v) if x != EQ), len(v) - 1)
        groups.setdefault(v[:first + 1], []).append(v)
    out = []
    for prefix, members in groups.items():
        rest = tuple(column[0] if len(set(column)) == 1 else STAR
                     for column in zip(*(m[len(prefix):] for m in members)))
        out.append(prefix + rest)
    return out
