"""Benchmark of the loop-nest front end (issue 3, point 7).

Prints, for each of the twelve example kernels, the time to parse the kernel and build its
DAST and static analyses (once per kernel class), and the per-call cost of the dispatch path
for a one-nest kernel: reading the nest's inputs from the frame, computing the signature and
finding the cached variant (target under 50 us), measured on a zero-trip call so that the
nest's own work is nil, next to the same call of the plain method.

    python -m benchmarks.bench_frontend
"""

from __future__ import annotations

import importlib
import timeit

import numpy as np

from asp_core import frontend
from specializers.loopnest import pipeline

EXAMPLES = {"vadd": "VAdd", "saxpy": "Saxpy", "hilbert": "Hilbert", "jacobi": "Jacobi",
            "conway": "Conway", "mandelbrot": "Mandelbrot", "black_scholes": "BlackScholes",
            "gemm": "Gemm", "gemver": "Gemver", "syr2k": "Syr2k", "conv2d": "Conv2D",
            "fbcorr": "FBCorr"}


def best(fn, number: int, repeat: int = 7) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def analysis_times(repeat: int = 5) -> dict[str, float]:
    out = {}
    for module_name, cls_name in EXAMPLES.items():
        cls = getattr(importlib.import_module(f"examples.{module_name}"), cls_name)
        func = cls.kernel.__wrapped__

        def cold():
            frontend.clear_cache()
            pipeline.clear_cache()
            pipeline.analyse_kernel(func)

        out[module_name] = best(cold, number=repeat, repeat=repeat)
    return out


def dispatch_times(number: int = 20_000) -> dict[str, float]:
    from examples.vadd import VAdd

    kernel = VAdd(backend="python", strict=True)
    a, b, c = np.zeros(0), np.zeros(0), np.zeros(0)
    kernel.kernel(a, b, c)
    state = kernel._asp_current
    runner = state.runners[0]
    frame = {"self": kernel, "a": a, "b": b, "c": c}
    return {
        "kernel call, specialized": best(lambda: kernel.kernel(a, b, c), number),
        "kernel call, plain Python": best(lambda: kernel.original_kernel(a, b, c), number),
        "nest dispatch (gather, signature, lookup, run)": best(lambda: runner.enter(frame), number),
        "  of which gathering inputs": best(lambda: runner._gather(frame), number),
        "  of which the signature": best(lambda: runner.signature(runner._gather(frame)), number),
    }


def main(quick: bool = False) -> dict:
    analysis = analysis_times(1 if quick else 5)
    dispatch = dispatch_times(200 if quick else 20_000)
    print("loop-nest front end: parse + DAST + static analyses, once per kernel class")
    for name, t in analysis.items():
        print(f"  {name:14s} {t * 1e3:7.2f} ms")
    print("per-call dispatch of a one-nest kernel (vadd, zero-trip call), target < 50 us")
    for name, t in dispatch.items():
        print(f"  {name:48s} {t * 1e6:7.2f} us")
    overhead = dispatch["kernel call, specialized"] - dispatch["kernel call, plain Python"]
    print(f"  {'overhead over the plain call':48s} {overhead * 1e6:7.2f} us")
    return {"analysis": analysis, "dispatch": dispatch, "overhead": overhead}


if __name__ == "__main__":
    main()
