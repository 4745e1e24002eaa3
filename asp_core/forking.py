"""Fork safety of OpenMP code: a process forked after OpenMP code ran must not hang.

GCC's OpenMP runtime (libgomp) keeps, for each thread that has started a parallel region, a
pool of worker threads. ``fork()`` copies the pool's bookkeeping into the child but not its
threads, so the child's next parallel region waits forever for workers that do not exist.
``multiprocessing`` with the "fork" start method (Linux's default up to Python 3.13) does that
to every worker of a process that has run an OpenMP variant. A process forked before any
parallel region ran, or from a thread that never started one, is not affected; no ``OMP_*``
setting changes this, and libgomp has no call that repairs a child.

What works is to end the pool before the fork: ``omp_pause_resource_all`` (OpenMP 5.0; in
libgomp since GCC 9, and in LLVM's libomp) does that for the calling thread, and parent and
child each start a new pool at their next parallel region. ``watch_openmp()``, called by code
that has just loaded an OpenMP library (``specializers.loopnest`` calls it for each OpenMP
variant it builds), registers once per process with ``os.register_at_fork``:

* before each fork, in the forking thread: ``omp_pause_resource_all(omp_pause_soft)`` (a few
  hundred microseconds; the parent's next parallel region starts its threads again);
* after the fork, in the child, only if that pause was impossible (no runtime with that call
  found, or it refused): the child records why (``openmp_unusable()``) and calls every callback
  given to ``on_unusable_child``, which drop the OpenMP variants they hold; OpenMP variants then
  run as serial C in that child, with that reason in their ``FallbackWarning``.

Nothing happens at import. The state here is per process by nature (what a fork copies).
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
import weakref
from typing import Callable

log = logging.getLogger("asp")

#: OpenMP runtimes looked for among the libraries already loaded: GCC's, LLVM's, Intel's.
RUNTIMES = ("libgomp.so.1", "libomp.so", "libomp.so.5", "libiomp5.so")
#: ``omp_pause_soft`` of OpenMP 5.0's ``omp_pause_resource_t``.
OMP_PAUSE_SOFT = 1


class _Watch:
    """What this process knows: set once by ``watch_openmp``, read by the fork handlers."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.registered = False
        self.pause: Callable[[int], int] | None = None
        self.missing: str | None = None       # why there is no pause function
        self.failed: str | None = None        # why the last pause before a fork failed
        self.unusable: str | None = None      # in a child: why OpenMP must not run here
        self.callbacks: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


_WATCH = _Watch()


def watch_openmp() -> None:
    """Make forks of this process safe for OpenMP code (see the module's docstring). Call it
    after loading a library built with OpenMP; calls after the first do nothing."""
    watch = _WATCH
    if watch.registered or not hasattr(os, "register_at_fork"):  # no fork (Windows): no risk
        return
    with watch.lock:
        if watch.registered:
            return
        watch.pause, watch.missing = find_pause()
        if watch.missing:
            log.info("OpenMP and fork: %s; children forked from now on run OpenMP variants as "
                     "serial C", watch.missing)
        os.register_at_fork(before=_before_fork, after_in_child=_after_in_child)
        watch.registered = True


def find_pause() -> tuple[Callable[[int], int] | None, str | None]:
    """``omp_pause_resource_all`` of the OpenMP runtime loaded in this process, or None and
    why not."""
    if not hasattr(os, "RTLD_NOLOAD"):
        return None, "this platform cannot look up a loaded library (no RTLD_NOLOAD)"
    for name in RUNTIMES:
        try:
            library = ctypes.CDLL(name, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        except OSError:
            continue  # not loaded in this process
        function = getattr(library, "omp_pause_resource_all", None)
        if function is None:
            return None, f"{name} has no omp_pause_resource_all (OpenMP 5.0; GCC 9 or later)"
        function.argtypes = [ctypes.c_int]
        function.restype = ctypes.c_int
        return function, None
    return None, f"no OpenMP runtime ({', '.join(RUNTIMES)}) is loaded in this process"


def on_unusable_child(owner: object, callback: Callable[[object, str], None]) -> None:
    """Call ``callback(owner, reason)`` in a child forked when OpenMP could not be made safe
    for it (``owner`` is held weakly: nothing is called once it is gone)."""
    _WATCH.callbacks[owner] = callback


def openmp_unusable() -> str | None:
    """Why OpenMP code must not run in this process (a child forked after OpenMP ran, whose
    runtime could not be reset), or None where it may."""
    return _WATCH.unusable


def _before_fork() -> None:
    watch = _WATCH
    if watch.pause is None:
        watch.failed = watch.missing
        return
    status = watch.pause(OMP_PAUSE_SOFT)
    watch.failed = None if status == 0 else (
        f"omp_pause_resource_all returned {status} in the forking thread")


def _after_in_child() -> None:
    watch = _WATCH
    watch.lock = threading.Lock()  # a lock held by another thread at the fork stays held
    if watch.failed is None:
        return
    watch.unusable = ("this process was forked after OpenMP code ran in its parent, whose "
                      f"OpenMP threads could not be ended before the fork ({watch.failed}): "
                      "OpenMP code could hang here")
    for owner, callback in list(watch.callbacks.items()):
        callback(owner, watch.unusable)
