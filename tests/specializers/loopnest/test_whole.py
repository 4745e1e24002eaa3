"""whole: a kernel that is one loop nest passes the nest its inputs straight from the call's
arguments (no rewritten method, no ``locals()``): which kernels have that lane, and that
calls through it leave exactly what the original code leaves, errors and fallbacks included.
"""

from __future__ import annotations

import numpy as np
import pytest

from specializers.loopnest import LoopKernel

from .generators import load_kernel
from .helpers import assert_same_as_python, identical

SCALE = 3.0


def whole_of(kernel):
    """The lane of the kernel's method (None: calls go through the rewritten method)."""
    kernel.kernel(*ARGS.get(type(kernel).__name__, ()))
    return kernel._asp_current.kernel_class.whole


class Params(LoopKernel):
    """A docstring, and parameters named like the pick function's own names might be."""

    def kernel(self, A, B, C, G, n):
        for i in range(n):
            C[i] = A[i] * B[i] + G


class Reads(LoopKernel):
    """Inputs from an attribute, a global and a closure-free default path."""

    def __init__(self, **options):
        super().__init__(**options)
        self.offset = 2.0

    def kernel(self, a, out):
        for i in range(a.shape[0]):
            out[i] = a[i] * SCALE + self.offset


class Scalar(LoopKernel):
    def kernel(self, a, out):
        for i in range(a.shape[0]):
            s = a[i] * 2.0      # a scalar the nest assigns before reading: unbound at start
            out[i] = s + 1.0


class Before(LoopKernel):
    def kernel(self, a, out):
        k = 2.0
        for i in range(a.shape[0]):
            out[i] = a[i] * k


class Computed(LoopKernel):
    """A statement before the nest that is not a literal: no lane."""

    def kernel(self, a, out):
        k = a[0] * 2.0
        for i in range(a.shape[0]):
            out[i] = a[i] * k


class Returns(LoopKernel):
    def kernel(self, a):
        for i in range(a.shape[0]):
            if a[i] > 2.0:
                return i
        return -1


class Sum(LoopKernel):
    def kernel(self, a, b):
        s = 0.0
        for i in range(a.shape[0]):
            s += a[i] * b[i]
        return s


class Count(LoopKernel):
    """An int accumulator, a literal the nest only reads, and a loop that may not run."""

    def kernel(self, a, n):
        count = 0
        limit = 2.5
        for i in range(n):
            if a[i] > limit:
                count += 1
        return count


class ReturnsNone(LoopKernel):
    def kernel(self, a, out):
        for i in range(a.shape[0]):
            out[i] = -a[i]
        return None


class ReturnsOther(LoopKernel):
    def kernel(self, a, out):
        s = 1.0
        for i in range(a.shape[0]):
            out[i] = a[i] + s
        return a.shape[0]


class TwoNests(LoopKernel):
    def kernel(self, a, out):
        for i in range(a.shape[0]):
            out[i] = a[i]
        for i in range(a.shape[0]):
            out[i] += 1.0


class Defaults(LoopKernel):
    def kernel(self, a, out, k=2.0):
        for i in range(a.shape[0]):
            out[i] = a[i] * k


ARGS = {
    "Params": (np.arange(5.0), np.ones(5), np.zeros(5), 0.5, 5),
    "Reads": (np.arange(4.0), np.zeros(4)),
    "Scalar": (np.arange(4.0), np.zeros(4)),
    "Before": (np.arange(4.0), np.zeros(4)),
    "Computed": (np.arange(4.0), np.zeros(4)),
    "Returns": (np.arange(4.0),),
    "TwoNests": (np.arange(4.0), np.zeros(4)),
    "Sum": (np.arange(5.0), np.full(5, 0.5)),
    "Count": (np.arange(6.0), 6),
    "ReturnsNone": (np.arange(3.0), np.zeros(3)),
    "ReturnsOther": (np.arange(3.0), np.zeros(3)),
    "Defaults": (np.arange(4.0), np.zeros(4)),
}


@pytest.mark.parametrize("cls, has_lane", [
    (Params, True), (Reads, True), (Scalar, True), (Defaults, True), (Sum, True),
    (Count, True), (ReturnsNone, True),
    (Before, True), (Computed, False), (Returns, False), (TwoNests, False), (ReturnsOther, False)])
def test_which_kernels_have_the_lane(cls, has_lane):
    assert (whole_of(cls(backend="c", strict=True)) is not None) == has_lane


@pytest.mark.parametrize("cls", [Params, Reads, Scalar, Defaults, Before, Computed, Returns,
                                 TwoNests,
                                 Sum, Count, ReturnsNone, ReturnsOther])
@pytest.mark.parametrize("backend", ["c", "openmp", None])
def test_calls_leave_what_the_original_leaves(cls, backend):
    kernel = cls(backend=backend, strict=backend is not None)
    for _ in range(80):   # warm: the fast path, its guard and the native call
        assert_same_as_python(kernel, *[a.copy() if isinstance(a, np.ndarray) else a
                                        for a in ARGS[cls.__name__]])


def test_a_call_the_lane_cannot_take_goes_the_usual_way():
    kernel = Defaults(backend="c", strict=True)
    a = np.arange(4.0)
    for args, kwargs in [((a, np.zeros(4), 3.0), {}),        # all three given
                         ((a, np.zeros(4)), {"k": 5.0}),      # a keyword
                         ((a,), {"out": np.zeros(4)})]:
        got, want = [x.copy() if isinstance(x, np.ndarray) else x for x in args], \
            [x.copy() if isinstance(x, np.ndarray) else x for x in args]
        got_kw = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        want_kw = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        assert identical(kernel.kernel(*got, **got_kw), kernel.original_kernel(*want, **want_kw))
        assert identical(got, want) and \
            identical(list(got_kw.values()), list(want_kw.values()))
    with pytest.raises(TypeError) as ours:
        kernel.kernel(a, np.zeros(4), 1.0, 2.0)
    with pytest.raises(TypeError) as theirs:
        kernel.original_kernel(a, np.zeros(4), 1.0, 2.0)
    assert str(ours.value) == str(theirs.value)


def test_an_input_that_cannot_be_read_raises_as_the_original_does():
    Kernel, _ = load_kernel(
        "from specializers.loopnest import LoopKernel\n\n\n"
        "class Kernel(LoopKernel):\n"
        "    def kernel(self, a, out):\n"
        "        for i in range(a.shape[0]):\n"
        "            out[i] = a[i] * FACTOR\n")
    kernel = Kernel(backend="c")
    namespace = Kernel.kernel.__wrapped__.__globals__
    namespace["FACTOR"] = 2.0
    for _ in range(20):
        assert_same_as_python(kernel, np.arange(3.0), np.zeros(3))
    del namespace["FACTOR"]
    with pytest.raises(NameError, match="FACTOR"), pytest.warns(UserWarning, match="FACTOR"):
        kernel.kernel(np.arange(3.0), np.zeros(3))


def test_a_fallback_runs_the_method_whole():
    """A call no variant takes (a list where an array goes) runs the original method. (A
    forced backend: left to the cost model, these tiny calls may all stay cold, run as the
    plain method from the start (``coldstart``), with no fallback to warn of: run alone, the
    test failed so.)"""
    kernel = Reads(backend="c")
    for _ in range(20):
        assert_same_as_python(kernel, np.arange(4.0), np.zeros(4))
    out = [0.0] * 4
    with pytest.warns(Warning):
        kernel.kernel(np.arange(4.0), out)
    assert out == [2.0, 5.0, 8.0, 11.0]


@pytest.mark.parametrize("backend", ["c", None])
def test_a_returned_scalar_keeps_its_type_and_its_value_when_the_loop_does_not_run(backend):
    kernel = Count(backend=backend, strict=backend is not None)
    a = np.arange(6.0)
    for n in [6, 0, 3, 0, 6] * 20:
        got, want = kernel.kernel(a, n), kernel.original_kernel(a, n)
        assert identical(got, want)   # an int, 0 where nothing ran
    total = Sum(backend=backend, strict=backend is not None)
    for n in [5, 0, 1] * 20:
        assert identical(total.kernel(np.arange(float(n)), np.ones(n)),
                         total.original_kernel(np.arange(float(n)), np.ones(n)))
