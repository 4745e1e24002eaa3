"""backends.c: gcc through codepy, OpenMP probe, cached shared libraries, zero-copy arrays."""

import doctest

import numpy as np
import pytest

from asp_core.backends import c
from asp_core.errors import BackendUnavailable, CompileError

SOURCE = """
#include <stdint.h>
intptr_t scale(double * restrict x, const double * restrict y, int64_t n, double a) {
    for (int64_t i = 0; i < n; ++i) x[i] = a * y[i];
    return (intptr_t)x;
}
"""
CDEF = c.cdef_from_signature("scale", [("double * restrict", "x"), ("const double * restrict", "y"),
                                       ("int64_t", "n"), ("double", "a")], "intptr_t")


def test_compiler_is_gcc_with_configurable_flags():
    comp = c.find_c_compiler()
    assert comp.cc.endswith("gcc") and "gcc" in comp.version.lower()
    assert "-O3" in comp.toolchain.cflags and "-march=native" in comp.toolchain.cflags
    assert "-ffp-contract=off" in comp.toolchain.cflags and "-std=gnu11" in comp.toolchain.cflags
    slow = c.find_c_compiler(None, ("-O0",))
    assert "-O0" in slow.toolchain.cflags and "-O3" not in slow.toolchain.cflags
    assert c.find_c_compiler() is c.find_c_compiler()


def test_missing_compiler_is_unavailable():
    with pytest.raises(BackendUnavailable, match="not on PATH"):
        c.find_c_compiler("no-such-compiler-xyz")


def test_build_load_and_call_without_copies():
    module = c.compile_c(SOURCE, CDEF, name="scale")
    x, y = np.zeros(5), np.arange(5.0)
    address = module.lib.scale(c.array_pointer(module.ffi, x), c.array_pointer(module.ffi, y), 5, 2.0)
    assert address == x.ctypes.data  # C saw the NumPy buffer itself
    assert x.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]


def test_strided_arrays_pass_their_first_element():
    module = c.compile_c(SOURCE, CDEF, name="scale")
    base = np.zeros((4, 4))
    column = base[:, 1]
    assert module.lib.scale(c.array_pointer(module.ffi, column), c.array_pointer(module.ffi, np.ones(1)),
                            1, 7.0) == column.ctypes.data
    assert base[0, 1] == 7.0


def test_second_build_comes_from_the_cache(monkeypatch):
    path = c.build_shared_library(SOURCE, name="scale")

    def no_compiler(*args, **kwargs):
        raise AssertionError("compiled again")

    monkeypatch.setattr(c, "run_compiler", no_compiler)
    assert c.build_shared_library(SOURCE, name="scale") == path
    assert c.load_library(path, CDEF) is c.load_library(path, CDEF)


def test_compile_error_carries_output_and_a_kept_source():
    with pytest.raises(CompileError) as info:
        c.compile_c("int broken( { return 0; }\n", "int broken(void);", name="broken")
    err = info.value
    assert "error" in err.output and err.command[0].endswith("gcc")
    assert err.location.line == 1 and err.location.file.endswith("broken.c")
    assert open(err.location.file).read().startswith("int broken(")


def test_openmp_probe_and_parallel_module():
    flags = c.openmp_flags()
    if flags is None:
        pytest.skip("this gcc has no OpenMP (libgomp missing)")
    src = "#include <omp.h>\nint threads(void) { int n = 0;\n#pragma omp parallel\n" \
          "{\n#pragma omp atomic\nn += 1;\n}\nreturn n; }\n"
    module = c.compile_c(src, "int threads(void);", name="threads", openmp=True)
    assert module.lib.threads() >= 1


def test_openmp_probe_result_is_kept_on_disk(monkeypatch):
    c.openmp_flags()
    c._openmp_flags.cache_clear()
    monkeypatch.setattr(c, "run_compiler", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
    c.openmp_flags()  # answered from the disk cache, no compiler run


UNLOAD_SCRIPT = """
import gc
from asp_core.backends import c
flags = c.openmp_flags()  # the probe's library object is dropped at once
src = ("int threads(void) { int n = 0;\\n#pragma omp parallel\\n{\\n#pragma omp atomic\\n"
       "n += 1;\\n}\\nreturn n; }\\n")
if flags is not None:
    module = c.compile_c(src, "int threads(void);", name="threads", openmp=True)
    module.lib.threads()
    del module
    c.clear_loaded()
    gc.collect()  # the last reference to an OpenMP library whose threads are still spinning
"""


def test_openmp_libraries_are_never_unloaded_under_running_threads(tmp_path):
    """cffi closes a library when its object is collected; closing the only user of libgomp
    while its worker threads spin crashed one process in three or so (at exit). Each run
    below starts with an empty cache, so the probe compiles and runs in it."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(c.__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root))
    for run in range(12):
        env["ASP_CACHE_DIR"] = str(tmp_path / f"cache{run}")
        done = subprocess.run([sys.executable, "-c", UNLOAD_SCRIPT], env=env, cwd=root,
                              capture_output=True, text=True)
        assert done.returncode == 0, (run, done.returncode, done.stderr[-2000:])


def test_cdef_doctest():
    assert doctest.testmod(c).failed == 0
