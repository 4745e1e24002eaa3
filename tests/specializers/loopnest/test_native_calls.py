"""Native calls of compiled variants (``variants.CompiledVariant._native_call``,
``asp_core.call_guard.make_caller``): the C entry point called from C with the nest's inputs,
slot for slot as the generated Python call function passes them.

Each kind of argument (C-contiguous and strided arrays, their extents and strides, float64,
float32, int64, int32 and bool scalars, the thread count), results left in scalars, and the
errors of native code take the native path and leave exactly what the original code leaves;
calls from several threads at once (the GIL is released during the call) stay right.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from asp_core import call_guard as cg
from specializers.loopnest import LoopKernel
from specializers.loopnest.variants import NATIVE_AFTER

from .helpers import assert_same_as_python, run_both, identical

pytestmark = pytest.mark.skipif(cg.unavailable() is not None,
                                reason=f"native calls cannot be built here: {cg.unavailable()}")


class Mixed(LoopKernel):
    def kernel(self, a, b, out, alpha, beta, k, flag, n):
        total = 0.0
        for i in range(n):
            v = a[i] * alpha + b[i] * beta + k
            if flag:
                v = -v
            out[i] = v
            total += v
        return total


class Divide(LoopKernel):
    def kernel(self, a, out, d):
        for i in range(a.shape[0]):
            out[i] = a[i] + 1.0 / (i - d)   # Python floats: ZeroDivisionError at i == d


class Strided(LoopKernel):
    def kernel(self, a, out):
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                out[i, j] = a[i, j] * 2 + j


#: Calls after which a variant has its native call (``variants.NATIVE_AFTER``, and one).
WARM = NATIVE_AFTER + 1


def native_of(kernel):
    """The native call of the variant the kernel's (only) nest ran last."""
    runner = kernel._asp_current.runners[0]
    run = runner._fast[2].run if runner._fast else None
    compiled = _compiled(run)
    return getattr(compiled, "_native", None)


MIXED = [
    (np.arange(6.0), np.ones(6), np.zeros(6), 2.0, 0.5, 3, False, 6),
    (np.arange(6.0), np.ones(6), np.zeros(6), np.float64(2.5), 1.0, -4, True, 5),
    (np.arange(6, dtype=np.float32), np.ones(6, np.float32), np.zeros(6, np.float32),
     np.float32(1.5), np.float32(0.25), np.int32(7), np.bool_(True), 6),
    (np.arange(6.0), np.ones(6), np.zeros(6), 2.0, 0.5, 3, False, 0),   # no iteration
]


@pytest.mark.parametrize("backend", ["c", "openmp"])
@pytest.mark.parametrize("case", range(len(MIXED)))
def test_every_kind_of_argument(backend, case):
    kernel = Mixed(backend=backend, strict=True)
    args = MIXED[case]
    for _ in range(WARM):   # the first calls pass the arguments from Python
        assert_same_as_python(kernel, *args)
    assert native_of(kernel) is not None
    for _ in range(3):
        assert_same_as_python(kernel, *args)


@pytest.mark.parametrize("backend", ["c", "openmp"])
def test_strided_arrays_pass_their_strides(backend):
    kernel = Strided(backend=backend, strict=True)
    base = np.arange(60.0).reshape(6, 10)
    for _ in range(WARM):
        got, want = run_both(kernel, base[::2, ::3], np.zeros((3, 4)))
        assert identical(got, want)
    assert native_of(kernel) is not None
    out = np.zeros((3, 8))[:, ::2]
    kernel.kernel(base[::2, ::3], out)
    expected = np.zeros((3, 4))
    kernel.original_kernel(base[::2, ::3], expected)
    assert np.array_equal(out, expected)


@pytest.mark.parametrize("backend", ["c", "openmp"])
def test_errors_raised_through_the_native_path_are_pythons(backend):
    kernel = Divide(backend=backend, strict=True)
    for _ in range(WARM):
        assert_same_as_python(kernel, np.arange(5.0), np.zeros(5), 9)
    assert native_of(kernel) is not None
    got_out, want_out = np.zeros(5), np.zeros(5)
    with pytest.raises(ZeroDivisionError):
        kernel.kernel(np.arange(5.0), got_out, 2)
    with pytest.raises(ZeroDivisionError):
        kernel.original_kernel(np.arange(5.0), want_out, 2)
    if backend == "c":   # serial C stops where Python stops (OpenMP: see exact_errors)
        assert np.array_equal(got_out, want_out)


def test_calls_from_several_threads_at_once():
    kernel = Mixed(backend="c", strict=True)
    n = 200_000
    args = (np.arange(n, dtype=np.float64), np.ones(n), np.zeros(n), 2.0, 0.5, 3, False, n)
    want = kernel.original_kernel(*[a.copy() if isinstance(a, np.ndarray) else a
                                    for a in args])
    for _ in range(WARM):
        kernel.kernel(*args)
    assert native_of(kernel) is not None
    results, errors = [], []

    def worker():
        try:
            for _ in range(5):
                out = np.zeros(n)
                results.append((kernel.kernel(args[0], args[1], out, *args[3:]), out.copy()))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    expected_out = args[0] * 2.0 + 0.5 + 3
    assert len(results) == 20
    assert all(total == want and np.array_equal(out, expected_out) for total, out in results)


def test_the_models_counted_warm_calls_from_several_threads_at_once():
    """The cost model's warm calls, whose native guard counts them (``call_guard.count``),
    from four threads at once on small data, with another size now and then (each thread's
    calls end the others' fast paths and start new ones): every result is the original
    code's, and no call fails."""
    kernel = Mixed(strict=True)
    small = (np.arange(8.0), np.ones(8), None, 2.0, 0.5, 3, False, 8)
    other = (np.arange(12.0), np.ones(12), None, 2.0, 0.5, 3, False, 12)
    for _ in range(600):
        kernel.kernel(small[0], small[1], np.zeros(8), *small[3:])
    runner = kernel._asp_current.runners[0]
    assert runner._fast is not None and runner._fast[3] is not None and runner._fast[8], \
        "the warm calls run on a fast path whose guard counts them"
    errors = []

    def expected(args):
        out = np.zeros(args[-1])
        return kernel.original_kernel(args[0], args[1], out, *args[3:]), out

    want = {8: expected(small), 12: expected(other)}

    def worker(seed):
        try:
            for call in range(1500):
                args = other if (call + seed) % 97 == 0 else small
                out = np.zeros(args[-1])
                total = kernel.kernel(args[0], args[1], out, *args[3:])
                if total != want[args[-1]][0] or not np.array_equal(out, want[args[-1]][1]):
                    errors.append((call, total, out))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


def test_a_malformed_call_is_refused_not_run():
    kernel = Mixed(backend="c", strict=True)
    for _ in range(WARM):
        kernel.kernel(*MIXED[0])
    native = native_of(kernel)
    assert native is not None
    with pytest.raises(TypeError):
        native([1, 2])                       # not a tuple
    with pytest.raises(TypeError):
        native((1.0,) * 3)                   # not the nest's number of inputs
    runner = kernel._asp_current.runners[0]
    inputs = list(runner.last_inputs)
    inputs[0] = [0.0] * 6                    # a list where an array goes
    with pytest.raises(TypeError):
        native(tuple(inputs))


def test_a_variant_waits_for_the_extension_however_many_calls_its_load_takes(monkeypatch):
    """In a new process the extension loads in the background (milliseconds: hundreds of warm
    calls). Calls made meanwhile are not refusals: once it is loaded the variant calls
    natively, however many calls the load took (they once used up ``NATIVE_TRIES``, and a
    warm loop never called natively)."""
    from specializers.loopnest.variants import NATIVE_TRIES

    class Scale(LoopKernel):   # (its own variant: the compiled variants are shared)
        def kernel(self, a, out, n):
            for i in range(n):
                out[i] = a[i] * 3.0 - 1.0

    kernel = Scale(backend="c", strict=True)
    args = (np.arange(7.0), np.zeros(7), 7)
    loaded = list(cg._LOADED)
    monkeypatch.setattr(cg, "_LOADED", [])          # the extension still loading...
    monkeypatch.setattr(cg, "_READY", threading.Event())
    for _ in range(WARM + 2 * NATIVE_TRIES):
        assert_same_as_python(kernel, *args)
    assert native_of(kernel) is None
    cg._LOADED.extend(loaded)                         # ...and loaded
    cg._READY.set()
    assert_same_as_python(kernel, *args)
    assert native_of(kernel) is not None
    assert_same_as_python(kernel, *args)


def test_calls_before_the_native_path_are_not_observed(monkeypatch):
    """Until its native call is made (here: the extension still loading), a variant's calls go
    through cffi, several microseconds more than they will cost. The variant says it is
    warming up, and the dispatcher does not tell the selector of those calls' times (a probe
    of two of them once kept plain Python at 2.7 us over serial C at 1.3) unless they are
    longer than a warm-up explains: it does once the native call is made."""
    from asp_core.selection import Estimate

    class Offset(LoopKernel):   # (its own variant: the compiled variants are shared)
        def kernel(self, a, out, n):
            for i in range(n):
                out[i] = a[i] + 0.25

    kernel = Offset(backend="c", strict=True)
    args = (np.arange(7.0), np.zeros(7), 7)
    loaded = list(cg._LOADED)
    monkeypatch.setattr(cg, "_LOADED", [])          # the extension still loading...
    monkeypatch.setattr(cg, "_READY", threading.Event())
    for _ in range(WARM):
        assert_same_as_python(kernel, *args)
    runner = kernel._asp_current.runners[0]
    variant = runner._fast[2]
    told = []
    monkeypatch.setattr(runner.selector, "observe",
                        lambda estimate, seconds: told.append(seconds) and False)
    estimate = Estimate("c", 1e-6)
    assert variant.warming is not None and variant.warming()
    runner.observed(estimate, 2e-5, variant)
    assert told == [] and runner.last_measured_s == 2e-5   # shown, not observed
    runner.observed(estimate, 0.01, variant)   # a call slower by far more than a warm-up's
    assert told == [0.01]
    told.clear()
    cg._LOADED.extend(loaded)                         # ...and loaded
    cg._READY.set()
    assert_same_as_python(kernel, *args)
    assert native_of(kernel) is not None and not variant.warming()
    runner.observed(estimate, 1e-6, variant)
    assert told == [1e-6]


def test_once_the_extension_is_loaded_a_new_variant_calls_natively_at_once():
    """``NATIVE_AFTER`` spares a script of a few calls the extension's load; once another
    variant loaded it, a new variant has nothing to spare: its first call is native (the
    first calls of a variant the cost model rarely probes once took the slow path, 13 us where
    the native call takes 1, and it was judged by them)."""
    Strided(backend="c", strict=True).kernel(np.ones((2, 2)), np.zeros((2, 2)))
    cg.unavailable()   # (waits for the load)
    assert cg.loaded()

    class Shift(LoopKernel):   # (its own variant: the compiled variants are shared)
        def kernel(self, a, out):
            for i in range(a.shape[0]):
                out[i] = a[i] - 0.5

    kernel = Shift(backend="c", strict=True)
    assert_same_as_python(kernel, np.arange(5.0), np.zeros(5))
    assert native_of(kernel) is not None


class Several(LoopKernel):
    """Results of every kind a native call's record hands back: a weak int and bool, a strong
    float of the array's dtype, a scalar assigned on some calls only, one not read after."""

    def kernel(self, a, n, t):
        count = 0
        big = a[0]
        found = False
        last = -1
        unused = 0.0
        for i in range(n):
            count += 1
            if a[i] > big:
                big = a[i]
            if a[i] > t:
                found = True
                last = i
            unused = a[i] * 2.0
        return count, big, found, last


def _compiled(function, depth: int = 3):
    """The compiled variant a variant's run function is, or calls (through the wrappers
    around it)."""
    if hasattr(function, "_native"):
        return function
    for cell in getattr(function, "__closure__", None) or ():
        value = cell.cell_contents
        if hasattr(value, "_native"):
            return value
        if callable(value) and getattr(value, "__closure__", None) and depth:
            found = _compiled(value, depth - 1)
            if found is not None:
                return found
    return None


SEVERAL = [(np.array([3.0, 1.0, 4.0, 1.0, 5.0]), 5, 2.0),
           (np.array([3.0, 1.0, 4.0, 1.0, 5.0]), 5, 9.0),      # found and last never assigned
           (np.array([3.0, 1.0, 4.0], np.float32), 3, 1.5),
           (np.array([2, 7, 1], np.int32), 3, 5),
           (np.array([3.0, 1.0]), 0, 2.0)]                      # no iteration


@pytest.mark.parametrize("case", range(len(SEVERAL)))
def test_results_read_from_the_record_in_one_unpack(case):
    """The native path reads the result record in one ``struct`` unpack
    (``variants._record_reader``): Python's values and types, whichever scalars the call
    assigned."""
    kernel = Several(backend="c", strict=True)
    args = SEVERAL[case]
    for _ in range(WARM):
        assert_same_as_python(kernel, *args)
    compiled = _compiled(kernel._asp_current.runners[0]._fast[2].run)
    assert compiled._native is not None and compiled._read is not None
    for _ in range(3):
        assert_same_as_python(kernel, *args)
