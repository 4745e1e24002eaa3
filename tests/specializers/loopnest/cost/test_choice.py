"""The cost model's choice end to end, through ``LoopKernel``: under injected machine
parameters, after a variant is slowed on purpose (online correction), with a forced backend,
while a variant builds in the background (no call sees it half built), and the cold start."""

import dataclasses
import math
import threading
import time
import types

import numpy as np
import pytest

from asp_core import selection
from specializers.loopnest import LoopKernel
from specializers.loopnest.cost import machine as machine_module
from specializers.loopnest.cost.machine import DEFAULTS
from specializers.loopnest.kernel import _COLD


class Saxpy(LoopKernel):
    def kernel(self, a, x, y):
        for i in range(len(x)):
            y[i] = a * x[i] + y[i]


def inputs(n=20_000):
    return 2.0, np.arange(float(n)), np.ones(n)


def expected(n=20_000):
    a, x, y = inputs(n)
    return a * x + y


@pytest.fixture
def params(monkeypatch):
    """Inject machine parameters: ``params(**changes)`` (DEFAULTS otherwise)."""
    def inject(**changes):
        chosen = dataclasses.replace(DEFAULTS, **changes)
        monkeypatch.setattr(machine_module, "machine", lambda: chosen)
        from specializers.loopnest.cost import estimates

        monkeypatch.setattr(estimates, "machine", lambda: chosen)
        return chosen

    return inject


def run(kernel, calls: int, n=20_000) -> list[str]:
    labels = []
    for _ in range(calls):
        a, x, y = inputs(n)
        kernel.kernel(a, x, y)
        assert np.array_equal(y, expected(n))
        nest = kernel.last_call.nests[0]
        labels.append(f"openmp@{nest.threads}" if nest.backend == "openmp" else nest.backend)
    return labels


def settle(kernel, calls=30, n=20_000) -> list[str]:
    """Calls until background builds are done (a compile may be under way)."""
    labels = run(kernel, calls, n)
    runner = kernel._asp_current.runners[0]
    for _ in range(200):
        if not runner._building:
            break
        time.sleep(0.02)
    return labels + run(kernel, 5, n)


def test_the_choice_follows_the_machine_parameters(params):
    params(c_call_ns=1e9)  # a compiled call would cost a second: the original code it is
    kernel = Saxpy(strict=True)
    assert set(settle(kernel)[-5:]) == {"python"}
    slow_python = {k: v * 1e4 for k, v in DEFAULTS.py_op_ns.items()}
    params(py_op_ns=slow_python, compile_base_s=0.0, compile_per_line_s=0.0,
           compile_openmp_s=0.0)
    kernel = Saxpy(strict=True)
    assert "python" not in settle(kernel)[-5:]  # a compiled variant, built in the first call


def test_a_variant_slower_than_predicted_is_left(params, monkeypatch):
    from asp_core import call_guard

    call_guard.unavailable()   # (the native calls loaded: no variant warms up, as in a suite)
    params(compile_base_s=0.0, compile_per_line_s=0.0,
           compile_openmp_s=0.0)
    kernel = Saxpy(strict=True)
    first = settle(kernel)[-1]
    assert first != "python"
    runner = kernel._asp_current.runners[0]
    label = runner.last_estimate.label
    (sig,) = {key[0] for key in runner._variants.keys() if key[1] == label}
    variant = runner._variants.get((sig, label))
    estimate = runner.last_estimate

    # The dispatcher's clock, from here on: each reading advances 1 us, and a call of the
    # slowed variant 50 ms (thousands of times what the model predicts, 10 times what the
    # original code takes), so that what the calls measure does not depend on the load of
    # the machine (a run beside another test suite once saw the other variant slow too).
    clock = [0.0]

    def perf_counter():
        clock[0] += 1e-6
        return clock[0]

    from asp_core import specializer

    monkeypatch.setattr(specializer, "time", types.SimpleNamespace(
        perf_counter=perf_counter, monotonic=time.monotonic, sleep=time.sleep))
    # What timing a call costs is measured once per process (1 to 2.5 us on the development
    # VM, more beside a background compile): one call in 32 or 64 of this one of a few
    # microseconds was timed, and 80 calls held two or three timed ones, too few to leave the
    # variant in half the runs of this test alone. Priced at its floor, one in 16.
    monkeypatch.setattr(specializer, "timing_cost", lambda: specializer.TIMING_COST_S)

    def slow(*args):
        clock[0] += 0.05
        return variant.run(*args)

    runner._variants.put((sig, label), dataclasses.replace(variant, run=slow))
    runner._fast = None
    # (a re-probe, two calls in a row, came between calls 20 and 40 here, depending on the
    # probes of the calls before; 40 calls were too few in about a third of the runs)
    labels = run(kernel, 80)
    # (re-probed now and then: a probe of a variant predicted under a millisecond is two calls)
    assert labels[-10:].count(first) <= 4, labels
    # A stable choice's warm calls are timed one in ``_timing_period`` of them (a call of a
    # few microseconds: one in 16, so that timing costs 1% of its time). The first slow call
    # timed comes 0.75 s of slow calls after the last timed one, an idle gap by the clock:
    # not measured ("Idle gaps" in ``selection``); the next ones move the correction by
    # MAX_STEP each while it rests on few measurements ("Cold calls"), or, settled, the first
    # of them is held and the next confirms it ("Sampling"): three periods at most. (Two,
    # as this said before, failed with the old rules too once the period was 16 here: 38 to
    # 56 calls; with one call in 32 or 64 timed, the bound was more than the 80 calls.)
    period = specializer._timing_period(estimate.seconds)
    assert labels.count(first) <= 3 * period + 2, (period, labels)
    size_class = runner.last_estimate.size_class
    # One slow call moves the correction by MAX_STEP only (an odd call must not swing the
    # model), which is enough to leave the variant; whether a re-probe came within the 80
    # calls to confirm it depends on the probes before (it did not in about a third of runs).
    assert runner.selector.factor(label, size_class) >= math.exp(selection.MAX_STEP) * 0.999
    # Slow calls in a row move it freely: run it again (pinned), and the model knows.
    runner.selector.pin(label)
    runner._fast = None
    run(kernel, 3 * period + 4)   # (a switch call is not measured, then one in a period:
    # after a gap, odd, confirmed)
    assert runner.selector.factor(label, size_class) > 10


def test_a_forced_backend_wins_over_the_model(params):
    params(c_call_ns=1e9)
    kernel = Saxpy(backend="c", strict=True)
    assert set(run(kernel, 3)) == {"c"}
    assert kernel.last_call.nests[0].predicted_s is None  # no model for a forced backend


def test_no_call_sees_a_variant_half_built(params, monkeypatch, tmp_path):
    """Calls go on, as the original code, while a compile takes 0.5 s in the background; the
    variant is handed over whole; every result is right."""
    from asp_core import cache
    from specializers.loopnest import variants

    monkeypatch.setenv("ASP_CACHE_DIR", str(tmp_path / "cache"))  # nothing compiled before
    cache.clear_memo()

    params(compile_base_s=1.0)  # never worth compiling within one call
    real = variants.compile_variant
    started = threading.Event()

    def slow_compile(*args, **kwargs):
        started.set()
        time.sleep(0.5)
        return real(*args, **kwargs)

    monkeypatch.setattr(variants, "compile_variant", slow_compile)
    from specializers.loopnest.pipeline import analyse_kernel

    analyse_kernel(Saxpy.kernel._asp_original_function).nests[0].executors.clear()
    kernel = Saxpy(strict=True)
    labels, deadline = [], time.monotonic() + 20
    while time.monotonic() < deadline and (not labels or labels[-1] == "python"):
        labels += run(kernel, 1, n=200_000)
    assert started.is_set() and labels[0] == "python" and labels[-1] != "python", labels
    assert labels.count("python") >= 2  # calls went on while it compiled


def fresh_saxpy():
    """A kernel class of its own (a cold start is per kernel method)."""
    class Fresh(LoopKernel):
        def kernel(self, a, x, y):
            for i in range(len(x)):
                y[i] = a * x[i] + y[i]

    return Fresh


def test_a_small_first_call_runs_the_original_code_cold():
    Fresh = fresh_saxpy()
    original = Fresh.kernel._asp_original_function
    kernel = Fresh()
    a, x, y = inputs(8)
    kernel.kernel(a, x, y)
    assert kernel.last_call.cold and np.array_equal(y, expected(8))
    assert original in _COLD and _COLD[original].calls == 1
    # a call with data suggesting more work than the analysis costs is analysed at once
    n = int(_COLD[original].analysis_s / _COLD[original].levels[0])
    a, x, y = inputs(n)
    kernel.kernel(a, x, y)
    assert not kernel.last_call.cold and original not in _COLD
    assert np.array_equal(y, expected(n))


def test_cold_calls_end_once_their_time_reaches_the_analysis_cost():
    Fresh = fresh_saxpy()
    original = Fresh.kernel._asp_original_function
    kernel = Fresh()
    cold = 0
    for _ in range(10_000):
        kernel.kernel(*inputs(8))
        if not kernel.last_call.cold:
            break
        cold += 1
    spent = _COLD.get(original)
    assert spent is None and 1 <= cold < 10_000


def test_strict_and_forced_kernels_never_start_cold():
    Fresh = fresh_saxpy()
    Fresh(strict=True).kernel(*inputs(8))
    assert Fresh.kernel._asp_original_function not in _COLD


def test_a_variant_compiled_before_is_priced_at_a_load_not_a_compile(params):
    """A later process (here: the compiled code forgotten in memory) finds in the disk
    cache's index that the variant was compiled, and prices it at LOAD_SECONDS."""
    from specializers.loopnest.cost.estimates import LOAD_SECONDS
    from specializers.loopnest.pipeline import forget_executors

    params(compile_base_s=5.0)  # a compile would never pay off here
    Saxpy(backend="c", strict=True).kernel(*inputs())
    forget_executors()
    kernel = Saxpy(strict=True)
    kernel.kernel(*inputs())
    runner = kernel._asp_current.runners[0]
    builds = {e.label: e.build_s for e in runner.last_decision.estimates}
    assert builds["c"] == LOAD_SECONDS, builds
