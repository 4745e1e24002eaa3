"""platform: cores, compilers, OpenMP, nvcc and CUDA devices, each reported or marked absent."""

import os

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


X86 = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
model name\t: Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz
microcode\t: 0x2006
cpu MHz\t\t: 2400.000
flags\t\t: fpu sse2 avx avx2 avx512f

processor\t: 1
model name\t: something else
flags\t\t: fpu
"""
ARM = """processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd sve
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x1
CPU part\t: 0xd40
"""


def test_cpu_identity_reads_model_and_flags_of_the_first_processor():
    x86 = platform.parse_cpuinfo("x86_64", X86)
    assert x86.flags == ("avx", "avx2", "avx512f", "fpu", "sse2")
    assert ("model name", "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz") in x86.model
    assert all(name not in dict(x86.model) for name in ("cpu MHz", "microcode"))  # they vary
    arm = platform.parse_cpuinfo("aarch64", ARM)
    assert arm.flags == ("asimd", "fp", "sve") and ("CPU part", "0xd40") in arm.model
    assert platform.parse_cpuinfo("x86_64", X86.replace(" avx512f", "")) != x86
    assert platform.parse_cpuinfo("x86_64", "").flags == ()


def test_cpu_identity_of_this_machine():
    here = platform.cpu_identity()
    assert here is platform.cpu_identity() and here.machine == os.uname().machine
    if os.path.exists("/proc/cpuinfo"):
        assert here.flags and here.model
    assert "CPU: " + here.describe() in platform.query_platform().summary()


def test_cpuinfo_doctest():
    import doctest

    assert doctest.testmod(platform).failed == 0


def test_proc_stat_gives_busy_time_and_runnable_threads(tmp_path):
    from asp_core.platform import _proc_stat

    stat = tmp_path / "stat"
    stat.write_text("cpu  100 5 50 1000 20 1 2 3 0 0\ncpu0 50 2 25 500 10 0 1 1 0 0\n"
                    "intr 1 2 3\nprocs_running 3\nprocs_blocked 0\n")
    assert _proc_stat(str(stat)) == (100 + 5 + 50 + 1 + 2 + 3, 3)
    stat.write_text("nonsense\n")
    assert _proc_stat(str(stat)) == (None, None)
    assert _proc_stat(str(tmp_path / "missing")) == (None, None)


def test_own_runnable_threads_count_the_one_asking():
    import threading

    from asp_core.platform import _own_runnable

    assert _own_runnable() >= 1
    stop = threading.Event()
    spinner = threading.Thread(target=lambda: [None for _ in iter(stop.is_set, True)])
    spinner.start()
    try:
        assert 1 <= _own_runnable() <= 2   # (the spinner, when the GIL lets it run)
    finally:
        stop.set()
        spinner.join()
