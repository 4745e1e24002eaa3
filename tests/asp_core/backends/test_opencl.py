"""asp_core.backends.opencl: the device, programs, buffers, and a refused program's error,
run for real on this machine's OpenCL device (PoCL on a CPU); skipped, with the reason, where
there is none."""

import numpy as np
import pytest

from asp_core.backends import launches
from asp_core.backends.launches import HostLoop
from asp_core.errors import BackendUnavailable, CompileError

opencl = pytest.importorskip("asp_core.backends.opencl")


def _missing():
    try:
        opencl.device()
    except BackendUnavailable as exc:
        return str(exc)
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=f"no OpenCL here: {_missing()}")

SCALE = """
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void scale(__global double *x, double a, long n) {
    long i = get_global_id(0);
    if (i < n) x[i] = a * x[i];
}
"""


def test_the_device_says_what_it_is():
    info = opencl.device()
    assert info.name and info.compute_units >= 1 and info.global_memory > 0
    assert info.kind in ("CPU", "GPU", "ACCELERATOR", "OTHER")


def test_a_kernel_runs_on_a_buffer_and_reads_back():
    x = np.arange(10.0)
    buf = opencl.to_device(x)
    kernel = opencl.kernel(opencl.build_program(SCALE), "scale")
    kernel(opencl.queue(), (16,), None, buf, np.float64(2.5), np.int64(10))
    assert np.array_equal(opencl.from_device(buf, x), 2.5 * np.arange(10.0))
    assert np.array_equal(x, np.arange(10.0))   # the host array is a separate copy


def test_empty_arrays_travel():
    empty = np.zeros((0, 3))
    assert opencl.from_device(opencl.to_device(empty), empty).shape == (0, 3)


def test_a_refused_program_raises_compile_error_with_the_log():
    with pytest.raises(CompileError, match="refused") as caught:
        opencl.build_program("__kernel void broken(__global double *x) { x[0] = y; }")
    assert "y" in caught.value.output


ADD = """
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void add(__global double *x, long lo, long step, long n, long t) {
    long i = get_global_id(0);
    if (i < n) x[lo + i * step] += (double)t;
}
"""


@pytest.mark.skipif(not opencl.host_loop_available(), reason="no OpenCL library to open")
def test_a_host_loop_in_compiled_code():
    """t = 3, 5, 7: the kernel over i in range(t, 10) adds t to x[i] (a triangular grid whose
    first value and extent depend on the iteration)."""
    x = np.zeros(10)
    buf = opencl.to_device(x)
    kernel = opencl.kernel(opencl.build_program(ADD), "add")
    kernel.set_args(buf, np.int64(0), np.int64(0), np.int64(0), np.int64(0))
    # axis: first value 3 + 2t, extent 7 - 2t (t counted from 0), step 1
    loop = HostLoop(trips=3, first=3, step=2, naxes=(1,), base=(1,), host=(4,),
                    forms=(3, 2, 7, -2, 1))
    opencl.host_loop([kernel], [launches.CUDA_LIMITS], loop)
    want = np.zeros(10)
    for t in (3, 5, 7):
        want[t:] += t
    assert np.array_equal(opencl.from_device(buf, x), want)


def test_the_compiled_host_loop_calls_the_library_pyopencl_loaded():
    """One OpenCL loader in the process: the one pyopencl maps (its wheel bundles its own),
    not a second, the system's, found by name."""
    path = opencl._loaded_library()
    with open("/proc/self/maps") as maps:
        mapped = {line.split()[-1] for line in maps if "/libOpenCL" in line}
    assert path in mapped
    if any("pyopencl" in m for m in mapped):
        assert "pyopencl" in path
