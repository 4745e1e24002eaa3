"""platform: cores, compilers, OpenMP, nvcc and CUDA devices, each reported or marked absent."""

import os
import subprocess
import sys
import time

import pytest

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


def test_proc_stat_gives_busy_jiffies_and_runnable_threads():
    text = (b"cpu  100 5 50 1000 20 3 2 1 0 0\n"
            b"cpu0 50 2 25 500 10 1 1 0 0 0\n"
            b"intr 12345\nctxt 999\nprocs_running 3\nprocs_blocked 0\n")
    assert platform.parse_proc_stat(text) == (100 + 5 + 50 + 3 + 2 + 1, 3)
    assert platform.parse_proc_stat(b"cpu  1 2 3 4\n") == (6, None)


def test_processes_that_want_the_cores_count_as_busy(monkeypatch):
    """Two processes spinning on a machine of two cores want both, though beside this one
    they get four thirds of them: their runnable threads count, not only their busy time."""
    if not os.path.exists("/proc/stat"):
        pytest.skip("no /proc/stat here: the load is the load average's guess")
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        load = platform._Load()
        monkeypatch.setattr(load, "every", 0.05)
        deadline = time.monotonic() + 0.6
        while time.monotonic() < deadline:   # (this thread busy too, as a kernel's call)
            seen = load()
        assert seen >= 1.5
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
