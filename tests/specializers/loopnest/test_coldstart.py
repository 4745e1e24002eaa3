"""coldstart: the loops read off the bytecode, and the work a call's data suggest."""

import math

import numpy as np
import pytest

from specializers.loopnest.coldstart import (CALL_S, INSTRUCTION_S, SUBSCRIPT_S, ColdStart,
                                            loop_levels, work_hint)


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


def test_the_loops_per_depth_count_their_own_instructions():
    """One entry per depth of for loops (the deepest nesting: a comprehension's loop is
    code of its own), each loop counting its instructions but not its inner loops'."""
    assert len(loop_levels(flat.__code__)) == 1
    assert len(loop_levels(deep.__code__)) == 3
    assert len(loop_levels(two_deep_after_a_comprehension.__code__)) == 2
    outer, middle, inner = loop_levels(deep.__code__)
    assert 0 < middle < inner and outer > middle   # (two loops at depth 1)

    def heavier(A, B, C, n):
        for k in range(n):
            for i in range(n):
                for j in range(n):
                    C[i, j] += A[i, k] * B[k, j] + A[k, i] * B[j, k]

    assert loop_levels(heavier.__code__)[1] == middle
    assert loop_levels(heavier.__code__)[2] > inner


def test_work_grows_with_the_depth_over_the_dimensions():
    n = 100
    A = np.zeros((n, n))
    # one loop along a 100 x 100 array: 100 iterations; two: 10,000
    assert work_hint(None, (A, n), {}, (1.0,)) == pytest.approx(n)
    assert work_hint(None, (A, n), {}, (1.0, 2.0)) == pytest.approx(n + 2 * n * n)
    # three loops over n x n matrices: about n ** 3 iterations of the innermost
    assert work_hint(None, (A, A, A, n), {}, (0.0, 0.0, 1.0)) == pytest.approx(n ** 3)
    # no array: an integer argument is the extent of a loop
    assert work_hint(None, (n,), {}, (1.0, 1.0)) == pytest.approx(n + n * n)
    # the kernel's own attributes count as its arguments do
    from specializers.loopnest import LoopKernel

    class Owner(LoopKernel):
        def __init__(self):
            super().__init__()
            self.A = A

    assert work_hint(Owner(), (), {}, (1.0, 1.0)) == pytest.approx(n + n * n)


def test_the_attributes_of_a_bare_loop_kernel_are_its_own():
    """``work_hint`` skips an instance's attributes where it has only those LoopKernel sets."""
    from specializers.loopnest import LoopKernel, coldstart

    assert len(LoopKernel().__dict__) == coldstart.LOOP_KERNEL_ATTRIBUTES


def convolve(image, out, weights):
    for i in range(1, image.shape[0] - 1):
        for j in range(1, image.shape[1] - 1):
            for di in range(3):
                for dj in range(3):
                    out[i, j] += weights[di, dj] * image[i + di - 1, j + dj - 1]


def test_loops_deeper_than_the_largest_array_walk_the_smallest():
    """A convolution's two inner loops walk its filter: its image times the filter's nine
    taps, not the image squared."""
    image, out = np.zeros((32, 32)), np.zeros((32, 32))
    weights = np.zeros((3, 3))
    hint = work_hint(None, (image, out, weights), {}, (0.0, 0.0, 0.0, 1.0))
    assert hint == pytest.approx(32 * 32 * 9)


def test_a_dense_kernel_on_mid_sized_data_is_analysed_at_once():
    cold = ColdStart.of(deep)
    n = 256
    A = np.zeros((n, n))
    assert not cold.stays_cold(None, (A, A, A, n), {})   # 17 million iterations
    small = np.zeros((4, 4))
    assert cold.stays_cold(None, (small, small, small, 4), {})


def test_the_first_analysis_in_a_process_costs_more(monkeypatch):
    from specializers.loopnest import coldstart

    cold = ColdStart(analysis_s=1e-3, build_s=0.0)   # a loop of one instruction
    data = np.zeros(int(5e-3 / INSTRUCTION_S))   # 5 ms of work
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


def test_a_longer_loop_body_weighs_more_per_iteration():
    """The same data suggest more work for a loop body of more instructions: a stencil's
    first call on 140 x 140 is analysed at once, where a copy of the same arrays stays cold
    (its analysis costs less, too, but less than the stencil's work grows)."""
    from specializers.loopnest import coldstart

    def copy2d(A, B, n):
        for i in range(n):
            for j in range(n):
                B[i, j] = A[i, j]

    heavy, light = ColdStart.of(stencil), ColdStart.of(copy2d)
    heavy.build_s = light.build_s = 0.0   # (the analysis alone decides here)
    assert heavy.levels[1] > 4 * light.levels[1]
    n = 140
    A = np.zeros((n, n))
    coldstart.analysed()
    assert light.stays_cold(None, (A, A, n), {}) and not heavy.stays_cold(None, (A, A, n), {})


def test_the_estimate_weighs_kernels_as_the_interpreter_does():
    """On kernels of three shapes (one loop, a stencil, a matrix product) the estimates stand
    to each other as the original code's times do, within a factor of three, the data large
    enough that the call's fixed costs do not count.

    Only ratios are checked: how fast this machine's interpreter runs cancels out (a CI run
    on a slower or busier machine took 2.2 times as long for every kernel), and the runs are
    interleaved, best of five, so that a burst of load hits each kernel alike. The absolute
    accuracy on this machine is measured by `benchmarks.bench_coldstart`, not here."""
    import time

    def saxpy(a, x, y):
        for i in range(len(x)):
            y[i] = a * x[i] + y[i]

    def matmul(A, B, C, n):
        for i in range(n):
            for j in range(n):
                for k in range(n):
                    C[i, j] += A[i, k] * B[k, j]

    n = 48
    A = np.random.default_rng(0).random((n, n))
    x = np.ones(20_000)
    kernels = ((saxpy, (2.0, x, x.copy())), (stencil, (A, A.copy(), n)),
               (matmul, (A, A, np.zeros((n, n)), n)))
    best = [float("inf")] * len(kernels)
    for _ in range(5):
        for k, (func, args) in enumerate(kernels):
            best[k] = min(best[k], _timed(func, args, time))
    ratios = {func.__name__: best[k] / work_hint(None, args, {}, ColdStart.of(func).levels)
              for k, (func, args) in enumerate(kernels)}
    assert max(ratios.values()) < 3 * min(ratios.values()), ratios


def _timed(func, args, time):
    started = time.perf_counter()
    func(*args)
    return time.perf_counter() - started


def test_a_first_call_is_analysed_only_where_a_build_would_pay_too(monkeypatch):
    """The analysis buys nothing by itself: a first call is analysed where its work exceeds
    the analysis and a first variant's build; later calls, once what they spent paid for the
    analysis."""
    from specializers.loopnest import coldstart

    monkeypatch.setattr(coldstart, "_ANALYSED", [True])
    cold = ColdStart(analysis_s=1e-3, build_s=0.05)
    twenty_ms = np.zeros(int(20e-3 / INSTRUCTION_S))
    assert cold.stays_cold(None, (twenty_ms,), {})
    cold.run(lambda owner, data: None, None, (twenty_ms,), {})
    cold.spent = 20e-3   # (what that call would have taken)
    assert not cold.stays_cold(None, (twenty_ms,), {})
    sixty_ms = np.zeros(int(60e-3 / INSTRUCTION_S))
    assert not ColdStart(analysis_s=1e-3, build_s=0.05).stays_cold(None, (sixty_ms,), {})


@pytest.mark.parametrize("scale, cold", [(0.5, True), (1.0, True), (2.0, False)])
def test_an_interpreter_slower_than_the_prices_pays_for_a_build_sooner(monkeypatch, scale,
                                                                        cold):
    """The work and the analysis are priced for the interpreter the prices were fitted on;
    the build is the calibration's. Where the calibration finds the interpreter twice as slow,
    a first call of 80 ms priced (160 real) pays for a build of 100 ms; at the prices' speed
    or faster it does not."""
    import dataclasses

    from specializers.loopnest import coldstart
    from specializers.loopnest.cost import machine as machine_module

    base = machine_module.DEFAULTS
    quarter = coldstart.INTERPRETER_REF_NS * scale / 4
    params = dataclasses.replace(
        base, py_iteration_ns=quarter,
        py_op_ns=dict(base.py_op_ns, load=quarter, arith=quarter, store=quarter),
        compile_base_s=0.1, compile_first_s=0.0, compile_per_line_s=0.0)
    monkeypatch.setattr(machine_module, "machine", lambda: params)
    monkeypatch.setattr(coldstart, "_ANALYSED", [True])
    assert coldstart.interpreter_scale(params) == pytest.approx(scale)
    eighty_ms = np.zeros(int(80e-3 / INSTRUCTION_S))
    assert ColdStart(analysis_s=1e-3).stays_cold(None, (eighty_ms,), {}) is cold


def test_the_interpreter_scale_is_bounded_and_one_without_a_calibration():
    import dataclasses

    from specializers.loopnest import coldstart
    from specializers.loopnest.cost.machine import DEFAULTS

    assert coldstart.interpreter_scale(DEFAULTS) == 1.0
    slow = dataclasses.replace(DEFAULTS, py_iteration_ns=1e6)
    fast = dataclasses.replace(DEFAULTS, py_iteration_ns=0.0,
                               py_op_ns={k: 0.0 for k in DEFAULTS.py_op_ns})
    assert coldstart.interpreter_scale(slow) == coldstart.INTERPRETER_SCALE_LIMIT
    assert coldstart.interpreter_scale(fast) == 1.0       # (nothing measured: no figure)


def test_a_method_compiled_before_needs_only_a_load(tmp_path, monkeypatch):
    from specializers.loopnest.cost import index
    from specializers.loopnest.cost.estimates import LOAD_SECONDS
    from specializers.loopnest.cost.machine import machine

    monkeypatch.setenv("ASP_CACHE_DIR", str(tmp_path))
    m = machine()
    assert ColdStart.of(deep).first_build_s() == \
        m.compile_base_s + m.compile_first_s + m.compile_per_line_s * 50
    index.record(index.kernel_key(deep))
    assert ColdStart.of(deep).first_build_s() == LOAD_SECONDS
    assert ColdStart.of(flat).first_build_s() > LOAD_SECONDS   # (another method)


def test_a_kernel_that_compiles_notes_it_for_later_processes(tmp_path, monkeypatch):
    from specializers.loopnest import LoopKernel
    from specializers.loopnest.cost import index

    monkeypatch.setenv("ASP_CACHE_DIR", str(tmp_path))

    class Doubled(LoopKernel):
        def kernel(self, A):
            for i in range(A.shape[0]):
                A[i] = 2.0 * A[i]

    method = Doubled.__dict__["kernel"].__wrapped__
    assert not index.compiled_before(index.kernel_key(method))
    Doubled(backend="c", strict=True).kernel(np.ones(8))
    assert index.compiled_before(index.kernel_key(method))


def test_loops_walk_the_largest_arrays_own_extents():
    """Outer loops run along the largest array's dimensions in order (a 10 x 1000 array: 10
    rows, then 10,000 elements), not its size's square root for each."""
    A = np.zeros((10, 1000))
    assert work_hint(None, (A,), {}, (1.0,)) == 10
    assert work_hint(None, (A,), {}, (0.0, 1.0)) == 10_000
    # deeper than the smallest array too: the largest's dimensions again
    assert work_hint(None, (A, np.zeros(3)), {}, (0.0, 0.0, 0.0, 1.0)) == 10_000 * 3 * 10
    assert work_hint(None, (np.float64(2.0), np.zeros(())), {}, (1.0, 1.0)) == 2.0


def test_an_if_bodys_instructions_weigh_half():
    """An ``if``'s body may be skipped: its instructions count ``GUARDED_WEIGHT`` each (the
    branch's neutral prior), so a loop whose work sits under an ``if`` suggests less work than
    the same loop without it."""
    from specializers.loopnest.coldstart import GUARDED_WEIGHT, SUBSCRIPT_S

    def plain(A, n):
        for i in range(n):
            A[i] = A[i] * A[i] + 2.0 * A[i] + 1.0

    def branchy(A, n):
        for i in range(n):
            if A[i] > 0.0:
                A[i] = A[i] * A[i] + 2.0 * A[i] + 1.0

    (whole,), (guarded,) = loop_levels(plain.__code__), loop_levels(branchy.__code__)
    assert guarded < whole
    # the body's instructions at half weight, the test (a subscript and four or so) whole
    assert whole * GUARDED_WEIGHT < guarded < whole * GUARDED_WEIGHT + SUBSCRIPT_S + \
        8 * INSTRUCTION_S


def test_subscripts_and_calls_cost_more_than_arithmetic():
    """An element read or written (NumPy boxing a scalar) and a call cost several times an
    instruction on locals: a loop of arithmetic on locals suggests less work per instruction
    than one reading arrays."""
    def arithmetic(n):
        x = 0.0
        for i in range(n):
            x = x * 0.5 + 1.0

    def reads(A, n):
        x = 0.0
        for i in range(n):
            x = A[i]
        return x

    def calls(A, n):
        for i in range(n):
            A[i] = math.exp(A[i])

    (arith,), (read,), (call,) = (loop_levels(f.__code__) for f in (arithmetic, reads, calls))
    assert SUBSCRIPT_S > 5 * INSTRUCTION_S and CALL_S > 3 * SUBSCRIPT_S
    assert read > SUBSCRIPT_S and call > CALL_S + 2 * SUBSCRIPT_S > read
    assert arith < 12 * INSTRUCTION_S
