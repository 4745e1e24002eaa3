"""Device calibrations: measured once per machine and device, stored, offered to the model.

A device backend (``opencl``, ``cuda``) is offered by the cost model only once its parameters
are known (``cost.device.DeviceParams``): a device is too unlike the CPU, and too unlike other
devices, for defaults to pick it well. ``params(backend)`` returns the stored calibration of
this machine's device for ``backend`` (``asp_core.calibration``: the record
``loopnest-device-<backend>``, keyed by the machine; OpenCL's also by ``ASP_OPENCL_DEVICE``),
or None; where there is none and the backend's Python package is installed, it starts a quick
calibration in a daemon thread (once per process, after the CPU's if that one is running;
``ASP_CALIBRATE=0``: never), and the device is offered from the next process, or from this one
once stored. ``python -m specializers.loopnest calibrate`` measures the devices too.

Finding whether a device is calibrated costs no import of pyopencl or pycuda (a file read,
once per process); a record naming a device the driver no longer offers makes the build of
that variant fail, and the dispatcher picks the next one and says why.
"""

from __future__ import annotations

import atexit
import functools
import importlib.util
import logging
import os
import re
import threading

from asp_core import calibration
from asp_core import config as config_module
from asp_core.errors import AspError

from .device import FRESH_BYTES, DeviceParams

log = logging.getLogger("asp.loopnest.calibrate")

RECORD = "loopnest-device"
FORMAT = 12  # 2: host_memory; 3: init_s measured in a new process where this one used the device;
#            4: init_s, the first build in a new process beyond a later one (``first_use``);
#            5: ... with the compiler probe made before the timed process;
#            6: call_ns from calls in a row, transfer_ns from copies read back together;
#            7: upload and download bandwidths apart, from copies as a call makes them;
#            8: init_s without the compiled launch library's build (a 7 measured it in);
#            9: upload_fresh_bw and download_fresh_bw; 10: lane_scale against serial C
#            measured (it was against the model's cost of a latency-bound chain);
#            11: a GPU's lanes and lane scale from its attributes, bandwidths measured
#            until the steps show (a 10 could store 2.7e17 bytes per second);
#            12: downloads straight into host arrays in use, as calls now read large ones
#: The device backends the cost model may offer, and the package each needs.
PACKAGES = {"opencl": "pyopencl", "cuda": "pycuda"}


@functools.lru_cache(maxsize=None)
def importable(backend: str) -> bool:
    """Whether ``backend``'s Python package is installed (not imported)."""
    return importlib.util.find_spec(PACKAGES[backend]) is not None


def record_name(backend: str) -> str:
    name = f"{RECORD}-{backend}"
    chosen = os.environ.get("ASP_OPENCL_DEVICE", "").strip() if backend == "opencl" else ""
    if chosen:
        name += "-" + re.sub(r"[^A-Za-z0-9]", "_", chosen)
    return name


def stored_record(backend: str) -> calibration.Calibration[DeviceParams] | None:
    return calibration.load(record_name(backend), FORMAT, DeviceParams.from_json,
                            cache_dir=config_module.current().cache_dir)


@functools.lru_cache(maxsize=None)
def params(backend: str) -> DeviceParams | None:
    """The stored parameters of this machine's ``backend`` device, or None (see the module)."""
    if not importable(backend):
        return None
    record = stored_record(backend)
    if record is None:
        from .calibrate import EXPLICIT

        if config_module.current().calibrate and not EXPLICIT.running:
            _start_background(backend)
        return None
    return record.params


def offered() -> tuple[str, ...]:
    """The device backends the cost model offers on this machine now."""
    return tuple(b for b in PACKAGES if params(b) is not None)


def clear_cache() -> None:
    params.cache_clear()


def store(p: DeviceParams, cache_dir=None) -> calibration.Calibration:
    """Store ``p`` in ``cache_dir`` (default: the cache folder the settings name now)."""
    p.validate()
    record = calibration.store(record_name(p.backend), FORMAT, p.to_json(), note=p.source,
                               cache_dir=cache_dir or config_module.current().cache_dir)
    clear_cache()
    return record


def calibrate(backend: str, quick: bool = False, cache_dir=None
              ) -> tuple[DeviceParams, calibration.Calibration]:
    """Measure ``backend``'s device and store its parameters in ``cache_dir`` (default: the
    settings' now; ``BackendUnavailable`` where there is none)."""
    from . import device_probes
    from .calibrate import EXPLICIT
    from .machine import machine

    with EXPLICIT:   # (no background calibration starts meanwhile: ``cost.calibrate``)
        measured = device_probes.measure(backend, machine(), quick)
        return measured, store(measured, cache_dir)


_STARTED: set[str] = set()
_LOCK = threading.Lock()


_THREADS: list[threading.Thread] = []


def _start_background(backend: str) -> None:
    with _LOCK:
        if backend in _STARTED:
            return
        _STARTED.add(backend)
        if not _THREADS:
            atexit.register(_stop_background)
        # the cache folder of the call that started it: the settings may name another by
        # the time it ends (a test's own folder: its record landed in a later test's)
        thread = threading.Thread(target=_background,
                                  args=(backend, config_module.current().cache_dir),
                                  daemon=True, name=f"asp-calibrate-{backend}")
        _THREADS.append(thread)
    thread.start()


def _stop_background() -> None:
    """At exit: stop a device calibration under way and wait for it to leave the driver.
    A process that ended with the thread inside the OpenCL driver (PoCL) aborted in the
    driver's teardown ("terminate called without an active exception")."""
    from . import device_probes

    device_probes.STOP.set()
    for thread in _THREADS:
        thread.join(timeout=STOP_WAIT_S)


#: How long the process's exit waits for a device calibration to stop (seconds).
STOP_WAIT_S = 30.0


def _background(backend: str, cache_dir) -> None:
    from . import calibrate as cpu
    from . import device_probes
    from .machine import machine

    cpu.BACKGROUND.join()   # after the CPU's first calibration, if one runs
    try:
        measured = device_probes.measure(backend, machine(), True)
        found = calibration.load(record_name(backend), FORMAT, DeviceParams.from_json,
                                 cache_dir=cache_dir)
        if found is not None:   # stored meanwhile (``calibrate``, another process): kept
            log.info("a %s device calibration stored while the background one measured is "
                     "kept: %s", backend, found.describe())
            clear_cache()
            return
        record = store(measured, cache_dir)
        log.info("calibrated the %s device in the background: %s", backend,
                 record.describe())
    except (AspError, OSError, ValueError, RuntimeError) as exc:
        log.info("no %s device calibration (%s: %s); the cost model does not offer it",
                 backend, type(exc).__name__, exc)


def status(backend: str) -> str:
    """How the cost model stands with ``backend``'s device, in words."""
    if not importable(backend):
        return f"not offered: {PACKAGES[backend]} is not installed"
    record = stored_record(backend)
    if record is None:
        return ("not offered: not calibrated (python -m specializers.loopnest calibrate)"
                if not _STARTED & {backend} else "not offered yet: calibrating")
    p = record.params
    return (f"{p.device}: calibrated on {record.date}; {p.lanes:.0f} lanes, a lane "
            f"{p.lane_scale:.1f}x serial C, launch {p.launch_ns / 1e3:.1f} us, "
            f"lambda_X {p.lambda_x:.0f}, {p.bandwidth / 1e9:.1f} GB/s, copies "
            f"{p.upload_bw / 1e9:.1f}/{p.download_bw / 1e9:.1f} GB/s (arrays of "
            f"{FRESH_BYTES >> 20} MiB and more: {(p.upload_fresh_bw or p.upload_bw) / 1e9:.1f}/"
            f"{(p.download_fresh_bw or p.download_bw) / 1e9:.1f})")
