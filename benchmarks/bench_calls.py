"""Warm calls of tiny kernels: what a call costs when the loop is nothing (issue 15 item 2).

For a few kernels on a handful of elements, side by side in one run and in interleaved rounds
(the machine is shared): the plain method (CPython), the kernel as the cost model runs it,
forced to serial C and to OpenMP, and Numba's ``@njit`` of the same loop (when the ``[bench]``
extra is installed). Each figure is the best of the rounds of the mean of many calls, in
microseconds; the ratios are to Numba's call and to CPython's. The load average is printed
before and after.

    python -m benchmarks.bench_calls [--rounds N] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import timeit

import numpy as np

from specializers.loopnest import LoopKernel


class Vadd(LoopKernel):
    def kernel(self, a, b, c):
        for i in range(a.shape[0]):
            c[i] = a[i] + b[i]


class Dot(LoopKernel):
    def kernel(self, a, b):
        s = 0.0
        for i in range(a.shape[0]):
            s += a[i] * b[i]
        return s


class Stencil(LoopKernel):
    def kernel(self, a, b):
        for i in range(1, a.shape[0] - 1):
            for j in range(1, a.shape[1] - 1):
                b[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])


def _vadd(a, b, c):
    for i in range(a.shape[0]):
        c[i] = a[i] + b[i]


def _dot(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


def _stencil(a, b):
    for i in range(1, a.shape[0] - 1):
        for j in range(1, a.shape[1] - 1):
            b[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])


CASES = {
    "vadd, 16 elements": (Vadd, _vadd, lambda: (np.ones(16), np.ones(16), np.zeros(16))),
    "dot, 16 elements (a result)": (Dot, _dot, lambda: (np.ones(16), np.ones(16))),
    "stencil, 8 x 8": (Stencil, _stencil, lambda: (np.ones((8, 8)), np.zeros((8, 8)))),
}


def _numba():
    try:
        import numba
    except ImportError:
        return None
    return numba.njit


def _calls(case: str) -> dict[str, callable]:
    kernel_class, plain, make = CASES[case]
    args = make()
    plain_kernel = kernel_class()
    calls = {"CPython": lambda: plain_kernel.original_kernel(*args)}
    for label, backend in (("ours (model)", None), ("ours, c", "c"), ("ours, openmp", "openmp")):
        kernel = kernel_class(backend=backend)
        for _ in range(2000):   # warm: analysed, built, settled, guards loaded
            kernel.kernel(*args)
        calls[label] = (lambda k: lambda: k.kernel(*args))(kernel)
    jit = _numba()
    if jit is not None:
        compiled = jit(plain)
        compiled(*args)
        calls["Numba @njit"] = lambda: compiled(*args)
    return calls


def measure(rounds: int = 7, number: int = 5000) -> dict[str, dict[str, float]]:
    """Microseconds per call, per case and way of calling (best of interleaved rounds)."""
    from asp_core import call_guard

    call_guard.unavailable()   # loaded, as in a program that has run a while
    table = {case: _calls(case) for case in CASES}
    best: dict[str, dict[str, float]] = {c: {k: float("inf") for k in t} for c, t in table.items()}
    for _ in range(rounds):
        for case, calls in table.items():
            for label, call in calls.items():
                seconds = timeit.timeit(call, number=number) / number
                best[case][label] = min(best[case][label], seconds * 1e6)
    return best


_BUSY_CALLER = """
import sys, time
import numpy as np
from benchmarks.bench_calls import Vadd
kernel = Vadd()
a, b, c = np.ones(128), np.ones(128), np.zeros(128)
started = None
for calls in range(2_000_000):
    kernel.kernel(a, b, c)
    record = kernel.last_call
    if started is None and record.nests:
        started = time.perf_counter()   # the first call through the model: the build starts
    if record.nests and record.nests[0].backend == "c":
        print(time.perf_counter() - started, calls)
        break
"""


def background_build(cache: str) -> tuple[float, int]:
    """Seconds from the start of the background build of a 128-element vector addition's
    serial C, in a new process with an empty cache, to the first call that runs it, while
    the caller calls the kernel in a loop (as Python meanwhile); and the calls made."""
    import subprocess

    env = dict(os.environ, ASP_CACHE_DIR=cache, ASP_CALIBRATE="0")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, "-c", _BUSY_CALLER], env=env, cwd=root,
                          capture_output=True, text=True, timeout=600, check=True)
    seconds, calls = done.stdout.split()
    return float(seconds), int(calls)


def report(best: dict[str, dict[str, float]], load: tuple, load_after: tuple) -> str:
    labels = list(next(iter(best.values())))
    lines = [f"warm calls of tiny kernels, microseconds per call (best of interleaved rounds); "
             f"load average {load[0]:.2f} before, {load_after[0]:.2f} after",
             f"{'kernel':28s}" + "".join(f"{label:>15s}" for label in labels)]
    for case, row in best.items():
        lines.append(f"{case:28s}" + "".join(f"{row[label]:15.2f}" for label in labels))
    lines.append("")
    for case, row in best.items():
        ours = row["ours, c"]
        parts = [f"{case}: ours (c) / CPython {ours / row['CPython']:.2f}"]
        if "Numba @njit" in row:
            parts.append(f"/ Numba {ours / row['Numba @njit']:.1f}")
        lines.append(" ".join(parts))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_calls",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--number", type=int, default=5000, help="calls per measurement")
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args(argv)
    import tempfile

    load = os.getloadavg()
    best = measure(args.rounds, args.number)
    text = report(best, load, os.getloadavg())
    with tempfile.TemporaryDirectory() as cache:
        seconds, calls = background_build(cache)
    text += (f"\nbackground build of serial C (vadd, 128 elements, empty cache) while the "
             f"caller runs the kernel in a loop: {seconds:.2f} s, {calls} calls meanwhile")
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
