"""Calibration of fixed costs: entering a loop nest (compiled, or left to the original Python
code) and compiling a variant against the size of its source.

Call overheads are measured through a real ``LoopKernel`` (``probe_kernels.Tiny``) on
one-element arrays, against the same method run as plain Python (``tiny_plain``):

* ``c_call_ns``: one run of the compiled variant itself (what the dispatcher times: the
  arguments, cffi, the results), called directly with the nest's inputs;
* ``dispatch_ns``: the rest of a compiled call through the cost model's path (the signature
  and binding, or their call guard, ``asp_core.call_guard``, loaded first; the estimates,
  the choice, the bookkeeping; the selector pinned to serial C,
  ``asp_core.selection.Selector.pin``, so that no probe of another variant interferes): the
  kernel's call less ``c_call_ns`` and less the plain method on empty arrays (the code of the
  method outside its nest);
* ``py_call_ns``: what entering a nest left to the original code costs beyond what a compiled
  call pays, both through the cost model's path: the kernel pinned to the original code
  (``cost.estimates.ORIGINAL``: the runner answers ``RUN_ORIGINAL`` and the rewritten kernel
  runs and times the loop as written), less the plain method with its one iteration, less
  ``dispatch_ns``;
* ``settled_call_ns``: a call of the kernel settled on its original code (``settled``), less
  the plain method.

Compile time is that of ``asp_core.backends.c.compile_c`` (compiler, cffi declarations, load)
on the serial C the specializer generates for kernels of 1, 6 and 24 statements
(``probe_kernels.COMPILE_SIZES``), built in a private, empty cache folder (whatever
``ASP_CACHE_DIR`` says), so each is compiled. A least-squares line through (lines of the module
beyond the runtime header ``c_runtime.h.mako``, seconds) gives ``compile_base_s`` (the header,
the compiler's start, cffi) and ``compile_per_line_s``. Where OpenMP builds, the OpenMP
variants of the same kernels are compiled too, and the median of their extra time over serial
C's is ``compile_openmp_s`` (-fopenmp and the outlined parallel regions: 12 to 50 ms on a
development machine where serial C's compile takes 50 to 70; a first call that can wait for a
build takes the one of least build plus run, ``asp_core.selection``).
"""

from __future__ import annotations

import itertools
import tempfile
import time
from pathlib import Path

import numpy as np

from asp_core.backends.c import compile_c
from asp_core.cache import DiskCache
from asp_core.templates import render

from .estimates import ORIGINAL
from .probe_kernels import COMPILE_SIZES, Tiny, tiny_plain
from .timing import best_per_unit


def measure_calls(quick: bool, compiled: bool = True) -> dict[str, float]:
    """``c_call_ns``, ``dispatch_ns``, ``py_call_ns`` and ``settled_call_ns`` of
    ``MachineParams`` (without a C compiler, ``py_call_ns`` is the whole Python path)."""
    from asp_core import call_guard

    call_guard.unavailable()  # warm calls run through the call guards once they are loaded
    one = [np.zeros(1), np.ones(1), np.ones(1)]
    empty = [np.zeros(0) for _ in range(3)]
    python = _pinned(ORIGINAL, "python", one)
    settled = _settled(_pinned(ORIGINAL, "python", one))
    cases = {"plain": _loop(lambda *a: tiny_plain(python, *a), one),
             "plain_empty": _loop(lambda *a: tiny_plain(python, *a), empty),
             "python": _loop(python.kernel, one),
             "settled": _loop(settled.kernel, one)}
    if compiled:
        kernel = _pinned("c", "c", one)
        runner = kernel._asp_current.runners[0]
        inputs = runner.last_inputs
        variant = runner.build("c", runner.signature(inputs), inputs)  # (the built one)
        cases["c"] = _loop(kernel.kernel, one)
        cases["c_run"] = _loop(lambda *a: variant.run(*inputs), one)
    count, repeats = (2000, 5) if quick else (20000, 9)
    t = {name: s * 1e9 for name, s in
         best_per_unit({name: (run, count) for name, run in cases.items()}, repeats).items()}
    python_path = t["python"] - t["plain"]
    out = {"settled_call_ns": max(0.0, t["settled"] - t["plain"])}
    if not compiled:
        return {**out, "py_call_ns": max(0.0, python_path)}
    dispatch = max(0.0, t["c"] - t["plain_empty"] - t["c_run"])
    return {**out, "c_call_ns": t["c_run"], "dispatch_ns": dispatch,
            "py_call_ns": max(0.0, python_path - dispatch)}


def _settled(kernel: Tiny) -> Tiny:
    """``kernel`` settled on its original code for as long as the calibration calls it."""
    from ..settled import Settled

    state = kernel._asp_current
    state.settled = Settled((None, None, None), (), float("inf"), left=2**62)
    return kernel


def prepare() -> None:
    """Build (into the disk cache) the variant ``measure_calls`` calls, ahead of it."""
    _warm(Tiny(backend="c", strict=True), "c", [np.zeros(1), np.ones(1), np.ones(1)])


def _pinned(label: str, backend: str, arrays: list) -> Tiny:
    """A ``Tiny`` kernel through the cost model's path, its choice pinned to ``label``."""
    kernel = Tiny(strict=True)
    kernel.kernel(*arrays)
    kernel._asp_current.runners[0].selector.pin(label)
    for _ in range(3):  # (built, if it was not: the call waits for it)
        kernel.kernel(*arrays)
    ran = kernel.last_call.nests[0]
    assert ran.backend == backend and ran.fallback is None, (backend, ran)
    return kernel


def _warm(kernel: Tiny, backend: str, arrays: list) -> Tiny:
    """``kernel`` after a first call (analysed, its variant built or loaded), checked to run
    on ``backend``."""
    kernel.kernel(*arrays)
    ran = kernel.last_call.nests[0]
    assert ran.backend == backend and ran.fallback is None, (backend, ran)
    return kernel


def _loop(call, arrays: list):
    def run(count: int) -> None:
        for _ in range(count):
            call(*arrays)
    return run


def generated_sources(backend: str = "c") -> list[tuple[str, str]]:
    """The C of ``backend`` (source, cffi declarations) the specializer generates for each
    kernel of ``COMPILE_SIZES``."""
    from ..typeinfer import infer_types
    from ..variants import generate

    sources = []
    arrays = [np.ones((4, 4)) for _ in range(3)]
    for cls in COMPILE_SIZES:
        kernel = cls(backend="python", strict=True)
        kernel.kernel(*[a.copy() for a in arrays])  # analyses it and plans the binding
        for runner in kernel._asp_current.runners:
            types, _ = runner.signature(runner.last_inputs)
            module = generate(backend, runner.analysis, runner.last_plan,
                              infer_types(runner.analysis, types), types, "calibration")
            sources.append((module.source, module.cdef))
    return sources


def measure_compile(quick: bool, openmp: bool = False) -> dict[str, float]:
    """``compile_base_s`` and ``compile_per_line_s`` of ``MachineParams``; with ``openmp``,
    also ``compile_openmp_s``."""
    header = render("loopnest/c_runtime.h.mako").count("\n")
    pairs = list(zip(generated_sources(), generated_sources("openmp") if openmp
                     else itertools.repeat(None)))
    if quick:
        pairs = [pairs[0], pairs[-1]]
    best: dict[int, float] = {}
    extra: list[float] = []
    with tempfile.TemporaryDirectory(prefix="asp-calibrate-") as folder:
        cache = DiskCache(Path(folder) / "cache")

        def compiled(source: str, cdef: str, attempt: int, with_openmp: bool) -> float:
            source = f"/* compile-time probe {time.time_ns()} {attempt} */\n{source}"
            start = time.perf_counter()
            compile_c(source, cdef, name="nest", cache=cache, openmp=with_openmp)
            return time.perf_counter() - start

        for attempt in range(1 if quick else 2):
            for (source, cdef), parallel in pairs:
                seconds = compiled(source, cdef, attempt, False)
                lines = source.count("\n") - header
                best[lines] = min(seconds, best.get(lines, seconds))
                if parallel is not None:
                    extra.append(compiled(*parallel, attempt, True) - seconds)
    out = fit_line(best)
    if extra:
        out["compile_openmp_s"] = max(0.0, float(np.median(extra)))
    return out


def fit_line(points: dict[int, float]) -> dict[str, float]:
    """``compile_base_s`` and ``compile_per_line_s`` from (lines, seconds) points: the least
    squares line, or (where a disturbed timing would make either negative) the line through
    the origin, or a flat one."""
    x = np.array(sorted(points), dtype=float)
    y = np.array([points[k] for k in sorted(points)])
    per_line, base = np.polyfit(x, y, 1) if len(x) > 1 else (0.0, float(y[0]))
    if per_line < 0:
        per_line, base = 0.0, float(np.mean(y))
    elif base < 0:
        per_line, base = float(x @ y / (x @ x)), 0.0
    return {"compile_base_s": float(base), "compile_per_line_s": float(per_line)}
