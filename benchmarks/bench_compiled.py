"""Benchmark of the compiled variants (issue 5, point 7), every ratio measured side by side in
one run.

For each of the twelve examples, at the largest size at which Numba's ``@njit`` of the same
loop source takes about 0.5 s (capped where the arrays would pass ``--max-gib``):

* serial C (``backend="c"``) against ``@njit`` of the kernel's own source;
* OpenMP C (``backend="openmp"``) against ``@njit(parallel=True)`` written by hand with
  ``prange`` on the legally parallel loops (``benchmarks/numba_versions.py``).

A ratio is Numba's time over ours (above 1: we are faster); each time is the best of
``--repeat`` rounds after a warm-up call, the four versions called in turn in each round.
Targets: geomean of each column at least 1.0, no ratio below 0.8. Also printed: the memory bandwidth of a STREAM triad (OpenMP C) and the
share of it vadd and saxpy reach (target 80%), the warm call overhead of a one-nest kernel on
tiny arrays (target under 20 us), the cold compile time per nest in an empty cache (target
under 1 s), and the first call in a new process that finds its variants in the disk cache.

    python -m benchmarks.bench_compiled [--quick] [--only NAME ...]

Needs the ``[bench]`` extra (Numba).
"""

from __future__ import annotations

import argparse
import copy
import importlib
import math
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import timeit
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from asp_core.platform import query_platform
from specializers.loopnest.cost.first_use import PROBE_SCRIPT

from . import numba_versions

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 0.5


@dataclass(frozen=True)
class Case:
    """An example at a size set by one integer: ``inputs(n)``, work growing as n**order."""

    name: str
    cls: str
    inputs: Callable[[int], tuple]
    order: int
    start: int          # a size at which Numba takes a few milliseconds
    bytes_per_n: float  # memory of the inputs per unit of n**order (for the cap)


def _example(name: str):
    return importlib.import_module(f"examples.{name}")


CASES = [
    Case("vadd", "VAdd", lambda n: _example("vadd").make_inputs(n), 1, 1 << 20, 24),
    Case("saxpy", "Saxpy", lambda n: _example("saxpy").make_inputs(n), 1, 1 << 20, 8),
    Case("hilbert", "Hilbert", lambda n: _example("hilbert").make_inputs(n), 2, 512, 8),
    Case("jacobi", "Jacobi", lambda n: _example("jacobi").make_inputs(n), 2, 512, 16),
    Case("conway", "Conway", lambda n: _example("conway").make_inputs(n), 2, 512, 16),
    Case("mandelbrot", "Mandelbrot",
         lambda n: _example("mandelbrot").make_inputs(n, max_iter=100), 2, 128, 4),
    Case("black_scholes", "BlackScholes",
         lambda n: _example("black_scholes").make_inputs(n), 1, 1 << 17, 40),
    Case("gemm", "Gemm", lambda n: _example("gemm").make_inputs(n), 3, 128, 0),
    Case("gemver", "Gemver", lambda n: _example("gemver").make_inputs(n), 2, 512, 8),
    Case("syr2k", "Syr2k",
         lambda n: _example("syr2k").make_inputs(n, m=max(1, 3 * n // 4)), 3, 96, 0),
    Case("conv2d", "Conv2D", lambda n: _example("conv2d").make_inputs(n, k=5), 2, 256, 16),
    Case("fbcorr", "FBCorr",
         lambda n: _example("fbcorr").make_inputs(batch=2, channels=3, size=n, nfilters=8,
                                                  fsize=5), 2, 32, 16 * 8),
]


def best_time(fn: Callable[[], Any], repeat: int) -> float:
    fn()  # warm-up: compiles, touches the pages
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def calibrate(case: Case, njit_fn, max_bytes: float, quick: bool) -> int:
    """The size at which ``njit_fn`` takes about TARGET_S (two refinements), or the cap."""
    cap = math.inf if not case.bytes_per_n else (max_bytes / case.bytes_per_n) ** (1 / case.order)
    n = case.start
    if quick:
        return max(8, n // 4)
    for _ in range(3):
        args = case.inputs(n)
        took = best_time(lambda: njit_fn(*args), 1)
        scaled = n * (TARGET_S / max(took, 1e-6)) ** (1 / case.order)
        new = int(min(scaled, cap))
        if abs(new - n) <= 0.05 * n:
            break
        n = new
    return n


@dataclass
class Row:
    name: str
    n: int
    numba: float
    c: float
    numba_parallel: float
    openmp: float
    backends: str
    agrees: bool

    @property
    def serial_ratio(self) -> float:
        return self.numba / self.c

    @property
    def parallel_ratio(self) -> float:
        return self.numba_parallel / self.openmp


def compare(case: Case, repeat: int, max_bytes: float, quick: bool) -> Row:
    module = _example(case.name)
    cls = getattr(module, case.cls)
    njit_fn = numba_versions.same_source(cls)
    prange_fn = numba_versions.parallel(case.name)
    n = calibrate(case, njit_fn, max_bytes, quick)
    inputs = case.inputs(n)
    omp_kernel = cls(backend="openmp", strict=True)
    functions = {"numba": njit_fn, "c": cls(backend="c", strict=True).kernel,
                 "numba_parallel": prange_fn, "openmp": omp_kernel.kernel}
    times = interleaved_best_times(functions, inputs, repeat)
    backends = "+".join(sorted({nest.backend for nest in omp_kernel.last_call.nests
                                if nest.ran}))
    agrees = _agree(list(functions.values()), inputs)
    return Row(case.name, n, times["numba"], times["c"], times["numba_parallel"],
               times["openmp"], backends, agrees)


def interleaved_best_times(functions: dict[str, Callable], inputs: tuple,
                           repeat: int) -> dict[str, float]:
    """Each function's best time over ``repeat`` rounds, each round calling every function
    once in turn (on its own copy of the inputs, after a warm-up call), so that a noisy
    stretch of time on this shared machine hits all of them alike."""
    args = {name: copy.deepcopy(inputs) for name in functions}
    for name, fn in functions.items():
        fn(*args[name])
    best = {name: math.inf for name in functions}
    for _ in range(repeat):
        for name, fn in functions.items():
            t0 = time.perf_counter()
            fn(*args[name])
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def _agree(functions: list[Callable], inputs: tuple) -> bool:
    """One call each, from the same inputs: every result agrees with the first (reductions
    may round differently in parallel). One copy of the inputs at a time besides the first."""
    from examples.harness import same

    def run(fn):
        args = copy.deepcopy(inputs)
        return fn(*args), args

    first = run(functions[0])
    return all(same(first, run(fn), rtol=1e-7) for fn in functions[1:])


# -- memory bandwidth ---------------------------------------------------------------------------

TRIAD_C = """
#include <stdint.h>
void triad(double *restrict a, const double *restrict b, const double *restrict c,
           double s, int64_t n) {
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}
"""


def triad_bandwidth(n: int, repeat: int) -> float:
    """Bytes per second of a STREAM triad (OpenMP C, counted as STREAM does: 24 bytes per
    element)."""
    from asp_core.backends.c import array_pointer, compile_c

    module = compile_c(TRIAD_C, "void triad(void *a, void *b, void *c, double s, int64_t n);",
                       name="triad", openmp=True)
    triad = module.function("triad")
    a, b, c = np.zeros(n), np.ones(n), np.full(n, 2.0)
    pa, pb, pc = (array_pointer(module.ffi, x) for x in (a, b, c))
    seconds = best_time(lambda: triad(pa, pb, pc, 3.0, n), repeat)
    return 24 * n / seconds


def stream_share(row: Row, bytes_per_element: int) -> float:
    """Bytes per second the OpenMP variant moved (reads and writes counted once each)."""
    return bytes_per_element * row.n / row.openmp


# -- call overhead, compile time, cached load ------------------------------------------------

def warm_call_overhead(number: int = 20_000) -> float:
    from examples.vadd import VAdd

    kernel = VAdd(backend="c", strict=True)
    a, b, c = np.ones(16), np.ones(16), np.zeros(16)
    kernel.kernel(a, b, c)
    return min(timeit.repeat(lambda: kernel.kernel(a, b, c), number=number, repeat=7)) / number


COLD_SCRIPT = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from examples.harness import run_example
    import importlib
    name, cls_name, backend = sys.argv[1:4]
    module = importlib.import_module("examples." + name)
    cls = getattr(module, cls_name)
    inputs = module.make_inputs(**json.loads(sys.argv[4]))
    kernel = cls(backend=backend, strict=True)
    t0 = time.perf_counter()
    kernel.kernel(*inputs)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    kernel.kernel(*inputs)
    second = time.perf_counter() - t0
    nests = sum(1 for nest in kernel.last_call.nests if nest.ran)
    print(json.dumps({"first": first, "second": second, "nests": nests}))
""")

TINY = {"vadd": dict(n=64), "saxpy": dict(n=64), "hilbert": dict(n=8), "jacobi": dict(n=8),
        "conway": dict(n=8), "mandelbrot": dict(n=8, max_iter=4), "black_scholes": dict(n=64),
        "gemm": dict(n=8), "gemver": dict(n=8), "syr2k": dict(n=8, m=6),
        "conv2d": dict(n=8, k=3),
        "fbcorr": dict(batch=1, channels=2, size=8, nfilters=2, fsize=3)}


# The compiler's version line and the OpenMP probe are kept in the cache once per machine: made
# before the cold runs, so that none of them pays for it (``first_use.PROBE_SCRIPT``).


def _in_new_process(script: str, args: list[str], cache: Path) -> str:
    env = dict(os.environ, ASP_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    # As a user's install runs: with Python's bytecode cache (a sandbox that disables it makes
    # every lazy import in the first call parse its source again).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True,
                          text=True, cwd=ROOT, check=True)
    return done.stdout


def first_call(name: str, cls_name: str, backend: str, cache: Path) -> dict:
    """The first and second call of a kernel in a new process using ``cache``."""
    import json

    out = _in_new_process(COLD_SCRIPT, [name, cls_name, backend, json.dumps(TINY[name])], cache)
    return json.loads(out.strip().splitlines()[-1])


# -- report ---------------------------------------------------------------------------------------

def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_compiled",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat (a smoke test)")
    parser.add_argument("--only", nargs="*", help="examples to run")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--max-gib", type=float, default=1.5, help="cap on the inputs' size")
    args = parser.parse_args(argv)
    repeat = 1 if args.quick else args.repeat
    max_bytes = args.max_gib * 2**30
    print(query_platform().summary())
    import numba

    print(f"numba {numba.__version__}, {numba.config.NUMBA_NUM_THREADS} threads; "
          f"OpenMP threads: {os.environ.get('OMP_NUM_THREADS', 'default')}")
    print()
    cases = [c for c in CASES if not args.only or c.name in args.only]

    print(f"{'example':14s} {'n':>9s}  {'numba':>9s} {'C':>9s} {'ratio':>6s}   "
          f"{'numba ||':>9s} {'OpenMP':>9s} {'ratio':>6s}  agree")
    rows = []
    for case in cases:
        row = compare(case, repeat, max_bytes, args.quick)
        rows.append(row)
        print(f"{row.name:14s} {row.n:9d}  {row.numba * 1e3:7.1f}ms {row.c * 1e3:7.1f}ms "
              f"{row.serial_ratio:6.2f}   {row.numba_parallel * 1e3:7.1f}ms "
              f"{row.openmp * 1e3:7.1f}ms {row.parallel_ratio:6.2f}  "
              f"{'yes' if row.agrees else 'NO'}", flush=True)
    serial = [r.serial_ratio for r in rows]
    parallel = [r.parallel_ratio for r in rows]
    print(f"{'geomean':14s} {'':9s}  {'':9s} {'':9s} {geomean(serial):6.2f}   {'':9s} "
          f"{'':9s} {geomean(parallel):6.2f}")
    print(f"{'lowest':14s} {'':9s}  {'':9s} {'':9s} {min(serial):6.2f}   {'':9s} {'':9s} "
          f"{min(parallel):6.2f}")
    print("targets: geomean >= 1.0 in both columns, no ratio below 0.8")
    print()

    by_name = {r.name: r for r in rows}
    if "vadd" in by_name or "saxpy" in by_name:
        size = max(r.n for r in rows if r.name in ("vadd", "saxpy"))
        triad = triad_bandwidth(size, repeat)
        print(f"memory bandwidth, STREAM triad (OpenMP C, n={size}): {triad / 1e9:6.1f} GB/s")
        for name, per_element in (("vadd", 24), ("saxpy", 12)):
            if name in by_name:
                bw = stream_share(by_name[name], per_element)
                print(f"  {name:6s} OpenMP variant: {bw / 1e9:6.1f} GB/s = {bw / triad:5.0%} "
                      "of the triad (target 80%)")
        print()

    overhead = warm_call_overhead(2_000 if args.quick else 20_000)
    print(f"warm call overhead, one-nest kernel (vadd) on 16-element arrays, serial C: "
          f"{overhead * 1e6:.1f} us (target < 20 us)")
    print()
    print("first call per example in a new process (tiny inputs): with an empty disk cache "
          "(analysis, code generation, compilation) and with the cache from the first run")
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        _in_new_process(PROBE_SCRIPT, [], cache)
        for backend in ("c", "openmp"):
            cold_per_nest, warm = [], []
            for case in cases:
                cold = first_call(case.name, case.cls, backend, cache)
                cached = first_call(case.name, case.cls, backend, cache)
                cold_per_nest.append(cold["first"] / max(1, cold["nests"]))
                warm.append(cached["first"])
                print(f"  {backend:6s} {case.name:14s} {cold['nests']} nest(s): cold "
                      f"{cold['first'] * 1e3:7.1f} ms ({cold_per_nest[-1] * 1e3:6.1f} ms per "
                      f"nest), cached {cached['first'] * 1e3:6.1f} ms")
            print(f"  {backend}: cold compile per nest: mean {np.mean(cold_per_nest) * 1e3:.0f} "
                  f"ms, worst {max(cold_per_nest) * 1e3:.0f} ms (target < 1000 ms); cached first "
                  f"call: mean {np.mean(warm) * 1e3:.1f} ms, worst {max(warm) * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
