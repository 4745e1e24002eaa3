"""The selector alone under simulated loads: its total time against the better variant's.

``asp_core.selection.Selector`` chooses between serial C (``c``) and OpenMP (``openmp@2``) on
every call of a simulated series, every call timed and told to it; no kernel runs, so the
figures are exact and repeatable (seeded), and a change of the selector's rules can be
weighed before a benchmark on this noisy machine. Each line gives the series' total time over
that of the better variant run alone (1.000: as fast as it; below 1 where the better variant
changes during the series, as in a passing load), for the selector of this working tree and,
with ``--against REV``, for that of a git revision beside it (``git show
REV:asp_core/selection.py``). Scenarios:

* ``slice P/S``: a lasting load of busy processes. A call stalls with the probability of
  its own length over ``P`` ms (a thread descheduled once per time slice of run time) for
  ``S`` ms more; both variants stall, the longer one more often. Five pairs of variants (their
  times, and the model's predictions of them), five pairs of ``P``/``S``.
* ``stalls p``: OpenMP 50 us a call and four to five times that in a share ``p`` of its
  calls; serial C 100 us, steady.
* ``passing xF a..b``: OpenMP 55 us, serial C 100 us; calls ``a`` to ``b`` slowed ``F``
  times (OpenMP) and 1.5 times (serial C).
* ``fast-in-some g``: OpenMP 55 us in a share ``g`` of its calls, else 480 to 720 us; serial
  C 100 to 150 us (the better one on average up to ``g`` = 0.8, though OpenMP's median call
  is the shorter from 0.6).

A screen, not a verdict: the series are independent draws, where real calls under a load
come in runs (a time slice holds for several calls); a variant's first calls after another
ran pay an OpenMP team's wake-up that no series here has; and under a load OpenMP's calls
switch, for seconds at a time, between two speeds (black_scholes on 16384 elements beside
two busy processes, one process per line, OpenMP in turns after 16 serial C calls for 8 s,
then 300 calls without a break: turns of 8, about 945 us a call at every place in the turn,
then 227; turns of 16, 1020 then 1192; of 32, 1080 then 1316; of 64, 395 then 395; of 128,
380 then 390; serial C about 750). Two changes of the rules scored well here and did worse
on this machine, and were not kept (2026-11-28, at 1dc0d5b and 41e105c, against 4534fe4):

* confirming a change by a run of surprises as long as the variant's stand-alone ones make
  rare (two stalls in a row no longer a change where stalls often come alone): 0.985 of the
  time over the 25 time-slice series, within 1% elsewhere; in ``bench_recovery`` (conway on
  512 x 512, nine runs each, alternating) the model kept OpenMP in 9 to 95% of the calls
  during the load (median 77%; the old rules 0 to 71%, median 27%), and its mean call there
  was 377 us against 312 (serial C's median under that load: 143 us, OpenMP's 791);
* besides, predicting a noisy variant at its typical time times its tail (the moving mean
  of measured over typical time), with a settled choice's calls sampled by their count
  alone: 0.973 over all 37 series, and OpenMP stalling one call in five to eight 6 to 8% over
  OpenMP alone instead of 13 to 21%; in ``bench_recovery`` (conway), in three of twenty-one
  runs OpenMP, 1.3 to 1.8 times faster than serial C before the load, ran in 1 to 10% of the
  calls in the 3 s after it (in twenty-one runs of the old rules, in 56% at least):
  a tail also takes in the wake-ups that the choice's own switches cause, and a variant
  probed after serial code pays one each time.

Kept (2026-11-29, against 2e48ac0): a settled choice's calls sampled by their count, an odd
one between the samples held until the next confirms it, one on a sample moving the correction
by ``SETTLED_STEP`` at most, a confirmed slowdown of the choice no longer bringing the next probe
forward, the choice made again by a correction's drift and after every probe (``Sampling`` in
``asp_core.selection``): 1.035 -> 1.011 over the 37 series, the stall series 1.21 -> 1.10;
in ``bench_recovery`` (two pairs alternating) the mean call during the load 3.23 and 3.22 ms
summed over the nine runs before, 3.14 and 3.18 after, and after the load 2.99 summed over
both pairs either way.

    python -m benchmarks.bench_selector_noise [--against REV] [--seeds N]
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

from .report import geomean

ROOT = Path(__file__).resolve().parents[1]

#: (name, {variant: its time}, (c's prediction, OpenMP's)) for the time-slice scenarios.
PAIRS = (("OpenMP 2x faster, 370 us", {"c": 750e-6, "openmp@2": 370e-6}, (667e-6, 340e-6)),
         ("OpenMP 1.3x faster, 385 us", {"c": 500e-6, "openmp@2": 385e-6}, (500e-6, 300e-6)),
         ("serial C 1.3x faster, 300 us", {"c": 300e-6, "openmp@2": 400e-6}, (300e-6, 200e-6)),
         ("small calls, 35 us", {"c": 60e-6, "openmp@2": 35e-6}, (60e-6, 35e-6)),
         ("large calls, 2.6 ms", {"c": 5e-3, "openmp@2": 2.6e-3}, (5e-3, 2.6e-3)))
SLICES = ((3e-3, 3.6e-3), (6e-3, 8e-3), (2e-3, 2e-3), (10e-3, 4e-3), (1e-3, 1e-3))

#: A call's time: (rng, the call's index, the variant) -> seconds.
Timing = Callable[[random.Random, int, str], float]


def selection_module(revision: str | None):
    """``asp_core.selection`` of the working tree, or of a git revision."""
    if revision is None:
        from asp_core import selection
        return selection
    source = subprocess.run(["git", "show", f"{revision}:asp_core/selection.py"], cwd=ROOT,
                            check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "selection_at_revision.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"selection_{revision}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def series(module, timing: Timing, predicted: tuple[float, float], calls: int,
           seed: int) -> tuple[float, dict[str, float]]:
    """The selector's total time over ``calls`` calls, and each variant's alone."""
    rng, alone_rng = random.Random(seed), random.Random(seed)
    selector = module.Selector()
    estimates = (module.Estimate("c", predicted[0]),
                 module.Estimate("openmp@2", predicted[1], kin=("c",)))
    total, alone = 0.0, {"c": 0.0, "openmp@2": 0.0}
    for call in range(calls):
        decision = selector.choose(estimates)
        took = timing(rng, call, decision.label)
        selector.observe(decision.estimate, took)
        total += took
    for label in alone:
        alone_rng.seed(seed)
        alone[label] = sum(timing(alone_rng, call, label) for call in range(calls))
    return total, alone


def time_slices(base: dict[str, float], period: float, stall: float) -> Timing:
    def timing(rng: random.Random, call: int, label: str) -> float:
        took = base[label] * (1 + 0.1 * rng.random())
        if rng.random() < took / period:
            took += stall * (0.8 + 0.4 * rng.random())
        return took
    return timing


def stalls(share: float) -> Timing:
    def timing(rng: random.Random, call: int, label: str) -> float:
        if label == "c":
            return 100e-6 * (1 + 0.05 * rng.random())
        return (225e-6 if rng.random() < share else 50e-6) * (1 + 0.05 * rng.random())
    return timing


def passing(slow: float, start: int, end: int) -> Timing:
    def timing(rng: random.Random, call: int, label: str) -> float:
        took = 55e-6 if label == "openmp@2" else 100e-6
        if start <= call < end:
            took *= slow if label == "openmp@2" else 1.5
        return took * (1 + 0.1 * rng.random())
    return timing


def fast_in_some(good: float) -> Timing:
    def timing(rng: random.Random, call: int, label: str) -> float:
        if label == "c":
            return 100e-6 * (1 + 0.5 * rng.random())
        return 55e-6 if rng.random() < good else 600e-6 * (0.8 + 0.4 * rng.random())
    return timing


def scenarios() -> list[tuple[str, Timing, tuple[float, float], int]]:
    """(name, timing, predictions, calls) for every scenario of the module docstring."""
    out = []
    for period, stall in SLICES:
        for name, base, predicted in PAIRS:
            out.append((f"slice {period * 1e3:g}/{stall * 1e3:g} ms, {name}",
                        time_slices(base, period, stall), predicted, 4000))
    for share in (1 / 8, 1 / 6, 1 / 5):
        out.append((f"stalls {share:.3f}", stalls(share), (100e-6, 60e-6), 6000))
    for slow, start, end in ((10, 200, 400), (10, 200, 1200), (30, 200, 400), (3, 200, 400)):
        out.append((f"passing x{slow} {start}..{end}", passing(slow, start, end),
                    (100e-6, 60e-6), 5000))
    for good in (0.1, 0.3, 0.6, 0.8, 0.9):
        out.append((f"fast-in-some {good}", fast_in_some(good), (100e-6, 60e-6), 20000))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="REV", help="a git revision's selector beside")
    parser.add_argument("--seeds", type=int, default=6, help="seeds per scenario (6)")
    args = parser.parse_args(argv)
    modules = {"this tree": selection_module(None)}
    if args.against:
        modules[args.against] = selection_module(args.against)
    print(f"{'scenario':58}" + "".join(f"{name[:12]:>14}" for name in modules))
    ratios_of: dict[str, list[float]] = {name: [] for name in modules}
    for name, timing, predicted, calls in scenarios():
        cells = []
        for label, module in modules.items():
            ratios = []
            for seed in range(args.seeds):
                total, alone = series(module, timing, predicted, calls, seed)
                ratios.append(total / min(alone.values()))
            ratio = sum(ratios) / len(ratios)
            ratios_of[label].append(ratio)
            cells.append(f"{ratio:14.3f}")
        print(f"{name:58}" + "".join(cells))
    print(f"{'geomean':58}" + "".join(f"{geomean(v):14.3f}" for v in ratios_of.values()))


if __name__ == "__main__":
    main()
