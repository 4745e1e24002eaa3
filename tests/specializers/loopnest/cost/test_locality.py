"""The bytes a nest's schedule loads into each cache level (``cost.locality``): reuse found
where a working set fits, the loads counted where it does not, worked out by hand for small
caches (the caches are injected: ``platform.data_caches``)."""

import dataclasses

import numpy as np
import pytest

from asp_core import platform
from specializers.loopnest import LoopKernel
from specializers.loopnest.cost import locality, models
from tests.specializers.loopnest.cost.test_models import Product, profile_of

KIB = 1024


class Triangle(LoopKernel):
    def kernel(self, A, C):
        for i in range(C.shape[0]):
            for j in range(i + 1):
                for k in range(A.shape[1]):
                    C[i, j] += A[j, k]


class ColumnTriangle(LoopKernel):   # syr2k's order: j innermost walks A's columns
    def kernel(self, A, C):
        for i in range(C.shape[0]):
            for k in range(A.shape[1]):
                for j in range(i + 1):
                    C[i, j] += A[j, k]


class Gather(LoopKernel):
    def kernel(self, A, idx, out):
        for r in range(out.shape[0]):
            for i in range(idx.shape[0]):
                out[r, i] = A[idx[i]]


@pytest.fixture
def caches(monkeypatch):
    """``caches(l1, l2, l3)``: the data caches the model sees (bytes)."""
    def inject(l1, l2, l3):
        found = dataclasses.replace(platform.data_caches(), l1=l1, l2=l2, l3=l3)
        monkeypatch.setattr(platform, "data_caches", lambda: found)
    return inject


def product(n=64):
    return profile_of(Product(backend="python", strict=True),
                      *[np.ones((n, n)) for _ in range(3)])


def test_a_product_reloads_b_for_every_row_where_b_does_not_fit(caches):
    """i, k, j on 64 x 64 (32 KiB a matrix), L1 of 32 KiB (16 usable): one j sweep (a row of C
    and of B, a line of A) fits, so the row of C and the line of A are reused across k; all of
    B (a k sweep) does not, so it comes again for each i. L2 and L3 hold everything: nothing
    is loaded into them."""
    caches(32 * KIB, 1024 * KIB, 8192 * KIB)
    p = product()
    row = 64 * 8
    assert p.traffic == (64 * row + 64 * row + 64 * (64 * row), 0.0, 0.0)


def test_a_product_that_fits_loads_each_matrix_once(caches):
    caches(64 * KIB, 1024 * KIB, 8192 * KIB)  # 32 KiB usable: one i step (B, 33 KiB) does not
    assert product().traffic[0] == 64 * 8 * (64 + 64 + 64 * 64)
    caches(256 * KIB, 1024 * KIB, 8192 * KIB)  # 128 KiB usable: all three matrices (96 KiB)
    assert product().traffic == (0.0, 0.0, 0.0)
    caches(160 * KIB, 1024 * KIB, 8192 * KIB)  # 80: one i step fits, not the whole nest
    assert product().traffic[0] == 3 * 64 * 64 * 8   # each matrix once


def test_tiles_keep_their_blocks_in_the_cache(caches, monkeypatch):
    """Blocks of 16 on all three loops (``ASP_TILE``): within a block of ``j`` tiles, 16 rows of
    C, A and B (8, 2 and 8 lines each) take 18 KiB, over the 16 usable; one block of all three
    loops (6 KiB) fits. So each block of i and k loads a 16-row band of C and B and a 16 x 16
    block of A: 16 times (8 + 2 + 8) KiB, against 2.1 MB untiled."""
    caches(32 * KIB, 1024 * KIB, 8192 * KIB)
    monkeypatch.setenv("ASP_TILE", "16")
    p = product()
    assert p.traffic[0] == 16 * (8 + 2 + 8) * KIB
    monkeypatch.delenv("ASP_TILE")
    assert p.traffic[0] < product().traffic[0] / 7   # 2.1 MB untiled (the test above)


def test_a_triangle_loads_its_rows_on_average(caches, monkeypatch):
    """For each i, j runs i + 1 rows of A (512 bytes each): 32.5 rows on average, loaded again
    for each i (64 of them: all of A does not fit 16 KiB); C's row i, walked along j, is
    ceil(32.5 * 8 / 64) = 5 lines on average. (In the order written: compiled C would read A
    through a transposed copy, ``j`` innermost: a test below.)"""
    from specializers.loopnest.schedule import packing

    monkeypatch.setattr(packing, "pack_schedule", lambda schedule, *rest: (schedule, ()))
    caches(32 * KIB, 1024 * KIB, 8192 * KIB)
    p = profile_of(Triangle(backend="python", strict=True), np.ones((64, 64)), np.ones((64, 64)))
    assert p.traffic[0] == 64 * (32.5 * 512 + 5 * 64)


def test_a_strided_view_costs_a_line_per_element(caches):
    caches(4 * KIB, 1024 * KIB, 8192 * KIB)
    n = 256   # (run as serial C: the profile is the call's, whichever variant runs it; the
    # original code took 27 s over the two calls' 2 x 256**3 iterations)
    dense = profile_of(Product(backend="c", strict=True),
                       *[np.ones((n, n)) for _ in range(3)]).traffic[0]
    views = [np.ones((n, 2 * n))[:, ::2] for _ in range(3)]
    strided = profile_of(Product(backend="c", strict=True), *views).traffic[0]
    assert strided > 4 * dense


def test_a_gathered_array_counts_whole(caches):
    """``A[idx[i]]`` is not affine: the region of A is all of it (8 KiB here). With 16 KiB
    usable one r step (A, idx and a row of out: 8 + 2 + 2 KiB) fits, and everything (8 + 2 +
    32 KiB) does not: A and idx are loaded once, out's rows once each."""
    caches(32 * KIB, 1024 * KIB, 8192 * KIB)
    p = profile_of(Gather(backend="python", strict=True), np.ones(1024),
                   np.arange(256) * 4, np.zeros((16, 256)))
    assert p.traffic[0] == 8 * KIB + 2 * KIB + 16 * 2 * KIB


def test_region_counts_lines_along_the_contiguous_dimension():
    group = locality.Group("A", 8, (100, 100), 1, (((1, 1),), ((2, 1),)), (0, 0), ())
    assert locality.region(group, {2: 16}) == 2 * 64          # 16 doubles: two lines
    assert locality.region(group, {1: 16}) == 16 * 64         # a column: a line per row
    assert locality.region(group, {1: 1000, 2: 1000}) == 100 * 13 * 64   # capped at the array
    spread = dataclasses.replace(group, spread=(2, 2))          # a 3 x 3 stencil's reads
    assert locality.region(spread, {2: 14}) == 3 * 2 * 64


def test_the_memory_term_prices_each_level(caches):
    """The roofline over the levels: the slowest of L2 into L1, the last-level cache into L2,
    memory into the last-level cache."""
    caches(32 * KIB, 1024 * KIB, 8192 * KIB)
    p = dataclasses.replace(product(), traffic=(120e9, 30e9, 10e9))
    params = models.MachineParams(l2_bandwidth=120e9, cache_bandwidth=60e9,
                                  bandwidth={1: 20e9, 2: 30e9})
    assert models.c_cost(p, params)[1]["memory"] == pytest.approx(1.0)      # L1's 1 s
    p = dataclasses.replace(p, traffic=(1e9, 1e9, 20e9))
    assert models.c_cost(p, params)[1]["memory"] == pytest.approx(1.0)      # memory's
    team = models.openmp_cost(dataclasses.replace(p, traffic_omp=p.traffic), params,
                              threads=2, cores=2)[1]["memory"]
    assert team == pytest.approx(20e9 / 30e9)


def test_a_matrix_read_through_a_transposed_copy_walks_the_copy(caches, monkeypatch):
    """syr2k's triangle walks ``A[j, k]``'s columns along its innermost ``j``; compiled C
    reads A through a transposed copy (``schedule.packing``), where ``j`` is the contiguous
    dimension. The model must count the copy's lines, not a line per element of
    the original (syr2k at 512 was priced 8 times its time), and the copy itself: A read and
    its copy written once per call."""
    from specializers.loopnest.schedule import packing

    caches(32 * KIB, 256 * KIB, 8192 * KIB)   # A and C, 512 KiB each, do not fit the L2
    args = np.ones((256, 256)), np.ones((256, 256))
    packed = profile_of(ColumnTriangle(backend="python", strict=True), *args)
    real = packing.pack_schedule

    def order_only(*given):   # the packed schedule's loop order, A read in place
        schedule, _ = real(*given)
        assert schedule.packs == ("A",)
        return dataclasses.replace(schedule, packs=()), ()

    monkeypatch.setattr(packing, "pack_schedule", order_only)
    plain = profile_of(ColumnTriangle(backend="python", strict=True), *args)
    a_bytes = args[0].nbytes
    assert packed.traffic[1] >= 2 * a_bytes                   # the copy: read, then written
    assert packed.traffic[0] < plain.traffic[0] / 4   # (L2 and beyond: the tiles' blocks)


def test_region_counts_a_transposed_copy_along_its_first_dimension():
    column = locality.Group("A", 8, (100, 100), 0, (((1, 1),), ((2, 1),)), (0, 0), ())
    assert locality.region(column, {1: 16}) == 2 * 64        # down a column: two lines
    assert locality.region(column, {2: 16}) == 16 * 64       # along a row: a line each
