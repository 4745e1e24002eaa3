"""Stable cache keys and an on-disk cache of build artifacts, shared safely between processes.

* ``stable_key(*parts)`` hashes a canonical text of ``parts`` (plus the project version) with
  SHA-256; never Python's randomized ``hash()``.
* ``DiskCache(root).entry(key, build)`` returns a folder holding the artifacts for ``key``,
  calling ``build(folder)`` at most once across processes: builders take an exclusive lock per
  key, build into a private temporary folder and rename it into place. Each entry has a
  manifest with the size and SHA-256 of its files; a truncated or corrupt entry is detected on
  first use and rebuilt.
* The cache folder is created private (0700). A folder or entry that is writable by others or
  owned by another user is refused (``CacheError``): loading it would run their code.
* An in-process memo in front remembers entries already verified (``clear_memo()``).
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any, Callable

from .errors import CacheError
from .version import VERSION

MANIFEST = "MANIFEST.json"


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
    if st.st_uid != os.getuid():
        raise CacheError(f"refusing cache path {path}: owned by uid {st.st_uid}, not by you "
                         f"(uid {os.getuid()}); loading it could run someone else's code")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise CacheError(f"refusing cache path {path}: writable by group or others "
                         f"(mode {stat.S_IMODE(st.st_mode):o}); make it private (chmod 700)")


class DiskCache:
    """Build artifacts kept on disk under ``root``, one folder per key."""

    def __init__(self, root: Path | str):
        self.root = Path(root)
        self._ready = False

    def _prepare(self) -> None:
        if self._ready:
            return
        self.root.parent.mkdir(parents=True, exist_ok=True)
        _ensure_private_dir(self.root)
        for sub in ("locks", "tmp"):
            _ensure_private_dir(self.root / sub)
        self._ready = True

    def folder(self, name: str) -> Path:
        """A private sub-folder for files kept outside the keyed entries (e.g. Mako's
        compiled templates)."""
        self._prepare()
        path = self.root / name
        _ensure_private_dir(path)
        return path

    def path_of(self, key: str) -> Path:
        return self.root / key[:2] / key

    def get(self, key: str) -> Path | None:
        """The verified entry for ``key``, or None if absent or invalid."""
        self._prepare()
        entry = self.path_of(key)
        return entry if self._valid(entry, key) else None

    def entry(self, key: str, build: Callable[[Path], None]) -> Path:
        """The folder of artifacts for ``key``; ``build(folder)`` fills it if it is missing."""
        memo_key = (str(self.root), key)
        hit = _MEMO.get(memo_key)
        if hit is not None:
            return hit
        self._prepare()
        entry = self.path_of(key)
        if not self._valid(entry, key):
            with self._lock(key):
                if not self._valid(entry, key):  # another process may have built it meanwhile
                    self._build(entry, key, build)
        _MEMO[memo_key] = entry
        return entry

    def _lock(self, key: str):
        return _FileLock(self.root / "locks" / f"{key}.lock")

    def _build(self, entry: Path, key: str, build: Callable[[Path], None]) -> None:
        if entry.exists() or entry.is_symlink():
            _remove(entry)
        shard = entry.parent
        shard.mkdir(exist_ok=True, mode=0o700)
        _check_owned(shard, directory=True)
        tmp = Path(tempfile.mkdtemp(prefix=key[:16] + "-", dir=self.root / "tmp"))
        try:
            build(tmp)
            files = {}
            for path in sorted(tmp.rglob("*")):
                if path.is_file():
                    rel = path.relative_to(tmp).as_posix()
                    files[rel] = [path.stat().st_size, _file_digest(path)]
            manifest = {"key": key, "version": VERSION, "files": files}
            (tmp / MANIFEST).write_text(json.dumps(manifest, sort_keys=True))
            os.rename(tmp, entry)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def _valid(self, entry: Path, key: str) -> bool:
        try:
            _check_owned(entry, directory=True)
        except FileNotFoundError:
            return False
        try:
            manifest = json.loads((entry / MANIFEST).read_text())
            if manifest.get("key") != key or manifest.get("version") != VERSION:
                return False
            for rel, (size, digest) in manifest["files"].items():
                path = entry / rel
                _check_owned(path, directory=False)
                if path.stat().st_size != size or _file_digest(path) != digest:
                    return False
        except (OSError, ValueError, KeyError, TypeError):
            return False
        return True

    def keep_failed(self, key: str, filename: str, text: str) -> Path:
        """Keep the source of a failed build (for the error message) and return its path."""
        self._prepare()
        folder = self.root / "failed"
        _ensure_private_dir(folder)
        path = folder / f"{key[:16]}-{filename}"
        path.write_text(text)
        return path

    def clear(self) -> None:
        """Remove every entry (keeps the folder itself)."""
        _MEMO.clear()
        if self.root.exists():
            for child in self.root.iterdir():
                if child.name not in ("locks", "tmp", "failed"):
                    _remove(child)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


class _FileLock:
    """An exclusive ``flock`` on a file, held for a ``with`` block (waits for other holders)."""

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None

    def __enter__(self) -> "_FileLock":
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc) -> None:
        assert self._fd is not None
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None


_MEMO: dict[tuple[str, str], Path] = {}


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
