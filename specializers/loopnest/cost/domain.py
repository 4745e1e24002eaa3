"""Iteration counts of a bound nest, exact: how many instances each statement has, how many
times each loop is entered, and how the instances spread over one loop's iterations.

The cost model multiplies per-instance costs by these counts (the ALPyNA cost model's
equations 2 and 4, with the loop domains ``L(f)`` counted exactly for triangular and stepped
loops instead of taken as boxes).

A loop ``l`` runs ``max(0, ceil(extent_l / |step_l|))`` iterations, where ``extent_l`` is an
affine form of the enclosing loops' normalized iterations ``t`` (``analysis.binding``). A
statement's instances are the sum, over the points of the loops its trip counts depend on, of
the product of the other loops' trip counts. Only loops that a deeper bound depends on are
enumerated (LU's ``k`` for ``range(k + 1, n)``), as NumPy arrays of points; the others are
factors. Where more than ``MAX_POINTS`` points would be needed, the rest is estimated from the
midpoints of evenly sized strata of the points (``Count.exact`` is then False).

Pure functions of the bound nest; results cached per plan by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..analysis.binding import BoundLoop, TForm
from ..dast import WHILE_STOP

#: The most points of the enumerated loops kept at once (a few MB of int64 per loop).
MAX_POINTS = 1 << 20


@dataclass(frozen=True)
class Count:
    """The instances of a chain of loops (a statement's loops), and whether exactly."""

    instances: int
    exact: bool = True


#: The iterations assumed of a ``while`` loop (``dast.WHILE_STOP``), whose count no bound
#: tells; the prediction is an estimate there (``Count.exact`` stays True: nothing better
#: can be counted).
WHILE_TRIPS = 16


def trips(loop: BoundLoop, points: dict[int, np.ndarray], size: int) -> np.ndarray:
    """Trip counts of ``loop`` at each point (``points``: enclosing lid -> t values)."""
    if loop.extent.const >= WHILE_STOP and not loop.extent.coeffs:
        return np.full(size, WHILE_TRIPS, dtype=np.int64)
    extent = _evaluate(loop.extent, points, size)
    step = abs(loop.step)
    return np.maximum(0, -(-extent // step))


def _evaluate(form: TForm, points: dict[int, np.ndarray], size: int) -> np.ndarray:
    value = np.full(size, form.const, dtype=object if _big(form) else np.int64)
    for lid, coeff in form.coeffs:
        value = value + coeff * points[lid]
    return value


def _big(form: TForm) -> bool:
    """Forms whose values may pass int64 are evaluated with Python ints (rare: huge loops)."""
    return abs(form.const) > 2**40 or any(abs(c) > 2**20 for _, c in form.coeffs)


def needed(chain: Sequence[int], loops: dict[int, BoundLoop]) -> set[int]:
    """The loops of ``chain`` whose iteration a deeper loop's trip count depends on."""
    out: set[int] = set()
    for lid in chain:
        out |= {l for l, _ in loops[lid].extent.coeffs}
    return out


def count(chain: Sequence[int], loops: dict[int, BoundLoop], split: int | None = None) -> Count:
    """The instances of a statement inside ``chain`` (outermost first)."""
    return _walk(chain, loops, split)[0]


def per_iteration(chain: Sequence[int], loops: dict[int, BoundLoop], lid: int
                  ) -> np.ndarray | None:
    """Instances of ``chain`` per iteration ``t`` of loop ``lid`` (one of the chain), summed
    over the loops around it; None where that needs more than ``MAX_POINTS`` points.

    Where the loop's trip count is a constant and no deeper trip count depends on it, every
    iteration has the same instances: the total over the trip count, without enumerating
    the loop (a rectangular loop of a million iterations took 8 ms to enumerate)."""
    loop = loops[lid]
    if not loop.extent.coeffs and lid not in needed(chain, loops):
        size = int(trips(loop, {}, 1)[0])
        if size == max(loop.t_max + 1, 0):
            total = count(chain, loops)
            if not total.exact:
                return None
            return np.full(size, total.instances / size if size else 0.0)
    total, weights, points = _walk(chain, loops, split=lid)
    if not total.exact or lid not in points:
        return None
    size = max(loops[lid].t_max + 1, 0)
    if size > MAX_POINTS:
        return None
    return np.bincount(points[lid].astype(np.int64), weights=weights.astype(float),
                       minlength=size)[:size]


def _walk(chain: Sequence[int], loops: dict[int, BoundLoop], split: int | None):
    """(count, weights, points): the enumerated points of the loops that must be enumerated
    (and ``split``), each with the product of the other loops' trip counts as its weight."""
    enumerate_ = needed(chain, loops)
    if split is not None:
        enumerate_.add(split)
    points: dict[int, np.ndarray] = {}
    weights = np.ones(1, dtype=np.int64)
    exact = True
    scale = 1.0
    for lid in chain:
        loop = loops[lid]
        size = len(weights)
        n = trips(loop, points, size)
        if lid not in enumerate_:
            weights = _product(weights, n)
            continue
        total_points = int(np.sum(n))
        if total_points > MAX_POINTS:  # keep an evenly spaced sample of the points
            exact = False
            m = max(1, min(size, MAX_POINTS // max(1, int(n.max()))))
            keep = np.unique(((np.arange(m) + 0.5) * size / m).astype(np.int64))  # midpoints
            scale *= size / len(keep)
            points = {k: v[keep] for k, v in points.items()}
            weights, n = weights[keep], n[keep]
            size = len(keep)
        counts = n.astype(np.int64)
        repeat = np.repeat(np.arange(size), counts)
        starts = np.cumsum(counts) - counts
        t = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(starts, counts)
        points = {k: v[repeat] for k, v in points.items()}
        points[lid] = t
        weights = weights[repeat]
    total = int(np.sum(weights)) if exact else int(round(float(np.sum(weights)) * scale))
    return Count(total, exact), weights, points


def _product(weights: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``weights * n``, in Python ints where int64 could overflow (counts no run reaches)."""
    if weights.dtype != object and float(np.max(weights, initial=0)) * \
            float(np.max(n, initial=0)) >= 2.0**62:
        weights = weights.astype(object)
    return weights * (n.astype(object) if weights.dtype == object else n.astype(np.int64))


def entries(lid: int, loops: dict[int, BoundLoop]) -> Count:
    """How many times loop ``lid``'s header runs (the instances of its enclosing loops)."""
    chain = []
    parent = loops[lid].parent
    while parent >= 0:
        chain.append(parent)
        parent = loops[parent].parent
    return count(tuple(reversed(chain)), loops)
