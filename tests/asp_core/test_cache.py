"""cache: stable keys, one build across processes, corrupt entries rebuilt, foreign ones refused."""

import multiprocessing
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from asp_core import cache
from asp_core.dast import Node
from asp_core.errors import CacheError


def test_stable_key_is_deterministic_across_processes():
    parts = ("src", {"b": 1, "a": (2.5, None)}, frozenset({"x", "y"}), b"\x00")
    here = cache.stable_key(*parts)
    code = ("from asp_core import cache; print(cache.stable_key('src', {'a': (2.5, None), 'b': 1},"
            " frozenset({'y', 'x'}), b'\\x00'))")
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, check=True, cwd=Path(__file__).resolve().parents[2])
        assert out.stdout.strip() == here


def test_stable_key_distinguishes_types_and_nodes():
    assert cache.stable_key(1) != cache.stable_key("1") != cache.stable_key(1.0)
    assert cache.stable_key(Node()) == cache.stable_key(Node())
    with pytest.raises(TypeError):
        cache.stable_key(object())


def _write(text):
    def build(folder: Path):
        (folder / "artifact.txt").write_text(text)
    return build


def test_entry_builds_once_and_memoizes(private_cache):
    calls = []

    def build(folder):
        calls.append(1)
        (folder / "a.bin").write_bytes(b"123")

    first = private_cache.entry("k" * 64, build)
    assert (first / "a.bin").read_bytes() == b"123"
    cache.clear_memo()
    assert private_cache.entry("k" * 64, build) == first
    assert len(calls) == 1


def test_cache_folders_are_private(private_cache):
    private_cache.entry("a" * 64, _write("x"))
    for path in (private_cache.root, private_cache.root / "aa", private_cache.root / "locks"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700


def test_truncated_or_corrupt_entry_is_rebuilt(private_cache):
    key = "c" * 64
    entry = private_cache.entry(key, _write("good content"))
    (entry / "artifact.txt").write_text("good")  # truncated
    cache.clear_memo()
    assert private_cache.get(key) is None
    entry = private_cache.entry(key, _write("good content"))
    assert (entry / "artifact.txt").read_text() == "good content"
    (entry / "artifact.txt").write_text("evil content")  # same size, other bytes
    cache.clear_memo()
    assert private_cache.get(key) is None
    (entry / cache.MANIFEST).write_text("{not json")
    assert private_cache.get(key) is None


def test_failed_build_leaves_nothing(private_cache):
    def fail(folder):
        (folder / "half").write_text("x")
        raise RuntimeError("compiler exploded")

    with pytest.raises(RuntimeError):
        private_cache.entry("f" * 64, fail)
    assert private_cache.get("f" * 64) is None
    assert list((private_cache.root / "tmp").iterdir()) == []


def test_entries_owned_by_someone_else_are_refused(private_cache, monkeypatch):
    key = "d" * 64
    private_cache.entry(key, _write("x"))
    cache.clear_memo()
    me = os.getuid()
    monkeypatch.setattr(cache.os, "getuid", lambda: me + 1)
    with pytest.raises(CacheError, match="owned by uid"):
        cache.DiskCache(private_cache.root).get(key)


def test_shared_writable_cache_is_refused(tmp_path):
    root = tmp_path / "shared"
    root.mkdir()
    os.chmod(root, 0o777)
    with pytest.raises(CacheError, match="writable by group or others"):
        cache.DiskCache(root).entry("e" * 64, _write("x"))


def _build_in_child(root, key, log, barrier):
    from asp_core import cache as c

    def build(folder):
        with open(log, "a") as f:
            f.write("built\n")
        time.sleep(0.5)  # long enough for the other process to arrive and wait
        (folder / "artifact.txt").write_text("shared")

    barrier.wait()
    entry = c.DiskCache(root).entry(key, build)
    assert (entry / "artifact.txt").read_text() == "shared"


def test_two_processes_building_the_same_key_build_once(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    log = tmp_path / "log.txt"
    root = tmp_path / "cache"
    procs = [ctx.Process(target=_build_in_child, args=(root, "b" * 64, log, barrier))
             for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert log.read_text() == "built\n"


def test_keep_failed_and_clear(private_cache):
    path = private_cache.keep_failed("9" * 64, "m.c", "int x")
    assert path.read_text() == "int x"
    private_cache.entry("1" * 64, _write("x"))
    private_cache.clear()
    assert private_cache.get("1" * 64) is None and path.exists()


def test_default_root_honours_setting(tmp_path):
    assert cache.default_cache_root(tmp_path) == tmp_path
    assert cache.disk_cache(tmp_path) is cache.disk_cache(tmp_path)
    assert "asp-sejits" in str(cache.default_cache_root(None))
