"""The target-independent walk of a schedule: loops and statements in schedule order.

An emitter implements ``loop(loop, node, body)`` (``body()`` emits what the loop contains, so
the emitter decides what goes around it) and ``statement(stmt, node)``; one that emits tiled
schedules (``schedule.tiling``) also ``tile(loop, node, body)``. Adding a target means
adding an emitter; the walk itself never changes.
"""

from __future__ import annotations

from typing import Callable, Protocol

from .. import dast as d
from ..schedule.tree import Schedule, SLoop, SStmt, STile


class Emitter(Protocol):
    def loop(self, loop: d.Loop, node: SLoop, body: Callable[[], None]) -> None: ...

    def tile(self, loop: d.Loop, node: STile, body: Callable[[], None]) -> None: ...

    def statement(self, stmt: d.Assign, node: SStmt) -> None: ...


def walk(schedule: Schedule, nest: d.Nest, emitter: Emitter) -> None:
    """Emit ``schedule`` of ``nest`` through ``emitter``."""
    loops = {loop.lid: loop for loop in d.loops(nest.loop)}
    statements = {stmt.sid: stmt for stmt in d.statements(nest.loop)}

    def visit(node: SLoop | SStmt | STile) -> None:
        if isinstance(node, SLoop):
            emitter.loop(loops[node.lid], node, lambda: [visit(child) for child in node.body])
        elif isinstance(node, STile):   # (only emitters of tiled schedules meet one)
            emitter.tile(loops[node.lid], node, lambda: [visit(child) for child in node.body])
        else:
            emitter.statement(statements[node.sid], node)

    for node in schedule.root:
        visit(node)
