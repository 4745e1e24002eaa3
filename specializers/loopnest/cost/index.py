"""Which compiled variants the disk cache holds: so that a new process prices a variant that an
earlier one compiled at the cost of loading it, not of compiling it again.

A variant's library is cached on disk under a key of its generated source, which is only
known once the code is generated. So after each build the runner records a small entry under
a key of what the code was generated from (``NestRunner._memo``: the nest, its schedule, the
subscripts' modes, the loop ranges, the call signature, the OpenMP settings) and the compiler
settings; ``compiled_before`` looks that entry up (a verified cache entry: see
``asp_core.cache``). A missing or damaged entry only makes the model predict a compile. One
more entry per kernel method (``kernel_key``) says that some variant of it was compiled, for a
first call that must decide whether analysing it pays before any variant's key is known.
"""

from __future__ import annotations

from asp_core.cache import stable_key
from asp_core.errors import CacheError

INDEX = "loopnest-variant-index"
KERNEL_INDEX = "loopnest-kernel-index"


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


def kernel_key(func) -> str:
    """The index key of a kernel method: a process that compiled any variant of one of its
    nests notes it under this key (``record``), so that the method's first call in a later
    process knows a variant need only be loaded (``coldstart``). From the method's name and
    bytecode, which change with its source."""
    return stable_key(KERNEL_INDEX, func.__module__, func.__qualname__,
                      _code_text(func.__code__))


def _code_text(code) -> tuple:
    """A code object as stable data (nested code objects, such as comprehensions', by their
    own text: their repr holds an address)."""
    return (code.co_code.hex(), code.co_names, code.co_varnames,
            tuple(_code_text(c) if hasattr(c, "co_code") else repr(c) for c in code.co_consts))


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
