"""Calibration of compiled code: per-operation times of scalar C, the vector speed-up, memory
bandwidth by thread count, and OpenMP's fork/join, barrier and reduction costs by thread count.

The micro-kernels (``templates/loopnest/calibration.c.mako``) are built once, as one module,
through ``asp_core.backends.c.compile_c`` (with OpenMP where the compiler has it; the module is
kept in the disk cache like any variant) and called through cffi with enough repetitions that
one call lasts milliseconds. Each per-operation kernel runs ``a[i] = <expression>`` over arrays
that fit in the L1 cache with vectorization off (the cost model's "scalar code, one thread");
an operation's cost is the difference between two kernels that differ by it, like the
interpreter's probes (``python_probes``). Stores to ``a[]`` and a compiler barrier after each
pass keep the compiler from optimizing the work away. Out-of-order cores overlap cheap
operations with the loop's own work, so their differences are often zero: a load, a store, a
comparison cost nothing beyond the iteration while the data is in the L1 cache.

Bandwidth is STREAM's triad (``a[i] = b[i] + x * c[i]``, counted as 24 bytes an iteration) on
arrays four times (quick: twice) the last-level cache (``cache_bytes``, read from sysfs), on 1,
2, 4 ... threads and on every core; the cache bandwidth is the same loop on one thread over
arrays that fill a quarter of it. OpenMP's costs are those of empty regions and barriers back to
back, of combining the threads' partial sums of a reduction (a worksharing loop of one iteration
per thread with a ``reduction(+:...)`` clause, less the same loop without), and of a region
entered after the team went to sleep (``omp_wake_ns``).
"""

from __future__ import annotations

import functools
import logging
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from asp_core.backends.c import CModule, array_pointer, compile_c
from asp_core.errors import BackendUnavailable
from asp_core.templates import render

from .timing import best_per_unit, count_for, elapsed, median_of

log = logging.getLogger("asp.loopnest.calibrate")

#: Elements of each array of the per-operation kernels (3 arrays of 8 KiB: in any L1 cache).
N_L1 = 1024
#: Idle time before a region that times the team's wake-up (``MachineParams.omp_wake_ns``).
WAKE_GAP_S = 0.02
#: The most memory the bandwidth probe takes (its three arrays).
MAX_BYTES = 1 << 30
#: The last-level cache size when sysfs does not tell (``MachineParams.cache_bytes``).
DEFAULT_CACHE_BYTES = 16 * 2**20

#: The per-operation kernels, vectorization off: name -> ``a[i] = <expression>``.
KERNELS = (
    ("store", "x"),
    ("copy", "b[i]"),
    ("add", "b[i] + c[i]"),
    ("poly", "((((b[i] * x + y) * b[i] + x) * b[i] + y) * b[i] + x)"),   # 8 arithmetic ops
    ("div", "b[i] / c[i]"),
    ("pow", "pow(b[i], x)"),
    ("cmp", "(double)(b[i] < c[i])"),
    ("logic", "(double)(b[i] < x && c[i] < y)"),
    ("exp", "exp(b[i])"),
    ("log", "log(b[i])"),
    ("sqrt", "sqrt(b[i])"),
    ("fmax", "fmax(b[i], x)"),
    ("conv", "(double)(int64_t)b[i]"),                                     # 2 conversions
    ("index", "b[s * i + s - 1]"),                                         # 3 index ops
    ("chain", "(x = x + b[i])"),                     # an add waiting for the previous one
)
#: The same loops vectorized (for the vector speed-up).
VECTOR_KERNELS = (("poly_vector", KERNELS[3][1]), ("add_vector", KERNELS[2][1]))
_KERNEL_ARGS = [("double * restrict", "a"), ("const double * restrict", "b"),
                ("const double * restrict", "c"), ("int64_t", "n"), ("int64_t", "reps"),
                ("double", "x"), ("double", "y"), ("int64_t", "s")]


def kernel_source(openmp: bool) -> str:
    """The C source of the calibration module."""
    return render("loopnest/calibration.c.mako", kernels=KERNELS, vector_kernels=VECTOR_KERNELS,
                  threads=openmp)


def kernel_cdef(openmp: bool) -> str:
    names = ["iteration"] + [name for name, _ in KERNELS + VECTOR_KERNELS]
    lines = [f"void asp_cal_{name}(void *a, void *b, void *c, int64_t n, int64_t reps, "
             "double x, double y, int64_t s);" for name in names]
    lines += ["void asp_cal_fill(void *a, int64_t n, double x, int32_t threads);",
              "void asp_cal_triad(void *a, void *b, void *c, int64_t n, int64_t reps, double x, "
              "int32_t threads);"]
    if openmp:
        lines += ["void asp_cal_fork(int64_t reps, int32_t threads);",
                  "void asp_cal_barrier(int64_t reps, int32_t threads);",
                  "double asp_cal_for(int64_t reps, int32_t threads);",
                  "double asp_cal_reduce(int64_t reps, int32_t threads);"]
    return "\n".join(lines)


def build() -> tuple[CModule, bool]:
    """The calibration module, and whether it has OpenMP (``BackendUnavailable`` without a C
    compiler)."""
    try:
        return compile_c(kernel_source(True), kernel_cdef(True), name="calibration",
                         openmp=True), True
    except BackendUnavailable as exc:
        log.info("calibration without OpenMP: %s", exc)
        return compile_c(kernel_source(False), kernel_cdef(False), name="calibration"), False


def measure_ops(module: CModule, quick: bool) -> dict[str, Any]:
    """``c_op_ns``, ``c_iteration_ns``, ``c_chain_ns`` and ``vector_speedup`` of
    ``MachineParams``: each the median of ``OP_ROUNDS`` rounds (a quick calibration: one),
    each round's values differences of its own kernels' best times (see ``median_of``)."""
    rounds = [_measure_ops_once(module, quick) for _ in range(1 if quick else OP_ROUNDS)]
    return median_of(rounds)


#: Rounds of the per-operation kernels in a full calibration. A value is a difference of two
#: kernels' best times, and a load that slows one kernel's runs and not the other's moves it
#: by a factor: a calibration made while a benchmark's processes ended priced a division 0.16
#: ns and a call of exp or log 7.0, against 0.85 and 4.1 in every quiet run.
OP_ROUNDS = 3


def _measure_ops_once(module: CModule, quick: bool) -> dict[str, Any]:
    ffi, lib = module.ffi, module.lib
    a, b, c = np.zeros(N_L1), np.linspace(1.0, 2.0, N_L1), np.linspace(2.0, 1.0, N_L1)
    pa, pb, pc = (array_pointer(ffi, v) for v in (a, b, c))
    target, repeats = (0.002, 3) if quick else (0.01, 7)
    cases = {}
    for name in ["iteration"] + [name for name, _ in KERNELS + VECTOR_KERNELS]:
        func = getattr(lib, f"asp_cal_{name}")
        run = functools.partial(_run_kernel, func, pa, pb, pc)
        cases[name] = (run, count_for(run, target))
    t = {name: s * 1e9 / N_L1 for name, s in best_per_unit(cases, repeats).items()}
    return derive_ops(t)


def _run_kernel(func: Callable, pa: Any, pb: Any, pc: Any, reps: int) -> None:
    func(pa, pb, pc, N_L1, reps, 1.7, 1.3, 1)


def derive_ops(t: dict[str, float]) -> dict[str, Any]:
    """The compiled parameters from the kernels' times per element ``t`` (ns)."""
    def pos(value: float) -> float:
        return max(0.0, value)

    iteration = t["iteration"]
    arith = pos((t["poly"] - t["copy"]) / 8)
    cmp = pos(t["cmp"] - t["add"] + arith)
    ops = {
        "load": pos(t["copy"] - t["store"]),
        "store": pos(t["store"] - iteration),
        "index": pos((t["index"] - t["copy"]) / 3),
        "arith": arith,
        "div": pos(t["div"] - t["add"] + arith),
        "pow": pos(t["pow"] - t["copy"]),
        "cmp": cmp,
        "logic": pos(t["logic"] - t["cmp"] - cmp),
        "math": pos((t["exp"] + t["log"]) / 2 - t["copy"]),
        "math_cheap": pos((t["sqrt"] + t["fmax"]) / 2 - t["copy"]),
        "conv": pos((t["conv"] - t["copy"]) / 2),
        "scalar": 0.0,  # a scalar the nest keeps is a register
    }
    speedup = t["poly"] / t["poly_vector"] if t["poly_vector"] > 0 else 1.0
    return {"c_op_ns": ops, "c_iteration_ns": iteration, "vector_speedup": max(1.0, speedup),
            "c_chain_ns": pos(t["chain"] - iteration)}


def thread_counts(cores: int, quick: bool) -> list[int]:
    """1, 2, 4 ... and ``cores`` (quick); every count up to 8, then powers of two (full)."""
    counts = {cores}
    power = 1
    while power < cores:
        counts.add(power)
        power *= 2
    if not quick:
        counts.update(range(1, min(cores, 8) + 1))
    return sorted(counts)


def measure_memory(module: CModule, openmp: bool, cores: int, cache_bytes: int,
                   quick: bool) -> dict[str, Any]:
    """``bandwidth`` (bytes/s by threads), ``cache_bandwidth`` (the last-level cache) and
    ``l2_bandwidth`` of ``MachineParams``: a triad over three arrays of 2-4 times the cache, a
    quarter of it (four L2s at most), and a quarter of one core's L2."""
    ffi, lib = module.ffi, module.lib
    repeats = 3 if quick else 8
    # three arrays, 2-4 times the cache in all (and at most 1 GiB)
    big = min(MAX_BYTES, max(1 << 23, (2 if quick else 4) * cache_bytes)) // 24
    arrays = [np.empty(big) for _ in range(3)]
    pointers = [array_pointer(ffi, v) for v in arrays]
    counts = thread_counts(cores, quick) if openmp else [1]
    for pointer in pointers:
        lib.asp_cal_fill(pointer, big, 1.5, max(counts))
    cases = {threads: (functools.partial(_triad, lib, pointers, big, threads), 1)
             for threads in counts}
    best = best_per_unit({str(k): v for k, v in cases.items()}, repeats)
    bandwidth = {threads: 24 * big / best[str(threads)] for threads in counts}
    del arrays, pointers
    # three arrays in a quarter of the last-level cache, and at most four L2s: a machine
    # (or a VM) may report more cache than one core can hold on to
    cached = _cached_rate(module, max(4096, min(cache_bytes // 4, 4 * l2_bytes()) // 24),
                          quick, repeats)
    # three arrays in a quarter of the L2: what a loop streams from it into L1
    in_l2 = _cached_rate(module, max(1024, l2_bytes() // 4 // 24), quick, repeats)
    return {"bandwidth": bandwidth, "cache_bandwidth": cached, "l2_bandwidth": in_l2}


def _cached_rate(module: CModule, elements: int, quick: bool, repeats: int) -> float:
    """Bytes per second of one thread's triad over three arrays of ``elements`` doubles,
    called over and over (the arrays stay in whatever cache holds them)."""
    ffi, lib = module.ffi, module.lib
    arrays = [np.empty(elements) for _ in range(3)]
    pointers = [array_pointer(ffi, v) for v in arrays]
    for pointer in pointers:
        lib.asp_cal_fill(pointer, elements, 1.5, 1)
    run = functools.partial(_triad, lib, pointers, elements, 1)
    count = count_for(run, 0.005 if quick else 0.02)
    return 24 * elements / best_per_unit({"cached": (run, count)}, repeats)["cached"]


def l2_bytes() -> int:
    """The L2 cache of one core (``asp_core.platform.data_caches``; 1 MiB where unknown)."""
    from asp_core import platform

    return platform.data_caches().l2 or 1 << 20


def _triad(lib: Any, pointers: list, n: int, threads: int, reps: int) -> None:
    lib.asp_cal_triad(*pointers, n, reps, 1.5, threads)


def measure_openmp(module: CModule, cores: int, quick: bool) -> dict[str, Any]:
    """``omp_fork_ns`` and ``omp_barrier_ns`` of ``MachineParams`` by thread count (2 up to
    ``cores``; a one-core machine measures 2 threads on its one core), regions back to back;
    and ``omp_wake_ns``, a region after the team went to sleep, on every core. Many short
    samples (a fraction of a millisecond each): the shortest is one no other process disturbed,
    where a thread of the team waited for a core."""
    lib = module.lib
    repeats, target = (15, 0.0005) if quick else (40, 0.001)
    counts = [t for t in thread_counts(max(cores, 2), quick) if t >= 2]
    cases = {}
    for threads in counts:
        lib.asp_cal_fork(8, threads)  # start the thread team at this size
        for name in ("fork", "barrier", "for", "reduce"):
            run = functools.partial(_team_run, getattr(lib, f"asp_cal_{name}"), threads)
            cases[f"{name}{threads}"] = (run, count_for(run, target, 16))
    best = best_per_unit(cases, repeats)
    fork_ns = {t: best[f"fork{t}"] * 1e9 for t in counts}
    barrier_ns, combine_ns = {}, {}
    for t in counts:
        count = cases[f"barrier{t}"][1]   # one call: one region and ``count`` barriers
        barrier_ns[t] = max(0.0, best[f"barrier{t}"] * 1e9 - fork_ns[t] / count)
        # (per loop, each run amortizing its region over its own count of loops)
        loop = best[f"for{t}"] * 1e9 - fork_ns[t] / cases[f"for{t}"][1]
        reduce = best[f"reduce{t}"] * 1e9 - fork_ns[t] / cases[f"reduce{t}"][1]
        combine_ns[t] = max(1.0, reduce - loop)
    return {"omp_fork_ns": fork_ns, "omp_barrier_ns": barrier_ns, "omp_combine_ns": combine_ns,
            "omp_wake_ns": _wake_ns(lib, max(counts), 3 if quick else 9)}


def _wake_ns(lib: Any, threads: int, samples: int) -> float:
    """The shortest time of a region entered after ``WAKE_GAP_S`` of idleness, when the team's
    threads have stopped spinning and sleep (a call of an OpenMP variant after Python work)."""
    best = float("inf")
    for _ in range(samples):
        time.sleep(WAKE_GAP_S)
        best = min(best, elapsed(functools.partial(_team_run, lib.asp_cal_fork, threads), 1))
    return best * 1e9


def _team_run(func: Callable, threads: int, reps: int) -> None:
    func(reps, threads)


def cache_bytes(root: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> int:
    """The size of the CPU's last-level cache (level 3, else 2) from sysfs; the default
    (``DEFAULT_CACHE_BYTES``) where sysfs does not tell."""
    sizes: dict[int, int] = {}
    for index in sorted(root.glob("index*")):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            size = _parse_size((index / "size").read_text())
        except (OSError, ValueError):
            continue
        if kind in ("Unified", "Data") and level in (2, 3):
            sizes[level] = max(size, sizes.get(level, 0))
    for level in (3, 2):
        if sizes.get(level):
            return sizes[level]
    return DEFAULT_CACHE_BYTES


def _parse_size(text: str) -> int:
    """``"32768K"`` -> 33554432 (sysfs's cache sizes: a number and K, M or G)."""
    text = text.strip().upper()
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
    number = text[:-1] if text[-1:] in "KMG" else text
    return int(number) * scale
