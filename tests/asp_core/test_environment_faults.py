"""Environment faults, end to end through a loop kernel: each runs as Python with a clear reason
(``SpecializationError`` under strict), and once repaired the next call is specialized.

Each test breaks a cache of its own (``ASP_CACHE_DIR`` set to a folder of the test), never the
session's. Faults a process only sees when it starts (a library for another machine, a
truncated compiled template, no home folder) are run in fresh processes.
"""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from asp_core import cache, templates
from asp_core.backends import c
from asp_core.errors import SpecializationError
from asp_core.specializer import FallbackWarning
from specializers.loopnest import LoopKernel
from specializers.loopnest.pipeline import forget_executors

ROOT = Path(__file__).resolve().parents[2]


class Saxpy(LoopKernel):
    def kernel(self, a, x, y):
        for i in range(len(x)):
            y[i] = a * x[i] + y[i]


def _saxpy(kernel: Saxpy, dtype=np.float64) -> None:
    """Run ``kernel`` and check it computed what plain Python computes."""
    x, y = np.arange(7, dtype=dtype), np.ones(7, dtype=dtype)
    expected = y.copy()
    kernel.original_kernel(2.0, x, expected)
    kernel.kernel(2.0, x, y)
    assert np.array_equal(y, expected)


def _backend(kernel: Saxpy) -> str:
    return kernel.last_call.nests[0].backend


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """A cache folder of this test's own, with nothing of it remembered in this process."""
    root = tmp_path / "cache"
    monkeypatch.setenv("ASP_CACHE_DIR", str(root))
    cache.clear_memo()
    templates.clear_cache()
    forget_executors()
    yield root
    cache.clear_memo()
    templates.clear_cache()


def _falls_back(match: str, fault=lambda: None) -> None:
    """After ``fault()``, a new kernel runs as Python with a warning matching ``match``; after
    ``fault()`` again, a strict one raises."""
    fault()
    forget_executors()  # (compiled code loaded in this process needs no cache folder)
    kernel = Saxpy(backend="c")
    with pytest.warns(FallbackWarning, match=match):
        _saxpy(kernel)
    assert _backend(kernel) == "python" and kernel.last_call.nests[0].fallback
    fault()
    forget_executors()
    with pytest.raises(SpecializationError, match=match):
        _saxpy(Saxpy(backend="c", strict=True))


def _specializes() -> None:
    kernel = Saxpy(backend="c", strict=True)
    _saxpy(kernel)
    assert _backend(kernel) == "c"


def test_cache_deleted_while_running(own_cache):
    _specializes()
    shutil.rmtree(own_cache)
    _specializes()  # the same variant: the memo of verified entries is not trusted blindly
    kernel = Saxpy(backend="c", strict=True)
    _saxpy(kernel, np.float32)  # a new variant: the cache folder is made again
    assert _backend(kernel) == "c" and (own_cache / "locks").is_dir()


def test_cache_replaced_by_a_file(own_cache):
    _specializes()
    shutil.rmtree(own_cache)
    own_cache.write_text("not a folder")
    cache.clear_memo()
    _falls_back(f"refusing cache path {own_cache}: not a directory")
    own_cache.unlink()
    _specializes()


def test_lock_file_that_is_a_symbolic_link(own_cache, tmp_path):
    _specializes()
    (lock,) = [p for p in (own_cache / "locks").iterdir()
               if (own_cache / p.stem[:2] / p.stem / "nest.so").exists()]

    def plant():
        shutil.rmtree(own_cache / lock.stem[:2] / lock.stem, ignore_errors=True)  # rebuild it
        if os.path.lexists(lock):
            lock.unlink()
        os.symlink(tmp_path / "victim", lock)
        cache.clear_memo()

    _falls_back("lock file .* symbolic link", plant)  # and the link is removed
    assert not (tmp_path / "victim").exists()
    _specializes()


def test_library_that_does_not_load(own_cache, monkeypatch):
    def refuse(ffi, path):
        raise OSError(f"cannot load library '{path}': failed to map segment from shared object")

    monkeypatch.setattr(c, "_dlopen", refuse)  # as on a cache folder mounted noexec
    _falls_back("failed to map segment")
    monkeypatch.undo()
    monkeypatch.setenv("ASP_CACHE_DIR", str(own_cache))
    _specializes()


# -- in fresh processes -----------------------------------------------------------------------

SCRIPT = '''
import json, os, shutil, sys, tempfile, warnings
import numpy as np
from specializers.loopnest import LoopKernel

class Saxpy(LoopKernel):
    def kernel(self, a, x, y):
        for i in range(len(x)):
            y[i] = a * x[i] + y[i]

def call(**options):
    x, y = np.arange(5.0), np.ones(5)
    kernel = Saxpy(backend="c", **options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            kernel.kernel(2.0, x, y)
        except Exception as exc:
            return {"error": type(exc).__name__, "message": str(exc)}
    nest = kernel.last_call.nests[0]
    return {"backend": nest.backend, "fallback": nest.fallback,
            "right": y.tolist() == [1.0, 3.0, 5.0, 7.0, 9.0],
            "warnings": [str(w.message) for w in caught]}

results = {"default": call(), "strict": call(strict=True)}
if "--repair" in sys.argv:  # a private folder of ours, as ASP_CACHE_DIR
    folder = tempfile.mkdtemp()
    os.environ["ASP_CACHE_DIR"] = os.path.join(folder, "cache")
    results["repaired"] = call(strict=True)
    shutil.rmtree(folder)
print(json.dumps(results))
'''


def _run(env: dict, *args: str, **options) -> dict:
    """Run SCRIPT in a new process (from a folder anyone can read) and return its results."""
    folder = tempfile.mkdtemp(dir="/tmp")
    try:
        os.chmod(folder, 0o755)
        script = Path(folder) / "saxpy_script.py"
        script.write_text(SCRIPT)
        os.chmod(script, 0o644)
        done = subprocess.run([sys.executable, str(script), *args], capture_output=True,
                              text=True, cwd=folder, timeout=300,
                              env={**env, "PYTHONPATH": str(ROOT)}, **options)
    finally:
        shutil.rmtree(folder)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def _clean_env(**settings: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASP_")}
    env.update(settings)
    return env


def test_no_writable_cache_folder():
    """A user whose home does not exist, and no ASP_CACHE_DIR (a service account)."""
    if Path("/nonexistent").exists():
        pytest.skip("/nonexistent exists on this machine")
    env = _clean_env(HOME="/nonexistent", TMPDIR="/tmp")
    env.pop("XDG_CACHE_HOME", None)
    options = {"user": 65534, "group": 65534, "extra_groups": []} if os.getuid() == 0 else {}
    probe = subprocess.run([sys.executable, "-c", "import numpy, mako, cffi, asp_core"],
                           capture_output=True, text=True, cwd="/", timeout=120,
                           env={**env, "PYTHONPATH": str(ROOT)}, **options)
    if probe.returncode != 0:
        pytest.skip(f"this Python cannot run as user nobody: {probe.stderr[-300:]}")
    results = _run(env, "--repair", **options)
    default, strict = results["default"], results["strict"]
    assert default["backend"] == "python" and default["right"]
    assert "/nonexistent/" in default["fallback"] and "ASP_CACHE_DIR" in default["fallback"]
    assert any("/nonexistent/" in w for w in default["warnings"])
    assert strict["error"] == "SpecializationError" and "/nonexistent/" in strict["message"]
    assert results["repaired"]["backend"] == "c" and results["repaired"]["right"]


def _specialized_in_a_new_process(root: Path) -> None:
    results = _run(_clean_env(ASP_CACHE_DIR=str(root)))
    for mode in ("default", "strict"):
        assert results[mode]["backend"] == "c" and results[mode]["right"], results
        assert results[mode]["warnings"] == []


def _rewrite(path: Path, data: bytes) -> None:
    """Put ``data`` in place of a cache file (a new file) and make its manifest agree."""
    path.unlink()
    path.write_bytes(data)
    manifest_path = path.parent / cache.MANIFEST
    manifest = json.loads(manifest_path.read_text())
    manifest["files"][path.name] = [len(data), hashlib.sha256(data).hexdigest()]
    manifest_path.write_text(json.dumps(manifest))


@pytest.mark.parametrize("wrong", ["another machine", "not a library"])
def test_library_built_for_another_machine(tmp_path, wrong):
    root = tmp_path / "cache"
    _specialized_in_a_new_process(root)
    (library,) = root.glob("*/*/nest.so")
    elf = library.read_bytes()
    machine = 183 if os.uname().machine != "aarch64" else 62  # AArch64, else x86-64
    bad = (elf[:18] + machine.to_bytes(2, sys.byteorder) + elf[20:]
           if wrong == "another machine" else elf[:100])
    _rewrite(library, bad)
    _specialized_in_a_new_process(root)  # rebuilt, silently
    assert library.read_bytes() != bad


@pytest.mark.parametrize("manifest", ["kept", "rewritten"])
def test_truncated_compiled_template(tmp_path, manifest):
    root = tmp_path / "cache"
    _specialized_in_a_new_process(root)
    modules = list(root.glob(f"*/*/{templates.MODULE}"))
    assert modules
    for module in modules:
        data = module.read_bytes()
        cut = data[:len(data) // 2]
        if manifest == "rewritten":
            _rewrite(module, cut)
        else:
            module.unlink()
            module.write_bytes(cut)
    _specialized_in_a_new_process(root)


SLOW_CC = """#!/bin/sh
case "$*" in *-shared*) sleep 120;; esac
exec gcc "$@"
"""


def test_killed_build_leaves_nothing_that_grows(tmp_path):
    root = tmp_path / "cache"
    slow = tmp_path / "slow-cc"
    slow.write_text(SLOW_CC)
    os.chmod(slow, 0o755)
    env = _clean_env(ASP_CACHE_DIR=str(root), ASP_CC=str(slow), PYTHONPATH=str(ROOT))
    script = tmp_path / "saxpy_script.py"
    script.write_text(SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not list(root.glob("tmp/*/nest.c")):  # the compiler is running
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the build, its shell and its sleep
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    (left,) = list((root / "tmp").iterdir())
    past = time.time() - cache.STALE_TMP_SECONDS - 60
    os.utime(left, (past, past))
    _specialized_in_a_new_process(root)
    assert list((root / "tmp").iterdir()) == []
