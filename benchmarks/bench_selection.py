"""Accuracy of variant selection (issue 10, point 6): the cost model's choice against the
fastest variant, and today's fixed rule beside it, measured side by side in one run.

For each of the twelve examples, at sizes whose size parameter doubles (from a few
microseconds of the fastest variant to about a second, or the memory cap), every variant is
timed: the original Python code (``Cls().original_kernel``, skipped as "over the cap" where its
time, extrapolated from the size before, would pass ``--python-cap``), serial C
(``backend="c"``) and OpenMP C at each thread count from 2 to the cores of the affinity mask
(``backend="openmp", num_threads=k``). The fastest of them is the oracle. The model's choice is
timed as what a user gets, ``Cls().kernel`` calls (dispatch included), and so is the fixed rule
(the same, in a process with ``ASP_SELECTION=fixed``). Three modes:

* ``warm``: warm calls, once every variant is compiled. The forced variants and the model's
  kernel live in one worker process (``benchmarks.selection_worker``), so that the model finds
  them compiled (a kernel's instances share their compiled code, as a program calling one
  kernel over and over has it), and the rule in another; both are started per example. The
  default kernels (a fresh instance per size) are called until their choice is stable (the
  same ``STABLE`` calls in a row, ``MIN_WARM`` to ``MAX_WARM`` calls, not counting calls made
  while the kernel is still cold, ``coldstart``, or a variant builds in the background, for
  up to ``WARM_BUDGET_S``: those are the start of a series of calls, not its steady state),
  and where a call is short, then called back to back for ``WARM_BURST_S`` more (a kernel
  called on a few elements learns over its first few hundred calls, a few milliseconds:
  its first bursts on 4 x 4 points were 8 us a call, its later ones 4.8, serial C's 4.5),
  before they are timed. Each
  time is the best of several rounds (5, fewer where a point would take over
  ``POINT_BUDGET_S``); in each round every contender in turn (rotating who goes first) is
  called back to back for ``--burst`` seconds (once at least), on inputs restored from a
  pristine copy before each call (outside the timing). Bursts, not pauses between calls: on
  this VM a call after a 20 ms sleep takes ten times as long (an idle vCPU, OpenMP threads
  gone to sleep), and the first calls of a burst may meet the OpenMP threads of another
  worker still spinning (libgomp spins about 10 ms after a parallel region).
* ``first-call``: each measurement is the first call in a new process, with an empty cache
  folder (holding only the compiler probe, and the machine calibration copied from the
  user's cache when there is one) and ``ASP_CALIBRATE=0``: analysis, code generation and
  compilation counted (one ``python -m benchmarks.selection_worker --first`` process per
  measurement; the interpreter's start and imports are not timed). Best of 2 per contender;
  the fastest first call is the oracle. Series of more than ``FIRST_CALL_MAX_SIZES`` sizes
  (the 1-D examples) are measured at every other size.
* ``loaded``: as ``warm``, while two processes spin in pure Python for the whole mode; each
  time is the median of the rounds' median calls, not the best (``STATISTIC``): under a load
  the benchmark puts there on purpose, a variant's best burst is its luckiest, and OpenMP's
  luck varies most (black_scholes on 1024 elements: a best of 25 us, a median of 539 us,
  where serial C's were 48 and 49), while a user's calls take the typical time. The best-of
  figures are printed beside them, as the median figures are beside the quiet modes'.

Per point, penalty = the choice's time / the oracle's time (kernel level: a kernel of several
nests is timed as a whole, against the fastest single forced variant; a mix can beat it and
score below 1); a penalty above ``THRESHOLD`` (1.05) is a misprediction. Warm and loaded calls
take the ratio round by round (``Point.paired``, ``PAIRED``): against each forced variant, the
median over the rounds of the choice's time in a round over the variant's in the same round,
and the largest of these (the choice over the fastest). Within a round every contender is timed
within a few tenths of a second, while this VM's vCPUs change speed about twofold for seconds
at a time (and OpenMP's under a load too), so pairing compares times taken under the same
conditions; each contender's own best or median over all its rounds (the *pooled* penalty, how
points were judged until 2026-11-28) put the same code up to 1.74 times apart idle and 80 times
beside two spinners, paired 1.12 and 1.97 (``bench_noise_floor``), and its figures are printed
beside. First calls are judged on each contender's best call: each is a process of its own,
whose speed is its own, and pairing them put the same code further apart (``PAIRED``). A forced
variant slower than ``PRUNE`` times the fastest after a round leaves the later rounds (it
cannot be the oracle; its time is that of the rounds it ran). Per mode: geometric-mean and
maximum penalty and the mispredicted share, for the model and for the rule. Targets: geomean at
most 1.05 and maximum at most 1.5 in every mode. The last line reads
``ACM: warm X/Y, first-call X/Y, loaded X/Y (geomean/max penalty), mispredicted Z of N``.

A point where the model's penalty comes out above ``THRESHOLD`` is *doubtful*: it is timed
again, as many rounds more (new processes in first-call mode) of every contender still in the
rounds, the oracle's variant and the rule's kernel too, and judged on all its rounds. This
VM's two vCPUs run at two speeds (a pure-Python loop pinned to one took 12.5 to 13 ms, on the
other 6.7 to 9, and which one is slow changes), so a contender's few bursts can all fall on the
slow one: in full runs at 2254a4b, 5 of the 5 warm points above 1.5 had the model run the very
code of the fastest forced variant, 1.6 to 1.95 times slower than that variant's bursts of it,
while in one process with the bursts alternating they took the same time. More rounds for
everyone leave what is measured as it was (each contender's best, or median, call), only more
precise where it decides: the oracle's time can fall as well as the model's. A point whose
penalty is then still above the target's maximum (``TARGET_MAX``) is timed once more, as many
rounds again as it has had: a maximum is decided by the few points with the most noise (the
original code's first call against itself, best of 2: up to 2.05 apart). Each row timed
again says what its penalty was before, and the report gives the figures before any point was
timed again beside the final ones (``--no-recheck``: none is).

    python -m benchmarks.bench_selection [--quick] [--only NAME ...] [--modes MODE ...]

A full run takes about 30 minutes on the 2-core development VM (warm and loaded about 4 to 5
each, first-call about 21: a new process per measurement, and about half the points timed
again); ``--quick`` (three small sizes per example, two rounds, one first call each, no point
timed again) about 1.5 minutes.

A complete run (all examples and modes, not ``--quick``) writes ``benchmarks/results/
selection.txt`` (the report) and ``selection.json`` (every number); other runs write only
with ``--out PREFIX``. Workers do not inherit ``ASP_BACKEND``, ``ASP_SELECTION``,
``ASP_NUM_THREADS`` or ``OMP_NUM_THREADS``, so that every choice is the selector's own. Before
any timing the cost model is calibrated if this machine has no calibration yet (the quick one
a first use starts), and every process timed runs with ``ASP_CALIBRATE=0``, so that no
calibration runs in the background of a timed call.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from specializers.loopnest.cost.first_use import PROBE_SCRIPT

from .selection_worker import CASES, DEFAULT, RULE, Case, case_named, forced_variants

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "selection"
MODES = ("warm", "first-call", "loaded")
#: What a contender's time at a point is, per mode: the best of its rounds (the best call of
#: each burst), or the median (of each burst's median call): see the module.
STATISTIC = {"warm": "best", "first-call": "best", "loaded": "median"}
#: Whether a mode judges its points round by round (``Point.paired``), or on each contender's
#: time over all its rounds. First calls are not paired: each is a new process of its own,
#: whose speed is its own (``bench_noise_floor --first``, the original code's first call as
#: two contenders: on best calls 1.082 / 2.05 in geomean / max over 92 points, paired 1.134 /
#: 2.01; warm, idle, OpenMP's best calls 1.034 / 1.74, paired 1.015 / 1.09).
PAIRED = {"warm": True, "first-call": False, "loaded": True}
THRESHOLD = 1.05          # a penalty above this is a misprediction
TARGET_GEOMEAN, TARGET_MAX = 1.05, 1.5
PRUNE = 2.0               # a forced variant this much slower than the fastest leaves the rounds
MIN_PAIRED = 3            # ...and is paired with where it shares this many rounds (``paired``)
MIN_WARM, MAX_WARM, STABLE = 3, 10, 3   # warm-up calls of the default kernels
WARM_BUDGET_S = 3.0       # ...fewer past this long, once MIN_WARM calls are made
WARM_BURST_S = 0.1        # ...then back to back this long, where a call takes under a tenth
POINT_BUDGET_S = 5.0      # fewer timed rounds (2 at least) where they would take longer
LIMIT_FACTOR = 20.0       # a default kernel's call is cut short past this times the fastest
COMPILE_ALLOWANCE_S = 30.0   # ...plus this where the call may build variants
START_ALLOWANCE_S = 10.0     # ...plus this for a new process's start
FIRST_CALL_MAX_SIZES = 12    # first-call mode takes every other size of longer series
BUSY_LOAD = 1.0              # a load average above this at the start of a quiet mode: warned
#: Settings the processes timed do not inherit: each would force or bias what is measured
#: (without Python's bytecode cache, every lazy import of a first call parses its source).
DROPPED_ENV = ("ASP_BACKEND", "ASP_DISABLE_JIT", "ASP_SELECTION", "ASP_NUM_THREADS",
               "OMP_NUM_THREADS", "PYTHONDONTWRITEBYTECODE")
# The compiler's version line and OpenMP probe are kept once per machine: made in the
# template of the empty caches of first-call mode, so that no first call pays for them (as
# the calibration's first-use measurement has them: ``cost.first_use``).


# -- worker processes and busy processes --------------------------------------------------------

def child_env(rule: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]]
                                                       if env.get("PYTHONPATH") else []))
    env["ASP_CALIBRATE"] = "0"  # no calibration in the background of the timed calls
    if rule:
        env["ASP_SELECTION"] = "fixed"
    return env


CALIBRATE_SCRIPT = """
from specializers.loopnest.cost import calibrate, device_calibrate

def noted(record):   # which kind of calibration made the record
    return "" if record is None else f" ({record.note})"

if calibrate.stored_record() is None:
    calibrate.calibrate(quick=False)
print(calibrate.status() + noted(calibrate.stored_record()), end="")
for backend in device_calibrate.PACKAGES:   # the devices the model may offer, measured once
    if device_calibrate.importable(backend) and device_calibrate.stored_record(backend) is None:
        try:
            device_calibrate.calibrate(backend, quick=False)
        except Exception:  # no device: it is not offered
            pass
    print(f"; {backend}: {device_calibrate.status(backend)}"
          + noted(device_calibrate.stored_record(backend)), end="")
"""


def ensure_calibration() -> str:
    """Calibrate the cost model on this machine unless it is (in a child process, before any
    timing: a full calibration, host and devices, as ``python -m specializers.loopnest
    calibrate`` makes, about a minute); the model's parameters, in words, each record's note
    saying whether a quick or a full calibration made it. A full one, not the quick one a
    first use makes: first calls choose between kinds by their first builds, which a quick
    calibration does not measure (a process's first C build kept its default, 20 ms, where it
    cost 70 to 130 ms here; see ``MachineParams.compile_first_s``). A calibration that fails
    is reported in those words (its error's last line; the model then runs on its defaults),
    not raised: the choices are still worth measuring."""
    env = {k: v for k, v in child_env(False).items() if k != "ASP_CALIBRATE"}
    done = subprocess.run([sys.executable, "-c", CALIBRATE_SCRIPT], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    if done.returncode:
        error = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"CALIBRATION FAILED ({error}): the model's defaults"
    return done.stdout.strip()


class WorkerError(RuntimeError):
    pass


class CallTimeout(Exception):
    """A worker took longer than its time limit to answer (it was killed and started again)."""


class Worker:
    """A worker process (``selection_worker``, in a process group of its own) and the
    commands sent to it."""

    def __init__(self, name: str, env: dict[str, str]):
        self.name, self.env = name, env
        self._start()

    def _start(self) -> None:
        self.log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.selection_worker"], cwd=ROOT, env=self.env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
            start_new_session=True)

    def ask(self, op: str, limit: float | None = None, **args: Any) -> dict:
        """Send a command and wait for its answer (at most ``limit`` seconds: then the worker
        is killed and started again, its state lost, and ``CallTimeout`` raised)."""
        try:
            self.proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            self._ended(op, args)
        ready, _, _ = select.select([self.proc.stdout], [], [], limit)
        if not ready:
            self.close(kill=True)
            self._start()
            raise CallTimeout(f"worker {self.name}: no answer to {op} {args} within "
                              f"{limit:g} s")
        line = self.proc.stdout.readline()
        if not line:
            self._ended(op, args)
        return json.loads(line)

    def _ended(self, op: str, args: dict) -> None:
        self.proc.wait()
        self.log.seek(0)
        raise WorkerError(f"worker {self.name} ended (status {self.proc.returncode}) on "
                          f"{op} {args}:\n{self.log.read()[-4000:]}")

    def close(self, kill: bool = False) -> None:
        """End the worker (``kill``: now, with its process group)."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:  # it is ending: waited for below
                pass
            try:
                self.proc.wait(timeout=0 if kill else 10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc.stdout.close()
        self.log.close()


class Workers(dict):
    """Workers by name, all closed when the ``with`` block ends."""

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, *exc: Any) -> None:
        for worker in self.values():
            worker.close()


class BusyProcesses:
    """``count`` processes spinning in pure Python while the ``with`` block runs."""

    def __init__(self, count: int):
        self.count = count
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> "BusyProcesses":
        try:
            for _ in range(self.count):
                self.procs.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        for proc in self.procs:
            proc.kill()
        for proc in self.procs:
            proc.wait()
        self.procs = []


# -- measurements ----------------------------------------------------------------------------------

def paired_ratio(mine: Sequence[float], theirs: Sequence[float]) -> float:
    """The median, over the rounds both series have (a contender pruned from the later rounds
    has fewer), of one's time in a round over the other's in the same round."""
    return float(np.median([a / b for a, b in zip(mine, theirs)]))


@dataclass
class Point:
    """One example at one size in one mode: every contender's best time, and the choices."""

    example: str
    n: int
    times: dict[str, float] = field(default_factory=dict)     # forced variant -> best seconds
    chosen_s: dict[str, float] = field(default_factory=dict)  # acm/rule -> best seconds
    medians: dict[str, float] = field(default_factory=dict)   # contender -> median seconds
    bests: dict[str, float] = field(default_factory=dict)     # contender -> best seconds
    statistic: str = "best"     # what ``times`` and ``chosen_s`` hold: "best" or "median"
    skipped: dict[str, str] = field(default_factory=dict)     # forced variant -> why not timed
    timed_out: list[str] = field(default_factory=list)        # chosen_s is then a lower bound
    rounds: dict[str, int] = field(default_factory=dict)      # contender -> rounds timed
    calls: dict[str, int] = field(default_factory=dict)       # contender -> calls timed
    choice: dict[str, str] = field(default_factory=dict)      # acm/rule -> label (last call)
    choices: dict[str, dict[str, int]] = field(default_factory=dict)  # label -> timed calls
    nests: dict[str, list] = field(default_factory=dict)      # acm/rule -> last call per nest
    warm_calls: dict[str, int] = field(default_factory=dict)
    wall_s: float = 0.0                                       # how long measuring it took
    #: where the point was doubtful and timed again: the rounds before, and the penalties
    #: (acm/rule) they gave (``_timed_rounds``)
    recheck: dict[str, Any] = field(default_factory=dict)
    #: contender -> its value in each round it ran, in order (its burst's best call, and its
    #: burst's median call; a first call's time): the rounds the penalties pair (``paired``)
    round_bests: dict[str, list[float]] = field(default_factory=dict)
    round_medians: dict[str, list[float]] = field(default_factory=dict)
    #: whether the penalties pair the rounds (``PAIRED``: not first calls)
    pairing: bool = True

    @property
    def oracle(self) -> str:
        """The fastest forced variant, on each one's time over all its rounds."""
        return min(self.times, key=self.times.get)

    def slot(self, name: str) -> dict[str, float]:
        """Where contender ``name``'s best time goes: ``chosen_s`` for the default kernels,
        ``times`` (the forced variants, among which the oracle is) for the others. A
        subclass may keep other contenders apart (``benchmarks.suite``'s peers)."""
        return self.chosen_s if name in (DEFAULT, RULE) else self.times

    def ours(self, name: str) -> bool:
        """Whether ``name`` is a forced variant: one the oracle and the pruning compare."""
        return self.slot(name) is self.times

    def penalty(self, who: str) -> float:
        """``who``'s time over the fastest forced variant's, round by round (``paired``) on
        the mode's statistic; on the contenders' times over all their rounds
        (``pooled_penalty``) where the mode does not pair its rounds (``PAIRED``), and for a
        point without rounds (``who`` cut short in its warm-up, or a point made by hand)."""
        paired = self._paired_on(self.statistic, who)
        return self.pooled_penalty(who) if paired is None else paired

    def pooled_penalty(self, who: str) -> float:
        """``who``'s time over all its rounds over the oracle's over all of its (how this
        benchmark judged a point until 2026-11-28; shown beside)."""
        return self.chosen_s[who] / self.times[self.oracle]

    def paired(self, who: str, rounds: dict[str, list[float]]) -> float | None:
        """``who``'s time over the fastest forced variant's, judged round by round: against
        each forced variant, the median, over the rounds both ran, of ``who``'s value in the
        round over the variant's in the same round; the largest of these (the variant ``who``
        loses most against: ``x / min(v) == max(x / v)``). None where ``who`` has no rounds.
        A variant pruned from the later rounds (``PRUNE``: at least twice the fastest's time
        in its last round) counts where it shares ``MIN_PAIRED`` rounds with ``who`` (or all of
        ``who``'s), or is the oracle: else its "median" is one round, the one round where
        ``who``'s own bad round is not outweighed by the others (loaded, conv2d at 32: the
        model's first round, OpenMP beside the spinners, 517 us against serial C's 8; paired
        with serial C over ten rounds 1.06, with OpenCL, 31 times serial C's time and pruned
        after that round, 2.06, the point's penalty until 2026-11-28).

        A round times every contender within a few tenths of a second, so each ratio compares
        two times taken under the same conditions: this VM's vCPUs change speed about twofold
        for seconds at a time, and OpenMP under a load for seconds too, which a contender's
        own best or median over its rounds (``pooled_penalty``) leaves in when its rounds and
        the oracle's fall on different speeds (``bench_noise_floor``: one variant timed as
        two contenders, beside two spinning processes: OpenMP's median calls up to 19.6 times
        apart, paired up to 1.97). Taking the largest over the variants counts noise against
        the model, never for it."""
        mine = rounds.get(who)
        if not mine:
            return None
        oracle = self.oracle if self.times else None
        enough = min(MIN_PAIRED, len(mine))
        ratios = [paired_ratio(mine, theirs) for name, theirs in rounds.items()
                  if name in self.times and theirs and
                  (min(len(theirs), len(mine)) >= enough or name == oracle)]
        return max(ratios) if ratios else None

    def _paired_on(self, statistic: str, who: str) -> float | None:
        """``paired`` on the rounds' values of ``statistic``; None where the point does not
        pair its rounds (``pairing``)."""
        if not self.pairing:
            return None
        return self.paired(who, self.round_medians if statistic == "median"
                           else self.round_bests)

    def ran(self, who: str) -> str:
        """The variant ``who`` (a default kernel) ran in most of its timed calls."""
        seen = self.choices.get(who) or {self.choice.get(who, "-"): 1}
        return max(seen, key=seen.get)

    def choice_penalty(self, who: str) -> float:
        """The choice judged apart from the noise of its own calls and its dispatch: the
        forced variant it ran most, timed as such, over the oracle; its own time
        (``penalty``) where that is less (the forced variant's rounds were the unlucky ones:
        OpenMP on fbcorr at 4 x 4, 256 us in its one round before it was pruned, where the
        model's calls of it took 5.4), or where it ran a mix of variants over several nests,
        which no forced variant is."""
        label = self.ran(who)
        own = self.penalty(who)
        if label not in self.times:
            return own
        forced = self._paired_on(self.statistic, label)
        return min(own, self.times[label] / self.times[self.oracle] if forced is None
                   else forced)

    def median_penalty(self, who: str) -> float | None:
        """The choice's median calls over the fastest forced variant's, paired by round (the
        typical call, not the best: see ``_other_summary``); None without medians."""
        return self._penalty_of("median", who)

    def best_penalty(self, who: str) -> float | None:
        """The choice's best calls over the fastest forced variant's, paired by round."""
        return self._penalty_of("best", who)

    def _penalty_of(self, statistic: str, who: str) -> float | None:
        paired = self._paired_on(statistic, who)
        if paired is not None:
            return paired
        seconds = self.medians if statistic == "median" else self.bests
        forced = [seconds[name] for name in self.times if name in seconds]
        if who not in seconds or not forced:
            return None
        return seconds[who] / min(forced)


@dataclass(frozen=True)
class Settings:
    rounds: int
    first_rounds: int
    burst: float
    python_cap: float
    limit: float
    max_bytes: float
    quick: bool
    recheck: bool = False   # time a doubtful point again (``_timed_rounds``)


def over_cap(case: Case, n: int, previous: Point | None, cap: float,
             name: str = "python") -> str | None:
    """Why contender ``name`` (plain Python) is not timed at ``n`` (None: it is), its time
    extrapolated from the size before (work grows as n**order)."""
    if previous is None:
        return None
    times = previous.slot(name)
    if name not in times:
        return previous.skipped.get(name)
    estimate = times[name] * (n / previous.n) ** case.order
    return f"over the cap (about {estimate:.3g} s)" if estimate > cap else None


def _variants(point: Point, case: Case, previous: Point | None, settings: Settings) -> list[str]:
    variants = forced_variants()
    skip = over_cap(case, point.n, previous, settings.python_cap)
    if skip:
        point.skipped["python"] = skip
        variants.remove("python")
    return variants


def _round_count(first_round_s: float, settings: Settings) -> int:
    if settings.quick:
        return settings.rounds
    return max(2, min(settings.rounds, int(POINT_BUDGET_S / max(first_round_s, 1e-9))))


def call_limit(fastest: float, settings: Settings) -> float:
    """How long a default kernel's call may take before it is cut short: ``LIMIT_FACTOR``
    times the fastest variant's time so far, ``--limit`` seconds at least."""
    return max(settings.limit, LIMIT_FACTOR * fastest)


def _timed_rounds(point: Point, call: Callable[[str, float | None], dict],
                  contenders: list[str], settings: Settings, rounds: int | None = None) -> None:
    """Rounds in which every contender is timed once in turn (forced variants first, then
    rotating the first). A forced variant slower than PRUNE times the fastest leaves the later
    rounds, and so does a default kernel that is also over the Python cap, or was cut short
    (``call_limit``). ``rounds``: None for as many as ``_round_count`` allows after the
    first. Where ``settings.recheck`` and the model's penalty is then above ``THRESHOLD``,
    the point is doubtful: as many rounds again are timed, of every contender still in the
    rounds, and the point is judged on all of them (``Point.recheck``); where it is then
    still above ``TARGET_MAX``, as many rounds again once more (``recheck["again"]``)."""
    active = [name for name in contenders if name not in point.timed_out]
    results: dict[str, list[dict]] = {name: [] for name in active}
    active, done = _rounds(point, call, results, active, settings, rounds)
    _record(point, results)
    if not (settings.recheck and DEFAULT in active and point.penalty(DEFAULT) > THRESHOLD):
        return
    point.recheck = {"rounds": done, "penalty": {who: point.penalty(who)
                                                 for who in point.chosen_s}}
    active, more = _rounds(point, call, results, active, settings, done, start=done)
    _record(point, results)
    done += more
    if DEFAULT not in active or point.penalty(DEFAULT) <= TARGET_MAX:
        return
    # Still above the maximum the target allows: the few points that decide a maximum are
    # where the noise of few rounds counts most (the original code's first call against
    # itself: 2.05 on the best of 2, ``bench_noise_floor --first``), so once more, as many
    # rounds again as it has had, of every contender still in them.
    point.recheck["again"] = {"rounds": done, "penalty": point.penalty(DEFAULT)}
    _rounds(point, call, results, active, settings, done, start=done)
    _record(point, results)


def _rounds(point: Point, call: Callable[[str, float | None], dict],
            results: dict[str, list[dict]], active: list[str], settings: Settings,
            rounds: int | None, start: int = 0) -> tuple[list[str], int]:
    """``rounds`` rounds of the contenders ``active`` (None: as many as ``_round_count``
    allows after the first), their replies added to ``results``; the contenders still active
    after them, and the rounds timed. ``start``: rounds timed before (the first contender
    rotates on from them)."""
    total, done = rounds or settings.rounds, 0
    while done < total and active:
        t0 = time.perf_counter()
        shift = (start + done) % len(active)
        for name in active[shift:] + active[:shift]:
            forced = [min(r["s"] for r in got) for other, got in results.items()
                      if got and point.ours(other)]
            if name not in (DEFAULT, RULE) or not forced:
                results[name].append(call(name, None))
                continue
            limit = call_limit(min(forced), settings)
            try:
                results[name].append(call(name, limit + settings.burst))
            except CallTimeout:
                point.timed_out.append(name)
                results[name].append({"s": limit, "choice": "cut short", "nests": []})
        if done == 0 and rounds is None:
            total = _round_count(time.perf_counter() - t0, settings)
        done += 1
        best = {name: min(r["s"] for r in got) for name, got in results.items()}
        fastest = min(t for name, t in best.items() if point.ours(name))
        active = [name for name in active if name not in point.timed_out and
                  (best[name] <= PRUNE * fastest or
                   name in (DEFAULT, RULE) and best[name] <= settings.python_cap)]
    return active, done


def _record(point: Point, results: dict[str, list[dict]]) -> None:
    for name, got in results.items():
        best = min(r["s"] for r in got)
        median = float(np.median([r.get("median_s", r["s"]) for r in got]))
        point.slot(name)[name] = median if point.statistic == "median" else best
        point.bests[name], point.medians[name] = best, median
        point.round_bests[name] = [r["s"] for r in got]
        point.round_medians[name] = [r.get("median_s", r["s"]) for r in got]
        point.rounds[name] = len(got)
        point.calls[name] = sum(r.get("calls", 1) for r in got)
        if name in (DEFAULT, RULE):
            point.choice[name] = got[-1]["choice"]
            point.nests[name] = got[-1]["nests"]
            seen = point.choices[name] = {}
            for r in got:
                for label, count in r.get("choices", {r["choice"]: 1}).items():
                    seen[label] = seen.get(label, 0) + count


def measure_warm(case: Case, n: int, workers: Workers, previous: Point | None,
                 settings: Settings, *, peers: Sequence[str] = (),
                 chosen: Sequence[str] = (DEFAULT, RULE), point: Point | None = None,
                 statistic: str = "best") -> Point:
    """Warm calls of every contender at one size (workers: "forced", and RULE where
    ``chosen`` has it). ``peers``: other contenders timed beside the forced variants, in
    their worker (``point``, a ``Point`` subclass, keeps them apart: ``Point.slot``).
    ``statistic``: each contender's time is its best call, or its median (``STATISTIC``)."""
    point = point or Point(case.name, n)
    point.statistic = statistic
    variants = _variants(point, case, previous, settings)
    # The model's kernel lives beside the forced variants: warm calls are calls once every
    # variant is compiled (a kernel's instances share them), as a program calling the kernel
    # over and over would have them; the compile itself is the first-call mode's business.
    workers["forced"].ask("load", example=case.name, n=n,
                          contenders=variants + list(peers) + [DEFAULT])
    first = [workers["forced"].ask("call", name=name)["s"] for name in variants
             if name != "python"]  # compile (or load) outside the timed calls
    for name in peers:  # (Numba compiles on its first call)
        workers["forced"].ask("call", name=name)
    limit = call_limit(min(first), settings)
    if RULE in chosen:
        workers[RULE].ask("load", example=case.name, n=n, contenders=[RULE])
    for who in chosen:
        try:
            point.warm_calls[who] = warm_up(workers[WORKER.get(who, who)], who, limit)
        except CallTimeout:
            point.timed_out.append(who)
            point.chosen_s[who] = limit
            point.choice[who] = "cut short"

    def call(name: str, limit: float | None) -> dict:
        worker = workers[RULE if name == RULE else "forced"]
        return worker.ask("burst", limit, name=name, seconds=settings.burst)

    _timed_rounds(point, call, variants + list(peers) + list(chosen), settings)
    return point


#: The worker each default kernel runs in (the model's: beside the forced variants).
WORKER = {DEFAULT: "forced"}


def warm_up(worker: Worker, who: str, limit: float) -> int:
    """Call the default kernel until its choice was the same ``STABLE`` times in a row
    (``MIN_WARM`` to ``MAX_WARM`` calls, fewer past ``WARM_BUDGET_S`` seconds), then, where
    the last call took under a tenth of ``WARM_BURST_S``, back to back for that long; each call
    may take ``limit`` seconds. Returns the number of calls (the first compiles, or loads)."""
    choices: list[str] = []
    calls = 0
    t0 = time.perf_counter()
    while len(choices) < MAX_WARM:
        # the first call may also build a variant: a limit of its own
        reply = worker.ask("call", limit + (COMPILE_ALLOWANCE_S if not calls else 0),
                           name=who)
        calls += 1
        if time.perf_counter() - t0 > WARM_BUDGET_S and len(choices) >= MIN_WARM:
            break
        if reply.get("cold") or reply.get("building"):   # not the steady state yet
            if time.perf_counter() - t0 <= WARM_BUDGET_S:
                continue
        choices.append(reply["choice"])
        if len(choices) >= MIN_WARM and len(set(choices[-STABLE:])) == 1:
            break
    if reply["s"] < WARM_BURST_S / 10:
        calls += worker.ask("burst", limit + WARM_BURST_S, name=who,
                            seconds=WARM_BURST_S)["calls"]
    return calls


def measure_first_call(case: Case, n: int, template: Path, previous: Point | None,
                       settings: Settings) -> Point:
    """First calls, each in a new process with a copy of the empty cache ``template``."""
    point = Point(case.name, n, pairing=PAIRED["first-call"])
    variants = _variants(point, case, previous, settings)

    def call(name: str, limit: float | None) -> dict:
        return first_call_process(case.name, n, name, template, limit)

    _timed_rounds(point, call, variants + [DEFAULT, RULE], settings, settings.first_rounds)
    return point


def first_call_process(example: str, n: int, name: str, template: Path, limit: float | None,
                       worker: Sequence[str] = ("benchmarks.selection_worker", "--first")
                       ) -> dict:
    """Run ``python -m WORKER... EXAMPLE N NAME`` in a new process, with a copy of the empty
    cache ``template``, and return the JSON its last line prints (``CallTimeout`` past
    ``limit`` plus the allowances for compiling and starting; ``WorkerError`` if it fails)."""
    module, *options = worker
    with tempfile.TemporaryDirectory(prefix="asp-first-") as tmp:
        cache = Path(tmp) / "cache"
        shutil.copytree(template, cache)
        env = dict(child_env(name == RULE), ASP_CACHE_DIR=str(cache))
        try:
            done = subprocess.run(
                [sys.executable, "-m", module, *options, example, str(n), name], cwd=ROOT,
                env=env, capture_output=True, text=True,
                timeout=limit and limit + COMPILE_ALLOWANCE_S + START_ALLOWANCE_S)
        except subprocess.TimeoutExpired as exc:
            raise CallTimeout(f"the first call of {name} on {example} n={n}") from exc
    if done.returncode:
        raise WorkerError(f"the first call of {name} on {example} n={n} failed:\n"
                          f"{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def empty_cache_template(folder: Path) -> tuple[Path, str]:
    """A cache folder holding only the compiler probe and the machine calibration (copied
    from the user's cache when there is one), and a line saying what it holds."""
    from asp_core import calibration, config

    template = folder / "template"
    template.mkdir(mode=0o700)
    subprocess.run([sys.executable, "-c", PROBE_SCRIPT], cwd=ROOT, check=True,
                   env=dict(child_env(False), ASP_CACHE_DIR=str(template)))
    source = calibration.folder(config.current().cache_dir)
    if source.is_dir():
        shutil.copytree(source, template / "calibration")
        files = sorted(p.name for p in source.glob("*.json"))
        return template, f"calibration copied from {source}: {', '.join(files) or 'no files'}"
    return template, f"no calibration in {source}: the model runs on its defaults"


@dataclass
class Mode:
    name: str
    points: list[Point]
    load_start: tuple[float, float, float]
    load_end: tuple[float, float, float]
    note: str = ""


def run_mode(mode: str, cases: list[Case], settings: Settings, out: "Report") -> Mode:
    load_start = os.getloadavg()
    started = time.perf_counter()
    points: list[Point] = []
    out.line(f"== {mode}: load average at start {_load(load_start)}")
    if mode != "loaded" and load_start[0] > BUSY_LOAD:
        out.line(f"   WARNING: the machine is busy (1-minute load {load_start[0]:.2f}): other "
                 "processes share the cores, and these figures are noisy")
    note = ""
    with tempfile.TemporaryDirectory(prefix="asp-selection-") as tmp:
        template = None
        if mode == "first-call":
            template, note = empty_cache_template(Path(tmp))
            out.line(f"   {note}")
        with BusyProcesses(2 if mode == "loaded" else 0):
            if mode == "loaded":
                out.line("   two processes spin in pure Python for the whole mode")
            _table_header(out)
            for case in cases:
                points += _run_case(mode, case, settings, template, out)
    load_end = os.getloadavg()
    out.line(f"== {mode}: load average at end {_load(load_end)}; "
             f"{time.perf_counter() - started:.0f} s")
    out.line(_mode_summary(mode, points))
    for extra in (_choice_summary(mode, points), _other_summary(mode, points),
                  _pooled_summary(mode, points)):
        if extra is not None:
            out.line(extra)
    out.line("")
    return Mode(mode, points, load_start, load_end, note)


def _run_case(mode: str, case: Case, settings: Settings, template: Path | None,
              out: "Report") -> list[Point]:
    points: list[Point] = []
    previous = None
    names = () if mode == "first-call" else ("forced", RULE)
    with Workers() as workers:
        for name in names:
            workers[name] = Worker(name, child_env(name == RULE))
        sizes = case.sizes(settings.max_bytes, settings.quick)
        if mode == "first-call" and len(sizes) > FIRST_CALL_MAX_SIZES:
            sizes = sizes[::2]  # a new process per measurement: every other size of the long
        for n in sizes:        # series (the 1-D examples), still more than six
            t0 = time.perf_counter()
            if mode == "first-call":
                previous = measure_first_call(case, n, template, previous, settings)
            else:
                previous = measure_warm(case, n, workers, previous, settings,
                                        statistic=STATISTIC[mode])
            previous.wall_s = time.perf_counter() - t0
            points.append(previous)
            out.line(_row(previous))
    return points


# -- report ----------------------------------------------------------------------------------------

class Report:
    """Printed lines, kept for the results file."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def line(self, text: str = "") -> None:
        print(text, flush=True)
        self.lines.append(text)


def _load(load: Sequence[float]) -> str:
    return " ".join(f"{x:.2f}" for x in load)


def _s(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f}us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f}ms"
    return f"{seconds:.3f}s"


def _table_header(out: Report) -> None:
    variants = "".join(f"{v:>10s}" for v in forced_variants())
    out.line(f"   {'example':14s}{'n':>9s}{variants}  | {'ACM choice':18s}{'ACM':>10s}"
             f"{'pen':>8s} | {'rule choice':18s}{'rule':>10s}{'pen':>8s}")


_SHORT = {"python": "py", "openmp": "omp"}


def _short(label: str) -> str:
    """A choice label for the table: per-nest labels abbreviated (``omp@2+c+py``)."""
    if "+" not in label:
        return label
    return "+".join(_SHORT.get(part.split("@")[0], part.split("@")[0]) +
                    (f"@{part.split('@')[1]}" if "@" in part else "")
                    for part in label.split("+"))


def _row(p: Point) -> str:
    cells = "".join(f"{_s(p.times[v]) if v in p.times else 'over cap':>10s}"
                    for v in forced_variants())
    parts = []
    for who in (DEFAULT, RULE):
        label = _short(p.choice.get(who, "-")) + ("*" if len(p.choices.get(who, {})) > 1
                                                   else "")
        time_s = (">" if who in p.timed_out else "") + _s(p.chosen_s[who])
        parts.append(f"{label:18s}{time_s:>10s} {p.penalty(who):7.2f}")
    notes = [f"timed again: {p.recheck['penalty'][DEFAULT]:.2f} after "
             f"{p.recheck['rounds']} rounds"] if p.recheck else []
    if "again" in p.recheck:
        notes.append(f"once more: {p.recheck['again']['penalty']:.2f} after "
                     f"{p.recheck['again']['rounds']}")
    again = f"  ({'; '.join(notes)})" if notes else ""
    return f"   {p.example:14s}{p.n:9d}{cells}  | {parts[0]} | {parts[1]}{again}"


def before_recheck(p: Point, who: str) -> float:
    """``who``'s penalty at ``p`` before the point was timed again (``_timed_rounds``); its
    penalty where it was not."""
    return p.recheck["penalty"][who] if p.recheck else p.penalty(who)


def _geomean(values: Sequence[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


def summarize(points: Sequence[Point], who: str) -> dict:
    penalties = [p.penalty(who) for p in points]
    if not penalties:
        return {"geomean": None, "max": None, "mispredicted": 0, "points": 0}
    return {"geomean": _geomean(penalties),
            "max": max(penalties),
            "mispredicted": sum(x > THRESHOLD for x in penalties), "points": len(penalties),
            "device_fastest": sum(p.oracle in DEVICES for p in points),
            "device_chosen": sum(any(d in p.choice.get(who, "") for d in DEVICES)
                                 for p in points),
            "device_right": sum(p.oracle in DEVICES and p.oracle in p.choice.get(who, "")
                                for p in points)}


#: The device variants, whose share of the fastest and of the choices is reported.
DEVICES = ("opencl", "cuda")


def _mode_summary(mode: str, points: Sequence[Point]) -> str:
    parts = []
    for who, title in ((DEFAULT, "ACM"), (RULE, "rule")):
        s = summarize(points, who)
        if s["points"]:
            parts.append(f"{title}: geomean {s['geomean']:.3f}, max {s['max']:.2f}, "
                         f"mispredicted {s['mispredicted']} of {s['points']} "
                         f"({s['mispredicted'] / s['points']:.0%})")
    line = f"   {mode}: " + "; ".join(parts)
    again = [p for p in points if p.recheck]
    if again:
        first = [before_recheck(p, DEFAULT) for p in points]
        twice = [p for p in again if "again" in p.recheck]
        line += (f"\n   {mode}: {len(again)} doubtful points (ACM penalty above {THRESHOLD}) "
                 f"timed again, {len(twice)} of them once more (still above {TARGET_MAX}); "
                 f"before that, ACM geomean {_geomean(first):.3f}, max {max(first):.2f}")
    timed = [p for p in points if any(d in p.times for d in DEVICES)]
    if timed:
        s = summarize(timed, DEFAULT)
        line += (f"\n   {mode}: a device variant was the fastest at {s['device_fastest']} of "
                 f"{len(timed)} points where one was timed; the ACM chose one at "
                 f"{s['device_chosen']} (rightly at {s['device_right']})")
    return line


def _choice_summary(mode: str, points: Sequence[Point]) -> str | None:
    """The penalties split by their cause: the choice itself (the forced time of the variant
    the model ran, ``Point.choice_penalty``), against the rest (the noise between the model's
    calls and the forced variant's, and its dispatch), counted where the model ran the
    oracle's own variant, so that its excess can be nothing but the rest."""
    penalties = [p.choice_penalty(DEFAULT) for p in points]
    if not penalties:
        return None
    geomean = _geomean(penalties)
    over = [p for p in points if p.penalty(DEFAULT) > TARGET_MAX]
    same = sum(p.ran(DEFAULT) == p.oracle for p in over)
    return (f"   {mode}, the ACM's choices timed as forced variants: geomean {geomean:.3f}, "
            f"max {max(penalties):.2f}; of the {len(over)} points above {TARGET_MAX}, "
            f"{same} ran the fastest forced variant's own code (their excess is noise and "
            "dispatch, not the choice)")


def _other_summary(mode: str, points: Sequence[Point]) -> str | None:
    """The same penalties on the other statistic, a second view beside the mode's own
    (``STATISTIC``): on median calls (each variant's median over its rounds' median bursts)
    beside a quiet mode's best calls, on best calls beside the loaded mode's medians."""
    if mode == "first-call":
        return None
    median = STATISTIC[mode] != "median"
    penalties = [x for x in ((p.median_penalty if median else p.best_penalty)(DEFAULT)
                             for p in points) if x is not None]
    if not penalties:
        return None
    geomean = _geomean(penalties)
    return (f"   {mode}, on {'median' if median else 'best'} calls: ACM geomean "
            f"{geomean:.3f}, max {max(penalties):.2f} ({len(penalties)} points)")


def _pooled_summary(mode: str, points: Sequence[Point]) -> str | None:
    """The mode's penalties on each contender's time over all its rounds, unpaired
    (``Point.pooled_penalty``): the figures as this benchmark judged them until 2026-11-28."""
    penalties = [p.pooled_penalty(DEFAULT) for p in points]
    if not penalties or not PAIRED[mode]:   # (the mode's own figures)
        return None
    return (f"   {mode}, pooled rounds (unpaired): ACM geomean {_geomean(penalties):.3f}, "
            f"max {max(penalties):.2f}, mispredicted {sum(x > THRESHOLD for x in penalties)} "
            f"of {len(penalties)}")


def pooled_line(modes: Sequence[Mode]) -> str:
    """The final line's figures on pooled rounds (``Point.pooled_penalty``; first calls: the
    mode's own, which are not paired)."""
    cells = _mode_cells(modes, lambda p: p.pooled_penalty(DEFAULT))
    return f"ACM on pooled rounds (unpaired): {cells} (geomean/max penalty)"


def _mode_cells(modes: Sequence[Mode], penalty: Callable[[Point], float],
                note: Callable[[list[Point]], str] = lambda points: "") -> str:
    """``MODE X/Y`` per mode (``-/-`` for a mode not run): the geomean and maximum of
    ``penalty`` over its points, followed by ``note(points)``."""
    cells = []
    by_name = {m.name: m for m in modes}
    for name in MODES:
        points = by_name[name].points if name in by_name else []
        values = [penalty(p) for p in points]
        cells.append(f"{name} {_geomean(values):.2f}/{max(values):.2f}{note(points)}"
                     if values else f"{name} -/-")
    return ", ".join(cells)


def choice_line(modes: Sequence[Mode]) -> str:
    """The final line's figures for the choices alone (``Point.choice_penalty``)."""
    cells = _mode_cells(modes, lambda p: p.choice_penalty(DEFAULT))
    return f"ACM's choices timed as forced variants: {cells} (geomean/max penalty)"


def recheck_line(modes: Sequence[Mode]) -> str | None:
    """The final line's figures as the first rounds alone gave them, where some points were
    timed again (``_timed_rounds``); None where none was."""
    if not any(p.recheck for m in modes for p in m.points):
        return None
    cells = _mode_cells(modes, lambda p: before_recheck(p, DEFAULT),
                        lambda points: f" ({sum(bool(p.recheck) for p in points)} timed again)")
    return f"ACM before doubtful points were timed again: {cells}"


def final_line(modes: Sequence[Mode], who: str) -> str:
    """``ACM: warm X/Y, first-call X/Y, loaded X/Y (geomean/max penalty), mispredicted Z of N``
    (``-/-`` for a mode not run)."""
    title = "ACM" if who == DEFAULT else "rule"
    cells, wrong, total = [], 0, 0
    by_name = {m.name: m for m in modes}
    for name in MODES:
        s = summarize(by_name[name].points if name in by_name else [], who)
        cells.append(f"{name} {s['geomean']:.2f}/{s['max']:.2f}" if s["points"]
                     else f"{name} -/-")
        wrong += s["mispredicted"]
        total += s["points"]
    return (f"{title}: {', '.join(cells)} (geomean/max penalty), mispredicted {wrong} of "
            f"{total}")


def write_results(prefix: Path, report: Report, modes: Sequence[Mode], meta: dict) -> None:
    prefix.parent.mkdir(parents=True, exist_ok=True)
    prefix.with_suffix(".txt").write_text("\n".join(report.lines) + "\n")
    data = {"meta": meta, "modes": [
        {"mode": m.name, "load_start": m.load_start, "load_end": m.load_end, "note": m.note,
         "summary": {who: summarize(m.points, who) for who in (DEFAULT, RULE)},
         "points": [{**asdict(p), "oracle": p.oracle,
                     "penalty": {who: p.penalty(who) for who in (DEFAULT, RULE)},
                     "pooled_penalty": {who: p.pooled_penalty(who) for who in (DEFAULT, RULE)},
                     "choice_penalty": p.choice_penalty(DEFAULT)}
                    for p in m.points]}
        for m in modes]}
    prefix.with_suffix(".json").write_text(json.dumps(data, indent=1) + "\n")


# -- main ------------------------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_selection",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="three small sizes per example, two rounds, one first call each "
                        "(about 1.5 minutes)")
    parser.add_argument("--only", nargs="+", metavar="NAME", choices=[c.name for c in CASES],
                        help="examples to run (default: all twelve)")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--rounds", type=int, help="timed rounds of warm calls (default 5, "
                        f"fewer where a point would take over {POINT_BUDGET_S:g} s; --quick: 2)")
    parser.add_argument("--first-rounds", type=int,
                        help="new processes per contender in first-call mode (default 2; "
                        "--quick: 1)")
    parser.add_argument("--burst", type=float, default=0.02,
                        help="per round, each contender is called back to back for this many "
                        "seconds (once at least; default 0.02)")
    parser.add_argument("--python-cap", type=float, default=2.0,
                        help="plain Python is not timed where it would take longer (seconds)")
    parser.add_argument("--limit", type=float, default=10.0,
                        help=f"a default kernel's call is cut short past the longer of this "
                        f"(seconds, default 10) and {LIMIT_FACTOR:g} times the fastest "
                        "variant's time, and that time recorded as a lower bound")
    parser.add_argument("--max-mib", type=float, default=512,
                        help="sizes whose inputs would pass this are left out")
    parser.add_argument("--no-calibration", action="store_true",
                        help="do not calibrate a machine that has no calibration (the model "
                        "then runs on its defaults; for smoke tests)")
    parser.add_argument("--no-recheck", action="store_true",
                        help="do not time a doubtful point again (one where the ACM's penalty "
                        f"is above {THRESHOLD} after its rounds; default: as many rounds again, "
                        "of every contender still in them; off with --quick)")
    parser.add_argument("--out", type=Path, help="write PREFIX.txt and PREFIX.json (default "
                        "for a complete run: benchmarks/results/selection)")
    return parser


def measurement_cost() -> tuple[float, float]:
    """What timing a call costs the dispatcher (issue 10, point 3), in ns: two clock reads,
    and the selector's bookkeeping of one measurement once its correction has settled (the
    path of a warm call: ``Selector.observe``)."""
    import timeit

    from asp_core.selection import settled_choice

    clock = time.perf_counter
    reads = min(timeit.repeat(lambda: (clock(), clock()), number=20_000, repeat=5)) / 2e4
    selector, estimate = settled_choice()
    book = min(timeit.repeat(lambda: selector.observe(estimate, 1.01e-5), number=20_000,
                             repeat=5)) / 2e4
    return reads * 1e9, book * 1e9


def main(argv: list[str] | None = None) -> dict:
    args = _parser().parse_args(argv)
    from asp_core.platform import query_platform

    settings = Settings(rounds=args.rounds or (2 if args.quick else 5),
                        first_rounds=args.first_rounds or (1 if args.quick else 2),
                        burst=args.burst, python_cap=args.python_cap, limit=args.limit,
                        max_bytes=args.max_mib * 2**20, quick=args.quick,
                        recheck=not (args.quick or args.no_recheck))
    cases = [case_named(name) for name in args.only] if args.only else list(CASES)
    complete = not args.quick and not args.only and set(args.modes) == set(MODES)
    out_prefix = args.out or (RESULTS if complete else None)

    report = Report()
    started = time.perf_counter()
    load_start = os.getloadavg()
    platform = query_platform().summary()
    report.line(platform)
    report.line(f"affinity mask: {len(os.sched_getaffinity(0))} cores; variants: "
                f"{', '.join(forced_variants())}")
    report.line(f"load average at start: {_load(load_start)}")
    calibration = ("not ensured (--no-calibration)" if args.no_calibration
                   else ensure_calibration())
    report.line(f"cost model parameters: {calibration} (ASP_CALIBRATE=0 in every process "
                "timed)")
    report.line(f"settings: {'quick, ' if args.quick else ''}rounds {settings.rounds} "
                f"(first-call {settings.first_rounds}), bursts of {settings.burst} s, Python "
                f"cap {settings.python_cap} s, inputs up to {args.max_mib:g} MiB; a penalty "
                f"above {THRESHOLD} is a misprediction"
                + ("; a point where the ACM's is, timed again (as many rounds more)"
                   if settings.recheck else ""))
    reads_ns, book_ns = measurement_cost()
    report.line(f"timing a call: two clock reads {reads_ns:.0f} ns + the selector's bookkeeping "
                f"{book_ns:.0f} ns (each included in the ACM times below)")
    report.line("times: best of the rounds (loaded: the median); ACM/rule: the default "
                "kernel's own calls (* the choice changed during the timed calls; > cut "
                "short); pen: its time over the fastest variant's (warm, loaded: paired round by "
                "round)")
    report.line("")
    modes = [run_mode(mode, cases, settings, report) for mode in MODES if mode in args.modes]
    load_end = os.getloadavg()
    report.line(f"load average at end: {_load(load_end)}; run time "
                f"{time.perf_counter() - started:.0f} s")
    report.line(f"targets: geomean penalty <= {TARGET_GEOMEAN} and max <= {TARGET_MAX} in "
                "every mode")
    report.line(final_line(modes, RULE))
    report.line(choice_line(modes))
    report.line(pooled_line(modes))
    again = recheck_line(modes)
    if again:
        report.line(again)
    report.line(final_line(modes, DEFAULT))
    meta = {"argv": sys.argv[1:] if argv is None else list(argv), "platform": platform,
            "load_start": load_start, "load_end": load_end, "threshold": THRESHOLD,
            "settings": asdict(settings), "cases": [c.name for c in cases],
            "variants": forced_variants(), "date": time.strftime("%Y-%m-%d %H:%M:%S"),
            "run_s": time.perf_counter() - started}
    if out_prefix is not None:
        write_results(out_prefix, report, modes, meta)
        print(f"written: {out_prefix.with_suffix('.txt')}, {out_prefix.with_suffix('.json')}")
    return {"modes": modes, "meta": meta,
            "summary": {m.name: {who: summarize(m.points, who) for who in (DEFAULT, RULE)}
                        for m in modes}}


if __name__ == "__main__":
    main()
