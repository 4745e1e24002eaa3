"""cache: the size cap. Entries listed with their last use, pruned least recently used first,
never while locked or just used, renamed away before deletion; the automatic cap after builds;
no walk of the cache on a call's path."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from asp_core import cache, cache_cap


def _bytes(n, tag="x"):
    def build(folder: Path):
        (folder / "artifact.bin").write_bytes(tag.encode() * n)
    return build


def _key(i: int) -> str:
    return f"{i:02x}" * 32


def _age(disk: cache.DiskCache, key: str, seconds_ago: float) -> None:
    """Set the last use of ``key``'s entry to ``seconds_ago``."""
    when = time.time() - seconds_ago
    os.utime(disk.root / "locks" / f"{key}.lock", (when, when))


def _filled(disk, count=4, size=1000):
    """``count`` entries of about ``size`` bytes, the first the least recently used."""
    keys = [_key(i) for i in range(count)]
    for age, key in zip(range(count, 0, -1), keys):
        disk.entry(key, _bytes(size))
        _age(disk, key, 1000 * age)
    cache.clear_memo()
    return keys


def test_parse_size_and_the_cap_setting(caplog):
    assert cache_cap.parse_size("1048576") == 1 << 20
    assert cache_cap.parse_size("500M") == 500 << 20 and cache_cap.parse_size("2 GiB") == 2 << 30
    assert cache_cap.parse_size("1.5k") == 1536 and cache_cap.parse_size("10kb") == 10240
    with pytest.raises(ValueError, match="not a size"):
        cache_cap.parse_size("lots")
    assert cache_cap.max_bytes({}) == cache_cap.DEFAULT_MAX_BYTES == 1 << 30
    assert cache_cap.max_bytes({"ASP_CACHE_MAX_BYTES": "64M"}) == 64 << 20
    for off in ("0", "none", "OFF"):
        assert cache_cap.max_bytes({"ASP_CACHE_MAX_BYTES": off}) is None
    assert cache_cap.max_bytes({"ASP_CACHE_MAX_BYTES": "big"}) == cache_cap.DEFAULT_MAX_BYTES
    assert "ASP_CACHE_MAX_BYTES" in caplog.text


def test_entries_lists_size_files_and_last_use(private_cache):
    keys = _filled(private_cache, 3)
    listed = private_cache.entries()
    assert [e.key for e in listed] == keys  # least recently used first
    for info in listed:
        assert info.files == ("artifact.bin",) and info.path == private_cache.path_of(info.key)
        assert info.size == cache_cap.tree_bytes(info.path) > 1000
    assert cache.DiskCache(private_cache.root / "missing").entries() == []


def test_prune_keeps_the_most_recently_used(private_cache):
    keys = _filled(private_cache, 4)
    size = private_cache.entries()[0].size
    pruned = private_cache.prune(2 * size)
    assert [e.key for e in pruned.removed] == keys[:2] and pruned.total == 2 * size
    assert [private_cache.get(k) is not None for k in keys] == [False, False, True, True]
    assert list((private_cache.root / "tmp").iterdir()) == []


def test_a_use_counts_as_recent(private_cache):
    keys = _filled(private_cache, 3)
    assert private_cache.get(keys[0]) is not None  # verified from disk: used now
    _age(private_cache, keys[0], 10)
    pruned = private_cache.prune(private_cache.entries()[0].size, idle_s=0)
    assert [e.key for e in pruned.removed] == keys[1:]


def test_memo_hits_record_their_use_now_and_then(private_cache, monkeypatch):
    (key,) = _filled(private_cache, 1)
    lock = private_cache.root / "locks" / f"{key}.lock"
    private_cache.entry(key, _bytes(1))      # from disk: recorded
    assert time.time() - lock.stat().st_mtime < 60
    _age(private_cache, key, 1000)
    private_cache.entry(key, _bytes(1))      # a memo hit, recorded a moment ago: not again
    assert time.time() - lock.stat().st_mtime > 900
    monkeypatch.setattr(cache, "TOUCH_EVERY_S", 0.0)
    private_cache.entry(key, _bytes(1))
    assert time.time() - lock.stat().st_mtime < 60


def test_recently_used_entries_are_kept(private_cache):
    private_cache.entry(_key(1), _bytes(100))
    pruned = private_cache.prune(0)
    assert pruned.removed == () and [e.key for e in pruned.kept] == [_key(1)]
    assert private_cache.prune(0, idle_s=0).total == 0


def test_locked_entries_are_not_pruned(private_cache):
    keys = _filled(private_cache, 3)
    with private_cache._lock(keys[0]), private_cache._lock(keys[1], shared=True):
        pruned = private_cache.prune(0)  # a build of keys[0], a reader verifying keys[1]
    assert [e.key for e in pruned.removed] == [keys[2]]
    assert {e.key for e in pruned.kept} == set(keys[:2])
    assert private_cache.get(keys[0]) and private_cache.get(keys[1])


def test_an_entry_locked_by_another_process_is_not_pruned(private_cache):
    keys = _filled(private_cache, 2)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys; f = open(sys.argv[1], 'r+'); "
         "fcntl.flock(f, fcntl.LOCK_EX); print('locked', flush=True); sys.stdin.read()",
         str(private_cache.root / "locks" / f"{keys[0]}.lock")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        pruned = private_cache.prune(0)
    finally:
        holder.communicate("", timeout=30)
    assert [e.key for e in pruned.removed] == [keys[1]]
    assert private_cache.get(keys[0]) is not None


def test_entries_are_renamed_away_before_deletion(private_cache, monkeypatch):
    (key,) = _filled(private_cache, 1)
    entry = private_cache.path_of(key)
    seen = []
    remove = cache._remove

    def watch(path):
        seen.append((path.parent.name, path.name.startswith(f"{key}."), entry.exists()))
        remove(path)

    monkeypatch.setattr(cache, "_remove", watch)
    assert len(private_cache.prune(0).removed) == 1
    assert seen == [("tmp", True, False)] and not entry.exists()


def test_an_entry_without_a_lock_file_is_aged_by_its_build_time(private_cache):
    keys = _filled(private_cache, 2)
    for key, age in zip(keys, (5000, 5)):
        (private_cache.root / "locks" / f"{key}.lock").unlink()
        past = time.time() - age
        os.utime(private_cache.path_of(key), (past, past))
    assert [e.key for e in private_cache.entries()] == keys
    pruned = private_cache.prune(0)
    assert [e.key for e in pruned.removed] == keys[:1] and [e.key for e in pruned.kept] == keys[1:]
    # trying it made its lock file, without making it look used now
    assert time.time() - (private_cache.root / "locks" / f"{keys[1]}.lock").stat().st_mtime > 3


def test_the_cap_is_kept_after_builds(private_cache, monkeypatch):
    monkeypatch.setenv("ASP_CACHE_MAX_BYTES", "8K")
    for i in range(12):
        private_cache.entry(_key(i), _bytes(1500))
        _age(private_cache, _key(i), 1000 - i)  # built in order, each idle since
        total = sum(e.size for e in private_cache.entries())
        assert total <= 8192
    kept = [e.key for e in private_cache.entries()]
    assert kept == [_key(i) for i in range(12 - len(kept), 12)] and len(kept) >= 3
    estimate = (private_cache.root / "locks" / "size.lock").read_text()
    assert int(estimate) == sum(e.size for e in private_cache.entries())


def test_no_cap_and_an_unusable_cap_never_fail_a_build(private_cache, monkeypatch):
    monkeypatch.setenv("ASP_CACHE_MAX_BYTES", "0")
    for i in range(3):
        private_cache.entry(_key(i), _bytes(5000))
    assert len(private_cache.entries()) == 3
    monkeypatch.setenv("ASP_CACHE_MAX_BYTES", "1K")
    monkeypatch.setattr(cache.DiskCache, "prune", _raises(cache.CacheError("disk on fire")))
    assert private_cache.entry(_key(9), _bytes(10)).is_dir()


def _raises(exc):
    def fail(*args, **kwargs):
        raise exc
    return fail


def test_calls_do_not_walk_the_cache(private_cache, monkeypatch):
    private_cache.entry(_key(0), _bytes(10))  # a first build measures the cache once
    monkeypatch.setattr(cache.DiskCache, "entries", _raises(AssertionError("walked")))
    private_cache.entry(_key(0), _bytes(10))  # a memo hit
    cache.clear_memo()
    private_cache.entry(_key(0), _bytes(10))  # verified from disk
    assert private_cache.get(_key(0)) is not None
    private_cache.entry(_key(1), _bytes(10))  # a build well under the cap: the estimate only
    assert private_cache.get(_key(2)) is None


def test_clear_resets_the_estimate(private_cache):
    private_cache.entry(_key(0), _bytes(10))
    private_cache.clear()
    assert (private_cache.root / "locks" / "size.lock").read_text() == "0"
    assert private_cache.prune(0).total == 0
