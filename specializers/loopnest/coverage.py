"""Arrays a nest overwrites whole before anything could read them: a device variant allocates
them on the device without copying the caller's values in.

Every device call copied every array in, and the written ones back; an output the nest writes
at every element, and never reads, needs only the copy back. On an H100 the copies were most
of a streaming call's time (vadd: two arrays in and one out of its three in and one out).

``overwritten(analysis, plan)`` names such arrays (the binding's canonical names: an array
passed twice, or another argument sharing its memory, counts as read through the other). An
array qualifies when, for the call's binding:

* no access of the nest reads it;
* one statement writes it unconditionally (no predicate: not under an ``if``, no ``continue``
  before it) in a nest with no ``break``;
* its subscripts are distinct loops, one per dimension, each exactly the loop's iteration count
  (the value ``i`` of ``for i in range(n)``, or ``i - 1`` of ``range(1, n + 1)``), each loop
  rectangular, running exactly the dimension's length; and every other loop around the
  statement is rectangular and runs at least once.

Then every element is written before the call ends, unless the call fails, and a failed call
copies nothing back (the original code runs again on the caller's arrays). Pure.
"""

from __future__ import annotations

from . import dast as d


def overwritten(analysis, plan) -> frozenset[str]:
    """The canonical names of the arrays the call writes whole and never reads (the module)."""
    nest = analysis.nest.loop
    if any(isinstance(s, d.Assign) and s.kind not in ("user", "predicate")
           for s in d.statements(nest)):
        return frozenset()   # a break may end a loop early
    loops = {loop.lid: loop for loop in d.loops(nest)}
    read = {acc.array for accesses in plan.bound.accesses.values() for acc in accesses
            if not acc.write}
    shapes = {plan.bound.canonical[name]: shape
              for name, shape in zip(analysis.names.arrays, plan.bound.key.shapes)}
    statements = {s.sid: s for s in analysis.access.statements}
    out = set()
    for sid, accesses in plan.bound.accesses.items():
        info = statements[sid]
        if info.predicate is not None or any(loops[lid].predicate for lid in info.loops):
            continue
        for acc in accesses:
            if acc.write and acc.array not in read and acc.array not in out and \
                    _covers(acc, info.loops, plan, shapes[acc.array]):
                out.add(acc.array)
    return frozenset(out)


def _covers(acc, around: tuple[int, ...], plan, shape: tuple[int, ...]) -> bool:
    """Whether write ``acc`` (a ``BoundAccess``), under the loops ``around``, reaches every
    element of an array of ``shape`` (see the module)."""
    if len(acc.dims) != len(shape):
        return False
    used = []
    for dim, size in zip(acc.dims, shape):
        if dim is None or dim.const != 0 or len(dim.coeffs) != 1:
            return False
        ((lid, coeff),) = dim.coeffs
        if coeff != 1 or lid in used or _trips(plan.bound.loops[lid]) != size:
            return False
        used.append(lid)
    return all(_trips(plan.bound.loops[lid]) >= 1 for lid in around if lid not in used) and \
        all(_trips(plan.bound.loops[lid]) is not None for lid in around)


def _trips(bound) -> int | None:
    """A rectangular loop's iterations at the binding; None where its range follows another
    loop's (a triangle) or comes near the ends of int64."""
    if bound.start.coeffs or bound.extent.coeffs or bound.wide:
        return None
    return max(0, -(-bound.extent.const // abs(bound.step)))
