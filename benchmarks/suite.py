"""``asp bench``: the twelve examples over a sweep of sizes, our variants beside their peers.

For each example (``selection_worker.CASES``) at sizes whose size parameter ``n`` doubles
(``--sizes`` to name them; ``--only`` to pick examples), warm calls of:

* every variant of ours this machine has (``selection_worker.forced_variants``): ``python``
  (the original code run by CPython; not timed where its time, extrapolated from the size
  before, would pass the Python cap), ``c``, ``openmp@K`` for K from 2 to the cores,
  ``opencl`` where a device answers;
* the peers (``benchmarks.peers``): the example's NumPy formulation, Numba's ``@njit`` of its
  source and ``@njit(parallel=True)`` with ``prange`` on its legally parallel loops. A peer
  this machine cannot run (Numba not installed) is skipped with a note, and a peer is capped
  as CPython is (NumPy's mandelbrot is as slow as that);
* ``acm``: the default kernel, ``Cls().kernel``, whose variant the cost model picks.

The timing is ``benchmarks.bench_selection``'s warm mode (``measure_warm``): a worker process
per example holds every contender, the default kernel is called until its choice is stable,
then each time is the best of rounds of back-to-back calls (rotating who goes first). Then the
first calls, each in a new process with an empty cache (``bench_selection.first_call_process``
running ``benchmarks.first_call``), split into analysis, compile and run, of ``c``, the
OpenMP variant with the most threads, the device variants, ``acm`` and the Numba peers (quick:
``c``, ``acm`` and ``numba``), at the smallest, middle and largest sizes (quick: the largest).

``--quick``: three sizes per example (at a quarter, half and three quarters of the full
sweep), two rounds, a Python cap of 0.5 s; 1.7 minutes on the 2-core development VM (with a
calibration stored; a first calibration adds about 10 s). The full sweep (9 to 20 sizes per
example, five rounds, a cap of 2 s, first calls of six contenders at three sizes, best of two)
takes several times as long: it has not been timed here yet.

The result is one JSON file, ``DIR/bench.json`` (``asp report DIR`` reads it and nothing
else)::

    {"format": "asp-bench/1",
     "meta": {"date", "argv", "platform" (in words), "cores" (the affinity mask's),
              "python", "numpy", "numba" (versions; numba null where absent),
              "quick", "settings" (bench_selection.Settings as a dict), "calibration"
              (the cost model's parameters, in words), "variants" (ours, timed warm),
              "peers" (timed), "first_call_contenders", "threshold" (a penalty above it is
              a misprediction, 1.05), "notes" (what was skipped and why, failures),
              "load_start", "load_end" (load averages), "run_s"},
     "examples": [{"name", "sizes"}, ...],
     "points": [{"example", "n",
                 "variants": {VARIANT: best seconds},    # ours, python = CPython
                 "peers": {PEER: best seconds},          # numpy, numba, numba-parallel
                 "acm": {"s" (best seconds), "choice" (the variant of the last call, per
                         nest joined by "+": "c", "openmp@2", "openmp@2+c", "python"),
                         "choices" ({choice: timed calls}), "nests" (per nest: backend,
                         threads, fallback, predicted_s, measured_s), "timed_out" (s is
                         then a lower bound), "warm_calls"},
                 "oracle" (the fastest of "variants"),
                 "penalty" (acm's time over the oracle's, paired round by round:
                            ``bench_selection.Point.paired``),
                 "pooled_penalty" (acm's s / the oracle's s: each its best over its rounds),
                 "skipped": {CONTENDER: why not timed},
                 "medians": {CONTENDER: median seconds}, "rounds": {CONTENDER: rounds},
                 "wall_s" (how long measuring the point took)}, ...],
     "first_calls": [{"example", "n", "contender", "total_s", "analysis_s", "compile_s",
                      "run_s", "choice", "second_choice", "cold", "rounds"}, ...]}

Every time is in seconds and measured in the run that wrote the file. The first-call fields are
``benchmarks.first_call``'s (best of the rounds by ``total_s``).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import platform as platform_module
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from tqdm import tqdm

from . import peers as peers_module
from . import report
from .bench_selection import (DEFAULT, THRESHOLD, CallTimeout, Point, Settings, Worker,
                              WorkerError, Workers, _s, child_env, empty_cache_template,
                              ensure_calibration, first_call_process, measure_warm, over_cap)
from .selection_worker import CASES, Case, case_named, device_variants, forced_variants

FORMAT = "asp-bench/1"
RESULT = "bench.json"
FIRST_CALL_WORKER = ("benchmarks.first_call",)
#: The contenders timed at first call (those this machine has; ``openmp`` stands for the OpenMP
#: variant with the most threads, ``device`` for each device variant).
FIRST_CALL = ("c", "openmp", "device", DEFAULT, "numba", "numba-parallel")
FIRST_CALL_QUICK = ("c", DEFAULT, "numba")


@dataclass
class SuitePoint(Point):
    """A ``bench_selection.Point`` that keeps the peers' times apart from our variants'."""

    peers: dict[str, float] = field(default_factory=dict)   # peer -> best seconds

    def slot(self, name: str) -> dict[str, float]:
        return self.peers if name in peers_module.PEERS else super().slot(name)


def settings_for(quick: bool) -> Settings:
    return Settings(rounds=2 if quick else 5, first_rounds=1 if quick else 2, burst=0.02,
                    python_cap=0.5 if quick else 2.0, limit=10.0, max_bytes=512 * 2**20,
                    quick=quick)


def sweep(case: Case, settings: Settings, sizes: Sequence[int] = ()) -> list[int]:
    """The sizes of ``case``: ``sizes`` where given, else its doubling sizes (quick: three of
    them, at a quarter, half and three quarters of the way); none whose inputs pass the cap."""
    if not sizes:
        full = case.sizes(settings.max_bytes, quick=False)
        sizes = full if not settings.quick else \
            sorted({full[round(k * (len(full) - 1) / 4)] for k in (1, 2, 3)})
    return [n for n in sizes if case.bytes_per * n ** case.dims <= settings.max_bytes]


def first_call_sizes(sizes: Sequence[int], quick: bool) -> list[int]:
    if not sizes:
        return []
    return [sizes[-1]] if quick else sorted({sizes[0], sizes[len(sizes) // 2], sizes[-1]})


def first_call_contenders(variants: Sequence[str], peers: Sequence[str], quick: bool
                          ) -> list[str]:
    openmp = [v for v in variants if v.startswith("openmp@")]
    devices = [v for v in variants if v in device_variants()]
    chosen = []
    for name in FIRST_CALL_QUICK if quick else FIRST_CALL:
        if name == "openmp":
            chosen += openmp[-1:]
        elif name == "device":
            chosen += devices
        elif name in variants or name in peers or name == DEFAULT:
            chosen.append(name)
    return chosen


# -- measuring -------------------------------------------------------------------------------------

def measure_example(case: Case, sizes: Sequence[int], settings: Settings,
                    peers: Sequence[str], bar: tqdm, notes: list[str]) -> list[SuitePoint]:
    """Warm calls of every contender at each size, in one worker process. Where the worker
    fails with peers (a Numba that cannot compile the example), the example goes on without
    them, in a new worker; where it fails without, its larger sizes are left out."""
    points: list[SuitePoint] = []
    previous = None
    with Workers() as workers:
        workers["forced"] = Worker("forced", child_env(False))
        for n in sizes:
            bar.set_postfix_str(f"{case.name} n={n}")
            while True:
                t0 = time.perf_counter()
                point = SuitePoint(case.name, n)
                timed = []
                for peer in peers:  # a peer as slow as CPython is capped like it
                    skip = over_cap(case, n, previous, settings.python_cap, peer)
                    if skip:
                        point.skipped[peer] = skip
                    else:
                        timed.append(peer)
                try:
                    previous = measure_warm(case, n, workers, previous, settings, peers=timed,
                                            chosen=(DEFAULT,), point=point)
                    break
                except (WorkerError, CallTimeout) as exc:
                    workers["forced"].close(kill=True)
                    workers["forced"] = Worker("forced", child_env(False))
                    if not peers:
                        notes.append(f"{case.name} n={n}: not measured ({_last_line(exc)}); "
                                     "its larger sizes are left out")
                        bar.update(len(sizes) - len(points))
                        return points
                    notes.append(f"{case.name} n={n}: the worker failed with the peers "
                                 f"({_last_line(exc)}); {case.name} is measured without them")
                    peers = ()
            previous.wall_s = time.perf_counter() - t0
            points.append(previous)
            bar.update()
            tqdm.write(_line(previous))
    return points


def measure_first_calls(case: Case, sizes: Sequence[int], contenders: Sequence[str],
                        template: Path, settings: Settings, bar: tqdm,
                        notes: list[str]) -> list[dict]:
    """First calls, each in a new process with a copy of the empty cache ``template``."""
    found = []
    for n in sizes:
        for name in contenders:
            bar.set_postfix_str(f"first call: {case.name} n={n} {name}")
            replies = []
            for _ in range(settings.first_rounds):
                try:
                    replies.append(first_call_process(case.name, n, name, template,
                                                      settings.limit, FIRST_CALL_WORKER))
                except (WorkerError, CallTimeout) as exc:
                    notes.append(f"{case.name} n={n}: the first call of {name} failed "
                                 f"({_last_line(exc)})")
                    break
            bar.update()
            if replies:
                best = min(replies, key=lambda r: r["total_s"])
                found.append({"example": case.name, "n": n, "contender": name, **best,
                              "rounds": len(replies)})
    return found


def _last_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else type(exc).__name__


def _line(p: SuitePoint) -> str:
    """One printed line per point: the model's choice and time, the fastest, the peers."""
    peers = ", ".join(f"{name} {_s(t)}" for name, t in p.peers.items())
    return (f"{p.example:14s} n={p.n:<8d} acm {p.choice.get(DEFAULT, '-'):12s} "
            f"{_s(p.chosen_s.get(DEFAULT)):>9s} (penalty {p.penalty(DEFAULT):.2f}; fastest "
            f"{p.oracle} {_s(p.times[p.oracle])})" + (f"; {peers}" if peers else ""))


# -- the run ---------------------------------------------------------------------------------------

def run(*, quick: bool = False, only: Sequence[str] = (), sizes: Sequence[int] = (),
        out: Path = Path("asp-bench"), calibrate: bool = True,
        argv: Sequence[str] = ()) -> Path:
    """Measure, write ``out/bench.json`` (removing the files of an earlier report there) and
    return its path. ``only``: example names (all twelve when empty); ``sizes``: the sizes of
    every example (its own sweep when empty)."""
    started = time.perf_counter()
    load_start = os.getloadavg()
    settings = settings_for(quick)
    cases = [case_named(name) for name in only] if only else list(CASES)
    variants = forced_variants()
    peers, notes = peers_module.available()
    if "opencl" not in variants:
        notes.append("no OpenCL device answered here: the opencl variant is skipped")
    if importlib.util.find_spec("pycuda") is not None:
        notes.append("the cuda variant is not timed: asp bench times the CPU variants and "
                     "OpenCL")
    calibration = ensure_calibration() if calibrate else "not ensured (--no-calibration)"
    sweeps = {case.name: sweep(case, settings, sizes) for case in cases}
    for case in cases:
        dropped = [n for n in sizes if n not in sweeps[case.name]]
        if dropped:
            notes.append(f"{case.name}: n={', '.join(map(str, dropped))} left out: the inputs "
                         f"would pass the {settings.max_bytes / 2**20:.0f} MiB cap")
    firsts = {name: first_call_sizes(s, quick) for name, s in sweeps.items()}
    contenders = first_call_contenders(variants, peers, quick)
    total = sum(map(len, sweeps.values())) + \
        sum(len(s) for s in firsts.values()) * len(contenders)
    points: list[SuitePoint] = []
    first_calls: list[dict] = []
    with tqdm(total=total, desc="asp bench", unit="step", disable=None,
              dynamic_ncols=True) as bar:
        for case in cases:
            points += measure_example(case, sweeps[case.name], settings, peers, bar, notes)
        with tempfile.TemporaryDirectory(prefix="asp-bench-") as tmp:
            template, template_note = empty_cache_template(Path(tmp))
            for case in cases:
                first_calls += measure_first_calls(case, firsts[case.name], contenders,
                                                   template, settings, bar, notes)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "argv": list(argv),
            "platform": _platform(), "cores": len(os.sched_getaffinity(0)),
            "python": platform_module.python_version(), "numpy": _version("numpy"),
            "numba": _version("numba"), "quick": quick, "settings": asdict(settings),
            "calibration": calibration, "first_call_cache": template_note,
            "variants": variants, "peers": peers, "first_call_contenders": contenders,
            "threshold": THRESHOLD, "notes": notes, "load_start": load_start,
            "load_end": os.getloadavg(), "run_s": time.perf_counter() - started}
    data = {"format": FORMAT, "meta": meta,
            "examples": [{"name": case.name, "sizes": sweeps[case.name]} for case in cases],
            "points": [point_json(p) for p in points], "first_calls": first_calls}
    out.mkdir(parents=True, exist_ok=True)
    for name in report.OUTPUTS:  # a report of an earlier result would no longer match
        (out / name).unlink(missing_ok=True)
    path = out / RESULT
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


def point_json(p: SuitePoint) -> dict[str, Any]:
    return {"example": p.example, "n": p.n, "variants": p.times, "peers": p.peers,
            "acm": {"s": p.chosen_s[DEFAULT], "choice": p.choice.get(DEFAULT),
                    "choices": p.choices.get(DEFAULT, {}), "nests": p.nests.get(DEFAULT, []),
                    "timed_out": DEFAULT in p.timed_out,
                    "warm_calls": p.warm_calls.get(DEFAULT)},
            "oracle": p.oracle, "penalty": p.penalty(DEFAULT),
            "pooled_penalty": p.pooled_penalty(DEFAULT), "skipped": p.skipped,
            "medians": p.medians, "rounds": p.rounds, "wall_s": p.wall_s}


def _platform() -> str:
    from asp_core.platform import query_platform

    return query_platform().summary()


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def example_names() -> list[str]:
    return [case.name for case in CASES]
