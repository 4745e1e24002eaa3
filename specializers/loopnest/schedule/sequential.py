"""The sequential schedule: the source loop structure, every loop sequential.

What runs before dependence analysis decides anything, and the schedule of last resort.
"""

from __future__ import annotations

from .. import dast as d
from .tree import Schedule, SLoop, SStmt, StatementSchedule


def sequential_schedule(nest: d.Nest) -> Schedule:
    statements: list[StatementSchedule] = []

    def visit(stmt: d.Stmt, vars_: tuple[str, ...]):
        if isinstance(stmt, d.Loop):
            inner = vars_ + (stmt.var,)
            return SLoop(stmt.lid, False, tuple(visit(c, inner) for c in stmt.body))
        statements.append(StatementSchedule(stmt.sid, vars_, ()))
        return SStmt(stmt.sid)

    root = (visit(nest.loop, ()),)
    statements.sort(key=lambda s: s.sid)
    return Schedule(root, tuple(statements))
