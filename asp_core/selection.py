"""Variant selection: predicted times in, a choice out, corrected by what calls measure.

A specializer's cost model answers one question per call, "how long would this variant take?"
(an ``Estimate`` per variant it could run: predicted seconds, their main terms, and the time
to build the variant first where it is not built yet). ``Selector`` owns the choice:

* **Correction.** Every call's duration is measured by the dispatcher and given to
  ``observe``; per variant and size class, the log of measured over predicted time is kept as
  a moving average, and predictions are scaled by it. A variant that runs much slower than
  predicted (a busy machine, a loop the compiler did not vectorize) is corrected within a few
  calls and the choice moves away from it.
* **Re-probing.** Corrections of the variants not chosen would never change, so now and then
  (``PROBE_EVERY`` calls, then ever more rarely while the choice is stable) the runner-up is
  run instead, if its corrected prediction is within ``PROBE_WITHIN`` of the choice (or within
  ``PROBE_UNMEASURED`` for a variant not measured yet at that size, and, every fourth time,
  within ``PROBE_FAR``, so that a variant slowed by a passing load is found again): a bounded
  cost, under 1/``PROBE_EVERY`` of the calls (ever less), each at most that many times slower.
  A measurement far from its correction starts the schedule again. A probe is also paid for
  in time: its predicted extra time (the runner-up's corrected time less the choice's, for
  each of a probe's calls) may be at most ``PROBE_SHARE`` of the time the calls since the
  last probe took; a due probe that costs more waits until the calls have paid for it. So
  re-probing costs at most a tenth of the time as well as a few of the calls: a series of five
  calls of half a second each, where the runner-up was predicted at twice that, ran one of them
  on the runner-up (20% more time in all) before this rule.
* **Recovery.** A probe that runs much faster than its variant's correction (a factor
  ``SURPRISE``) moves it by ``MAX_STEP`` at most, as any one odd call does; but the next
  probe comes ``PROBE_EVERY`` calls later (the period goes on doubling after it) and runs
  that variant again, even one only a far look could reach, and whatever its predicted cost
  (there is one such confirmation at most per probe held to ``PROBE_SHARE``, so the share
  at most doubles). Two such probes in a row are not noise, which only adds time: the
  correction moves to the second measurement, and the choice moves back. A probe's
  measurement also counts whole where the variant's correction rests on ``SETTLED``
  measurements: only the choice's warm calls are sampled one in ``SAMPLE``.
  Before, a variant slowed by a passing load (OpenMP while other processes ran) stayed
  unchosen for several times as long as the load had lasted: its probes during the load
  found it slow and doubled the period each time, the one probe that found it fast again
  moved it by ``MAX_STEP`` and doubled the period once more, and its confirmation, three
  times in four, was sampled out. (``Selector`` alone, every call timed, 8 runs with 10%
  noise: OpenMP 1.8 times faster than serial C, ten times slower for 1000 calls; serial C
  ran on for 2150 to 4500 calls after the load, or past the 4800 calls simulated in 2 of 8;
  now 66 to 505, and the 6000 calls take 26% less time. Where a lasting load makes OpenMP
  fast in 30 to 80% of its calls and ten times slower in the rest, slower than serial C on
  average, the time is what it was, within 1%.)
* **Sampling.** Once a correction rests on ``SETTLED`` measurements, the choice's warm calls
  are sampled one in ``SAMPLE``, picked by their count, not by their time: an odd call (a
  factor ``SURPRISE`` from the correction) between the samples is held, and counts only where
  the next timed call confirms it; one that falls on a sample moves the correction by
  ``SETTLED_STEP`` at most. Before, odd calls counted whole while the usual ones were sampled:
  on this project's VM OpenMP's calls stall now and then (hilbert at 512 x 512: 0.9 to 1.1 ms
  among calls of 0.2), the stalls weighed four times as often as they came, each moved the
  correction by ``MAX_STEP``, and a correction held up that way ran serial C for whole rounds
  of the selection benchmark (hilbert at 1024: 1.53 ms a call where OpenMP took 0.80). Two
  surprises of the choice in a row end the dispatcher's fast path and move its correction
  freely, but do not bring the runner-up's next probe forward: the choice moves when its
  correction passes the runner-up's (and the probing starts over from the new choice), while
  a noisy choice, slow twice in a row every few dozen calls, had its runner-up probed every
  ``PROBE_EVERY`` calls. The choice is made again once a correction drifted by
  ``EPOCH_STEP`` since it last let it be (steps each under it had kept a choice that their
  sum put behind the runner-up), and after every probe's measurement. (``bench_selector_noise``,
  the selector alone on simulated series: geomean of its 37 series 1.035 -> 1.011, the three
  of OpenMP stalling in one call of 5 to 8 1.21, 1.17, 1.13 -> 1.10, 1.09, 1.08; worse only
  where OpenMP is fast in 60 or 80% of its calls and ten times slower in the rest, slower
  than serial C on average, 1.017 and 1.049 -> 1.034 and 1.079: a moving mean of logs weighs
  such a variant nearer its median than its mean. The selection benchmark's warm mode on
  hilbert, jacobi and gemver, two pairs alternating: 1.067 / 1.46 and 1.039 / 1.58 before,
  1.041 / 1.17 and 1.050 / 1.25 after, geomean / max.)
* **Switching.** The first call of a variant after another one ran is not its usual call: the
  other's data sit in the caches, an OpenMP team slept while serial code ran (waking it costs
  tens of microseconds). So a call predicted under ``WARMUP_S`` that switches variants is not
  measured, and a probe of such a variant runs ``PROBE_CALLS`` calls in a row, the last
  measured: a variant is judged by what it costs once chosen. Its second call is not that
  yet either: on the development VM, OpenMP's calls after a run of serial C's took 108, 21,
  12.5 and then 11.5 to 12 us on hilbert at 64 x 64 (11.4 called on and on), 218, 68, 49,
  then 46 to 47 on conv2d at 128 x 128 (48); a probe that measured its second call found
  OpenMP at 9 us against serial C's 8 where it ran in 7.3 against 9.1, and serial C kept the
  choice. (Were its calls in fact spaced out, each paying the wake-up, the calls that chose
  it measure that, and the choice moves back.) The switch's own cost, where the model knows
  it (``Estimate.switch_s``), counts in a probe's cost.
* **Idle gaps.** A call after the nest sat idle (no timed call of it for ``IDLE_S``) pays for
  waking the machine: an OpenMP team's threads gone to sleep, on a virtual machine an idle
  vCPU the host took back (500 to 800 us on this project's VM, for OpenMP calls of 35 us). Where
  calls come in bursts, that is a cost of each burst, not of each call: so a timed call after
  an idle gap, where the timed call before it was not, is not measured if it ran slower than
  its correction says (``after_gap``, then ``observe``); one that ran faster is. Calls spaced
  out, each after a gap, are measured (the one before each was idle too): a variant slower
  when called that way is left. (The selection benchmark's warm rounds are such bursts, 20 ms each, tens
  of milliseconds apart: the first OpenMP calls of a burst, 600 to 800 us against 35, made the
  model leave OpenMP at the start of bursts, its probes then ran in the slow spells that
  followed, and conv2d on 128 x 128 ran serial C in 980 of its 1010 timed calls where OpenMP
  was 1.4 times faster.)
* **Building.** A variant that is not built costs its build time first. The choice is made as a
  rent-or-buy (ski rental) problem: if building and running the best variant costs no more
  than running the best built one now, it is built now; otherwise the call runs the best built
  variant, and the time this loses against the best variant is added up; once the losses
  reach the build time, the best variant is built (in the background where the specializer
  can, so that no call waits for it). Until then the decision *rents* (``Decision.renting``):
  the dispatcher may repeat it without choosing for as many calls as the losses need to
  reach the build (``calls_before_probe``), and those calls' losses are added when it tells
  the selector of them (``skipped``). (Choosing on every such call cost fbcorr on 8 x 8 images
  40 us a call beside its 18 us run: more than the loss being counted.) (A margin against
  building while the built variant's prediction was never measured, 1.25, ran the built
  variant in calls whose own loss already reached the build time, so the build started
  beside it in the background: on this 2-core
  machine that slowed first calls of jacobi and saxpy to 1.5 times their plain-Python time;
  the build's CPU is spent either way, so waiting for it costs less.) Against an oracle that
  knows every future call, this pays at most twice the optimal cost (the classic 2-competitive
  break-even rule): calls that stop before the losses reach the build time lost at most the
  build time they did not spend; otherwise the build cost equals the losses already paid.
  The variant a call builds and waits for is this call's cheapest, build plus run, which is
  not always the fastest to run: on a first call with an empty cache, serial C compiles in
  less time than OpenMP, and an OpenCL program builds faster still, so a call of 100 ms of
  work pays its own build, not the fastest variant's. Later calls then lose against the
  fastest variant and build it as above. That extra build costs no more than the call's run
  on the best built variant (else it would not be chosen), so the bound becomes three times
  the optimum at worst (this call's cost once more).
* **Uncertain estimates.** Where a model cannot tell how long a built variant runs (how
  often a branch is taken: mandelbrot's escape-time loop skips its body for escaped points,
  so its plain Python runs in a quarter to the whole of the time its statements would take),
  its estimate gives the range (``spread``). Until that variant is measured at the size,
  building another now is weighed against the range's geometric mean, not the best guess:
  with a build (and run) costing ``B`` and a run taking anywhere from ``L`` to ``H``,
  building loses at most a factor ``B / L`` against the better choice, running what is built
  at most ``H / B``; the worst case of the two is least where ``B = sqrt(L * H)`` decides.
  (On the best guess, mandelbrot's first call on 128 x 128, 62 ms in Python, built OpenCL and
  took 115 ms.)

* **Cold calls.** A variant's first calls in a process cost more than its later ones: the
  native call path made, code and data paged in, an OpenMP team created. The switch-call rule
  above skips the first; the next ones were still slow (serial C of saxpy on 16 elements:
  270 us, then 10 to 14, 3 to 5, then 1.5 to 2; OpenMP: 340 us, then 50 to 70, then 4), and
  the first measured set the correction whole, 20 to 30 times serial C's prediction, so the
  model ran the original code or OpenMP for hundreds of calls (the benchmark's saxpy at 16
  elements: OpenMP, 2.7 times serial C). So until a correction rests on ``COLD_SAMPLES``
  measurements, one lower than it moves it all the way (one-time costs only add time), and
  one higher moves it by ``MAX_STEP`` at most.

Pure bookkeeping: no clock, no threads; the dispatcher measures and builds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

#: Moving-average weight of a new measurement in a correction (of log(measured/predicted)).
ALPHA = 0.5
#: A prediction corrected by more than this factor is capped (a wild measurement, a pause).
MAX_CORRECTION = 1e4
#: Re-probe the runner-up every PROBE_EVERY calls at first (doubling while the choice holds),
#: the first time at call FIRST_PROBE (a prior is least certain before any measurement).
PROBE_EVERY = 16
FIRST_PROBE = 3
#: The period doubles up to PROBE_MAX_PERIOD calls, or, where that many calls of the choice
#: take less than PROBE_MAX_WAIT_S, up to as many as take that long (PROBE_MAX_PERIOD_TINY at
#: most): each due point makes the choice again, a path the warm calls no longer keep in the
#: caches (30 to 60 us on the development VM, against 5 to 10 in a loop), which every 1024
#: calls of a 3 us call cost it 2% of its time (``_max_period``).
PROBE_MAX_PERIOD = 1024
PROBE_MAX_PERIOD_TINY = 4096
PROBE_MAX_WAIT_S = 0.02
#: ...if its corrected prediction is within this factor of the choice's.
PROBE_WITHIN = 3.0
#: ...or, once per size class, a variant never measured there, within this factor; and every
#: fourth time one within PROBE_FAR (it was slow once, perhaps only while the machine was busy).
PROBE_UNMEASURED = 10.0
PROBE_FAR = 20.0
#: A re-probe's predicted extra time may be at most this share of the time the calls since the
#: last probe took (it waits until they have paid for it).
PROBE_SHARE = 0.1
#: A measurement this far (in log: a factor of 2) from its correction restarts re-probing.
SURPRISE = math.log(2.0)
#: The most a variant never measured borrows of a kin's correction (a factor, either way).
KIN_LIMIT = 3.0
KIN_LOG_LIMIT = math.log(KIN_LIMIT)
#: How far the runners-up of the last choice were: some within reach of every re-probe, some
#: only of a far one (every fourth), none.
NEAR, FAR, NONE = range(3)
#: A count of calls that is never reached.
NEVER = 1 << 62
#: The most one measurement moves a correction (in log: a factor of e**0.5 = 1.65).
MAX_STEP = 0.5
#: A correction resting on SETTLED measurements is updated by one call in SAMPLE, and one odd
#: call of the choice moves it by SETTLED_STEP at most (see "Sampling").
SETTLED, SAMPLE = 16, 4
SETTLED_STEP = 0.25
#: A correction's first measurements after its first one (fewer than COLD_SAMPLES in all) come
#: from a variant still running cold: one lower than the correction moves it all the way, one
#: higher by MAX_STEP at most (see "Cold calls" above).
COLD_SAMPLES = 4
#: A correction drifting by more than this (in log) since it last did lets the choice be made
#: again.
EPOCH_STEP = 0.25
#: A call predicted under this that switches variants is not measured; a probe of such a
#: variant runs PROBE_CALLS calls in a row, the last measured (see "Switching" above).
WARMUP_S = 1e-3
PROBE_CALLS = 3
#: A timed call this long after the last one ended comes after an idle gap (see "Idle gaps").
#: Timed calls of a stable choice are about 0.16 ms of calls apart at most (one in
#: ``asp_core.specializer._timing_period``: timing costs 1% of their time), so a gap this long
#: is not the calls between them.
IDLE_S = 2e-3


@dataclass(frozen=True)
class Estimate:
    """A variant's predicted time for one call."""

    label: str                      # the variant ("python", "c", "openmp@2", ...)
    seconds: float                  # predicted time of the part of the call that is measured
    terms: Mapping[str, float] = field(default_factory=dict)  # main terms, for reports
    build_s: float = 0.0            # time to build it first (0: built, or nothing to build)
    size_class: int = 0             # calls of one size class share a correction
    fixed_s: float = 0.0            # cost outside the measured part (never corrected)
    kin: tuple[str, ...] = ()       # variants whose correction it borrows before its own
    #: ...and variants whose correction it borrows only where they ran faster than predicted:
    #: their time has costs its own has not (a team of threads beside other processes), so
    #: their slowness says little of it, while their speed (the code vectorized) likely holds
    kin_faster: tuple[str, ...] = ()
    #: The least and the most ``seconds`` may be where the model cannot tell (a branch taken
    #: always or never), ``seconds`` being its best guess; None: as sure as any estimate.
    spread: tuple[float, float] | None = None
    #: What the first call of it after another variant ran takes beyond ``seconds`` (an
    #: OpenMP team waking after serial code ran); a probe pays it (see "Switching").
    switch_s: float = 0.0


@dataclass(frozen=True)
class Decision:
    """What to run now, and what to build meanwhile."""

    label: str                      # the variant to run for this call
    build_now: bool                 # it is not built: build it first (the call waits)
    build_later: str | None         # a variant to build in the background (or None)
    reason: str
    estimates: tuple[Estimate, ...] = ()
    corrected: Mapping[str, float] = field(default_factory=dict)  # label -> corrected seconds

    stable: bool = False            # a plain choice, which the next calls may repeat
    #: the best built variant while a faster one's losses add up towards its build: the next
    #: calls may repeat it too, until they reach it (``Selector.calls_before_probe``)
    renting: bool = False
    probe: bool = False             # a re-probe of a variant not chosen
    estimate: Estimate | None = field(default=None, compare=False)  # (set from the others)

    def __post_init__(self) -> None:
        chosen = next((e for e in self.estimates if e.label == self.label), None)
        object.__setattr__(self, "estimate", chosen)


@dataclass
class _Correction:
    log_ratio: float = 0.0
    samples: int = 0
    skipped: int = 0
    last: float = 0.0     # the last measurement's surprise (0: none)
    anchor: float = 0.0   # log_ratio when it last let the choice be made again


class Selector:
    """The choice among variants for one specializer (one loop nest): see the module."""

    def __init__(self) -> None:
        self._corrections: dict[tuple[str, int], _Correction] = {}
        self._losses: dict[str, float] = {}    # label -> seconds lost not having it built
        self._calls = 0
        self._period = PROBE_EVERY
        self._next_probe = FIRST_PROBE
        self._probes = 0
        self._last_choice: str | None = None
        self._building: set[str] = set()
        # The last decision between variants all built, kept while nothing it rests on
        # changes (the same estimates object, no correction moved by more than EPOCH_STEP):
        # a warm call then costs one comparison.
        self._epoch = 0
        self._memo: tuple | None = None
        self._reach = NEAR   # how far the last choice's runners-up were (to probe them)
        self.pinned: str | None = None   # a variant chosen whatever the estimates (pin())
        self._previous: str | None = None    # the label of the last decision
        #: (label, calls): the next calls of this label are not measured (a switch, a probe)
        self._unmeasured: tuple[str, int] | None = None
        self._idle = False   # the last timed call came after an idle gap ("Idle gaps")
        self._gap = False    # ...and the one ``observe`` is told of next (``after_gap``)
        #: (estimates, decision, calls): a probe's next calls (see "Switching")
        self._repeat: tuple | None = None
        self._confirm: str | None = None     # a variant whose last probe ran faster than
        # thought: the next due probe runs it, however far it is (see "Recovery")
        self._spent = 0.0       # predicted seconds of the calls since the last probe
        self._per_call = 0.0    # ... of one call of the last stable choice
        # (the estimates of the variant not built and of the one that runs instead): set
        # while the last decision rents (``Decision.renting``)
        self._renting: tuple[Estimate, Estimate] | None = None

    # -- corrections ---------------------------------------------------------------------------

    def factor(self, label: str, size_class: int, kin: tuple[str, ...] = (),
               kin_faster: tuple[str, ...] = ()) -> float:
        """How much slower than predicted ``label`` ran (1.0 without measurements). A size
        class without measurements of its own borrows the nearest one's; a variant never
        measured borrows a kin's (OpenMP's compute is serial C's, shared: whatever made one
        slower or faster than predicted, such as vectorization, most likely holds for both), up
        to a factor ``KIN_LIMIT`` either way: beyond that the kin's surprise is its own (an
        OpenMP team waking for a call of microseconds), and a variant never measured that
        borrowed it whole would never be tried. From a ``kin_faster`` only a factor below 1:
        serial C does not borrow OpenMP's slowness (beside two spinning processes, vadd's
        OpenMP on 4 million elements ran 2.4 times its prediction, 11 ms; serial C, never
        measured, borrowed it, was priced at 16.6 ms for its 6, and ran only after seven
        calls, at its first probe)."""
        for name in (label, *kin, *kin_faster):
            found = self._corrections.get((name, size_class))
            if found is None or not found.samples:
                near = [(abs(c - size_class), k) for (l, c), k in self._corrections.items()
                        if l == name and k.samples]
                if not near:
                    continue
                found = min(near, key=lambda item: item[0])[1]
            if name == label:
                return math.exp(found.log_ratio)
            ceiling = KIN_LOG_LIMIT if name in kin else 0.0
            return math.exp(min(max(found.log_ratio, -KIN_LOG_LIMIT), ceiling))
        return 1.0

    def corrected(self, estimate: Estimate) -> float:
        return estimate.seconds * self.factor(estimate.label, estimate.size_class,
                                              estimate.kin, estimate.kin_faster) + \
            estimate.fixed_s

    def measured(self, label: str, size_class: int) -> bool:
        found = self._corrections.get((label, size_class))
        return found is not None and found.samples > 0

    def after_gap(self, idle: bool) -> None:
        """Whether the call whose time ``observe`` is told next came after an idle gap (see
        "Idle gaps" in the module; the dispatcher knows when calls start and end)."""
        self._gap = idle

    def observe(self, estimate: Estimate, measured_s: float,
                report: bool = False) -> bool:
        """A call of ``estimate.label`` took ``measured_s`` seconds. Returns whether it
        surprised the model (a factor ``SURPRISE`` from its correction, twice in a row in one
        direction): the dispatcher then stops skipping the choice (and, where the variant is
        not the choice and ran faster, re-probing starts over at ``PROBE_EVERY``). One odd
        call (a page fault, a preemption) moves a correction by ``MAX_STEP`` at most
        (``SETTLED_STEP``, a settled choice's) and changes nothing else; two surprises in a row in
        one direction move it freely. Once a correction rests on ``SETTLED`` measurements, calls of
        the choice update it one in ``SAMPLE``, by their count (an odd call between is held until
        the next confirms it: "Sampling" in the module; warm calls stay cheap; a probe of another
        variant counts whole: "Recovery"). ``report``: a time reported apart from a call of the
        variant (a settlement's, ``specializers.loopnest.settled``: the median of many calls),
        which counts whole: neither the switch-call rule nor the sampling of a settled correction
        drops it (they dropped three reports in four where the original code's correction rested on
        16 measurements, and a settled kernel slower than its correction went on being predicted at
        it). A call that came after an idle gap (``after_gap``), where the timed call before it did
        not, is not measured if it ran slower than its correction says ("Idle gaps" in the
        module)."""
        idle, self._gap = self._gap, False
        if estimate.seconds <= 0 or measured_s <= 0:
            return False
        woke = False
        if not report:   # (a settlement's report is no call: the calls' pattern stays)
            woke, self._idle = idle and not self._idle, idle
        if not report and self._unmeasured is not None and \
                estimate.label == self._unmeasured[0]:
            left = self._unmeasured[1] - 1   # a switch call (see "Switching" in the module)
            self._unmeasured = (estimate.label, left) if left else None
            return False
        key = (estimate.label, estimate.size_class)
        entry = self._corrections.get(key)
        if entry is None:
            entry = self._corrections[key] = _Correction()
        ratio = measured_s / estimate.seconds
        ratio = MAX_CORRECTION if ratio > MAX_CORRECTION else \
            1 / MAX_CORRECTION if ratio < 1 / MAX_CORRECTION else ratio
        surprise = math.log(ratio) - entry.log_ratio
        if woke and entry.samples and surprise > 0:
            return False   # the first call of a burst: waking the machine (see "Idle gaps")
        surprised = entry.samples > 0 and abs(surprise) > SURPRISE
        chosen = estimate.label == self._last_choice
        if entry.samples >= SETTLED and not report and chosen:
            # (a probe of another variant, rare, counts whole: a confirmation dropped here
            # left OpenMP unchosen for a thousand calls more). Which calls count is decided
            # by their count, not their time: an odd call between the samples is held, and
            # counts only where the next timed call confirms it (see "Sampling").
            entry.skipped += 1
            sampled = entry.skipped >= SAMPLE
            if sampled:
                entry.skipped = 0
            elif not (surprised and entry.last * surprise > 0):
                entry.last = surprise if surprised else 0.0
                return False
        step = surprise if not entry.samples else ALPHA * surprise
        if 0 < entry.samples < COLD_SAMPLES and not report:   # (see "Cold calls")
            step = surprise if surprise < 0 else min(step, MAX_STEP)
            surprised = surprised and surprise < 0   # (faster than thought: choose again)
            entry.last = 0.0
        elif surprised:
            confirmed = entry.last * surprise > 0
            entry.last = surprise
            if confirmed and (chosen or surprise < 0):
                if not chosen:   # another variant twice faster than thought: look again
                    # soon, and move all the way (time only adds: see "Recovery")
                    self._period = PROBE_EVERY
                    self._next_probe = min(self._next_probe, self._calls + PROBE_EVERY)
                    step = surprise
                # (the choice is off: it is made again now, the dispatcher ending its fast
                # path, but the runner-up is not probed sooner: the choice moves when its
                # correction passes the runner-up's, and its slow spells on a busy machine
                # had probes of a slower runner-up every few calls: see "Sampling")
                if self._confirm == estimate.label:
                    self._confirm = None
            else:   # one odd call: a bounded step, and the choice goes on (a warm call of
                # a few microseconds is often twice as long on a busy machine)
                bound = SETTLED_STEP if entry.samples >= SETTLED and chosen else MAX_STEP
                step = min(max(step, -bound), bound)
                surprised = False
                if surprise < 0 and not chosen:   # a probe faster than thought: confirm
                    # it at the next due point, not after a doubled period (see "Recovery")
                    self._confirm = estimate.label   # (once: the period goes on doubling)
                    self._next_probe = min(self._next_probe, self._calls + PROBE_EVERY)
        else:
            entry.last = 0.0
            if entry.samples:
                step = min(max(step, -MAX_STEP), MAX_STEP)
        entry.log_ratio += step
        entry.samples += 1
        if abs(entry.log_ratio - entry.anchor) > EPOCH_STEP or not chosen:
            # (by the drift, not the step: several small steps had put the runner-up ahead
            # while the memo kept the choice; a probe's measurement decides again whatever
            # its step)
            entry.anchor = entry.log_ratio
            self._epoch += 1
        return surprised

    def measurements(self, label: str) -> int:
        return sum(c.samples for (l, _), c in self._corrections.items() if l == label)

    # -- the choice ----------------------------------------------------------------------------

    def calls_before_probe(self) -> int:
        """How many more calls may repeat the last choice before a re-probe may be due (the
        dispatcher's fast path ends there; 0: the next call). Where no variant was near
        enough to be probed at the last choice, only a far look (every fourth due point)
        can probe: the due points before it are passed over (``skipped``); where none was
        within ``PROBE_FAR``, none can."""
        if self._renting is not None:   # until the losses reach the build
            best, _ = self._renting
            per_call = self._rent_per_call()
            if per_call <= 0:
                return 0
            return max(0, math.ceil((best.build_s - self._losses.get(best.label, 0.0)) /
                                    per_call) - 1)
        if self.pinned is not None or self._repeat is None and self._reach == NONE and \
                self._confirm is None:
            return NEVER   # nothing is probed (the dispatcher's ``RECHOOSE_S`` bounds it)
        due = self._next_probe
        if self._repeat is None and self._reach == FAR and self._confirm is None:
            due += (-(self._probes + 1) % 4) * self._period
        return max(0, due - self._calls - 1)

    def skipped(self, calls: int) -> None:
        """``calls`` calls ran the last choice without asking (the dispatcher's fast path):
        they count for the re-probing schedule, and the due points they passed over (none
        of which could probe: ``calls_before_probe``) count as looked at. Calls that repeated
        a renting decision add their losses (calls of a settled kernel too: they run the
        original code, whose time the settlement found no longer than the choice's)."""
        self._calls += calls
        if self._renting is not None:
            label = self._renting[0].label
            self._losses[label] = self._losses.get(label, 0.0) + \
                calls * max(0.0, self._rent_per_call())
        self._spent += calls * self._per_call
        while self._calls >= self._next_probe and self._confirm is None and \
                (self._reach == NONE or (self._probes + 1) % 4):
            self._probes += 1
            self._next_probe += self._period

    def _rent_per_call(self) -> float:
        """What a call of the renting decision loses against the variant not built, by the
        corrections as they stand now (the calls it repeats are timed and correct them)."""
        best, ready = self._renting
        return self.corrected(ready) - self.corrected(best)

    def pin(self, label: str | None) -> None:
        """Choose ``label`` on every call (None: choose again), keeping every other part of
        the bookkeeping: for calibrating what the paths of two variants cost."""
        self.pinned = label
        self._memo = None

    def building(self, label: str, running: bool) -> None:
        """A background build of ``label`` started (``running``) or ended."""
        (self._building.add if running else self._building.discard)(label)
        self._epoch += 1

    def choose(self, estimates: Sequence[Estimate], *, can_wait: bool = True,
               background: bool = True) -> Decision:
        """The variant to run for this call. ``can_wait``: the call may wait for a build;
        ``background``: builds can proceed in the background."""
        self._calls += 1
        memo = self._memo
        if memo is not None and memo[0] is estimates and memo[1] == self._epoch and \
                self._calls < self._next_probe and self._repeat is None:
            if memo[2].label != self._previous:
                self._switched(memo[2], estimates)
            self._spent += self._per_call
            return memo[2]
        if not estimates:
            raise ValueError("no variant to choose from")
        decision = self._choose(estimates, can_wait, background)
        if decision.stable:
            self._per_call = decision.corrected.get(decision.label, 0.0)
            self._spent += self._per_call
        if decision.label != self._previous:
            self._switched(decision, estimates)
        return decision

    def _switched(self, decision: Decision, estimates: Sequence[Estimate]) -> None:
        """The call about to run ``decision`` runs another variant than the last call."""
        self._previous = decision.label
        self._unmeasured = None
        estimate = decision.estimate
        if estimate is not None and not decision.build_now and \
                self.corrected(estimate) < WARMUP_S:
            # (a switch call is not measured; a probe's calls but its last are not)
            self._unmeasured = (decision.label, PROBE_CALLS - 1 if decision.probe else 1)
            if decision.probe:
                self._repeat = (estimates, decision, PROBE_CALLS - 1)

    def _choose(self, estimates: Sequence[Estimate], can_wait: bool,
                background: bool) -> Decision:
        repeat, self._repeat = self._repeat, None
        self._renting = None
        if repeat is not None and repeat[0] is estimates:
            if repeat[2] > 1:
                self._repeat = (estimates, repeat[1], repeat[2] - 1)
            return repeat[1]   # a probe's next call (see "Switching")
        times = {e.label: self.corrected(e) for e in estimates}
        if self.pinned is not None:
            pinned = next(e for e in estimates if e.label == self.pinned)
            self._last_choice = pinned.label   # (its calls are the choice's: sampled alike)
            decision = Decision(pinned.label, pinned.build_s > 0, None, f"{pinned.label} "
                                "(pinned)", tuple(estimates), times, stable=True)
            self._memo = (estimates, self._epoch, decision)
            return decision
        ready = [e for e in estimates if e.build_s == 0]
        best = min(estimates, key=lambda e: times[e.label])
        if best.build_s == 0:
            return self._probe(best, ready, times, estimates)
        best_ready = min(ready, key=lambda e: times[e.label]) if ready else None
        # This call's own cheapest way: a variant whose build plus run beats the best built
        # one's run (not always the fastest to run: a quicker build, or one with nothing to
        # wait for). The fastest to run stays the goal of the losses below.
        now = min((e for e in estimates if e.build_s > 0),
                  key=lambda e: (e.build_s + times[e.label], e is not best))
        if best_ready is None or (can_wait and now.build_s + times[now.label] <=
                                  self._weighed(best_ready, times)):
            also = "" if now is best else \
                f"; {best.label} would run faster ({_s(times[best.label])}) but builds longer"
            return Decision(now.label, True, None,
                            f"{now.label}: building it pays off in this call "
                            f"({_s(now.build_s)} + {_s(times[now.label])} against "
                            f"{_s(times[best_ready.label]) if best_ready else 'nothing built'})"
                            f"{also}", tuple(estimates), times)
        lost = self._losses.get(best.label, 0.0) + times[best_ready.label] - times[best.label]
        self._losses[best.label] = lost
        if lost >= best.build_s and best.label not in self._building:
            if background:
                return Decision(best_ready.label, False, best.label,
                                f"{best_ready.label} while {best.label} builds in the background "
                                f"(the time lost without it, {_s(lost)}, reached its build "
                                f"time {_s(best.build_s)})", tuple(estimates), times)
            if can_wait:
                return Decision(best.label, True, None,
                                f"{best.label}: the time lost without it ({_s(lost)}) reached "
                                f"its build time ({_s(best.build_s)})", tuple(estimates), times)
        renting = False
        if best.label in self._building:
            why = "is building in the background"
        else:
            why = (f"is not built: building it ({_s(best.build_s)}) pays off after "
                   f"{_s(best.build_s - lost)} more lost")
            if times[best_ready.label] > times[best.label]:   # (the next calls may repeat
                # this one until the losses reach the build: a full choice on each, 40 us
                # here, had cost more than the loss)
                self._renting = (best, best_ready)
                renting = True
        return Decision(best_ready.label, False, None,
                        f"{best_ready.label}; {best.label} would be faster "
                        f"({_s(times[best.label])}) but {why}", tuple(estimates), times,
                        renting=renting)

    def _weighed(self, ready: Estimate, times: dict[str, float]) -> float:
        """What a built variant's run weighs against a build that would replace it (see
        "Uncertain estimates" in the module): its corrected time, or, while it is not measured
        at this size and its estimate has a spread, the geometric mean of the spread."""
        if ready.spread is None or self.measured(ready.label, ready.size_class):
            return times[ready.label]
        low, high = ready.spread
        scale = (times[ready.label] - ready.fixed_s) / ready.seconds if ready.seconds > 0 \
            else 1.0
        return math.sqrt(max(low, 0.0) * max(high, 0.0)) * scale + ready.fixed_s

    def _probe(self, best: Estimate, ready: Sequence[Estimate], times: dict[str, float],
               estimates: Sequence[Estimate]) -> Decision:
        if best.label != self._last_choice:
            first = self._last_choice is None
            self._last_choice, self._period = best.label, PROBE_EVERY
            self._next_probe = self._calls + (FIRST_PROBE if first else PROBE_EVERY)
        due = self._calls >= self._next_probe
        self._probes += due
        far = due and self._probes % 4 == 0   # every fourth probe looks farther too
        reach = {e.label: self._reach_of(e, times, times[best.label])
                 for e in ready if e.label != best.label}
        others = [e for e in ready if e.label in reach and (
            reach[e.label] == NEAR or far and reach[e.label] == FAR or e.label == self._confirm)]
        self._reach = min(reach.values(), default=NONE)
        if due:
            self._next_probe = self._calls + self._period
            if all(e.label != self._confirm for e in others):
                self._confirm = None   # (no longer offered, or now the choice)
        if others and due:
            runner_up = min(others, key=lambda e: (e.label != self._confirm,
                                                   self.measurements(e.label), times[e.label]))
            cost = self._probe_cost(runner_up, times, times[best.label])
            confirming, self._confirm = runner_up.label == self._confirm, None
            if cost > PROBE_SHARE * self._spent and not confirming:   # (a confirmation
                # is not held to the share: there is one at most per probe that is)
                # not paid for yet: due again once the calls have paid for it (this due
                # point is not counted, so a far look stays the one it was)
                self._probes -= 1
                per_call = max(times[best.label], 1e-9)
                self._next_probe = self._calls + max(1, min(_max_period(per_call), math.ceil(
                    (cost / PROBE_SHARE - self._spent) / per_call)))
            else:
                self._period = min(self._period * 2, _max_period(times[best.label]))
                self._spent = 0.0
                return Decision(runner_up.label, False, None,
                                f"{runner_up.label} (re-probing the runner-up of "
                                f"{best.label})", tuple(estimates), times, probe=True)
        decision = Decision(best.label, False, None, f"{best.label}: the fastest predicted "
                            f"({_s(times[best.label])})", tuple(estimates), times, stable=True)
        if not others or len(ready) == len(estimates):
            self._memo = (estimates, self._epoch, decision)
        return decision


    def _probe_cost(self, runner_up: Estimate, times: dict[str, float], best: float) -> float:
        """What a probe of ``runner_up`` is predicted to cost beyond running the choice
        (``best`` seconds a call): the difference, ``PROBE_CALLS`` times where the probe
        runs that many (under ``WARMUP_S``: "Switching" in the module), and what
        its first call pays for the switch. (Without that, a kernel of 2 us whose choice the
        noise kept surprising probed OpenMP every 16 calls, each probe waking a team for tens
        of microseconds: its calls took three times serial C's.)"""
        extra = max(0.0, times[runner_up.label] - best)
        return (PROBE_CALLS * extra if times[runner_up.label] < WARMUP_S else extra) + \
            runner_up.switch_s

    def _reach_of(self, estimate: Estimate, times: dict[str, float], best: float) -> int:
        """Whether a re-probe of the choice (``best`` seconds) may run ``estimate``'s variant
        (NEAR: within ``PROBE_WITHIN``, or ``PROBE_UNMEASURED`` where never measured), only a
        far one (FAR: within ``PROBE_FAR``, or farther where its correction at this size rests
        on fewer than ``COLD_SAMPLES`` measurements of its own) or none (NONE). A variant's
        first measurements may all be cold ones (an OpenMP team woken after other serial
        work); put out of reach on them, it was never run again: hilbert at 128 x 128, whose
        OpenMP calls take 17 us and serial C's 27, had OpenMP's correction at 47 times its
        prediction after three measurements in one of six benchmark processes, and ran serial
        C on every later call. A far look is held to ``PROBE_SHARE`` of the time like any
        probe, so a variant that is that slow costs a few far looks in all before it is out
        of reach."""
        seconds = times[estimate.label]
        if seconds <= PROBE_WITHIN * best or not self.measured(
                estimate.label, estimate.size_class) and seconds <= PROBE_UNMEASURED * best:
            return NEAR
        found = self._corrections.get((estimate.label, estimate.size_class))
        if seconds <= PROBE_FAR * best or found is not None and \
                0 < found.samples < COLD_SAMPLES:
            return FAR   # (fewer measurements than a cold start takes: see "Cold calls")
        return NONE


def _max_period(seconds: float) -> int:
    """The longest re-probing period (calls) for a choice of ``seconds`` a call: see
    ``PROBE_MAX_PERIOD``. The bound in time keeps what a stale choice costs in time where the
    calls are tiny, and the bound in calls where they are long."""
    period = PROBE_MAX_PERIOD
    while period < PROBE_MAX_PERIOD_TINY and 2 * period * seconds <= PROBE_MAX_WAIT_S:
        period *= 2
    return period


def settled_choice() -> tuple[Selector, Estimate]:
    """A selector whose one variant is chosen and its correction settled, and that variant's
    estimate: ``observe(estimate, seconds)`` then takes the path of a timed warm call, the
    one whose cost decides how many warm calls are timed (sampled one in ``SAMPLE``; a probe
    of another variant would count whole)."""
    selector = Selector()
    estimate = Estimate("c", 1e-5, {}, 0.0, 0)
    selector.choose((estimate,))
    for _ in range(2 * SETTLED):
        selector.observe(estimate, 1e-5)
    return selector, estimate


def _s(seconds: float) -> str:
    """A short readable duration."""
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"
