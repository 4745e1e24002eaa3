"""Distribution for blocking (``schedule.distribution``): a parallel loop split around its
inner nest so that the nest becomes a band with it, against the original code."""


import numpy as np
import pytest

from specializers.loopnest import LoopKernel
from specializers.loopnest.checking import load_source
from specializers.loopnest.schedule.distribution import distribute
from specializers.loopnest.schedule.tree import Schedule, SLoop, SStmt

from .test_packing import _module, _same_as_python


class _Loop:
    def __init__(self, predicate=None):
        self.predicate = predicate


def _schedule(head: SLoop) -> Schedule:
    return Schedule((head,), ())


def test_a_parallel_loop_is_split_around_its_inner_loops():
    inner = SLoop(1, False, (SStmt(1),))
    other = SLoop(2, True, (SStmt(2),))
    head = SLoop(0, True, (SStmt(0), inner, SStmt(3), SStmt(4), other))
    loops = {lid: _Loop() for lid in range(3)}
    split = distribute(_schedule(head), loops)
    assert [node.body for node in split.root] == [(SStmt(0),), (inner,),
                                                  (SStmt(3), SStmt(4)), (other,)]
    assert all(node.lid == 0 and node.parallel for node in split.root)


@pytest.mark.parametrize("head", [
    SLoop(0, False, (SStmt(0), SLoop(1, True, (SStmt(1),)))),                 # sequential
    SLoop(0, True, (SStmt(0), SLoop(1, True, (SStmt(1),))), private=("s",)),  # a scalar
    SLoop(0, True, (SStmt(0), SLoop(1, True, (SStmt(1),))),
          reductions=(("t", "+"),)),                                          # a reduction
    SLoop(0, True, (SStmt(0), SStmt(1))),                                     # no loop inside
], ids=["sequential", "private", "reduction", "statements"])
def test_loops_that_are_not_split(head):
    schedule = _schedule(head)
    assert distribute(schedule, {0: _Loop(), 1: _Loop()}) is schedule


class RowScalar(LoopKernel):
    """Each row's scalar flows from the first part to the second: never split."""

    def kernel(self, A, B, C, n):
        for i in range(n):
            s = A[i, 0] * 0.5
            for j in range(i + 1):
                for k in range(n):
                    C[i, j] += A[j, k] * B[i, k] * s


def imperfect_source(rng) -> str:
    """A row loop holding a pass over its row (scaling it, or one element) and a contraction
    into it, the contraction's loops in either order, triangular or not."""
    first = ("for j in range(i + 1):\n                C[i, j] *= beta" if rng.random() < 0.5
             else "C[i, 0] = C[i, 0] * beta + 1.0")
    end = "i + 1" if rng.random() < 0.6 else "n"
    a = "A[j, k]" if rng.random() < 0.6 else "A[k, j]"
    b = "B[i, k]" if rng.random() < 0.5 else "B[k, i]"
    loops = ["for k in range(n):", f"for j in range({end}):"]
    if rng.random() < 0.5:
        loops.reverse()
    return "\n".join([
        "from specializers.loopnest import LoopKernel", "", "",
        "class Kernel(LoopKernel):", "    def kernel(self, beta, A, B, C, n):",
        "        for i in range(n):",
        f"            {first}",
        f"            {loops[0]}",
        f"                {loops[1]}",
        f"                    C[i, j] += {a} * 1.5 * {b} + {b} * {a}"]) + "\n"


@pytest.mark.parametrize("backend", ["c", "openmp"])
def test_random_row_passes_split_from_their_contractions(backend, monkeypatch):
    """Random row loops holding a pass over the row and a contraction into it, blocked in 3
    to 9 or as the cache asks: bit for bit Python's result in the variant and in the order
    checker, and most of them blocked as a three-deep band after the split."""
    rng = np.random.default_rng(21)
    deep = 0
    cases = 16
    for case in range(cases):
        Kernel = load_source(imperfect_source(rng))
        n = int(rng.integers(36, 52))
        args = [1.25, rng.random((n, n)), rng.random((n, n)), rng.random((n, n)), n]
        tile = None if case % 4 == 0 else int(rng.integers(3, 10))
        kernel = _same_as_python(Kernel, args, backend, monkeypatch, tile)
        deep += any(band.count(" x ") == 2 for band in _module(kernel).tiles)
        if tile:
            _same_as_python(Kernel, args, "python-shuffled", monkeypatch, tile)
    assert deep >= cases // 2, deep


def test_a_row_scalar_keeps_its_loop_whole(monkeypatch):
    rng = np.random.default_rng(22)
    args = [rng.random((40, 40)), rng.random((40, 40)), rng.random((40, 40)), 40]
    kernel = _same_as_python(RowScalar, args, "c", monkeypatch, 5)
    assert not any(band.count(" x ") == 2 for band in _module(kernel).tiles)
