"""Helpers for loop-nest tests: run a kernel specialized and as written, and compare."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np


def identical(a: Any, b: Any) -> bool:
    """Exactly equal results: arrays element for element (NaN equal to NaN), same dtypes, and
    scalars equal with the same type."""
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and \
            bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, float) and a != a:
        return isinstance(b, float) and b != b and type(a) is type(b)
    return type(a) is type(b) and a == b


def within_ulps(a: np.ndarray, b: np.ndarray, ulps: int) -> bool:
    """Float arrays of one dtype whose elements are at most ``ulps`` units in the last place
    apart (NaN only where NaN, infinities equal)."""
    if a.dtype != b.dtype or a.shape != b.shape or a.dtype.kind != "f":
        return False
    if not np.array_equal(np.isnan(a), np.isnan(b)):
        return False
    finite = np.isfinite(a) & np.isfinite(b)
    if not np.array_equal(a[~finite & ~np.isnan(a)], b[~finite & ~np.isnan(b)]):
        return False
    ints = {4: np.int32, 8: np.int64}[a.dtype.itemsize]
    def ordered(x):  # float bit patterns mapped to integers in the floats' order
        bits = x[finite].view(ints).astype(np.int64)
        return np.where(bits < 0, np.iinfo(ints).min - bits, bits)
    return bool(np.all(np.abs(ordered(a) - ordered(b)) <= ulps))


def run_both(kernel, *args: Any) -> tuple[Any, Any]:
    """(specialized result, plain result): each is (return value, arguments after the call)."""
    spec_args = copy.deepcopy(args)
    plain_args = copy.deepcopy(args)
    got = kernel.kernel(*spec_args)
    want = kernel.original_kernel(*plain_args)
    return (got, spec_args), (want, plain_args)


def assert_same_as_python(kernel, *args: Any) -> Any:
    got, want = run_both(kernel, *args)
    assert identical(got, want), f"specialized {got!r}\n        plain {want!r}"
    return kernel.last_call


#: The relative difference reordered float32 reductions may make (float64's is ``rtol``): the
#: same ~1e-9 of a float64 sum of a few hundred terms is ~100 ulps of float32, 1e-5.
FLOAT32_RTOL = 1e-5


def close(a: Any, b: Any, rtol: float = 1e-9) -> bool:
    """Like ``identical``, but floating-point values may differ by the rounding of reordered
    reductions (the only difference a parallel order may make); float32 values by
    ``FLOAT32_RTOL`` at least."""
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(close(x, y, rtol) for x, y in zip(a, b))
    if getattr(a, "dtype", None) == np.float32:
        rtol = max(rtol, FLOAT32_RTOL)
    if isinstance(a, np.ndarray) and a.dtype.kind == "f":
        return isinstance(b, np.ndarray) and a.shape == b.shape and \
            bool(np.allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True))
    if isinstance(a, (float, np.floating)) and isinstance(b, (float, np.floating)):
        return bool(np.isclose(a, b, rtol=rtol, atol=rtol, equal_nan=True))
    return identical(a, b)


ORDERS = ("python-shuffled", "python-reversed")


def assert_any_order_same_as_python(make_kernel, *args: Any) -> None:
    """The kernel with its parallel loops reversed and shuffled gives plain Python's result."""
    for order in ORDERS:
        kernel = make_kernel(order)
        got, want = run_both(kernel, *args)
        assert close(got, want), f"{order}: {got!r}\n        plain {want!r}"
        assert all(n.fallback is None for n in kernel.last_call.nests if n.ran)


def compiled_modules(kernel) -> list:
    """The generated C modules (``codegen.c.CModule``) of the kernel's last call, one per nest
    that ran compiled, in nest order."""
    found = []
    for runner in kernel._asp_current.runners:
        for run in runner._executors.values():
            module = getattr(run, "module", None)  # a compiled variant, perhaps wrapped
            if module is not None:
                found.append(module)
    return found


def _outcome(call):
    from specializers.loopnest.variants import BeyondInt64

    try:
        return ("ok", call())
    except BeyondInt64:
        return ("beyond int64", BeyondInt64)
    except (ArithmeticError, IndexError, ValueError) as exc:
        return ("error", type(exc))


def check_generated(source: str, backend: str) -> bool:
    """Run a generated kernel (``generators.typed_kernels``) forced to ``backend``, strict,
    against its original code: the same outcome (the result up to reordered reductions, or the
    same exception), every nest on ``backend`` with nothing rejected. False where Python's
    ints grew past 64 bits, which a compiled backend refuses with ``BeyondInt64`` (the stated
    exception: ``test_beyond_int64``), True where the outcomes were compared."""
    import warnings

    from .generators import load_kernel, make_typed_arguments

    Kernel, _ = load_kernel(source)
    args = make_typed_arguments()
    plain_args = copy.deepcopy(args)
    want = _outcome(lambda: Kernel().original_kernel(*plain_args))
    kernel = Kernel(backend=backend, strict=True)
    got_args = copy.deepcopy(args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = _outcome(lambda: kernel.kernel(*got_args))
    if got[0] == "beyond int64":
        return False
    assert got[0] == want[0], (got, want, source)
    if got[0] == "ok":
        assert close((got[1], got_args), (want[1], plain_args)), source
        assert all(n.backend == backend and n.fallback is None
                   for n in kernel.last_call.nests if n.ran)   # (a return may skip a nest)
        for runner in kernel._asp_current.runners:
            assert runner.last_plan is None or runner.last_plan.rejected == ()
    else:
        assert got[1] is want[1], source
    return True


def mark_root_loop_parallel(monkeypatch) -> None:
    """A deliberately wrong schedule, to test the checkers themselves: the (single) top-level
    loop of every plan is marked parallel, whatever it carries."""
    from specializers.loopnest import pipeline
    from specializers.loopnest.schedule.tree import SLoop

    real = pipeline.make_plan

    def wrong_plan(analysis, key):
        plan = real(analysis, key)
        (loop,) = plan.schedule.root
        broken = SLoop(loop.lid, True, loop.body)
        return pipeline.Plan(plan.bound, plan.graph, plan.schedule.replace(root=(broken,)))

    monkeypatch.setattr(pipeline, "make_plan", wrong_plan)


def random_kernel(nest, source: str | None = None, **extra: Any):
    """The kernel class of a random nest (``checking.random_nests``; or of ``source``, a
    variant of its text) and its arguments, in the order of the method's parameters (the
    nest's arrays and values, and ``extra`` ones)."""
    from specializers.loopnest.checking import load_source
    from specializers.loopnest.checking.random_nests import make_arrays

    Kernel = load_source(source or nest.source)
    values = dict(make_arrays(nest), **nest.args, **extra)
    code = Kernel.kernel.__wrapped__.__code__
    return Kernel, [values[p] for p in code.co_varnames[1:code.co_argcount]]
