"""A device kernel's loop order: a perfect band's parallel loops outermost, so that the grid
runs them all.

The serial and OpenMP schedules put innermost the loop of unit stride
(``schedule.allen_kennedy._with_locality``: gemm runs i, k, j, and vectorizes along j). A
device wants the parallel loops on the grid instead (up to three) and the sequential ones
inside each thread: a sequential loop between two parallel ones leaves the inner parallel loop
to run inside each thread. gemm on an H100 at n = 1024 ran that way on 1,024 threads, each
doing a million multiply-adds: 221 ms, where OpenMP on the machine's 16 cores took 27.

``parallel_first`` reorders such a band with ``schedule.interchange.parallel_outward`` over
the direction vectors of the dependences among its statements (those an enclosing host loop
carries excepted; a reduction's own edges count as any other, so each thread keeps Python's
order of its updates), and keeps the new order only if ``schedule.verify.violations`` finds
the whole schedule with it legal. Pure: it returns a new node or the one it was given.
"""

from __future__ import annotations

import dataclasses

from .. import dast as d
from ..schedule.interchange import parallel_outward
from ..schedule.tree import SLoop, SStmt, perfect_chain, statement_ids
from ..schedule.verify import violations


def parallel_first(node: SLoop, schedule, plan, loops: dict[int, d.Loop],
                   host: SLoop | None = None) -> SLoop:
    """``node`` (a top-level loop of ``schedule``, the device's schedule of ``plan``, or one
    in the body of its host loop ``host``) with its band's parallel loops moved outermost where that is legal; ``node``
    itself where its band is not perfect and rectangular, holds a reduction, a last-iteration
    scalar, a predicate or an exit, is parallel-first already, or the order is not legal."""
    chain = perfect_chain(node)
    if len(chain) < 2 or not all(isinstance(child, SStmt) for child in chain[-1].body):
        return node
    flags = [loop.parallel for loop in chain]
    if flags == sorted(flags, reverse=True):
        return node   # no sequential loop comes before a parallel one
    band = [loop.lid for loop in chain]
    variables = {loops[lid].var for lid in band}
    for loop in chain:
        source = loops[loop.lid]
        if loop.reductions or loop.lastprivate or source.predicate or d.exits(source) or \
                plan.bound.loops[loop.lid].wide:
            return node
        if any(isinstance(n, d.Var) and n.name in variables
               for bound in (source.start, source.stop, source.step) for n in bound.walk()):
            return node   # not rectangular: a bound reads another loop of the band
    order = parallel_outward(band, _vectors(plan.graph.edges, set(statement_ids(node)), band,
                                            host))
    if order is None or [lid for lid, _ in order] == band:
        return node
    private = tuple(sorted({name for loop in chain for name in loop.private}))
    inner: tuple = chain[-1].body
    for lid, parallel in reversed(order):
        inner = (SLoop(lid, parallel, inner, (), private, ()),)
    reordered = inner[0]
    changed = dataclasses.replace(schedule, root=_replaced(schedule.root, node, reordered))
    if changed.root == schedule.root:
        return node   # (not found: nothing to check it against)
    return node if violations(changed, plan.graph) else reordered


def _vectors(edges, sids: set[int], band: list[int], host: SLoop | None
             ) -> list[dict[int, str]]:
    """Each carried dependence among ``sids``' directions at the band's loops, but those the
    host loop carries (it runs them in order)."""
    out = []
    for edge in edges:
        if edge.source not in sids or edge.sink not in sids or edge.level is None:
            continue
        position = {lid: k for k, lid in enumerate(edge.loops)}
        if host is not None and host.lid in position and edge.vector[position[host.lid]] == "<":
            continue
        out.append({lid: edge.vector[position[lid]] for lid in band if lid in position})
    return out


def _replaced(nodes: tuple, old, new) -> tuple:
    """``nodes`` with ``old`` (the very object) replaced by ``new``, at any depth."""
    out = []
    for child in nodes:
        if child is old:
            out.append(new)
        elif isinstance(child, SLoop):
            out.append(dataclasses.replace(child, body=_replaced(child.body, old, new)))
        else:
            out.append(child)
    return tuple(out)
