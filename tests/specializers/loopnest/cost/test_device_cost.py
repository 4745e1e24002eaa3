"""The device variants' cost terms (``cost.device``), their calibration (``cost.device_probes``,
``cost.device_calibrate``) and how the cost model offers them."""

import dataclasses
import json
import math

import numpy as np
import pytest

from specializers.loopnest import LoopKernel
from specializers.loopnest.cost import device_calibrate
from specializers.loopnest.cost.device import (
    DeviceParams, DeviceProfile, KernelLoad, cuda_params, device_cost)
from specializers.loopnest.cost.machine import DEFAULTS
from specializers.loopnest.cost.probe_kernels import DeviceSweeps as Sweeps  # a host loop
from tests.specializers.loopnest.test_device import needs_opencl

DEVICE = DeviceParams(
    backend="opencl", device="test device", lanes=64.0, units=4.0, lane_scale=2.0,
    bandwidth=1e10, cache_bytes=1e6, cache_bandwidth=4e10, launch_ns=5000.0, call_ns=1e5,
    upload_bw=1e9, download_bw=2e9, transfer_ns=1e4, build_s=0.1, init_s=0.2, simple_ns=1.0)


class Map(LoopKernel):
    def kernel(self, y, x):
        for i in range(x.shape[0]):
            y[i] = x[i] * 2.0 + 1.0


class Sum(LoopKernel):
    def kernel(self, x):
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i]
        return s


class Chain(LoopKernel):
    def kernel(self, y, x):
        for i in range(1, x.shape[0]):
            y[i] = y[i - 1] * 0.5 + x[i]


class LU(LoopKernel):
    """A host loop whose grids shrink with it."""

    def kernel(self, a):
        n = a.shape[0]
        for k in range(n):
            for i in range(k + 1, n):
                a[i, k] = a[i, k] / a[k, k]
            for i in range(k + 1, n):
                for j in range(k + 1, n):
                    a[i, j] -= a[i, k] * a[k, j]


def profile_of(kernel, *args):
    """The device profile of the kernel's one nest for this call (run as Python first)."""
    kernel.kernel(*args)
    runner = kernel._asp_current.runners[0]
    signature = runner.signature(runner.last_inputs)
    return runner._device_profile_of(signature, runner.estimator.profile(signature))


def test_a_grid_kernel_runs_one_work_item_per_iteration():
    p = profile_of(Map(backend="python"), np.zeros(1000), np.ones(1000))
    (k,) = p.kernels
    assert (k.launches, k.threads, k.single) == (1, 1000.0, False)
    assert k.compute_ns > 0 and k.bytes > 0 and k.guarded_ns == 0
    # x goes up, y (overwritten whole: ``coverage``) is allocated there, and comes back
    assert (p.uploaded, p.downloaded, p.copies) == (8000, 8000, 2)


def test_arrays_the_allocator_maps_anew_are_copied_at_their_own_bandwidth(monkeypatch):
    """Arrays of ``FRESH_BYTES`` and more (pages faulted in at each copy) move at the
    calibrated ``upload_fresh_bw`` / ``download_fresh_bw``, the others at the usual figures;
    a record without them prices all at the usual ones."""
    from specializers.loopnest.cost import device

    monkeypatch.setattr(device, "FRESH_BYTES", 8000)   # x (8000 bytes) and y: both fresh
    p = profile_of(Map(backend="python"), np.zeros(1000), np.ones(1000))
    assert (p.fresh_uploaded, p.fresh_downloaded) == (8000, 8000)   # (y: not copied in)
    monkeypatch.setattr(device, "FRESH_BYTES", 8001)   # neither
    q = profile_of(Map(backend="python"), np.zeros(1000), np.ones(1000))
    assert (q.fresh_uploaded, q.fresh_downloaded) == (0, 0)
    fresh = dataclasses.replace(DEVICE, upload_fresh_bw=0.5e9, download_fresh_bw=0.25e9)
    assert fresh.transfer_s(p) == pytest.approx(8000 / 0.5e9 + 8000 / 0.25e9)
    assert fresh.transfer_s(q) == DEVICE.transfer_s(p) == pytest.approx(8000 / 1e9 + 8000 / 2e9)
    assert device_cost(p, fresh)[1]["transfers"] == pytest.approx(
        fresh.transfer_s(p) + 2 * DEVICE.transfer_ns * 1e-9)


def test_a_reduction_runs_on_lanes_then_one_combining_work_item():
    p = profile_of(Sum(backend="python"), np.ones(10000))
    lanes, combine = p.kernels
    assert (lanes.threads, lanes.single) == (4096.0, False)
    assert (combine.threads, combine.single) == (1.0, True)
    small, small_combine = profile_of(Sum(backend="python"), np.ones(100)).kernels
    assert small.threads == 128.0   # one work-group, lanes past the trip count idle
    assert p.downloaded == 0   # nothing written
    # the combine passes over the work-groups' results (32 and 1), not over the lanes
    assert combine.compute_ns == pytest.approx(32 * small_combine.compute_ns)
    # each lane's log2(128) tree steps: the same for any trip count within one work-group
    tiny = profile_of(Sum(backend="python"), np.ones(1)).kernels[0]
    step = small_combine.compute_ns   # one work-group's result combined: one step
    assert step > 0 and tiny.compute_ns > 128 * 7 * step
    assert small.compute_ns - tiny.compute_ns < 128 * 7 * step


def test_a_carried_loop_runs_on_one_work_item():
    (k,) = profile_of(Chain(backend="python"), np.zeros(500), np.ones(500)).kernels
    assert k.single and k.launches == 1


@pytest.mark.parametrize("n, steps", [(10, 0), (10, 7), (1000, 3)])
def test_host_loops_launch_their_kernels_once_per_iteration(n, steps):
    p = profile_of(Sweeps(backend="python"), np.zeros(n), np.ones(n), steps)
    if steps:
        assert [(k.launches, k.threads) for k in p.kernels] == [(steps, n - 2.0)] * 2
    else:   # no launch at all
        assert all(k.launches * k.threads == 0 for k in p.kernels)
        assert device_cost(p, DEVICE)[1]["launches"] == 0


def test_a_triangular_host_loop_counts_its_work_items_exactly():
    n = 50
    column, rest = profile_of(LU(backend="python"), np.ones((n, n)) + np.eye(n) * n).kernels
    assert column.launches == rest.launches == n
    assert column.threads * n == pytest.approx(n * (n - 1) / 2)   # sum of n - 1 - k
    assert rest.threads * n == pytest.approx((n - 1) * n * (2 * n - 1) / 6)   # of its square


def test_a_single_launch_costs_a_launch_plus_its_run():
    k = KernelLoad(1, 6400.0, compute_ns=6400 * 10.0, guarded_ns=0.0, bytes=0.0)
    seconds, terms = device_cost(DeviceProfile((k,), 0.0, 0.0, 0, 0.0), DEVICE)
    run = 6400 / 64 * 10.0 * 2.0   # waves of 64 lanes, 10 ns a work item, lane scale 2
    assert terms["launches"] == pytest.approx(5000e-9)
    assert terms["compute"] == pytest.approx(run * 1e-9)
    assert seconds == pytest.approx((5000 + run + 1e5) * 1e-9)


def test_diverging_statements_run_on_the_units_not_the_lanes():
    k = KernelLoad(1, 6400.0, compute_ns=6400 * 10.0, guarded_ns=6400 * 10.0, bytes=0.0)
    _, terms = device_cost(DeviceProfile((k,), 0.0, 0.0, 0, 0.0), DEVICE)
    assert terms["compute"] == pytest.approx(6400 / 4 * 10.0 * 2.0 * 1e-9)


@pytest.mark.parametrize("work_ns, bound", [(1.0, "launch"), (1e6, "run")])
def test_a_host_loop_costs_the_larger_of_a_launch_and_a_run_per_iteration(work_ns, bound):
    k = KernelLoad(100, 64.0, compute_ns=100 * 64 * work_ns, guarded_ns=0.0, bytes=0.0)
    seconds, terms = device_cost(DeviceProfile((k,), 0.0, 0.0, 0, 0.0), DEVICE)
    run = work_ns * 2.0
    expected = 100 * (5000.0 if bound == "launch" else run)
    assert seconds - DEVICE.call_ns * 1e-9 == pytest.approx(expected * 1e-9)
    assert sum(terms.values()) == pytest.approx(seconds)
    assert terms["host-device overlap"] < 0


def test_transfers_and_the_memory_roofline():
    k = KernelLoad(1, 1.0e6, compute_ns=1.0, guarded_ns=0.0, bytes=8e6)
    big = DeviceProfile((k,), 2e6, 1e6, 3, footprint=2e6)
    _, terms = device_cost(big, DEVICE)
    assert terms["transfers"] == pytest.approx(2e6 / 1e9 + 1e6 / 2e9 + 3 * 1e4 * 1e-9)
    assert terms["memory"] == pytest.approx(8e6 / 1e10)      # beyond the cache
    small = dataclasses.replace(big, footprint=1e5)
    assert device_cost(small, DEVICE)[1]["memory"] == pytest.approx(8e6 / 4e10)


def test_a_cpu_device_moves_its_bytes_at_the_hosts_bandwidth():
    k = KernelLoad(1, 1.0e6, compute_ns=1.0, guarded_ns=0.0, bytes=8e7)
    big = DeviceProfile((k,), 0.0, 0.0, 0, footprint=1e12)
    cpu = dataclasses.replace(DEVICE, host_memory=True, units=2.0)
    _, terms = device_cost(big, cpu, DEFAULTS)
    assert terms["memory"] == pytest.approx(8e7 / DEFAULTS.bandwidth[2])


def test_a_cpu_device_is_never_priced_below_the_cpu_variants(device_store):
    fast = dataclasses.replace(DEVICE, host_memory=True, lanes=1e6, units=1e6,
                               lane_scale=1e-6, launch_ns=0.0, bandwidth=1e15,
                               cache_bandwidth=1e15)
    device_calibrate.store(fast)
    found = labels(Map(strict=True), np.zeros(50_000), np.ones(50_000))
    cpu = min(found[label].seconds for label in found if label == "c" or
              label.startswith("openmp"))
    assert found["opencl"].seconds >= cpu + found["opencl"].terms["transfers"]
    assert found["opencl"].terms["no faster than the CPU variants"] > 0


def test_a_cpu_device_borrows_the_cpu_variants_correction_until_measured(device_store):
    """A CPU device (PoCL) shares the cores, and their load, with OpenMP and serial C: until
    it is measured it borrows their correction (``Estimate.kin``), so a load that made them
    slower than predicted does not make it look the fastest. A GPU borrows nothing."""
    from asp_core.selection import KIN_LIMIT, Selector

    cpu = dataclasses.replace(DEVICE, host_memory=True, units=2.0)
    device_calibrate.store(cpu)
    found = labels(Map(strict=True), np.zeros(50_000), np.ones(50_000))
    team = [label for label in found if label.startswith("openmp@")]
    assert found["opencl"].kin == tuple(team[-1:]) + ("c",)
    selector = Selector()
    for label in team + ["c"]:   # three times slower than predicted, as beside two spinners
        for _ in range(4):
            selector.observe(found[label], 3 * found[label].seconds)
    assert selector.corrected(found["opencl"]) == pytest.approx(
        min(3, KIN_LIMIT) * found["opencl"].seconds)
    assert selector.choose(list(found.values())).label != "opencl"
    device_calibrate.store(dataclasses.replace(DEVICE, host_memory=False))
    device_calibrate.clear_cache()
    assert labels(Map(strict=True), np.zeros(50_000), np.ones(50_000))["opencl"].kin == ()


def test_parameters_round_trip_and_reject_nonsense():
    assert DeviceParams.from_json(json.loads(json.dumps(DEVICE.to_json()))) == DEVICE
    for bad in ({"lanes": 0.5}, {"bandwidth": -1.0}, {"launch_ns": math.nan},
                {"device": 3}, {"host_memory": 1}, {"lanes": 10314028.0}):
        with pytest.raises(ValueError):
            DeviceParams.from_json({**DEVICE.to_json(), **bad})
    with pytest.raises(ValueError):
        DeviceParams.from_json({**DEVICE.to_json(), "extra": 1})
    assert DEVICE.lambda_x == pytest.approx(5000.0 / (1.0 * 2.0 / 64.0))


def test_the_lanes_probe_takes_no_noise_for_speed():
    """A spread run timed at or below the fixed cost of a call (noise) says nothing; no run
    says more than its work items can run at once, and the device's limit caps the rest (the
    quick calibration once stored 10 million lanes for PoCL's two CPU cores)."""
    from specializers.loopnest.cost import device_probes

    base, per_step, lanes_true = 1e-3, 1e-9, 2

    def timed_with(noise):
        def timed(cases):
            ((_, (_, args)),) = cases.items()
            items, _, steps = args
            items = len(items)
            if steps == 0:
                return {0: base}
            if items in noise:
                return {0: base + noise[items]}
            return {0: base + items * steps * per_step / min(items, lanes_true)}
        return timed

    below = timed_with({8: -1e-7})            # faster than no work at all
    assert device_probes._lanes("opencl", below, target=0.002) == pytest.approx(lanes_true)
    sliver = timed_with({16: 1e-12})          # a sliver above it: at most 16 lanes...
    assert device_probes._lanes("opencl", sliver, target=0.002) == 16
    assert device_probes._lanes("opencl", sliver, target=0.002, limit=4.0) == 4.0  # ...or 4


def test_copies_are_measured_as_a_call_makes_them(monkeypatch):
    """A call uploads its arrays one by one and reads them back together, waiting once: on a
    driver (a clock of the test's own) whose wait costs 65 us, an upload 3 us and 4 GB/s, a
    read 1 us and 2 GB/s, a copy's fixed cost is 2 us either way, the wait being the call's own
    (``call_ns``), and the bandwidths are the driver's. Timed one at a time, each download
    waited: 34.5 us a copy, more than a whole call's copies cost."""
    from specializers.loopnest.cost import device_probes

    clock = [0.0]

    def upload(array):
        clock[0] += 3e-6 + array.nbytes / 4e9
        return array.nbytes

    def download_many(pairs):
        clock[0] += 65e-6 + sum(1e-6 + size / 2e9 for size, _ in pairs)
        return [like for _, like in pairs]

    def best_per_unit(cases, repeats):
        best = {}
        for name, (run, count) in cases.items():
            start = clock[0]
            run(count)
            best[name] = (clock[0] - start) / count
        return best

    monkeypatch.setattr(device_probes, "_copies", lambda backend: (upload, download_many))
    monkeypatch.setattr(device_probes, "best_per_unit", best_per_unit)
    copies = device_probes._transfers("opencl", 3)
    assert copies["transfer_ns"] == pytest.approx(2000.0, rel=1e-2)
    assert copies["upload_bw"] == pytest.approx(4e9, rel=1e-2)
    assert copies["download_bw"] == pytest.approx(2e9, rel=1e-2)


def test_a_call_without_launches_is_timed_among_calls_in_a_row():
    """The fixed cost of a call (``call_ns``) comes from runs of ``NONE_CALLS`` calls in a
    row: the first call after the probes' large arrays (PoCL's threads asleep, the caches
    holding other data) took 600 to 800 us here, the later ones 65 to 190. A launch's cost,
    the difference of calls with launches and without, from runs of as many calls."""
    from specializers.loopnest.cost import device_probes

    seen = {}

    def timed(cases):
        seen.update(cases)
        return {name: 1e-3 for name in cases}

    device_probes._sweeps("opencl", timed, 1 << 20, count=10)
    assert device_probes.NONE_CALLS >= 10
    assert seen["none"][2:] == seen["launches"][2:] == (device_probes.NONE_CALLS,)
    assert all(len(case) == 2 for name, case in seen.items()
               if name not in ("none", "launches"))


def test_cuda_parameters_from_the_device_attributes():
    h100 = {"MULTIPROCESSOR_COUNT": 132, "WARP_SIZE": 32, "COMPUTE_CAPABILITY_MAJOR": 9,
            "CLOCK_RATE": 1_980_000, "MEMORY_CLOCK_RATE": 2_619_000,
            "GLOBAL_MEMORY_BUS_WIDTH": 5120, "L2_CACHE_SIZE": 50 << 20}
    p = cuda_params(h100, "NVIDIA H100")
    p.validate()
    assert p.lanes == p.units == 132 * 4 * 32
    assert 3.0e12 < p.bandwidth < 3.6e12     # HBM3: 3.35 TB/s
    assert p.cache_bytes == 50 << 20


# -- the model offers a device only once it is calibrated ---------------------------------------

@pytest.fixture
def device_store(tmp_path, monkeypatch):
    """A cache folder of the test's own, and the device records read afresh."""
    monkeypatch.setenv("ASP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ASP_OPENCL_DEVICE", raising=False)
    device_calibrate.clear_cache()
    monkeypatch.setattr(device_calibrate, "importable", lambda backend: backend == "opencl")
    # (a background calibration an earlier test of this process started, for its own cache
    # folder, is not this test's: ``status`` said "calibrating" where xdist ran one before)
    monkeypatch.setattr(device_calibrate, "_STARTED", set())
    yield
    device_calibrate.clear_cache()


def labels(kernel, *args):
    kernel.kernel(*args)
    decision = kernel._asp_current.runners[0].last_decision
    return {e.label: e for e in decision.estimates}


def test_an_uncalibrated_device_is_not_offered(device_store):
    assert device_calibrate.params("opencl") is None   # (ASP_CALIBRATE=0: nor measured)
    assert "opencl" not in labels(Map(strict=True), np.zeros(5000), np.ones(5000))
    assert "not calibrated" in device_calibrate.status("opencl")


def test_a_calibrated_device_is_offered_with_its_terms(device_store):
    device_calibrate.store(DEVICE)
    found = labels(Map(strict=True), np.zeros(5000), np.ones(5000))
    estimate = found["opencl"]
    assert estimate.build_s > 0 and {"transfers", "launches", "compute"} <= set(estimate.terms)
    assert estimate.seconds == pytest.approx(sum(estimate.terms.values()))


def test_explain_shows_the_device_prediction(device_store):
    device_calibrate.store(DEVICE)
    kernel = Map(strict=True)
    kernel.kernel(np.zeros(5000), np.ones(5000))
    text = str(kernel.explain(np.zeros(5000), np.ones(5000)))
    line = next(line for line in text.splitlines() if line.strip().startswith(("opencl",
                                                                              "-> opencl")))
    assert "transfers" in line and "launches" in line


def test_a_corrupt_device_record_is_ignored(device_store):
    record = device_calibrate.store(DEVICE)
    record.path.write_text("{ not json")
    device_calibrate.clear_cache()
    assert device_calibrate.params("opencl") is None
    record.path.write_text(json.dumps({"params": {"lanes": "many"}}))
    device_calibrate.clear_cache()
    assert device_calibrate.params("opencl") is None
    assert "opencl" not in labels(Map(strict=True), np.zeros(100), np.ones(100))


@needs_opencl
def test_a_device_the_model_prices_fastest_runs_and_is_right(device_store):
    """A (fictitious) device calibrated as free: the model picks it, and the call, on the
    real OpenCL device here, computes what the original code does."""
    free = dataclasses.replace(DEVICE, lanes=1e6, units=1e6, lane_scale=1e-6, launch_ns=0.0,
                               call_ns=0.0, upload_bw=1e15, download_bw=1e15, transfer_ns=0.0,
                               build_s=0.0, init_s=0.0, bandwidth=1e15, cache_bandwidth=1e15)
    device_calibrate.store(free)
    kernel = Map(strict=True)
    ran = set()
    for _ in range(6):
        y, x = np.zeros(200_000), np.arange(200_000.0)
        kernel.kernel(y, x)
        assert np.array_equal(y, x * 2.0 + 1.0)
        ran.add(kernel.last_call.nests[0].backend)
    assert "opencl" in ran


@needs_opencl
def test_the_calibration_measures_this_device(device_store):
    measured = device_calibrate.calibrate("opencl", quick=True)[0]
    measured.validate()
    assert measured.lanes >= 1 and measured.units >= 1 and measured.launch_ns > 0
    assert device_calibrate.params("opencl") == measured
    assert measured.device in device_calibrate.status("opencl")
    assert DEFAULTS.c_op_ns   # (the C model it is measured against)


def test_a_cpu_device_shares_the_cores_with_busy_processes_and_a_gpu_does_not():
    k = KernelLoad(1, 1.0e6, compute_ns=1.0e6, guarded_ns=0.0, bytes=8.0)
    p = DeviceProfile((k,), 0.0, 0.0, 0, footprint=8.0)
    cpu = dataclasses.replace(DEVICE, host_memory=True, units=2.0)
    idle, _ = device_cost(p, cpu, DEFAULTS, cores=2, busy=0.0)
    _, loaded = device_cost(p, cpu, DEFAULTS, cores=2, busy=2.0)
    _, quiet = device_cost(p, cpu, DEFAULTS, cores=2, busy=0.0)
    # two busy processes on two cores: half the cores for the device's two threads, as for
    # an OpenMP team of two; its launch waits for a descheduled thread
    assert loaded["compute"] == pytest.approx(2.0 * quiet["compute"])
    assert loaded["launches"] > quiet["launches"]
    gpu = dataclasses.replace(DEVICE, host_memory=False)
    assert device_cost(p, gpu, DEFAULTS, cores=2, busy=2.0) == device_cost(p, gpu, DEFAULTS)
    assert idle == device_cost(p, cpu, DEFAULTS)[0]


def test_a_background_calibration_stores_where_it_was_started(device_store, tmp_path,
                                                              monkeypatch):
    """The settings may name another cache folder by the time a background calibration ends
    (a test's own, in the suite: its record landed in a later test's folder, which then saw
    a device it had not calibrated); it stores in the folder of the call that started it."""
    import threading

    from specializers.loopnest.cost import device_probes

    release = threading.Event()

    def measure(backend, machine, quick):
        release.wait(10)
        return DEVICE

    monkeypatch.setattr(device_probes, "measure", measure)
    monkeypatch.setenv("ASP_CALIBRATE", "1")
    monkeypatch.setattr(device_calibrate, "_STARTED", set())
    monkeypatch.setattr(device_calibrate, "_THREADS", [])
    started_in = tmp_path / "cache"
    assert device_calibrate.params("opencl") is None      # starts the background calibration
    later = tmp_path / "later"
    monkeypatch.setenv("ASP_CACHE_DIR", str(later))
    release.set()
    for thread in device_calibrate._THREADS:
        thread.join(10)
    device_calibrate.clear_cache()
    assert device_calibrate.params("opencl") is None      # nothing in the later folder
    monkeypatch.setenv("ASP_CACHE_DIR", str(started_in))
    device_calibrate.clear_cache()
    assert device_calibrate.params("opencl") == DEVICE


def test_a_background_device_calibration_keeps_a_record_stored_meanwhile(device_store,
                                                                         monkeypatch):
    """A background device calibration that ends after ``calibrate`` stored the device's
    record (a full one, say) leaves that record in place."""
    import threading

    from specializers.loopnest.cost import device_probes

    release = threading.Event()

    def measure(backend, machine, quick):
        assert release.wait(10)
        return dataclasses.replace(DEVICE, source="quick")

    monkeypatch.setattr(device_probes, "measure", measure)
    monkeypatch.setenv("ASP_CALIBRATE", "1")
    monkeypatch.setattr(device_calibrate, "_STARTED", set())
    monkeypatch.setattr(device_calibrate, "_THREADS", [])
    assert device_calibrate.params("opencl") is None      # starts the background calibration
    asked = device_calibrate.store(dataclasses.replace(DEVICE, lanes=7.0, source="full"))
    release.set()
    for thread in device_calibrate._THREADS:
        thread.join(10)
    device_calibrate.clear_cache()
    record = device_calibrate.stored_record("opencl")
    assert record.created == asked.created and record.params.lanes == 7.0


@needs_opencl
def test_a_devices_first_use_is_measured_in_a_new_process_where_this_one_used_it():
    """The calibration of a process that has used the device once guessed its first use at
    half a second (0.08 s on PoCL here): the model never offered OpenCL to a first call."""
    from asp_core.backends import opencl
    from specializers.loopnest.cost import device_probes

    opencl.device()
    assert opencl.initialized()
    seconds = device_probes._init("opencl")
    assert 0.0 < seconds != device_probes.INIT_GUESS_S   # (measured: not the guess)


def test_a_cpu_devices_bytes_come_with_the_hosts_reuse():
    """A CPU device (``host_memory``) runs the nest on the host's cores and caches: its
    kernels' bytes are priced with the reuse the serial C schedule finds (``host_reuse``:
    a matrix product's rows stay in the cache), a GPU's stream as counted."""
    from specializers.loopnest.cost.device import _host_reuse
    from specializers.loopnest.cost.machine import machine
    from tests.specializers.loopnest.cost.test_models import Product

    kernel = Product(backend="python")
    p = profile_of(kernel, *[np.ones((64, 64)) for _ in range(3)])
    runner = kernel._asp_current.runners[0]
    cpu_profile = runner.estimator.profile(runner.signature(runner.last_inputs))
    assert p.host_reuse == _host_reuse(cpu_profile, machine())
    assert 0 < p.host_reuse < 1   # reused: less than streamed
    streamed = dataclasses.replace(p, host_reuse=1.0)
    cpu = dataclasses.replace(DEVICE, host_memory=True, lane_scale=1e-6)   # memory-bound
    reused_s = device_cost(p, cpu, DEFAULTS)[1]["memory"]
    assert reused_s == pytest.approx(device_cost(streamed, cpu, DEFAULTS)[1]["memory"] *
                                     p.host_reuse)
    gpu = dataclasses.replace(DEVICE, lane_scale=1e-6)
    assert device_cost(p, gpu, DEFAULTS)[1]["memory"] == \
        device_cost(streamed, gpu, DEFAULTS)[1]["memory"]


@pytest.mark.parametrize("per_step, fixed", [(40e-6, 0.03), (5e-3, 0.03), (1e-7, 0.5)])
def test_a_sweep_is_timed_over_steps_enough_to_show(per_step, fixed):
    """device_probes._streamed: steps beyond the first run's grow until they show beside the
    call's fixed cost (a GPU's step, 40 us, beside 30 ms of copies), and the bandwidth is the
    step's bytes over its time; a run whose steps never show says nothing (None), where the
    difference's floor once made 2.7e17 bytes per second on an H100."""
    from specializers.loopnest.cost.device_probes import _streamed

    steps_asked = []

    def run(steps):
        steps_asked.append(steps)
        return fixed + steps * per_step

    bandwidth = _streamed(run, 1e6)
    assert bandwidth == pytest.approx(1e6 / per_step, rel=1e-6)
    extra = steps_asked[-1] - steps_asked[0]
    assert extra * per_step >= 0.25 * run(2) or extra >= 4096
    assert _streamed(lambda steps: 0.03, 1e6) is None


def test_only_a_cuda_gpu_takes_its_lanes_from_its_attributes(monkeypatch):
    """A CUDA GPU's lanes, lane scale and bandwidth come from the attributes pycuda reads (a
    driver of the test's own: an H100's); an OpenCL device's from its probes."""
    from asp_core.backends import cuda
    from specializers.loopnest.cost.device_probes import _from_attributes

    assert _from_attributes("opencl") is None
    h100 = {"MULTIPROCESSOR_COUNT": 132, "WARP_SIZE": 32, "COMPUTE_CAPABILITY_MAJOR": 9,
            "CLOCK_RATE": 1_980_000, "MEMORY_CLOCK_RATE": 2_619_000,
            "GLOBAL_MEMORY_BUS_WIDTH": 5120, "L2_CACHE_SIZE": 50 << 20}
    monkeypatch.setattr(cuda, "device_attributes", lambda device=0: h100)
    monkeypatch.setattr(cuda, "device_architecture", lambda device=0: "sm_90")
    p = _from_attributes("cuda")
    assert p.lanes == 132 * 4 * 32 and p.lane_scale == pytest.approx(12.0 / 1.98)
    assert 3.0e12 < p.bandwidth < 3.6e12 and p.device == "sm_90"


def test_a_full_device_calibration_keeps_the_median_round():
    """Of three rounds of a lane measurement (a lane 2.3, 4.1 and 2.5 times serial C's time in
    three single calibrations here), the middle one is kept, whole; a quick one runs once."""
    from specializers.loopnest.cost.device_probes import median_round

    rounds = iter([(2.3, 10.0), (4.1, 11.0), (2.5, 12.0)])
    assert median_round(lambda: next(rounds), 3) == (2.5, 12.0)
    calls = []
    assert median_round(lambda: calls.append(1) or (3.0,), 1) == (3.0,) and calls == [1]


def test_the_sweeps_and_copies_keep_each_figures_median():
    """Each figure of the sweeps and copies is the median of its rounds on its own (a round's
    launch may be disturbed where its bandwidth is not); a round that found no difference
    (None) does not count, and all None stays None."""
    from specializers.loopnest.cost.timing import median_of

    found = [{"launch_ns": 9000.0, "bandwidth": 4e9, "cache_bandwidth": None},
             {"launch_ns": 3000.0, "bandwidth": 9e9, "cache_bandwidth": None},
             {"launch_ns": 3500.0, "bandwidth": 5e9, "cache_bandwidth": None}]
    assert median_of(found) == {"launch_ns": 3500.0, "bandwidth": 5e9,
                                     "cache_bandwidth": None}
    found[0]["cache_bandwidth"], found[1]["cache_bandwidth"] = 2e10, 4e10
    assert median_of(found)["cache_bandwidth"] == 3e10
    assert median_of(found[:1]) == found[0]
