"""Loops whose bounds the analysis cannot express (``counted``): ``range(i // 2, n)``, the rows
of a sparse matrix ``range(ptr[r], ptr[r + 1])``, a nest's own loop with such bounds, negative
steps, nested ones; compiled on every backend with Python's meaning, the loops around them still
parallel where proven, and a bound that is not an integer left to Python's TypeError."""

import numpy as np
import pytest

from asp_core.errors import SpecializationError
from specializers.loopnest import LoopKernel

from .helpers import assert_same_as_python
from .test_exits import BACKENDS


class Half(LoopKernel):
    def kernel(self, a, n):
        for i in range(n):
            for j in range(i // 2, n):
                a[i, j] += 1.0 + j


class SpMV(LoopKernel):
    """Compressed sparse rows: y = A x."""

    def kernel(self, ptr, col, val, x, y):
        for r in range(ptr.shape[0] - 1):
            acc = 0.0
            for k in range(ptr[r], ptr[r + 1]):
                acc += val[k] * x[col[k]]
            y[r] = acc


class Top(LoopKernel):
    def kernel(self, idx, a):
        for i in range(idx[0], idx[1]):
            a[i] = i
        return i


class Down(LoopKernel):
    def kernel(self, a, n):
        for i in range(n):
            for j in range(n - 1, i // 3 - 1, -1):
                a[i, j] = a[i, j] * 0.5 + i


class Nested(LoopKernel):
    """A counted loop inside a counted loop whose bound reads the outer one's variable, and a
    sibling loop with the same variable read after the nest."""

    def kernel(self, ptr, a, n):
        for r in range(ptr.shape[0] - 1):
            for k in range(ptr[r], ptr[r + 1]):
                for m in range(k, n):
                    a[r, m] += k * 0.5
        for k in range(n):
            a[0, k] += 1.0
        return k


def _csr(n=200, seed=0):
    rng = np.random.default_rng(seed)
    A = (rng.random((n, n)) < 0.05) * rng.random((n, n))
    ptr = np.r_[0, np.cumsum((A != 0).sum(1))]
    return ptr, np.nonzero(A)[1], A[A != 0], np.arange(n) * 1.0, np.zeros(n)


CASES = {
    "half": (Half, lambda: (np.zeros((9, 9)), 9)),
    "spmv": (SpMV, _csr),
    "top": (Top, lambda: (np.array([2, 6]), np.zeros(8))),
    "top, empty": (Top, lambda: (np.array([6, 2]), np.zeros(8))),
    "down": (Down, lambda: (np.ones((40, 40)), 40)),
    "nested": (Nested, lambda: (np.array([0, 2, 2, 5]), np.zeros((3, 6)), 6)),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_counted_loops_have_pythons_meaning(case, backend):
    Kernel, make = CASES[case]
    if case == "top, empty":   # i is never bound: Python raises UnboundLocalError
        with pytest.raises(UnboundLocalError):
            Kernel(backend=backend, strict=True).kernel(*make())
        return
    call = assert_same_as_python(Kernel(backend=backend, strict=True), *make())
    assert all(n.backend == backend and n.fallback is None for n in call.nests if n.ran)


def test_the_rows_of_a_sparse_matrix_run_in_parallel():
    text = str(SpMV(backend="openmp").explain(*_csr())).split("  schedule:")[1]
    assert "for r  [parallel" in text


class NotAnInteger(LoopKernel):
    def kernel(self, x, a):
        for i in range(x[0], 3):
            a[i] = 1.0


def test_a_bound_that_is_not_an_integer_is_pythons_type_error():
    with pytest.raises(SpecializationError, match="range.. of numpy.float64"):
        NotAnInteger(backend="c", strict=True).kernel(np.array([0.5]), np.zeros(3))
    with pytest.warns(match="Python raises TypeError"), pytest.raises(TypeError):
        NotAnInteger(backend="c").kernel(np.array([0.5]), np.zeros(3))


class AssignsItsVariable(LoopKernel):
    def kernel(self, idx, a):
        for i in range(idx[0], 5):
            a[i] = 1.0
            i = 0
            a[i] += 1.0


def test_a_counted_loop_whose_body_assigns_its_variable_runs_as_python():
    """(Python's later reads see the assigned value: refused as for any loop variable.)"""
    with pytest.raises(SpecializationError, match="assignment to loop variable"):
        AssignsItsVariable(backend="c", strict=True).kernel(np.array([1]), np.zeros(6))
    with pytest.warns(match="assignment to loop variable"):
        assert_same_as_python(AssignsItsVariable(backend="c"), np.array([1]), np.zeros(6))


def test_an_index_error_names_the_users_loop_variable():
    """A subscript with a counted loop's variable reads as the user wrote it in the message
    (not the internal value that stands for it)."""
    import numpy as np
    import pytest

    from specializers.loopnest import LoopKernel

    class Rows(LoopKernel):
        def kernel(self, ptr, val, y):
            for r in range(ptr.shape[0] - 1):
                for k in range(ptr[r], ptr[r + 1]):
                    y[r] += val[k]

    with pytest.raises(IndexError, match=r"val\[k\]"):
        Rows(backend="c", strict=True).kernel(np.array([0, 2, 9]), np.ones(5), np.zeros(2))
