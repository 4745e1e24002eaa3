"""After a passing load: how soon the cost model runs OpenMP again (issue 10, point 3).

For a few examples at a size where OpenMP on all cores is clearly faster than serial C on an
idle machine, the model's kernel (``Cls()``) is called back to back, each run in a new process
(the model's corrections live in the process): ``--settle`` seconds alone, ``--load`` seconds
beside two processes spinning in pure Python, then ``--after`` seconds alone again. Per run:

* the share of calls that ran OpenMP before, during and after the load;
* **back**: the calls, and the milliseconds, from the load's end until OpenMP ran
  ``IN_A_ROW`` calls in a row ("never" if it did not within ``--after``);
* the model's mean call during and after the load, beside the forced serial C's and OpenMP's mean calls
  measured in the same process before the load (``c``, ``omp``).

A model that recovers at once runs OpenMP's mean call after the load; one that stays on serial
C runs serial C's. The machine is shared and its two virtual CPUs at times run at two speeds:
compare runs made side by side, and mind the load average printed with them.

    python -m benchmarks.bench_recovery [--only EXAMPLE:N ...] [--runs N] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

#: The examples and sizes run by default: OpenMP at 2 threads 1.5 to 2 times faster than
#: serial C on the idle development VM (benchmarks/results/selection.txt).
DEFAULT_POINTS = ("conway:512", "mandelbrot:64", "hilbert:256")
#: OpenMP must run this many calls in a row after the load to count as chosen again.
IN_A_ROW = 20
ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Run:
    """One process's calls of the model's kernel around a load."""

    point: str
    omp_before: float        # share of calls that ran OpenMP
    omp_during: float
    omp_after: float
    back_calls: int | None   # calls after the load until OpenMP ran IN_A_ROW in a row
    back_ms: float | None
    mean_during_s: float     # the model's mean call during the load
    mean_after_s: float      # ... and after it
    c_s: float               # forced serial C's mean call, before the load
    omp_s: float             # forced OpenMP's mean call, before the load


def back_after(choices: list[str], ends: list[float]) -> tuple[int | None, float | None]:
    """The first call from which OpenMP ran ``IN_A_ROW`` calls in a row, and when it ended
    (``ends``: each call's end, in seconds after the load), or (None, None)."""
    run = 0
    for index, choice in enumerate(choices):
        run = run + 1 if choice.startswith("openmp") else 0
        if run == IN_A_ROW:
            first = index - IN_A_ROW + 1
            return first, (ends[first - 1] if first else 0.0) * 1e3
    return None, None


def _share(choices: list[str]) -> float:
    return sum(c.startswith("openmp") for c in choices) / max(1, len(choices))


def one_run(point: str, settle_s: float, load_s: float, after_s: float) -> Run:
    """The calls of one process (this one): see the module."""
    from benchmarks.bench_selection import BusyProcesses
    from benchmarks.selection_worker import Bench
    example, n = point.split(":")
    bench = Bench(example, int(n), ["c", "openmp@2", "acm"])

    def calls(name: str, seconds: float) -> tuple[list[str], list[float], list[float]]:
        choices, ends, took = [], [], []
        start = time.perf_counter()
        while not took or time.perf_counter() - start < seconds:
            reply = bench.call(name)
            choices.append(reply.get("choice") or "-")
            took.append(reply["s"])
            ends.append(time.perf_counter() - start)
        return choices, ends, took

    for name in ("c", "openmp@2"):
        bench.call(name)   # (built, or loaded, outside the timed calls)
    forced = {name: calls(name, 0.2)[2] for name in ("c", "openmp@2")}
    before, _, _ = calls("acm", settle_s)
    with BusyProcesses(2):
        during, _, loaded = calls("acm", load_s)
    after, ends, took = calls("acm", after_s)
    back, back_ms = back_after(after, ends)
    return Run(point, _share(before), _share(during), _share(after), back, back_ms,
               sum(loaded) / len(loaded), sum(took) / len(took),
               sum(forced["c"]) / len(forced["c"]),
               sum(forced["openmp@2"]) / len(forced["openmp@2"]))


def run_in_process(point: str, settle_s: float, load_s: float, after_s: float) -> Run:
    """``one_run`` in a new process (the environment of the selection benchmark's workers:
    no calibration in the background)."""
    from benchmarks.bench_selection import child_env
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_recovery", "--one", point, "--settle",
         str(settle_s), "--load", str(load_s), "--after", str(after_s)],
        cwd=ROOT, env=child_env(False), capture_output=True, text=True, check=True)
    return Run(**json.loads(done.stdout.strip().splitlines()[-1]))


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} us"


def row(run: Run) -> str:
    back = "never" if run.back_calls is None else \
        f"{run.back_calls} calls, {run.back_ms:.0f} ms"
    return (f"  {run.point:16} OpenMP in {run.omp_before:4.0%} / {run.omp_during:4.0%} / "
            f"{run.omp_after:4.0%} of calls | back after {back:20} | mean call during "
            f"{_us(run.mean_during_s)}, after {_us(run.mean_after_s)} (before the load: c "
            f"{_us(run.c_s)}, omp {_us(run.omp_s)})")


def main(argv: list[str] | None = None) -> list[Run]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_recovery",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="EXAMPLE:N", default=DEFAULT_POINTS)
    parser.add_argument("--runs", type=int, default=3, help="new processes per point")
    parser.add_argument("--settle", type=float, default=1.0, help="seconds alone first")
    parser.add_argument("--load", type=float, default=1.5, help="seconds beside the load")
    parser.add_argument("--after", type=float, default=3.0, help="seconds alone after it")
    parser.add_argument("--out", type=Path, help="also write the report to this file")
    parser.add_argument("--one", metavar="EXAMPLE:N", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:   # (a child: one run, its record as JSON)
        warnings.simplefilter("ignore")
        print(json.dumps(one_run(args.one, args.settle, args.load, args.after).__dict__))
        return []
    lines = [f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
             f"per run: {args.settle:g} s alone, {args.load:g} s beside two spinning "
             f"processes, {args.after:g} s alone; OpenMP's share of calls before / during / "
             f"after the load; back: OpenMP {IN_A_ROW} calls in a row"]
    print("\n".join(lines), flush=True)
    runs = []
    for _ in range(args.runs):   # (round robin: each point's runs spread over the time)
        for point in args.only:
            runs.append(run_in_process(point, args.settle, args.load, args.after))
            lines.append(row(runs[-1]))
            print(lines[-1], flush=True)
    lines.append(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(lines[-1])
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    return runs


if __name__ == "__main__":
    main()
