"""backends.c: gcc through codepy, OpenMP probe, cached shared libraries, zero-copy arrays;
keys that name the CPU, libraries for another machine rebuilt, only manifest files loaded."""

import doctest
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from asp_core import cache, platform
from asp_core.backends import c
from asp_core.errors import BackendUnavailable, CacheError, CompileError

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


# -- the target machine is part of the key; only verified files are loaded ---------------------

def _unique(tag: str) -> str:
    """A source no test has loaded in this process (glibc would hand back a loaded library
    by its path without reading the file again)."""
    return SOURCE + f"\n/* {tag} {os.getpid()} {id(object())} */\n"


def test_key_names_the_cpu_with_native_flags(monkeypatch):
    native = c.find_c_compiler()
    portable = c.find_c_compiler(None, ("-O2",))
    here = platform.cpu_identity()
    other = platform.CpuIdentity(here.machine, here.model, tuple(f for f in here.flags
                                                                 if f != "avx2"))
    before = (native.abi_id(), portable.abi_id())
    monkeypatch.setattr(platform, "cpu_identity", lambda: other)
    assert native.abi_id() != before[0] and portable.abi_id() == before[1]
    path = c.build_shared_library(SOURCE, name="scale")
    monkeypatch.setattr(platform, "cpu_identity", lambda: here)
    assert c.build_shared_library(SOURCE, name="scale") != path
    monkeypatch.setattr(platform, "cpu_identity",
                        lambda: platform.CpuIdentity("aarch64", here.model, here.flags))
    assert portable.abi_id() != before[1]  # another architecture, whatever the flags


def _plant(entry: Path, name: str, data: bytes, *, fix_manifest: bool) -> None:
    """Put ``data`` in place of ``entry/name`` (a new file, as a copy from elsewhere would)."""
    path = entry / name
    path.unlink()
    path.write_bytes(data)
    if fix_manifest:
        manifest = json.loads((entry / cache.MANIFEST).read_text())
        manifest["files"][name] = [len(data), hashlib.sha256(data).hexdigest()]
        (entry / cache.MANIFEST).write_text(json.dumps(manifest))


def _other_machine(elf: bytes) -> bytes:
    """The same library, marked as built for another machine (ELF e_machine: AArch64, or
    x86-64 on other hosts)."""
    machine = 183 if os.uname().machine != "aarch64" else 62
    return elf[:18] + machine.to_bytes(2, sys.byteorder) + elf[20:]


@pytest.mark.parametrize("wrong", ["other machine", "not ELF"])
def test_library_for_another_machine_is_rebuilt(wrong):
    source = _unique(wrong)
    path = c.build_shared_library(source, name="scale", cdef=CDEF)
    good = path.read_bytes()
    bad = _other_machine(good) if wrong == "other machine" else b"\x7fELF truncated"
    _plant(path.parent, path.name, bad, fix_manifest=True)
    cache.clear_memo()
    module = c.compile_c(source, CDEF, name="scale")
    x = np.zeros(2)
    ones = np.ones(2)
    module.lib.scale(c.array_pointer(module.ffi, x), c.array_pointer(module.ffi, ones), 2, 3.0)
    assert x.tolist() == [3.0, 3.0] and path.read_bytes() != bad


def test_library_that_never_loads_is_a_cache_error(monkeypatch):
    source = _unique("noexec")

    def refuse(ffi, path):
        raise OSError(f"cannot load library '{path}': failed to map segment from shared object")

    monkeypatch.setattr(c, "_dlopen", refuse)
    with pytest.raises(CacheError, match="failed to map segment.*also after rebuilding"):
        c.compile_c(source, CDEF, name="scale")
    monkeypatch.undo()
    assert c.compile_c(source, CDEF, name="scale").lib.scale  # the next call works


PLANTED = "open({marker!r}, 'w').write('ran')\nraise SystemExit('planted code ran')\n"


def test_declaration_module_not_in_the_manifest_is_never_run(tmp_path):
    marker = tmp_path / "marker"
    source = _unique("planted")
    path = c.build_shared_library(source, name="scale")  # no cdef: no declaration module
    (path.parent / "scale_ffi.py").write_text(PLANTED.format(marker=str(marker)))
    assert c.load_library(path, CDEF).lib.scale and not marker.exists()


def test_changed_declaration_module_is_never_run(tmp_path):
    marker = tmp_path / "marker"
    source = _unique("changed")
    path = c.build_shared_library(source, name="scale", cdef=CDEF)
    _plant(path.parent, "scale_ffi.py", PLANTED.format(marker=str(marker)).encode(),
           fix_manifest=False)
    with pytest.raises(CacheError, match="differs from its manifest"):
        c.load_library(path, CDEF)
    assert c.compile_c(source, CDEF, name="scale").lib.scale  # rebuilt
    assert not marker.exists()


def test_library_outside_the_cache_is_refused(tmp_path):
    path = c.build_shared_library(SOURCE, name="scale")
    copy = tmp_path / "scale.so"
    copy.write_bytes(path.read_bytes())
    with pytest.raises(CacheError, match="not a cache entry"):
        c.load_library(copy, CDEF)
