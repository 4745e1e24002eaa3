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


class PieceAssigns(LoopKernel):
    """The i loop distributes into two pieces: the first assigns t (kept after the loop), the
    second, interchanged (j parallel outside i), does not use it."""

    def kernel(self, A, n):
        t = 0.0
        for i in range(n):
            t = A[0, 0] + i
            for j in range(1, n):
                A[0, j] = A[0, 0]
        return t


class LaterPieceAssigns(LoopKernel):
    """The other order: the interchanged piece first, the piece that assigns t second."""

    def kernel(self, A, n):
        t = 0.0
        for i in range(n):
            for j in range(1, n):
                A[1, j] = A[0, j] * 2.0
            t = A[0, 0] - i
        return t


class PieceReadsItsOwn(LoopKernel):
    """A scalar private to the loop used inside the interchanged piece, another outside it."""

    def kernel(self, A, n):
        s = t = 0.0
        for i in range(n):
            t = A[0, 0] * i
            for j in range(1, n):
                s = A[i, j] + 1.0
                A[i, j] = s * 0.5
        return s, t


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cls", [PieceAssigns, LaterPieceAssigns, PieceReadsItsOwn])
def test_a_distributed_loops_pieces_keep_only_their_own_scalars(cls, backend):
    """A loop distributed into pieces privatizes in each piece only the scalars its statements
    use: a piece (here interchanged, its inner loop parallel) that kept a scalar it does not
    assign lastprivate copied its uninitialized copy over the value the other piece left
    (OpenMP: t came back 0.0, found by the generated differential tests)."""
    A = np.random.default_rng(3).random((6, 6))
    assert_same_as_python(cls(backend=backend, strict=True), A, 6)
