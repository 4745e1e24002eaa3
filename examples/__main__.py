"""The main job (``python3 run.py main``): run the examples specialized and report.

For each of the twelve loop-nest examples (ALPyNA's benchmark programs), at a modest size:
the variant that ran each nest (chosen by the cost model once its choice has settled), the
first call (analysis, code generation and compilation, or a load from the disk cache), the
median of several warm calls against the median of plain-Python calls of the same kernel
(``examples.harness``), and whether the results agree with plain Python (exactly, or within
1e-9 where a parallel reduction adds in another order) and with the example's NumPy
formulation; the load average before and after, since the machine may be shared. Then the
element-wise map specializer of ``examples/elementwise``.
"""

import argparse
import importlib
import logging
import math
import os
import sys

from asp_core.platform import query_platform

#: example -> (kernel class, arguments of its main() at the main job's size, in --quick mode)
EXAMPLES = {
    "vadd": ("VAdd", dict(n=400_000), dict(n=2_000)),
    "saxpy": ("Saxpy", dict(n=400_000), dict(n=2_000)),
    "hilbert": ("Hilbert", dict(n=400), dict(n=30)),
    "jacobi": ("Jacobi", dict(n=400), dict(n=30)),
    "conway": ("Conway", dict(n=300), dict(n=30)),
    "mandelbrot": ("Mandelbrot", dict(n=120, max_iter=64), dict(n=20, max_iter=20)),
    "black_scholes": ("BlackScholes", dict(n=50_000), dict(n=1_000)),
    "gemm": ("Gemm", dict(n=64), dict(n=12)),
    "gemver": ("Gemver", dict(n=200), dict(n=20)),
    "syr2k": ("Syr2k", dict(n=64, m=48), dict(n=12, m=9)),
    "conv2d": ("Conv2D", dict(n=128, k=5), dict(n=16, k=3)),
    "fbcorr": ("FBCorr", dict(batch=1, channels=3, size=24, nfilters=4, fsize=5),
               dict(batch=1, channels=2, size=8, nfilters=2, fsize=3)),
}


def run_examples(quick: bool, backend: str | None = None) -> list:
    results = []
    print(f"load average: {_load()}")
    print(f"{'example':14s} {'ran on':14s} {'first call':>10s} {'warm (median)':>13s} "
          f"{'plain Python':>13s} {'speedup':>8s}  check")
    for name, (_, full, small) in EXAMPLES.items():
        module = importlib.import_module(f"examples.{name}")
        result = module.main(**(small if quick else full), backend=backend)
        results.append(result)
        ran = "+".join(dict.fromkeys(result.backends)) or "-"
        check = ("same as Python" if result.matches_python else "DIFFERS FROM PYTHON") + \
            (", matches NumPy" if result.matches_numpy else ", DIFFERS FROM NUMPY")
        print(f"{name:14s} {ran:14s} {result.first_call_s * 1e3:8.0f}ms "
              f"{result.specialized_s * 1e3:11.2f}ms {result.python_s * 1e3:11.1f}ms "
              f"{result.speedup:7.0f}x  {check}", flush=True)
    speedups = [r.speedup for r in results]
    print(f"geometric mean speedup over plain Python: "
          f"{math.exp(sum(map(math.log, speedups)) / len(speedups)):.0f}x "
          f"(warm calls; load average now {_load()})")
    return results


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 run.py main", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller inputs")
    parser.add_argument("--backend", help="force one backend (python, c, openmp, ...)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    print(query_platform().summary())
    print()
    results = run_examples(args.quick, args.backend)
    print()
    from examples import elementwise

    report = elementwise.main(n=50_000 if args.quick else 400_000)
    ok = all(r.matches_python and r.matches_numpy for r in results) and report["identical"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
