"""The order checker: every test kernel, run with its parallel loops reversed and shuffled,
gives the same result as plain Python (floating-point reductions up to rounding)."""

import numpy as np
import pytest

from . import test_kernel as tk
from .helpers import assert_any_order_same_as_python, mark_root_loop_parallel

rng = np.random.default_rng(11)

CASES = {
    "gemm": (tk.Gemm, lambda: (1.0, rng.random((4, 5)), rng.random((4, 3)), rng.random((3, 5)))),
    "several": (tk.Several, lambda: (rng.random(8), np.zeros(8), 8)),
    "loop variables": (tk.LoopVariablesLeftBound, lambda: (np.zeros(5), 5, 3)),
    "subset": (tk.Subset, lambda: (rng.normal(size=(7, 7)), rng.normal(size=(7, 7)),
                                   np.zeros((7, 7)), rng.integers(0, 7, 7), 7, 2, 1)),
    "super": (tk.SuperUser, lambda: (1.0, rng.random((3, 3)), rng.random((3, 3)),
                                     rng.random((3, 3)))),
}


class WrappedChain(tk.LoopKernel):
    """Issue 9's reproducer: ``-1`` and ``7`` name one column of an 8-column array."""

    def kernel(self, A, n):
        for i in range(1, n):
            A[i, 0] = A[i - 1, -1] + 1.0
            A[i, 7] = A[i, 0] * 1.0


class WrappedTwice(tk.LoopKernel):
    """The same, through an array passed for two parameters, with a negative affine row."""

    def kernel(self, A, B, n):
        for i in range(1, n):
            A[i - n, 0] = B[i - 1, -1] + 1.0
            B[i, 7] = A[i, 0] * 1.0


CASES["wrapped chain"] = (WrappedChain, lambda: (np.zeros((40, 8)), 40))
_shared = np.zeros((40, 8))
CASES["wrapped twice"] = (WrappedTwice, lambda: (_shared, _shared, 40))


@pytest.mark.parametrize("name", sorted(CASES))
def test_test_kernels_in_any_parallel_order(name):
    cls, args = CASES[name]
    assert_any_order_same_as_python(lambda order: cls(backend=order, strict=True), *args())


def test_with_init_kernel_in_any_parallel_order():
    assert_any_order_same_as_python(
        lambda order: tk.WithInit(3.5, 4, backend=order, strict=True),
        rng.random((4, 6)), np.zeros((4, 6)))


def test_the_checker_catches_a_wrong_parallel_loop(monkeypatch):
    """Sanity of the checker itself: mark a carried loop parallel by hand and it fails."""
    class Prefix(tk.LoopKernel):
        def kernel(self, A, n):
            for i in range(1, n):
                A[i] = A[i] + A[i - 1]

    mark_root_loop_parallel(monkeypatch)
    with pytest.raises(AssertionError):
        assert_any_order_same_as_python(lambda order: Prefix(backend=order, strict=True),
                                        np.arange(1.0, 9.0), 8)
