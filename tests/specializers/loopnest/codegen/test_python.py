"""codegen.python: the plain-Python executor's source, and the reordering order checker."""

import numpy as np

from specializers.loopnest.codegen.python import compile_python, identifier, python_source
from specializers.loopnest.pipeline import analyse_kernel
from specializers.loopnest.schedule.tree import Schedule, SLoop, SStmt


def kernel(self, A, B, n):
    for i in range(n):
        if A[i] > self.cut:
            B[i] = np.sqrt(A[i])


def test_generated_source_is_readable_python():
    a = analyse_kernel(kernel).nests[0]
    source, calls = python_source(a.nest, a.sequential, a.names.inputs, a.names.outputs,
                                  name="nest_0", header="test header")
    assert source.startswith("# test header\ndef nest_0(A, B, n, __asp_attr_self_cut, i):")
    assert "for i in range(0, n, 1):" in source
    assert "__asp_p1 = A[i] > __asp_attr_self_cut" in source
    assert "B[i] = __asp_fn_numpy_sqrt(A[i])" in source and calls == {"numpy.sqrt"}
    fn = compile_python(source, "nest_0", calls, "<test>")
    A, B = np.array([1.0, 4.0, 9.0]), np.zeros(3)
    assert fn(A, B, 3, 2.0, None) == (2,)
    assert B.tolist() == [0.0, 2.0, 3.0]
    assert identifier("self.x") == "__asp_attr_self_x" and identifier("x") == "x"


def test_reordered_parallel_loop_keeps_the_last_iteration_values():
    def k(self, A, n):
        for i in range(n):
            for j in range(n):
                A[i, j] = i * 10 + j

    a = analyse_kernel(k).nests[0]
    sched = Schedule((SLoop(0, True, (SLoop(1, False, (SStmt(0),)),)),), a.sequential.statements)
    for order, seed in (("reversed", None), ("shuffled", 3)):
        source, calls = python_source(a.nest, sched, a.names.inputs, a.names.outputs,
                                      name="f", header="h", order=order)
        visits = []
        fn = compile_python(source, "f", calls, "<t>", seed)
        A = np.zeros((4, 4))
        final = fn(A, 4, None, None)
        assert final == (3, 3)  # i and j as the sequential loops leave them
        assert A.tolist() == [[i * 10 + j for j in range(4)] for i in range(4)]
        assert "__asp_order(__asp_range1)" in source and not visits
