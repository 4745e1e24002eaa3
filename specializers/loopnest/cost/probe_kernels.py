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


# -- the device calibration (``device_probes``) ---------------------------------------------------

class DeviceChain(LoopKernel):
    """A loop carrying a dependence: one work item on a device, against the same serial C
    (a device lane's speed)."""

    def kernel(self, y, x, a):
        for i in range(1, y.shape[0]):
            y[i] = y[i - 1] * a + x[i]


class DeviceWide(LoopKernel):
    """A parallel loop around a sequential one: ``y.shape[0]`` work items of ``m`` steps each
    (the lanes running at once)."""

    def kernel(self, y, a, m):
        for i in range(y.shape[0]):
            for k in range(m):
                y[i] = y[i] * a + 1.0


class DeviceSweeps(LoopKernel):
    """A host loop (``t``) launching two parallel sweeps (``i``) per step, a stencil and a
    copy (which keep ``t`` outermost): the cost of a launch (small arrays), the device's
    bandwidth (large ones), a call's fixed cost (no step)."""

    def kernel(self, y, x, steps):
        for t in range(steps):
            for i in range(1, y.shape[0] - 1):
                y[i] = (x[i - 1] + x[i + 1]) * 0.5
            for i in range(1, y.shape[0] - 1):
                x[i] = y[i]
