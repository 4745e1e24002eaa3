"""Tiling: the loops of a fully permutable band walked in blocks that stay in the cache.

A plain gemm (``C[i, j] += A[i, k] * B[k, j]``, scheduled i, k, j) streams all of ``B`` once
per ``i``: at n = 2000 that is 32 MB per row, and the loop waits for memory. Walked in blocks
(tile loops over i, k and j outside, the block's own i, k, j inside), a block of ``B`` is
reused by every row of the block of ``i`` while it is in the cache.

``tile_schedule`` (pure: a schedule, its dependence graph and binding in, a schedule out)
finds bands: chains of perfectly nested loop copies (each the only child of the one around
it), at least two deep, and tiles the first of them, from the outside in, that is

* **legal**: fully permutable. Every dependence between statements of the band that the
  loops around it may leave in one iteration (no ``<`` among their directions) has direction
  ``=`` or ``<`` on every loop of the band, never ``>`` or ``*``: then any order of the band's
  iterations that keeps each loop's own order per dependence runs every source before its
  sink, the blocked order included. A reduction updating one element (``C[i, j] += ...``)
  is such a dependence (``<`` on k), so its updates keep Python's order exactly;
* **simple**: every loop of the band is far from the ends of int64 (its blocks' ends cannot
  overflow; it may step down), has no predicate, no scalar reduction and no last-iteration
  scalar; a loop whose bounds read the band's outer loops (a triangle: ``for j in
  range(i + 1)``, at most ``MAX_FOLLOWED`` of them, none of them triangular itself) steps
  up, and its step reads none of them. It is tiled by the numbers of its iterations
  (``triangular``);
* **worth it**: the arrays the band touches do not fit in half the L2 cache
  (``asp_core.platform.data_caches``), and some loop runs longer than its block.

Block sizes (``block_sizes``, not a function of the trip counts: one module serves every
size): every loop starts at ``MIN_BLOCK`` iterations; the innermost loop (the one walking memory contiguously, after interchange) doubles first, up to
``MAX_INNER_BLOCK``, then the others in turn, while a block's footprint (per array, its
element size times the block sizes of the band loops its subscripts use) fits in half the L2.
``force`` (``ASP_TILE``) tiles every legal, simple band with blocks of that size (tests), or
never (0).

Tile loops come in the band's order, outermost first, then the band's loops, each running one
block; ``TiledBand`` records what was chosen and why, for ``explain()``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import dast as d
from ..analysis.binding import BoundNest
from ..analysis.graph import DependenceGraph
from .tree import Schedule, SLoop, SStmt, STile, perfect_chain, statement_ids

#: The smallest block tried, the innermost loop's largest (iterations).
MIN_BLOCK = 8
MAX_INNER_BLOCK = 512
#: The largest of any other loop.
MAX_BLOCK = 256
#: A band's blocks fill at most this share of the L2 cache.
L2_SHARE = 0.5
#: The most loops of its band a triangular loop's bounds may read (its hull is found at the
#: corners of their blocks: 2 ** MAX_FOLLOWED of them).
MAX_FOLLOWED = 2


@dataclass(frozen=True)
class TiledBand:
    """One tiled band: its loops' variables, their block sizes, and why."""

    variables: tuple[str, ...]
    sizes: tuple[int, ...]
    footprint: int       # bytes a block touches
    why: str
    follows: tuple[str, ...] = ()   # "j follows i" for each triangular loop (``triangular``)

    def describe(self) -> str:
        blocks = " x ".join(f"{v}:{s}" for v, s in zip(self.variables, self.sizes))
        text = f"tiled ({blocks}; a block touches {self.footprint / 1024:.0f} KiB): {self.why}"
        if self.follows:
            text += f" ({'; '.join(self.follows)}: blocks of its iterations' numbers)"
        return text


def tile_schedule(schedule: Schedule, graph: DependenceGraph, bound: BoundNest, loops: dict,
                  itemsize: dict[str, int], l2_bytes: int, force: int | None = None,
                  shared: bool = False) -> tuple[Schedule, tuple[TiledBand, ...]]:
    """``schedule`` with its bands tiled where legal, simple and worth it (see the module).
    ``loops``: lid -> the nest's ``dast.Loop``; ``itemsize``: array -> bytes per element;
    ``shared``: only bands that are whole top-level nests headed by a parallel loop (the
    OpenMP variant shares that loop's blocks among its threads)."""
    if force == 0:
        return schedule, ()
    tiled: list[TiledBand] = []

    def visit(node):
        if isinstance(node, SStmt):
            return node
        chain = perfect_chain(node)
        for start in range(len(chain) - 1):
            band = chain[start:]
            if shared and (start or not band[0].parallel):
                break
            choice = _choose(band, graph, bound, loops, itemsize, l2_bytes, force)
            if choice is not None:
                sizes, footprint, why = choice
                variables = [loops[n.lid].var for n in band]
                follows = tuple(
                    f"{loops[n.lid].var} follows {', '.join(o.var for o in found)}"
                    for k, n in enumerate(band)
                    if (found := triangular(loops[n.lid], [loops[o.lid] for o in band[:k]])))
                tiled.append(TiledBand(tuple(variables), sizes, footprint, why, follows))
                return _rebuild(chain[:start], _tiled(band, sizes))
        if shared:
            return node
        return replace(node, body=tuple(visit(c) for c in node.body))

    root = tuple(visit(node) for node in schedule.root)
    if not tiled:
        return schedule, ()
    return replace(schedule, root=root), tuple(tiled)


def _choose(band: list[SLoop], graph, bound: BoundNest, loops, itemsize, l2_bytes: int,
            force: int | None) -> tuple[tuple[int, ...], int, str] | None:
    """(block sizes, footprint, why) for ``band``, or None where it is not tiled."""
    lids = [n.lid for n in band]
    if not _simple(band, bound, loops) or not _permutable(band, graph):
        return None
    trips = [bound.loops[lid].t_max + 1 for lid in lids]
    accesses = _accesses(band, bound, itemsize)
    if force:
        sizes = (force,) * len(lids)
        if all(s >= t for s, t in zip(sizes, trips)):
            return None
        return sizes, _footprint(accesses, lids, sizes), f"ASP_TILE={force}"
    budget = int(l2_bytes * L2_SHARE)
    whole = _footprint(accesses, lids, tuple(trips))
    if whole <= budget:
        return None   # it all fits already: blocks would only add loops
    sizes = block_sizes(accesses, lids, budget)
    if all(s >= t for s, t in zip(sizes, trips)):
        return None
    return (sizes, _footprint(accesses, lids, sizes),
            f"its arrays ({whole / 1024:.0f} KiB) do not fit in half the L2 "
            f"({budget / 1024:.0f} KiB)")


def block_sizes(accesses, lids: list[int], budget: int) -> tuple[int, ...]:
    """Block sizes for a band whose accesses are ``accesses``: the innermost loop's grows
    first (doubling, up to ``MAX_INNER_BLOCK``), then the others' in turn (up to
    ``MAX_BLOCK``), while a block's footprint fits in ``budget`` bytes. Not a function of the
    trip counts, so that one module serves every size a tiled band runs at."""
    sizes = [MIN_BLOCK] * len(lids)
    order = [len(lids) - 1] + list(range(len(lids) - 1))
    grew = True
    while grew:
        grew = False
        for k in order:
            limit = MAX_INNER_BLOCK if k == len(lids) - 1 else MAX_BLOCK
            wider = sizes[:k] + [min(2 * sizes[k], limit)] + sizes[k + 1:]
            if wider[k] > sizes[k] and _footprint(accesses, lids, tuple(wider)) <= budget:
                sizes, grew = wider, True
                if k == len(lids) - 1:
                    break   # the innermost grows as far as it can before the others
    return tuple(sizes)


def _simple(band: list[SLoop], bound: BoundNest, loops) -> bool:
    lids = {n.lid for n in band}
    variables = {loops[lid].var for lid in lids}
    triangles: set[str] = set()
    for node in band:
        b = bound.loops[node.lid]
        if node.reductions or node.lastprivate or loops[node.lid].predicate or b.wide or \
                b.t_max < 0:
            return False
        loop = loops[node.lid]
        if uses(loop.step, variables):
            return False
        follows = uses(loop.start, variables) | uses(loop.stop, variables)
        if follows or any(lid in lids for lid, _ in b.start.coeffs + b.extent.coeffs):
            # triangular within the band (``triangular``): upward only, following only
            # rectangular loops
            if b.step <= 0 or not follows or len(follows) > MAX_FOLLOWED or \
                    follows & triangles:
                return False
            triangles.add(loop.var)
    return True


def uses(expr, variables: set[str]) -> set[str]:
    """The names of ``variables`` that ``expr`` (a bound of a loop) reads."""
    return {node.name for node in expr.walk() if isinstance(node, d.Var)} & variables


def triangular(loop, open_loops) -> tuple:
    """The loops of ``open_loops`` (``dast.Loop``s whose tile loops are open around the tile
    loop of ``loop``) that ``loop``'s bounds read, in their order: a loop of a tiled band
    whose range follows the band's outer loops (``for j in range(i + 1)``). Its blocks are
    blocks of its iterations' numbers, not of its values: the dependence analysis orders
    iterations by number, and a band permutable in that order runs right in any order of
    such blocks (numbered from its start, a value ``j`` is a later iteration at one ``i``
    and an earlier one at the next where the start grows with ``i``). Its tile loop walks
    the numbers from 0 to the most iterations the loop runs at a corner of the blocks at
    hand of the loops it follows (its trip count is affine in them, so extreme at a
    corner), and its block runs those of its own range."""
    names = uses(loop.start, {o.var for o in open_loops}) | \
        uses(loop.stop, {o.var for o in open_loops})
    return tuple(o for o in open_loops if o.var in names)


def _permutable(band: list[SLoop], graph: DependenceGraph) -> bool:
    lids = [n.lid for n in band]
    inside = set(statement_ids(band[-1]))
    for edge in graph.edges:
        if edge.source not in inside or edge.sink not in inside:
            continue
        positions = [edge.loops.index(lid) for lid in lids if lid in edge.loops]
        if len(positions) != len(lids):
            return False   # (the statements share the band: cannot happen)
        if "<" in edge.vector[:min(positions)]:
            continue   # carried by a loop around the band
        if any(edge.vector[p] not in ("=", "<") for p in positions):
            return False
    return True


def _accesses(band: list[SLoop], bound: BoundNest, itemsize) -> set[tuple[str, frozenset, int]]:
    """(array, the band loops its subscripts use, element size) of each access in the band;
    a subscript the binding could not read uses them all."""
    lids = {n.lid for n in band}
    out = set()
    for sid in statement_ids(band[-1]):
        for access in bound.accesses[sid]:
            used: set[int] = set()
            for dim in access.dims:
                used |= lids if dim is None else {lid for lid, _ in dim.coeffs if lid in lids}
            out.add((access.array, frozenset(used), itemsize.get(access.array, 8)))
    return out


def _footprint(accesses, lids: list[int], sizes: tuple[int, ...]) -> int:
    size_of = dict(zip(lids, sizes))
    total = 0
    for _, used, width in accesses:
        block = width
        for lid in used:
            block *= size_of[lid]
        total += block
    return total


def _tiled(band: list[SLoop], sizes: tuple[int, ...]) -> STile:
    """Tile loops, in the band's order, around the band's loops."""
    inner: SLoop | STile = _rebuild(band[:-1], band[-1])
    for node, size in reversed(list(zip(band, sizes))):
        inner = STile(node.lid, size, (inner,))
    return inner


def _rebuild(outer: list[SLoop], inner):
    """``inner`` inside the loops ``outer`` (outermost first), each its only child."""
    for node in reversed(outer):
        inner = replace(node, body=(inner,))
    return inner
