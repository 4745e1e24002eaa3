"""schedule.allen_kennedy: distribution, typed fusion, reductions, private scalars, interchange."""

import numpy as np

from specializers.loopnest.pipeline import analyse_kernel
from specializers.loopnest.schedule.tree import SLoop, SStmt


def plan_of(kernel, **values):
    a = analyse_kernel(kernel).nests[0]
    for name in a.names.outputs:
        values.setdefault(name, None)
    return a, a.plan(a.binder.key(tuple(values[n] for n in a.names.inputs)))


def per_statement(plan):
    return [(s.sequential, s.parallel, s.reductions) for s in plan.schedule.statements]


def test_distribution_separates_a_recurrence_from_parallel_work():
    def kernel(self, A, B, n):
        for i in range(1, n):
            B[i] = A[i] * 2.0            # parallel
            A[i] = A[i - 1] + B[i]       # a recurrence on A

    _, plan = plan_of(kernel, A=np.zeros(9), B=np.zeros(9), n=9)
    assert per_statement(plan) == [((), ("i",), ()), (("i",), (), ())]
    first, second = plan.schedule.root
    assert first == SLoop(0, True, (SStmt(0),)) and second == SLoop(0, False, (SStmt(1),))


def test_typed_fusion_keeps_parallel_statements_in_one_loop():
    def kernel(self, A, B, C, n):
        for i in range(n):
            t = A[i] + 1.0
            B[i] = t * 2.0
            C[i] = t * 3.0

    _, plan = plan_of(kernel, A=np.zeros(5), B=np.zeros(5), C=np.zeros(5), n=5)
    (loop,) = plan.schedule.root
    assert loop.parallel and [s.sid for s in loop.body] == [0, 1, 2] and loop.private == ("t",)


def test_reduction_loops_are_reductions_not_sequential():
    def kernel(self, A, n, m):
        total = 0.0
        for i in range(n):
            for j in range(m):
                total += A[i, j]
        return total

    _, plan = plan_of(kernel, A=np.zeros((3, 4)), n=3, m=4)
    assert per_statement(plan) == [((), (), ("i", "j"))]
    assert plan.schedule.root[0].reductions == (("total", "+"),)


def test_private_temporaries_keep_their_definition_and_uses_together():
    def kernel(self, A, B, n):
        for i in range(1, n):
            t = A[i] * 2.0
            A[i] = A[i - 1] + t          # the recurrence cannot take t's definition away
            B[i] = t

    _, plan = plan_of(kernel, A=np.zeros(6), B=np.zeros(6), n=6)
    (loop,) = plan.schedule.root
    assert not loop.parallel and [s.sid for s in loop.body] == [0, 1, 2]


def test_interchange_moves_parallel_loops_outward_only_when_it_pays():
    def gemm_ikj(self, C, A, B):
        for i in range(A.shape[0]):
            for j in range(B.shape[1]):
                for k in range(A.shape[1]):
                    C[i, j] = C[i, j] + A[i, k] * B[k, j]

    a, plan = plan_of(gemm_ikj, C=np.zeros((3, 4)), A=np.zeros((3, 5)), B=np.zeros((5, 4)))
    assert sorted(per_statement(plan)[0][1]) == ["i", "j"] and per_statement(plan)[0][0] == ("k",)
    # i parallel outermost; then, for locality, j (unit stride in C and B) goes innermost:
    # i (parallel), k (sequential), j (parallel)
    outer = plan.schedule.root[0]
    loops = {l.lid: l.var for l in a.access.loops}
    middle, inner = outer.body[0], outer.body[0].body[0]
    assert [loops[outer.lid], loops[middle.lid], loops[inner.lid]] == ["i", "k", "j"]
    assert outer.parallel and not middle.parallel and inner.parallel


def test_sequential_loop_around_parallel_inner_loops():
    def kernel(self, A, n, m):
        for t in range(1, n):
            for i in range(m):
                A[t, i] = A[t - 1, i] * 0.5

    _, plan = plan_of(kernel, A=np.zeros((5, 6)), n=5, m=6)
    (outer,) = plan.schedule.root
    # interchange is legal here too: i moves out and runs in parallel, t stays sequential
    assert per_statement(plan) == [(("t",), ("i",), ())]


def _order(a, plan) -> list[str]:
    loops = {l.lid: l.var for l in a.access.loops}
    node, order = plan.schedule.root[0], []
    while isinstance(node, SLoop):
        order.append(loops[node.lid])
        node = node.body[0]
    return order


def test_the_unit_stride_loop_stays_outside_a_few_constant_iterations():
    """A 3 x 3 convolution's taps are unrolled by the compiler: the image loop j stays around
    them, vectorized over their straight-line body; 7 x 7 taps (49 iterations, more than
    UNROLLED_TRIPS) or taps of runtime bounds move inside it as before."""
    def taps3(self, img, w, out):
        for i in range(out.shape[0]):
            for j in range(out.shape[1]):
                for p in range(3):
                    for q in range(3):
                        out[i, j] += img[i + p, j + q] * w[p, q]

    def taps7(self, img, w, out):
        for i in range(out.shape[0]):
            for j in range(out.shape[1]):
                for p in range(7):
                    for q in range(7):
                        out[i, j] += img[i + p, j + q] * w[p, q]

    def taps_of_w(self, img, w, out):
        for i in range(out.shape[0]):
            for j in range(out.shape[1]):
                for p in range(w.shape[0]):
                    for q in range(w.shape[1]):
                        out[i, j] += img[i + p, j + q] * w[p, q]

    for kernel, k, order in [(taps3, 3, ["i", "j", "p", "q"]), (taps7, 7, ["i", "p", "q", "j"]),
                             (taps_of_w, 3, ["i", "p", "q", "j"])]:
        a, plan = plan_of(kernel, img=np.zeros((20, 20)), w=np.zeros((k, k)),
                          out=np.zeros((20 - k + 1, 20 - k + 1)))
        assert _order(a, plan) == order, kernel.__name__
