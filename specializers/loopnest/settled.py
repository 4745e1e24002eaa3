"""Settled kernels: where the original code is cheaper than dispatching its nests, the
method runs whole.

On small data a nest's plain Python often costs less than the fixed costs of choosing and
entering a variant: the nest's inputs, their signature, the binding, the choice (the
calibrated ``dispatch_ns``: 7 us a call on the development machine, against 3 us for a
16-element vector addition). Every nest of a kernel pays that dispatch, whichever variant it
chooses, so the cost model's choice per nest does not see it; a kernel that skips every nest's
dispatch, running its original method whole, does. So after each call whose nests neither
probed another variant nor built one, the kernel compares the predicted time of its nests as
original code (``cost.estimates.ORIGINAL``, corrected by what they measured) plus a settled
call's own cost (``settled_call_ns``) with the predicted time of its nests' choices plus
their dispatch (for a nest running the best built variant while a faster one is not built,
the faster one's time: settling must beat what rent-or-buy would buy); where the first is
smaller it *settles*: its next calls with positional
arguments no larger run the original method directly, timed. No larger: each argument, and
each attribute of the instance, that was an array or an int in the settling call is an array
of at most as many elements, or an int at most as large, or of another type (a bound the guard
cannot see, such as a global, is caught by the time check below).

A settled kernel is asked again (a call through the cost model, which may settle it again)
after ``SETTLED_CALLS`` calls (twice as many each time the judgement after a settlement's end
settles it again, up to ``SETTLED_CALLS_MAX``: below), or at once after a call that took more
than ``SLOWER`` times a
settled call's usual time (its prediction, or the measured median of the last settled calls
where that is longer). The calls it skipped count for the selectors' re-probing schedules, and
the median time of the last ``SETTLED_SAMPLES`` settled calls (this settlement's and the
earlier ones'), shared out among the nests as predicted, corrects their original code's
predictions: the median, not the last call, and over settlements, not this one's alone, since
a settlement that one slow call ended (its first, a preemption) would otherwise report that
outlier as the original code's time, and on a busy machine the model would learn to believe
the original code slower than it is, and stop settling. Running the original code is always
exact, so settling can cost time, never correctness: at most ``SETTLED_CALLS_MAX`` calls of
a choice gone stale.

**Measured, not only predicted.** The two sides of the comparison are fixed costs of a few
hundred nanoseconds each, which the calibration measures for a typical kernel, not for this
one (its arguments, its nests' way in): on the development machine the prediction settled
Jacobi's 4 x 4 grid at 3.8 us a call where its nest's serial C took 3.4. So each kernel also
measures both sides, per call sizes (``Measured``): every judged call's time (a call that
dispatches its nests), and the median of the calls of each settlement. The call that ends a
settlement is not judged (the next one is): it switches back from the original code to the
nests' variants, and took up to four times their usual time (jacobi on 4 x 4: 15 to 28 us,
against 4.5), so the judged calls, all of them such calls while a kernel kept settling,
measured dispatching as slower than it is, and jacobi stayed settled at 1.4 to 1.8 times
serial C's time in five of eight benchmark processes. Nor are the calls soon after it usual:
fbcorr on 4 x 4 images, called back to back on this project's VM, took 80 to 180 us at the
end and 20 to 60 us a call for the next dozen or more, where its dispatched calls take 3.4
us and its settled ones 5; judged at the call after the end, as until 2026-11-28, each such
call settled the kernel again, so the dispatched side only ever measured them, and the
selection benchmark's fbcorr on 4 x 4 ran its original code in all its 2440 loaded calls at
1.6 times serial C's time. So a call within ``SETTLE_EVERY`` calls after a settlement's end
(``kernel``: ``usual_from``) is still judged at once, but on the measurements as they stand
(or the predictions), its own time not recorded: the dispatched side measures only calls
judged later, as a kernel never settled is judged every ``SETTLE_EVERY`` calls (where a
settlement was measured and fewer than ``MIN_DISPATCHED`` such calls were, the kernel stays
dispatched until they are: ``Measured.gathering``; once per call sizes). (Waiting that
many calls before judging cost a kernel whose settling pays a third of its gain where loads
ended settlements early.) And each end costs its slow calls: so each time the judgement after
an end settles the kernel again, its settlement lasts twice as long as the last
(``SETTLED_CALLS`` doubling up to ``SETTLED_CALLS_MAX``), and a judgement that does not settle
it starts the lengths over. Where it has both, the
measurements decide, not the predictions, for ``MEASURED_JUDGEMENTS`` judgements after the
settlement that measured them (then the predictions decide again, and a settlement they make
measures anew: a machine's load changes).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from numpy import ndarray

from .cost.estimates import ORIGINAL
from .cost.machine import machine

#: Calls a settled kernel runs as its original code before it asks the cost model again (the
#: first settlement: each one the judgement after an end makes lasts twice the last, up to
#: SETTLED_CALLS_MAX).
SETTLED_CALLS = 64
SETTLED_CALLS_MAX = 1024
#: A settled call slower than this many times its prediction ends the settlement.
SLOWER = 4.0
#: The judged calls' times kept per call sizes (their median is the dispatched side).
DISPATCHED_SAMPLES = 5
#: ...of which at least this many are needed before the measurements decide.
MIN_DISPATCHED = 3
#: A settlement's measured time decides this many judgements of its call sizes.
MEASURED_JUDGEMENTS = 16
#: Call sizes whose measurements a kernel keeps (the oldest is forgotten first).
MEASURED_SIZES = 8
#: The settled calls' times kept per call sizes, over settlements (their median is the
#: settled side, what a settlement reports to the model, and what a settled call is usual).
SETTLED_SAMPLES = 15


@dataclass
class Measured:
    """What the calls of one kernel state at one call size took (seconds): the last judged
    calls, which dispatched their nests, and the last settled calls, over settlements."""

    dispatched: list = field(default_factory=list)
    settled: list = field(default_factory=list)
    settled_s: float = 0.0    # their median (0.0: no settlement measured)
    judgements: int = 0       # judgements since a settlement measured ``settled_s``

    def record(self, seconds: float) -> None:
        """A judged call took ``seconds``."""
        self.dispatched.append(seconds)
        del self.dispatched[:-DISPATCHED_SAMPLES]
        self.judgements += 1

    def settlement(self, times: list) -> float:
        """A settlement's calls took ``times``: the median of the last ``SETTLED_SAMPLES``
        settled calls, this settlement's and the earlier ones' (0.0: none ran). Over
        settlements, not this one's alone: a settlement that its first call ended (a
        preempted call) would otherwise report that one call as the original code's time."""
        if not times:
            return 0.0
        self.settled.extend(times)
        del self.settled[:-SETTLED_SAMPLES]
        self.settled_s, self.judgements = median_high(self.settled), 0
        return self.settled_s

    @property
    def gathering(self) -> bool:
        """Whether a settlement was measured but too few usual dispatched calls for a verdict
        (which can be drawn at all: ``MIN_DISPATCHED`` within ``DISPATCHED_SAMPLES``)."""
        return self.settled_s > 0 and len(self.dispatched) < MIN_DISPATCHED <= DISPATCHED_SAMPLES

    def verdict(self) -> bool | None:
        """Whether settling is faster, as measured (None: not measured enough)."""
        if not self.settled_s or len(self.dispatched) < MIN_DISPATCHED or \
                self.judgements > MEASURED_JUDGEMENTS:
            return None
        times = sorted(self.dispatched)
        return self.settled_s < times[len(times) // 2]


def sizes_of(owner: Any, args: tuple) -> tuple:
    """The call sizes of a call (its arguments' and the instance's arrays and ints): what a
    settlement guards, and what keys its measurements."""
    attributes = tuple((name, size) for name, value in vars(owner).items()
                       if (size := _size(value)) is not None and not name.startswith("_asp_"))
    return tuple(map(_size, args)), attributes


@dataclass
class Settled:
    """The settlement of one kernel state: the sizes of the settling call's arrays and ints
    (by argument position, and by attribute name), its time, and the calls left before the
    cost model is asked again."""

    limits: tuple            # per positional argument: its size, or None (not sized)
    attributes: tuple        # (name, size) of the instance's arrays and ints
    seconds: float           # a settled call's usual time (predicted, or measured: ``judge``)
    shares: tuple = ()       # (runner, its original code's estimate, its share of the time)
    left: int = SETTLED_CALLS
    ran: int = 0
    times: list = field(default_factory=list)   # the settled calls' times (seconds)

    @classmethod
    def of(cls, sizes: tuple, seconds: float, shares: tuple = ()) -> "Settled":
        """The settlement of a call of ``sizes`` (``sizes_of``)."""
        limits, attributes = sizes
        return cls(limits, attributes, seconds, shares)

    def lasting(self, renewals: int) -> "Settled":
        """This settlement, for ``SETTLED_CALLS`` calls doubled ``renewals`` times (at most
        ``SETTLED_CALLS_MAX``)."""
        self.left = min(SETTLED_CALLS << min(renewals, 16), SETTLED_CALLS_MAX)
        return self

    @property
    def sizes(self) -> tuple:
        return self.limits, self.attributes

    def takes(self, owner: Any, args: tuple, kwargs: dict) -> bool:
        """Whether this call may run as the original method without asking the model."""
        if self.left <= 0 or kwargs or len(args) != len(self.limits):
            return False
        for value, limit in zip(args, self.limits):
            if limit is not None:
                kind = type(value)
                if kind is ndarray:
                    if value.size > limit:
                        return False
                elif kind is int:
                    if value > limit:
                        return False
                else:   # another type where the settling call had a size (a Dask array)
                    return False
        if self.attributes:
            values = vars(owner)
            for name, limit in self.attributes:
                size = _size(values.get(name))
                if size is not None and size > limit:
                    return False
        return True

    def release(self, runners, seconds: float) -> None:
        """The settlement is over: its calls count for the selectors' re-probing, and a
        settled call's measured time (``Measured.settlement``; 0.0: none) less its own cost
        (``settled_call_ns``, which ``judge`` adds again), shared out as predicted, corrects
        the nests' original code."""
        for runner in runners:
            runner.ran_elsewhere(self.ran)
        nests = seconds - machine().settled_call_ns * 1e-9
        if nests > 0:
            for runner, estimate, share in self.shares:
                runner.selector.observe(estimate, nests * share, report=True)

    def run(self, original: Callable, owner: Any, args: tuple, kwargs: dict,
            started: float) -> Any:
        """Run the original method (the call started at ``started``, before ``takes``); a
        call much slower than the settling one ends it."""
        self.left -= 1
        self.ran += 1
        try:
            return original(owner, *args, **kwargs)
        finally:
            elapsed = time.perf_counter() - started
            self.times.append(elapsed)
            if elapsed > SLOWER * self.seconds:
                self.left = 0


def judge(ran: list, sizes: tuple, kwargs: dict, measured: Measured,
          seconds: float, usual: bool = True) -> "tuple[Settled | None, bool]":
    """(the settlement a call of ``sizes`` (``sizes_of``) that took ``seconds`` earns, or
    None; whether the call was judged at all). ``ran`` are the runners of the nests that ran
    in it. No nest may be probing or building (then the call is not judged); running them all
    as the original code, plus a settled call's own cost, must cost less than those choices
    with the dispatch each nest pays: as ``measured`` where every choice is stable (this
    call's time is added to it, where ``usual``: not soon after a settlement's end), or where
    it does not tell, as predicted (see the module)."""
    if kwargs:
        return None, False
    m = machine()
    original = chosen = 0.0
    parts = []
    stable = True
    for runner in ran:
        if runner._gather is None:
            continue   # (a nest rejected when analysed always runs its original code)
        decision = runner.last_decision
        if decision is None or runner.last_call.fallback is not None or \
                decision.probe or decision.build_now or decision.build_later:
            return None, False
        mine = next((e for e in decision.estimates if e.label == ORIGINAL), None)
        if mine is None:
            return None, False
        alone = decision.corrected[ORIGINAL] - mine.fixed_s
        original += alone
        # A stable choice is the fastest predicted. Any other (the best built variant while a
        # faster one is not built, its losses adding up to pay for a build) is measured
        # against the fastest of all, built or not: settling must beat that one too (so the
        # measured time of this call, of the variant built, does not decide).
        stable &= decision.stable
        best = decision.corrected[decision.label] if decision.stable else \
            min(decision.corrected.values())
        chosen += best + m.dispatch_ns * 1e-9
        parts.append((runner, mine, alone))
    original += m.settled_call_ns * 1e-9
    verdict = None
    if stable:
        if usual:
            measured.record(seconds)
        elif measured.gathering:   # (settling again on the predictions, it never would
            return None, False     # measure the dispatched side: the next calls are judged)
        verdict = measured.verdict()
    settles = original <= chosen if verdict is None else verdict
    if not settles:
        return None, True
    total = sum(alone for _, _, alone in parts) or 1.0
    # A settled call ends its settlement when it takes SLOWER times the usual: the
    # prediction, or the settled calls' measured median where that is longer (predicted from
    # a calibration on a faster core, every call of a slower one ended its settlement).
    usual = max(original, measured.settled_s)
    return Settled.of(sizes, usual, tuple((runner, mine, alone / total)
                                          for runner, mine, alone in parts)), True


def median_high(times: list) -> float:
    """The higher middle one of ``times`` (not ``statistics.median_high``: importing that
    module costs the package 5 ms at import)."""
    ordered = sorted(times)
    return ordered[len(ordered) // 2]


def _size(value: Any) -> int | None:
    """An array's element count, an int's value, else None."""
    kind = type(value)
    if kind is ndarray:
        return value.size
    if kind is int:
        return value
    return None
