"""Packing (``schedule.packing``): read-only matrices read through transposed copies, so that
the innermost loop of a band vectorizes; against the original code, and where it must not.

Every run is checked bit for bit against the method as written: a copy holds the same values,
and each element's sum still runs in Python's order. The order checker (``python-shuffled``)
runs the reordered, tiled schedule (``ASP_TILE``), parallel loops shuffled within their
blocks.
"""

import copy
import itertools

import numpy as np
import pytest

from specializers.loopnest import LoopKernel
from specializers.loopnest.checking import load_source
from specializers.loopnest.schedule import packing
from specializers.loopnest.variants import CopyFailed, python_error

from .test_tiling import Syr2k


class Syrk(LoopKernel):
    """A rectangular band: C = A @ A.T, summed over k innermost as written."""

    def kernel(self, A, C, n):
        for i in range(n):
            for j in range(n):
                for k in range(n):
                    C[i, j] += A[i, k] * A[j, k]


class WritesItsOperand(LoopKernel):
    """A[j, k] is read along j, but the nest writes A: never read through a copy."""

    def kernel(self, A, C, n):
        for i in range(n):
            for j in range(n):
                for k in range(n):
                    C[i, j] += A[i, k] * A[j, k]
            A[i, 0] = C[i, i] * 1e-3


class Strided(LoopKernel):
    """A[2 * j, k]: j walks every second row, not packed."""

    def kernel(self, A, C, n):
        for i in range(n):
            for j in range(n):
                for k in range(n):
                    C[i, j] += A[i, k] * A[2 * j, k]


def _module(kernel):
    runner = kernel._asp_current.runners[0]
    modules = [v.module for v in runner._executors.values() if hasattr(v, "module")]
    return modules[-1]


def _same_as_python(cls, args, backend, monkeypatch, tile=None):
    if tile is None:
        monkeypatch.delenv("ASP_TILE", raising=False)
    else:
        monkeypatch.setenv("ASP_TILE", str(tile))
    want = copy.deepcopy(args)
    cls().original_kernel(*want)
    got = copy.deepcopy(args)
    kernel = cls(backend=backend, strict=True)
    kernel.kernel(*got)
    for g, w in zip(got, want):
        if isinstance(w, np.ndarray):
            assert np.array_equal(g, w), backend
    return kernel


def _syr2k(n, m):
    rng = np.random.default_rng(n * 31 + m)
    return [1.5, rng.random((n, m)), rng.random((n, m)), rng.random((n, n))]


@pytest.mark.parametrize("backend", ["c", "openmp"])
@pytest.mark.parametrize("tile", [None, 5])
def test_syr2k_reads_its_operands_transposed_and_sums_in_pythons_order(backend, tile,
                                                                       monkeypatch):
    kernel = _same_as_python(Syr2k, _syr2k(70, 41), backend, monkeypatch, tile)
    module = _module(kernel)
    assert module.packs == ("j moved innermost in its band, which then walks every array with "
                            "unit stride (or not at all) and vectorizes",
                            "A, B read through transposed copies (made once per call)")
    assert "asp_pk_A" in module.source and "free(asp_pk_A)" in module.source
    assert "A, B read through transposed copies" in str(kernel.explain(*_syr2k(70, 41)))
    if tile:
        _same_as_python(Syr2k, _syr2k(70, 41), "python-shuffled", monkeypatch, tile)


def test_the_packed_loop_is_vectorized(monkeypatch, tmp_path):
    """With A and B transposed, gcc vectorizes syr2k's j loop (its report names the loop)."""
    kernel = _same_as_python(Syr2k, _syr2k(70, 41), "c", monkeypatch)
    source = _module(kernel).source
    assert "ASP_AT_A(j, k)" in source   # (the statement as written, through the copy's macro)
    from asp_core.backends.c import default_compiler

    path = tmp_path / "nest.c"
    path.write_text(source)
    import subprocess

    out = subprocess.run([default_compiler().cc, "-O3", "-march=native", "-std=gnu11", "-fPIC",
                          "-fwrapv", "-fno-math-errno", "-fno-trapping-math",
                          "-ffp-contract=off", "-fopt-info-vec-optimized", "-c", str(path),
                          "-o", str(tmp_path / "nest.o")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = source.splitlines()
    vectorized = {int(line.split(":")[1]) for line in out.stderr.splitlines()
                  if "loop vectorized" in line and line.startswith(str(path))}
    assert any("for (int64_t j = " in lines[n - 1] for n in vectorized), out.stderr


@pytest.mark.parametrize("backend", ["c", "openmp", "python-shuffled"])
def test_polybench_syr2k_keeps_its_order_and_reads_copies(backend, monkeypatch):
    """The example's syr2k (PolyBench's form: under each i, C's row scaled, then k and j;
    the plan runs j outside k there, to share it): j moves innermost again, now reading
    A[j, k] and B[j, k] through copies."""
    from examples.syr2k import Syr2k as Example

    rng = np.random.default_rng(5)
    args = [1.5, 1.2, rng.random((70, 70)), rng.random((70, 41)), rng.random((70, 41))]
    kernel = _same_as_python(Example, args, backend, monkeypatch, 6)
    if backend != "python-shuffled":
        assert _module(kernel).packs[1:] == ("A, B read through transposed copies (made once "
                                             "per call)",)


@pytest.mark.parametrize("cls,args", [
    (WritesItsOperand, lambda: [np.random.default_rng(1).random((40, 40)), np.zeros((40, 40)), 40]),
    (Strided, lambda: [np.random.default_rng(2).random((80, 40)), np.zeros((40, 40)), 40]),
], ids=["written", "strided"])
def test_arrays_that_are_not_packed(cls, args, monkeypatch):
    kernel = _same_as_python(cls, args(), "c", monkeypatch)
    assert not _module(kernel).packs


def test_an_operand_that_is_also_the_output_is_not_packed(monkeypatch):
    """syr2k with C passed as A too: A is written (through C), so it is read as it is."""
    rng = np.random.default_rng(3)
    C = rng.random((40, 40))
    args = [1.5, C, rng.random((40, 40)), C]
    want = copy.deepcopy(args)
    Syr2k().original_kernel(*want)
    kernel = Syr2k(backend="c", strict=True)
    got = copy.deepcopy(args)
    got[3] = got[1]   # (deepcopy keeps them one array: say so)
    kernel.kernel(*got)
    assert np.array_equal(got[3], want[3])
    assert not _module(kernel).packs


def test_small_calls_do_not_copy(monkeypatch):
    """At 10 x 10 the copies would cost more than the band's iterations repay."""
    kernel = _same_as_python(Syrk, [np.random.default_rng(4).random((10, 10)),
                                    np.zeros((10, 10)), 10], "c", monkeypatch)
    assert not _module(kernel).packs
    kernel = _same_as_python(Syrk, [np.random.default_rng(4).random((40, 40)),
                                    np.zeros((40, 40)), 40], "c", monkeypatch)
    assert _module(kernel).packs


def test_a_failed_copy_runs_the_call_again_in_order(monkeypatch):
    """No memory for a copy (error code 10, before anything is written): ``CopyFailed``, and
    the call runs again through the in-order variant, without copies."""
    from specializers.loopnest import variants

    err = type("E", (), {"code": 10, "value": 3, "extent": 4, "where": 0})()
    assert isinstance(python_error(err, None), CopyFailed)
    calls = []
    original = variants.CompiledVariant.__call__

    def failing(self, *inputs):
        if self.module.packs and not calls:
            calls.append(1)
            raise CopyFailed("no memory (a test)")
        return original(self, *inputs)

    monkeypatch.setattr(variants.CompiledVariant, "__call__", failing)
    _same_as_python(Syr2k, _syr2k(70, 41), "c", monkeypatch)
    assert calls


def packable_source(rng) -> str:
    """A random contraction over a random loop order, with operands read along either
    subscript, one of the inner loops perhaps following an outer one (a triangle from below
    or above), and a read of an input that moves with no loop."""
    order = list(itertools.permutations("ijk"))[rng.integers(6)]
    summed = "ijk"[rng.integers(3)]
    kept = [v for v in "ijk" if v != summed]
    a = f"A[{kept[0]}, {summed}]" if rng.random() < 0.5 else f"A[{summed}, {kept[0]}]"
    b = f"B[{summed}, {kept[1]}]" if rng.random() < 0.5 else f"B[{kept[1]}, {summed}]"
    op = ["+", "-", "*"][rng.integers(3)]
    update = (f"C[{kept[0]}, {kept[1]}] += {a} {op} {b} * D[2, 3]" if rng.random() < 0.5 else
              f"C[{kept[0]}, {kept[1]}] = C[{kept[0]}, {kept[1]}] * 0.75 + {a} {op} {b}")
    bounds = ["range(n)"] * 3
    shape = rng.integers(3)
    if shape:   # the second or third loop follows the first
        follows = 1 + int(rng.integers(2))
        bounds[follows] = f"range({order[0]} + 1)" if shape == 1 else f"range({order[0]}, n)"
    lines = ["from specializers.loopnest import LoopKernel", "", "",
             "class Kernel(LoopKernel):", "    def kernel(self, A, B, C, D, n):"]
    for depth, var in enumerate(order):
        lines.append("    " * (depth + 2) + f"for {var} in {bounds[depth]}:")
    lines.append("    " * 5 + update)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("backend", ["c", "openmp"])
def test_random_contractions_packed_against_python(backend, monkeypatch):
    """Random contractions (rectangular and triangular bands, every loop order, operands
    along either subscript), large enough to be packed, tiled in blocks of 3 to 9 or as the
    cache asks: bit for bit Python's result in the variant and in the order checker, and
    many of them packed."""
    rng = np.random.default_rng(11)
    packed = 0
    cases = 36
    for case in range(cases):
        source = packable_source(rng)
        Kernel = load_source(source)
        n = int(rng.integers(33, 48))
        args = [rng.random((n, n)), rng.random((n, n)), rng.random((n, n)),
                rng.random((4, 5)), n]
        tile = None if case % 3 == 0 else int(rng.integers(3, 10))
        kernel = _same_as_python(Kernel, args, backend, monkeypatch, tile)
        module = _module(kernel)
        packed += bool(module.packs)
        if module.packs and tile:
            _same_as_python(Kernel, args, "python-shuffled", monkeypatch, tile)
    assert packed >= cases // 5, packed


def test_the_copies_stay_under_their_limit(monkeypatch):
    """Copies beyond ``PACK_LIMIT`` bytes are not made (the call reads the arrays)."""
    monkeypatch.setattr(packing, "PACK_LIMIT", 70 * 41 * 8)   # room for A, not for B too
    kernel = _same_as_python(Syr2k, _syr2k(70, 41), "c", monkeypatch)
    assert not _module(kernel).packs


def ragged_source(rng) -> str:
    """A contraction whose band ends in a loop running to a bound that follows the band's
    first loop (``for q in range(lo, p + c, step)``), summed over the middle loop: the kind
    whose blocks jam copies of the first loop's iterations, each to its own end."""
    p, s, q = "i", "k", "j"
    lo = int(rng.integers(0, 3))
    end = f"{p} + {int(rng.integers(1, 4))}" if rng.random() < 0.7 else f"2 * {p} + 1"
    step = int(rng.integers(1, 3))
    transposed = rng.random() < 0.7
    a = f"A[{q}, {s}]" if transposed else f"A[{s}, {q}]"
    b = f"B[{p}, {s}]" if rng.random() < 0.5 else f"B[{s}, {p}]"
    return transposed, "\n".join([
        "from specializers.loopnest import LoopKernel", "", "",
        "class Kernel(LoopKernel):", "    def kernel(self, A, B, C, n):",
        f"        for {p} in range(n):",
        f"            for {s} in range(n):",
        f"                for {q} in range({lo}, {end}, {step}):",
        f"                    C[{p}, {q}] += {a} * 0.5 + {b} * {a}"]) + "\n"


@pytest.mark.parametrize("backend", ["c", "openmp"])
def test_jammed_copies_run_to_their_own_ends(backend, monkeypatch):
    """Random bands ending in a loop whose end follows the first loop, tiled in blocks of 3
    to 9, the first loop's iterations jammed (each copy runs the values all share, then its
    own rest): bit for bit Python's result, and the ragged blocks were made."""
    rng = np.random.default_rng(12)
    ragged = 0
    cases = 16
    for _ in range(cases):
        transposed, source = ragged_source(rng)
        Kernel = load_source(source)
        n = int(rng.integers(40, 56))
        wide = 2 * n + 4
        args = [rng.random((wide, n) if transposed else (n, wide)), rng.random((n, n)),
                rng.random((n, wide)), n]
        tile = int(rng.integers(3, 10))
        kernel = _same_as_python(Kernel, args, backend, monkeypatch, tile)
        ragged += "the end all copies share" in _module(kernel).source
        _same_as_python(Kernel, args, "python-shuffled", monkeypatch, tile)
    assert ragged >= cases // 2, ragged


@pytest.mark.parametrize("layout", ["fortran and strided", "integers", "float32"])
@pytest.mark.parametrize("backend", ["c", "openmp"])
def test_copies_of_any_layout_and_dtype(layout, backend, monkeypatch):
    """The copies read the arrays through their own accessors (strides, Fortran order) and
    hold their dtype: the results are Python's, bit for bit."""
    rng = np.random.default_rng(8)
    n, m = 70, 41
    args = {
        "fortran and strided": [1.5, np.asfortranarray(rng.random((n, m))),
                                rng.random((2 * n, m))[::2], rng.random((n, n))],
        "integers": [1.5, rng.integers(-5, 5, (n, m)),
                     rng.integers(-5, 5, (n, m)).astype(np.int32), rng.random((n, n))],
        "float32": [1.5] + [rng.random(shape).astype(np.float32)
                            for shape in ((n, m), (n, m), (n, n))],
    }[layout]
    kernel = _same_as_python(Syr2k, args, backend, monkeypatch)
    assert _module(kernel).packs
