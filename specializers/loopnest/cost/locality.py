"""Data reuse in the caches: the bytes a schedule moves into each level of the cache hierarchy.

The roofline memory term of the cost model (``cost.models``) divides bytes moved by a
bandwidth. Counting every access's bytes at every instance (streaming) prices a matrix product
as if no element were ever reused: gemm on 128 x 128 was predicted 12 times slower than it runs,
conv2d 10 times, fbcorr 9 times. This module counts what a cache of a given size must load,
from the reuse distances of the nest's references, after the classic working-set argument
(Wolf and Lam's data locality model; Ferrante, Sarkar and Thrash's estimate of the distinct
lines a loop nest touches):

* References of one array under the same loops whose subscripts differ only by constants
  (``img[m + i, n + j]`` over ``i`` and ``j``: uniformly generated) form a **group**; its
  **region** over a set of loops is the cache lines it touches while those loops run through
  their spans (the others held fixed): per dimension, the span of the affine subscript (or the
  whole dimension where it is not affine), lines counted along the contiguous dimension.
* A group's data are reused across the iterations of a loop when everything one iteration of
  that loop touches (the **working set** of all groups under it) fits the cache: then the
  group loads its region over that loop once per execution of the loop. Walking out from the
  innermost loop while the working set fits gives the group's traffic: its region at the
  outermost such loop times how often that loop is entered. A matrix product's row of ``C``,
  invariant in ``k``, is loaded once per ``k`` loop when one ``j`` sweep fits; ``B`` is
  loaded again for every ``i`` when all of it does not fit.
* A nest whose arrays all fit the cache finds them there (the previous call, or the code that
  made them, just touched them): it loads nothing into that level.

Tiled bands (``schedule.tiling``) are walked as the compiled code walks them: a tile loop
spans its loop's whole range in blocks, the loop inside it one block.

Pure functions of a schedule, the bound accesses and the loops' spans.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from ..analysis.binding import DIRECT, SHIFTED, BoundAccess, BoundLoop
from ..schedule.tree import SLoop, SStmt, STile

#: Bytes of a cache line.
LINE = 64
#: The share of a cache a working set may fill and still be found there on its next use
#: (set associativity, the other data and code that share it).
CACHE_SHARE = 0.5


@dataclass(frozen=True)
class Group:
    """References of one array under the same schedule loops with the same linear subscripts:
    per dimension the (loop, coefficient) pairs (None where the subscript is not affine) and
    the spread of their constants (largest minus smallest)."""

    array: str
    itemsize: int
    shape: tuple[int, ...]
    contiguous: int                     # the dimension adjacent in memory; -1: not known
    coeffs: tuple[tuple[tuple[int, int], ...] | None, ...]
    spread: tuple[int, ...]
    chain: tuple["SLoop | STile", ...]  # the schedule loops around it, outermost first


def region(group: Group, spans: Mapping[int, float]) -> float:
    """Bytes (whole lines) ``group`` touches while each loop ``lid`` of ``spans`` runs through
    ``spans[lid]`` iterations and the other loops are held fixed."""
    if not group.shape:
        return float(LINE)
    rows = 1.0
    lines = 1.0
    for dim, (coeffs, spread, size) in enumerate(zip(group.coeffs, group.spread, group.shape)):
        if coeffs is None:
            extent = distinct = size
        else:
            extent, points = 1 + spread, 1 + spread
            for lid, coeff in coeffs:
                span = spans.get(lid, 1)
                extent += abs(coeff) * (span - 1)
                points *= span
            extent = min(extent, size)
            distinct = min(extent, points)
        if dim == group.contiguous:
            lines = min(distinct, -(-extent * group.itemsize // LINE))
        else:
            rows *= distinct
    if group.contiguous < 0:   # a strided view: each element a line of its own
        return rows * LINE
    return rows * lines * LINE


def groups(schedule_root: Sequence, accesses: Mapping[int, Sequence[BoundAccess]],
           itemsize: Mapping[str, int], shapes: Mapping[str, tuple[int, ...]],
           contiguous: Mapping[str, int]) -> list[Group]:
    """The reference groups of a schedule (see the module). ``contiguous``: per array, the
    dimension adjacent in memory (absent: the last, C order; -1: not known, a line per
    element; 0 for a matrix read through a transposed copy)."""
    found: dict[tuple, tuple[list, list]] = {}

    def visit(node, chain: tuple) -> None:
        if isinstance(node, SStmt):
            for acc in accesses.get(node.sid, ()):
                coeffs = tuple(None if form is None or mode not in (DIRECT, SHIFTED)
                               else form.coeffs
                               for form, mode in zip(acc.dims, _modes(acc)))
                key = (acc.array, coeffs, chain)
                consts = [0 if form is None else form.const for form in acc.dims]
                low, high = found.setdefault(key, (list(consts), list(consts)))
                for k, c in enumerate(consts):
                    low[k], high[k] = min(low[k], c), max(high[k], c)
            return
        for child in node.body:
            visit(child, chain + (node,))

    for node in schedule_root:
        visit(node, ())
    out = []
    for (array, coeffs, chain), (low, high) in found.items():
        shape = tuple(shapes.get(array, ()))
        if len(shape) != len(coeffs):
            shape = tuple(1 << 30 for _ in coeffs)   # (not known: never capped)
        out.append(Group(array, itemsize.get(array, 8), shape,
                         contiguous.get(array, len(shape) - 1), coeffs,
                         tuple(h - l for l, h in zip(low, high)), chain))
    return out


def _modes(acc: BoundAccess) -> tuple[str, ...]:
    return acc.modes or (DIRECT,) * len(acc.dims)


def spans_inside(chain: Sequence["SLoop | STile"], depth: int, loops: Mapping[int, BoundLoop],
                 mean: Mapping[int, float] | None = None) -> dict[int, float]:
    """Iterations each loop of ``chain[depth:]`` runs through while the loops outside it are
    held fixed: a loop's whole range (its largest; with ``mean``, lid -> its mean trip count,
    the mean of a loop whose bounds depend on a loop held fixed: a triangle's rows), or one
    block for a loop inside its own tile loop."""
    fixed = {node.lid for node in chain[:depth]}
    tiled_above = {node.lid: node.size for node in chain[:depth] if isinstance(node, STile)}
    spans: dict[int, float] = {}
    for node in chain[depth:]:
        bound = loops[node.lid]
        full = float(max(bound.t_max + 1, 0))
        if mean is not None and any(lid in fixed for lid, _ in
                                    bound.start.coeffs + bound.extent.coeffs):
            full = min(full, mean.get(node.lid, full))
        if isinstance(node, STile) or node.lid not in tiled_above:
            spans[node.lid] = max(spans.get(node.lid, 0.0), full)
        else:
            spans.setdefault(node.lid, min(tiled_above[node.lid], full))
    return spans


def traffic(found: Sequence[Group], loops: Mapping[int, BoundLoop],
            entered: Callable[[tuple["SLoop | STile", ...]], float], capacity: float,
            footprint: float, mean: Mapping[int, float] | None = None) -> float:
    """Bytes a cache of ``capacity`` bytes loads during one run of the schedule whose
    reference groups are ``found`` (see the module); ``entered(chain)``: how often the
    innermost loop of ``chain`` is entered (1 for an empty chain); ``footprint``: the bytes of
    every array the nest touches (all of them fit: nothing is loaded); ``mean``: lid -> the
    mean trip count of a loop whose bounds depend on others (whether a working set fits is
    judged on its largest iteration, the bytes loaded on the mean)."""
    usable = CACHE_SHARE * capacity
    if footprint <= usable:
        return 0.0
    working: dict[tuple[int, int], float] = {}   # (id of a loop, depth inside) -> bytes

    def working_set(chain: tuple, depth: int) -> float:
        """What one iteration of ``chain[depth - 1]`` touches: every group under it."""
        key = (id(chain[depth - 1]), depth)
        if key not in working:
            owner = chain[depth - 1]
            total = 0.0
            for g in found:
                if len(g.chain) >= depth and g.chain[depth - 1] is owner:
                    total += region(g, spans_inside(g.chain, depth, loops))
            working[key] = total
        return working[key]

    moved = 0.0
    for g in found:
        depth = len(g.chain)   # the group's region over no loop: one instance's lines
        if depth:
            depth -= 1         # the innermost loop's sweep: its lines reused along it
        while depth > 0 and working_set(g.chain, depth) <= usable:
            depth -= 1
        moved += region(g, spans_inside(g.chain, depth, loops, mean or {})) * \
            (entered(g.chain[:depth + 1]) if g.chain else 1.0)
    return moved
