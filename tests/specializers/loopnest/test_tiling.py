"""Tiling (``schedule.tiling``): which bands are tiled, and tiled code against the original.

Forced blocks (``ASP_TILE``) tile every band the analysis allows, at sizes that divide no
range, and the order checker (``python-shuffled``) runs the same blocked order, parallel
loops shuffled within their blocks: an illegal tiling shows as a wrong result.
"""

import copy

import numpy as np
import pytest

from specializers.loopnest import LoopKernel
from specializers.loopnest.checking import load_source
from specializers.loopnest.checking.random_nests import random_nest
from specializers.loopnest.schedule import tiling
from specializers.loopnest.schedule.tree import STile

from .helpers import close, random_kernel

pytestmark = pytest.mark.slow   # the suite starts it first (about two and a half minutes here)


class Gemm(LoopKernel):
    def kernel(self, A, B, C, n):
        for i in range(n):
            for j in range(n):
                for k in range(n):
                    C[i, j] += A[i, k] * B[k, j]


class Skewed(LoopKernel):
    """Direction (<, >): the band is not permutable."""

    def kernel(self, A, n):
        for i in range(1, n):
            for j in range(n - 1):
                A[i, j] = A[i - 1, j + 1] * 0.5 + 1.0


class Triangular(LoopKernel):
    def kernel(self, A, B, n):
        for i in range(n):
            for j in range(i + 1):
                B[i, j] = A[i, j] + A[j, i]


class TriangularDown(LoopKernel):
    """A triangle walked downward: not tiled (triangular loops step up)."""

    def kernel(self, A, B, n):
        for i in range(n):
            for j in range(i, -1, -1):
                B[i, j] = A[i, j] + A[j, i]


class Syr2k(LoopKernel):
    def kernel(self, alpha, A, B, C):
        n, m = A.shape
        for i in range(n):
            for j in range(i + 1):
                for k in range(m):
                    C[i, j] += A[j, k] * alpha * B[i, k] + B[j, k] * alpha * A[i, k]


class Shifted(LoopKernel):
    """A gemm whose j loop is numbered from i + k: j follows two loops."""

    def kernel(self, A, B, C, n):
        for i in range(n):
            for k in range(n):
                for j in range(i + k, i + k + n):
                    C[i, j - i - k] += A[i, k] * B[k, j - i - k]


class Skewing(LoopKernel):
    """j's start falls as i grows: iteration numbers and values order the j loop apart
    (B[i, j] reads what B[i - 1, j + 1] wrote: (<, =) by number, (<, >) by value). Tiled by
    number, as it must be, this gives Python's result; blocks of values would not."""

    def kernel(self, B, n):
        for i in range(1, n):
            for j in range(n - i, 2 * n - i):
                B[i, j - n + i] = B[i - 1, j - n + i] * 0.5 + j


class Band(LoopKernel):
    """A band along the diagonal, every second element: both bounds follow i."""

    def kernel(self, A, B, n):
        for i in range(n):
            for j in range(i + 1, i + 10, 2):
                B[i, j - i] = A[i, j - i] * 0.5 + B[i, j - i - 1]


class Imperfect(LoopKernel):
    """A row loop holding a statement beside its inner loop: split into two row loops
    (``schedule.distribution``), the second a band with the inner loop."""

    def kernel(self, A, B, n):
        for i in range(n):
            B[i, 0] = 0.0
            for j in range(1, n):
                B[i, j] = A[i, j] * 2.0


class ImperfectScalar(LoopKernel):
    """The same, a scalar of each row's flowing into its inner loop: not split."""

    def kernel(self, A, B, n):
        for i in range(n):
            s = A[i, 0] * 2.0
            for j in range(1, n):
                B[i, j] = A[i, j] * s


class TimeLoop(LoopKernel):
    def kernel(self, A, B, steps, n):
        for t in range(steps):
            for i in range(n):
                for j in range(n):
                    B[i, j] = A[i, j] * 0.5 + t


def _tiles(cls, args, monkeypatch, force=None, backend="c"):
    """The tiled bands of the ``backend`` module of the kernel's first nest for this call."""
    if force is None:
        monkeypatch.delenv("ASP_TILE", raising=False)
    else:
        monkeypatch.setenv("ASP_TILE", str(force))
    kernel = cls(backend=backend, strict=True)
    kernel.kernel(*copy.deepcopy(args))
    runner = kernel._asp_current.runners[0]
    modules = [v.module for v in runner._executors.values() if hasattr(v, "module")]
    return modules[-1].tiles


def _gemm_args(n):
    rng = np.random.default_rng(1)
    return (rng.random((n, n)), rng.random((n, n)), np.zeros((n, n)), n)


def test_a_gemm_too_big_for_the_cache_is_tiled_and_a_small_one_is_not(monkeypatch):
    (band,) = _tiles(Gemm, _gemm_args(300), monkeypatch)
    assert band.startswith("tiled (i:") and "do not fit in half the L2" in band
    assert _tiles(Gemm, _gemm_args(20), monkeypatch) == ()


def test_the_blocks_do_not_depend_on_the_size(monkeypatch):
    """One module serves every size a tiled band runs at (its key holds the schedule)."""
    big = _tiles(Gemm, _gemm_args(300), monkeypatch)
    bigger = _tiles(Gemm, _gemm_args(420), monkeypatch)
    assert big[0].split(";")[0] == bigger[0].split(";")[0]


@pytest.mark.parametrize("cls,args", [
    (Skewed, lambda: (np.random.default_rng(2).random((9, 9)), 9)),
    (TriangularDown, lambda: (np.random.default_rng(3).random((9, 9)), np.zeros((9, 9)), 9)),
    (ImperfectScalar, lambda: (np.random.default_rng(4).random((9, 9)), np.ones((9, 9)), 9)),
], ids=["not permutable", "triangular downward", "imperfect, a row's scalar"])
def test_bands_that_are_not_tiled(cls, args, monkeypatch):
    assert _tiles(cls, args(), monkeypatch, force=2) == ()
    _same_as_python(cls, args(), monkeypatch)


def test_an_imperfect_nest_split_into_a_band(monkeypatch):
    args = (np.random.default_rng(4).random((9, 9)), np.ones((9, 9)), 9)
    (band,) = _tiles(Imperfect, args, monkeypatch, force=2)
    assert band.startswith("tiled (i:2 x j:2")
    _same_as_python(Imperfect, args, monkeypatch, backends=("c", "openmp", "python-shuffled"))


def _syr2k_args(n, m=None):
    rng = np.random.default_rng(6)
    m = m or n
    return (1.5, rng.random((n, m)), rng.random((n, m)), rng.random((n, n)))


@pytest.mark.parametrize("cls,args", [
    (Triangular, lambda: (np.random.default_rng(3).random((9, 9)), np.zeros((9, 9)), 9)),
    (Syr2k, lambda: _syr2k_args(11, 7)),
    (Shifted, lambda: tuple(np.random.default_rng(7).random((10, 10)) for _ in range(3)) + (10,)),
    (Band, lambda: (np.random.default_rng(8).random((12, 10)), np.ones((12, 10)), 12)),
    (Skewing, lambda: (np.random.default_rng(9).random((11, 11)), 11)),
], ids=["triangle", "syr2k", "shifted", "band", "skewing"])
@pytest.mark.parametrize("force", [2, 3, 5])
def test_triangular_bands_are_tiled_over_their_hulls(cls, args, force, monkeypatch):
    """A band whose inner loops' ranges follow its outer loops is tiled: each block of a
    triangular loop walks the hull of its ranges, in blocks that divide no range, and runs
    the values of its own range there; serial C, OpenMP and the order checker (the blocked
    order, parallel loops shuffled) give Python's result, bit for bit."""
    (band,) = _tiles(cls, args(), monkeypatch, force=force)
    assert band.startswith("tiled (") and f":{force}" in band and " follows " in band
    _same_as_python(cls, args(), monkeypatch, backends=("c", "openmp", "python-shuffled"))


def test_a_time_loop_around_a_permutable_band_joins_it(monkeypatch):
    args = (np.random.default_rng(5).random((7, 7)), np.zeros((7, 7)), 4, 7)
    (band,) = _tiles(TimeLoop, args, monkeypatch, force=3)
    assert band.startswith("tiled (") and all(f"{v}:3" in band for v in "tij")
    _same_as_python(TimeLoop, args, monkeypatch)


def test_the_block_sizes_fill_half_the_l2_innermost_first():
    accesses = {("C", frozenset({0, 2}), 8), ("A", frozenset({0, 1}), 8),
                ("B", frozenset({1, 2}), 8)}   # gemm scheduled i (0), k (1), j (2)
    sizes = tiling.block_sizes(accesses, [0, 1, 2], 256 * 1024)
    assert sizes[2] == tiling.MAX_INNER_BLOCK
    assert tiling._footprint(accesses, [0, 1, 2], sizes) <= 256 * 1024
    assert all(s >= tiling.MIN_BLOCK for s in sizes)


def _same_as_python(cls, args, monkeypatch, backends=("c", "python-shuffled", "python")):
    want = copy.deepcopy(args)
    want_result = cls().original_kernel(*want)
    for backend in backends:
        got = copy.deepcopy(args)
        result = cls(backend=backend, strict=True).kernel(*got)
        assert close((result, got), (want_result, want)), backend


@pytest.mark.parametrize("backend,force,seeds,minimum", [("c", 2, 100, 10), ("c", 3, 200, 20),
                                                          ("c", 4, 200, 10),
                                                          ("openmp", 3, 200, 5)])
def test_random_affine_nests_tiled(backend, force, seeds, minimum, monkeypatch):
    """Random affine nests (two to four loops, coupled and negative coefficients and steps,
    several arrays) with every permutable band tiled in blocks that divide no range, in
    serial C (OpenMP: bands headed by a parallel top-level loop, its blocks shared) and, where
    it tiled, in the order checker, against the original code; enough of them tiled to mean
    something (most random nests are imperfect or not permutable; 7 of the 200 are whole
    bands headed by a parallel loop, as OpenMP tiles them), triangular ones among them."""
    monkeypatch.setenv("ASP_TILE", str(force))
    tiled = triangles = 0
    for seed in range(seeds):
        nest = random_nest(seed)
        Kernel, args = random_kernel(nest)
        plain = copy.deepcopy(args)
        Kernel().original_kernel(*plain)
        for run in (backend, "python-shuffled"):
            got = copy.deepcopy(args)
            kernel = Kernel(backend=run, strict=True)
            kernel.kernel(*got)
            assert close(got, plain), f"{run}, seed {seed}\n{nest.source}"
            runner = kernel._asp_current.runners[0]
            bands = [band for v in runner._executors.values()
                     if getattr(v, "module", None) is not None for band in v.module.tiles]
            if run == backend and not bands:
                break
            tiled += run == backend
            triangles += run == backend and any(" follows " in band for band in bands)
    assert tiled >= minimum, tiled
    assert triangles >= minimum // 2, triangles   # (triangular bands among them)


def test_an_illegal_tiling_is_caught_by_the_order_checker(monkeypatch):
    """With the permutability test switched off (a test hook), the skewed band is tiled, and
    both the checker and serial C give another result than Python's."""
    monkeypatch.setattr(tiling, "_permutable", lambda band, graph: True)
    monkeypatch.setenv("ASP_TILE", "2")
    args = (np.random.default_rng(6).random((9, 9)), 9)
    want = copy.deepcopy(args)
    Skewed().original_kernel(*want)
    for backend in ("python", "c"):
        got = copy.deepcopy(args)
        Skewed(backend=backend, strict=True).kernel(*got)
        assert not np.array_equal(got[0], want[0]), backend


def test_the_checker_runs_the_blocked_order(monkeypatch):
    from specializers.loopnest import runtime

    monkeypatch.setenv("ASP_TILE", "3")
    kernel = Gemm(backend="python", strict=True)
    kernel.kernel(*_gemm_args(7))
    runner = kernel._asp_current.runners[0]
    schedule = runtime.forced_tiling(runner.analysis, runner.last_plan, 3)
    assert isinstance(schedule.root[0], STile)


def test_openmp_shares_the_blocks_of_a_parallel_head(monkeypatch):
    (band,) = _tiles(Gemm, _gemm_args(300), monkeypatch, backend="openmp")
    assert band.startswith("tiled (i:")
    monkeypatch.setenv("ASP_TILE", "3")
    _same_as_python(Gemm, _gemm_args(10), monkeypatch, backends=("openmp",))
    _same_as_python(TimeLoop, (np.random.default_rng(7).random((8, 8)), np.zeros((8, 8)), 3, 8),
                    monkeypatch, backends=("openmp",))


def _module(cls, args, monkeypatch, force, backend="c"):
    """The compiled module of the kernel's first nest for this call, under ``ASP_TILE``."""
    monkeypatch.setenv("ASP_TILE", str(force))
    kernel = cls(backend=backend, strict=True)
    kernel.kernel(*args)
    runner = kernel._asp_current.runners[0]
    return [v.module for v in runner._executors.values() if hasattr(v, "module")][-1]


@pytest.mark.parametrize("backend", ["c", "openmp"])
@pytest.mark.parametrize("n", [13, 17])
def test_gemm_blocks_are_unrolled_and_jammed_and_sum_in_pythons_order(backend, n,
                                                                        monkeypatch):
    """In each block, four iterations of k at a time update one C[i, j] in a register, in
    k's order, for two rows i at a time (each B[k, j] loaded once for both), then the block's
    last ones one at a time: the sums are Python's, bit for bit (blocks of 6 leave 1 or 5
    iterations of k, and 1 row at n = 13, to the remainders)."""
    args = _gemm_args(n)
    want = copy.deepcopy(args)
    Gemm().original_kernel(*want)
    got = copy.deepcopy(args)
    module = _module(Gemm, got, monkeypatch, 6, backend)
    assert "asp_jam_k" in module.source and "asp_jam_i" in module.source and module.tiles
    assert module.jams == (
        "i unrolled by 2 and jammed into j too (each B element read there serves 2 iterations "
        "of i)",
        "k unrolled by 4 and jammed into j (the element it writes stays in a register across k)")
    assert np.array_equal(got[2], want[2])


def test_an_elementwise_band_is_tiled_without_jamming(monkeypatch):
    """Nothing to keep in a register: every element the band writes moves with every loop."""
    class Scale(LoopKernel):
        def kernel(self, A, B, n):
            for i in range(n):
                for j in range(n):
                    B[i, j] = A[i, j] * 2.0 + 1.0

    args = (np.random.default_rng(6).random((9, 9)), np.zeros((9, 9)), 9)
    module = _module(Scale, args, monkeypatch, 5)
    assert module.tiles and "asp_jam_" not in module.source


def test_the_jammed_loop_is_vectorized(monkeypatch, tmp_path):
    """GCC's own report (``-fopt-info-vec-optimized``) on the generated gemm, with the flags
    the specializer builds it with: the j loop the four k iterations are jammed into is
    vectorized."""
    import subprocess

    from asp_core.backends.c import default_compiler

    module = _module(Gemm, _gemm_args(40), monkeypatch, 16)
    path = tmp_path / "gemm.c"
    path.write_text(module.source)
    lines = module.source.splitlines()
    jam = next(k for k, line in enumerate(lines) if "asp_jam_k + 3 * asp_step_k" in line)
    inner = next(k for k in range(jam, len(lines)) if "for (int64_t j = " in lines[k]) + 1
    compiler = default_compiler()
    report = subprocess.run(
        compiler.command([str(path)], str(tmp_path / "gemm.so"), ["-fopt-info-vec-optimized"]),
        capture_output=True, text=True, check=True).stderr
    vectorized = {int(m) for m in __import__("re").findall(r"gemm\.c:(\d+):\d+: optimized: "
                                                         r"loop vectorized", report)}
    assert inner in vectorized, report


def contraction_source(rng) -> tuple[str, str]:
    """A random contraction (the kind of nest unroll-and-jam is for): three loops in a
    random order, an output element that two of them move and the third sums over, operands
    with random subscript orders and offsets; (source, the summed variable)."""
    import itertools

    order = list(itertools.permutations("ijk"))[rng.integers(6)]
    summed = "ijk"[rng.integers(3)]
    kept = [v for v in "ijk" if v != summed]
    a = f"A[{kept[0]}, {summed}]" if rng.random() < 0.5 else f"A[{summed}, {kept[0]}]"
    b = f"B[{summed}, {kept[1]}]" if rng.random() < 0.5 else f"B[{kept[1]}, {summed}]"
    op = ["+", "-", "*"][rng.integers(3)]
    update = (f"C[{kept[0]}, {kept[1]}] += {a} {op} {b} * 0.5" if rng.random() < 0.5 else
              f"C[{kept[0]}, {kept[1]}] = C[{kept[0]}, {kept[1]}] * 0.75 + {a} {op} {b}")
    lines = ["from specializers.loopnest import LoopKernel", "", "",
             "class Kernel(LoopKernel):", "    def kernel(self, A, B, C, n):"]
    for depth, var in enumerate(order):
        lines.append("    " * (depth + 2) + f"for {var} in range(n):")
    lines.append("    " * 5 + update)
    return "\n".join(lines) + "\n", summed


@pytest.mark.parametrize("backend", ["c", "openmp"])
def test_random_contractions_jammed_in_blocks(backend, monkeypatch):
    """Random contractions with their bands tiled in blocks of 4 to 6 (the jam's four
    iterations, and remainders of 1 to 5): bit for bit Python's sums, and most jammed."""
    rng = np.random.default_rng(7)
    jammed = 0
    cases = 30
    for _ in range(cases):
        source, _ = contraction_source(rng)
        Kernel = load_source(source)
        n = int(rng.integers(5, 15))
        args = [rng.random((n, n)), rng.random((n, n)), rng.random((n, n)), n]
        want = copy.deepcopy(args)
        Kernel().original_kernel(*want)
        got = copy.deepcopy(args)
        module = _module(Kernel, got, monkeypatch, int(rng.integers(4, 7)), backend)
        assert np.array_equal(got[2], want[2]), source
        jammed += "asp_jam_" in module.source
    assert jammed >= cases // 3, jammed


class IntProducts(LoopKernel):
    """Python ints in a tiled band: its arithmetic is checked against the 64-bit range."""

    def kernel(self, A, C, n):
        for i in range(n):
            for j in range(n):
                for k in range(n):
                    C[i, j] = C[i, j] + A[i, k] * (i * k * j)


def test_a_shared_tiled_bands_blocks_run_in_a_function_of_their_own(monkeypatch):
    """OpenMP: a thread's blocks of a tiled band run in a function whose pointers are
    ``restrict`` parameters (GCC drops ``restrict`` in an OpenMP region's outlined body),
    the time loop of ``TimeLoop`` among the band's loops too. Python's results, bit for bit;
    the outlined function's 64-bit checks still count."""
    args = _gemm_args(11)
    want = copy.deepcopy(args)
    Gemm().original_kernel(*want)
    got = copy.deepcopy(args)
    module = _module(Gemm, got, monkeypatch, 4, "openmp")
    assert "static void asp_block_0(double * restrict A" in module.source
    assert np.array_equal(got[2], want[2])

    rng = np.random.default_rng(8)
    args = [rng.random((7, 7)), np.zeros((7, 7)), 3, 7]
    want = copy.deepcopy(args)
    TimeLoop().original_kernel(*want)
    got = copy.deepcopy(args)
    module = _module(TimeLoop, got, monkeypatch, 3, "openmp")
    assert module.tiles and "asp_block_0(" in module.source
    assert np.array_equal(got[1], want[1])

    args = [rng.integers(-9, 9, (6, 6)), np.zeros((6, 6), dtype=np.int64), 6]
    want = copy.deepcopy(args)
    IntProducts().original_kernel(*want)
    got = copy.deepcopy(args)
    module = _module(IntProducts, got, monkeypatch, 4, "openmp")
    assert "asp_block_0" in module.source and module.beyond_int64
    assert np.array_equal(got[1], want[1])
