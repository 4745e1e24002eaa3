"""Packing: read-only matrices read through a transposed copy, so that the innermost loop of a
band can be one that vectorizes.

PolyBench's syr2k (``C[i, j] += A[j, k] * alpha * B[i, k] + B[j, k] * alpha * A[i, k]``,
``j <= i``) walks ``k`` innermost, where every array but ``C`` has unit stride; but ``k``
carries the sum into ``C[i, j]``, which must add up in Python's order, so that loop is not
vectorized (9 GFLOP/s at n = 2000, 12% of OpenBLAS). ``j`` carries nothing, and only ``C``
has unit stride along it: ``A[j, k]`` and ``B[j, k]`` walk columns. Read through copies laid
out transposed (``A[j, k]`` at ``(k, j)``), every access along ``j`` has unit stride or does
not move, and with ``j`` innermost the loop vectorizes, each element's sum still in Python's
order (a copy holds the same values: the products round as before).

``pack_schedule`` (pure: a schedule, its dependence graph, binding and accesses in; a schedule
out) moves such a loop innermost in a band and records the arrays to copy
(``Schedule.packs``); a band whose innermost loop vectorizes already but reads some arrays by
column through it (PolyBench's own syr2k runs ``k`` then ``j`` under each ``i``) keeps its
order and reads those through copies. Where

* the band is **fully permutable** (``tiling._permutable``: any order of its loops is legal),
  its innermost loop carries a dependence (else it vectorizes as it is), and the loop moved
  (not the first of a band that heads a nest: OpenMP shares that one) carries none and has no
  scalar to reduce, keep private or leave last; no loop it moves inside reads it in its
  bounds;
* every access of the band's statements that moves with that loop has it in the last
  subscript only, with coefficient 1, or is a read of a **two-dimensional array the nest never
  writes** (no array written shares its memory), with the loop in the first subscript only,
  coefficient 1: those are packed (there may be none: the plan's interchange
  (``allen_kennedy._with_locality``) leaves triangular bands as written, and counts unit
  strides, not whether the loop vectorizes);
* the copies pay: they hold at most ``PACK_LIMIT`` bytes, and the band (with the loops around
  it) runs at least ``PACK_REUSE`` iterations per element copied.

The copies are made once per call, before the nest runs (``codegen.c``); the plain-Python
executors read the arrays themselves (the same values) in the same order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..analysis.binding import BoundNest
from ..analysis.graph import DependenceGraph
from .tiling import _permutable, uses
from .tree import Schedule, SLoop, SStmt, perfect_chain, statement_ids

#: The most bytes the copies of one call may hold.
PACK_LIMIT = 512 * 2**20
#: The fewest iterations of the band per element copied.
PACK_REUSE = 16


@dataclass(frozen=True)
class Packing:
    """One band's loop moved innermost and the arrays it reads through transposed copies."""

    variable: str
    arrays: tuple[str, ...]
    moved: bool = True    # False: the loop was innermost already (only the copies are new)


def pack_schedule(schedule: Schedule, graph: DependenceGraph, bound: BoundNest, loops: dict,
                  access, arrays: tuple[str, ...]) -> tuple[Schedule, tuple[Packing, ...]]:
    """``schedule`` with the bands that gain from packing reordered (see the module), and
    what was packed. ``loops``: lid -> ``dast.Loop``; ``access``: the nest's ``AccessInfo``;
    ``arrays``: the nest's array names, in the binding's order (its shapes)."""
    shapes = dict(zip(arrays, bound.key.shapes))
    written = {bound.canonical.get(a.array, a.array) for sid in bound.accesses
               for a in bound.accesses[sid] if a.write}
    for pair in bound.overlapping:
        if pair & written:
            written |= pair
    packed: list[Packing] = []
    budget = [PACK_LIMIT]

    def visit(node, top: bool):
        if isinstance(node, SStmt):
            return node
        chain = perfect_chain(node)
        found = _choose(chain, graph, bound, loops, access, shapes, written, budget, top)
        if found is not None:
            order, packing = found
            packed.append(packing)
            return _rebuild(order, chain[-1].body)
        return replace(node, body=tuple(visit(c, False) for c in node.body))

    root = tuple(visit(node, True) for node in schedule.root)
    if not packed:
        return schedule, ()
    names = tuple(sorted({a for p in packed for a in p.arrays} | set(schedule.packs)))
    moved = schedule.moved + tuple(p.variable for p in packed if p.moved)
    return Schedule(root, schedule.statements, names, moved), tuple(packed)


def _choose(chain: list[SLoop], graph, bound: BoundNest, loops, access, shapes, written,
            budget: list[int], top: bool) -> tuple[list[SLoop], Packing] | None:
    """(the band's loops in their new order, what was packed) for the band ``chain``, or
    None; ``top``: the band heads a nest (its first loop stays: OpenMP shares it)."""
    if not all(isinstance(c, SStmt) for c in chain[-1].body):
        return None
    sids = statement_ids(chain[-1])
    if chain[-1].parallel:   # it vectorizes where it is: copies for what it reads by column
        node = chain[-1]
        loop = loops[node.lid]
        if node.reductions or node.private or node.lastprivate or loop.predicate:
            return None
        arrays = _packable(loop.var, sids, access, written, shapes, bound.canonical)
        if not arrays or not _pays(arrays, chain, bound, shapes, budget):
            return None
        return chain, Packing(loop.var, arrays, moved=False)
    if len(chain) < 2 or not _permutable(chain, graph):
        return None
    for position in range(1 if top else 0, len(chain) - 1):
        node = chain[position]
        loop = loops[node.lid]
        if not node.parallel or node.reductions or node.private or node.lastprivate or \
                loop.predicate:
            continue
        if any(uses(loops[inner.lid].start, {loop.var}) | uses(loops[inner.lid].stop, {loop.var})
               | uses(loops[inner.lid].step, {loop.var}) for inner in chain[position + 1:]):
            continue
        arrays = _packable(loop.var, sids, access, written, shapes, bound.canonical)
        if arrays is None or not _pays(arrays, chain, bound, shapes, budget):
            continue
        order = chain[:position] + chain[position + 1:] + [node]
        return order, Packing(loop.var, arrays)
    return None


def _pays(arrays, chain: list[SLoop], bound: BoundNest, shapes, budget: list[int]) -> bool:
    """Whether copies of ``arrays`` fit what is left of the budget (which they then take)
    and the band runs ``PACK_REUSE`` iterations per element copied (its loops' and the
    enclosing loops' most iterations: each copy is made once per call)."""
    cells = sum(math.prod(shapes[a]) for a in arrays)
    size = cells * 8   # (at most 8 bytes an element)
    lids = [n.lid for n in chain]
    parent = bound.loops[lids[0]].parent
    while parent >= 0:
        lids.append(parent)
        parent = bound.loops[parent].parent
    work = math.prod(max(bound.loops[lid].t_max + 1, 0) for lid in lids)
    if size > budget[0] or work < PACK_REUSE * cells:
        return False
    budget[0] -= size
    return True


def _packable(var: str, sids, access, written: set[str], shapes,
              canonical) -> tuple[str, ...] | None:
    """The arrays to read through transposed copies for ``var`` to walk every access of the
    statements ``sids`` with unit stride (or not move them: () if none is needed); None
    where it cannot."""
    packs: set[str] = set()
    for sid in sids:
        for acc in access.statement(sid).accesses:
            subs = acc.subscripts
            moving = [k for k, s in enumerate(subs) if s is None or var in s.variables]
            if not moving:
                continue
            if any(s is None for s in subs):
                return None
            if moving == [len(subs) - 1] and subs[-1].coeff(var).constant == 1:
                continue   # unit stride already
            if not acc.write and len(subs) == 2 and moving == [0] and \
                    subs[0].coeff(var).constant == 1 and \
                    canonical.get(acc.array, acc.array) not in written and \
                    len(shapes.get(acc.array, ())) == 2:
                packs.add(acc.array)
                continue
            return None
    return tuple(sorted(packs))


def _rebuild(order: list[SLoop], body: tuple) -> SLoop:
    """The loops ``order`` (outermost first) nested around ``body``."""
    inner = body
    for node in reversed(order):
        inner = (replace(node, body=inner),)
    return inner[0]
