"""Calibration of the loop-nest cost model: measure this machine's parameters, store them, find
them again (the ALPyNA cost model's section 3.4, extended to every parameter of
``cost.machine.MachineParams``).

* ``measure(quick, progress)`` runs the micro-benchmarks: the interpreter (``python_probes``),
  compiled code, memory bandwidth and OpenMP (``native_probes``), call overheads and compile
  time (``overhead_probes``). Quick: 1.5-2 s on the 2-core development VM (2-3 s the first
  time, when it also compiles its C, meanwhile the interpreter is measured); full (``python -m
  specializers.loopnest calibrate``): 11-15 s, for stabler numbers (the interpreter's within
  a few percent from run to run where quick ones vary by a third under load).
* ``store(params)`` keeps them for this machine (``asp_core.calibration``: per CPU model, core
  count and C compiler, in the cache folder); ``stored()`` returns them, or None when there is
  no usable record (none, corrupt, another machine's, unsafe: then measured again).
* ``ensure(background=True)``: without a stored calibration, start a quick one in a daemon
  thread, which stores its result and makes ``machine.machine()`` read it; until then the cost
  model uses ``machine.DEFAULTS``. ``ASP_CALIBRATE=0`` turns that off. ``status()`` says which
  parameters are in use.
* An asked-for calibration wins over a background one: while ``calibrate()`` (or the device's)
  measures in this process (``EXPLICIT``), no background calibration starts, and a background
  one that ends after another record was stored keeps that record. (The probes of
  ``calibrate --quick`` ran kernels, whose cost model found no record yet and started a quick
  calibration beside the asked-for one: both measured at once on the same cores, and the
  background one, ending last, replaced the stored record. A lent GPU machine's record, and
  this VM's, were the background one's.)
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Mapping

from asp_core import calibration
from asp_core import config as config_module
from asp_core.errors import AspError, BackendUnavailable
from asp_core.platform import cpu_cores

from . import machine as machine_module
from .features import KINDS, PY_KINDS
from .machine import CALIBRATION, FORMAT, MachineParams

log = logging.getLogger("asp.loopnest.calibrate")

#: ``progress(steps done, steps in all, what runs now)``.
Progress = Callable[[int, int, str], None]

STEPS = ("interpreter", "compiled code", "memory bandwidth", "OpenMP", "call overheads",
         "compile time")


def measure(quick: bool = False, progress: Progress | None = None) -> MachineParams:
    """This machine's parameters, measured (see the module). Without a C compiler the compiled
    parameters keep ``DEFAULTS``' values (the cost model offers no compiled variant then);
    without OpenMP, the OpenMP ones do."""
    report = progress or (lambda done, total, what: None)
    started = time.perf_counter()
    cores = cpu_cores()
    from . import native_probes, overhead_probes, python_probes  # (only when measuring)

    values: dict[str, Any] = {"cache_bytes": native_probes.cache_bytes()}
    kept: list[str] = []

    def step(index: int) -> None:
        report(index, len(STEPS), STEPS[index])

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="asp-calibrate-build") as pool:
        # Quick: the C the later steps need is built (or found in the cache) meanwhile.
        built = pool.submit(_build, True) if quick else None
        step(0)
        values.update(python_probes.measure(quick))
        step(1)
        try:
            module, openmp = built.result() if built is not None else _build(False)
        except BackendUnavailable as exc:
            log.warning("calibration: no compiled code (%s); its parameters keep their "
                        "defaults", exc)
            module, openmp = None, False
            kept.append("compiled code: no C compiler")
    if module is not None:
        values.update(native_probes.measure_ops(module, quick))
        step(2)
        values.update(native_probes.measure_memory(module, openmp, cores,
                                                   values["cache_bytes"], quick))
        step(3)
        if openmp:
            values.update(native_probes.measure_openmp(module, cores, quick))
        else:
            kept.append("OpenMP: not available")
    step(4)
    values.update(overhead_probes.measure_calls(quick, compiled=module is not None))
    step(5)
    if module is not None:
        # OpenMP's extra compile and a process's first build (in new processes: seconds)
        # are measured by a full calibration; a quick one keeps their defaults.
        values.update(overhead_probes.measure_compile(quick, openmp and not quick))
        if not quick:
            from . import first_use

            first = first_use.measure("c")
            if first is not None:
                values["compile_first_s"] = first
    report(len(STEPS), len(STEPS), "done")
    seconds = time.perf_counter() - started
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    source = (f"{'quick' if quick else 'full'} calibration, {seconds:.1f} s, load {load:.1f} "
              f"on {cores} cores")
    if kept:
        source += "; defaults kept for " + ", ".join(kept)
    params = dataclasses.replace(machine_module.DEFAULTS, **values, source=source)
    params.validate()
    return params


def _build(with_call_probe: bool):
    """The calibration module (``native_probes.build``); with ``with_call_probe``, also the
    variant ``overhead_probes.measure_calls`` calls (compiled into the disk cache)."""
    from . import native_probes, overhead_probes

    built = native_probes.build()
    if with_call_probe:
        overhead_probes.prepare()
    return built


def parse(data: Mapping[str, Any]) -> MachineParams:
    """Parameters from a stored record; ``ValueError`` for anything malformed (for
    ``asp_core.calibration.load``)."""
    try:
        params = MachineParams.from_json(data)
    except (AttributeError, TypeError) as exc:  # a field of the wrong JSON type
        raise ValueError(f"malformed parameters: {exc}") from exc
    for name, expected in (("py_op_ns", set(KINDS) | set(PY_KINDS)), ("c_op_ns", set(KINDS))):
        kinds = set(getattr(params, name))
        if kinds != expected:
            raise ValueError(f"{name} has the operation kinds {sorted(kinds)}, not "
                             f"{sorted(expected)}")
    return params


def stored_record() -> calibration.Calibration[MachineParams] | None:
    """The stored calibration of this machine, or None (the reason logged)."""
    return calibration.load(CALIBRATION, FORMAT, parse,
                            cache_dir=config_module.current().cache_dir)


def stored() -> MachineParams | None:
    """The stored parameters of this machine (their ``source`` says when and where they were
    measured), or None."""
    record = stored_record()
    if record is None:
        return None
    return dataclasses.replace(record.params, source=record.describe())


def store(params: MachineParams, cache_dir=None) -> calibration.Calibration:
    """Keep ``params`` as this machine's calibration in ``cache_dir`` (default: the folder the
    settings name now; ``CacheError`` if it cannot be used), and make ``machine.machine()``
    read them."""
    params.validate()
    record = calibration.store(CALIBRATION, FORMAT, params.to_json(), note=params.source,
                               cache_dir=cache_dir or config_module.current().cache_dir)
    machine_module.clear_cache()
    return record


class _Explicit:
    """How many asked-for calibrations (host or device) measure in this process now: while
    any does, no background calibration starts (its measurements would share the cores with
    the asked-for one's)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0

    def __enter__(self) -> "_Explicit":
        with self.lock:
            self.count += 1
        return self

    def __exit__(self, *exc) -> None:
        with self.lock:
            self.count -= 1
            last = self.count == 0
        if last:   # what was read meanwhile (none stored, none started) is read again
            from . import device_calibrate

            machine_module.clear_cache()
            device_calibrate.clear_cache()

    @property
    def running(self) -> bool:
        return self.count > 0


EXPLICIT = _Explicit()


def calibrate(quick: bool = False, progress: Progress | None = None, cache_dir=None
              ) -> tuple[MachineParams, calibration.Calibration]:
    """Measure and store (in ``cache_dir``: see ``store``); returns the parameters and the
    stored record. No background calibration starts in this process meanwhile."""
    with EXPLICIT:
        params = measure(quick, progress)
        return params, store(params, cache_dir)


# -- the first use: a quick calibration in the background ------------------------------------

class _Background:
    """The first-use calibration of this process: at most one, started once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.error: str | None = None
        self.said: str | None = None     # the status last logged

    def start(self, run: Callable[[], None]) -> None:
        with self.lock:
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, args=(run,), daemon=True,
                                               name="asp-calibrate")
                self.thread.start()

    def run_now(self, run: Callable[[], None]) -> None:
        """Run ``run`` in this thread, its failure recorded and logged as in the background."""
        with self.lock:
            if self.running:
                return
        self._run(run)

    def _run(self, run: Callable[[], None]) -> None:
        try:
            run()
        except (AspError, OSError, ValueError) as exc:  # CacheError, CompileError, a bad value
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("the calibration failed (%s); the cost model keeps its default "
                        "parameters", self.error)
        except BaseException as exc:  # a bug: recorded, and raised (the thread reports it)
            self.error = f"{type(exc).__name__}: {exc}"
            raise

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def join(self, timeout: float | None = None) -> None:
        thread = self.thread
        if thread is not None:
            thread.join(timeout)

    def clear(self) -> None:
        """Forget it (tests): a later ``ensure`` may start another."""
        self.join()
        with self.lock:
            self.thread, self.error, self.said = None, None, None


BACKGROUND = _Background()


def _quick_and_store(cache_dir=None) -> None:
    """The first use's quick calibration, stored unless a record was stored meanwhile (by
    ``calibrate`` in another process, or a full one): that one is kept."""
    params = measure(quick=True)
    found = calibration.load(CALIBRATION, FORMAT, parse,
                             cache_dir=cache_dir or config_module.current().cache_dir)
    if found is not None:   # (two processes' first uses: either record will do)
        log.info("a calibration stored while the background one measured is kept: %s",
                 found.describe())
        machine_module.clear_cache()
        return
    record = store(params, cache_dir)
    log.info("calibrated in the background: %s", record.describe())


def ensure(background: bool = True) -> str:
    """Make sure the cost model has this machine's parameters, or will soon: without a stored
    calibration, and unless ``ASP_CALIBRATE=0``, run a quick one (in a daemon thread with
    ``background``, else now). Returns ``status()``, which it also logs (once a process)."""
    if stored_record() is None and config_module.current().calibrate and not EXPLICIT.running:
        if background:   # stored where the settings say now, not where they say at its end
            cache_dir = config_module.current().cache_dir
            BACKGROUND.start(lambda: _quick_and_store(cache_dir))
        else:
            BACKGROUND.run_now(_quick_and_store)
    now = status()
    if now != BACKGROUND.said:
        BACKGROUND.said = now
        log.info("cost model parameters: %s", now)
    return now


def status() -> str:
    """Which parameters the cost model uses: "calibrated on <date>", "defaults (calibrating in
    the background)", "defaults (ASP_CALIBRATE=0)", ..."""
    record = stored_record()
    if record is not None:
        return f"calibrated on {record.date}"
    if BACKGROUND.running:
        return "defaults (calibrating in the background)"
    if EXPLICIT.running:
        return "defaults (calibrating now)"
    if BACKGROUND.error:
        return f"defaults (the calibration failed: {BACKGROUND.error})"
    if not config_module.current().calibrate:
        return "defaults (ASP_CALIBRATE=0)"
    return "defaults (not calibrated)"
