"""analysis.graph: scalar dependences (privatization, reductions), static verdicts, edges."""

import numpy as np

from specializers.loopnest.pipeline import analyse_kernel


def nest(kernel):
    return analyse_kernel(kernel).nests[0]


def test_private_scalars_carry_nothing_and_reductions_are_marked():
    def kernel(self, A, B, n):
        s = 0.0
        for i in range(n):
            t = A[i] * 2.0
            B[i] = t
            s += t
        return s

    a = nest(kernel)
    edges = a.static_dependences.scalar_edges
    t_edges = [e for e in edges if e.variable == "t"]
    assert t_edges and all(e.level is None for e in t_edges)  # loop-independent only
    s_edges = [e for e in edges if e.variable == "s"]
    assert s_edges and all(e.reduction == "+" for e in s_edges if e.level == 1)


def test_carried_scalar():
    def kernel(self, A, n):
        prev = 0.0
        for i in range(n):
            A[i] = A[i] + prev
            prev = A[i]

    edges = nest(kernel).static_dependences.scalar_edges
    carried = {(e.source, e.sink, e.kind) for e in edges if e.variable == "prev" and e.level == 1}
    assert (1, 0, "flow") in carried and (0, 1, "anti") in carried


def test_static_verdicts_are_kept_and_reported_per_binding():
    def kernel(self, A, n):
        for i in range(n):
            A[2 * i] = A[2 * i + 1]

    a = nest(kernel)
    # the read/write pair is settled once (GCD); the write with itself waits for the binding
    assert a.static_dependences.pairs == ((0, 1, 0, 1),)
    assert len(a.static_dependences.proven) == 1
    plan = a.plan(a.binder.key((np.zeros(10), 5)))
    assert "decided once" in plan.graph.pairs[0].outcome
