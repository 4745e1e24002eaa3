"""Stable cache keys and an on-disk cache of build artifacts, shared safely between processes.

* ``stable_key(*parts)`` hashes a canonical text of ``parts`` (plus the project version) with
  SHA-256; never Python's randomized ``hash()``.
* ``DiskCache(root).entry(key, build)`` returns a folder holding the artifacts for ``key``,
  calling ``build(folder)`` at most once across processes: builders take an exclusive lock per
  key, build into a private temporary folder under ``tmp/`` and rename it into place. Each
  entry has a manifest with the size and SHA-256 of its files (made private, 0600); a
  truncated or corrupt entry is detected on first use and rebuilt, and ``replace(key, build)``
  rebuilds one that verifies but does not work here.
* Loaders open only files a manifest lists: ``verified_bytes(entry, name)`` returns a file's
  bytes checked against its manifest (the bytes hashed are the bytes returned), and
  ``check_entry_file(entry, name)`` checks a file before it is loaded by path (``dlopen``).
* The cache folder is created private (0700). A cache folder that is writable by others or
  owned by another user, or an entry owned by another user, is refused (``CacheError``):
  loading it would run their code. A lock file that is a symbolic link is refused and removed.
* Every file-system fault (no writable folder, the cache deleted or replaced by a file while
  running, a full disk) is a ``CacheError`` naming the path, never an ``OSError``: callers fall
  back and the next call starts again from the disk.
* A build killed half-way leaves its temporary folder; the next build removes such folders
  once they are ``STALE_TMP_SECONDS`` old and no process holds their key's lock.
* An in-process memo in front remembers entries already verified (``clear_memo()``); a hit is
  trusted only while the entry's folder is still the same one (device, inode, change times).
* Each use of an entry (a hit verified or built, or every ``TOUCH_EVERY_S`` while a process
  keeps using an entry it verified) sets the modification time of the key's lock file, so atime
  and noatime mounts do not matter. The size cap that reads these uses is ``asp_core.cache_cap``:
  ``entries()`` and ``prune()`` call it, and each build hands it the bytes it added. It removes
  an entry through ``_discard``, which renames the entry into ``tmp/`` before deleting it, so a
  reader finds a whole entry or none.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import stat
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from . import cache_cap
from .cache_cap import PRUNE_GRACE_S, EntryInfo, Pruned
from .errors import CacheError
from .version import VERSION

log = logging.getLogger("asp.cache")

MANIFEST = "MANIFEST.json"
#: Age from which a temporary build folder whose key nobody is building is removed.
STALE_TMP_SECONDS = 600
_KEY = re.compile(r"[0-9a-f]{64}")
_SHARD = re.compile(r"[0-9a-f]{2}")
#: A process that keeps using an entry it verified records the use at most this often.
TOUCH_EVERY_S = 20.0


def canonical(obj: Any) -> str:
    """A deterministic text for nested data (dicts sorted by key; DAST nodes dumped)."""
    from .dast import Node

    if isinstance(obj, Node):
        return "N:" + obj.dump(indent=None)
    if isinstance(obj, dict):
        items = sorted((canonical(k), canonical(v)) for k, v in obj.items())
        return "{" + ",".join(f"{k}:{v}" for k, v in items) + "}"
    if isinstance(obj, (list, tuple)):
        return "[" + ",".join(canonical(v) for v in obj) + "]"
    if isinstance(obj, (set, frozenset)):
        return "S[" + ",".join(sorted(canonical(v) for v in obj)) + "]"
    if isinstance(obj, bytes):
        return "b:" + obj.hex()
    if isinstance(obj, (str, Path)):
        return json.dumps(str(obj))
    if isinstance(obj, (bool, int, float, type(None))):
        return repr(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
        return type(obj).__name__ + canonical(fields)
    raise TypeError(f"cannot make a stable key from {type(obj).__name__}: {obj!r}")


def stable_key(*parts: Any) -> str:
    """SHA-256 hex digest of the parts' canonical text and the project version."""
    text = f"asp-{VERSION}\0" + canonical(parts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def default_cache_root(cache_dir: Path | None = None) -> Path:
    """``cache_dir`` (from ``ASP_CACHE_DIR``) or the user's cache folder."""
    if cache_dir is not None:
        return Path(cache_dir)
    import platformdirs

    return Path(platformdirs.user_cache_dir("asp-sejits"))


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@contextlib.contextmanager
def _faults(root: Path) -> Iterator[None]:
    """Turn a file-system fault met while using the cache at ``root`` into a ``CacheError``."""
    try:
        yield
    except OSError as exc:
        raise CacheError(f"the cache folder {root} cannot be used ({exc}); set ASP_CACHE_DIR "
                         "to a private folder you can write") from exc


def _ensure_private_dir(path: Path) -> None:
    """Create ``path`` with mode 0700 if missing; refuse it if others could write to it."""
    try:
        os.mkdir(path, 0o700)
        os.chmod(path, 0o700)  # mkdir's mode is filtered by the umask
    except FileExistsError:
        pass
    _check_owned(path, directory=True)


def _check_owned(path: Path, *, directory: bool) -> None:
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise CacheError(f"refusing cache path {path}: it is a symbolic link")
    if directory and not stat.S_ISDIR(st.st_mode):
        raise CacheError(f"refusing cache path {path}: not a directory")
    _check_owner(path, st)
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise CacheError(f"refusing cache path {path}: writable by group or others "
                         f"(mode {stat.S_IMODE(st.st_mode):o}); make it private (chmod 700)")


def _check_owner(path: Path, st: os.stat_result) -> None:
    if st.st_uid != os.getuid():
        raise CacheError(f"refusing cache path {path}: owned by uid {st.st_uid}, not by you "
                         f"(uid {os.getuid()}); loading it could run someone else's code")


def _identity(st: os.stat_result) -> tuple[int, ...]:
    """A folder's identity: device and inode (reused at once by a new folder), and the times
    of its last change (a new folder, or a file added or removed, changes them)."""
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


@dataclasses.dataclass(frozen=True)
class _Verified:
    """An entry verified by this process, the identity of its folder then, and when this
    process last recorded a use of it (``time.monotonic()``)."""

    path: Path
    identity: tuple[int, ...]
    touched: float = 0.0

    @classmethod
    def of(cls, path: Path) -> "_Verified":
        return cls(path, _identity(os.lstat(path)), time.monotonic())

    def touch(self, stamp: Path) -> "_Verified":
        """Record a use (the modification time of ``stamp``, the key's lock file); a stamp that
        cannot be set only makes the entry look older to ``prune``."""
        with contextlib.suppress(OSError):
            os.utime(stamp, follow_symlinks=False)
        return dataclasses.replace(self, touched=time.monotonic())

    def still_there(self) -> bool:
        """True while the entry's folder is the one verified (not deleted, not replaced)."""
        try:
            st = os.lstat(self.path)
        except OSError:
            return False
        return _identity(st) == self.identity and stat.S_ISDIR(st.st_mode)


class DiskCache:
    """Build artifacts kept on disk under ``root``, one folder per key."""

    def __init__(self, root: Path | str):
        self.root = Path(root)

    def _prepare(self) -> None:
        """Create (again, if it was deleted) the private folder and its ``locks/`` and ``tmp/``."""
        self.root.parent.mkdir(parents=True, exist_ok=True)
        _ensure_private_dir(self.root)
        for sub in ("locks", "tmp"):
            _ensure_private_dir(self.root / sub)

    def path_of(self, key: str) -> Path:
        """Where the entry for ``key`` lives (whether or not it exists)."""
        return self.root / key[:2] / key

    def get(self, key: str) -> Path | None:
        """The verified entry for ``key``, or None if absent or invalid."""
        with _faults(self.root):
            self._prepare()
            entry = self.path_of(key)
            return entry if self._use(entry, key) else None

    def entry(self, key: str, build: Callable[[Path], None], what: str | None = None) -> Path:
        """The folder of artifacts for ``key``; ``build(folder)`` fills it if it is missing.
        ``what``: what the entry holds, for the DEBUG log (default: the key)."""
        memo_key = (str(self.root), key)
        hit = _MEMO.get(memo_key)
        if hit is not None:
            if hit.still_there():
                if time.monotonic() - hit.touched > TOUCH_EVERY_S:
                    _MEMO[memo_key] = hit.touch(self._lock(key).path)
                return hit.path
            del _MEMO[memo_key]
        built = 0
        with _faults(self.root):
            self._prepare()
            entry = self.path_of(key)
            if not self._use(entry, key):
                with self._lock(key) as lock:
                    if not self._valid(entry, key):  # another process may have built it
                        started = time.perf_counter()
                        built = self._build(entry, key, build)
                        log.debug("built %s in %.3f s", what or key[:16],
                                  time.perf_counter() - started)
                    lock.touch()
            else:
                log.debug("found %s in the disk cache", what or key[:16])
            _MEMO[memo_key] = _Verified.of(entry)
        if built:
            self._account(built)
        return entry

    def replace(self, key: str, build: Callable[[Path], None]) -> Path:
        """Rebuild the entry for ``key``: it verified, but does not work on this machine (a
        library for another CPU). Another process that already replaced it is trusted."""
        bad = _MEMO.pop((str(self.root), key), None)
        built = 0
        with _faults(self.root):
            self._prepare()
            entry = self.path_of(key)
            with self._lock(key) as lock:
                renewed = bad is not None and not bad.still_there()
                if not (renewed and self._valid(entry, key)):
                    built = self._build(entry, key, build)
                lock.touch()
            _MEMO[(str(self.root), key)] = _Verified.of(entry)
        if built:
            self._account(built)
        return entry

    def _lock(self, key: str, *, shared: bool = False) -> "_FileLock":
        return _FileLock(self.root / "locks" / f"{key}.lock", shared=shared)

    def _use(self, entry: Path, key: str) -> bool:
        """``_valid``, under a shared lock of ``key``, with the use recorded first: ``prune``
        takes that lock exclusively and spares entries used in the last ``PRUNE_GRACE_S``, so
        an entry found valid here stays to be loaded."""
        if not os.path.lexists(entry):
            return False
        with self._lock(key, shared=True) as lock:
            lock.touch()
            return self._valid(entry, key)

    def _build(self, entry: Path, key: str, build: Callable[[Path], None]) -> int:
        """Build ``key`` into ``entry``; returns the bytes of the new entry."""
        if entry.exists() or entry.is_symlink():
            _remove(entry)
        shard = entry.parent
        shard.mkdir(exist_ok=True, mode=0o700)
        _check_owned(shard, directory=True)
        self._remove_stale_tmp()
        tmp = Path(tempfile.mkdtemp(prefix=f"{key}.{os.getpid()}.", dir=self.root / "tmp"))
        try:
            build(tmp)
            files = {}
            for path in sorted(tmp.rglob("*")):
                if path.is_symlink():
                    continue  # never listed, so never loaded
                os.chmod(path, 0o700 if path.is_dir() else 0o600)  # whatever the umask
                if path.is_file():
                    rel = path.relative_to(tmp).as_posix()
                    files[rel] = [path.stat().st_size, _file_digest(path)]
            manifest = json.dumps({"key": key, "version": VERSION, "files": files},
                                  sort_keys=True)
            (tmp / MANIFEST).write_text(manifest)
            os.chmod(tmp / MANIFEST, 0o600)
            os.rename(tmp, entry)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return len(manifest) + sum(size for size, _ in files.values())

    def _remove_stale_tmp(self) -> None:
        """Remove temporary folders left by killed builds: ours, at least ``STALE_TMP_SECONDS``
        old, and (when the name gives the key) with no process holding that key's lock."""
        now = time.time()
        for path in (self.root / "tmp").iterdir():
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            if st.st_uid != os.getuid() or now - st.st_mtime < STALE_TMP_SECONDS:
                continue
            key = path.name.split(".", 1)[0]
            if _KEY.fullmatch(key) and not self._lock(key).free():
                continue  # a build of that key is running
            log.info("removing %s, left by a build that did not finish", path)
            try:
                _remove(path)
            except FileNotFoundError:
                pass  # its builder finished meanwhile (renamed it) or someone else removed it
            except OSError as exc:
                log.warning("cannot remove the stale build folder %s: %s", path, exc)

    def _valid(self, entry: Path, key: str) -> bool:
        """True if ``entry`` holds the verified artifacts of ``key``. Refuses (``CacheError``)
        what another user owns; anything else wrong (missing, a file or a link in its place,
        a truncated or changed file) makes it invalid, to be rebuilt."""
        try:
            st = os.lstat(entry)
        except (FileNotFoundError, NotADirectoryError):
            return False
        _check_owner(entry, st)
        if not stat.S_ISDIR(st.st_mode) or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return False
        try:
            manifest = _read_manifest(entry, key)
            for rel, (size, digest) in manifest["files"].items():
                if not _file_matches(entry / rel, size, digest):
                    return False
        except (OSError, ValueError, KeyError, TypeError):
            return False
        return True

    def keep_failed(self, key: str, filename: str, text: str) -> Path:
        """Keep the source of a failed build (for the error message) and return its path."""
        with _faults(self.root):
            self._prepare()
            folder = self.root / "failed"
            _ensure_private_dir(folder)
            path = folder / f"{key[:16]}-{filename}"
            if path.is_symlink():
                path.unlink()
            path.write_text(text)
        return path

    def clear(self) -> None:
        """Remove every entry (keeps the folder itself)."""
        _MEMO.clear()
        if self.root.exists():
            for child in self.root.iterdir():
                if child.name not in ("locks", "tmp", "failed"):
                    _remove(child)
            if (self.root / "locks").is_dir():
                cache_cap.set_estimate(self, 0)

    # -- the size cap (``asp_core.cache_cap``), and what it uses of the cache -----------------

    def entries(self) -> list[EntryInfo]:
        """Every entry, least recently used first (``cache_cap.entries``). Walks the whole
        cache: for ``prune`` and the command line, never on a call's path."""
        with _faults(self.root):
            return cache_cap.entries(self)

    def prune(self, limit: int, *, idle_s: float = PRUNE_GRACE_S) -> Pruned:
        """Remove entries, least recently used first, until they hold at most ``limit`` bytes,
        sparing those locked or used in the last ``idle_s`` seconds (``cache_cap.prune``)."""
        with _faults(self.root):
            return cache_cap.prune(self, limit, idle_s=idle_s)

    def _account(self, nbytes: int) -> None:
        """Add a new entry's bytes to the running estimate, pruning past the cap
        (``cache_cap.account``); a fault only leaves the cap unkept this time."""
        try:
            with _faults(self.root):
                cache_cap.account(self, nbytes)
        except CacheError as exc:  # the entry is built: only the cap is not kept this time
            log.warning("cannot keep the cache %s under its cap: %s", self.root, exc)

    def _entry_folders(self) -> Iterator[Path]:
        """The folders of the entries: real folders named by a key, in that key's shard."""
        for shard in _subfolders(self.root):
            if _SHARD.fullmatch(shard.name):
                yield from (path for path in _subfolders(shard)
                            if _KEY.fullmatch(path.name) and path.name[:2] == shard.name)

    @staticmethod
    def _listed_files(entry: Path) -> tuple[str, ...]:
        """The files that ``entry``'s manifest lists (of any key or version); none if it has
        no readable manifest."""
        try:
            manifest = entry / MANIFEST
            if not stat.S_ISREG(os.lstat(manifest).st_mode):
                raise ValueError("not a regular file")
            return tuple(sorted(json.loads(manifest.read_text())["files"]))
        except (OSError, ValueError, KeyError, TypeError):
            return ()

    def _discard(self, entry: Path) -> bool:
        """Remove the folder ``entry`` (its key's lock held by the caller): renamed into ``tmp/``
        first, so a reader finds a whole entry or none. True if it is gone."""
        key = entry.name
        grave = Path(tempfile.mkdtemp(prefix=f"{key}.{os.getpid()}.pruned.",
                                      dir=self.root / "tmp"))
        try:
            os.rename(entry, grave)  # replaces the empty folder
        except OSError as exc:
            os.rmdir(grave)
            if not isinstance(exc, FileNotFoundError):  # else someone removed it meanwhile
                log.warning("cannot prune %s: %s", entry, exc)
                return False
        else:
            try:
                _remove(grave)
            except OSError as exc:  # out of the cache already; a later build removes it
                log.warning("cannot remove the pruned entry %s: %s", grave, exc)
        _MEMO.pop((str(self.root), key), None)
        return True


def _read_manifest(entry: Path, key: str) -> dict:
    """The manifest of ``entry``; ``ValueError`` unless it is ``key``'s, of this version."""
    manifest = json.loads((entry / MANIFEST).read_text())
    if manifest.get("key") != key or manifest.get("version") != VERSION:
        raise ValueError(f"{entry / MANIFEST} is not the manifest of {key} ({VERSION})")
    return manifest


def _file_matches(path: Path, size: int, digest: str) -> bool:
    """True if ``path`` is a regular file of ours, private, of that size and digest."""
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        return False
    _check_owner(path, st)
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or st.st_size != size:
        return False
    return _file_digest(path) == digest


def _entry_files(entry: Path) -> dict:
    """The manifest's files of cache entry ``entry`` (a folder of ours named by its key);
    ``CacheError`` if it is not one."""
    entry = Path(entry)
    try:
        st = os.lstat(entry)
        _check_owner(entry, st)
        if not stat.S_ISDIR(st.st_mode):
            raise CacheError(f"refusing {entry}: not a cache entry folder")
        files = _read_manifest(entry, entry.name)["files"]
        if not isinstance(files, dict):
            raise ValueError("its list of files is not a mapping")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CacheError(f"refusing {entry}: not a cache entry with a valid manifest "
                         f"({type(exc).__name__}: {exc})") from exc
    return files


def _entry_record(entry: Path, name: str) -> tuple[int, str]:
    """The manifest's (size, digest) of ``name`` in ``entry``; ``CacheError`` if unlisted."""
    record = _entry_files(entry).get(name)
    if not (isinstance(record, list) and len(record) == 2):
        raise CacheError(f"refusing {Path(entry) / name}: not listed in the manifest of its "
                         "cache entry")
    return record[0], record[1]


def verified_bytes(entry: Path, name: str, *, optional: bool = False) -> bytes | None:
    """The bytes of file ``name`` of cache entry ``entry``, checked against its manifest.

    The bytes returned are the bytes hashed, so what is checked is what is used. Raises
    ``CacheError`` if the file is not listed (with ``optional``: returns None), missing, or
    differs from its manifest record, or if ``entry`` is not a cache entry of ours.
    """
    if optional and name not in _entry_files(entry):
        return None
    size, digest = _entry_record(entry, name)
    path = Path(entry) / name
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            _check_owner(path, os.fstat(f.fileno()))
            data = f.read()
    except OSError as exc:
        raise CacheError(f"cannot read {path}: {exc}") from exc
    if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
        raise CacheError(f"refusing {path}: it differs from its manifest (truncated or changed)")
    return data


def check_entry_file(entry: Path, name: str) -> Path:
    """The path of file ``name`` of cache entry ``entry``, once it is known to match the
    manifest (free if this process verified the entry and it is still the same folder).
    For files loaded by path, such as a shared library given to ``dlopen``."""
    entry = Path(entry)
    path = entry / name
    size, digest = _entry_record(entry, name)
    hit = _MEMO.get((str(entry.parent.parent), entry.name))
    if hit is not None and hit.path == entry and hit.still_there():
        return path
    try:
        matches = _file_matches(path, size, digest)
    except OSError as exc:
        raise CacheError(f"cannot read {path}: {exc}") from exc
    if not matches:
        raise CacheError(f"refusing {path}: it differs from its manifest (truncated or changed)")
    return path


def _subfolders(folder: Path) -> list[Path]:
    """The real folders in ``folder`` (never a link); none if it is missing."""
    try:
        with os.scandir(folder) as it:
            return [Path(e.path) for e in it if e.is_dir(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


class _FileLock:
    """An exclusive (or ``shared``) ``flock`` on a file, held for a ``with`` block (waits for
    other holders), or taken by ``try_acquire`` without waiting and let go by ``release``.

    The lock file is opened without following links: one that is a symbolic link is refused
    (``CacheError``) and the link removed, so the next build makes a proper lock file. While
    held, its modification time (``touch``, ``mtime``) records the last use of the key's entry,
    and the lock of the size estimate holds the estimate as its text (``read``, ``write``).
    """

    def __init__(self, path: Path, *, shared: bool = False):
        self.path = path
        self.shared = shared
        self._fd: int | None = None

    def _open(self) -> int:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            os.unlink(self.path)  # the link itself, never what it points to
            raise CacheError(f"refusing lock file {self.path}: it was a symbolic link (removed "
                             "it; the next build makes a new lock file)") from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            os.close(fd)
            raise CacheError(f"refusing lock file {self.path}: not a regular file of yours")
        return fd

    def free(self) -> bool:
        """True if no process holds this lock now (a lock file that is missing is free)."""
        if not self.path.exists() and not self.path.is_symlink():
            return True
        try:
            fd = self._open()
        except (OSError, CacheError):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        finally:
            os.close(fd)  # closing releases the lock if it was taken
        return True

    def __enter__(self) -> "_FileLock":
        fd = self._open()
        try:
            fcntl.flock(fd, fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def try_acquire(self) -> bool:
        """Take the lock if no process holds it (never waits); True if taken."""
        fd = self._open()
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        assert self._fd is not None
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def touch(self, when: float | None = None) -> None:
        """Set the lock file's modification time to ``when`` (default: now)."""
        assert self._fd is not None
        os.utime(self._fd, None if when is None else (when, when))

    def mtime(self) -> float:
        assert self._fd is not None
        return os.fstat(self._fd).st_mtime

    def read(self) -> str:
        assert self._fd is not None
        return os.pread(self._fd, 64, 0).decode("ascii", "replace").strip()

    def write(self, text: str) -> None:
        assert self._fd is not None
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, text.encode("ascii"), 0)


_MEMO: dict[tuple[str, str], _Verified] = {}


def clear_memo() -> None:
    """Forget which entries this process already verified."""
    _MEMO.clear()


_CACHES: dict[str, DiskCache] = {}


def disk_cache(cache_dir: Path | None = None) -> DiskCache:
    """The cache at ``cache_dir`` (default: the user cache folder), one object per folder."""
    root = default_cache_root(cache_dir)
    cache = _CACHES.get(str(root))
    if cache is None:
        cache = _CACHES[str(root)] = DiskCache(root)
    return cache
