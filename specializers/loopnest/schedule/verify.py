"""Schedule verification: does a schedule tree respect every dependence?

Independent of how the schedule was built (distribution, fusion, interchange, locality), for
each dependence edge S1 -> S2 it follows the two statements' paths in the tree:

* over the loops both paths share (in schedule order), the edge's direction must first differ
  from ``=`` with ``<`` on a loop that runs sequentially (or in parallel as the reduction the
  edge belongs to); a ``>`` or ``*`` there, or a ``<`` on a parallel loop, would let the sink
  run before the source;
* if it is ``=`` on all of them, S1 must come first where the paths part (loop distribution
  put S1's copy of the loop before S2's, or S1 before S2 in one body);
* the updates of one reduction commute, so their edges only ask that a parallel loop whose
  iterations both update it combine them (it lists the reduction).

``violations`` returns what is wrong (empty: the schedule is legal). The pipeline runs it on
every schedule and keeps the source order if it finds anything: defence in depth against a
bug in the scheduler.
"""

from __future__ import annotations

from ..analysis.graph import DependenceGraph
from .tree import Schedule, SLoop, SStmt


def statement_paths(schedule: Schedule) -> dict[int, list[tuple[object, int]]]:
    """sid -> [(node, index of the child taken), ...] from the root to the statement."""
    paths: dict[int, list[tuple[object, int]]] = {}

    def visit(node, path) -> None:
        if isinstance(node, SStmt):
            paths[node.sid] = path
            return
        for index, child in enumerate(node.body):
            visit(child, path + [(node, index)])

    for index, node in enumerate(schedule.root):
        visit(node, [(None, index)])
    return paths


def violations(schedule: Schedule, graph: DependenceGraph) -> list[str]:
    paths = statement_paths(schedule)
    found = []
    for edge in graph.edges:
        p1, p2 = paths.get(edge.source), paths.get(edge.sink)
        if p1 is None or p2 is None:
            found.append(f"{_text(edge)}: a statement is missing from the schedule")
            continue
        position = {lid: k for k, lid in enumerate(edge.loops)}
        if edge.reduction is not None:
            found += _reduction_violations(edge, p1, p2, position)
            continue
        satisfied = False
        depth = 0
        while depth < min(len(p1), len(p2)) and p1[depth][0] is p2[depth][0]:
            node, _ = p1[depth]
            if isinstance(node, SLoop):
                k = position.get(node.lid)
                direction = "=" if k is None else edge.vector[k]
                if direction == "<":
                    reduced = (edge.reduction is not None and
                               (edge.variable, edge.reduction) in node.reductions)
                    if node.parallel and not reduced:
                        found.append(f"{_text(edge)}: carried by a parallel loop")
                    satisfied = True
                    break
                if direction != "=":
                    found.append(f"{_text(edge)}: direction {direction} comes first in the "
                                 "schedule's loop order")
                    satisfied = True
                    break
            if p1[depth][1] != p2[depth][1]:
                if p1[depth][1] > p2[depth][1]:
                    found.append(f"{_text(edge)}: the sink's code comes before the source's")
                satisfied = True
                break
            depth += 1
        if not satisfied and edge.source != edge.sink:
            found.append(f"{_text(edge)}: not ordered by the schedule")
    return found


def _reduction_violations(edge, p1, p2, position) -> list[str]:
    """Updates of one reduction commute: their order does not matter, but a parallel loop
    whose iterations both update it must combine them (the reduction clause)."""
    out = []
    depth = 0
    while depth < min(len(p1), len(p2)) and p1[depth][0] is p2[depth][0]:
        node = p1[depth][0]
        if isinstance(node, SLoop) and node.parallel:
            k = position.get(node.lid)
            if k is not None and edge.vector[k] != "=" and \
                    (edge.variable, edge.reduction) not in node.reductions:
                out.append(f"{_text(edge)}: a parallel loop updates the reduction without "
                           "combining it")
        if p1[depth][1] != p2[depth][1]:
            break
        depth += 1
    return out


def _text(edge) -> str:
    return (f"S{edge.source} -> S{edge.sink} {edge.kind} on {edge.variable} "
            f"{'(' + ', '.join(edge.vector) + ')'}")
