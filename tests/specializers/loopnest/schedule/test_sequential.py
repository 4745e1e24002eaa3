"""schedule.sequential: the source structure with every loop sequential."""

from specializers.loopnest.pipeline import analyse_kernel
from specializers.loopnest.schedule.tree import SLoop, SStmt


def test_sequential_schedule_mirrors_the_source():
    def kernel(self, A, n):
        for i in range(n):
            A[i, 0] = 0
            for j in range(n):
                A[i, j] += 1

    sched = analyse_kernel(kernel).nests[0].sequential
    assert sched.root == (SLoop(0, False, (SStmt(0), SLoop(1, False, (SStmt(1),)))),)
    assert [s.sequential for s in sched.statements] == [("i",), ("i", "j")]
    assert sched.parallel_loops() == ()
