"""The loop-nest kernels the calibration runs (``overhead_probes``): one to time the cost of
entering a nest, and three of growing size whose generated C is compiled to time compilation.
Ordinary ``LoopKernel`` subclasses, in a file of their own so the specializer can read their
source.
"""

from __future__ import annotations

import math

from ..kernel import LoopKernel


class Tiny(LoopKernel):
    """One statement; called on one-element arrays to time a call's fixed costs."""

    def kernel(self, A, B, C):
        for i in range(A.shape[0]):
            A[i] = B[i] + C[i]


def tiny_plain(self, A, B, C):
    """``Tiny.kernel`` as written, run by the interpreter (the baseline)."""
    for i in range(A.shape[0]):
        A[i] = B[i] + C[i]


class Small(LoopKernel):
    """One statement in two loops."""

    def kernel(self, A, B, C):
        for i in range(A.shape[0]):
            for j in range(A.shape[1]):
                A[i, j] = B[i, j] * 2.0 + C[i, j]


class Medium(LoopKernel):
    """Six statements in three loops."""

    def kernel(self, A, B, C):
        for i in range(A.shape[0]):
            for j in range(A.shape[1]):
                A[i, j] = B[i, j] * 2.0 + C[i, j]
                B[i, j] = A[i, j] - C[i, j] / 3.0
                C[i, j] = A[i, j] * B[i, j] + 1.0
            for j in range(1, A.shape[1] - 1):
                C[i, j] = (B[i, j - 1] + B[i, j + 1]) * 0.5
                A[i, j] = math.sqrt(abs(C[i, j])) + A[i, j]
                B[i, j] = max(A[i, j], C[i, j]) - 1.0


class Large(LoopKernel):
    """Twenty-four statements in six loops."""

    def kernel(self, A, B, C):
        for i in range(A.shape[0]):
            for j in range(A.shape[1]):
                A[i, j] = B[i, j] * 2.0 + C[i, j]
                B[i, j] = A[i, j] - C[i, j] / 3.0
                C[i, j] = A[i, j] * B[i, j] + 1.0
                A[i, j] = A[i, j] + B[i, j] * C[i, j]
            for j in range(1, A.shape[1] - 1):
                C[i, j] = (B[i, j - 1] + B[i, j + 1]) * 0.5
                A[i, j] = math.sqrt(abs(C[i, j])) + A[i, j]
                B[i, j] = max(A[i, j], C[i, j]) - 1.0
                C[i, j] = min(C[i, j], 4.0) * A[i, j - 1]
            for j in range(A.shape[1]):
                A[i, j] = math.exp(-B[i, j] * B[i, j])
                B[i, j] = A[i, j] + C[i, j] * C[i, j]
                C[i, j] = B[i, j] - A[i, j]
                A[i, j] = A[i, j] / (1.0 + C[i, j] * C[i, j])
            for j in range(A.shape[1]):
                B[i, j] = math.log(1.0 + A[i, j] * A[i, j])
                C[i, j] = C[i, j] * 0.25 + B[i, j]
                A[i, j] = A[i, j] - C[i, j] if C[i, j] > 0.5 else A[i, j] + C[i, j]
                B[i, j] = B[i, j] ** 2 + 1.0
            for j in range(1, A.shape[1]):
                C[i, j] = C[i, j - 1] * 0.5 + A[i, j]
                A[i, j] = math.sin(C[i, j]) + B[i, j]
                B[i, j] = math.floor(A[i, j] * 8.0) / 8.0
                C[i, j] = abs(C[i, j] - B[i, j])
            for j in range(A.shape[1]):
                A[i, j] = A[i, j] * 0.5 + B[i, j] * 0.25 + C[i, j] * 0.125
                B[i, j] = math.hypot(A[i, j], C[i, j])
                C[i, j] = float(int(B[i, j] * 16.0)) / 16.0
                A[i, j] = max(A[i, j], B[i, j], C[i, j])


#: The kernels whose generated C times the compiler, smallest first.
COMPILE_SIZES = (Small, Medium, Large)
