"""Floating-point reductions, honestly (issue 12 item 5): a parallel reduction gives the same
bits for any thread count and any run (OpenMP: chunks fixed by the trip count, each reduced in
order on fixed lanes, combined in chunk order; devices: lanes fixed by the trip count, summed
in work-group trees), and ``explain()`` says it reassociates; ``exact_reductions=True`` (or
``ASP_EXACT_REDUCTIONS=1``) keeps Python's order on every variant. Values over 16 orders of
magnitude, and a Gram-Schmidt nest on a rank-deficient matrix (cancellation), make every
change of order visible. Strict kernels, so that a silent fallback cannot pass."""

import copy
import functools
import math
import operator
import warnings

import numpy as np
import pytest

from asp_core.config import Config
from specializers.loopnest import LoopKernel

from .helpers import identical
from .test_device import ON_GPU, needs_opencl


EXACT_BACKENDS = ["c", "openmp", pytest.param("opencl", marks=needs_opencl), "cuda-emulated", ON_GPU]
THREADS = (1, 2, 3, 4)


class Sum(LoopKernel):
    def kernel(self, A, n):
        s = 0.0
        for i in range(n):
            s += A[i]
        return s


class Grid(LoopKernel):
    """Two parallel loops around a sum and a product (one band of chunks), and a float32 sum
    under an if."""

    def kernel(self, A, B, n, m):
        s = 0.0
        p = 1.0
        f = np.float32(0.0)
        for i in range(n):
            for j in range(m):
                s += A[i, j]
                p = p * (1.0 + A[i, j] * 1e-9)
                if A[i, j] > 0.0:
                    f += B[i, j]
        return s, p, f


class Rows(LoopKernel):
    """A reduction inside each iteration of a parallel loop (a dot product per element)."""

    def kernel(self, A, B, C, n, m):
        for i in range(n):
            t = 0.0
            for k in range(m):
                t += A[i, k] * B[i, k]
            C[i] = t


class GramSchmidt(LoopKernel):
    """Modified Gram-Schmidt: a sequential loop around parallel reductions (a norm, dot
    products) and updates; on a rank-deficient matrix the norms of the dependent columns
    are what cancellation leaves, and any change of order changes them."""

    def kernel(self, A, Q, R, m, n):
        for k in range(n):
            nrm = 0.0
            for i in range(m):
                nrm += A[i, k] * A[i, k]
            R[k, k] = math.sqrt(nrm)  # (correctly rounded on every device, as pow is not)
            for i in range(m):
                Q[i, k] = A[i, k] / R[k, k]
            for j in range(k + 1, n):
                t = 0.0
                for i in range(m):
                    t += Q[i, k] * A[i, j]
                R[k, j] = t
                for i in range(m):
                    A[i, j] = A[i, j] - Q[i, k] * t


class Extremes(LoopKernel):
    """Float max and min in each form a reduction may take."""

    def kernel(self, A, n):
        a = -np.inf
        b = np.inf
        c = -np.inf
        d = np.inf
        e = -np.inf
        for i in range(n):
            a = max(a, A[i])
            b = min(b, A[i])
            c = np.maximum(c, A[i])
            d = np.fmin(d, A[i])
            e = np.maximum(A[i], e)
        return a, b, c, d, e


def wild(rng, *shape) -> np.ndarray:
    """Signed values over 16 orders of magnitude: every change of order shows."""
    return rng.standard_normal(shape) * 10.0 ** rng.integers(-8, 8, shape)


def rank_deficient(rng, m: int, n: int, rank: int) -> np.ndarray:
    """An m x n matrix of rank ``rank`` (small integers): its dependent columns are exact
    combinations of the others, which Gram-Schmidt cancels down to rounding noise."""
    base = rng.integers(-3, 4, size=(m, rank)).astype(float)
    mix = rng.integers(-2, 3, size=(rank, n - rank)).astype(float)
    return np.concatenate([base, base @ mix], axis=1)


def _sum_args(rng):
    n = 100_003
    return (wild(rng, n), n)


def _grid_args(rng):
    n, m = 37, 2_003
    return (wild(rng, n, m), wild(rng, n, m).astype(np.float32), n, m)


def _rows_args(rng):
    n, m = 64, 1_001
    return (wild(rng, n, m), wild(rng, n, m), np.zeros(n), n, m)


def _gram_schmidt_args(rng, m=600, n=30):
    return (rank_deficient(rng, m, n, n // 2), np.zeros((m, n)), np.zeros((n, n)), m, n)


CASES = {"sum": (Sum, _sum_args), "grid": (Grid, _grid_args), "rows": (Rows, _rows_args),
         "gram-schmidt": (GramSchmidt, _gram_schmidt_args)}


@pytest.fixture(autouse=True)
def _share_every_parallel_loop(monkeypatch):
    """Small arrays, yet every parallel loop shared among the threads (Gram-Schmidt's inside
    its sequential loop too), as on large ones."""
    from specializers.loopnest.codegen import openmp

    monkeypatch.setattr(openmp, "MIN_SHARED_WORK", 0)


def run(kernel, args):
    """(return value, arguments after the call) of a specialized call on copies of ``args``."""
    args = copy.deepcopy(args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = kernel.kernel(*args)
    return got, args


def run_original(cls, args):
    args = copy.deepcopy(args)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        got = cls().original_kernel(*args)
    return got, args


def python_order_sum(values, start=0.0) -> float:
    return functools.reduce(operator.add, values, start)


def test_the_data_makes_the_order_visible():
    """The sums of these tests round differently in another order, and the dependent columns
    of the rank-deficient Gram-Schmidt are rounding noise that any other order changes (else
    the tests would prove nothing)."""
    a, _ = _sum_args(np.random.default_rng(0))
    values = [float(x) for x in a]
    assert python_order_sum(values) != python_order_sum(values[::-1])
    args = _gram_schmidt_args(np.random.default_rng(0))
    want = run_original(GramSchmidt, args)
    r = want[1][2]
    assert np.all(np.abs(np.diag(r)[15:]) < 1e-10 * np.abs(np.diag(r)[:15]).min())
    got = run(GramSchmidt(backend="openmp", strict=True, num_threads=2), args)
    assert not np.array_equal(np.diag(got[1][2])[15:], np.diag(r)[15:])


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("seed", range(2))
def test_openmp_gives_the_same_bits_for_any_thread_count_and_run(case, seed):
    cls, make = CASES[case]
    args = make(np.random.default_rng(seed))
    results = []
    for threads in THREADS:
        kernel = cls(backend="openmp", strict=True, num_threads=threads)
        for _ in range(2):
            results.append(run(kernel, args))
            assert kernel.last_call.nests[0].backend == "openmp"
            assert kernel.last_call.nests[0].parallel_loops  # really in parallel
    for other in results[1:]:
        assert identical(other, results[0])


def openmp_model(values, start: float) -> float:
    """The OpenMP variant's sum of ``values`` (one parallel loop of ``len(values)``
    iterations), as ``codegen.openmp`` documents it: min(trips, REDUCTION_CHUNKS) contiguous
    chunks, the first ones one iteration longer; in each, REDUCTION_LANES lanes, lane k
    summing every REDUCTION_LANES-th iteration from the k-th, in order, from -0.0; a chunk's
    result its start (``start`` for the first chunk, -0.0 for the others) plus its lanes in
    lane order; the chunks' results summed in order."""
    from specializers.loopnest.codegen.openmp import REDUCTION_CHUNKS, REDUCTION_LANES

    total = len(values)
    chunks = min(total, REDUCTION_CHUNKS)
    q, r = divmod(total, chunks)
    parts, first = [], 0
    for c in range(chunks):
        last = first + q + (c < r)
        piece = values[first:last]
        lanes = [python_order_sum(piece[k::REDUCTION_LANES], -0.0)
                 for k in range(REDUCTION_LANES)]
        parts.append(python_order_sum(lanes, start if c == 0 else -0.0))
        first = last
    return python_order_sum(parts[1:], parts[0])


def device_model(values, start: float) -> float:
    """A device variant's sum (``codegen.device``): ``reduction_groups(trips)`` work-groups of
    GROUP_SIZE lanes, lane k summing the iterations k, k + lanes, ... in order from -0.0; each
    work-group's lanes summed in a tree in lane order (lane l, a multiple of 2d, adds lane
    l + d's result, for d = 1, 2, 4, ...); then the scalar's value before the loop plus each
    work-group's result, in order."""
    from specializers.loopnest.codegen.device import GROUP_SIZE
    from specializers.loopnest.device_variants import reduction_groups

    groups = reduction_groups(len(values))
    lanes = groups * GROUP_SIZE
    parts = [python_order_sum(values[k::lanes], -0.0) for k in range(lanes)]
    results = []
    for g in range(groups):
        tree = parts[g * GROUP_SIZE:(g + 1) * GROUP_SIZE]
        d = 1
        while d < GROUP_SIZE:
            for lane in range(0, GROUP_SIZE, 2 * d):
                tree[lane] = tree[lane] + tree[lane + d]
            d *= 2
        results.append(tree[0])
    return python_order_sum(results, start)


@pytest.mark.parametrize("backend", ["openmp", pytest.param("opencl", marks=needs_opencl),
                                     "cuda-emulated", ON_GPU])
@pytest.mark.parametrize("n", [1, 7, 255, 4_099, 100_003])
def test_a_parallel_sum_is_the_documented_fixed_order_sum(backend, n):
    """What the result depends on is the trip count alone: the sum equals a model of the
    documented order, which knows nothing of threads, grids or vector widths."""
    a = wild(np.random.default_rng(n), n)
    values = [float(x) for x in a]
    model = openmp_model if backend == "openmp" else device_model
    kernel = Sum(backend=backend, strict=True, num_threads=3)
    got = kernel.kernel(a, n)
    assert kernel.last_call.nests[0].parallel_loops == ("i",)
    assert float(got).hex() == model(values, 0.0).hex()
    if n <= 255 and backend == "openmp":  # one iteration per chunk: Python's order exactly
        assert float(got).hex() == python_order_sum(values).hex()   # (a device's lanes are
        # summed in a tree, in lane order: Python's order only for one iteration)


@pytest.mark.parametrize("backend", [pytest.param("opencl", marks=needs_opencl),
                                     "cuda-emulated", ON_GPU])
def test_device_reductions_give_the_same_bits_on_every_run(backend):
    args = _grid_args(np.random.default_rng(5))
    kernel = Grid(backend=backend, strict=True)
    first = run(kernel, args)
    for _ in range(3):
        assert identical(run(kernel, args), first)
    assert identical(run(Grid(backend=backend, strict=True), args), first)


def test_openmp_max_and_min_select_what_python_selects():
    """A max or min is a selection, not arithmetic: chunks reduced and combined in order,
    with the statement's own form, select Python's value among equal ones (0.0 and -0.0)
    and keep NaN as Python's form does (``max(m, x)`` skips it, ``np.maximum`` keeps the first)."""
    rng = np.random.default_rng(3)
    a = wild(rng, 20_011)
    a[::7], a[3::11] = 0.0, -0.0
    a[rng.integers(0, len(a), 40)] = np.nan
    for threads in THREADS:
        got = run(Extremes(backend="openmp", strict=True, num_threads=threads), (a, len(a)))
        assert identical(got, run_original(Extremes, (a, len(a))))


@pytest.mark.parametrize("backend", EXACT_BACKENDS)
@pytest.mark.parametrize("case", CASES)
def test_exact_reductions_keep_pythons_order_on_every_backend(backend, case):
    cls, make = CASES[case]
    args = make(np.random.default_rng(11))
    want = run_original(cls, args)
    kernel = cls(backend=backend, strict=True, num_threads=3, exact_reductions=True)
    assert identical(run(kernel, args), want)
    assert kernel.last_call.nests[0].backend == backend
    reduced = {s.text: s for s in kernel.last_call.nests[0].statements}
    assert not any(s.reductions for s in reduced.values())  # every reduction in order


def test_the_issues_gram_schmidt_gives_pythons_numbers():
    """The reported case: Gram-Schmidt on a 30 x 30 matrix of rank 15, whose dependent
    columns are what cancellation leaves (noise that another order changes, down to NaN)."""
    args = _gram_schmidt_args(np.random.default_rng(0), m=30, n=30)
    want = run_original(GramSchmidt, args)
    for threads in THREADS:
        kernel = GramSchmidt(backend="openmp", strict=True, num_threads=threads,
                             exact_reductions=True)
        assert identical(run(kernel, args), want)


def test_both_settings_live_side_by_side_in_one_process():
    """The plans of both settings are cached apart (the setting is part of the binding
    key): a kernel with the switch and one without, alternately, each keep their own."""
    args = _sum_args(np.random.default_rng(1))
    want = run_original(Sum, args)
    exact = Sum(backend="openmp", strict=True, num_threads=2, exact_reductions=True)
    fast = Sum(backend="openmp", strict=True, num_threads=2)
    for _ in range(2):
        assert identical(run(exact, args), want)
        assert exact.last_call.nests[0].parallel_loops == ()
        assert not identical(run(fast, args), want)
        assert fast.last_call.nests[0].parallel_loops == ("i",)


def test_explain_marks_reassociated_reductions():
    a, n = _sum_args(np.random.default_rng(2))
    text = str(Sum(backend="openmp", strict=True).explain(a, n))
    assert "for i  [parallel, reduction(+: s)]" in text
    assert "(reduction(+: s) reassociated: chunks of the iteration space" in text
    assert "the same result for any thread count and run (an integer one: exact in any " \
        "order); exact_reductions=True keeps Python's order)" in text
    text = str(Sum(backend="cuda-emulated", strict=True).explain(a, n))
    assert "(reduction(+: s) reassociated: lanes" in text
    text = str(Sum(backend="c", strict=True).explain(a, n))  # one thread: Python's order
    assert "(reduction(+: s) in Python's order" in text and "reassociated" not in text
    text = str(Sum(backend="openmp", strict=True, exact_reductions=True).explain(a, n))
    assert "reductions in Python's order (exact_reductions)" in text
    assert "for i  [sequential]" in text and "reassociated" not in text


def test_the_switch_can_be_set_in_the_environment(monkeypatch):
    assert Config.from_env({"ASP_EXACT_REDUCTIONS": "1"}).exact_reductions
    assert not Config.from_env({}).exact_reductions
    monkeypatch.setenv("ASP_EXACT_REDUCTIONS", "1")
    args = _grid_args(np.random.default_rng(4))
    kernel = Grid(backend="openmp", strict=True, num_threads=2)
    assert identical(run(kernel, args), run_original(Grid, args))
    assert kernel.last_call.nests[0].parallel_loops == ()
    off = Grid(backend="openmp", strict=True, num_threads=2, exact_reductions=False)
    run(off, args)  # the argument wins over the environment
    assert off.last_call.nests[0].parallel_loops == ("i", "j")
