"""Measured machine parameters (a "calibration"), stored per machine in the cache folder.

A specializer's cost model multiplies what a variant does by what the machine it runs on takes
to do it; those times are measured once per machine and kept. ``store(name, params)`` writes a
named record of parameters (any JSON data) to ``<cache root>/calibration/<name>-<key>.json``;
``load(name, parse)`` reads it back. The record is keyed by the machine: its processor (model
and feature flags, ``platform.cpu_identity``), the cores this process may use
(``platform.cpu_cores``) and the C compiler (its version line and optimization flags), so a
cache folder shared by two machines never hands one the other's numbers.

Safety follows the disk cache's rules (``asp_core.cache``): the folders are private (0700) and
ours; the record is written to a private temporary file (0600) in the same folder and renamed
into place (a reader sees the old record or the new one, never half of one), and never through
a symbolic link; it is read without following a link. ``load`` never raises: a record that is
missing, truncated, not JSON, of another format version, name or machine, rejected by the
caller's ``parse``, a link, not a regular file, writable by others or owned by another user is
ignored with the reason logged (``asp.calibration``), and ``None`` returned; the caller
measures again and ``store`` replaces it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Generic, Mapping, TypeVar

from . import platform as asp_platform
from .cache import _check_owned, _ensure_private_dir, default_cache_root, stable_key
from .errors import AspError, CacheError

log = logging.getLogger("asp.calibration")

#: Version of the record's envelope (the fields around ``params``).
FORMAT = 1
#: Folder of the records under the cache root.
FOLDER = "calibration"
#: Records larger than this are not read (a calibration is a few kilobytes).
MAX_BYTES = 1 << 20
#: Age from which a temporary file left by a writer that was killed is removed.
STALE_TMP_SECONDS = 600
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")

T = TypeVar("T")


@dataclass(frozen=True)
class MachineIdentity:
    """What a calibration holds for: the machine's processor, cores and C compiler."""

    cpu: str            # ``CpuIdentity.describe()``: architecture, model name, flag count
    cores: int          # cores this process may run on
    compiler: str       # the C compiler's version line, or "none"
    cflags: str         # its optimization flags
    key: str            # SHA-256 over the full identity (the flags of the CPU included)

    def describe(self) -> str:
        return f"{self.cpu}, {self.cores} cores, {self.compiler} {self.cflags}".rstrip()


def machine_identity() -> MachineIdentity:
    """This machine's identity (the compiler named by ``ASP_CC``/``CC``, else gcc)."""
    from . import config as config_module

    cfg = config_module.current()
    cpu = asp_platform.cpu_identity()
    cores = asp_platform.cpu_cores()
    compiler = _compiler_version(cfg)
    cflags = " ".join(cfg.cflags)
    key = stable_key("calibration-machine", repr(cpu), cores, compiler, cfg.cflags)
    return MachineIdentity(cpu=cpu.describe(), cores=cores, compiler=compiler, cflags=cflags,
                           key=key)


def _compiler_version(cfg) -> str:
    from .backends.c import find_c_compiler

    try:
        return find_c_compiler(cfg.cc, cfg.cflags).version
    except AspError as exc:  # no compiler (BackendUnavailable), or no usable cache folder
        log.info("calibration: no C compiler version for the machine key (%s)", exc)
        return "none"


@dataclass(frozen=True)
class Calibration(Generic[T]):
    """A stored calibration: its parameters (as the caller's ``parse`` made them) and where,
    when and for which machine they were measured."""

    name: str
    version: int
    params: T
    created: str               # ISO 8601, UTC, to the second
    machine: MachineIdentity
    path: Path
    note: str = ""             # how it was measured (the caller's words)

    @property
    def date(self) -> str:
        """The day and minute it was measured, for reports: ``2025-01-31 14:05 UTC``."""
        try:
            when = datetime.fromisoformat(self.created)
        except ValueError:
            return self.created
        return when.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

    def describe(self) -> str:
        """One line: what, when, for which machine, and where it is kept."""
        note = f" ({self.note})" if self.note else ""
        return (f"{self.name} calibrated on {self.date}{note} for {self.machine.describe()}; "
                f"stored in {self.path}")


def folder(cache_dir: Path | None = None) -> Path:
    """The folder of the calibration records (``<cache root>/calibration``)."""
    return default_cache_root(cache_dir) / FOLDER


def path_of(name: str, machine: MachineIdentity, cache_dir: Path | None = None) -> Path:
    """Where the record ``name`` of ``machine`` is kept."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"not a calibration name: {name!r} (letters, digits, '_.-')")
    return folder(cache_dir) / f"{name}-{machine.key[:16]}.json"


def store(name: str, version: int, params: Mapping[str, Any], *, note: str = "",
          machine: MachineIdentity | None = None, cache_dir: Path | None = None
          ) -> Calibration[Mapping[str, Any]]:
    """Write the record ``name`` (of the caller's format ``version``) for this machine,
    atomically and privately; returns it. ``CacheError`` (naming the path) if the folder
    cannot be used: missing rights, a full disk, a folder of another user's."""
    machine = machine or machine_identity()
    path = path_of(name, machine, cache_dir)
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    record = {"format": FORMAT, "name": name, "version": version, "created": created,
              "note": note, "machine": vars(machine), "params": dict(params)}
    text = json.dumps(record, indent=1, sort_keys=True, allow_nan=False) + "\n"
    try:
        root = path.parent.parent
        root.parent.mkdir(parents=True, exist_ok=True)
        _ensure_private_dir(root)
        _ensure_private_dir(path.parent)
        _remove_stale_tmp(path.parent)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                os.fchmod(f.fileno(), 0o600)
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)  # replaces a link or a foreign file itself, never its target
        except BaseException:
            _unlink_quietly(Path(tmp))
            raise
    except OSError as exc:
        raise CacheError(f"cannot store the calibration {path}: {exc}") from exc
    log.info("stored the calibration %s", path)
    return Calibration(name=name, version=version, params=dict(params), created=created,
                       machine=machine, path=path, note=note)


def load(name: str, version: int, parse: Callable[[Mapping[str, Any]], T], *,
         machine: MachineIdentity | None = None, cache_dir: Path | None = None
         ) -> Calibration[T] | None:
    """The record ``name`` of this machine in the caller's format ``version``, its parameters
    passed through ``parse`` (which raises ``ValueError``, ``TypeError`` or ``KeyError`` for
    content it rejects); ``None``, with the reason logged, if there is no usable record."""
    try:
        machine = machine or machine_identity()
        path = path_of(name, machine, cache_dir)
    except (ValueError, CacheError) as exc:
        log.warning("calibration %s: not looked up: %s", name, exc)
        return None
    try:
        data = _read_private(path)
    except FileNotFoundError:
        log.info("calibration %s: none stored for this machine (%s)", name, path)
        return None
    except (OSError, CacheError) as exc:
        log.warning("calibration %s: ignoring %s: %s", name, path, exc)
        return None
    try:
        record = json.loads(data.decode("utf-8"))
        _check_envelope(record, name, version, machine)
        params = parse(record["params"])
    except (ValueError, TypeError, KeyError, RecursionError) as exc:  # (JSON nested too deep)
        log.warning("calibration %s: ignoring %s: %s: %s", name, path, type(exc).__name__, exc)
        return None
    return Calibration(name=name, version=version, params=params, created=record["created"],
                       machine=machine, path=path, note=str(record.get("note", "")))


def remove(name: str, *, machine: MachineIdentity | None = None,
           cache_dir: Path | None = None) -> bool:
    """Delete this machine's record ``name`` (the link itself if it is one); True if there
    was one."""
    path = path_of(name, machine or machine_identity(), cache_dir)
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def _read_private(path: Path) -> bytes:
    """The bytes of ``path``: a regular file of ours, not writable by others, in a private
    folder of ours, read without following a link; ``CacheError`` (or ``OSError``) else."""
    _check_owned(path.parent, directory=True)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        if os.path.islink(path):
            raise CacheError("it is a symbolic link") from None
        raise exc
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise CacheError("not a regular file")
        if st.st_uid != os.getuid():
            raise CacheError(f"owned by uid {st.st_uid}, not by you (uid {os.getuid()})")
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise CacheError(f"writable by group or others (mode {stat.S_IMODE(st.st_mode):o})")
        if st.st_size > MAX_BYTES:
            raise CacheError(f"{st.st_size} bytes, more than a calibration holds")
        return f.read(MAX_BYTES + 1)


def _check_envelope(record: Any, name: str, version: int, machine: MachineIdentity) -> None:
    """``ValueError`` unless ``record`` is a record of ``name`` in ``version`` for ``machine``."""
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    if record.get("format") != FORMAT:
        raise ValueError(f"record format {record.get('format')!r}, not {FORMAT}")
    if record.get("name") != name:
        raise ValueError(f"a record of {record.get('name')!r}, not of {name!r}")
    if record.get("version") != version:
        raise ValueError(f"parameters of version {record.get('version')!r}, not {version}")
    stored = record.get("machine")
    if not isinstance(stored, dict) or stored.get("key") != machine.key:
        described = stored.get("cpu") if isinstance(stored, dict) else None
        raise ValueError(f"measured on another machine ({described or 'unknown'})")
    if not isinstance(record.get("created"), str) or not isinstance(record.get("params"), dict):
        raise ValueError("no date or no parameters")


def _remove_stale_tmp(where: Path) -> None:
    """Remove temporary files of ours left by writers killed at least STALE_TMP_SECONDS ago."""
    now = time.time()
    for path in where.glob(".*.tmp"):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        if st.st_uid == os.getuid() and now - st.st_mtime >= STALE_TMP_SECONDS:
            _unlink_quietly(path)


def _unlink_quietly(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
