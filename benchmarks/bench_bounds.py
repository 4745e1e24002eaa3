"""Benchmark of the analysis budget and the bounded caches (issue 9, point 8).

Prints:
* per kernel family and nest depth, the time to analyse one perfect nest (binding, dependence
  tests, schedule) and the growth of the process's peak memory, each depth in a fresh process;
  the families: ``A[i0 + ... + ik]`` (sum), ``A[i0 + 2*i1 + ... + 2**k*ik]`` (linear, whose
  pairs are independent across instances) and the sum over triangular loops (triangular,
  where Fourier-Motzkin runs), every loop ``range(2)``;
* the memory kept by one kernel instance called with 10,000 distinct array lengths (serial C).

    python -m benchmarks.bench_bounds [--depths 6,8,10,13,16,19] [--timeout 120]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DEPTH_RUN = r'''
import resource, sys, time
import numpy as np
from specializers.loopnest.checking import load_source
from specializers.loopnest.pipeline import analyse_kernel, make_plan

family, depth = sys.argv[1], int(sys.argv[2])
v = [f"i{k}" for k in range(depth)]
lines = ["from specializers.loopnest import LoopKernel", "", "", "class Kernel(LoopKernel):",
         "    def kernel(self, A):"]
for k in range(depth):
    bound = f"range({v[k - 1]} + 1)" if family == "triangular" and k else "range(2)"
    lines.append("    " * (k + 2) + f"for {v[k]} in {bound}:")
terms = [f"{2 ** k}*{x}" for k, x in enumerate(v)] if family == "linear" else v
subscript = " + ".join(terms)
lines.append("    " * (depth + 2) + f"A[{subscript}] = A[{subscript}] + 1.0")
analysis = analyse_kernel(load_source("\n".join(lines) + "\n").kernel.__wrapped__).nests[0]
size = 2 ** depth if family == "linear" else 2 * depth
key = analysis.binder.key(tuple(np.zeros(size) if n == "A" else None
                                for n in analysis.names.inputs))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
plan = make_plan(analysis, key)
seconds = time.perf_counter() - start
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
stopped = sum("budget exhausted" in p.outcome for p in plan.graph.pairs)
print(f"{seconds:.3f} {grown:.1f} {len(plan.graph.edges)} {len(plan.schedule.parallel_loops())} "
      f"{stopped}")
'''

LENGTHS_RUN = r'''
import gc, os
import numpy as np
from examples.vadd import VAdd


def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


k = VAdd(backend="c", strict=True)
a, b, c = np.ones(10_003), np.ones(10_003), np.zeros(10_003)
k.kernel(a[:1], b[:1], c[:1])
gc.collect()
before = resident()
for n in range(2, 10_002):
    k.kernel(a[:n], b[:n], c[:n])
gc.collect()
print(f"{(resident() - before) / 2**20:.1f}")
'''


def run(code: str, *args: str, timeout: float) -> str | None:
    try:
        out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                             text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return None
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return out.stdout.strip()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--depths", default="6,8,10,13,16,19")
    parser.add_argument("--timeout", type=float, default=120)
    args = parser.parse_args(argv)
    depths = [int(d) for d in args.depths.split(",")]
    print("analysis of one perfect nest, loops range(2), each in a fresh process")
    print(f"  {'family':11s} {'depth':>5s} {'time':>9s} {'peak memory':>12s} {'edges':>7s} "
          f"{'parallel':>8s} {'stopped':>7s}")
    for family in ("sum", "linear", "triangular"):
        for depth in depths:
            out = run(DEPTH_RUN, family, str(depth), timeout=args.timeout)
            if out is None:
                print(f"  {family:11s} {depth:5d}  no answer in {args.timeout:.0f} s")
                break
            seconds, grown, edges, parallel, stopped = out.split()
            print(f"  {family:11s} {depth:5d} {float(seconds):8.3f}s {float(grown):9.1f} MB "
                  f"{edges:>7s} {parallel:>8s} {stopped:>7s}")
    if Path("/proc/self/statm").exists():
        kept = run(LENGTHS_RUN, timeout=600)
        print(f"memory kept after 10,000 distinct array lengths (vadd, serial C): +{kept} MiB")


if __name__ == "__main__":
    main()
