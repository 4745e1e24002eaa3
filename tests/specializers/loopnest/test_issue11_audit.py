"""Audit probes for issue 11 (device variants): which kernels a nest becomes where loops could
be fused, what travels to and from the device, the float64 refusal, and the CUDA launch shape.

Passing tests pin what is true today; ``xfail(strict=True)`` tests are reproducers of gaps and
bugs found by the audit (each flips to a failure, XPASS, once fixed)."""

import copy
import dataclasses
import math
import warnings

import numpy as np
import pytest

from specializers.loopnest import LoopKernel
from specializers.loopnest.codegen.device import device_module


from .generators import load_kernel
from .test_device import OPENCL_MISSING, ON_GPU, needs_opencl

BACKENDS = [pytest.param("opencl", marks=needs_opencl), "cuda-emulated", ON_GPU]


def _kernels(cls, args, dialect="opencl"):
    """The device kernels of the kernel's first nest for this call, as (shape, host loop var),
    shape "grid:x,y" (axis variables), "single", "lanes" or "combine"."""
    from specializers.loopnest.typeinfer import infer_types

    kernel = cls(backend="python")
    kernel.kernel(*copy.deepcopy(args))
    runner = kernel._asp_current.runners[0]
    types, _ = runner.signature(runner.last_inputs)
    module = device_module(dialect, runner.analysis, runner.last_plan,
                           infer_types(runner.analysis, types), types, "audit")
    out = []
    for k in module.kernels:
        if k.combine:
            shape = "combine"
        elif k.reduced:
            shape = "lanes"
        elif k.single:
            shape = "single"
        else:
            shape = "grid:" + ",".join(a.var for a in sorted(k.axes, key=lambda a: a.axis))
        out.append((shape, k.host_loop.var if k.host_loop is not None else None))
    return out


def _same_as_python(cls, backend, args):
    want = copy.deepcopy(args)
    cls().original_kernel(*want)
    got = copy.deepcopy(args)
    kernel = cls(backend=backend, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        kernel.kernel(*got)
    assert all(n.backend == backend and n.fallback is None for n in kernel.last_call.nests)
    for g, w in zip(got, want):
        if isinstance(w, np.ndarray):
            assert np.array_equal(g, w), (g, w)
    return kernel


# -- item 1: fusion -----------------------------------------------------------------------------

class OneLoopTwoStatements(LoopKernel):
    """One source loop: Allen-Kennedy distributes its statements and typed fusion joins them
    again (a loop-independent dependence only)."""

    def kernel(self, a, b, c, n):
        for i in range(n):
            b[i] = a[i] * 2.0
            c[i] = b[i] + 1.0


class OneLoopCarried(LoopKernel):
    """One source loop whose statements a dependence carried by i separates: distributed into
    two parallel loops (b's first), which must not be fused again."""

    def kernel(self, a, b, c, n):
        for i in range(1, n):
            a[i] = b[i - 1] + 1.0
            b[i] = c[i] * 2.0


class SiblingsIllegal(LoopKernel):
    """Two sibling loops under a time loop, fusion illegal (b[i] reads a[i - 1], which the
    second loop writes: fused, it would read the new value)."""

    def kernel(self, a, b, steps, n):
        for t in range(steps):
            for i in range(1, n - 1):
                b[i] = a[i - 1] + a[i + 1]
            for i in range(1, n - 1):
                a[i] = b[i]


class SiblingsLegal(LoopKernel):
    """Two sibling loops under a time loop with the same bounds, the second reading only what
    the first wrote at the same i: fusion legal and the fused loop parallel."""

    def kernel(self, a, b, c, steps, n):
        for t in range(steps):
            for i in range(n):
                b[i] = a[i] * 2.0 + t
            for i in range(n):
                c[i] = b[i] + 1.0


class RecurrenceThenParallel(LoopKernel):
    """Distributed into a sequential loop (the recurrence) and a parallel loop (b, c)."""

    def kernel(self, a, x, b, c, n):
        for i in range(1, n):
            a[i] = a[i - 1] + x[i]
            b[i] = x[i] * 2.0
            c[i] = b[i] + 1.0


N = 40


def _one_loop_args():
    return (np.arange(N * 1.0), np.zeros(N), np.zeros(N), N)


def _carried_args():
    return (np.arange(N * 1.0), np.ones(N), np.arange(N * 1.0), N)


def _siblings_illegal_args():
    return (np.arange(N * 1.0) ** 2, np.zeros(N), 5, N)


def _siblings_legal_args():
    return (np.arange(N * 1.0), np.zeros(N), np.zeros(N), 5, N)


def _recurrence_args():
    return (np.ones(N), np.arange(N * 1.0), np.zeros(N), np.zeros(N), N)


@pytest.mark.parametrize("dialect", ["opencl", "cuda"])
def test_distributed_copies_of_one_loop_are_fused_into_one_kernel(dialect):
    assert _kernels(OneLoopTwoStatements, _one_loop_args(), dialect) == [("grid:i", None)]


@pytest.mark.parametrize("dialect", ["opencl", "cuda"])
def test_a_dependence_carried_between_distributed_statements_keeps_two_kernels(dialect):
    assert _kernels(OneLoopCarried, _carried_args(), dialect) == \
        [("grid:i", None), ("grid:i", None)]


@pytest.mark.parametrize("dialect", ["opencl", "cuda"])
def test_illegal_sibling_fusion_under_a_time_loop_keeps_two_host_driven_kernels(dialect):
    assert _kernels(SiblingsIllegal, _siblings_illegal_args(), dialect) == \
        [("grid:i", "t"), ("grid:i", "t")]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", ["one loop", "carried", "siblings illegal", "siblings legal",
                                  "recurrence"])
def test_fusion_cases_match_python(case, backend):
    cls, args = {"one loop": (OneLoopTwoStatements, _one_loop_args()),
                 "carried": (OneLoopCarried, _carried_args()),
                 "siblings illegal": (SiblingsIllegal, _siblings_illegal_args()),
                 "siblings legal": (SiblingsLegal, _siblings_legal_args()),
                 "recurrence": (RecurrenceThenParallel, _recurrence_args())}[case]
    _same_as_python(cls, backend, args)


@pytest.mark.parametrize("dialect", ["opencl", "cuda"])
def test_legal_sibling_loops_under_a_time_loop_fuse_into_one_kernel(dialect):
    assert _kernels(SiblingsLegal, _siblings_legal_args(), dialect) == [("grid:i", "t")]


@pytest.mark.parametrize("dialect", ["opencl", "cuda"])
def test_a_parallel_group_after_a_sequential_one_gets_a_grid_kernel(dialect):
    assert _kernels(RecurrenceThenParallel, _recurrence_args(), dialect) == \
        [("single", None), ("grid:i", None)]


# -- item 1: sibling fusion, the class: offsets of the flow and anti dependences between them --

def _siblings_source(o1: int, o2: int, target: str, second_var: str = "i",
                     second_stop: str = "n - 1") -> str:
    """Under a time loop: ``b[i] = a[i + o1] * 0.5 + t`` then ``target[i] = b[i + o2] + 1.0``.
    Fusion is legal where every dependence between the two meets at the same ``i``: ``o2 == 0``
    (the flow through b) and ``o1 == 0`` where the second writes a (the anti dependence)."""
    j = second_var
    return (
        "from specializers.loopnest import LoopKernel\n\n"
        "class Kernel(LoopKernel):\n"
        "    def kernel(self, a, b, c, steps, n):\n"
        "        for t in range(steps):\n"
        "            for i in range(1, n - 1):\n"
        f"                b[i] = a[i + {o1}] * 0.5 + t\n"
        f"            for {j} in range(1, {second_stop}):\n"
        f"                {target}[{j}] = b[{j} + {o2}] + 1.0\n")


FUSION_CASES = [(o1, o2, target) for o1 in (-1, 0, 1) for o2 in (-1, 0, 1)
                for target in ("a", "c")]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("second_var", ["i", "j"])
@pytest.mark.parametrize("o1,o2,target", FUSION_CASES)
def test_siblings_fuse_exactly_where_every_dependence_meets_at_the_same_iteration(
        o1, o2, target, second_var, backend):
    """The class, with the second loop's variable named as the first's or not (fused, the
    kernel binds ``j`` to ``i``)."""
    Kernel, _ = load_kernel(_siblings_source(o1, o2, target, second_var))
    args = (np.arange(N * 1.0) ** 1.5, np.zeros(N), np.zeros(N), 4, N)
    legal = o2 == 0 and (target == "c" or o1 == 0)
    dialect = "cuda" if backend == "cuda-emulated" else "opencl"
    assert _kernels(Kernel, args, dialect) == \
        ([("grid:i", "t")] if legal else [("grid:i", "t"), ("grid:" + second_var, "t")])
    _same_as_python(Kernel, backend, args)


@pytest.mark.parametrize("second_stop", ["n - 2", "n"])
def test_siblings_with_other_bounds_stay_apart(second_stop):
    Kernel, _ = load_kernel(_siblings_source(0, 0, "c", "i", second_stop))
    args = (np.arange(N * 1.0), np.zeros(N), np.zeros(N), 3, N)
    assert _kernels(Kernel, args) == [("grid:i", "t"), ("grid:i", "t")]


class ReorderedSibling(LoopKernel):
    """Under a time loop, a sibling whose band device_order reorders (k moves inside each
    thread: its j is deeper in the source than the next sibling's j) beside one it does not:
    their bands pair loops of different depths, so they stay apart."""

    def kernel(self, X, Y, Z, steps, n):
        for t in range(steps):
            for i in range(n):
                for k in range(n):
                    for j in range(n):
                        X[i, j] = X[i, j] + Y[i, k] * 0.5
            for i in range(n):
                for j in range(n):
                    Z[i, j] = X[i, j] + t


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_reordered_sibling_stays_apart(backend):
    rng = np.random.default_rng(2)
    args = (rng.random((9, 9)), rng.random((9, 9)), np.zeros((9, 9)), 3, 9)
    assert _kernels(ReorderedSibling, args, "cuda") == [("grid:j,i", "t"), ("grid:j,i", "t")]
    _same_as_python(ReorderedSibling, backend, args)


class SiblingTemporary(LoopKernel):
    """A temporary of the first sibling read by the second: Python reads its last value (of
    the last i), so the siblings must not fuse."""

    def kernel(self, a, b, c, steps, n):
        x = 0.0
        for t in range(steps):
            for i in range(n):
                x = a[i] * 2.0
                b[i] = x
            for i in range(n):
                c[i] = b[i] + x


def test_a_scalar_crossing_siblings_keeps_them_apart():
    args = (np.arange(N * 1.0), np.zeros(N), np.zeros(N), 3, N)
    assert _kernels(SiblingTemporary, args) != [("grid:i", "t")]
    for backend in ("opencl", "cuda-emulated") if OPENCL_MISSING is None else ("cuda-emulated",):
        _same_as_python(SiblingTemporary, backend, args)


# -- item 1: segments (top-level nodes no grid runs) between grid kernels -----------------------

class SumThenScale(LoopKernel):
    """Distributed into a recurrence leaving a live scalar and a parallel loop: the segment
    stores the scalar."""

    def kernel(self, a, b, n):
        s = 0.0
        for i in range(n):
            s = s * 0.5 + a[i]
            b[i] = a[i] * 3.0
        return s


class TempEach(LoopKernel):
    """Distributed into a recurrence and a parallel loop, each with a temporary of its own."""

    def kernel(self, a, b, c, n):
        for i in range(1, n):
            t = a[i - 1] * 0.5
            a[i] = a[i] + t
            u = b[i] + 1.0
            c[i] = u * b[i]


class TempShared(LoopKernel):
    """As TempEach, with one temporary name for both (conservatively: no segment)."""

    def kernel(self, a, b, c, n):
        for i in range(1, n):
            t = a[i - 1] * 0.5
            a[i] = a[i] + t
            t = b[i] + 1.0
            c[i] = t * b[i]


class LiveLoopVariable(LoopKernel):
    """Distributed, with the loop's variable read after the nest."""

    def kernel(self, a, x, b, n):
        i = -1
        for i in range(1, n):
            a[i] = a[i - 1] + x[i]
            b[i] = x[i] * 2.0
        return i


class PredicatedRecurrence(LoopKernel):
    """A recurrence under a condition (if-converted: a predicate scalar), and a parallel loop."""

    def kernel(self, a, x, b, n):
        for i in range(1, n):
            if x[i] > 3.0:
                a[i] = a[i - 1] + x[i]
            b[i] = x[i] * 2.0


SEGMENT_CASES = {
    "scalar recurrence": (SumThenScale, lambda: (np.arange(N * 1.0), np.zeros(N), N)),
    "a temporary each": (TempEach, lambda: (np.arange(N * 1.0), np.ones(N), np.zeros(N), N)),
    "one temporary": (TempShared, lambda: (np.arange(N * 1.0), np.ones(N), np.zeros(N), N)),
    "live loop variable": (LiveLoopVariable, lambda: (np.ones(N), np.arange(N * 1.0),
                                                      np.zeros(N), N)),
    "empty loop": (LiveLoopVariable, lambda: (np.ones(N), np.arange(N * 1.0), np.zeros(N), 1)),
    "predicated recurrence": (PredicatedRecurrence, lambda: (np.ones(N), np.arange(N * 1.0),
                                                             np.zeros(N), N)),
}


SEGMENT_LAYOUTS = {
    "scalar recurrence": [("single", None), ("grid:i", None)],
    "a temporary each": [("single", None), ("grid:i", None)],
    "live loop variable": [("single", None), ("grid:i", None)],
    "predicated recurrence": [("single", None), ("grid:i", None)],
}


@pytest.mark.parametrize("case", SEGMENT_LAYOUTS)
def test_a_sequential_segment_runs_between_grid_kernels(case):
    cls, args = SEGMENT_CASES[case]
    assert _kernels(cls, args()) == SEGMENT_LAYOUTS[case]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", SEGMENT_CASES)
def test_segments_match_python(case, backend):
    cls, args = SEGMENT_CASES[case]
    want = args()
    want_result = cls().original_kernel(*want)
    got = args()
    kernel = cls(backend=backend, strict=True)
    result = kernel.kernel(*got)
    assert all(n.backend == backend for n in kernel.last_call.nests)
    assert result == want_result and type(result) is type(want_result)
    for g, w in zip(got, want):
        if isinstance(w, np.ndarray):
            assert np.array_equal(g, w), (g, w)


# -- item 3: each array copied once per call, back only if written --------------------------------

class Heat(LoopKernel):
    def kernel(self, u, v, w, steps, n):
        for t in range(steps):
            for i in range(1, n - 1):
                v[i] = u[i] + 0.25 * (w[i - 1] - 2.0 * u[i] + w[i + 1])
            for i in range(1, n - 1):
                u[i] = v[i]


def _count_copies(monkeypatch, backend):
    """Patch the backend's copies: (uploaded shapes, downloaded likes) lists, filled per call."""
    from specializers.loopnest import device_variants

    up, down = [], []
    if backend == "opencl":   # (every read goes through read_into, from_device_many's too)
        from asp_core.backends import opencl

        real_up, real_down = opencl.to_device, opencl.read_into
        monkeypatch.setattr(opencl, "to_device", lambda a: up.append(a.shape) or real_up(a))
        monkeypatch.setattr(opencl, "read_into",
                            lambda pairs: down.extend(o.shape for _, o in pairs) or
                            real_down(pairs))
    else:   # (the GPU's target, or its emulation's: each has its own copies; a read is one of
        # download_many, small arrays with the error word, or read_into, large ones after it)
        target = device_variants.TARGETS[backend]
        real_up, real_many, real_into = target.upload, target.download_many, target.read_into
        monkeypatch.setattr(target, "upload", lambda self, a: up.append(a.shape) or
                            real_up(self, a))
        monkeypatch.setattr(target, "download_many",
                            lambda self, pairs: down.extend(l.shape for _, l in pairs) or
                            real_many(self, pairs))
        monkeypatch.setattr(target, "read_into",
                            lambda self, pairs: down.extend(o.shape for _, o in pairs) or
                            real_into(self, pairs))
    return up, down


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_array_goes_once_per_call_and_comes_back_only_if_written(backend, monkeypatch):
    """u, v, w (three sizes, to tell them apart) go to the device once per call, not once per
    iteration of the host loop; u and v come back, w (read only) does not; besides the arrays:
    the error word and the result record, both ways."""
    n = 12
    u, v, w = np.arange(n * 1.0), np.zeros(n), np.arange(n + 1.0)
    kernel = Heat(backend=backend, strict=True)
    kernel.kernel(u.copy(), v.copy(), w.copy(), 1, n)   # built (and its copies) before counting
    up, down = _count_copies(monkeypatch, backend)
    kernel.kernel(u.copy(), v.copy(), w.copy(), 9, n)
    arrays = [(n,), (n,), (n + 1,)]
    assert sorted(s for s in up if s != (1,)) == sorted(arrays)
    assert up.count((1,)) == 2
    assert sorted(s for s in down if s != (1,)) == [(n,), (n,)]
    assert down.count((1,)) == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_large_arrays_too_go_once_and_come_back_only_if_written(backend, monkeypatch):
    """The same for arrays read back straight into the caller's (``DIRECT_BYTES`` and more)."""
    from specializers.loopnest import device_variants

    n = device_variants.DIRECT_BYTES // 8 + 5
    u, v, w = np.arange(n * 1.0), np.zeros(n), np.arange(n + 1.0)
    kernel = Heat(backend=backend, strict=True)
    kernel.kernel(u.copy(), v.copy(), w.copy(), 1, n)
    up, down = _count_copies(monkeypatch, backend)
    kernel.kernel(u.copy(), v.copy(), w.copy(), 3, n)
    assert sorted(s for s in up if s != (1,)) == sorted([(n,), (n,), (n + 1,)])
    assert sorted(s for s in down if s != (1,)) == [(n,), (n,)]
    assert up.count((1,)) == 2 and down.count((1,)) == 2


class Twice(LoopKernel):
    def kernel(self, a, b, n):
        for i in range(n):
            b[i] = a[i] + 1.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_array_passed_as_two_arguments_travels_once(backend, monkeypatch):
    x = np.arange(7.0)
    kernel = Twice(backend=backend, strict=True)
    kernel.kernel(x.copy(), np.zeros(7), 7)
    up, _ = _count_copies(monkeypatch, backend)
    y = x.copy()
    kernel.kernel(y, y, 7)
    assert np.array_equal(y, x + 1.0)
    assert [s for s in up if s != (1,)] == [(7,)]


# -- item 1: float64 only where the device has it ------------------------------------------------

class Rows64(LoopKernel):
    def kernel(self, A, B, n, m):
        for i in range(n):
            for j in range(m):
                B[i, j] = A[i, j] * 2.0


class Rows32(LoopKernel):
    def kernel(self, A, B, n, m):
        for i in range(n):
            for j in range(m):
                B[i, j] = A[i, j] * np.float32(2.0)


def _no_doubles(monkeypatch):
    from asp_core.backends import opencl

    single = dataclasses.replace(opencl.device(), doubles=False)
    monkeypatch.setattr(opencl, "device", lambda: single)


@needs_opencl
def test_a_float64_nest_on_a_device_without_doubles_is_refused_with_the_reason(monkeypatch):
    from asp_core.errors import SpecializationError
    from asp_core.specializer import FallbackWarning, clear_warnings

    _no_doubles(monkeypatch)
    args = (np.ones((4, 5)), np.zeros((4, 5)), 4, 5)
    clear_warnings()
    with pytest.warns(FallbackWarning, match="no double precision"):
        kernel = Rows64(backend="opencl")
        got = copy.deepcopy(args)
        kernel.kernel(*got)
    assert kernel.last_call.nests[0].backend != "opencl"
    assert np.array_equal(got[1], 2.0 * args[0])
    with pytest.raises(SpecializationError, match="double precision"):
        Rows64(backend="opencl", strict=True).kernel(*copy.deepcopy(args))


@needs_opencl
def test_a_float32_nest_runs_on_a_device_without_doubles(monkeypatch):
    """Built without the runtime's helpers in double (a device without doubles would refuse
    the program: PoCL has them, so the build here proves the source needs none)."""
    _no_doubles(monkeypatch)
    args = (np.ones((4, 5), np.float32), np.zeros((4, 5), np.float32), 4, 5)
    _same_as_python(Rows32, "opencl", args)


class Sqrt32(LoopKernel):
    def kernel(self, A, B, n, m):
        for i in range(n):
            for j in range(m):
                B[i, j] = np.float32(math.sqrt(A[i, j]))


@needs_opencl
def test_a_float32_nest_calling_a_helper_in_double_is_refused(monkeypatch):
    """math.sqrt computes in double (Python's float), through a runtime helper in double that
    a device without doubles does not get: refused, saying why, and run by another variant."""
    from asp_core.errors import SpecializationError

    _no_doubles(monkeypatch)
    args = (np.full((4, 5), 4.0, np.float32), np.zeros((4, 5), np.float32), 4, 5)
    with pytest.raises(SpecializationError, match="no double precision"):
        Sqrt32(backend="opencl", strict=True).kernel(*copy.deepcopy(args))
    got = copy.deepcopy(args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Sqrt32(backend="opencl").kernel(*got)
    assert np.array_equal(got[1], np.full((4, 5), 2.0, np.float32))


# -- item 1: CUDA launch shapes within the device's limits ---------------------------------------

class Tall(LoopKernel):
    def kernel(self, A, B, n, m):
        for i in range(n):
            for j in range(m):
                B[i, j] = A[i, j] + 1.0


def test_cuda_launches_past_one_row_per_block_run_within_the_grid_limits():
    """70,000 rows of two columns: j (the last subscript) on x, i on y. A GPU launches at most
    65535 blocks along y, which one row per block exceeded (such a call was refused); the
    blocks now take 64 rows each (the two columns leave their threads to y), and the result is
    Python's, strict (no refusal, no fallback), either way round. (Splits at the limits:
    ``test_launches_split_at_any_limits_give_pythons_results`` and ``test_launches.py``.)"""
    n, m = 70000, 2
    A = np.arange(n * m * 1.0).reshape(n, m)
    _same_as_python(Tall, "cuda-emulated", (A, np.zeros((n, m)), n, m))
    _same_as_python(Tall, "cuda-emulated", (A.T.copy(), np.zeros((m, n)), m, n))  # x = 70000


class Cube(LoopKernel):
    def kernel(self, A, B, n, m, p):
        for i in range(n):
            for j in range(m):
                for k in range(p):
                    B[i, j, k] = A[i, j, k] * 2.0 + i - j


class Sweeps(LoopKernel):
    def kernel(self, U, V, steps, n):
        for t in range(steps):
            for i in range(1, n - 1):
                for j in range(t % 3, n - 1, 2):
                    V[i, j] = U[i - 1, j] + U[i + 1, j] + U[i, j + 1] + t
            for i in range(1, n - 1):
                for j in range(1, n - 1):
                    U[i, j] = 0.25 * V[i, j]


class Triangle(LoopKernel):
    def kernel(self, A, n):
        for k in range(n):
            for i in range(k + 1, n):
                for j in range(k + 1, n):
                    A[i, j] = A[i, j] - A[i, k] * A[k, j]


@pytest.mark.parametrize("limits", [(2, (2, 2, 2), (1, 1, 1)), (8, (4, 2, 2), (3, 2, 1)),
                                    (4, (1, 4, 1), (2, 1, 3)), (1, (1, 1, 1), (5, 5, 5))],
                         ids=lambda lim: f"{lim[0]}t-{'x'.join(map(str, lim[2]))}")
def test_launches_split_at_any_limits_give_pythons_results(limits, monkeypatch):
    """The class: grids split along x, y and z, by kernels launched from Python and from a
    compiled host loop (bounds that depend on its variable, a step of two, an odd start), at
    limits small enough that nearly every launch is split; against the original code."""
    from asp_core.backends import launches

    threads, block, grid = limits
    tiny = launches.GridLimits(threads, block, grid)
    monkeypatch.setattr(launches, "CUDA_LIMITS", tiny)
    seen = set()
    for name in ("cuda_launch", "cuda_host_loop"):
        real = getattr(launches, name)
        monkeypatch.setattr(launches, name, lambda *a, real=real, **k:
                            seen.update(x for x in a if isinstance(x, launches.GridLimits))
                            or real(*a, **k))
    rng = np.random.default_rng(7)
    _same_as_python(Tall, "cuda-emulated", (rng.random((9, 5)), np.zeros((9, 5)), 9, 5))
    _same_as_python(Cube, "cuda-emulated", (rng.random((5, 6, 7)), np.zeros((5, 6, 7)), 5, 6, 7))
    _same_as_python(Sweeps, "cuda-emulated", (rng.random((9, 9)), np.zeros((9, 9)), 4, 9))
    _same_as_python(Triangle, "cuda-emulated", (rng.random((7, 7)) + 7 * np.eye(7), 7))
    assert seen == {tiny}


def test_a_host_loop_runs_without_python_between_its_launches(monkeypatch):
    """Emulated CUDA runs a host loop's launches from compiled code: no launch from Python
    while LU's k loop runs (the compiled loop itself is counted once per call)."""
    from asp_core.backends import launches
    from specializers.loopnest import device_variants

    python_launches, loops = [], []
    real_launch, real_loop = device_variants._CudaLaunches.launch, launches.cuda_host_loop
    monkeypatch.setattr(device_variants._CudaLaunches, "launch",
                        lambda self, *a, **k: python_launches.append(a[0]) or
                        real_launch(self, *a, **k))
    monkeypatch.setattr(launches, "cuda_host_loop",
                        lambda *a, **k: loops.append(a[4].trips) or real_loop(*a, **k))
    rng = np.random.default_rng(5)
    kernel = _same_as_python(Triangle, "cuda-emulated", (rng.random((12, 12)) + 12 * np.eye(12),
                                                         12))
    assert loops == [12] and python_launches == []
    assert "launched by the host once per iteration of k" in str(
        kernel.explain(np.eye(12) + 1.0, 12))


@needs_opencl
def test_a_nest_calling_a_helper_in_double_without_naming_the_type_is_refused():
    """The backstop of the check above: a nest whose text does not name ``double`` but calls a
    runtime helper in double does not build without doubles, and is refused, saying why."""
    import types

    from asp_core.backends import opencl
    from asp_core.errors import BackendUnavailable
    from specializers.loopnest import device_variants

    from specializers.loopnest.typeinfer import infer_types

    kernel = Rows32(backend="python")
    kernel.kernel(np.ones((2, 2), np.float32), np.zeros((2, 2), np.float32), 2, 2)
    runner = kernel._asp_current.runners[0]
    signature, _ = runner.signature(runner.last_inputs)
    base = device_module("opencl", runner.analysis, runner.last_plan,
                         infer_types(runner.analysis, signature), signature, "audit")

    def module(call: str):
        head, mark, _ = base.source.partition(device_variants.NEST_MARK)
        return types.SimpleNamespace(source=head + mark + "\n__kernel void k(__global float *a)"
                                     " {\n  asp_error e = {0, 0, 0, 0};\n  a[0] = " + call +
                                     ";\n}\n")

    assert device_variants._single_precision_program(opencl, module("a[1] * 2.0f"), "d")
    with pytest.raises(BackendUnavailable, match="no double precision.*through a helper"):
        device_variants._single_precision_program(opencl, module("asp_math_pow(&e, a[1], 2)"),
                                                  "d")


@needs_opencl
def test_opencl_work_groups_are_shaped_from_the_domain_and_padded(monkeypatch):
    """OpenCL launches name their work-groups (a driver left to choose may take one work item
    per group for a prime size): shaped as CUDA's blocks, the work items padded to whole
    work-groups, the threads past the trip count idle; Python's results."""
    from asp_core.backends import opencl

    shapes = []
    real = opencl.enqueue
    monkeypatch.setattr(opencl, "enqueue", lambda kernel, size, local=None:
                        shapes.append((size, local)) or real(kernel, size, local))
    rng = np.random.default_rng(11)
    _same_as_python(Tall, "opencl", (rng.random((9, 5)), np.zeros((9, 5)), 9, 5))
    _same_as_python(Tall, "opencl", (rng.random((997, 1)), np.zeros((997, 1)), 997, 1))
    assert shapes == [((8, 16), (8, 16)), ((1, 1024), (1, 128))]


class Scale(LoopKernel):
    def kernel(self, a, out, x):
        for i in range(a.shape[0]):
            out[i] = a[i] * x


@needs_opencl
def test_a_scalar_argument_that_changes_only_its_sign_bit_is_passed_again():
    """OpenCL sets again only the arguments that changed since a kernel's last launch: 0.0
    then -0.0 (equal values, other bits) must reach the kernel, as must a NaN after a NaN."""
    kernel = Scale(backend="opencl", strict=True)
    for x in (0.0, -0.0, 0.0, float("nan"), float("nan"), 2.0):
        got, want = np.zeros(4), np.zeros(4)
        kernel.kernel(np.ones(4), got, x)
        kernel.original_kernel(np.ones(4), want, x)
        assert np.array_equal(np.signbit(got), np.signbit(want)) and \
            np.array_equal(got, want, equal_nan=True), (x, got, want)


@needs_opencl
def test_an_opencl_call_without_a_host_loop_needs_no_compiled_launch_library(monkeypatch):
    """Its work-groups are shaped in Python (``launches.block_shape``): building the compiled
    library (90 ms in a new cache folder) was a new process's first OpenCL call's."""
    from asp_core.backends import launches

    def refused():
        raise AssertionError("the compiled launch library was asked for")

    monkeypatch.setattr(launches, "library", refused)
    rng = np.random.default_rng(3)
    _same_as_python(Tall, "opencl", (rng.random((6, 5)), np.zeros((6, 5)), 6, 5))
