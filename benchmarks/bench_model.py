"""The cost model's raw predictions against measured times (issue 10, point 1): how far the
model is from the truth before the online correction learns anything.

For the twelve examples at a few sizes (``--points``: indices into each example's doubling
series of ``benchmarks.selection_worker.CASES``), each forced variant (serial C, OpenMP on
all the cores of the affinity mask, OpenCL where a device is calibrated here) is timed in one
process, best of ``--rounds`` bursts of ``--burst`` seconds, interleaved; the model's
uncorrected prediction for the same call (its estimate's seconds and fixed cost, summed over
the kernel's nests) comes from a kernel choosing by the cost model in the same process, after
its first call. Per point, predicted over measured; per variant, the range and the geometric
mean of the factor either way (``exp(mean |log(predicted / measured)|)``: 1.0 is exact).

    python -m benchmarks.bench_model [--points 3,5,7] [--only NAME ...] [--out FILE]

About two minutes on the 2-core development VM.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

from .selection_worker import CASES, Bench, case_named, device_variants, extension_loaded

#: The largest inputs timed (bytes): the model's memory terms, not the machine's swap.
MAX_BYTES = 3e8


def predictions(kernel) -> dict[str, float] | None:
    """The model's uncorrected prediction per variant label for the kernel's last call, summed
    over its nests (None where a nest was not chosen by the model: a cold call)."""
    state = getattr(kernel, "_asp_current", None)
    runners = getattr(state, "runners", None)
    if not runners:
        return None
    total: dict[str, float] = {}
    for runner in runners:
        decision = runner.last_decision
        if decision is None:
            continue
        for e in decision.estimates:
            total[e.label] = total.get(e.label, 0.0) + e.seconds + e.fixed_s
    return total or None


def measure(name: str, n: int, variants: list[str], rounds: int,
            burst: float) -> tuple[dict[str, float], dict[str, float]] | None:
    """(best measured seconds per variant, the model's prediction per variant label)."""
    bench = Bench(name, n, variants + ["acm"])
    extension_loaded()
    for variant in variants:
        bench.call(variant)   # built (or loaded) outside the timing
    best: dict[str, float] = {}
    for _ in range(rounds):
        for variant in variants:
            best[variant] = min(best.get(variant, math.inf), bench.burst(variant, burst)["s"])
    kernel = bench.kernels["acm"][0]
    for _ in range(3):   # (a first call may run cold: no decision yet)
        bench.call("acm")
        predicted = predictions(kernel)
        if predicted is not None:
            return best, predicted
    return None


def run(points: list[int], only: list[str], rounds: int, burst: float) -> list[str]:
    threads = len(os.sched_getaffinity(0))
    variants = ["c"] + ([f"openmp@{threads}"] if threads > 1 else []) + device_variants()
    out = [f"bench_model {time.strftime('%Y-%m-%dT%H:%M:%S')}",
           f"load average at start {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
           f"variants: {', '.join(variants)}; best of {rounds} bursts of {burst} s each",
           "predicted / measured per point (the model's raw prediction, before any "
           "correction)", ""]
    header = f"{'example':13s} {'n':>8s}  " + "  ".join(f"{v:>20s}" for v in variants)
    out.append(header)
    ratios: dict[str, list[float]] = {v: [] for v in variants}
    for case in CASES:
        if only and case.name not in only:
            continue
        for index in points:
            if index >= case.points:
                continue
            n = case.start << index
            if case.bytes_per * n ** case.dims > MAX_BYTES:
                continue
            got = measure(case.name, n, variants, rounds, burst)
            if got is None:
                continue
            best, predicted = got
            cells = []
            for variant in variants:
                p = predicted.get(variant)   # (forced names are the model's labels)
                if p is None or not best.get(variant):
                    cells.append(f"{'-':>20s}")
                    continue
                ratio = p / best[variant]
                ratios[variant].append(ratio)
                cells.append(f"{ratio:6.2f} ({_t(best[variant]):>9s})")
            line = f"{case.name:13s} {n:8d}  " + "  ".join(cells)
            out.append(line)
            print(line, flush=True)
    out.append("")
    for variant, got in ratios.items():
        if got:
            spread = math.exp(sum(abs(math.log(r)) for r in got) / len(got))
            out.append(f"{variant:10s} {len(got):3d} points: predicted/measured "
                       f"{min(got):.2f} to {max(got):.2f}, geomean factor either way "
                       f"{spread:.2f}")
    out.append(f"load average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return out


def _t(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}ms" if seconds < 1 else f"{seconds:.3f}s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_model",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", default="3,5,7",
                        help="indices into each example's sizes (default 3,5,7)")
    parser.add_argument("--only", nargs="*", default=[], help="examples to run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--burst", type=float, default=0.1)
    parser.add_argument("--out", help="write the report here too")
    args = parser.parse_args(argv)
    for name in args.only:
        case_named(name)   # (an unknown name: KeyError listing the examples)
    lines = run([int(p) for p in args.points.split(",")], args.only, args.rounds, args.burst)
    print("\n".join(lines[lines.index("", 5):]))   # (the summary: the points went by)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
