"""Which compiled variants the disk cache holds: so that a new process prices a variant that an
earlier one compiled at the cost of loading it, not of compiling it again.

A variant's library is cached on disk under a key of its generated source, which is only
known once the code is generated. So after each build the runner records a small entry under
a key of what the code was generated from (``NestRunner._memo``: the nest, its schedule, the
subscripts' modes, the loop ranges, the call signature, the OpenMP settings) and the compiler
settings; ``compiled_before`` looks that entry up (a verified cache entry: see
``asp_core.cache``). A missing or damaged entry only makes the model predict a compile.
"""

from __future__ import annotations

from asp_core.cache import stable_key
from asp_core.errors import CacheError

INDEX = "loopnest-variant-index"


def index_key(analysis, memo: tuple) -> str | None:
    """The index key of an executor ``memo`` of ``analysis`` (None if it has no stable
    text)."""
    from asp_core import config

    settings = config.current()
    try:
        return stable_key(INDEX, analysis.nest, tuple(_text(part) for part in memo),
                          settings.cc, settings.cflags)
    except TypeError:
        return None


def _text(part) -> object:
    """A part of an executor memo as stable data (signatures print themselves stably)."""
    if isinstance(part, tuple):
        return tuple(_text(p) for p in part)
    if isinstance(part, frozenset):
        return tuple(sorted(part))
    if hasattr(part, "dump") or isinstance(part, (str, int, float, bool, type(None))):
        return part
    return str(part)


def record(key: str | None) -> None:
    """Note that the variant of ``key`` was compiled into the disk cache."""
    if key is None:
        return
    try:
        _cache().entry(key, lambda folder: (folder / "compiled").write_text("1"),
                       "the note that a variant was compiled (cost.index)")
    except CacheError:
        pass  # no usable cache: nothing to remember, and nothing to find later either


def compiled_before(key: str | None) -> bool:
    """Whether a variant of ``key`` was compiled into the disk cache (by any process)."""
    if key is None:
        return False
    try:
        return _cache().get(key) is not None
    except CacheError:
        return False


def _cache():
    from asp_core import config
    from asp_core.cache import disk_cache

    return disk_cache(config.current().cache_dir)
