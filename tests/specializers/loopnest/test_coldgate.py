"""The cold gate (``_coldgate.c``): the C entry point of a kernel method takes exactly the calls
that the Python dispatcher's cold start would run as the original code, estimates their work as
``coldstart.work_hint`` does, and hands every other call to Python unchanged."""

import inspect
import sys

import numpy as np
import pytest

from specializers.loopnest import LoopKernel, coldstart
from specializers.loopnest.coldstart import ColdStart, work_hint
from specializers.loopnest.kernel import _COLD

_coldgate = pytest.importorskip(
    "specializers.loopnest._coldgate",
    reason="the cold gate extension is not built (setup.py builds it where Python's headers "
           "are installed); the Python dispatcher runs the cold calls")


class Rows(LoopKernel):
    def kernel(self, A, s):
        """Scale every row."""
        for i in range(A.shape[0]):
            for j in range(A.shape[1]):
                A[i, j] = s * A[i, j]


class Boom(LoopKernel):
    def kernel(self, A):
        for i in range(A.shape[0]):
            if A[i] == 0.0:
                raise ValueError("a zero")
            A[i] = 1.0 / A[i]


def _gate_of(cls):
    return cls.__dict__["kernel"]


def test_the_kernel_method_is_the_gate_and_reads_as_its_original():
    entry = _gate_of(Rows)
    assert type(entry).__name__ == "Gate"
    original = entry._asp_original_function
    assert entry.__wrapped__ is original and entry.__name__ == "kernel"
    assert entry.__doc__ == "Scale every row." and entry.__qualname__ == original.__qualname__
    assert list(inspect.signature(Rows.kernel).parameters) == ["self", "A", "s"]
    assert list(inspect.signature(Rows().kernel).parameters) == ["A", "s"]
    k, A = Rows(), np.ones((3, 4))
    Rows.kernel(k, A, 2.0)           # unbound, as a function is called
    k.kernel(A, s=2.0)               # a keyword argument: the Python dispatcher's call
    assert (A == 4.0).all()


def _random_value(rng, owner_arrays):
    kind = rng.integers(9)
    if kind < 4:
        ndim = int(rng.integers(0, 4))
        shape = tuple(int(rng.integers(0, 6)) for _ in range(ndim))
        array = np.zeros(shape)
        if rng.random() < 0.2 and ndim:
            array = array[..., ::2]            # a view: the same type, its own shape
        owner_arrays.append(array)
        return array
    if kind == 4:
        return int(rng.integers(-5, 60))
    if kind == 5:
        return [None, 2.5, True, "s", 1j, np.float64(3.0), np.int32(7)][int(rng.integers(7))]
    if kind == 6:
        return 2 ** 70   # beyond 64 bits: the gate leaves it to Python
    if kind == 7:
        return [1, 2]    # not a plain type: Python asks whether it is a Dask collection
    return np.zeros(3).view(np.matrix) if rng.random() < 0.5 else np.arange(4)


def test_the_gates_estimate_is_work_hints_on_generated_calls():
    """Generated calls (arrays of 0 to 3 dimensions, empty ones, views, ints, NumPy scalars,
    other plain values, attributes on the instance): the gate's estimate equals
    ``work_hint``'s exactly, or is None (Python decides) only for values it does not know."""
    rng = np.random.default_rng(20261127)
    entry = _gate_of(Rows)
    deferred = 0
    for case in range(600):
        owner = Rows()
        kept = []
        if rng.random() < 0.3:
            for a in range(int(rng.integers(1, 3))):
                setattr(owner, f"extra{a}", _random_value(rng, kept))
        args = tuple(_random_value(rng, kept) for _ in range(int(rng.integers(0, 5))))
        levels = tuple(float(x) for x in rng.random(int(rng.integers(1, 7))) * 1e-8)
        expected = work_hint(owner, args, {}, levels)
        got = entry.work_hint(owner, args, levels)
        values = list(args) + list(vars(owner).values())
        unknown = any(type(v) not in coldstart._GATE_SKIPPED and type(v) is not np.ndarray
                      and type(v) is not int for v in values) or \
            any(type(v) is int and v >= 2 ** 63 for v in values)
        if got is None:
            assert unknown, (case, args)
            deferred += 1
        else:
            assert got == expected, (case, args, levels)
    assert 0 < deferred < 600


def test_a_cold_call_through_the_gate_does_what_the_python_dispatcher_does(monkeypatch):
    """Two kernels, one through the gate, one through the Python dispatcher alone: the same
    result, both cold (``last_call.cold``), the same count of calls, and time spent."""
    entry = _gate_of(Rows)
    original = entry._asp_original_function
    results = {}
    for path in ("gate", "python"):
        monkeypatch.setitem(_COLD, original, ColdStart.of(original))
        k, A = Rows(), np.arange(12.0).reshape(3, 4)
        call = k.kernel if path == "gate" else (lambda *a: entry._asp_dispatch(k, *a))
        for _ in range(3):
            call(A, 0.5)
        cold = _COLD[original]
        assert k.last_call.cold and cold.calls == 3 and 0 < cold.spent < 0.1
        results[path] = A
    np.testing.assert_array_equal(results["gate"], results["python"])


def test_the_gate_hands_on_the_calls_that_leave_the_cold_start(monkeypatch):
    """Once the cold calls spent the analysis's cost, the next call is the Python
    dispatcher's, which analyses the kernel and takes it out of the cold start."""
    entry = _gate_of(Rows)
    original = entry._asp_original_function
    cold = ColdStart.of(original)
    monkeypatch.setitem(_COLD, original, cold)
    k, A = Rows(), np.ones((2, 2))
    k.kernel(A, 1.0)
    assert k.last_call.cold
    cold.spent = 10.0   # (as if the cold calls had run that long)
    k.kernel(A, 1.0)
    assert original not in _COLD and not k.last_call.cold


def test_an_exception_in_a_cold_call_propagates_and_is_counted(monkeypatch):
    entry = _gate_of(Boom)
    original = entry._asp_original_function
    cold = ColdStart.of(original)
    monkeypatch.setitem(_COLD, original, cold)
    with pytest.raises(ValueError, match="a zero"):
        Boom().kernel(np.zeros(3))
    assert cold.calls == 1 and cold.spent > 0


def test_dask_arguments_and_strict_kernels_take_the_python_path(monkeypatch):
    da = pytest.importorskip("dask.array", reason="dask is not installed")
    from specializers.loopnest.distributed.refusal import DaskArgumentError

    original = _gate_of(Rows)._asp_original_function
    monkeypatch.setitem(_COLD, original, ColdStart.of(original))
    with pytest.raises(DaskArgumentError):
        Rows().kernel(da.ones((4, 4), chunks=2), 2.0)
    k = Rows(strict=True, backend="c")   # no cold start: analysed and compiled at once
    k.kernel(np.ones((2, 2)), 2.0)
    assert not k.last_call.cold and k.last_call.nests[0].backend == "c"


def test_the_gate_keeps_no_reference_of_its_calls(monkeypatch):
    original = _gate_of(Rows)._asp_original_function
    monkeypatch.setitem(_COLD, original, ColdStart(analysis_s=1e9))   # cold for good
    A, s = np.ones((2, 3)), 1.0
    k = Rows()
    k.kernel(A, s)   # (the first call may make what later calls reuse)
    before = sys.getrefcount(A), sys.getrefcount(k), sys.getrefcount(original)
    for _ in range(2000):
        k.kernel(A, s)
    assert k.last_call.cold
    assert (sys.getrefcount(A), sys.getrefcount(k), sys.getrefcount(original)) == before


def test_a_stale_build_is_refused_for_the_python_dispatcher(monkeypatch):
    monkeypatch.setattr(_coldgate, "ABI", coldstart.GATE_ABI + 1)

    def dispatch(self, *args):
        return args

    assert coldstart.gate(dispatch, dispatch, {}, object()) is dispatch
