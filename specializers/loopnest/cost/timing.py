"""Timing of the calibration's micro-benchmarks: best of several runs, taken in turns.

A micro-benchmark is a function ``run(count)`` that does ``count`` units of work (loop
iterations, kernel passes, parallel regions). ``best_per_unit`` times each case several times,
all cases once per round so that a slow drift of the machine (another process, the clock)
touches every case alike, and keeps each case's shortest time per unit: the run least disturbed
by the rest of the machine. The garbage collector is off while the main thread times.
``count_for`` finds the count that makes one run last at least a given time, so that the
clock's resolution and the cost of the call itself are negligible.
"""

from __future__ import annotations

import gc
import math
import threading
import time
from typing import Any, Callable, Mapping

import numpy as np

Run = Callable[[int], Any]


def elapsed(run: Run, count: int) -> float:
    """Seconds one call ``run(count)`` takes."""
    start = time.perf_counter()
    run(count)
    return time.perf_counter() - start


def count_for(run: Run, target_s: float, start: int = 1, limit: int = 1 << 40) -> int:
    """The smallest count (doubling from ``start``, then scaled) for which ``run(count)``
    lasts at least ``target_s`` seconds."""
    count = max(1, start)
    while count < limit:
        seconds = elapsed(run, count)
        if seconds >= target_s:
            return count
        grow = 2.0 if seconds <= 0 else min(100.0, 1.2 * target_s / seconds)
        count = min(limit, max(count + 1, math.ceil(count * grow)))
    return limit


def best_per_unit(cases: Mapping[str, tuple[Run, int]], repeats: int) -> dict[str, float]:
    """Per case ``name: (run, count)``, the shortest of ``repeats`` timings of ``run(count)``,
    in seconds per unit of ``count``; the cases are taken in turns, with the collector off."""
    best = {name: math.inf for name in cases}
    # The collector is the process's: only the main thread turns it off (a calibration in a
    # background thread must not turn it back on under the program's feet).
    quiet = threading.current_thread() is threading.main_thread() and gc.isenabled()
    if quiet:
        gc.disable()
    try:
        for _ in range(max(1, repeats)):
            for name, (run, count) in cases.items():
                best[name] = min(best[name], elapsed(run, count) / count)
    finally:
        if quiet:
            gc.enable()
    return best


def median_of(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Per value of the dicts in ``rounds`` (one a round of a calibration's measurements;
    per key for a value that is itself a dict), its median over the rounds, each value on its
    own. A round's None (it found no difference) does not count; None where all are."""
    out: dict[str, Any] = {}
    for key, value in rounds[0].items():
        if isinstance(value, dict):
            out[key] = median_of([r[key] for r in rounds])
        else:
            values = [r[key] for r in rounds if r[key] is not None]
            out[key] = float(np.median(values)) if values else None
    return out
