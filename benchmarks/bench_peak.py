"""Peak floating-point rate of dense kernels written as plain loops: gemm, syr2k and conv-2d in
GFLOP/s, against OpenBLAS (through NumPy) and Numba, at n = 250..4000.

Each kernel is a ``LoopKernel`` written as its users write it (gemm in i-j-k order, syr2k on
the lower triangle summed along k innermost, a 5 x 5 'valid' 2-D correlation, and the
examples' own gemm, k outermost, and PolyBench's syr2k, each row scaled before its updates:
``gemm-example``, ``syr2k-example``), float64. Side by side in one run,
for each size, in interleaved rounds (the machine is shared and noisy; each figure is the best
of ``--rounds`` calls):

* ``C``: the specialized kernel forced to serial C (``backend="c", strict=True``);
* ``OpenMP``: forced to OpenMP C on all the cores this process may use;
* ``Numba``: ``@njit`` of the kernel method's own source (serial);
* ``Numba par``: ``@njit(parallel=True)`` of the same loops with ``prange`` on the outer loop,
  on as many threads (both Numba columns are '-' where Numba cannot be imported: the note says
  why);
* the reference, through NumPy: ``A @ B`` for gemm, one ``A @ B.T`` and ``tril`` for syr2k
  (OpenBLAS, on 1 thread and on all threads where the number of BLAS threads can be set:
  threadpoolctl, else OpenBLAS's own ``set_num_threads`` through ctypes), and
  ``scipy.signal.correlate2d`` for conv-2d, else a NumPy sliding-window ``einsum`` (no BLAS
  in either, one column whatever the thread setting; the ratios of both C and OpenMP are to
  it).

Every contender is called once at each size before it is timed (the first call compiles), and
the output is zeroed before each call, outside the timer. At the first size every contender's
result must equal the NumPy reference's (``np.allclose``), and the NumPy reference must equal
the plain Python method at a small size, or the run stops, saying which. A contender whose
call takes longer than ``--cap`` seconds, or whose call at the next size is predicted to (its
time scaled by the flop count), is not timed at larger sizes ('over cap'). The ratios are of
GFLOP/s (ours over theirs): serial C to 1-thread BLAS and to Numba, OpenMP to all-thread BLAS
and to parallel Numba. Every column uses the flop count of the loops as written, so a
GFLOP/s figure is an inverse time (the BLAS formulation of syr2k does other work).

    python -m benchmarks.bench_peak [--quick] [--sizes 250,500] [--rounds 3] [--cap 20]
                                    [--kernels gemm,syr2k,conv2d,...] [--out FILE]

Default sizes: 250, 500, 1000, 2000, 4000 for gemm and syr2k, 1000, 2000, 4000, 8000 for
conv-2d, 250, 1000, 2000 for the examples; ``--quick``: gemm and syr2k at 250 and 500, conv-2d at 500 and 1000, one round (under
2 minutes). The figures of a full run belong in ``benchmarks/results/peak.txt``, with the load
average the header prints (``--out benchmarks/results/peak.txt``).
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import importlib.util
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from asp_core.platform import cpu_identity, query_platform
from examples.gemm import Gemm as GemmExample
from examples.syr2k import Syr2k as Syr2kExample
from specializers.loopnest import LoopKernel

from . import numba_versions, peers

SEED = 0
ALPHA = 1.5
CHECK_N = 16  # the size at which the NumPy reference is checked against the plain Python


# -- the kernels, as users write them -----------------------------------------------------------

class Gemm(LoopKernel):
    def kernel(self, A, B, C):
        n = A.shape[0]
        for i in range(n):
            for j in range(n):
                for k in range(n):
                    C[i, j] += A[i, k] * B[k, j]


class Syr2k(LoopKernel):
    def kernel(self, alpha, A, B, C):
        n, m = A.shape
        for i in range(n):
            for j in range(i + 1):
                for k in range(m):
                    C[i, j] += A[j, k] * alpha * B[i, k] + B[j, k] * alpha * A[i, k]


class Conv2D(LoopKernel):
    def kernel(self, img, w, out):
        n = img.shape[0]
        for i in range(n - 4):
            for j in range(n - 4):
                for p in range(5):
                    for q in range(5):
                        out[i, j] += img[i + p, j + q] * w[p, q]


# -- the NumPy references: each writes the kernel's result into its last argument ---------------

def gemm_blas(A, B, C):
    np.matmul(A, B, out=C)            # C is zero: C += A @ B


def syr2k_blas(alpha, A, B, C):
    # alpha A B^T + alpha B A^T = alpha (X + X^T) with X = A B^T: one gemm (numpy has no syr2k)
    X = A @ B.T
    X += X.T
    X *= alpha
    C += np.tril(X)


def conv2d_einsum(img, w, out):
    windows = np.lib.stride_tricks.sliding_window_view(img, w.shape)
    out += np.einsum("ijpq,pq->ij", windows, w)


def conv2d_scipy(img, w, out):
    from scipy.signal import correlate2d

    out += correlate2d(img, w, mode="valid")


def _conv2d_reference() -> tuple[str, Callable]:
    if importlib.util.find_spec("scipy") is not None:
        return "scipy correlate2d", conv2d_scipy
    return "NumPy einsum", conv2d_einsum


# -- the problems -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Problem:
    """A kernel at sizes n: its arguments (the output at ``output``, zeroed before each
    call), its flop count, and the NumPy reference (``blas``: whether BLAS threads matter to
    it)."""

    name: str
    cls: type
    sizes: tuple[int, ...]
    quick: tuple[int, ...]
    flops: Callable[[int], float]
    arguments: Callable[[int], tuple]
    reference: Callable[..., None]
    reference_label: str
    blas: bool
    output: int = -1


def _gemm_arguments(n: int) -> tuple:
    rng = np.random.default_rng(SEED)
    return rng.random((n, n)), rng.random((n, n)), np.zeros((n, n))


def _syr2k_arguments(n: int) -> tuple:   # m = n
    rng = np.random.default_rng(SEED)
    return ALPHA, rng.random((n, n)), rng.random((n, n)), np.zeros((n, n))


def _gemm_example_arguments(n: int) -> tuple:   # examples/gemm.py: (alpha, C, A, B)
    rng = np.random.default_rng(SEED)
    return ALPHA, np.zeros((n, n)), rng.random((n, n)), rng.random((n, n))


def gemm_example_blas(alpha, C, A, B):
    np.matmul(A, B, out=C)            # C is zero: C = C + alpha * A @ B
    C *= alpha


def _syr2k_example_arguments(n: int) -> tuple:   # examples/syr2k.py: (alpha, beta, C, A, B)
    rng = np.random.default_rng(SEED)
    return ALPHA, 1.2, np.zeros((n, n)), rng.random((n, n)), rng.random((n, n))


def syr2k_example_blas(alpha, beta, C, A, B):
    C *= beta                         # (C is zero)
    syr2k_blas(alpha, A, B, C)


def _conv2d_arguments(n: int) -> tuple:
    rng = np.random.default_rng(SEED)
    return rng.random((n, n)), rng.random((5, 5)), np.zeros((n - 4, n - 4))


def problems() -> dict[str, Problem]:
    conv_label, conv_reference = _conv2d_reference()
    return {
        # 2 flops (a multiply, an add) per (i, j, k)
        "gemm": Problem("gemm", Gemm, (250, 500, 1000, 2000, 4000), (250, 500),
                        lambda n: 2.0 * n ** 3, _gemm_arguments, gemm_blas, "BLAS", True),
        # 6 flops (4 multiplies, 2 adds) per (i, j, k), j <= i, m = n: 6 * n(n+1)/2 * m
        "syr2k": Problem("syr2k", Syr2k, (250, 500, 1000, 2000, 4000), (250, 500),
                         lambda n: 6.0 * (n * (n + 1) / 2) * n, _syr2k_arguments, syr2k_blas,
                         "BLAS", True),
        # the examples' own loops: gemm with k outermost, 3 flops per (k, i, j) (alpha too);
        # PolyBench's syr2k, each row of C scaled by beta before its updates, m = n
        "gemm-example": Problem("gemm-example", GemmExample, (250, 1000, 2000), (250, 500),
                                lambda n: 3.0 * n ** 3, _gemm_example_arguments,
                                gemm_example_blas, "BLAS", True, output=1),
        "syr2k-example": Problem("syr2k-example", Syr2kExample, (250, 1000, 2000), (250, 500),
                                 lambda n: 6.0 * (n * (n + 1) / 2) * n + n * (n + 1) / 2,
                                 _syr2k_example_arguments, syr2k_example_blas, "BLAS", True,
                                 output=2),
        # 2 flops per output element and filter tap: (n-4)^2 * 25 * 2
        "conv2d": Problem("conv2d", Conv2D, (1000, 2000, 4000, 8000), (500, 1000),
                          lambda n: 50.0 * (n - 4) ** 2, _conv2d_arguments, conv_reference,
                          conv_label, False),
    }


KERNELS = ("gemm", "syr2k", "conv2d", "gemm-example", "syr2k-example")


# -- BLAS threads -------------------------------------------------------------------------------

class BlasThreads:
    """Sets the number of threads of NumPy's BLAS: through threadpoolctl where it is
    importable, else through OpenBLAS's own ``set_num_threads`` (ctypes), else not at all."""

    _OPENBLAS = ("openblas_set_num_threads", "scipy_openblas_set_num_threads64_",
                 "openblas_set_num_threads64_", "scipy_openblas_set_num_threads")

    def __init__(self) -> None:
        self.how = "not controlled (the default only)"
        self._set: Callable[[int], None] | None = None
        if importlib.util.find_spec("threadpoolctl") is not None:
            from threadpoolctl import ThreadpoolController

            controller = ThreadpoolController()
            if controller.select(user_api="blas").lib_controllers:
                self._set = lambda n: controller.limit(limits=n, user_api="blas")
                self.how = "threadpoolctl"
                return
        setter = _openblas_function(self._OPENBLAS)
        if setter is not None:
            setter.argtypes = [ctypes.c_int]
            setter.restype = None
            self._set = setter
            self.how = f"OpenBLAS {setter.__name__} (ctypes)"

    @property
    def controlled(self) -> bool:
        return self._set is not None

    def set(self, threads: int | None) -> None:
        if threads is not None and self._set is not None:
            self._set(threads)


def _openblas_function(names: tuple[str, ...]) -> Any:
    """The first of ``names`` in the OpenBLAS this process has loaded (through NumPy), or None."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            paths = sorted({line.split()[-1] for line in maps if "openblas" in line.lower()})
    except OSError:
        return None
    for path in paths:
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for name in names:
            if hasattr(library, name):
                return getattr(library, name)
    return None


def blas_description() -> str:
    """NumPy's BLAS, short: name, version and the core OpenBLAS chose at run time."""
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        text = f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except (TypeError, KeyError):   # NumPy < 1.26 prints only
        text = "unknown (np.show_config)"
    corename = _openblas_function(("openblas_get_corename", "scipy_openblas_get_corename64_",
                                   "openblas_get_corename64_"))
    if corename is not None:
        corename.restype = ctypes.c_char_p
        text += f", core {corename().decode()}"
    return text


# -- the contenders -----------------------------------------------------------------------------

@dataclass
class Contender:
    """One way of running a problem: ``call`` on its arguments; ``blas_threads``: the BLAS
    threads it runs on (None: not a BLAS call). ``note``: why it is no longer timed."""

    label: str
    call: Callable[..., Any]
    blas_threads: int | None = None
    note: str | None = None
    last: tuple[int, float] | None = None   # the last size timed and its best time


C, OPENMP, NUMBA, NUMBA_PAR = "C", "OpenMP", "Numba", "Numba par"
OURS = (C, OPENMP, NUMBA, NUMBA_PAR)   # the columns before the reference's


def numba_note() -> str | None:
    """Why the Numba columns are empty, or None where Numba can be imported."""
    _, notes = peers.available()
    if notes:
        return "; ".join(notes)
    try:
        numba_versions.numba()
    except Exception as error:  # noqa: BLE001 - installed but broken: say why
        return f"Numba cannot be imported: {type(error).__name__}: {error}"
    return None


def numba_parallel(name: str) -> Callable:
    """``@njit(parallel=True)`` of the kernel's loops with ``prange`` on the outer loop."""
    numba = numba_versions.numba()
    prange = numba.prange

    def gemm(A, B, C):
        n = A.shape[0]
        for i in prange(n):
            for j in range(n):
                for k in range(n):
                    C[i, j] += A[i, k] * B[k, j]

    def syr2k(alpha, A, B, C):
        n, m = A.shape
        for i in prange(n):
            for j in range(i + 1):
                for k in range(m):
                    C[i, j] += A[j, k] * alpha * B[i, k] + B[j, k] * alpha * A[i, k]

    def conv2d(img, w, out):
        n = img.shape[0]
        for i in prange(n - 4):
            for j in range(n - 4):
                for p in range(5):
                    for q in range(5):
                        out[i, j] += img[i + p, j + q] * w[p, q]

    if name.endswith("-example"):   # (the selection benchmark's, i outermost for gemm)
        return numba_versions.parallel(name.removesuffix("-example"))
    return numba.njit(parallel=True)({"gemm": gemm, "syr2k": syr2k, "conv2d": conv2d}[name])


def contenders(problem: Problem, threads: int, blas: BlasThreads,
               with_numba: bool) -> list[Contender]:
    serial = problem.cls(backend="c", strict=True)
    parallel = problem.cls(backend="openmp", strict=True, num_threads=threads)
    result = [Contender(C, serial.kernel), Contender(OPENMP, parallel.kernel)]
    if with_numba:
        numba = numba_versions.numba()
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        result += [Contender(NUMBA, numba_versions.same_source(problem.cls)),
                   Contender(NUMBA_PAR, numba_parallel(problem.name))]
    if problem.blas and blas.controlled:
        result += [Contender(f"{problem.reference_label} 1t", problem.reference, 1),
                   Contender(f"{problem.reference_label} {threads}t", problem.reference, threads)]
    else:
        result.append(Contender(problem.reference_label, problem.reference))
    return result


def references(labels: list[str]) -> tuple[str, str]:
    """The reference columns serial C and OpenMP are compared with (1 thread, all threads)."""
    theirs = [label for label in labels if label not in OURS]
    return theirs[0], theirs[-1]


# -- checking -----------------------------------------------------------------------------------

class Mismatch(Exception):
    """A contender's result is not the reference's: the run stops without figures."""


def check_reference(problem: Problem) -> None:
    """The NumPy reference computes what the plain Python method does (at n = CHECK_N)."""
    python_args, numpy_args = problem.arguments(CHECK_N), problem.arguments(CHECK_N)
    problem.cls().original_kernel(*python_args)
    problem.reference(*numpy_args)
    if not np.allclose(python_args[problem.output], numpy_args[problem.output]):
        raise Mismatch(f"{problem.name}: the NumPy reference ({problem.reference_label}) differs "
                       f"from the plain Python loops at n = {CHECK_N}")


def check_result(problem: Problem, contender: Contender, n: int, output: np.ndarray,
                 expected: np.ndarray) -> None:
    if not np.allclose(output, expected):
        worst = float(np.max(np.abs(output - expected)))
        raise Mismatch(f"{problem.name}: {contender.label} differs from the NumPy reference at "
                       f"n = {n} (largest difference {worst:.3g}); no figures")


# -- timing -------------------------------------------------------------------------------------

def timed_call(contender: Contender, args: tuple, blas: BlasThreads, output: int = -1) -> float:
    """Seconds of one call, the output (``args[output]``) zeroed and the BLAS threads set
    beforehand."""
    args[output].fill(0.0)
    blas.set(contender.blas_threads)
    start = time.perf_counter()
    contender.call(*args)
    return time.perf_counter() - start


@dataclass
class Row:
    """One size: the best seconds per contender, or why it has none; ``capped``: those that
    made a call over the cap at this size (not timed at larger sizes)."""

    n: int
    seconds: dict[str, float] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    capped: set[str] = field(default_factory=set)


def predicted(contender: Contender, problem: Problem, n: int) -> float | None:
    """The contender's time at size ``n``: its last best time scaled by the flop count."""
    if contender.last is None:
        return None
    last_n, last_s = contender.last
    return last_s * problem.flops(n) / problem.flops(last_n)


def active_at(problem: Problem, team: list[Contender], n: int, cap: float, row: Row
              ) -> list[Contender]:
    """The contenders timed at size ``n``: not over the cap, nor predicted to be."""
    active = []
    for contender in team:
        guess = predicted(contender, problem, n)
        if contender.note is None and guess is not None and guess > cap:
            contender.note = f"over cap (~{guess:.0f} s predicted)"
        if contender.note is None:
            active.append(contender)
        else:
            row.notes[contender.label] = "over cap"
    return active


def warm_up(problem: Problem, active: list[Contender], args: tuple, cap: float, row: Row,
            blas: BlasThreads, expected: np.ndarray | None) -> None:
    """A call of each contender before it is timed (it compiles, loads, touches the memory);
    its result checked against ``expected`` where given. A warm-up call over the cap at a size
    after the contender's first (no compile in it) is its figure: it is timed no more."""
    for contender in active:
        seconds = timed_call(contender, args, blas, problem.output)
        if expected is not None:
            check_result(problem, contender, row.n, args[problem.output], expected)
        if seconds > cap and contender.last is not None:
            row.seconds[contender.label] = seconds
            row.capped.add(contender.label)
            contender.note = "over cap"


def measure_size(problem: Problem, team: list[Contender], n: int, rounds: int, cap: float,
                 blas: BlasThreads, first: bool) -> Row:
    """The best time of each contender at size ``n``, the contenders called in turn in each
    round; at the first size, every result checked against the NumPy reference's."""
    row = Row(n)
    active = active_at(problem, team, n, cap, row)
    args = problem.arguments(n)
    expected = None
    if first:
        problem.reference(*args)
        expected = args[problem.output].copy()
    warm_up(problem, active, args, cap, row, blas, expected)
    for _ in range(rounds):
        for contender in active:
            if contender.note is not None:
                continue
            seconds = timed_call(contender, args, blas, problem.output)
            row.seconds[contender.label] = min(row.seconds.get(contender.label, seconds),
                                               seconds)
            if seconds > cap:
                row.capped.add(contender.label)
                contender.note = "over cap"
    for contender in active:
        if contender.label in row.seconds:
            contender.last = (n, row.seconds[contender.label])
    return row


def measure(problem: Problem, team: list[Contender], sizes: list[int], rounds: int,
            cap: float, blas: BlasThreads) -> list[Row]:
    check_reference(problem)
    rows = []
    for index, n in enumerate(sizes):
        rows.append(measure_size(problem, team, n, rounds, cap, blas, first=index == 0))
        print(f"  {problem.name} n={n}: " + ", ".join(
            [f"{label} {s:.3g} s" for label, s in rows[-1].seconds.items()]
            + [f"{c.label} {c.note}" for c in team if c.note and c.label not in rows[-1].seconds]),
              file=sys.stderr, flush=True)
    return rows


# -- the report ---------------------------------------------------------------------------------

def gflops(problem: Problem, row: Row, label: str) -> float | None:
    seconds = row.seconds.get(label)
    return None if seconds is None else problem.flops(row.n) / seconds / 1e9


def _ratio(problem: Problem, row: Row, ours: str, theirs: str) -> str:
    mine, other = gflops(problem, row, ours), gflops(problem, row, theirs)
    return "-" if mine is None or other is None else f"{mine / other:.2f}"


def _cell(problem: Problem, row: Row, label: str) -> str:
    rate = gflops(problem, row, label)
    if rate is None:
        return row.notes.get(label, "-")
    return f"{rate:.2f}" + ("*" if label in row.capped else "")


def table(problem: Problem, labels: list[str], rows: list[Row]) -> list[str]:
    single, every = references(labels)
    ratios = [(C, single), (OPENMP, every), (C, NUMBA), (OPENMP, NUMBA_PAR)]
    heads = labels + [f"{a}/{b}" for a, b in ratios]
    widths = [max(10, len(head) + 2) for head in heads]
    lines = [f"{problem.name}: GFLOP/s (best of the rounds), reference {problem.reference_label}",
             f"{'n':>6s}" + "".join(f"{h:>{w}s}" for h, w in zip(heads, widths))]
    for row in rows:
        cells = [_cell(problem, row, label) for label in labels]
        cells += [_ratio(problem, row, a, b) for a, b in ratios]
        lines.append(f"{row.n:6d}" + "".join(f"{c:>{w}s}" for c, w in zip(cells, widths)))
    return lines


def summary(problem: Problem, labels: list[str], rows: list[Row]) -> str:
    """At n = 2000, else the largest size run: C's and OpenMP's share of the reference's rate."""
    row = next((r for r in rows if r.n == 2000), rows[-1])
    single, every = references(labels)

    def share(ours: str, theirs: str) -> str:
        ratio = _ratio(problem, row, ours, theirs)
        return "-" if ratio == "-" else f"{100 * float(ratio):.0f}%"

    return (f"{problem.name} n={row.n}: C {share(C, single)} of {single}, "
            f"OpenMP {share(OPENMP, every)} of {every}")


def header(load: tuple, load_after: tuple, threads: int, blas: BlasThreads,
           numba: str | None, rounds: int, cap: float) -> list[str]:
    if numba is None:
        module = numba_versions.numba()
        numba_text = f"numba {module.__version__} ({module.get_num_threads()} threads)"
    else:
        numba_text = f"numba: none ({numba})"
    platform = query_platform()
    return [
        f"bench_peak {datetime.datetime.now().isoformat(timespec='seconds')}",
        f"load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
        f"at end {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}",
        f"CPUs (sched_getaffinity): {threads}; {cpu_identity().describe()}",
        f"C compiler: {platform.c_compiler}, OpenMP {'yes' if platform.openmp else 'no'}",
        f"NumPy {np.__version__}, BLAS {blas_description()}; BLAS threads: {blas.how}",
        numba_text,
        f"best of {rounds} interleaved round(s) after a warm-up call; cap {cap:g} s per call",
        "ratios: GFLOP/s of ours over theirs (C to 1-thread BLAS and Numba, OpenMP to "
        "all-thread BLAS and parallel Numba); '*': a call over the cap at that size",
    ]


# -- main ---------------------------------------------------------------------------------------

def _sizes(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_peak",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sizes only, one round (under 2 minutes)")
    parser.add_argument("--sizes", type=_sizes,
                        help="comma-separated sizes n, for every kernel (default: per kernel)")
    parser.add_argument("--rounds", type=int, help="rounds (default 3, 1 with --quick)")
    parser.add_argument("--cap", type=float, default=20.0,
                        help="seconds per call beyond which a contender is not timed at larger "
                             "sizes (default 20)")
    parser.add_argument("--kernels", default=",".join(KERNELS),
                        help=f"comma-separated, of {', '.join(KERNELS)}")
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args(argv)
    args.kernels = [k.strip() for k in args.kernels.split(",") if k.strip()]
    unknown = set(args.kernels) - set(KERNELS)
    if unknown:
        parser.error(f"unknown kernel(s) {', '.join(sorted(unknown))}; "
                     f"the kernels: {', '.join(KERNELS)}")
    if args.rounds is None:
        args.rounds = 1 if args.quick else 3
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    load = os.getloadavg()
    threads = len(os.sched_getaffinity(0))
    blas = BlasThreads()
    note = numba_note()
    if note is not None:
        print(f"Numba columns left empty: {note}", file=sys.stderr)
    tables, summaries = [], []
    try:
        for name in args.kernels:
            problem = problems()[name]
            sizes = args.sizes or list(problem.quick if args.quick else problem.sizes)
            team = contenders(problem, threads, blas, note is None)
            labels = list(OURS) + [c.label for c in team if c.label not in OURS]
            rows = measure(problem, team, sizes, args.rounds, args.cap, blas)
            tables += table(problem, labels, rows) + [""]
            summaries.append(summary(problem, labels, rows))
    except Mismatch as error:
        print(f"bench_peak: wrong result: {error}", file=sys.stderr)
        return 1
    finally:
        blas.set(threads)
    text = "\n".join(header(load, os.getloadavg(), threads, blas, note, args.rounds, args.cap)
                     + [""] + tables + ["; ".join(summaries)])
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
