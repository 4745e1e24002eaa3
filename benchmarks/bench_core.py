"""Benchmark of the core's compile/cache/call path (issue 2, point 5).

Prints:
* cold build time of a small C module (fresh cache folder, compiler invoked);
* cached load time in a fresh process (cache lookup, manifest check, dlopen), target < 50 ms;
* the overhead of calling a compiled C entry point with three array arguments, target < 10 us
  (argument conversion included), and of a whole ``ElementwiseMap`` dispatch on tiny arrays.

    python -m benchmarks.bench_core
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import time
import timeit
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

SOURCE = """
#include <stdint.h>
void triad(double * restrict a, const double * restrict b, const double * restrict c, int64_t n) {
    for (int64_t i = 0; i < n; ++i) a[i] = b[i] + 3.0 * c[i];
}
"""
CDEF = "void triad(void *a, void *b, void *c, int64_t n);"

CHILD = textwrap.dedent("""
    import sys, time
    t0 = time.perf_counter()
    from asp_core.backends.c import compile_c
    import numpy
    t1 = time.perf_counter()
    module = compile_c(SOURCE, CDEF, name="triad")
    t2 = time.perf_counter()
    print(f"{t1 - t0:.6f} {t2 - t1:.6f}")
""")


def best(fn, number: int, repeat: int = 7) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def main() -> dict:
    results = {}
    saved = os.environ.get("ASP_CACHE_DIR")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, ASP_CACHE_DIR=tmp)
        os.environ["ASP_CACHE_DIR"] = tmp
        from asp_core.backends.c import array_pointer, compile_c

        t0 = time.perf_counter()
        module = compile_c(SOURCE, CDEF, name="triad")
        results["cold_build_s"] = time.perf_counter() - t0

        child = f"SOURCE = {SOURCE!r}\nCDEF = {CDEF!r}\n" + CHILD
        loads = []
        for _ in range(5):
            start = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", child], env=env, cwd=ROOT,
                                 capture_output=True, text=True, check=True).stdout.split()
            loads.append((float(out[1]), float(out[0]), time.perf_counter() - start))
        load, imports, process = min(loads)
        results.update(cached_load_s=load, import_s=imports, fresh_process_s=process)

        ffi, triad = module.ffi, module.lib.triad
        a, b, c = np.zeros(8), np.ones(8), np.ones(8)
        results["call_overhead_s"] = best(
            lambda: triad(array_pointer(ffi, a), array_pointer(ffi, b), array_pointer(ffi, c), 8),
            number=100_000)

        from examples.elementwise import ElementwiseMap

        spec = ElementwiseMap(lambda x, y: x + 3.0 * y, strict=True)
        spec(b, c)
        results["dispatch_overhead_s"] = best(lambda: spec(b, c), number=20_000)
        if saved is None:
            os.environ.pop("ASP_CACHE_DIR")
        else:
            os.environ["ASP_CACHE_DIR"] = saved

    print("asp_core compile / cache / call benchmark")
    print(f"  cold build of a C module:              {results['cold_build_s'] * 1e3:8.1f} ms")
    print(f"  cached load in a fresh process:        {results['cached_load_s'] * 1e3:8.1f} ms"
          f"   (target < 50 ms; imports took {results['import_s'] * 1e3:.0f} ms, "
          f"whole process {results['fresh_process_s'] * 1e3:.0f} ms)")
    print(f"  C entry point call, 3 array arguments: {results['call_overhead_s'] * 1e6:8.2f} us"
          f"   (target < 10 us)")
    print(f"  ElementwiseMap call on 8 elements:     {results['dispatch_overhead_s'] * 1e6:8.2f} us"
          f"   (signature, variant lookup, conversion, call)")
    return results


if __name__ == "__main__":
    main()
