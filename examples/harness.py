"""Shared driver of the loop-nest examples: run a kernel specialized and as plain Python.

``run_example`` deep-copies the inputs for each run, times the specialized kernel's first call
(analysis, code generation, compile or cache load) apart, then its warm calls once the cost
model has settled, and the plain-Python kernel: each as the median of several calls
(``WARM_CALLS`` within ``WARM_BUDGET_S``; plain Python ``PYTHON_CALLS`` within
``PYTHON_BUDGET_S``), so that two runs on one machine agree. It checks that both leave the
same arrays and return the same value; if a NumPy formulation is given, it checks the
specialized result against it too.
"""

from __future__ import annotations

import copy
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np


@dataclass(frozen=True)
class ExampleResult:
    name: str
    backends: tuple[str, ...]    # one per nest that ran
    specialized_s: float         # the median of warm calls
    python_s: float | None       # the median of plain-Python calls
    matches_python: bool | None
    matches_numpy: bool | None
    first_call_s: float = 0.0   # the first call: analysis, code generation, compile or load
    calls: tuple[int, int] = (1, 1)   # warm calls and plain-Python calls timed

    @property
    def speedup(self) -> float | None:
        return self.python_s / self.specialized_s if self.python_s else None

    def line(self) -> str:
        parts = [f"{self.name:14s} ran on {'+'.join(self.backends) or '-':14s}",
                 f"specialized {self.specialized_s * 1e3:9.2f} ms"]
        if self.python_s is not None:
            parts.append(f"plain Python {self.python_s * 1e3:10.1f} ms ({self.speedup:8.1f}x)")
            parts.append("same as Python" if self.matches_python else "DIFFERS FROM PYTHON")
        if self.matches_numpy is not None:
            parts.append("matches NumPy" if self.matches_numpy else "DIFFERS FROM NUMPY")
        return "  ".join(parts)


def same(a: Any, b: Any, rtol: float = 1e-9) -> bool:
    """Equal arrays/values; floats may differ by reordering of reductions (``rtol``)."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same(x, y, rtol) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False
        if a.dtype.kind == "f" or b.dtype.kind == "f":
            return bool(np.allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return bool(np.isclose(a, b, rtol=rtol, atol=rtol, equal_nan=True))
    return bool(a == b)


#: Calls, and seconds, the cost model may take to settle on its choice (see ``settle``).
SETTLE_CALLS, SETTLE_S = 40, 3.0


def settle(kernel, inputs: Sequence[Any]) -> None:
    """Call ``kernel`` as a program calling it repeatedly would, until the cost model's choice
    holds for three calls with no variant building in the background and none waiting to be
    built (a call that compiling would not pay off for runs as Python, and compiles once the
    time lost says it should: ``asp_core.selection``; three such calls in a row are not a
    choice that holds), at most ``SETTLE_CALLS`` calls or ``SETTLE_S`` seconds."""
    start, last, same = time.perf_counter(), None, 0
    for _ in range(SETTLE_CALLS):
        kernel.kernel(*copy.deepcopy(tuple(inputs)))
        runners = getattr(kernel._asp_current, "runners", ())   # (none while still cold)
        choice = tuple(n.backend for n in kernel.last_call.nests)
        building = [f for r in runners for f in list(r._building.values())]
        if building and time.perf_counter() - start > SETTLE_S:
            for future in building:   # a build under way: the warm calls come after it
                future.result()
            building = []
        renting = time.perf_counter() - start < SETTLE_S and any(
            r.last_decision is not None and not r.last_decision.stable and
            not r.last_decision.probe for r in runners)
        same = same + 1 if choice == last and not building and not renting else 0
        last = choice
        if same >= 3:
            return


def ran_on(kernel) -> tuple[str, ...]:
    """The variants the last call ran, per nest that ran (``python`` for a call that ran the
    original method whole: a kernel still cold, or settled on its original code)."""
    call = kernel.last_call
    if call.cold or call.settled:
        return ("python",)
    return tuple(n.backend for n in call.nests if n.ran)


def run_example(name: str, make_kernel: Callable[..., Any], inputs: Sequence[Any],
                reference: Callable[..., Any] | None = None, *, python: bool = True,
                rtol: float = 1e-9, backend: str | None = None) -> ExampleResult:
    """Run ``make_kernel().kernel(*inputs)`` specialized and as plain Python; compare."""
    kernel = make_kernel(backend=backend)
    first_args = copy.deepcopy(tuple(inputs))
    t0 = time.perf_counter()
    kernel.kernel(*first_args)  # specialize (and compile, or load from the disk cache) once
    first_call_s = time.perf_counter() - t0
    settle(kernel, inputs)
    specialized_s, warm_calls, (result, args) = median_time(kernel.kernel, inputs, WARM_CALLS,
                                                            WARM_BUDGET_S)
    backends = ran_on(kernel)
    got = (result, args)
    python_s = matches_python = None
    python_calls = 0
    if python:
        python_s, python_calls, (plain, plain_args) = median_time(
            kernel.original_kernel, inputs, PYTHON_CALLS, PYTHON_BUDGET_S)
        matches_python = same(got, (plain, plain_args), rtol)
    matches_numpy = None
    if reference is not None:
        expected = reference(*copy.deepcopy(tuple(inputs)))
        matches_numpy = same(got, expected, max(rtol, 1e-7))
    return ExampleResult(name, backends, specialized_s, python_s, matches_python, matches_numpy,
                         first_call_s, (warm_calls, python_calls))


#: Warm calls timed (their median is reported), within a budget of seconds (one at least);
#: the same for plain Python, which may take seconds a call.
WARM_CALLS, WARM_BUDGET_S = 9, 1.0
PYTHON_CALLS, PYTHON_BUDGET_S = 3, 2.0


def median_time(call: Callable[..., Any], inputs: Sequence[Any], calls: int, budget_s: float
                ) -> tuple[float, int, tuple[Any, tuple]]:
    """(median seconds, calls timed, (the last call's result, its arguments after it)): up to
    ``calls`` calls on fresh copies of ``inputs``, stopping once ``budget_s`` has passed."""
    times: list[float] = []
    start = time.perf_counter()
    while True:
        args = copy.deepcopy(tuple(inputs))
        t0 = time.perf_counter()
        result = call(*args)
        times.append(time.perf_counter() - t0)
        if len(times) >= calls or time.perf_counter() - start >= budget_s:
            return statistics.median(times), len(times), (result, args)
