"""``LoopKernel.on_dask``: kernels over Dask arrays, partitioned by what the analysis proves
(``specializers.loopnest.distributed``), run on a real ``LocalCluster`` of two worker
processes and compared with the original kernel on NumPy copies (the oracle). Kernels run with
``strict=True`` so that a block falling back to Python fails the test; chunk sizes do not
divide the domains. Also: the refusals, the one-machine fallback, laziness, ``explain``, the
compiled code built once (not per block), and the pure parts (block arithmetic).
"""

from __future__ import annotations

import copy
import inspect
import os
import random
from pathlib import Path

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="dask[array] is not installed (the [dask] extra)")
distributed = pytest.importorskip("distributed",
                                  reason="distributed is not installed (the [dask] extra)")

from examples.conv2d import Conv2D, make_inputs as conv2d_inputs  # noqa: E402
from examples.conway import Conway, make_inputs as conway_inputs  # noqa: E402
from examples.jacobi import Jacobi, make_inputs as jacobi_inputs  # noqa: E402
from examples.saxpy import Saxpy  # noqa: E402
from specializers.loopnest import LoopKernel  # noqa: E402
from specializers.loopnest.distributed import (DaskArgumentError, PartitionRefused,  # noqa: E402
                                               allow_one_machine, explain_dask,
                                               refuse_dask_arguments)
from specializers.loopnest.distributed.blocks import (block_table, boundaries,  # noqa: E402
                                                      chunks_of, sub_range)
from specializers.loopnest.distributed.worker import stats  # noqa: E402


# -- kernels (module level: the workers import them by reference) ------------------------------

class Heat(LoopKernel):
    """A time loop around two parallel nests: unrolled into steps."""

    def kernel(self, A, B, steps):
        n, m = A.shape
        for t in range(steps):
            for i in range(1, n - 1):
                for j in range(1, m - 1):
                    B[i, j] = 0.25 * (A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1])
            for i in range(1, n - 1):
                for j in range(1, m - 1):
                    A[i, j] = B[i, j]


class SumSquares(LoopKernel):
    def kernel(self, A):
        s = 0.0
        for i in range(A.shape[0]):
            for j in range(A.shape[1]):
                s += A[i, j] * A[i, j]
        return s


class Normalize(LoopKernel):
    """A reduction's lazy value flows into the next nest; both nests partition."""

    def kernel(self, x, y):
        total = 0.0
        for i in range(x.shape[0]):
            total += x[i]
        for i in range(x.shape[0]):
            y[i] = x[i] / total
        return total


class ColumnScan(LoopKernel):
    """``j`` is parallel, ``i`` carries: blocks of columns (dimension 1), each scanning down."""

    def kernel(self, A, B):
        for j in range(A.shape[1]):
            for i in range(1, A.shape[0]):
                B[i, j] = B[i - 1, j] + A[i, j]


class EveryOther(LoopKernel):
    """A negative step: the blocks' values of ``i`` keep the loop's order."""

    def kernel(self, x, y):
        for i in range(x.shape[0] - 1, -1, -3):
            y[i] = 2 * x[i] + 1


class Peak(LoopKernel):
    """Integer arrays and a max-reduction over the blocks."""

    def kernel(self, A, out):
        m = 0
        for i in range(A.shape[0]):
            for j in range(A.shape[1]):
                out[i, j] = A[i, j] * 3
                m = max(m, A[i, j])
        return m


class GaussSeidel(LoopKernel):
    def kernel(self, A):
        for i in range(1, A.shape[0] - 1):
            for j in range(1, A.shape[1] - 1):
                A[i, j] = 0.25 * (A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1])


class ShiftedWrite(LoopKernel):
    def kernel(self, x, y):
        for i in range(x.shape[0] - 1):
            y[i + 1] = x[i]


class IndirectWrite(LoopKernel):
    def kernel(self, idx, x, y):
        for i in range(idx.shape[0]):
            y[idx[i]] = x[i]


class ElementOutside(LoopKernel):
    def kernel(self, x, y):
        first = x[0]
        for i in range(x.shape[0]):
            y[i] = x[i] + first


class LazyBound(LoopKernel):
    def kernel(self, x, y):
        count = 0
        for i in range(x.shape[0]):
            count += 1
        for i in range(count):
            y[i] = x[i]


class LastValue(LoopKernel):
    def kernel(self, x, y):
        v = 0.0
        for i in range(x.shape[0]):
            v = x[i] * 2
            y[i] = v
        return v


class Outside(LoopKernel):
    def kernel(self, x):
        for i in range(x.shape[0]):
            x[i] = sorted([x[i], 0.0])[0]    # a list: outside the supported subset


class Fresh(LoopKernel):
    """Compiled by one test only (``test_compiled_once_not_per_block``)."""

    def kernel(self, x, y):
        for i in range(1, x.shape[0] - 1):
            y[i] = 0.5 * x[i - 1] + 0.25 * x[i + 1] + 0.125


STRICT = dict(backend="c", strict=True)


# -- the cluster and the comparison ------------------------------------------------------------

@pytest.fixture(scope="module")
def client():
    """A cluster of two worker processes. Its nannies set ``OMP_NUM_THREADS=1`` (and more:
    Dask's ``distributed.nanny.pre-spawn-environ``) in this process's own environment before
    they spawn, and never restore it: the environment is restored here, or every later test of
    this process would run OpenMP variants on one thread."""
    environ = dict(os.environ)
    cluster = distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1,
                                       dashboard_address=None)
    try:
        with distributed.Client(cluster) as c:
            yield c
        cluster.close()
    finally:
        os.environ.clear()
        os.environ.update(environ)


def _parameters(kernel: LoopKernel) -> list[str]:
    return list(inspect.signature(type(kernel).kernel).parameters)[1:]


def compare(kernel: LoopKernel, args: list, chunks: list, rtol: float = 1e-12) -> dict:
    """Run ``kernel.on_dask`` with the arrays of ``args`` chunked as ``chunks`` (None: passed
    as NumPy), compute on the cluster, and compare with the original kernel on copies."""
    given = [da.from_array(a, chunks=c) if c is not None else a for a, c in zip(args, chunks)]
    out = kernel.on_dask(*given)
    oracle = copy.deepcopy(args)
    expected_return = kernel.original_kernel(*oracle)
    names = _parameters(kernel)
    written = {name for name, before, after in zip(names, args, oracle)
               if isinstance(before, np.ndarray) and not np.array_equal(before, after)}
    assert written <= set(out), (written, set(out))
    keys = sorted(out)
    values = distributed.get_client().compute([out[k] for k in keys], sync=True)
    for key, value in zip(keys, values):
        expected = expected_return if key == "return" else oracle[names.index(key)]
        value = np.asarray(value)
        assert value.shape == np.shape(expected), key
        if value.dtype.kind == "f":
            np.testing.assert_allclose(value, expected, rtol=rtol, atol=rtol, err_msg=key)
        else:
            np.testing.assert_array_equal(value, expected, err_msg=key)
    if expected_return is not None:
        assert "return" in out
    return out


# -- partitioned kernels against the oracle ----------------------------------------------------

def test_jacobi_stencil_with_a_reduction(client):
    A, B = jacobi_inputs(61)
    out = compare(Jacobi(**STRICT), [A, B], [(13, 61), (13, 61)])
    text = str(out.explain())
    assert "loop i (line" in text and "halo 1 row(s) below, 1 above" in text
    assert "err: max-reduction" in text


def test_conway_board_given_as_numpy_and_dask(client):
    board, new = conway_inputs(50)
    compare(Conway(**STRICT), [board, new], [(7, 50), None])


def test_conv2d_one_sided_halo_and_a_whole_filter(client):
    img, K, out = conv2d_inputs(45, 5)
    result = compare(Conv2D(**STRICT), [img, K, out], [(11, 49), None, (10, 45)])
    text = str(result.explain())
    assert "img: dimension 0, halo 0 row(s) below, 4 above" in text
    assert "K: whole to every block" in text


def test_time_loop_becomes_steps(client):
    A = np.random.default_rng(1).random((33, 17))
    out = compare(Heat(**STRICT), [A, A.copy(), 4], [(8, 17), (8, 17), None])
    text = str(out.explain())
    assert "loop t (line" in text and "unrolled" in text and "8 step(s)" in text


def test_elementwise_map_and_numpy_arguments(client):
    rng = np.random.default_rng(2)
    x, y = rng.random(1001, dtype=np.float32), rng.random(1001, dtype=np.float32)
    out = compare(Saxpy(**STRICT), [np.float32(2.5), x, y], [None, 97, None])
    assert set(out) == {"y"}


def test_sum_reduction_over_blocks(client):
    A = np.random.default_rng(3).random((47, 13))
    compare(SumSquares(**STRICT), [A], [(6, 5)], rtol=1e-12)


def test_lazy_scalar_flows_into_the_next_nest(client):
    x = np.random.default_rng(4).random(203) + 0.5
    compare(Normalize(**STRICT), [x, np.zeros(203)], [23, 50])


def test_partition_along_columns(client):
    A = np.random.default_rng(5).random((29, 31))
    out = compare(ColumnScan(**STRICT), [A, np.zeros((29, 31))], [(29, 7), (29, 9)])
    assert "B: dimension 1" in str(out.explain())


def test_negative_step_and_integer_max(client):
    x = np.arange(100, dtype=np.int64)
    compare(EveryOther(**STRICT), [x, np.zeros(100, dtype=np.int64)], [9, 9])
    A = np.random.default_rng(6).integers(-50, 50, (23, 9))
    compare(Peak(**STRICT), [A, np.zeros_like(A)], [(5, 9), (7, 9)])


def test_cost_model_chooses_per_block(client):
    A, B = jacobi_inputs(40)
    compare(Jacobi(strict=True), [A, B], [(10, 40), (10, 40)])


def test_compiled_once_not_per_block(client):
    """A kernel no other test compiles, over 9 blocks on two workers: its C library is built
    once (one new entry in the disk cache the workers share; the other worker loads it), and
    each worker process keeps one runner for all its blocks."""
    root = Path(os.environ["ASP_CACHE_DIR"])
    libraries = _libraries_of(root, "Fresh.kernel")
    before = client.run(stats)
    x = np.random.default_rng(7).random(900)
    compare(Fresh(**STRICT), [x, np.zeros(900)], [100, 100])
    after = client.run(stats)
    assert sum(after[w]["blocks"] - before[w]["blocks"] for w in after) == 9
    assert all(after[w]["runners"] - before[w]["runners"] <= 1 for w in after)
    # 0: built in an earlier run. Only Fresh's own: the cache folder is shared by the other
    # processes of a parallel test run, which build their own kernels meanwhile.
    assert len(_libraries_of(root, "Fresh.kernel") - libraries) <= 1


def _libraries_of(root: Path, kernel: str) -> set[Path]:
    """The compiled libraries in the cache at ``root`` generated for ``kernel`` (named on the
    first line of the generated source)."""
    found = set()
    for library in root.glob("*/*/nest.so"):
        source = library.with_name("nest.c")
        with source.open() as f:
            if f" of {kernel}:" in f.readline():
                found.add(library)
    return found


# -- laziness, refusals, the fallback ----------------------------------------------------------

def test_nothing_is_computed_before_compute():
    import dask

    def boom():
        raise AssertionError("computed too early")

    x = da.from_delayed(dask.delayed(boom)(), shape=(50,), dtype=float).rechunk(10)
    out = Saxpy(**STRICT).on_dask(2.0, x, np.zeros(50))
    assert isinstance(out["y"], da.Array) and out["y"].shape == (50,)
    with pytest.raises(AssertionError, match="computed too early"):
        out["y"].compute(scheduler="sync")


@pytest.mark.parametrize("kernel, args, reason", [
    (GaussSeidel, [np.ones((9, 9))], r"loop i carries a dependence: flow on 'A'"),
    (ShiftedWrite, [np.ones(9), np.ones(9)], r"'y\[i \+ 1\]' does not write the row"),
    (IndirectWrite, [np.arange(9), np.ones(9), np.ones(9)], r"carries a dependence: output"),
    (ElementOutside, [np.ones(9), np.ones(9)], r"outside its loop nests reads an element"),
    (LazyBound, [np.ones(9), np.ones(9)], r"depends on 'count', a lazy result"),
    (LastValue, [np.ones(9), np.ones(9)], r"scalar 'v' is read after the loop"),
    (Outside, [np.ones(9)], r"outside the supported subset"),
])
def test_refusals_name_the_reason_and_the_line(kernel, args, reason):
    source, first = inspect.getsourcelines(kernel.kernel)
    with pytest.raises(PartitionRefused, match=reason) as caught:
        kernel(**STRICT).on_dask(*[da.from_array(a, chunks=4) for a in args])
    assert caught.value.file.endswith("test_dask.py")
    assert first <= caught.value.line < first + len(source)
    report = str(explain_dask(kernel(**STRICT), [da.from_array(a, chunks=4) for a in args], {}))
    assert "refused" in report


def test_an_array_passed_twice_and_written_is_refused():
    x = da.ones(8, chunks=3)
    with pytest.raises(PartitionRefused, match="the same array"):
        Saxpy(**STRICT).on_dask(2.0, x, x)


def test_a_kernel_defined_in_a_function_is_refused():
    class Local(LoopKernel):
        def kernel(self, x):
            for i in range(x.shape[0]):
                x[i] = 0

    with pytest.raises(PartitionRefused, match="defined inside a function"):
        Local().on_dask(da.zeros(4, chunks=2))


def test_exact_reductions_refuses_to_reassociate():
    A = da.from_array(np.ones((8, 8)), chunks=3)
    with pytest.raises(PartitionRefused, match="exact_reductions keeps Python's order"):
        SumSquares(exact_reductions=True, **STRICT).on_dask(A)


def test_one_machine_fallback_when_allowed(client):
    A = np.random.default_rng(8).random((12, 12))
    given = da.from_array(A, chunks=5)
    with allow_one_machine():
        out = GaussSeidel(**STRICT).on_dask(given)
    assert "refused" in str(out.explain()) and "one task on one worker" in str(out.explain())
    expected = A.copy()
    GaussSeidel().original_kernel(expected)
    np.testing.assert_array_equal(out["A"].compute(), expected)
    assert out["A"].chunks == given.chunks


def test_kernel_called_with_dask_arrays_points_to_on_dask():
    x = da.ones(5, chunks=2)
    with pytest.raises(DaskArgumentError, match="on_dask"):
        Saxpy().kernel(2.0, x, np.ones(5))          # a cold call
    warm = Saxpy(backend="c", strict=True)
    warm.kernel(2.0, np.ones(5), np.ones(5))
    with pytest.raises(DaskArgumentError, match="argument 'x'.*on_dask"):
        warm.kernel(2.0, x, np.ones(5))             # a new signature of an analysed kernel


def test_explain_with_dask_arrays_shows_the_partition():
    A, B = jacobi_inputs(20)
    report = str(Jacobi(**STRICT).explain(da.from_array(A, chunks=(7, 20)), B))
    assert "halo 1 row(s) below, 1 above" in report


def test_kernel_refuses_dask_arguments():
    x = da.ones(5, chunks=2)
    with pytest.raises(DaskArgumentError, match=r"argument 2.*k\.on_dask"):
        refuse_dask_arguments((2.0, x, np.ones(5)), {})
    with pytest.raises(DaskArgumentError, match="argument 'y'"):
        refuse_dask_arguments((), {"y": x})
    refuse_dask_arguments((2.0, np.ones(5), [1]), {"n": 3})


# -- random stencil-like kernels: refused, or equal to the oracle ------------------------------

def stencil_nest(seed: int) -> tuple[str, list[str]]:
    """A random kernel shaped like the ones on_dask partitions (and like those it must not):
    stencils over 2-D arrays, in-place updates, shifted writes, time loops, reductions,
    private temporaries, loops in either order."""
    rng = random.Random(seed)
    arrays = ["A", "B", "C"][:rng.randint(2, 3)]
    lines = []
    scalars = []

    def read(vars_):
        name = rng.choice(arrays)
        i, j = vars_
        di = rng.choice([0, 0, 0, -1, 1, -2, 2])
        dj = rng.choice([0, 0, -1, 1])
        return f"{name}[{i} + {di}, {j} + {dj}]"

    def statement(indent, vars_):
        i, j = vars_
        kind = rng.random()
        if kind < 0.12:
            if "s" not in scalars:
                scalars.append("s")
            return [f"{indent}s += {read(vars_)}"]
        if kind < 0.2:
            if "m" not in scalars:
                scalars.append("m")
            return [f"{indent}m = max(m, {read(vars_)})"]
        if kind < 0.25:   # a recurrence: carried from one iteration to the next
            if "c" not in scalars:
                scalars.append("c")
            return [f"{indent}c = 0.5 * c + {read(vars_)}"]
        if kind < 0.3:    # read before it is written: the previous iteration's value
            if "u" not in scalars:
                scalars.append("u")
            return [f"{indent}{rng.choice(arrays)}[{i}, {j}] = u + 1.0",
                    f"{indent}u = {read(vars_)}"]
        target = rng.choice(arrays)
        shift = rng.choice([0] * 8 + [1, -1])
        value = " + ".join(read(vars_) for _ in range(rng.randint(1, 3)))
        if rng.random() < 0.2:
            return [f"{indent}tmp = {value}",
                    f"{indent}{target}[{i} + {shift}, {j}] = 0.5 * tmp + 1.0"]
        return [f"{indent}{target}[{i} + {shift}, {j}] = {value} + 1.0"]

    def nest(indent):
        outer_i = rng.random() < 0.75
        lo = rng.randint(2, 3)
        rows = f"range({lo}, A.shape[0] - {lo}, {rng.choice([1, 1, 2])})"
        cols = "range(2, A.shape[1] - 2)"
        if outer_i:
            lines.append(f"{indent}for i in {rows}:")
            lines.append(f"{indent}    for j in {cols}:")
        else:
            lines.append(f"{indent}for j in {cols}:")
            lines.append(f"{indent}    for i in {rows}:")
        for _ in range(rng.randint(1, 3)):
            lines.extend(statement(indent + "        ", ("i", "j")))

    body_indent = "        "
    if rng.random() < 0.35:
        lines.append(f"{body_indent}for t in range({rng.randint(1, 3)}):")
        for _ in range(rng.randint(1, 2)):
            nest(body_indent + "    ")
    else:
        nest(body_indent)
    init = [f"{body_indent}{s} = {'-1.0' if s == 'm' else '0.0'}" for s in scalars]
    ret = f"{body_indent}return {', '.join(scalars)}" if scalars else ""
    source = ("from specializers.loopnest import LoopKernel\n\n\n"
              "class Kernel(LoopKernel):\n"
              f"    def kernel(self, {', '.join(arrays)}):\n"
              + "\n".join(init + lines + [ret]) + "\n")
    return source, arrays


#: Kernels the differential test runs (seeds 0 to 999, run once: 578 partitioned, all equal
#: to the original, 422 refused).
RANDOM_KERNELS = 40


def test_random_stencil_kernels_are_refused_or_exact():
    """Partitioning never changes a result: each random kernel (in-place updates, shifted
    writes, time loops, reductions, temporaries, either loop order, chunks in both dimensions)
    is refused or equals the original code, run block by block in one process."""
    import dask

    from specializers.loopnest.checking import load_source

    partitioned = 0
    with dask.config.set(scheduler="sync"):
        for seed in range(RANDOM_KERNELS):
            source, names = stencil_nest(seed)
            Kernel = load_source(source)
            rng = np.random.default_rng(seed)
            rows, cols = int(rng.integers(14, 30)), int(rng.integers(7, 11))
            args = [rng.random((rows, cols)) for _ in names]
            oracle = copy.deepcopy(args)
            expected = Kernel().original_kernel(*oracle)
            chunks = random.Random(seed)
            given = [da.from_array(a, chunks=(chunks.randint(2, 9), chunks.choice([cols, 4])))
                     for a in args]
            try:
                out = Kernel(backend="python", strict=True).on_dask(*given)
            except PartitionRefused:
                continue
            partitioned += 1
            for name, before, after in zip(names, args, oracle):
                got = out[name].compute() if name in out else before
                np.testing.assert_allclose(got, after, rtol=1e-12, err_msg=f"{seed}\n{source}")
            if expected is not None:
                got = out["return"]
                got = [g.compute() for g in got] if isinstance(got, tuple) else got.compute()
                np.testing.assert_allclose(np.asarray(got, dtype=float),
                                           np.asarray(expected, dtype=float), rtol=1e-12)
    assert partitioned >= RANDOM_KERNELS // 2


# -- the block arithmetic ----------------------------------------------------------------------

@pytest.mark.parametrize("start, stop, step", [(0, 20, 1), (3, 20, 4), (19, -1, -1),
                                               (20, 2, -3), (5, 5, 1), (-4, 9, 2)])
def test_sub_range_is_the_values_in_the_block(start, stop, step):
    values = list(range(start, stop, step))
    for low in (None, -5, 0, 4, 7, 25):
        for high in (None, -5, 0, 5, 8, 25):
            first, end = sub_range(start, stop, step, low, high)
            expected = [v for v in values if (low is None or v >= low)
                        and (high is None or v < high)]
            assert list(range(first, end, step)) == expected, (low, high)


def test_boundaries_merge_chunks_shorter_than_the_halo():
    assert boundaries((10, 10, 10, 7), 37, 1) == (10, 20, 30)
    assert boundaries((2, 2, 2, 2, 2), 10, 3) == (4,)
    cuts = boundaries((3, 1, 1, 5, 2), 12, 3)
    edges = (0,) + cuts + (12,)
    assert all(b - a >= 3 for a, b in zip(edges, edges[1:]))
    assert chunks_of((10, 20), 25) == (10, 10, 5)
    table = block_table((10, 20), (1, 29, 1), [("A", 30, (1, 2))])
    assert [b.origin for b in table.blocks] == [(0,), (9,), (19,)]
    assert [b.held for b in table.blocks] == [(12,), (13,), (11,)]
    assert [b.own for b in table.blocks] == [((0, 10),), ((1, 11),), ((1, 11),)]
    assert [(b.first, b.stop) for b in table.blocks] == [(1, 10), (10, 20), (20, 29)]
