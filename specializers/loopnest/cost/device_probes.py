"""Calibration of a device (``cost.device.DeviceParams``), measured for real through the
specializer's own device variants (``probe_kernels``: ``DeviceChain``, ``DeviceWide``,
``DeviceSweeps``, forced onto the device, strict), as the ALPyNA cost model profiles its GPU
once per machine (its section 3.4):

* ``lane_scale``: ``DeviceChain`` (one work item) against the same nest as serial C
  (``simple_ns``), each timed at two sizes so that the fixed costs cancel;
* ``lanes``: ``DeviceWide`` with one work item, then the same work spread over more and more:
  the work items the device runs at once (equation 6's ``u v w``); ``units``: where work items
  diverge, a CPU device's compute units; a CUDA GPU's lanes and lane scale are its attributes'
  instead (``_from_attributes``: the probes cannot see them);
* ``launch_ns``: ``DeviceSweeps`` on one element, ``steps`` pairs of launches against none;
  ``bandwidth``: the same on arrays of 2**23 elements, more steps against two until they show
  (``_streamed``; ``cache_bandwidth``: on arrays that fit a quarter of the device's cache);
  ``call_ns``: a call with no launch (in runs of calls in a row), less the dispatcher's own
  cost and its array copies;
* copies as a call makes them (``_transfers``): ``transfer_ns``, copies of 8 bytes, nine
  against one, read back together; ``upload_bw``, arrays of 2**20 elements uploaded (and
  ``upload_fresh_bw``, of 2**22: ``device.FRESH_BYTES``);
  ``download_bw``, three of them read back together against one, each straight into a host
  array in use, as a call reads arrays of ``device_variants.DIRECT_BYTES`` and more into the
  caller's;
* ``build_s``: building ``DeviceWide``'s program once more, under a new name; ``init_s``: the
  device's first build in a new process beyond a later one (``first_use``: the driver, a
  context, the device code generation's modules and templates), as serial C's is measured; a
  quick calibration measures the driver and context only (``_init``).

Times are the best of a few runs (``timing.best_per_unit``). ``measure(backend)`` raises
``BackendUnavailable`` where the backend has no device here.
"""

from __future__ import annotations

import importlib
import math
import threading
import time
from dataclasses import dataclass

import numpy as np

from . import first_use
from .device import FRESH_BYTES, DeviceParams
from .machine import MachineParams
from .probe_kernels import DeviceChain, DeviceSweeps, DeviceWide
from .timing import best_per_unit, median_of

#: Elements of the arrays the device's bandwidth is measured on (64 MiB: beyond the caches of
#: most machines), and of those its copies are: 8 MiB, and 32 MiB (``device.FRESH_BYTES``:
#: arrays the allocator maps anew for each copy; on PoCL here 4 to 7 GB/s against 2.3).
LARGE = 1 << 23
COPIED = 1 << 20
FRESH = FRESH_BYTES // 8
#: Calls before the timed ones (the allocators of the host and the driver settle).
WARMUP = 3
#: Calls in a row of each timing of a call with no launch (``call_ns``). Its first call after
#: the other probes' large arrays took 600 to 800 us on PoCL here, the next ones 65 to 190
#: (its threads asleep, the caches holding other data): timed one call at a time after them,
#: ``call_ns`` read 133 to 475 us where a warm call of vadd on 16 elements takes 95 to 125.
#: A warm call in a program's loop follows calls of the same kernel, as the later ones here.
NONE_CALLS = 10
#: The most work items a compute unit can run at once: a CPU core's SIMD lanes (16 floats
#: of AVX-512) times a few for hyperthreads and interleaving; a GPU multiprocessor's resident
#: threads (2048 on NVIDIA's recent ones). A measured figure above it is noise.
LANES_PER_UNIT = {"cpu": 64, "gpu": 2048}


#: Rounds of the measurements in a full calibration (lanes, a lane's speed, the launch,
#: bandwidths and copies), of which the median is kept: three single rounds on PoCL here gave
#: a lane 2.3, 4.1 and 2.5 times serial C's time and 2, 3 and 5 lanes (at 4.1, OpenCL on gemm
#: at 512 was priced 9.3 times its time).
ROUNDS = 3


def median_round(measure_once, rounds: int) -> tuple:
    """Of ``rounds`` results (tuples) of ``measure_once()``, the median by the first value
    (kept whole: ``_lane_scale``'s pair comes from one round)."""
    found = sorted((measure_once() for _ in range(max(1, rounds))), key=lambda r: r[0])
    return found[len(found) // 2]


def measure(backend: str, m: MachineParams, quick: bool = False) -> DeviceParams:
    repeats = 3 if quick else 5
    init_s = first_use.measure(backend) if not quick else None
    if init_s is None:
        init_s = _init(backend)
    facts = _facts(backend)

    def timed(cases: dict) -> dict[str, float]:
        """Per case ``name: (kernel, args[, calls])``, the best time of a call, from runs of
        ``calls`` calls (1 unless given) taken in turns with the other cases'."""
        return best_per_unit({k: (_calls(*v[:2]), v[2] if len(v) > 2 else 1)
                              for k, v in cases.items()}, repeats)

    rounds = 1 if quick else ROUNDS
    lane_scale, simple_ns = median_round(lambda: _lane_scale(backend, m, timed), rounds)
    per_unit = LANES_PER_UNIT["cpu" if facts.cpu else "gpu"]
    lanes = float(np.median([
        _lanes(backend, timed, target=0.002 if quick else 0.005,
               limit=facts.compute_units * per_unit if facts.compute_units else math.inf)
        for _ in range(rounds)]))
    sweeps = median_of([_sweeps(backend, timed, facts.cache_bytes,
                                     count=200 if quick else 1000) for _ in range(rounds)])
    copies = median_of([_transfers(backend, repeats) for _ in range(rounds)])
    transfer_ns = copies["transfer_ns"]
    # a call with no launch: the dispatcher, four copies (y and x up and back), the rest
    call_ns = max(0.0, sweeps["none_s"] * 1e9 - m.dispatch_ns - 4 * transfer_ns)
    derived = _from_attributes(backend)
    if derived is not None:   # a GPU's lanes and a lane's throughput: see the function
        lanes, lane_scale = derived.lanes, derived.lane_scale
    bandwidth = sweeps["bandwidth"] or (derived.bandwidth if derived else m.bandwidth)
    return DeviceParams(
        backend=backend, device=facts.name, lanes=lanes,
        units=min(lanes, facts.compute_units if facts.cpu else lanes),
        lane_scale=lane_scale, bandwidth=bandwidth,
        cache_bytes=float(facts.cache_bytes),
        cache_bandwidth=max(bandwidth, sweeps["cache_bandwidth"] or 0.0),
        launch_ns=sweeps["launch_ns"], call_ns=call_ns, upload_bw=copies["upload_bw"],
        download_bw=copies["download_bw"], transfer_ns=transfer_ns,
        upload_fresh_bw=copies["upload_fresh_bw"], download_fresh_bw=copies["download_fresh_bw"],
        build_s=_build_seconds(backend), init_s=init_s, simple_ns=simple_ns,
        host_memory=facts.cpu, source=f"{'quick' if quick else 'full'} calibration of "
                                       f"{facts.name}")


def _from_attributes(backend: str) -> DeviceParams | None:
    """A CUDA GPU's parameters from its attributes (``device.cuda_params``), whose lanes
    (equation 6: SMs x warp schedulers x warp size) and lane scale (equation 12: a lane
    retires one instruction a cycle) the calibration takes over its probes'; None for other
    devices. The probes cannot see a GPU's: ``_lanes`` measures work items at once only up to
    what a call's fixed cost (its copies, its launch) lets a spread run show, and read 139 and
    453 lanes in two quick calibrations of an H100, which runs 16,896 threads' instructions a
    cycle; ``_lane_scale``'s chain measures a lane's latency (23.6 times serial C there), which
    a GPU hides behind its other warps. Priced with them, gemm's CUDA call at n = 1024 was
    predicted at 782 ms for 9.4 measured, mandelbrot's at 44 ms for 2.7."""
    if backend != "cuda":
        return None
    from asp_core.backends import cuda

    from .device import cuda_params

    return cuda_params(cuda.device_attributes(), cuda.device_architecture())


def _lane_scale(backend: str, m: MachineParams, timed) -> tuple[float, float]:
    """(a work item's time over serial C's for the same statements, serial C's measured ns
    an instance): ``DeviceChain`` on the device and as serial C at two sizes (the fixed costs
    cancel). Both run the chain at the latency of its dependence; their ratio is a lane's
    speed against a core's, which the device model applies to the serial C model's costs
    (throughputs). (Divided by the model's cost of the chain instead, the ratio took in the
    chain's latency too, 4.6 times the model's throughput here: it priced the device
    variants' compute 5 to 13 times what gemm, conv2d and fbcorr take on PoCL.)"""
    small, big = 1 << 10, 1 << 19
    chain = {(kind, n): (DeviceChain(backend=kind, strict=True),
                         (np.ones(n), np.full(n, 1e-3), 0.5))
             for kind in (backend, "c") for n in (small, big)}
    t = timed(chain)
    lane = max(t[(backend, big)] - t[(backend, small)], 1e-9) / (big - small) * 1e9
    simple_ns = max(t[("c", big)] - t[("c", small)], 1e-9) / (big - small) * 1e9
    return lane / simple_ns, simple_ns


def _lanes(backend: str, timed, target: float, limit: float = math.inf) -> float:
    """The work items the device runs at once: ``DeviceWide`` with one work item busy for
    ``target`` seconds beyond the call's fixed cost, then the same work spread over more and
    more work items (a device may run one work-group per compute unit, so the few items of a
    small grid share one): the best ratio seen, at most ``limit`` (``LANES_PER_UNIT``)."""
    def wide(items: int, steps: int) -> float:
        return timed({0: (DeviceWide(backend=backend, strict=True),
                          (np.ones(items), 0.999, steps))})[0]

    base = wide(1, 0)
    steps = 1 << 14
    while True:
        work = wide(1, steps) - base   # seconds of one work item's ``steps`` steps
        if work >= target or steps >= 1 << 30:
            break
        steps *= 2 if work <= 0 else max(2, int(1.5 * target / work))
    work = max(work, 1e-9)
    lanes, items = 1.0, 2
    while items <= (1 << 20) and steps * 2 // items >= 1:
        spread = max(1, steps * 2 // items)
        seconds = wide(items, spread) - base
        if seconds > 0:   # (else lost in the noise of the call's fixed cost: no answer)
            # ``items`` work items run ``items`` at once at most: a ratio beyond that is
            # noise too (a calibration once stored 10 million lanes for two CPU cores)
            lanes = max(lanes, min(items, items * spread / steps * work / seconds))
        items *= 2
    return min(lanes, limit)


def _sweeps(backend: str, timed, cache_bytes: int, count: int) -> dict[str, float]:
    """From ``DeviceSweeps``: a launch (``count`` pairs of launches on one element against
    none), the device's bandwidth (arrays of ``LARGE`` elements; ``cache_bandwidth``: arrays in
    a quarter of its cache) and the time of a call with no launch (``none_s``)."""
    sweeps = DeviceSweeps(backend=backend, strict=True)
    fits = int(max(64, min(cache_bytes / 8 / 8, 1 << 16)))   # two arrays in a quarter of it
    x_small, x_large, x_fits = np.ones(3), np.ones(LARGE), np.ones(fits)
    t = timed({"none": (sweeps, (np.ones(3), x_small, 0), NONE_CALLS),
               # (in runs as the call without launches is, so that a run's first call's
               # wait, which the difference is to cancel, is the same share of both)
               "launches": (sweeps, (np.ones(3), x_small, count), NONE_CALLS)})
    def swept(x: np.ndarray):
        """``_streamed``'s run: a call of ``steps`` steps over arrays like ``x``."""
        return lambda steps: timed({0: (sweeps, (np.ones(x.size), x, steps))})[0]

    # a step reads x and writes y, then reads y and writes x: 32 bytes an element (two steps
    # against more: the first touches of new buffers, in the first step, cancel)
    return {"none_s": t["none"],
            "launch_ns": max(t["launches"] - t["none"], 0.0) / (2 * count) * 1e9,
            "bandwidth": _streamed(swept(x_large), 32 * LARGE),
            "cache_bandwidth": _streamed(swept(x_fits), 32 * fits, base=10)}


#: ``_streamed``'s most steps beyond its first run's: a GPU's step over two arrays of
#: ``LARGE`` elements takes 40 us or so, beside a call's copies of them, 30 ms.
MOST_STEPS = 4096


def _streamed(run, step_bytes: float, base: int = 2) -> float | None:
    """Bytes per second of sweeps that move ``step_bytes`` a step: ``run(steps)``'s
    seconds for ``base`` steps against more, the more growing eightfold until they take a
    quarter of the ``base`` run beyond it (a GPU's few steps were lost in the noise of the
    call's copies, and a calibration on an H100 stored 2.7e17 bytes per second, the floor of
    the difference); None where no difference shows."""
    extra, first = 2, run(base)
    while True:
        seconds = run(base + extra) - first
        if seconds >= 0.25 * first or extra >= MOST_STEPS:
            break
        extra *= 8
    return step_bytes * extra / seconds if seconds > 0 else None


def _transfers(backend: str, repeats: int) -> dict[str, float]:
    """A copy's fixed cost (``transfer_ns``, either way) and the bandwidths of uploads and
    downloads, measured on the operations a call makes (``_copies``): arrays uploaded one by
    one, then read back together (on OpenCL with one wait for all) into the caller's
    arrays. The wait, once per call, cancels (nine copies against one, three reads
    against one): it is part of ``call_ns``. Each copy timed on its own, a download waited for
    the driver's queue to wake each time: 17 to 34 us per copy on PoCL here, more than a whole
    call's four copies cost. Timed in runs of a few, on arrays of ``COPIED`` elements (taken
    from a call that copied two arrays both ways after the other probes' large arrays, the
    bandwidth read 1.9 to 4 GB/s in calibrations, where a call of vadd on arrays of 16 MiB
    moved its bytes at 5 to 7)."""
    upload, read_into = _copies(backend)
    one = np.ones(1)

    def copies(count: int):   # small arrays: read with the error word, into new arrays
        def run(n: int) -> None:
            for _ in range(n):
                made = [upload(one) for _ in range(count)]
                read_into([(b, np.empty(1)) for b in made])
        return run

    def uploads(bigs: list):   # three arrays, their buffers kept until the last is made
        def run(n: int) -> None:
            for _ in range(n):
                [upload(big) for big in bigs]   # noqa: B018 (the list holds them)
        return run

    def downloads(buffers: list, hosts: list, count: int):   # straight into the callers'
        def run(n: int) -> None:
            for _ in range(n):
                read_into(list(zip(buffers[:count], hosts[:count])))
        return run

    cases = {"one": (copies(1), 20), "nine": (copies(9), 20)}
    for name, elements in (("", COPIED), ("fresh", FRESH)):
        bigs = [np.ones(elements) for _ in range(3)]
        buffers = [upload(big) for big in bigs]
        hosts = [np.zeros_like(big) for big in bigs]
        cases.update({f"up{name}": (uploads(bigs), 1),
                      f"down1{name}": (downloads(buffers, hosts, 1), 3),
                      f"down3{name}": (downloads(buffers, hosts, 3), 3)})
    t = best_per_unit(cases, repeats)
    transfer_ns = max(t["nine"] - t["one"], 0.0) / 16 * 1e9
    out = {"transfer_ns": transfer_ns}
    for name, elements in (("", COPIED), ("fresh", FRESH)):
        size = 8 * elements
        suffix = f"_{name}" if name else ""
        out[f"upload{suffix}_bw"] = size / max(t[f"up{name}"] / 3 - transfer_ns * 1e-9, 1e-9)
        out[f"download{suffix}_bw"] = size / max(
            (t[f"down3{name}"] - t[f"down1{name}"]) / 2 - transfer_ns * 1e-9, 1e-9)
    return out


@dataclass(frozen=True)
class _Facts:
    """What the driver says of the device."""

    name: str
    cpu: bool              # a CPU device: it computes in the host's memory, and vectorizes
                           # work items only where they do not diverge
    compute_units: float
    cache_bytes: int


def _facts(backend: str) -> _Facts:
    if backend == "opencl":
        from asp_core.backends import opencl

        info = opencl.device()
        return _Facts(info.name, info.kind == "CPU", float(info.compute_units),
                      info.cache or (1 << 20))
    from asp_core.backends import cuda

    return _Facts(cuda.device_architecture(), False, 0.0, cuda.l2_cache_bytes())


#: Set to stop a calibration under way (at the process's exit: ``device_calibrate``); the
#: probes then raise ``Cancelled`` between two calls of the device.
STOP = threading.Event()


class Cancelled(RuntimeError):
    """A device calibration stopped before it measured everything (``STOP``)."""


def _calls(kernel, args: tuple):
    """``run(count)`` calling ``kernel`` on fresh copies of ``args``' arrays (made first)."""
    for _ in range(WARMUP):   # analysed, built, its first use paid
        _stop_if_asked()
        kernel.kernel(*_fresh(args))

    def run(count: int) -> None:
        for _ in range(count):
            _stop_if_asked()
            kernel.kernel(*args)
    return run


def _stop_if_asked() -> None:
    if STOP.is_set():
        raise Cancelled("the device calibration was stopped (the process is ending)")


def _fresh(args: tuple) -> tuple:
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _init(backend: str) -> float:
    """Seconds of the device's first use in a process (importing its package, finding the
    device, making the context): here where this is it, else in a new process (a calibration
    in a process that had used the device once took a guess of half a second, 0.12 s
    measured here on PoCL, and the model never offered OpenCL to a first call although PoCL
    builds faster than the C compiler; else ``INIT_GUESS_S``)."""
    module = importlib.import_module(f"asp_core.backends.{backend}")
    if module.initialized():
        return _init_in_new_process(backend)
    started = time.perf_counter()
    getattr(module, _SET_UP[backend])()
    return time.perf_counter() - started


#: The call that sets a device up, per backend module.
_SET_UP = {"opencl": "device", "cuda": "cuda_context"}
#: A device's first use in a process where it cannot be measured (seconds).
INIT_GUESS_S = 0.5
_FIRST_USE = """
import time
started = time.perf_counter()
from asp_core.backends import {backend} as backend
backend.{call}()
print(time.perf_counter() - started)
"""


def _init_in_new_process(backend: str) -> float:
    """``_init`` measured in a new Python process (the best of two), or ``INIT_GUESS_S``."""
    seconds = first_use.best_in_new_processes(
        _FIRST_USE.format(backend=backend, call=_SET_UP[backend]), timeout=120)
    return INIT_GUESS_S if seconds is None else seconds


def _copies(backend: str):
    """(upload of one array, reads of (buffer, host array) pairs into the host arrays) as a
    device variant's call makes them (``device_variants``)."""
    if backend == "opencl":
        from asp_core.backends import opencl

        return opencl.to_device, opencl.read_into
    from asp_core.backends import cuda

    return cuda.to_device, cuda.read_into


def _build_seconds(backend: str) -> float:
    """Generating ``DeviceWide``'s program under a name never built before, building it and
    running it once (a driver may compile a kernel at its first launch, as PoCL does)."""
    import dataclasses

    from ..codegen.device import device_module
    from ..device_variants import DeviceVariant
    from ..typeinfer import infer_types

    kernel = DeviceWide(backend="python", strict=True)
    inputs = (np.ones(4), 0.5, 2)
    kernel.kernel(*_fresh(inputs))
    runner = kernel._asp_current.runners[0]
    types, _ = runner.signature(runner.last_inputs)
    plan = runner.last_plan
    started = time.perf_counter()
    module = device_module("cuda" if backend == "cuda" else "opencl", runner.analysis, plan,
                           infer_types(runner.analysis, types), types, "calibration")
    module = dataclasses.replace(
        module, source=f"/* build-time probe {time.time_ns()} */\n{module.source}")
    DeviceVariant(backend, module, runner.analysis, lambda: plan, raise_beyond=True)(*inputs)
    return time.perf_counter() - started
