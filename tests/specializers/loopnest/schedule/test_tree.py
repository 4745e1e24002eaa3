"""schedule.tree: per-statement schedules and the loops parallel for every statement."""

from specializers.loopnest.schedule.tree import Schedule, SLoop, SStmt, StatementSchedule


def test_parallel_loops_are_parallel_for_every_statement():
    sched = Schedule(
        root=(SLoop(0, False, (SStmt(0), SLoop(1, True, (SStmt(1),)))),),
        statements=(StatementSchedule(0, ("i",), ()), StatementSchedule(1, ("i",), ("j",)),
                    StatementSchedule(2, (), ("k",), ("q",))))
    assert sched.parallel_loops() == ("j", "k", "q")
    assert sched.of(1).parallel == ("j",)
