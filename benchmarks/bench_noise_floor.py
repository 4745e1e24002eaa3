"""The selection benchmark's noise floor: one variant timed as two contenders.

``bench_selection`` judges the model's kernel against the fastest forced variant, each timed
in rounds of back-to-back bursts. Where the model runs that variant's very code, the
"penalty" it reports is the noise of that procedure on this machine. This measures it
directly: for each example at the selection benchmark's sizes (those whose serial C call
takes at most ``--max-ms``), two kernel instances forced to serial C, and two forced to OpenMP
at 2 threads, are timed as four contenders in one process, as ``bench_selection`` times its
warm contenders (``ROUNDS`` rounds of ``--burst`` s bursts, who goes first rotating, inputs
restored before each call; each contender's best call over the rounds, and its median of the
bursts' medians, each *pooled* over the contender's rounds; and both *paired*: the median over
the rounds of one instance's time in a round over the other's in the same round, as
``bench_selection`` judges its points, ``Point.paired``). Per variant and statistic it prints
the geometric mean and the maximum of how far apart the two instances come out (the larger
time over the smaller), and how many points pass 1.05 and 1.5 (the benchmark's misprediction
threshold and its max target). As the selection benchmark times a doubtful point again, a
point where a ratio passes 1.05 gets as many rounds again, of all four, and is judged on all
(``--no-recheck``: not). ``--load``: beside two processes
spinning in pure Python, as the selection benchmark's loaded mode. ``--first``: first calls
instead, as its first-call mode times them: the original code's first call (``python``) in
new processes with an empty cache, twice per round as two contenders, ``FIRST_ROUNDS``
rounds (and as many again where they differ by more than 1.05), each contender's best, and
paired by round, at the sizes where that call takes at most ``--max-ms`` (default there:
100 ms).

    python -m benchmarks.bench_noise_floor [--only NAME ...] [--load | --first] [--max-ms MS]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from .bench_selection import (THRESHOLD, BusyProcesses, empty_cache_template, first_call_process,
                              paired_ratio)
from .report import geomean
from .selection_worker import CASES, Bench, _example, _make_kernel, case_named, extension_loaded

ROUNDS = 5
FIRST_ROUNDS = 2
VARIANTS = ("c", "openmp@2")
TWIN = "'"


def twins(example: str, bench: Bench, burst: float,
          recheck: bool) -> dict[str, dict[str, float]]:
    """For each variant of ``VARIANTS``, the ratio (larger over smaller) of its two
    instances' best calls and of their medians, on the inputs of ``bench`` (made for
    ``VARIANTS`` at one size of ``example``; the twins are added to it); ``recheck``: where
    one is above ``THRESHOLD``, as many rounds again, judged on all."""
    cls = getattr(_example(example), case_named(example).cls)
    for variant in VARIANTS:
        bench.kernels[variant + TWIN] = _make_kernel(cls, variant)
    names = list(bench.kernels)
    for name in names:
        bench.call(name)   # compile, or load, outside the timed calls
    extension_loaded()
    got: dict[str, list[dict]] = {name: [] for name in names}

    def rounds(start: int) -> None:
        for round_ in range(start, start + ROUNDS):
            shift = round_ % len(names)
            for name in names[shift:] + names[:shift]:
                got[name].append(bench.burst(name, burst))

    def ratios() -> dict[str, dict[str, float]]:
        out = {}
        for variant in VARIANTS:
            a, b = got[variant], got[variant + TWIN]
            out[variant] = {}
            for statistic, key, pool in (("best", "s", min),
                                         ("median", "median_s", np.median)):
                mine, theirs = [r[key] for r in a], [r[key] for r in b]
                out[variant][statistic] = _apart(float(pool(mine)) / float(pool(theirs)))
                out[variant][f"{statistic} paired"] = _apart(paired_ratio(mine, theirs))
        return out

    rounds(0)
    if recheck and any(r > THRESHOLD for point in ratios().values() for r in point.values()):
        rounds(ROUNDS)   # (as the selection benchmark times a doubtful point again)
    return ratios()


def _apart(ratio: float) -> float:
    """How far apart two times are: the larger over the smaller."""
    return max(ratio, 1 / ratio)


def first_call_twins(example: str, n: int, template: Path,
                     recheck: bool) -> dict[str, float]:
    """How far apart (larger over smaller) two contenders' first calls of the original code
    at one size come out, each call in a new process (the selection benchmark's first-call
    mode): on their best calls (``first``) and paired by round (``first paired``); where one
    is above ``THRESHOLD`` and ``recheck``, as many rounds again, judged on all."""
    got: list[list[float]] = [[], []]

    def rounds(start: int) -> None:
        for round_ in range(start, start + FIRST_ROUNDS):
            for who in ((0, 1) if round_ % 2 == 0 else (1, 0)):
                got[who].append(first_call_process(example, n, "python", template, None)["s"])

    def ratios() -> dict[str, float]:
        return {"first": _apart(min(got[0]) / min(got[1])),
                "first paired": _apart(paired_ratio(*got))}

    rounds(0)
    if recheck and any(r > THRESHOLD for r in ratios().values()):
        rounds(FIRST_ROUNDS)
    return ratios()


def serial_call_s(bench: Bench) -> float:
    bench.call("c")
    return min(bench.call("c")["s"] for _ in range(3))


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def summary(ratios: Sequence[float]) -> str:
    return (f"geomean {geomean(ratios):.3f}, max {max(ratios):.2f}, "
            f"above 1.05: {sum(r > 1.05 for r in ratios)}, "
            f"above 1.5: {sum(r > 1.5 for r in ratios)} of {len(ratios)}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="examples to run (default: all)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--load", action="store_true", help="beside two spinning processes")
    mode.add_argument("--first", action="store_true", help="first calls of the original code")
    parser.add_argument("--max-ms", type=float, default=None,
                        help="largest call timed (ms; serial C's warm call, default 20; "
                             "with --first, the original code's first call, default 100)")
    parser.add_argument("--burst", type=float, default=0.02, help="burst length (s)")
    parser.add_argument("--no-recheck", action="store_true",
                        help="no second set of rounds where a ratio passes 1.05")
    args = parser.parse_args(argv)
    max_ms = args.max_ms or (100.0 if args.first else 20.0)
    print(f"load average at start: {_load()}; "
          f"{'beside two spinning processes' if args.load else 'idle'}; " +
          (f"first calls, {FIRST_ROUNDS} rounds" if args.first else
           f"{ROUNDS} rounds of {args.burst * 1e3:g} ms bursts"))
    started = time.perf_counter()
    ratios = first_call_floor(args, max_ms) if args.first else warm_floor(args, max_ms)
    for (variant, statistic), values in ratios.items():
        print(f"{variant:9} {statistic:13}: {summary(values)}")
    print(f"load average at end: {_load()}; "
          f"{time.perf_counter() - started:.0f} s")


def _cases(only: Sequence[str] | None):
    return [case for case in CASES if not only or case.name in only]


def warm_floor(args: argparse.Namespace, max_ms: float) -> dict[tuple[str, str], list[float]]:
    """Per (variant, statistic), the ratios of twin warm contenders at every size."""
    ratios: dict[tuple[str, str], list[float]] = {}
    with BusyProcesses(2 if args.load else 0):
        for case in _cases(args.only):
            for n in case.sizes(512 * 2**20, quick=False):
                bench = Bench(case.name, n, VARIANTS)
                if serial_call_s(bench) > max_ms / 1e3:
                    break
                point = twins(case.name, bench, args.burst, not args.no_recheck)
                print(f"  {case.name:14} {n:8d}  " + "  ".join(
                    f"{v}: " + ", ".join(f"{statistic} {x:.2f}" for statistic, x in r.items())
                    for v, r in point.items()), flush=True)
                for variant, r in point.items():
                    for statistic, ratio in r.items():
                        ratios.setdefault((variant, statistic), []).append(ratio)
    return ratios


def first_call_floor(args: argparse.Namespace,
                     max_ms: float) -> dict[tuple[str, str], list[float]]:
    """The ratios of twin first calls of the original code at every size."""
    found: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        template, _ = empty_cache_template(Path(folder))
        for case in _cases(args.only):
            for n in case.sizes(512 * 2**20, quick=False):
                if first_call_process(case.name, n, "python", template, None)["s"] > \
                        max_ms / 1e3:
                    break
                point = first_call_twins(case.name, n, template, not args.no_recheck)
                print(f"  {case.name:14} {n:8d}  python first call: " + ", ".join(
                    f"{statistic} {r:.2f}" for statistic, r in point.items()), flush=True)
                for statistic, ratio in point.items():
                    found.setdefault(("python", statistic), []).append(ratio)
    return found


if __name__ == "__main__":
    main()
