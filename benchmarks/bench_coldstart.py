"""The cold start's estimate of the interpreter's time against the original code's measured time
(``specializers.loopnest.coldstart``: ``work_hint`` over ``loop_levels``).

For each of the twelve examples, at the sizes whose estimate lies between 1 and 150 ms, the
original method is timed (best of two calls, on fresh copies of the inputs), and the estimate
is split by instruction kind (ordinary, element read or written, call: the three prices of
``coldstart.instruction_s``). Prints the estimate over the measured time per point, the
root mean square of its log and its largest factor for the prices in use, and the prices that
fit best in log (a grid search) with one price for every instruction and with the three.

    python -m benchmarks.bench_coldstart
"""

from __future__ import annotations

import copy
import itertools
import math
import os
import time

import numpy as np

from benchmarks.selection_worker import CASES, _example
from specializers.loopnest import coldstart

KINDS = ("instruction", "subscript", "call")
LOW_S, HIGH_S = 1e-3, 0.15
MEASURED_AT_LEAST_S = 0.5e-3


def kind_counts(code) -> list[np.ndarray]:
    """Per loop depth, the instructions of each kind that ``loop_levels`` prices (at their
    weights: an ``if`` body's at ``GUARDED_WEIGHT``)."""
    kind = {coldstart.INSTRUCTION_S: 0, coldstart.SUBSCRIPT_S: 1, coldstart.CALL_S: 2}
    levels: list[np.ndarray] = []
    for depth, ins, weight in coldstart.loop_instructions(code):
        while len(levels) < depth:
            levels.append(np.zeros(len(KINDS)))
        levels[depth - 1][kind[coldstart.instruction_s(ins)]] += weight
    return levels


def points() -> list[tuple[str, int, float, np.ndarray]]:
    """(example, size, measured seconds, instructions of each kind run)."""
    prices = np.array([coldstart.INSTRUCTION_S, coldstart.SUBSCRIPT_S, coldstart.CALL_S])
    found = []
    for case in CASES:
        cls = getattr(_example(case.name), case.cls)
        original, owner = cls.kernel._asp_original_function, cls()
        levels = kind_counts(original.__code__)
        for n in case.sizes(2e9, False):
            args = case.make(n)
            unit = [coldstart.work_hint(owner, args, {}, tuple(float(d == k)
                                                               for k in range(len(levels))))
                    for d in range(len(levels))]
            counts = sum((u * level for u, level in zip(unit, levels)), np.zeros(len(KINDS)))
            estimate = float(counts @ prices)
            if estimate < LOW_S:
                continue
            if estimate > HIGH_S:
                break
            best = math.inf
            for _ in range(2):
                fresh = copy.deepcopy(args)
                started = time.perf_counter()
                original(owner, *fresh)
                best = min(best, time.perf_counter() - started)
            found.append((case.name, n, best, counts))
            print(f"{case.name:14s}{n:9d}  measured {best * 1e3:8.2f} ms  estimate "
                  f"{estimate * 1e3:8.2f} ms  ratio {estimate / best:5.2f}", flush=True)
    return found


def errors(found, prices) -> np.ndarray:
    return np.array([math.log(float(counts @ prices) / s) for _, _, s, counts in found])


def best_fit(found, kinds: int) -> tuple[np.ndarray, np.ndarray]:
    """The prices of least log error: one for every instruction (``kinds`` 1), or one per
    kind (3)."""
    grids = (np.linspace(1, 12, 45) * 1e-9, np.linspace(0, 80, 81) * 1e-9,
             np.linspace(0, 200, 41) * 1e-9)
    candidates = ((p, p, p) for p in grids[0]) if kinds == 1 else itertools.product(*grids)
    best = None
    for prices in candidates:
        e = errors(found, np.array(prices))
        score = float(np.sqrt((e ** 2).mean()))
        if best is None or score < best[0]:
            best = (score, np.array(prices), e)
    return best[1], best[2]


def summary(title: str, prices: np.ndarray, e: np.ndarray, found) -> str:
    worst = int(np.argmax(np.abs(e)))
    return (f"{title}: {', '.join(f'{k} {p * 1e9:.2f} ns' for k, p in zip(KINDS, prices))}; "
            f"log error rms {np.sqrt((e ** 2).mean()):.3f}, largest factor "
            f"{math.exp(abs(e[worst])):.2f} ({found[worst][0]} at {found[worst][1]})")


def main() -> None:
    print(f"load average at start {os.getloadavg()}")
    found = points()
    # (a point whose own time is under half a millisecond measures the extents the estimate
    # guessed wrong, not the prices: fbcorr on 4 x 4 images, whose outputs are 1 x 1)
    wrong = [f"{name} at {n}" for name, n, s, _ in found if s < MEASURED_AT_LEAST_S]
    found = [p for p in found if p[2] >= MEASURED_AT_LEAST_S]
    if wrong:
        print(f"left out of the fit, under {MEASURED_AT_LEAST_S * 1e3:.1f} ms measured: "
              f"{', '.join(wrong)}")
    used = np.array([coldstart.INSTRUCTION_S, coldstart.SUBSCRIPT_S, coldstart.CALL_S])
    print(summary("in use", used, errors(found, used), found))
    for kinds, title in ((1, "best single price"), (3, "best three prices")):
        prices, e = best_fit(found, kinds)
        print(summary(title, prices, e, found))
    print(f"{len(found)} points; load average at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
