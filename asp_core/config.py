"""Settings, read explicitly from the environment (never at import time).

| variable          | meaning                                                        |
|-------------------|----------------------------------------------------------------|
| ``ASP_BACKEND``     | force one backend (``python``, ``c``, ``openmp``, ``cuda``, ...) |
| ``ASP_DISABLE_JIT`` | ``1``: run every specialized function as plain Python          |
| ``ASP_CACHE_DIR``   | where compiled variants are kept (default: the user cache dir) |
| ``ASP_CACHE_MAX_BYTES`` | the disk cache's size cap (default 1 GiB; read by ``cache_cap.max_bytes``) |
| ``ASP_DUMP_DIR``    | write generated source and intermediate forms to this folder   |
| ``ASP_CFLAGS``      | optimization flags for C (default ``-O3 -march=native``)       |
| ``ASP_CC``          | the C compiler (default ``$CC``, else ``gcc``)                   |
| ``ASP_NUM_THREADS`` | threads for OpenMP variants (default ``OMP_NUM_THREADS``, else all cores) |
| ``ASP_EXACT_ERRORS`` | ``1``: parallel variants too leave exactly Python's state when they raise |
| ``ASP_EXACT_REDUCTIONS`` | ``1``: reductions keep Python's order of operations (their loops run sequentially) |
| ``ASP_CALIBRATE``   | ``0``/``off``/``no``: no background calibration (cost models use the stored one, else defaults) |
| ``ASP_SELECTION``   | ``fixed``: the old fixed rule instead of the cost model (for comparisons) |
| ``ASP_TILE``        | ``N``: tile every band the analysis allows with blocks of N (tests); ``0``: never tile |
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping

DEFAULT_CFLAGS = ("-O3", "-march=native")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Config:
    """Everything configurable, as one immutable value."""

    backend: str | None = None
    disable_jit: bool = False
    cache_dir: Path | None = None
    dump_dir: Path | None = None
    cflags: tuple[str, ...] = DEFAULT_CFLAGS
    cc: str | None = None
    num_threads: int | None = None
    exact_errors: bool = False
    exact_reductions: bool = False
    selection: str = "model"
    calibrate: bool = True
    tile: int | None = None   # None: the tiling's own choice

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "Config":
        env = os.environ if environ is None else environ

        def path(name: str) -> Path | None:
            value = env.get(name, "").strip()
            return Path(value).expanduser() if value else None

        threads = env.get("ASP_NUM_THREADS", "").strip() or env.get("OMP_NUM_THREADS", "").strip()
        cflags = env.get("ASP_CFLAGS")
        return cls(
            backend=(env.get("ASP_BACKEND", "").strip().lower() or None),
            disable_jit=env.get("ASP_DISABLE_JIT", "").strip().lower() in _TRUE,
            cache_dir=path("ASP_CACHE_DIR"),
            dump_dir=path("ASP_DUMP_DIR"),
            cflags=tuple(shlex.split(cflags)) if cflags is not None else DEFAULT_CFLAGS,
            cc=(env.get("ASP_CC", "").strip() or env.get("CC", "").strip() or None),
            num_threads=_positive_int(threads.split(",")[0]) if threads else None,
            exact_errors=env.get("ASP_EXACT_ERRORS", "").strip().lower() in _TRUE,
            exact_reductions=env.get("ASP_EXACT_REDUCTIONS", "").strip().lower() in _TRUE,
            selection=env.get("ASP_SELECTION", "").strip().lower() or "model",
            calibrate=env.get("ASP_CALIBRATE", "").strip().lower() not in _FALSE,
            tile=_tile(env.get("ASP_TILE", "").strip()),
        )

    def with_(self, **changes) -> "Config":
        """A copy with some settings changed."""
        return replace(self, **changes)


def _tile(text: str) -> int | None:
    if not text:
        return None
    if text.isdigit():
        return int(text)
    raise ValueError(f"ASP_TILE must be a block size (a whole number, 0: never tile), not "
                     f"{text!r}")


def _positive_int(text: str) -> int | None:
    try:
        value = int(text)
    except ValueError:
        return None
    return value if value > 0 else None


def current() -> Config:
    """The configuration the environment describes right now."""
    return Config.from_env()
