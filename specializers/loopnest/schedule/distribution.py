"""Distribution for blocking: a parallel loop whose body holds a loop nest beside other work is
split into a copy per part, so that the nest becomes a perfect band with it.

PolyBench's syr2k scales row ``i`` of ``C`` and then adds its updates, both under one ``i``
loop: the ``k, j`` loops inside are a band, ``i`` is not part of it, and each row streams all
of ``A`` and ``B`` again (10 GFLOP/s at n = 1024, m = 768). Split into an ``i`` loop that
scales and an ``i`` loop over the updates, ``i, j, k`` is one band, which ``schedule.tiling``
blocks (with ``schedule.packing``'s copies).

``distribute`` (pure: a schedule in, a schedule out) splits every loop that runs in parallel
(its iterations depend on no other: each part's instances of one iteration still run after
the earlier parts' instances of it, and no instance of another iteration cares), holds no
scalar of its own (``private`` or last-iteration: a part would see another iteration's value)
and no reduction, runs under no predicate, and holds a loop beside other parts. Whether the
split pays is for the caller to judge (``codegen.c.serial_schedule`` keeps it where more
loops end up blocked).
"""

from __future__ import annotations

from dataclasses import replace

from .tree import Schedule, SLoop, SStmt


def distribute(schedule: Schedule, loops: dict) -> Schedule:
    """``schedule`` with its splittable loops split (see the module); the same object where
    none is. ``loops``: lid -> ``dast.Loop``."""
    changed = [False]

    def visit(node) -> tuple:
        if isinstance(node, SStmt):
            return (node,)
        body = tuple(part for child in node.body for part in visit(child))
        node = replace(node, body=body) if body != node.body else node
        if not _splittable(node, loops):
            return (node,)
        changed[0] = True
        parts: list[list] = []
        for child in node.body:
            if isinstance(child, SStmt) and parts and isinstance(parts[-1][-1], SStmt):
                parts[-1].append(child)   # (statements side by side stay together)
            else:
                parts.append([child])
        return tuple(replace(node, body=tuple(part)) for part in parts)

    root = tuple(part for node in schedule.root for part in visit(node))
    return replace(schedule, root=root) if changed[0] else schedule


def _splittable(node: SLoop, loops: dict) -> bool:
    return (node.parallel and not node.private and not node.lastprivate and
            not node.reductions and loops[node.lid].predicate is None and
            len(node.body) > 1 and any(isinstance(child, SLoop) for child in node.body))
