"""The disk cache's size cap: its entries listed by last use, and pruned least recently used first.

* ``max_bytes()`` is the cap (``ASP_CACHE_MAX_BYTES``, a size for ``parse_size``; default
  ``DEFAULT_MAX_BYTES``, 1 GiB). The cache records each use of an entry as the modification time
  of the key's lock file (``asp_core.cache``), so atime and noatime mounts do not matter.
* ``account(cache, nbytes)`` adds a new entry's bytes to a running estimate (the text of
  ``locks/size.lock``); only when the estimate passes the cap does it walk the cache and prune it
  to ``PRUNE_TO`` of the cap, so a call never walks the cache.
* ``entries(cache)`` lists the entries (``EntryInfo``), least recently used first, for pruning
  and the command line; ``tree_bytes(folder)`` measures a folder.
* ``prune(cache, limit)`` removes entries (``Pruned``) until they hold at most ``limit`` bytes.
  It takes each key's lock without waiting and skips an entry that is locked (being built,
  replaced or verified: a reader verifies under a shared lock) or used in the last
  ``PRUNE_GRACE_S`` seconds (about to be loaded); the cache renames the entry away before
  deleting it, so a reader finds a whole entry or none.

``asp_core.cache`` imports this module, never the reverse: the functions take the cache (a
``DiskCache``, see ``Store``) and use its locks, layout and manifests; its ``entries`` and
``prune`` methods call them and turn file-system faults into ``CacheError``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import re
import stat
import time
from pathlib import Path
from typing import Iterator, Protocol

from .errors import CacheError

log = logging.getLogger("asp.cache")

#: The cap on the entries' total size unless ``ASP_CACHE_MAX_BYTES`` sets another.
DEFAULT_MAX_BYTES = 1 << 30
#: Pruning after a build leaves at most this share of the cap, so the next builds do not prune.
PRUNE_TO = 0.75
#: An entry used this recently is never pruned: a process may be about to load it.
PRUNE_GRACE_S = 60.0
#: The name under ``locks/`` of the lock that holds the running estimate (keys are hex digests).
_ESTIMATE = "size"
_SIZE = re.compile(r"(\d+(?:\.\d*)?)\s*([kmgt]?)(?:i?b)?", re.IGNORECASE)


def parse_size(text: str) -> int:
    """Bytes from a size such as ``1048576``, ``500M`` or ``2G`` (K, M, G, T: powers of 1024;
    ``KiB``, ``MB`` and the like read the same); ``ValueError`` if it is not one."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not a size: {text!r} (examples: 1048576, 500M, 2G)")
    return int(float(match.group(1)) * 1024 ** " kmgt".index(match.group(2).lower() or " "))


def max_bytes(environ: dict[str, str] | None = None) -> int | None:
    """The cap on the entries' total size: ``ASP_CACHE_MAX_BYTES`` (a size for ``parse_size``;
    ``0``, ``none`` or ``off``: no cap), else ``DEFAULT_MAX_BYTES``. A value that is not a size
    is logged and the default used."""
    text = (os.environ if environ is None else environ).get("ASP_CACHE_MAX_BYTES", "").strip()
    if not text:
        return DEFAULT_MAX_BYTES
    if text.lower() in ("0", "none", "off"):
        return None
    try:
        return parse_size(text)
    except ValueError as exc:
        log.warning("ASP_CACHE_MAX_BYTES: %s; using the default cap of %d bytes", exc,
                    DEFAULT_MAX_BYTES)
        return DEFAULT_MAX_BYTES


def tree_bytes(folder: Path) -> int:
    """The bytes of the regular files under ``folder`` (links not followed)."""
    total = 0
    for dirpath, _dirs, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                st = os.lstat(os.path.join(dirpath, name))
                total += st.st_size if stat.S_ISREG(st.st_mode) else 0
    return total


@dataclasses.dataclass(frozen=True)
class EntryInfo:
    """One cache entry as ``DiskCache.entries()`` lists it: bytes on disk, last use (seconds
    since the epoch) and the files its manifest lists (none if it has no readable manifest)."""

    key: str
    path: Path
    size: int
    last_used: float
    files: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Pruned:
    """What ``DiskCache.prune`` did: the entries removed, those past the size that it kept (in
    use, or used in the last ``PRUNE_GRACE_S``), and the bytes the entries hold now."""

    removed: tuple[EntryInfo, ...]
    kept: tuple[EntryInfo, ...]
    total: int


class Lock(Protocol):
    """A lock of the cache (``asp_core.cache._FileLock``), as this module uses it."""

    path: Path

    def __enter__(self) -> "Lock": ...
    def __exit__(self, *exc: object) -> None: ...
    def try_acquire(self) -> bool: ...
    def release(self) -> None: ...
    def mtime(self) -> float: ...
    def read(self) -> str: ...
    def write(self, text: str) -> None: ...


class Store(Protocol):
    """What the cap needs of the disk cache (``asp_core.cache.DiskCache``)."""

    root: Path

    def entries(self) -> list[EntryInfo]: ...
    def prune(self, limit: int, *, idle_s: float = PRUNE_GRACE_S) -> Pruned: ...
    def _prepare(self) -> None: ...
    def _lock(self, key: str, *, shared: bool = False) -> Lock: ...
    def _entry_folders(self) -> Iterator[Path]: ...
    def _listed_files(self, entry: Path) -> tuple[str, ...]: ...
    def _discard(self, entry: Path) -> bool: ...


def entries(cache: Store) -> list[EntryInfo]:
    """Every entry of ``cache``, least recently used first. Walks the whole cache: for
    ``prune`` and the command line, never on a call's path."""
    found = [info for path in cache._entry_folders()
             if (info := _describe(cache, path)) is not None]
    return sorted(found, key=lambda info: info.last_used)


def _describe(cache: Store, entry: Path) -> EntryInfo | None:
    """``entry`` as listed; None if it vanished meanwhile (pruned by another process)."""
    try:
        built = os.lstat(entry).st_mtime
        size = tree_bytes(entry)
    except FileNotFoundError:
        return None
    try:  # the last use, else (no lock file: an older cache) when it was built
        last_used = os.lstat(cache._lock(entry.name).path).st_mtime
    except FileNotFoundError:
        last_used = built
    return EntryInfo(entry.name, entry, size, last_used, cache._listed_files(entry))


def prune(cache: Store, limit: int, *, idle_s: float = PRUNE_GRACE_S) -> Pruned:
    """Remove entries of ``cache``, least recently used first, until they hold at most
    ``limit`` bytes, and set the running estimate to what is left.

    An entry goes only if no process holds its key's lock (building, replacing or verifying
    it) and it was not used in the last ``idle_s`` seconds; the cache renames it into ``tmp/``
    and deletes it there under its lock, so a reader finds a whole entry or none.
    """
    if not os.path.lexists(cache.root):
        return Pruned((), (), 0)
    cache._prepare()
    listed = cache.entries()
    total = sum(info.size for info in listed)
    removed, kept = [], []
    for info in listed:
        if total <= limit:
            break
        if _evict(cache, info, idle_s):
            removed.append(info)
            total -= info.size
        else:
            kept.append(info)
    set_estimate(cache, total)
    if removed:
        log.info("pruned %d cache entries (%d bytes); %d bytes left", len(removed),
                 sum(info.size for info in removed), total)
    return Pruned(tuple(removed), tuple(kept), total)


def _evict(cache: Store, info: EntryInfo, idle_s: float) -> bool:
    """Remove ``info``'s entry if its lock is free and it is idle; True if it is gone."""
    lock = cache._lock(info.key)
    try:  # no lock file (an older cache): make one that does not look like a use
        fd = os.open(lock.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        pass  # the usual case (or a reader made it just now: then it is a use)
    else:
        os.utime(fd, (info.last_used, info.last_used))
        os.close(fd)
    try:
        if not lock.try_acquire():
            return False  # being built, replaced or verified
    except CacheError:
        return False  # its lock file was a link (now removed): leave it this time
    try:
        if time.time() - lock.mtime() < idle_s:
            return False
        return cache._discard(info.path)
    finally:
        lock.release()


def set_estimate(cache: Store, total: int) -> None:
    """Set the running estimate of the entries' bytes (after a walk, or 0 once cleared)."""
    with cache._lock(_ESTIMATE) as lock:
        lock.write(str(total))


def account(cache: Store, nbytes: int) -> None:
    """Add a new entry's bytes to the running estimate; past the cap (``max_bytes()``), or with
    no estimate yet, walk the cache and prune it to ``PRUNE_TO`` of the cap. File-system
    faults are the caller's to handle (``OSError``, ``CacheError``)."""
    cap = max_bytes()
    with cache._lock(_ESTIMATE) as lock:
        text = lock.read()
        estimate = int(text) + nbytes if text.isdigit() else None
        if estimate is not None:
            lock.write(str(estimate))
    if cap is not None and (estimate is None or estimate > cap):
        cache.prune(int(cap * PRUNE_TO))
