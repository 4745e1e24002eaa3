"""coldstart: the loop depth read off the bytecode, and the work a call's data suggest."""

import numpy as np

from specializers.loopnest.coldstart import WORK_S_PER_ELEMENT, ColdStart, loop_depth, work_hint


def flat(A, n):
    for i in range(n):
        A[i] = 1.0


def deep(A, B, C, n):
    for k in range(n):
        for i in range(n):
            for j in range(n):
                C[i, j] += A[i, k] * B[k, j]
    for i in range(n):
        A[i, 0] = 0.0


def two_deep_after_a_comprehension(A):
    squares = [x * x for x in range(3)]
    for i in range(4):
        for j in range(4):
            A[i, j] = squares[0]


def test_loop_depth_is_the_deepest_nesting():
    assert loop_depth(flat.__code__) == 1
    assert loop_depth(deep.__code__) == 3
    assert loop_depth(two_deep_after_a_comprehension.__code__) == 2


def test_work_grows_with_the_depth_over_the_dimensions():
    n = 100
    A = np.zeros((n, n))
    assert work_hint(None, (A, n), {}, depth=1) == (n * n + n) * WORK_S_PER_ELEMENT
    # three loops over n x n matrices: about n ** 3 iterations
    assert work_hint(None, (A, A, A, n), {}, depth=3) == (n * n) ** 1.5 * WORK_S_PER_ELEMENT


def test_a_dense_kernel_on_mid_sized_data_is_analysed_at_once():
    cold = ColdStart.of(deep)
    n = 128
    A = np.zeros((n, n))
    assert not cold.stays_cold(None, (A, A, A, n), {})   # 2 million iterations
    small = np.zeros((4, 4))
    assert cold.stays_cold(None, (small, small, small, 4), {})


def test_the_first_analysis_in_a_process_costs_more(monkeypatch):
    from specializers.loopnest import coldstart

    cold = ColdStart(analysis_s=1e-3)
    data = np.zeros(int(5e-3 / WORK_S_PER_ELEMENT))   # 5 ms of work
    monkeypatch.setattr(coldstart, "_ANALYSED", [False])
    assert cold.stays_cold(None, (data,), {})          # the analysis loads its modules first
    coldstart.analysed()
    assert not cold.stays_cold(None, (data,), {})


def stencil(A, B, n):
    for i in range(1, n - 1):
        for j in range(1, n - 1):
            B[i, j] = (A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1] +
                       A[i - 1, j - 1] + A[i + 1, j + 1] + A[i - 1, j + 1] +
                       A[i + 1, j - 1]) * 0.125 - A[i, j]


def test_a_longer_loop_body_weighs_more_per_element():
    """The same data suggest more work for a method of more bytecode (one unit per
    BYTES_PER_UNIT bytes, at least one): a stencil's first call on 185 x 185 is analysed at
    once, where a copy of the same arrays stays cold (its analysis costs less, too, but
    less than the stencil's work grows)."""
    from specializers.loopnest import coldstart

    def copy2d(A, B, n):
        for i in range(n):
            for j in range(n):
                B[i, j] = A[i, j]

    heavy, light = ColdStart.of(stencil), ColdStart.of(copy2d)
    assert heavy.weight == coldstart._bytecode_size(stencil.__code__) / coldstart.BYTES_PER_UNIT
    assert heavy.weight > 2.0 and light.weight < 1.5
    n = 185
    A = np.zeros((n, n))
    coldstart.analysed()
    assert light.stays_cold(None, (A, A, n), {}) and not heavy.stays_cold(None, (A, A, n), {})
