"""Values a nest leaves behind that the bounds do not tell (``lastvalues``, and the scalar
edges of ``analysis.graph``): every backend against the original.

Three of these were wrong before: sibling loops sharing a variable read afterwards raised an
internal ValueError on the compiled backends; a loop under an ``if`` left its variable as if
every branch had been taken (serial C: 4 where Python gives 3); a scalar written by an inner
loop under an ``if``, read after the nest, took its value from whichever outer iteration a
thread ran last (OpenMP: 3.0 where Python gives 5.0).
"""

import numpy as np
import pytest

from specializers.loopnest import LoopKernel

from .helpers import assert_same_as_python
from .test_exits import BACKENDS


class Siblings(LoopKernel):
    def kernel(self, A, n):
        j = -1
        for i in range(n):
            for j in range(n):
                A[i, 0] += 1.0
            for j in range(n - 1):
                A[i, 1] += 1.0
        return i, j


class UnderAnIf(LoopKernel):
    def kernel(self, A, n):
        j = -1
        for i in range(n):
            if A[i, 0] > 0:
                for j in range(i):
                    A[i, 1] = 1.0
        return j


class ScalarUnderAnIf(LoopKernel):
    def kernel(self, A, n):
        x = -1.0
        for i in range(n):
            if A[i, 0] > 0:
                for j in range(n):
                    x = A[i, j] + i
        return x


def _inputs(n):
    A = np.ones((n, n))
    if n:
        A[n - 1, 0] = -1.0   # the last row takes no branch
    return A


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("Kernel", [Siblings, UnderAnIf, ScalarUnderAnIf])
@pytest.mark.parametrize("n", [0, 1, 6, 300])
def test_last_values_are_pythons(Kernel, backend, n):
    if n == 0 and Kernel is Siblings:
        pytest.skip("i is unbound after a loop that never ran: Python raises there")
    call = assert_same_as_python(Kernel(backend=backend, strict=True), _inputs(n), n)
    assert all(nest.backend == backend for nest in call.nests if nest.ran)
