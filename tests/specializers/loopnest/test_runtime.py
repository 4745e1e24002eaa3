"""runtime: reading a nest's inputs from the kernel frame, argument checks, the executor."""

import numpy as np
import pytest

from asp_core.errors import UnsupportedArgument
from asp_core.signature import signature_of
from specializers.loopnest.pipeline import analyse_kernel
from specializers.loopnest.rewrite import NO_VALUE
from specializers.loopnest.runtime import NestRunner, check_arguments, gather_source

GLOBAL_SCALE = 3


def make_kernel():
    captured = 2

    def kernel(self, A, n):
        for i in range(n):
            A[i] = A[i] * GLOBAL_SCALE + captured + self.shift
            s = A[i]
        return s

    return kernel


def test_gather_reads_locals_globals_closure_and_attributes():
    kernel = make_kernel()
    analysis = analyse_kernel(kernel)
    nest = analysis.nests[0]
    assert nest.names.inputs == ("A", "GLOBAL_SCALE", "captured", "n", "self.shift", "s")
    text = gather_source(nest, analysis.source.ctx, "g")
    assert "G['GLOBAL_SCALE']" in text and "C['captured'].cell_contents" in text
    assert "L['self'].shift" in text and "L.get('s', UNBOUND)" in text

    class Obj:
        shift = 0.5

    runner = NestRunner(nest, analysis.source.ctx, backend="python", strict=True)
    A = np.ones(3)
    values = runner._gather({"self": Obj(), "A": A, "n": 3})
    assert values == (A, 3, 2, 3, 0.5, NO_VALUE)


def test_missing_input_falls_back_to_the_original_code():
    kernel = make_kernel()
    analysis = analyse_kernel(kernel)
    runner = NestRunner(analysis.nests[0], analysis.source.ctx, backend="python")
    from specializers.loopnest.rewrite import RUN_ORIGINAL

    with pytest.warns(UserWarning, match="has no value"):
        assert runner.enter({"self": object(), "A": np.ones(2), "n": 2}) is RUN_ORIGINAL


def test_check_arguments():
    def kernel(self, A, B, n):
        for i in range(n):
            A[i] = B[i, 0]

    nest = analyse_kernel(kernel).nests[0]
    ok = signature_of([np.zeros(2), np.zeros((2, 2)), 2, NO_VALUE])
    check_arguments(nest, ok)
    with pytest.raises(UnsupportedArgument, match="not a NumPy array"):
        check_arguments(nest, signature_of([[0, 0], np.zeros((2, 2)), 2, NO_VALUE]))
    with pytest.raises(UnsupportedArgument, match="complex128"):
        check_arguments(nest, signature_of([np.zeros(2, complex), np.zeros((2, 2)), 2, NO_VALUE]))


# -- fork safety (asp_core.forking) ------------------------------------------------------------

FORK_SCRIPT = '''
import multiprocessing, sys, warnings
import numpy as np
from asp_core import forking
from asp_core.backends.c import openmp_flags
from specializers.loopnest import LoopKernel

if SIMULATE_MISSING:  # an OpenMP runtime without omp_pause_resource_all
    forking.find_pause = lambda: (None, "simulated: no omp_pause_resource_all")


class Smooth(LoopKernel):
    def kernel(self, a, b):
        for i in range(1, len(a) - 1):
            b[i] = 0.25 * a[i - 1] + 0.5 * a[i] + 0.25 * a[i + 1]


KERNEL = Smooth(backend="openmp", strict=True)


def inputs(n):
    return np.sin(np.arange(n) * 0.1), np.zeros(n)


def work(n):
    a, b = inputs(n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        KERNEL.kernel(a, b)
    expected = inputs(n)
    Smooth().original_kernel(*expected)
    nest = KERNEL.last_call.nests[0]
    return bool(np.array_equal(b, expected[1])), nest.backend, nest.fallback


if __name__ == "__main__":
    if openmp_flags() is None:
        print("no-openmp")
        sys.exit(0)
    print(work(100_000))  # the parent runs an OpenMP variant: its thread pool exists
    with multiprocessing.get_context("fork").Pool(2) as pool:
        for result in pool.map_async(work, [100_000, 50_001, 100_000]).get(timeout=90):
            print(result)
    print(work(100_000))
'''


def run_fork_script(tmp_path, simulate_missing: bool) -> list:
    import ast
    import subprocess
    import sys

    script = tmp_path / "fork_scenario.py"
    script.write_text(FORK_SCRIPT.replace("SIMULATE_MISSING", str(simulate_missing)))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    if out.stdout.split() == ["no-openmp"]:
        pytest.skip("this gcc has no OpenMP (libgomp missing)")
    return [ast.literal_eval(line) for line in out.stdout.splitlines()]


def test_workers_forked_after_an_openmp_variant_ran_run_it_too(tmp_path):
    """multiprocessing with fork after an OpenMP variant ran: the workers used to hang in
    libgomp; now they run the OpenMP variant and get plain Python's results."""
    results = run_fork_script(tmp_path, simulate_missing=False)
    assert results == [(True, "openmp", None)] * 5


def test_where_openmp_cannot_be_reset_forked_workers_run_serial_c(tmp_path):
    results = run_fork_script(tmp_path, simulate_missing=True)
    assert results[0] == results[-1] == (True, "openmp", None)
    for same, backend, reason in results[1:-1]:
        assert same and backend == "c"
        assert reason.startswith("openmp: this process was forked after OpenMP code ran")


# -- bounded caches --------------------------------------------------------------------------


def _resident_bytes() -> int:
    import os

    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        pytest.skip("no /proc/self/statm to read the resident memory from")


def test_memory_stays_bounded_over_10000_array_lengths():
    """Each array length is another binding (another plan, another variant): before the
    caches were bounded, 10,000 lengths kept about 50 MB."""
    import gc

    from specializers.loopnest import LoopKernel
    from specializers.loopnest.pipeline import PLAN_CACHE_SIZE

    class Head(LoopKernel):
        def kernel(self, a, b):
            for i in range(1):
                b[i] = a[i] + 1.0

    kernel = Head(backend="python", strict=True)
    a, b = np.ones(10_001), np.zeros(10_001)
    kernel.kernel(a[:1], b[:1])
    runner = kernel._asp_current.runners[0]
    gc.collect()
    before = _resident_bytes()
    for n in range(2, 10_002):
        kernel.kernel(a[:n], b[:n])  # views: a new length costs no array memory
    gc.collect()
    grown = _resident_bytes() - before
    assert len(runner._variants) <= 2 * runner.variant_cache_size
    assert len(runner.analysis._plans) <= 2 * PLAN_CACHE_SIZE
    assert len(runner._executors) == 1 and len(runner._checked) == 1
    assert grown < 12 * 2**20, f"{grown / 2**20:.1f} MiB kept"
    assert b[0] == 2.0 and not b[1:].any()
