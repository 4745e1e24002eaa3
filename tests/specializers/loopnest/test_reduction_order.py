"""A scalar reduction keeps Python's order of operations in the python and serial C variants:
the schedule does not interchange the loops around it (for locality or to move parallel loops
outward), since a float sum in another order rounds differently (found by the robustness
test's generator: ``s0 += A[0, i]`` under ``for i: for j:`` summed j-major)."""

import numpy as np
import pytest

from specializers.loopnest import LoopKernel

from .helpers import assert_same_as_python


class RowMajor(LoopKernel):
    def kernel(self, A, n):
        s = 0.0
        for i in range(n):
            for j in range(n):
                s += A[0, i]
        return s


class Transposed(LoopKernel):
    def kernel(self, A, n):
        s = 0.0
        for i in range(n):
            for j in range(n):
                s = s + A[j, i] * 0.5
        return s


class Product(LoopKernel):
    def kernel(self, A, B, n):
        p = 1.0
        for j in range(n):
            for i in range(n):
                p = p * (1.0 + A[i, j] * B[i])
        return p


CASES = [(RowMajor, lambda a, b, n: (a, n)), (Transposed, lambda a, b, n: (a, n)),
         (Product, lambda a, b, n: (a * 1e-3, b, n))]


@pytest.mark.parametrize("backend", ["python", "c"])
@pytest.mark.parametrize("case", range(len(CASES)), ids=[c[0].__name__ for c in CASES])
@pytest.mark.parametrize("seed", range(5))
def test_a_float_reduction_is_summed_in_pythons_order(backend, case, seed):
    cls, args = CASES[case]
    rng = np.random.default_rng(seed)
    n = 37
    a, b = rng.normal(size=(n, n)) * 10.0 ** rng.integers(-8, 8, size=(n, n)), rng.normal(size=n)
    assert_same_as_python(cls(backend=backend, strict=True), *args(a, b, n))
