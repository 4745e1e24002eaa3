"""cache: stable keys, one build across processes, corrupt entries rebuilt, foreign ones refused;
file-system faults as CacheError, only manifest files read, stale build folders removed."""

import multiprocessing
import os
import shutil
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


# -- environment faults: each is a CacheError naming the path, and the next call works ---------


def test_no_writable_folder_is_a_cache_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(CacheError, match="cannot be used") as info:
        cache.DiskCache(blocker / "cache").entry("e" * 64, _write("x"))
    assert str(blocker) in str(info.value)


def test_cache_deleted_while_running_is_made_again(private_cache):
    first = private_cache.entry("a" * 64, _write("x"))
    shutil.rmtree(private_cache.root)
    assert private_cache.entry("b" * 64, _write("y")).is_dir()  # folders made again
    again = private_cache.entry("a" * 64, _write("x"))  # the memo does not point at nothing
    assert again == first and (again / "artifact.txt").read_text() == "x"


def test_cache_replaced_by_a_file_is_refused_until_repaired(private_cache):
    private_cache.entry("a" * 64, _write("x"))
    shutil.rmtree(private_cache.root)
    private_cache.root.write_text("someone's file")
    for key in ("a" * 64, "b" * 64):
        with pytest.raises(CacheError, match="not a directory"):
            private_cache.entry(key, _write("x"))
    private_cache.root.unlink()
    assert (private_cache.entry("a" * 64, _write("x")) / "artifact.txt").read_text() == "x"


def test_memo_is_dropped_when_the_entry_folder_is_replaced(private_cache):
    entry = private_cache.entry("a" * 64, _write("old"))
    shutil.rmtree(entry)
    entry.mkdir()  # another folder at the same path: not verified by this process
    assert (private_cache.entry("a" * 64, _write("new")) / "artifact.txt").read_text() == "new"


def test_lock_file_that_is_a_symlink_is_refused_removed_and_not_followed(private_cache, tmp_path):
    key = "5" * 64
    private_cache.get(key)  # makes the folders
    target = tmp_path / "victim"
    lock = private_cache.root / "locks" / f"{key}.lock"
    os.symlink(target, lock)
    with pytest.raises(CacheError, match="symbolic link"):
        private_cache.entry(key, _write("x"))
    assert not target.exists() and not lock.is_symlink()
    assert (private_cache.entry(key, _write("x")) / "artifact.txt").read_text() == "x"


def test_entries_are_private_whatever_the_umask(private_cache):
    old = os.umask(0o002)
    try:
        entry = private_cache.entry("6" * 64, _write("x"))
    finally:
        os.umask(old)
    for path in entry.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    cache.clear_memo()  # a new process accepts them (a umask of 002 used to make them refused)
    assert cache.DiskCache(private_cache.root).get("6" * 64) == entry


def test_own_group_writable_entry_is_rebuilt_not_refused(private_cache):
    entry = private_cache.entry("7" * 64, _write("x"))
    os.chmod(entry / "artifact.txt", 0o664)  # as entries made under umask 002 used to be
    cache.clear_memo()
    calls = []
    rebuilt = private_cache.entry("7" * 64, lambda f: (calls.append(1), _write("x")(f)))
    assert calls == [1] and stat.S_IMODE((rebuilt / "artifact.txt").stat().st_mode) == 0o600


def test_entry_replaced_by_a_link_is_rebuilt_without_following_it(private_cache, tmp_path):
    key = "8" * 64
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("keep")
    entry = private_cache.path_of(key)
    entry.parent.mkdir(parents=True, mode=0o700)
    private_cache.get(key)
    os.symlink(elsewhere, entry)
    assert (private_cache.entry(key, _write("x")) / "artifact.txt").read_text() == "x"
    assert (elsewhere / "keep.txt").read_text() == "keep" and not entry.is_symlink()


# -- loaders read only what a manifest lists ----------------------------------------------------


def test_verified_bytes_reads_only_listed_unchanged_files(private_cache):
    entry = private_cache.entry("9" * 64, _write("content"))
    assert cache.verified_bytes(entry, "artifact.txt") == b"content"
    (entry / "planted.py").write_text("raise SystemExit('planted code ran')")
    assert cache.verified_bytes(entry, "planted.py", optional=True) is None
    with pytest.raises(CacheError, match="not listed"):
        cache.verified_bytes(entry, "planted.py")
    with pytest.raises(CacheError, match="not listed"):
        cache.check_entry_file(entry, "planted.py")
    (entry / "artifact.txt").write_text("CONTENT")  # same size, other bytes
    with pytest.raises(CacheError, match="differs from its manifest"):
        cache.verified_bytes(entry, "artifact.txt")
    cache.clear_memo()
    with pytest.raises(CacheError, match="differs from its manifest"):
        cache.check_entry_file(entry, "artifact.txt")
    with pytest.raises(CacheError, match="not a cache entry"):
        cache.verified_bytes(private_cache.root / "tmp", "x")


def test_replace_rebuilds_once_even_when_two_callers_find_it_bad(private_cache):
    key = "3" * 64
    calls = []

    def build(folder):
        calls.append(1)
        (folder / "lib.so").write_text(f"build {len(calls)}")

    private_cache.entry(key, build)
    stale = cache._MEMO[(str(private_cache.root), key)]
    private_cache.replace(key, build)
    assert calls == [1, 1]
    cache._MEMO[(str(private_cache.root), key)] = stale  # a second caller saw the old one
    entry = private_cache.replace(key, build)
    assert calls == [1, 1] and (entry / "lib.so").read_text() == "build 2"


# -- temporary folders of killed builds ----------------------------------------------------------


def _old(path: Path) -> None:
    past = time.time() - cache.STALE_TMP_SECONDS - 60
    os.utime(path, (past, past))


def test_stale_temporary_folders_are_removed_at_the_next_build(private_cache):
    private_cache.get("0" * 64)  # makes the folders
    tmp = private_cache.root / "tmp"
    stale = tmp / f"{'a' * 64}.12345.xyz"
    stale.mkdir()
    (stale / "half.c").write_text("int")
    busy = tmp / f"{'b' * 64}.12346.xyz"
    busy.mkdir()
    young = tmp / f"{'c' * 64}.12347.xyz"
    young.mkdir()
    legacy = tmp / "abcdef0123456789-xyz"  # an older naming: its age alone decides
    legacy.mkdir()
    foreign = tmp / f"{'d' * 64}.12348.xyz"
    foreign.mkdir()
    for path in (stale, busy, legacy, foreign):
        _old(path)
    if os.getuid() == 0:
        os.chown(foreign, 65534, 65534)  # another user's: never removed
    with private_cache._lock("b" * 64):  # a build of that key is running
        private_cache.entry("e" * 64, _write("x"))
    assert not stale.exists() and not legacy.exists()
    assert busy.exists() and young.exists()
    assert foreign.exists() == (os.getuid() == 0)
    assert not any(p.name.startswith("e" * 64) for p in tmp.iterdir())


KILLED_BUILD = """
import sys, time
from pathlib import Path
from asp_core import cache

def build(folder):
    (folder / "half.c").write_text("int")
    print("building", flush=True)
    time.sleep(60)

cache.DiskCache(Path(sys.argv[1])).entry("4" * 64, build)
"""


def test_a_killed_build_leaves_a_folder_the_next_build_removes(private_cache):
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-c", KILLED_BUILD, str(private_cache.root)],
                            cwd=root, stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(root)))
    try:
        assert proc.stdout.readline().strip() == "building"
    finally:
        proc.kill()
        proc.wait(30)
    left = list((private_cache.root / "tmp").iterdir())
    assert len(left) == 1 and left[0].name.startswith("4" * 64)
    private_cache.entry("f" * 64, _write("x"))
    assert left[0].exists()  # too young to be sure
    _old(left[0])
    private_cache.entry("1" * 64, _write("x"))
    assert list((private_cache.root / "tmp").iterdir()) == []
    assert (private_cache.entry("4" * 64, _write("done")) / "artifact.txt").read_text() == "done"
