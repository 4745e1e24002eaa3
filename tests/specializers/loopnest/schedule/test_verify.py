"""schedule.verify: an independent check of schedules against the dependence graph."""

import numpy as np

from specializers.loopnest.pipeline import analyse_kernel
from specializers.loopnest.schedule.tree import SLoop, SStmt
from specializers.loopnest.schedule.verify import violations


def plan_of(kernel, **values):
    a = analyse_kernel(kernel).nests[0]
    for name in a.names.outputs:
        values.setdefault(name, None)
    return a, a.plan(a.binder.key(tuple(values[n] for n in a.names.inputs)))


def prefix(self, A, n):
    for i in range(1, n):
        A[i] = A[i] + A[i - 1]


def test_legal_schedules_pass_and_wrong_ones_are_caught():
    a, plan = plan_of(prefix, A=np.zeros(5), n=5)
    assert violations(plan.schedule, plan.graph) == [] and plan.rejected == ()
    (loop,) = plan.schedule.root
    wrong = plan.schedule.replace(root=(SLoop(loop.lid, True, loop.body),))
    assert "carried by a parallel loop" in violations(wrong, plan.graph)[0]


def distributed(self, A, B, n):
    for i in range(1, n):
        B[i] = A[i - 1] * 2.0
        A[i] = B[i] + 1.0


def test_distribution_order_is_checked():
    a, plan = plan_of(distributed, A=np.zeros(6), B=np.zeros(6), n=6)
    assert violations(plan.schedule, plan.graph) == []
    swapped = plan.schedule.replace(root=(SLoop(0, False, (SStmt(1), SStmt(0))),))
    assert any("comes before" in v for v in violations(swapped, plan.graph))


def gemm(self, C, A, B):
    for k in range(A.shape[1]):
        for i in range(A.shape[0]):
            for j in range(B.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def test_interchange_that_reverses_a_dependence_is_caught():
    a, plan = plan_of(gemm, C=np.zeros((3, 3)), A=np.zeros((3, 3)), B=np.zeros((3, 3)))
    assert violations(plan.schedule, plan.graph) == []
    # k parallel outermost: the accumulation into C would race
    bad = plan.schedule.replace(root=(SLoop(0, True, (SLoop(1, True, (SLoop(2, True, (SStmt(0),)),)),)),))
    assert violations(bad, plan.graph)
