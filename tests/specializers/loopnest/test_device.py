"""Device variants (``codegen.device``, ``device_variants``) against the original code: OpenCL
for real on this machine's OpenCL device (PoCL on a CPU), CUDA through the host emulation of
its launches, and the generated CUDA compiled by nvcc for sm_90. Strict kernels, so that a
silent fallback cannot pass; a skip names what is absent."""

import copy
import shutil
import subprocess
import warnings

import numpy as np
import pytest

from benchmarks.selection_worker import CASES, _example
from specializers.loopnest import LoopKernel
from specializers.loopnest.checking import load_source
from specializers.loopnest.checking.random_nests import random_nest
from specializers.loopnest.codegen.device import device_module
from specializers.loopnest.variants import BeyondInt64

from .helpers import close, mark_root_loop_parallel, random_kernel

pytestmark = pytest.mark.slow   # the suite starts it first (about two and a half minutes here)


def _opencl_missing() -> str | None:
    try:
        from asp_core.backends import opencl

        opencl.device()
    except Exception as exc:  # BackendUnavailable: no pyopencl, no platform, no device
        return str(exc)
    return None


def _cuda_missing() -> str | None:
    try:
        from asp_core.backends import cuda

        cuda.cuda_context()
    except Exception as exc:  # BackendUnavailable: no pycuda, no driver, no device
        return str(exc)
    return None


OPENCL_MISSING = _opencl_missing()
needs_opencl = pytest.mark.skipif(OPENCL_MISSING is not None,
                                  reason=f"no OpenCL here: {OPENCL_MISSING}")
CUDA_MISSING = _cuda_missing()
needs_gpu = [pytest.mark.gpu, pytest.mark.skipif(CUDA_MISSING is not None,
                                                 reason=f"no CUDA GPU here: {CUDA_MISSING}")]
#: The CUDA variant on a GPU (pycuda), wherever a test runs the emulated one (``-m gpu``).
ON_GPU = pytest.param("cuda", marks=needs_gpu)
BACKENDS = [pytest.param("opencl", marks=needs_opencl), "cuda-emulated", ON_GPU]


def run_strict(cls, backend, args):
    kernel = cls(backend=backend, strict=True)
    got = copy.deepcopy(args)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        result = kernel.kernel(*got)
    return kernel, got, result


# -- the twelve examples ------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_examples(case, backend):
    cls = getattr(_example(case.name), case.cls)
    args = case.make(case.start * 4)
    want = copy.deepcopy(args)
    cls().original_kernel(*want)
    kernel, got, _ = run_strict(cls, backend, args)
    assert close(got, want), case.name
    assert all(n.backend == backend and n.fallback is None for n in kernel.last_call.nests)


# -- random affine nests (the generated kernels: ``test_device_generated``) ---------------------

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("wrapped", [False, True], ids=["plain", "wrapped"])
def test_random_affine_nests(backend, wrapped):
    """The dependence oracle's random nests (triangular and imperfect ones among them; with
    ``wrapped``, subscripts spelled with Python's wrap-around)."""
    for seed in range(40):
        nest = random_nest(seed, wrapped)
        Kernel, args = random_kernel(nest)
        plain = copy.deepcopy(args)
        Kernel().original_kernel(*plain)
        kernel, got, _ = run_strict(Kernel, backend, args)
        assert close(got, plain), f"seed {seed}\n{nest.source}"


# -- errors leave the arrays as they were, and raise what Python raises ------------------------

class Faulty(LoopKernel):
    def kernel(self, a, b, k, n):
        for i in range(n):
            b[i] = a[i] + 1.0
        for i in range(n):
            a[i] = 1.0 / (i - k)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_failing_call_raises_pythons_error_with_pythons_arrays(backend):
    n = 64
    want_a, want_b = np.arange(float(n)), np.zeros(n)
    with pytest.raises(ZeroDivisionError):
        Faulty().original_kernel(want_a, want_b, 17, n)
    a, b = np.arange(float(n)), np.zeros(n)
    kernel = Faulty(backend=backend, strict=True)
    with pytest.raises(ZeroDivisionError):
        kernel.kernel(a, b, 17, n)
    assert np.array_equal(a, want_a) and np.array_equal(b, want_b)
    a, b = np.arange(float(n)), np.zeros(n)
    kernel.kernel(a, b, -1, n)   # and the next call, which does not fail, runs on the device
    assert np.array_equal(a, 1.0 / (np.arange(n) + 1.0))
    assert kernel.last_call.nests[1].backend == backend


class Huge(LoopKernel):
    def kernel(self, out, m, n):
        for i in range(n):
            out[i] = (i * m) * 0.5


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_python_int_beyond_64_bits_raises_when_forced(backend):
    out = np.zeros(8)
    with pytest.raises(BeyondInt64):
        Huge(backend=backend, strict=True).kernel(out, 2**62, 8)
    assert not out.any()


# -- what the kernels look like -------------------------------------------------------------------

def _module(cls, args, dialect="opencl"):
    kernel = cls(backend="python")
    kernel.kernel(*copy.deepcopy(args))
    runner = kernel._asp_current.runners[0]
    types, _ = runner.signature(runner.last_inputs)
    from specializers.loopnest.typeinfer import infer_types

    return device_module(dialect, runner.analysis, runner.last_plan,
                         infer_types(runner.analysis, types), types, "test")


class Rows(LoopKernel):
    def kernel(self, A, B, n, m):
        for i in range(n):
            for j in range(m):
                B[i, j] = A[i, j] * 2.0


class Sum(LoopKernel):
    def kernel(self, x, n):
        s = 0.0
        for i in range(n):
            s += x[i]
        return s


def test_a_parallel_band_maps_onto_the_grid_with_the_last_subscript_on_x():
    module = _module(Rows, (np.ones((5, 7)), np.zeros((5, 7)), 5, 7))
    (kernel,) = module.kernels
    assert [(a.var, a.axis) for a in kernel.axes] == [("j", 0), ("i", 1)]
    assert "get_global_id(0)" in module.source and "get_global_id(1)" in module.source


class KOuter(LoopKernel):
    """gemm as the example writes it: k outermost. The CPU's schedule runs i, k, j (j
    innermost, to vectorize); a grid wants i and j, with k in each thread."""

    def kernel(self, C, A, B, n):
        for k in range(n):
            for i in range(n):
                for j in range(n):
                    C[i, j] = C[i, j] + A[i, k] * B[k, j]


class Skewed(LoopKernel):
    """j is parallel inside k (which carries (<, >)), but may not move outside it."""

    def kernel(self, X, n, m):
        for i in range(n):
            for k in range(1, m):
                for j in range(m - 1):
                    X[i, k, j] = X[i, k - 1, j + 1] * 0.5 + 1.0


class HostSweep(LoopKernel):
    """Under a time loop: the same order inside a host loop's kernel."""

    def kernel(self, C, A, steps, n):
        for t in range(steps):
            for i in range(n):
                for k in range(1, n):
                    for j in range(n):
                        C[i, j] = C[i, j] + A[i, k] * 0.5


@pytest.mark.parametrize("cls, args, axes, inner", [
    (KOuter, lambda rng: (rng.random((9, 9)), rng.random((9, 9)), rng.random((9, 9)), 9),
     [("j", 0), ("i", 1)], "for (int64_t k"),
    (Skewed, lambda rng: (rng.random((4, 6, 6)), 4, 6), [("i", 0)], "for (int64_t j"),
    (HostSweep, lambda rng: (rng.random((7, 7)), rng.random((7, 7)), 3, 7),
     [("j", 0), ("i", 1)], "for (int64_t k"),
])
@pytest.mark.parametrize("backend", [pytest.param("opencl", marks=needs_opencl),
                                     "cuda-emulated", ON_GPU])
def test_the_parallel_loops_of_a_band_move_onto_the_grid_where_legal(cls, args, axes, inner,
                                                                      backend):
    """device_order: a sequential loop between parallel ones moves inside each thread where
    the dependences allow it (gemm's k), and stays where they do not (a (<, >) pair); the
    results are Python's, bit for bit (each thread keeps its iterations' order)."""
    arguments = args(np.random.default_rng(3))
    module = _module(cls, arguments, "cuda")
    (kernel,) = module.kernels
    assert [(a.var, a.axis) for a in kernel.axes] == axes
    assert inner in module.source.partition("/* ---- the nest ---- */")[2]
    want = copy.deepcopy(arguments)
    cls().original_kernel(*want)
    _, got, _ = run_strict(cls, backend, arguments)
    assert all(np.array_equal(g, w) for g, w in zip(got, want) if isinstance(g, np.ndarray))


@needs_opencl
def test_a_cpu_device_keeps_the_cpus_loop_order():
    """PoCL runs work items on the host's cores and vectorizes each one's innermost loop:
    gemm keeps i on the grid and j innermost in each work item there (k inside each work item
    ran it 3 to 4 times slower); the GPU's layout takes i and j. The cost model prices the
    layout each device gets."""
    from specializers.loopnest.device_variants import gpu_layout
    from specializers.loopnest.typeinfer import infer_types

    assert not gpu_layout("opencl") and gpu_layout("cuda") and gpu_layout("cuda-emulated")
    args = tuple(np.random.default_rng(3).random((9, 9)) for _ in range(3)) + (9,)
    kernel = KOuter(backend="python")
    kernel.kernel(*copy.deepcopy(args))
    runner = kernel._asp_current.runners[0]
    types, _ = runner.signature(runner.last_inputs)
    info = infer_types(runner.analysis, types)
    axes = {gpu: [[a.var for a in k.axes] for k in device_module(
        "opencl", runner.analysis, runner.last_plan, info, types, "t", gpu).kernels]
        for gpu in (True, False)}
    assert axes == {True: [["j", "i"]], False: [["i"]]}
    want = copy.deepcopy(args)
    KOuter().original_kernel(*want)
    _, got, _ = run_strict(KOuter, "opencl", args)
    assert np.array_equal(got[0], want[0])


TRIANGLES = {
    "lower": "range(i + 1)", "upper": "range(i, n)", "strict": "range(i + 1, n)",
    "shrinking": "range(n - i)", "rising": "range(n - i - 1, n)",
}


def _triangle(rows: str, three: bool = False):
    """A kernel whose inner loop's range follows the row: each instance adds once to its own
    element (an instance run twice, or never, shows), under a row's scaling split off."""
    body = ["for k in range(3):", "    X[i, j, k] += j * 0.5 + k"] if three else \
        ["X[i, j] += j * 0.5 + 1.0"]
    lines = ["from specializers.loopnest import LoopKernel", "",
             "class Triangle(LoopKernel):", "    def kernel(self, X, n):",
             "        for i in range(n):",
             f"            X[i, 0{', 0' if three else ''}] *= 2.0",
             f"            for j in {rows}:"] + ["                " + line for line in body]
    return load_source("\n".join(lines) + "\n", "Triangle")


@pytest.mark.parametrize("rows", list(TRIANGLES))
@pytest.mark.parametrize("n", [0, 1, 2, 7, 40])
@pytest.mark.parametrize("backend", [pytest.param("opencl", marks=needs_opencl),
                                     "cuda-emulated", ON_GPU])
def test_a_triangle_runs_on_the_grid_over_its_hull(rows, n, backend):
    """A parallel loop whose body scales its row and then walks a triangle is split
    (schedule.distribution), and the triangle's loop joins the grid over its hull
    (launch_grid), the work items outside their row's range idle: every instance once, as
    Python runs it."""
    Triangle = _triangle(TRIANGLES[rows])
    X = np.random.default_rng(n).random((max(n, 1), max(n, 1)))
    want = X.copy()
    Triangle().original_kernel(want, n)
    kernel, (got, _), _ = run_strict(Triangle, backend, (X, n))
    assert np.array_equal(got, want)
    if n:
        module = _module(Triangle, (X, n), "cuda")
        assert [[a.var for a in k.axes] for k in module.kernels][-1] == ["j", "i"]


@pytest.mark.parametrize("backend", [pytest.param("opencl", marks=needs_opencl),
                                     "cuda-emulated", ON_GPU])
def test_a_triangle_with_a_loop_inside_each_work_item(backend):
    Triangle = _triangle("range(i + 1)", three=True)
    X = np.random.default_rng(1).random((9, 9, 3))
    want = X.copy()
    Triangle().original_kernel(want, 9)
    _, (got, _), _ = run_strict(Triangle, backend, (X, 9))
    assert np.array_equal(got, want)


def test_the_examples_syr2k_runs_each_part_on_a_two_dimensional_grid():
    from examples.syr2k import Syr2k, make_inputs

    module = _module(Syr2k, make_inputs(12, 8), "cuda")
    assert [[a.var for a in k.axes] for k in module.kernels] == [["j", "i"], ["j", "i"]]
    nest = module.source.partition("/* ---- the nest ---- */")[2]
    assert nest.count("if (j < ") == 2   # each kernel's guard of the triangle


class Broadcast(LoopKernel):
    def kernel(self, out, x, y, n, m):
        for i in range(n):
            for j in range(m):
                out[i, j] = x[i] * y[i] + 1.0


class Strided(LoopKernel):
    def kernel(self, out, a, n, m):
        for i in range(n):
            for j in range(m):
                out[j, 3 * i] = a[j, 2 * i + 1] + a[j, 4 * i]


class Flat(LoopKernel):
    def kernel(self, out, a, n, m):
        for j in range(m):
            for i in range(n):
                out[i * m + j] = a[i * m + j] * 2.0


@pytest.mark.parametrize("cls, args, x", [
    # x[i] and y[i] are the same address for every thread of a row (stride 0): j on x makes
    # every access coalesce; i on x (two accesses walking their last subscript) would scatter
    # the writes a row apart
    (Broadcast, (np.zeros((4, 6)), np.ones(4), np.ones(4), 4, 6), "j"),
    # i walks the last subscript of every access, 2 to 4 elements apart; j whole rows apart
    (Strided, (np.zeros((5, 12)), np.ones((5, 12)), 3, 5), "i"),
    # a flattened index: i * m + j walks j one element apart
    (Flat, (np.zeros(24), np.ones(24), 4, 6), "j"),
], ids=["broadcast", "strided", "flat"])
def test_x_is_the_loop_of_the_smallest_inter_thread_stride(cls, args, x):
    """Chikin et al.'s inter-thread stride, from the affine subscripts
    (``device_layout.thread_stride``): the loop on x is the one whose neighbouring threads
    touch the same or neighbouring elements in the most accesses."""
    (kernel,) = _module(cls, args).kernels
    assert kernel.axes[0].var == x


class TwoSweeps(LoopKernel):
    """Under a time loop, a sweep walking rows along j, then one walking columns along i."""

    def kernel(self, A, B, C, D, steps, n):
        for t in range(steps):
            for i in range(n):
                for j in range(n):
                    B[i, j] = A[i, j] + 1.0
            for i in range(n):
                for j in range(n):
                    C[j, i] = B[j, i] + D[j, i]


def test_each_kernel_puts_on_x_the_loop_its_own_accesses_walk():
    # (every kernel once counted the accesses of the whole nest: both got x = i)
    args = tuple(np.ones((8, 8)) for _ in range(4)) + (2, 8)
    module = _module(TwoSweeps, args)
    assert [[(a.var, a.axis) for a in k.axes] for k in module.kernels] == \
        [[("j", 0), ("i", 1)], [("i", 0), ("j", 1)]]


def test_a_reduction_runs_on_lanes_then_one_combining_work_item():
    module = _module(Sum, (np.arange(10.0), 10))
    assert [(bool(k.axes), k.reduced, k.combine) for k in module.kernels] == \
        [(True, (("s", "double"),), False), (False, (("s", "double"),), True)]


REDUCTIONS = {
    "float sum": ("s = 0.5", "s += x[i] * y[j]"),
    "float difference": ("s = 100.0", "s -= x[i] - y[j]"),
    "float product": ("s = 1.0", "s *= 1.0 + x[i] * y[j] * 1e-3"),
    "Python int sum": ("s = 3", "s += i * j - 7"),
    "Python int product (checked)": ("s = 1", "s = s * (1 - 2 * ((i + j) % 2))"),
    "NumPy int sum (wraps)": ("s = k[0]", "s = s + k[i] * k[j]"),
    "Python max": ("s = -5.0", "s = max(s, x[i] - y[j])"),
    "Python min": ("s = 5.0", "s = min(s, x[i] * y[j])"),
    "NumPy maximum (NaN spreads)": ("s = 0.0", "s = np.maximum(s, z[i] + y[j])"),
    "NumPy fmin (NaN ignored)": ("s = 0.0", "s = np.fmin(s, z[i] - y[j])"),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(REDUCTIONS))
@pytest.mark.parametrize("n,m", [(0, 3), (1, 1), (7, 5), (150, 90)])
def test_reductions_over_a_band(name, n, m, backend):
    """Reductions of every operator family over a 2-deep band, at sizes from none to more
    iterations than lanes (the lanes' partial results combined in order on the device)."""
    init, update = REDUCTIONS[name]
    Kernel = load_source(
        "import numpy as np\n"
        "from specializers.loopnest import LoopKernel\n"
        "class Kernel(LoopKernel):\n"
        "    def kernel(self, x, y, z, k, n, m):\n"
        f"        {init}\n"
        "        for i in range(n):\n"
        "            for j in range(m):\n"
        f"                {update}\n"
        "        return s\n")
    rng = np.random.default_rng(n * 1000 + m)
    z = rng.normal(size=max(n, 1))
    z[::5] = np.nan
    args = (rng.normal(size=max(n, 1)), rng.normal(size=max(m, 1)), z,
            rng.integers(-2**62, 2**62, size=max(n, m, 1)), n, m)
    with np.errstate(over="ignore"):   # NumPy's int64 sums wrap, as the device's must
        want = Kernel().original_kernel(*copy.deepcopy(args))
    kernel, _, got = run_strict(Kernel, backend, args)
    assert type(got) is type(want), (got, want)
    if isinstance(want, float):
        assert (np.isnan(got) and np.isnan(want)) or got == pytest.approx(want, rel=1e-9)
    else:
        assert got == want
    assert kernel.last_call.nests[0].backend == backend


def test_the_dialects_differ_only_in_their_words():
    args = (np.ones((5, 7)), np.zeros((5, 7)), 5, 7)
    cl, cu = _module(Rows, args, "opencl"), _module(Rows, args, "cuda")
    assert "__kernel void" in cl.source and "__global double *restrict A" in cl.source
    assert 'extern "C" __global__ void' in cu.source and "blockIdx.x" in cu.source
    assert [k.axes for k in cl.kernels] == [k.axes for k in cu.kernels]


def test_an_unknown_backend_is_refused_when_the_kernel_is_made(monkeypatch):
    with pytest.raises(ValueError, match="unknown backend 'gpu'.*opencl.*cuda"):
        Rows(backend="gpu")
    monkeypatch.setenv("ASP_BACKEND", "vulkan")
    with pytest.raises(ValueError, match="'vulkan' in ASP_BACKEND.*opencl"):
        Rows()
    monkeypatch.setenv("ASP_BACKEND", "opencl")
    Rows()   # a known one is fine, whether or not this machine has it


def test_a_backend_this_machine_lacks_falls_back_with_the_reason():
    """pycuda is not installed here: a forced CUDA runs as Python with a warning saying why,
    and a strict one raises."""
    try:
        import pycuda  # noqa: F401
        pytest.skip("pycuda is installed here")
    except ImportError:
        pass
    from asp_core.errors import SpecializationError
    from asp_core.specializer import FallbackWarning, clear_warnings

    args = (np.ones((5, 7)), np.zeros((5, 7)), 5, 7)
    clear_warnings()
    with pytest.warns(FallbackWarning, match="pycuda is not installed"):
        kernel = Rows(backend="cuda")
        kernel.kernel(*copy.deepcopy(args))
    assert kernel.last_call.nests[0].backend == "python"
    with pytest.raises(SpecializationError, match="pycuda"):
        Rows(backend="cuda", strict=True).kernel(*copy.deepcopy(args))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("name", [case.name for case in CASES])
def test_nvcc_compiles_the_generated_cuda(name, tmp_path):
    """The CUDA of each of the twelve examples (the checked Python-int arithmetic, the math
    module, several nests, reductions, host loops), compiled for sm_90 (no GPU needed to
    compile)."""
    case = next(c for c in CASES if c.name == name)
    cls = getattr(_example(name), case.cls)
    args = case.make(case.start * 2)
    kernel = cls(backend="python")
    kernel.kernel(*copy.deepcopy(args))
    from specializers.loopnest.typeinfer import infer_types

    for index, runner in enumerate(kernel._asp_current.runners):
        types, _ = runner.signature(runner.last_inputs)
        module = device_module("cuda", runner.analysis, runner.last_plan,
                               infer_types(runner.analysis, types), types, name)
        src = tmp_path / f"{name}{index}.cu"
        src.write_text(module.source)
        done = subprocess.run(["nvcc", "-arch=sm_90", "--fmad=false", "-diag-suppress", "177",
                               "-c", "-o", str(tmp_path / "k.o"), str(src)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("backend", ["cuda-emulated", ON_GPU])
def test_a_wrongly_parallel_loop_is_caught_by_a_device_run(backend, monkeypatch):
    """The checker itself: mark a carried loop parallel by hand, and the run differs from
    Python: the emulated CUDA, visiting threads in a seeded random order, and a GPU, whose
    threads read before their neighbours write (a grid kernel runs the loop)."""
    class Prefix(LoopKernel):
        def kernel(self, A, n):
            for i in range(1, n):
                A[i] = A[i] + A[i - 1]

    want = np.arange(1.0, 65.0)
    Prefix().original_kernel(want, 64)
    mark_root_loop_parallel(monkeypatch)
    got = np.arange(1.0, 65.0)
    kernel = Prefix(backend=backend, strict=True)
    kernel.kernel(got, 64)
    assert not np.array_equal(got, want)
    assert kernel.last_call.nests[0].backend == backend


class LU(LoopKernel):
    def kernel(self, A, n):
        for k in range(n):
            for i in range(k + 1, n):
                A[i, k] = A[i, k] / A[k, k]
            for i in range(k + 1, n):
                for j in range(k + 1, n):
                    A[i, j] = A[i, j] - A[i, k] * A[k, j]


class Heat(LoopKernel):
    def kernel(self, u, v, steps, n):
        for t in range(steps):
            for i in range(1, n - 1):
                v[i] = u[i] + 0.25 * (u[i - 1] - 2.0 * u[i] + u[i + 1])
            for i in range(1, n - 1):
                u[i] = v[i]


def test_sequential_loops_around_parallel_ones_are_driven_by_the_host():
    """LU's k loop (the inner grids shrink with k) and a time loop around two sweeps: their
    kernels run once per iteration of the host loop, each a grid."""
    a = np.eye(4) + 1.0
    lu = _module(LU, (a, 4))
    assert [(k.host_loop.var, [x.var for x in k.axes]) for k in lu.kernels] == \
        [("k", ["i"]), ("k", ["j", "i"])]
    heat = _module(Heat, (np.ones(8), np.ones(8), 2, 8))
    assert [k.host_loop.var for k in heat.kernels] == ["t", "t"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [0, 1, 2, 33])
def test_host_loops_match_python(backend, n):
    rng = np.random.default_rng(n)
    a = rng.random((max(n, 1), max(n, 1))) + n * np.eye(max(n, 1))
    want = a.copy()
    LU().original_kernel(want, n)
    kernel, (got, _), _ = run_strict(LU, backend, (a, n))
    assert np.allclose(got, want, rtol=1e-12, atol=0)
    u = rng.random(max(n, 3))
    want_u, want_v = u.copy(), u.copy()
    Heat().original_kernel(want_u, want_v, 7, len(u))
    _, (got_u, got_v, _, _), _ = run_strict(Heat, backend, (u.copy(), u.copy(), 7, len(u)))
    assert np.array_equal(got_u, want_u) and np.array_equal(got_v, want_v)


@needs_opencl
def test_a_call_too_big_for_the_device_runs_elsewhere_with_the_reason(monkeypatch):
    """Device memory as this test sets it: 1 KiB. The forced OpenCL run falls back (and says
    the sizes); a strict one raises."""
    import dataclasses

    from asp_core.backends import opencl
    from asp_core.errors import SpecializationError
    from asp_core.specializer import FallbackWarning, clear_warnings

    small = dataclasses.replace(opencl.device(), global_memory=1024)
    monkeypatch.setattr(opencl, "device", lambda: small)
    args = (np.ones((50, 70)), np.zeros((50, 70)), 50, 70)
    clear_warnings()
    with pytest.warns(FallbackWarning, match=r"MiB on the opencl device, which holds 0\.0 MiB"):
        kernel = Rows(backend="opencl")
        got = copy.deepcopy(args)
        kernel.kernel(*got)
    assert np.array_equal(got[1], 2.0 * args[0])
    with pytest.raises(SpecializationError, match="need"):
        Rows(backend="opencl", strict=True).kernel(*copy.deepcopy(args))


def test_explain_shows_the_kernels():
    text = str(LU(backend="cuda-emulated", strict=True).explain(np.eye(5) + 1.0, 5))
    assert "cuda-emulated kernels:" in text
    assert "grid x=i, launched by the host once per iteration of k" in text
    assert "grid x=j, y=i, launched by the host once per iteration of k" in text
    text = str(Sum(backend="cuda-emulated", strict=True).explain(np.arange(9.0), 9))
    assert "lanes over i reducing s" in text and "combining the lanes' partial results" in text


@needs_opencl
@pytest.mark.parametrize("compiled", [True, False], ids=["compiled loop", "python loop"])
def test_opencl_host_loops_with_and_without_the_compiled_loop(compiled, monkeypatch):
    """The host loop runs in compiled code where the OpenCL library can be opened by name,
    else from Python: the same results either way."""
    from asp_core.backends import opencl

    calls = []
    real = opencl.host_loop
    monkeypatch.setattr(opencl, "host_loop", lambda *a: calls.append(1) or real(*a))
    if not compiled:
        monkeypatch.setattr(opencl, "host_loop_available", lambda: False)
    rng = np.random.default_rng(3)
    a = rng.random((40, 40)) + 40 * np.eye(40)
    want = a.copy()
    LU().original_kernel(want, 40)
    _, (got, _), _ = run_strict(LU, "opencl", (a, 40))
    assert np.allclose(got, want, rtol=1e-12, atol=0)
    assert bool(calls) == (compiled and opencl.host_loop_available())
