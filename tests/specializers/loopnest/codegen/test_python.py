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
    assert source.startswith("# test header\ndef nest_0(A, B, n, __asp_attr_self_cut):")
    assert "for i in range(0, n, 1):" in source
    assert "__asp_p1 = A[i] > __asp_attr_self_cut" in source
    assert "B[i] = __asp_fn_numpy_sqrt(A[i])" in source and calls == {"numpy.sqrt"}
    fn = compile_python(source, "nest_0", calls, "<test>")
    A, B = np.array([1.0, 4.0, 9.0]), np.zeros(3)
    assert fn(A, B, 3, 2.0) == ()   # (nothing reads i after the nest)
    assert B.tolist() == [0.0, 2.0, 3.0]
    assert identifier("self.x") == "__asp_attr_self_x" and identifier("x") == "x"


def test_reordered_parallel_loop_with_lastprivate_and_final_loop_values():
    def k(self, A, B, n):
        for i in range(n):
            t = 0.0
            for j in range(n):
                t = A[i, j] * 2
            B[i] = t
        return i, j

    from specializers.loopnest.runtime import python_executor

    a = analyse_kernel(k).nests[0]
    inner = SLoop(1, True, (SStmt(1),), private=("t",), lastprivate=("t",))
    sched = Schedule((SLoop(0, True, (SStmt(0), inner, SStmt(2))),), a.sequential.statements)
    assert a.live_loop_vars == ("i", "j")
    for order, seed in (("reversed", None), ("shuffled", 3)):
        source, _ = python_source(a.nest, sched, a.names.inputs, a.names.outputs,
                                  name="f", header="h", order=order)
        assert "__asp_order(__asp_range2)" in source and "__asp_last2 = (t,)" in source
        run = python_executor(a, sched, "test", order, seed)
        A, B = np.arange(16.0).reshape(4, 4), np.zeros(4)
        i, j = run(A, B, 4, None, None)   # (t: nothing reads it after the nest)
        assert (i, j) == (3, 3)  # as the sequential loops leave them
        assert B.tolist() == [6.0, 14.0, 22.0, 30.0]  # t: each B[i] saw its own last t


def test_zero_dimensional_arrays_in_every_backend():
    from specializers.loopnest import LoopKernel

    class Total(LoopKernel):
        def kernel(self, S, B, n):
            for i in range(n):
                S[()] = S[()] + B[i]

    for backend in ("python", "python-reversed", "c", "openmp", None):
        got, want = np.zeros(()), np.zeros(())
        kernel = Total(backend=backend, strict=True)
        kernel.kernel(got, np.arange(5.0), 5)
        Total().original_kernel(want, np.arange(5.0), 5)
        assert got == want == 10.0
