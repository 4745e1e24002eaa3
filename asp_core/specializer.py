"""Specializer machinery: intercept a call, find or build a variant, run it, or fall back.

A specializer subclasses ``Specializer`` and fills in two hooks (``"python"`` in ``backends``
means the plain function, unless ``build`` makes something else for it):

* ``signature(args)``: what a variant depends on (default: dtypes, dimensions and layout of
  the arguments, see ``asp_core.signature``); extend it with whatever else matters.
* ``build(backend, signature, args) -> Variant``: generate, compile and load code for one
  backend. Raise ``UnsupportedConstruct``, ``CompileError`` or ``BackendUnavailable`` when
  that backend cannot serve this call: the machinery then tries the next backend in
  ``backends``, and in the end runs the plain Python function.

Each fallback names its cause in a ``FallbackWarning``, attributed to the user's call of the
specialized function (the first frame outside the packages that registered themselves as
internal, ``internal_code``) and so shown once per call site and cause under Python's default
warning filters (``simplefilter("always")`` shows every one); the ``asp`` logger records it at
DEBUG. ``strict=True`` raises ``SpecializationError`` instead of running plain Python.
``ASP_BACKEND`` forces one backend, ``ASP_DISABLE_JIT=1`` runs everything as plain Python, and
``ASP_DUMP_DIR`` (or the ``dump_dir`` argument) writes generated source and intermediate forms
to a folder.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
import threading
import time
import warnings
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Hashable, Sequence

from . import call_guard
from . import config as config_module
from . import gc_pause
from .errors import (AspError, BackendUnavailable, CacheError, CompileError,
                     SpecializationError, UnsupportedArgument, UnsupportedConstruct)
from .lru import LRUCache
from .selection import IDLE_S, NEVER, Decision, Estimate, Selector, settled_choice
from .signature import signature_of

log = logging.getLogger("asp")

PYTHON = "python"

# Errors that make one backend unusable for one call; anything else is a bug and propagates.
FALLBACK_ERRORS = (UnsupportedConstruct, UnsupportedArgument, CompileError, BackendUnavailable,
                   CacheError)


class FallbackWarning(UserWarning):
    """A specialized function ran as plain Python (or on a slower backend) for a stated cause."""


#: What a variant's call may cost more while the variant warms up (``Variant.warming``):
#: cffi's path before a native call is made took 10 to 13 us where the native call takes 1.
WARMING_S = 5e-5


@dataclass(frozen=True)
class Variant:
    """A runnable specialization: ``run`` takes the call's arguments. ``timed``: the time
    ``run`` takes is the call's (else the specializer reports it, ``Specializer.observed``).
    ``warming``: while it returns True, the variant's calls do not cost what they will (a
    compiled variant's first calls, before its native call path is made: up to ``WARMING_S``
    more): those shorter than ``WARMING_S`` are shown, not observed (a probe of two such calls
    at 10 us made the selector keep plain Python at 2.7 us over serial C at 1.3), longer ones
    are observed (a variant slower by milliseconds is left while it warms up too)."""

    backend: str
    run: Callable[..., Any]
    key: str = ""
    timed: bool = True
    warming: Callable[[], bool] | None = None

    @property
    def record(self) -> "CallRecord":
        """The call record of a call that ran this variant as the first choice."""
        record = self.__dict__.get("_record")
        if record is None:
            record = CallRecord(self.backend, None)
            object.__setattr__(self, "_record", record)
        return record


@dataclass(frozen=True)
class CallRecord:
    """What happened on one call: the backend that ran, and why it was not the first choice."""

    backend: str
    fallback: str | None = None


@dataclass(frozen=True)
class _Failure:
    backend: str
    reason: str
    error: AspError
    retry_at: float = float("inf")  # when to try the build again (a fault of the environment)

    def stale(self) -> bool:
        return self.retry_at != float("inf") and time.monotonic() >= self.retry_at


#: How long a failure caused by the environment (``CacheError``: a cache folder deleted, not
#: writable, replaced by a file) is remembered before the build is tried again: the fault may
#: be repaired, and until then calls run as Python without paying a failed build each.
RETRY_ENVIRONMENT_S = 2.0


#: Folders whose code is the framework's own (a warning is attributed to the first frame
#: outside them), and the prefix of generated code's file names.
_INTERNAL: list[str] = [str(Path(__file__).resolve().parent)]
GENERATED_PREFIX = "<asp"


def internal_code(folder: str | Path) -> None:
    """Register a specializer package's folder as the framework's own code (its frames are
    skipped when a warning is attributed to the user's code)."""
    path = str(Path(folder).resolve())
    if path not in _INTERNAL:
        _INTERNAL.append(path)


def _user_stacklevel() -> int:
    """The ``stacklevel`` of the user's call into the framework: the frame just outside the
    outermost internal frame (the user's own kernel, run by the framework, is inside)."""
    frame = sys._getframe(2)   # warn_once's caller: stacklevel 2 of its warnings.warn
    level, outermost = 2, None
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(GENERATED_PREFIX) or any(  # (a folder, not a name's prefix)
                name.startswith(folder + os.sep) for folder in _INTERNAL):
            outermost = level
        frame = frame.f_back
        level += 1
    return outermost + 1 if outermost is not None else 2


def warn_once(owner: str, cause: str) -> None:
    """A ``FallbackWarning`` for ``cause``, attributed to the user's call (see the module):
    Python's warning filters decide how often it shows (the default: once per call site)."""
    log.debug("%s: %s", owner, cause)
    warnings.warn(f"{owner}: {cause}", FallbackWarning, stacklevel=_user_stacklevel())


def _strict_error(owner: str, reason: str, error: AspError | None) -> SpecializationError:
    """The error a strict specializer raises: the cause's location said once, in front."""
    location = error.location if error else None
    if location is not None:
        reason = reason.replace(f"{location}: ", "", 1)
    return SpecializationError(f"{owner}: {reason}", location)


def clear_warnings() -> None:
    """Forget which warnings were shown (Python's registries of the callers' modules), so
    that each shows again (tests)."""
    for module in list(sys.modules.values()):
        registry = getattr(module, "__warningregistry__", None)
        if isinstance(registry, dict):
            registry.clear()


def describe(error: AspError) -> str:
    """A one-line cause for a fallback message."""
    if isinstance(error, CompileError):
        return f"{error.message} (at {error.location})" if error.location else error.message
    return str(error)


class Specializer:
    """Base class: call interception, variant lookup and the fallback chain."""

    #: Backends to try, best first; plain Python always ends the chain.
    backends: tuple[str, ...] = ()
    #: Variants (and failures) kept in memory per instance (``asp_core.lru``: those of the
    #: last this many signatures, at most twice as many): one forgotten is built again (from
    #: the disk cache) when its signature comes back.
    variant_cache_size = 256

    def __init__(self, func: Callable, *, backend: str | None = None, strict: bool = False,
                 config: config_module.Config | None = None, dump_dir: str | Path | None = None):
        self.func = func
        self.config = config or config_module.current()
        self.backend = backend or self.config.backend
        self.strict = strict
        self.dump_dir = Path(dump_dir) if dump_dir else self.config.dump_dir
        self.last_call: CallRecord | None = None
        # (signature, backend) -> Variant or _Failure; the least recently used are forgotten
        self._variants = LRUCache(self.variant_cache_size)
        self._building: dict[tuple, Future] = {}   # background builds under way
        self._build_count = 0   # counts changes of the built variants (estimates depend on them)
        self._offered: tuple = (None, None)   # the last estimates, and those not failed
        # the last choice, which the next calls of its signature run again (``_fast_path``)
        self._fast: list | None = None
        self._guards = LRUCache(self.variant_cache_size)  # signature -> guard (or False)
        self._fast_entries = 0   # how often a choice became the fast path
        self.selector = Selector()
        self.last_decision: Decision | None = None
        self.last_estimate: Estimate | None = None
        self._vouched: Hashable | None = None   # the signature ``guarded`` was told last
        self.last_measured_s: float | None = None
        self._ended = 0.0   # when the last timed call ended (``observed``)
        self.name = getattr(func, "__qualname__", repr(func))

    # -- hooks -------------------------------------------------------------------------------

    def signature(self, args: Sequence[Any]) -> Hashable:
        return signature_of(args)

    def guard(self, signature: Hashable, args: Sequence[Any]) -> Callable[[tuple], bool] | None:
        """A function of an argument tuple that answers True only where ``signature(args)``
        would be ``signature`` (cheaper than computing it: ``asp_core.call_guard``); False
        where none can be made for it (not asked again), None where none can be made now
        (asked again when the signature next becomes the fast path's). Without a guard,
        warm calls compute their signature."""
        return None

    def guarded(self, signature: Hashable) -> None:
        """A call's signature is ``signature``, as its guard vouched (instead of
        ``signature()``, whose side effects a specializer may redo here): told on the first
        of the warm calls in a row it vouches for, again after ``signature()`` ran."""

    def _guard(self, signature: Hashable, args: Sequence[Any]) -> Callable[[tuple], bool] | None:
        self._fast_entries += 1
        if self._fast_entries <= GUARD_AFTER:  # a short run need not build the guards
            return None
        found = self._guards.get(signature)
        if found is None:
            found = self.guard(signature, args)
            if found is not None:
                self._guards.put(signature, found)
        return found or None

    def build(self, backend: str, signature: Hashable, args: Sequence[Any]) -> Variant:
        """Make the variant for ``backend``; the default knows only ``"python"`` (the plain
        function itself), which a specializer may replace with its own Python executor."""
        if backend == PYTHON:
            return Variant(PYTHON, lambda *a: self.run_python(a, {}))
        raise BackendUnavailable(f"{type(self).__name__} has no backend {backend!r}")

    def run_python(self, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        return self.func(*args, **kwargs)

    # -- machinery ---------------------------------------------------------------------------

    def candidates(self) -> tuple[str, ...]:
        """Backends to try for this call, best first (without the final plain Python)."""
        if self.backend:
            return (self.backend,)
        return self.backends

    #: Whether variants may be built in a background thread while calls run others.
    background_builds: bool = False

    def estimates(self, signature: Hashable, args: Sequence[Any]) -> Sequence[Estimate] | None:
        """The predicted time of each variant that could run this call (``asp_core.selection``;
        labels name variants for ``build``), or None: then ``candidates()`` are tried in order.
        A forced backend, or ``ASP_SELECTION=fixed``, skips the estimates."""
        return None

    def observed(self, estimate: Estimate, seconds: float,
                 variant: Variant | None = None) -> None:
        """A call of ``estimate.label`` (``variant``) took ``seconds``: correct the model
        (``selection``), unless the variant is warming up; a surprise ends the fast path (the
        next call chooses again)."""
        self.last_measured_s = seconds
        if seconds < WARMING_S and variant is not None and variant.warming is not None and \
                variant.warming():
            return
        if self.selector.observe(estimate, seconds):
            self._end_fast()

    def _timed(self, estimate: Estimate, variant: Variant, started: float) -> None:
        """A timed call of ``variant`` that started at ``started`` (``time.perf_counter``) is
        over: ``observed``, the selector told first whether the call came after an idle gap
        (``selection.IDLE_S`` since the last timed call ended: ``Selector.after_gap``)."""
        ended = time.perf_counter()
        self.selector.after_gap(started - self._ended > IDLE_S)
        self._ended = ended
        self.observed(estimate, ended - started, variant)

    def ran_elsewhere(self, calls: int) -> None:
        """``calls`` calls of this function ran another way, without the dispatcher (a
        settled kernel's original method: ``specializers.loopnest.settled``). They count for
        the selector (``Selector.skipped``: the re-probing schedule, a renting choice's
        losses), and the fast path ends, so that the next call chooses again: its count of
        calls left did not see them. (A renting choice's path, thousands of calls long, went
        on after each settlement: fbcorr on 4 x 4 images, its serial C not built, settled and
        ran its original code at 1.5 times serial C's time while the losses counted against
        that build were eight times its 30 ms.)"""
        self._end_fast()
        self.selector.skipped(calls)

    def _end_fast(self) -> None:
        """End the fast path: the next call chooses again."""
        self._count_fast(self._fast)
        self._fast = None

    def _count_fast(self, fast: list | None) -> None:
        """Tell the selector of the calls ``fast`` ran without asking it (they count for its
        re-probing schedule: ``Selector.skipped``); told in bulk, not call by call."""
        if fast is not None and fast[3] is not None:
            left = max(call_guard.left(fast[5]), 0) if fast[8] else fast[1]
            calls, fast[4] = fast[4] - left, left
            if calls > 0:   # (not where another thread's new path counts on its guard now)
                self.selector.skipped(calls)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fast = self._fast
        vouched = None
        if fast is not None and not kwargs:   # (never set where the JIT is disabled)
            guard = fast[5]
            if guard is not None:
                passed = guard(args)
                if passed:   # True, or a counting guard's int (``_fast_path``)
                    if fast[0] is not self._vouched:   # a warm call: the guard vouches for
                        self._vouched = fast[0]         # the signature (told once per run)
                        self.guarded(fast[0])
                    if passed is True:
                        if fast[8]:   # nothing to count, time or choose
                            self.last_estimate, self.last_measured_s = fast[3], None
                            self.last_call = fast[6]
                            return fast[2].run(*args)
                        if fast[1] > 0:   # (counted here)
                            return self._run_again(fast, args)
                    elif passed >= 0:   # a counting guard's: this call is to be timed
                        return self._run_again(fast, args, True)
                    vouched = fast[0]   # (no call left: choose again)
        if kwargs:
            return self._fallback("keyword arguments are not specialized", args, kwargs)
        if self.config.disable_jit:
            self.last_call = CallRecord(PYTHON, "disabled by ASP_DISABLE_JIT")
            return self.run_python(args, kwargs)
        try:
            if vouched is not None:
                sig = vouched
            else:
                self._vouched = None   # (``signature`` may undo what ``guarded`` was told)
                sig = self.signature(args)
                if fast is not None and fast[0] == sig:
                    if fast[5] is None and fast[1] > 0 and fast[1] & 7 == 7:
                        _attach_guard(fast, self._guard(sig, args))   # (a long path asks too)
                    if fast[8] and fast[3] is not None:   # its guard counts this call too
                        counted = call_guard.take(fast[5])
                        if counted is True or counted >= 0:
                            return self._run_again(fast, args, counted is not True)
                    elif fast[1] > 0:
                        return self._run_again(fast, args)
            self._count_fast(fast)   # (before the choice: a re-probe may be due)
            estimates = None if self.backend or self.config.selection == "fixed" else \
                self.estimates(sig, args)
        except FALLBACK_ERRORS as exc:
            return self._fallback(describe(exc), args, kwargs, exc)
        if estimates:
            return self._run_selected(sig, args, kwargs, estimates)
        self.last_estimate = None
        failures: list[_Failure] = []
        for backend in self.candidates():
            found = self._variant(sig, backend, args)
            if isinstance(found, Variant):
                if failures:
                    self.last_call = CallRecord(backend, _reasons(failures))
                    warn_once(self.name, f"ran on {backend}: {_reasons(failures)}")
                else:
                    self.last_call = found.record
                    self._fast = _fast_path(sig, found, None, self._guard(sig, args))
                log.debug("%s: running %s (%s)", self.name, backend,
                          "the forced backend" if self.backend else "the fixed rule")
                return found.run(*args)
            failures.append(found)
        return self._fallback(_reasons(failures) or "no backend available", args, kwargs,
                              failures[-1].error if failures else None)

    def _run_selected(self, sig: Hashable, args: Sequence[Any], kwargs: dict,
                      estimates: Sequence[Estimate]) -> Any:
        """Run the variant the selector chooses among ``estimates``, timing the call. While a
        background job runs (a build, the call guards' load: ``fast_switching``), each such
        call first gives up the GIL (``time.sleep(0)``): a short switch interval was not
        enough on every machine, and a build of 0.1 s took 15 s beside a caller running the
        original code in a loop (each of its GIL waits lost to the caller; 1 us a call)."""
        if _SWITCHING_USERS[0]:
            time.sleep(0)
        offered = self._offered
        if estimates is offered[0]:   # a warm call: the same estimates as the last one
            left = offered[1]
        else:
            left = [e for e in estimates if not self._failed(sig, e.label)]
            self._offered = (estimates, left)
        decision = self.selector.choose(left, background=self.background_builds)
        found = self._variants.recent.get((sig, decision.label))
        if decision.build_later or type(found) is not Variant:
            return self._run_selected_slowly(sig, args, kwargs, left, decision)
        self.last_decision, self.last_estimate, self.last_measured_s = \
            decision, decision.estimate, None
        self.last_call = found.record
        if decision.stable or decision.renting:  # the next calls may skip the choice
            self._fast = _fast_path(sig, found, decision.estimate, self._guard(sig, args),
                                    self.selector.calls_before_probe())
        if not found.timed:
            return found.run(*args)   # the specializer reports the time (``observed``)
        started = time.perf_counter()
        result = found.run(*args)
        self._timed(decision.estimate, found, started)
        return result

    def _run_again(self, fast: list, args: Sequence[Any], due: bool | None = None) -> Any:
        """Run the variant the last call chose again (the calls of one signature in a row
        that ``_fast_path`` allows skip the estimates and the choice, counted for the selector
        in bulk: ``_count_fast``; one in ``_timing_period`` of them is timed; a forced
        backend's calls, without estimates, are not). ``due``: whether this call is to be
        timed, where its guard counted it (``_attach_guard``); None: it is counted here."""
        if due is None:
            fast[1] -= 1
            due = not fast[1] & fast[7]
        found, estimate = fast[2], fast[3]
        self.last_estimate, self.last_measured_s = estimate, None
        self.last_call = fast[6]
        if estimate is None or not found.timed or not due:
            return found.run(*args)
        started = time.perf_counter()
        result = found.run(*args)
        self._timed(estimate, found, started)
        return result

    def _run_selected_slowly(self, sig: Hashable, args: Sequence[Any], kwargs: dict,
                             left: list[Estimate], decision: Decision) -> Any:
        """The rest of ``_run_selected``: background builds, building the choice, and the
        next choice where it cannot be built."""
        log.debug("%s: running %s (%s)%s", self.name, decision.label, decision.reason,
                  f"; building {decision.build_later} in the background"
                  if decision.build_later else "")
        failures: list[_Failure] = []
        while True:
            if decision.build_later:
                self._build_in_background(sig, decision.build_later, args)
            found = self._variant(sig, decision.label, args)
            if isinstance(found, Variant):
                break
            failures.append(found)
            left = [e for e in left if e.label != decision.label]
            self._offered = (None, None)
            if not left:
                return self._fallback(_reasons(failures) or "no variant can run this call",
                                      args, kwargs, failures[-1].error if failures else None)
            decision = self.selector.choose(left, background=self.background_builds)
        self.last_decision, self.last_estimate, self.last_measured_s = \
            decision, decision.estimate, None
        if failures:
            reasons = _reasons(failures)
            if found.backend == PYTHON and self.strict:
                raise _strict_error(self.name, reasons, failures[-1].error)
            warn_once(self.name, f"ran on {found.backend}: {reasons}")
            self.last_call = CallRecord(found.backend, reasons)
        else:
            self.last_call = found.record
        if not found.timed:
            return found.run(*args)
        started = time.perf_counter()
        result = found.run(*args)
        self._timed(decision.estimate, found, started)
        return result

    def _failed(self, sig: Hashable, label: str) -> bool:
        found = self._variants.recent.get((sig, label)) or self._variants.get((sig, label))
        return type(found) is _Failure and not found.stale()

    def built(self, sig: Hashable, label: str) -> bool:
        """Whether variant ``label`` for ``sig`` is built and in memory."""
        found = self._variants.recent.get((sig, label)) or self._variants.get((sig, label))
        return isinstance(found, Variant)

    def _build_in_background(self, sig: Hashable, label: str, args: Sequence[Any]) -> None:
        key = (sig, label)
        if key in self._building:
            return
        self.selector.building(label, True)

        def build() -> None:
            # A build waits on the compiler and on many small file operations, each giving
            # up the GIL; a calling thread busy in Python code then keeps it for the whole
            # switch interval (5 ms) every time, and a build that takes 0.1 s alone took 2 s.
            try:
                with fast_switching():
                    try:
                        found: Variant | _Failure = self.build(label, sig, args)
                    except FALLBACK_ERRORS as exc:
                        found = _Failure(label, describe(exc), exc)
                    self._variants.put(key, found)  # whole: a call never sees it half-built
                    self._build_count += 1
            except Exception:  # noqa: BLE001 - a bug: logged; the next build raises it again
                log.exception("%s: building %s in the background failed", self.name, label)
            finally:
                self._building.pop(key, None)
                self.selector.building(label, False)
                self._end_fast()   # the next call chooses again, the new variant offered

        self._building[key] = _background().submit(build)

    def _variant(self, sig: Hashable, backend: str, args: Sequence[Any]) -> Variant | _Failure:
        key = (sig, backend)
        found = self._variants.recent.get(key)  # a hit: one dict lookup (see asp_core.lru)
        if found is None and key in self._building:
            pending = self._building.get(key)
            if pending is not None:
                pending.result()  # a background build of it is under way: wait for it
            found = self._variants.get(key)
        if found is None or (type(found) is _Failure and found.stale()):
            found = self._variants.get(key)
            if found is None or (type(found) is _Failure and found.stale()):
                try:
                    with gc_pause.paused():
                        found = self.build(backend, sig, args)
                except FALLBACK_ERRORS as exc:
                    retry = time.monotonic() + RETRY_ENVIRONMENT_S \
                        if isinstance(exc, CacheError) else float("inf")
                    found = _Failure(backend, describe(exc), exc, retry)
                self._variants.put(key, found)
                self._build_count += 1
        return found

    def _fallback(self, reason: str, args, kwargs, error: AspError | None = None) -> Any:
        if self.strict:
            raise _strict_error(self.name, reason, error) from error
        warn_once(self.name, f"running plain Python: {reason}")
        self.last_call = CallRecord(PYTHON, reason)
        return self.run_python(args, kwargs)

    def dump(self, stage: str, text: str) -> None:
        """Write an intermediate form to the dump folder, if one is configured.

        Never through a symbolic link nor into a folder or file another user owns
        (``asp_core.dumps``): such a dump, or one the file system refuses, is skipped with a
        ``RuntimeWarning``; the call itself goes on.
        """
        if self.dump_dir is None:
            return
        from .dumps import write_dump
        from .errors import UnsafePath

        try:
            write_dump(self.dump_dir, _safe_name(self.name), stage, text)
        except (UnsafePath, OSError) as exc:
            log.warning("%s: not dumping %s: %s", self.name, stage, exc)
            warnings.warn(f"{self.name}: not dumping {stage}: {exc}", RuntimeWarning,
                          stacklevel=2)

    def clear(self) -> None:
        """Forget built variants and failures (they are rebuilt, or found on disk, next call)."""
        self._variants.clear()
        self._end_fast()

    def forget_backend(self, backend: str) -> None:
        """Forget the variants and failures of one backend (rebuilt, or refused, next call);
        ``"openmp"`` covers ``"openmp@2"`` ... (a variant at a thread count)."""
        for key in [key for key in self._variants if key[1].partition("@")[0] == backend]:
            del self._variants[key]
        self._end_fast()
        self._offered = (None, None)
        self._build_count += 1


_BACKGROUND: ThreadPoolExecutor | None = None
_BACKGROUND_LOCK = threading.Lock()


def _background() -> ThreadPoolExecutor:
    """The process's one builder thread (builds run one at a time, beside the calls)."""
    global _BACKGROUND
    with _BACKGROUND_LOCK:
        if _BACKGROUND is None:
            _BACKGROUND = ThreadPoolExecutor(max_workers=1, thread_name_prefix="asp-build")
        return _BACKGROUND


#: The interpreter's thread switch interval while a background build runs (seconds). Each
#: file operation or compiler run of the build gives up the GIL, and a caller busy in Python
#: keeps it for up to an interval before the build gets it back: a build of serial C for a
#: 128-element vector addition, beside a loop calling it as Python, took 5.6 s at 0.2 ms,
#: 1.6 s at 0.1 ms and 0.2 s at 50 us or 20 us (0.17 s alone; ``benchmarks.bench_calls``).
BUILD_SWITCH_INTERVAL = 5e-5
_SWITCHING = threading.Lock()
_SWITCHING_USERS = [0, 0.0]   # background jobs under BUILD_SWITCH_INTERVAL, the interval before


@contextlib.contextmanager
def fast_switching():
    """``BUILD_SWITCH_INTERVAL`` while the block runs (a background job), the interval from
    before once the last such job is over. Counted, not saved per job: two jobs that
    overlapped each restored the interval it found, so the one that started second and ended
    first put the default 5 ms back while the other still ran (a build beside the call-guard
    extension's load took 15 s instead of 0.2, each of its GIL waits 5 ms)."""
    with _SWITCHING:
        if not _SWITCHING_USERS[0]:
            _SWITCHING_USERS[1] = sys.getswitchinterval()
            sys.setswitchinterval(min(_SWITCHING_USERS[1], BUILD_SWITCH_INTERVAL))
        _SWITCHING_USERS[0] += 1
    try:
        yield
    finally:
        with _SWITCHING:
            _SWITCHING_USERS[0] -= 1
            if not _SWITCHING_USERS[0]:
                sys.setswitchinterval(_SWITCHING_USERS[1])
#: Calls of one signature in a row that run the last choice without choosing again (at least:
#: ``_fast_path``).
FAST_CALLS = 8
#: Times the warm calls ask for a call guard before one is made (whose first use in a process
#: may build it: a script of a few calls never does). They ask when a fast path starts, and
#: every eighth call of a fast path without one (a stable choice's path lasts long).
GUARD_AFTER = 8


#: A stable choice's fast path covers at most about this much predicted time (seconds).
RECHOOSE_S = 5e-3
#: What timing a call costs at least: two clock reads and the selector's bookkeeping (seconds;
#: 103 and 426 ns on one development machine, 181 and 741 on another, as
#: ``benchmarks.bench_selection`` measures and prints). ``timing_cost`` measures it.
TIMING_COST_S = 0.5e-6
#: The share of a fast path's time that timing its calls may cost, on average: one call in
#: ``_timing_period`` is timed.
TIMING_SHARE = 0.01
#: ...and at least one call in this many (a power of 2). (64 until 2026-11-28: a timed call of
#: hilbert on 8 x 8, 3.4 us, took 2 to 4 us more in the kernel's calls on the development VM,
#: where ``timing_cost`` measures 1.1 to 1.6 in a loop; one in 64 of them cost the kernel 1.5%
#: of its time, one in 256 a quarter of that.)
TIMING_PERIOD_MAX = 256


def _timing_period(seconds: float) -> int:
    """One call in how many of a fast path predicted at ``seconds`` a call is timed: every
    call from ``timing_cost() / TIMING_SHARE`` up (50 us where timing costs 0.5 us); fewer
    below, so that timing costs at most ``TIMING_SHARE`` of the calls' time, down to one in
    ``TIMING_PERIOD_MAX`` (a call of a microsecond: timing every call would add half of its
    time; a variant slower than thought is still seen within a few hundred calls, about a
    millisecond)."""
    cost = timing_cost()
    period = 1
    while period < TIMING_PERIOD_MAX and period * TIMING_SHARE * seconds < cost:
        period *= 2
    return period


@functools.lru_cache(maxsize=1)
def timing_cost() -> float:
    """What timing a warm call costs in this process, seconds: two clock reads and the
    selector's bookkeeping of a measurement once its correction has settled (the best of a
    few rounds of 40; measured once, about 0.2 ms), ``TIMING_COST_S`` at least. A constant
    0.5 us had timed every call of 55 us on a machine where it cost 0.9 (2% of its time)."""
    clock = time.perf_counter
    selector, estimate = settled_choice()
    best = float("inf")
    for _ in range(5):
        started = clock()
        for _ in range(40):
            clock()
            clock()
            selector.observe(estimate, 1.01e-5)
        best = min(best, (clock() - started) / 40)
    return max(best, TIMING_COST_S)


def _fast_path(sig: Hashable, found: Variant, estimate: Estimate | None, guard,
               before_probe: int = NEVER) -> list:
    """The fast path of a choice: [signature, calls left, variant, estimate (None for a forced
    backend), calls left when the selector was last told of them (``_count_fast``), guard or
    None, the call record, the timing mask (one call in ``_timing_period`` is timed: those
    that leave a count of calls left with no bit of the mask set), whether a guard's True
    needs nothing more (a forced backend's, or a guard that counts the calls: the native
    guards count the model's calls and say which to time, ``call_guard.count``, 70 ns less
    a call than counting them here; ``fast[1]`` then stays the count they started from)].

    A stable choice of the cost model (an estimate) is repeated until the selector's next
    re-probe is due (``before_probe`` calls), for at most about ``RECHOOSE_S`` of predicted
    time and at least ``FAST_CALLS`` calls: the choice is made again at least that often, so
    a change of the machine's load (sampled every 0.2 s, ``asp_core.platform.others_busy``)
    is seen as soon as it would be otherwise, and a tiny call pays for the choice once in
    hundreds of calls, not once in ``FAST_CALLS``. A measurement that surprises the model ends
    the path at once (``observed``); so does the end of a background build (``clear`` of
    ``_fast``: the choice may now be the new variant). Without a guard, a forced backend's
    path lasts ``FAST_CALLS`` calls (the guard is asked for when it is renewed); with one, it
    lasts until the variants are forgotten (``clear``, ``forget_backend``)."""
    mask = 0
    if estimate is not None:
        within = int(RECHOOSE_S / estimate.seconds) if estimate.seconds > 0 else NEVER
        calls = min(before_probe, max(FAST_CALLS, within))
        mask = _timing_period(estimate.seconds) - 1
    else:
        calls = FAST_CALLS if guard is None else NEVER
    fast = [sig, calls, found, estimate, calls, None, found.record, mask, estimate is None]
    _attach_guard(fast, guard)
    return fast


def _attach_guard(fast: list, guard) -> None:
    """Give fast path ``fast`` its ``guard`` (None: none yet), counting its calls where it is
    native and the path the cost model's (``_fast_path``); a forced backend's stops any
    counting a model's path had it do."""
    fast[5] = guard
    if guard is None:
        return
    if fast[3] is None:
        call_guard.count(guard, -1, 0)
    else:
        fast[8] = call_guard.count(guard, fast[1], fast[7])




def _reasons(failures: Sequence[_Failure]) -> str | None:
    if not failures:
        return None
    return "; ".join(f"{f.backend}: {f.reason}" for f in failures)


def _safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
