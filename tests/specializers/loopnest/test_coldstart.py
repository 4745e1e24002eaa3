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
    n = 256
    A = np.zeros((n, n))
    assert not cold.stays_cold(None, (A, A, A, n), {})   # 17 million iterations
    small = np.zeros((4, 4))
    assert cold.stays_cold(None, (small, small, small, 4), {})


def test_the_first_analysis_in_a_process_costs_more(monkeypatch):
    from specializers.loopnest import coldstart

    cold = ColdStart(analysis_s=1e-3)
    work = cold.analysis_s + coldstart.BUILD_S + coldstart.FIRST_ANALYSIS_S / 2
    data = np.zeros(int(work / WORK_S_PER_ELEMENT))
    monkeypatch.setattr(coldstart, "_ANALYSED", [False])
    assert cold.stays_cold(None, (data,), {})          # the analysis loads its modules first
    coldstart.analysed()
    assert not cold.stays_cold(None, (data,), {})


def test_a_call_that_could_not_pay_for_a_build_stays_cold_until_the_analysis_is_paid(
        monkeypatch):
    # More work than the analysis costs, less than the analysis and a build: analysing it now
    # would run it as the original code anyway (or slow it with a build in the background).
    # The calls rent instead, and the kernel is analysed once they have spent its cost.
    from specializers.loopnest import coldstart

    monkeypatch.setattr(coldstart, "_ANALYSED", [True])
    cold = ColdStart(analysis_s=10e-3)
    data = np.zeros(int((cold.analysis_s + coldstart.BUILD_S / 2) / WORK_S_PER_ELEMENT))
    assert cold.stays_cold(None, (data,), {})
    cold.spent = 9e-3
    assert cold.stays_cold(None, (data,), {})
    cold.spent = 10e-3
    assert not cold.stays_cold(None, (np.zeros(1),), {})
