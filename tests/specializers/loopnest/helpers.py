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


def close(a: Any, b: Any, rtol: float = 1e-9) -> bool:
    """Like ``identical``, but floating-point values may differ by the rounding of reordered
    reductions (the only difference a parallel order may make)."""
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(close(x, y, rtol) for x, y in zip(a, b))
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
