"""platform: cores, compilers, OpenMP, nvcc and CUDA devices, each reported or marked absent."""

from asp_core import platform


def test_query_reports_this_machine():
    info = platform.query_platform()
    assert info.cpu_cores >= 1
    assert info.c_compiler and "gcc" in info.c_compiler
    assert isinstance(info.openmp, bool)
    text = info.summary()
    assert "CPU cores" in text and "OpenMP" in text
    if not info.pycuda:
        assert info.cuda_devices == () and any("pycuda" in n for n in info.notes)


def test_query_is_memoized():
    assert platform.query_platform() is platform.query_platform()
    platform.clear_cache()
    assert platform.query_platform() == platform.query_platform()


def test_cuda_device_properties_when_present():
    info = platform.query_platform()
    for dev in info.cuda_devices:
        assert dev.warp_size == 32 and dev.multiprocessors > 0
        assert dev.max_threads_per_block >= 512 and dev.arch.startswith("sm_")
