"""Call guards in C: one native call that says whether a call's arguments match the signature
and binding of the variant the dispatcher ran last, so a warm call need not recompute them in
Python; and native calls of compiled variants (``make_caller``), which pass a nest's inputs to
its C entry point without building cffi arguments in Python.

A specializer describes what must hold of each argument (``Check``: its exact type, an int's
or a float's value where the binding depends on it, an array's dtype, dimensions, layout,
writeability and shape) and which pairs of arrays must not share memory; ``make_guard`` turns
that into a builtin function of the argument tuple answering True or False. False is always
safe: the dispatcher then computes the signature in Python, as on a first call. So a guard may
be stricter than the signature (a dtype compared by identity, a subclass of ndarray refused),
never looser.

The guards live in a small CPython extension (``templates/asp_core/call_guard.c``), built
once per interpreter, NumPy version and compiler into the disk cache, and loaded from it, in a
background thread, with the same manifest checks as any compiled variant. Building it needs Python's headers
(``Python.h``; Debian's ``python3-dev``) and NumPy's, which NumPy wheels ship: where they are
missing or the build fails, ``make_guard`` returns None and says why once in the log (the
dispatcher's Python path, as fast as before, stays in use).
"""

from __future__ import annotations

import logging
import sys
import sysconfig
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

log = logging.getLogger("asp.guard")

MODULE = "asp_call_guard"

# The kinds of check (the C source's enum).
TYPE, INT, INT_EQ, FLOAT, FLOAT_EQ, IS, ARRAY = range(7)


@dataclass(frozen=True)
class Check:
    """What one argument must be: ``kind`` and its data (see the C source's header)."""

    kind: int
    data: tuple = ()

    def as_tuple(self) -> tuple:
        return (self.kind, *self.data)


def type_is(t: type) -> Check:
    return Check(TYPE, (t,))


def is_object(value: Any) -> Check:
    return Check(IS, (value,))


def int64() -> Check:
    return Check(INT)


def int_equal(value: int) -> Check:
    return Check(INT_EQ, (value,))


def any_float() -> Check:
    return Check(FLOAT)


def float_equal(value: float) -> Check:
    return Check(FLOAT_EQ, (value,))


def array(dtype: Any, ndim: int, c_contiguous: bool, writeable: bool,
          shape: Sequence[int]) -> Check:
    """An exact ``numpy.ndarray`` whose dtype is the very object ``dtype`` (NumPy's built-in
    dtypes are shared objects; an equal dtype made otherwise fails the guard, safely)."""
    return Check(ARRAY, (dtype, ndim, c_contiguous, writeable, tuple(int(n) for n in shape)))


Guard = Callable[[tuple], bool]


def make_guard(checks: Sequence[Check], disjoint: Sequence[tuple[int, int]]) -> Guard | None:
    """A native function of an argument tuple: True when argument ``i`` passes ``checks[i]``
    for every ``i`` and the arrays of each pair in ``disjoint`` do not share memory (their
    bounds do not overlap, as ``numpy.may_share_memory`` answers by default).

    None while the extension is not loaded: the first call in a process starts loading it
    (building it into the disk cache if it is not there) in a background thread, so no call
    waits for the compiler; and None for good where it cannot be built here (the reason is
    logged once, and ``unavailable()`` says it)."""
    module = _LOADED[0] if _LOADED else _start_loading()
    if module is None:
        return None
    return module.make_guard(tuple(c.as_tuple() for c in checks),
                             tuple((int(i), int(j)) for i, j in disjoint))


def count(guard: Guard, calls: int, mask: int) -> bool:
    """Make a native ``guard`` count the calls it vouches for: ``calls`` of them, answering
    True where nothing more is due and, where the calls left after one have no bit of ``mask``
    set, their number (that call is to be timed), and -1 once none is left; ``calls < 0``:
    stop counting (True for every passing call). Returns whether it counts now: False for a
    guard that is not native (a specializer's own), which cannot."""
    if not _LOADED:
        return False
    try:
        _LOADED[0].count(guard, int(calls), int(mask))
    except TypeError:   # not a guard of this extension
        return False
    return calls >= 0


def take(guard: Guard) -> Any:
    """Count one call on a counting ``guard`` (a call whose signature was computed, not
    checked by it), answering as the guard answers a passing call (see ``count``)."""
    return _LOADED[0].take(guard)


def left(guard: Guard) -> int:
    """The calls a counting ``guard`` has left (-1 where it does not count)."""
    return _LOADED[0].left(guard)


# The kinds of argument of a native call (the C source's enum).
ARRAY_DATA, SHAPE, STRIDE, REAL, INTEGER, TRUTH, CONSTANT = range(7)


def make_caller(address: int, plan: Sequence[tuple], inputs: int, result_size: int,
                outputs: bool) -> Callable[[tuple], bytes | None] | None:
    """A native function calling a compiled variant's packed entry point (``void
    entry(const asp_slot *slots, void *result)`` at ``address``) with the nest's ``inputs``
    (a tuple of that many values), one slot per C argument as ``plan`` says (see the C
    source), the GIL released and the arrays' buffers held during the call. It returns None
    where the result record has no error and the nest no ``outputs``, else the record's
    bytes (``result_size`` of them). None where the extension is not loaded (see
    ``make_guard``)."""
    module = _LOADED[0] if _LOADED else _start_loading()
    if module is None:
        return None
    return module.make_caller(address, tuple(plan), inputs, result_size, outputs)


def loaded() -> bool:
    """Whether the extension is loaded in this process (a native call costs nothing more to
    make)."""
    return bool(_LOADED)


def loading() -> bool:
    """Whether the extension is on its way (its background load started, not over): a caller
    that found no guard or native call asks again later, without counting it as a refusal.
    Starts the load where it has not started."""
    if _LOADED or _WHY_NOT:
        return False
    _start_loading()
    return not _READY.is_set()


def unavailable() -> str | None:
    """Why guards cannot be made in this process, or None when they can (waits for the
    extension to load)."""
    _start_loading()
    _READY.wait()
    return _WHY_NOT[0] if _WHY_NOT else None


_LOADED: list[Any] = []      # the module, once loaded
_WHY_NOT: list[str] = []     # why it could not be
_READY = threading.Event()   # set when either is known
_STARTED = threading.Lock()


def _start_loading() -> None:
    """Start loading the extension in a background thread (once per process); None."""
    if _STARTED.acquire(blocking=False):
        # (not a daemon: a process that ends during a build waits for it, as it waits for
        # the background builds of variants, instead of leaving it half-written)
        threading.Thread(target=_load_now, name="asp-call-guard").start()
    return None


def _load_now() -> None:
    # Loading waits on files and the compiler, each time giving up the GIL; a calling thread
    # busy in Python would keep it for a whole switch interval (5 ms) every time (see the
    # background builds in asp_core.specializer).
    from .specializer import fast_switching

    try:
        with fast_switching():
            _LOADED.append(_load())
    except Exception as exc:  # noqa: BLE001 - any failure leaves the Python path in use
        _WHY_NOT.append(f"{type(exc).__name__}: {exc}")
        log.info("call guards are not available (warm calls check their arguments in "
                 "Python): %s", _WHY_NOT[0])
    finally:
        _READY.set()


def _include_dirs() -> tuple[str, str]:
    import numpy

    python = sysconfig.get_paths()["include"]
    if not (Path(python) / "Python.h").exists():
        raise FileNotFoundError(f"Python's headers are not installed (no Python.h in {python}; "
                                "on Debian: apt-get install python3-dev)")
    return python, numpy.get_include()


def _load() -> Any:
    import importlib.machinery
    import importlib.util

    import numpy

    from .backends.c import default_compiler, run_compiler
    from .cache import check_entry_file, disk_cache, stable_key
    from .config import current
    from .templates import project_templates_dir

    python_include, numpy_include = _include_dirs()
    compiler = default_compiler()
    source = (project_templates_dir() / "asp_core" / "call_guard.c").read_text()
    extra = (f"-I{python_include}", f"-I{numpy_include}")
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    key = stable_key("call-guard", source, compiler.abi_id(), sys.implementation.cache_tag,
                     suffix, numpy.__version__, extra)
    library = f"{MODULE}{suffix}"

    def build(folder: Path) -> None:
        src = folder / f"{MODULE}.c"
        src.write_text(source)
        run_compiler(compiler.command([str(src)], str(folder / library), extra), src,
                     "compiling the call guards")

    cache = disk_cache(current().cache_dir)
    path = check_entry_file(cache.entry(key, build, "the call guards"), library)
    loader = importlib.machinery.ExtensionFileLoader(MODULE, str(path))
    spec = importlib.util.spec_from_loader(MODULE, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module
