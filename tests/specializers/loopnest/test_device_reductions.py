"""Device reductions as work-group trees (``codegen.device._reduction_kernels``): lanes in
work-groups of ``GROUP_SIZE``, a tree in local (shared) memory between barriers, then a combine
of the work-groups' results in order. Against the original code, strict, on OpenCL for real
(PoCL) and on the CUDA emulation (whose blocks run their threads as fibers meeting at the
barriers): every operator, 1-D and 2-D bands, trip counts around the work-group size and past
the most lanes; the bits of a float sum against a model of the documented order, the same on
every run and on both backends; errors raised inside a reduction, in its lanes, its tree or
its combine, raise as Python does."""

import copy
import dataclasses
import functools
import shutil
import subprocess

import numpy as np
import pytest

from specializers.loopnest import LoopKernel
from specializers.loopnest.checking import load_source
from specializers.loopnest.codegen.device import GROUP_SIZE
from specializers.loopnest.cost import device as cost_device
from specializers.loopnest.device_variants import (REDUCTION_GROUPS, REDUCTION_LANES,
                                                   reduction_groups)
from specializers.loopnest.variants import BeyondInt64

from .test_device import CUDA_MISSING, OPENCL_MISSING, ON_GPU, _module, needs_opencl, run_strict
from .test_reduction_determinism import device_model

BACKENDS = [pytest.param("opencl", marks=needs_opencl), "cuda-emulated", ON_GPU]
G = GROUP_SIZE
#: trip count -> the 2-D band's shape of that many iterations
COUNTS = {0: (0, 4), 1: (1, 1), G - 1: (1, G - 1), G: (8, 16), G + 1: (3, 43),
          3 * G + 5: (17, 23), 2 * REDUCTION_LANES + 7: (89, 92)}
#: operator -> (initial value, update) per kind of scalar; ``v``: the iteration's value
UPDATES = {
    "sum": {"float": ("0.5", "s += v"), "int": ("3", "s += v")},
    "product": {"float": ("1.5", "s *= v"), "int": ("-2", "s = s * v")},
    "min": {"float": ("0.25", "s = min(s, v)"), "int": ("5", "s = min(s, v)")},
    "max": {"float": ("0.25", "s = max(s, v)"), "int": ("-5", "s = max(s, v)")},
}


@functools.lru_cache(maxsize=None)
def reduction_kernel(op: str, kind: str, dims: int):
    init, update = UPDATES[op][kind]
    at = "[i]" if dims == 1 else "[i, j]"
    # (float(): Python floats throughout; ``max(0.25, X[i])`` would return a Python float or
    # a NumPy one depending on which wins, and every compiled variant returns NumPy's)
    value = {"float": f"float(X{at})", "int": f"int(K{at})"}[kind]
    if op == "product" and kind == "float":
        value = f"(1.0 + X{at} * 1e-3)"
    loops = "        for i in range(n):\n"
    if dims == 2:
        loops += "            for j in range(m):\n"
    indent = " " * (8 + 4 * dims)
    return load_source(
        "import numpy as np\n"
        "from specializers.loopnest import LoopKernel\n"
        "class Kernel(LoopKernel):\n"
        "    def kernel(self, X, K, n, m):\n"
        f"        s = {init}\n"
        f"{loops}"
        f"{indent}v = {value}\n"
        f"{indent}{update}\n"
        "        return s\n")


def arguments(op: str, kind: str, dims: int, count: int):
    shape = COUNTS.get(count, (1, count)) if dims == 2 else (count,)
    rng = np.random.default_rng(count * 10 + dims)
    X = rng.normal(size=shape)
    if op == "product":   # +-1, and a few 2s: a product that stays within 64 bits
        K = rng.choice(np.array([-1, 1], np.int64), size=shape)
        K.reshape(-1)[rng.integers(0, max(count, 1), size=min(count, 20))] = 2
    else:
        K = rng.integers(-10**6, 10**6, size=shape)
    n, m = (shape[0], shape[1]) if dims == 2 else (count, 1)
    return X, K, n, m


def same_value(got, want, op: str) -> bool:
    if type(got) is not type(want):
        return False
    if isinstance(want, float) and op in ("sum", "product"):  # reassociated
        return got == pytest.approx(want, rel=1e-9)
    return got == want   # an integer or a selection: exact


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("count", list(COUNTS))
@pytest.mark.parametrize("dims", [1, 2])
@pytest.mark.parametrize("kind", ["float", "int"])
@pytest.mark.parametrize("op", list(UPDATES))
def test_every_operator_over_every_trip_count(op, kind, dims, count, backend):
    Kernel = reduction_kernel(op, kind, dims)
    args = arguments(op, kind, dims, count)
    want = Kernel().original_kernel(*copy.deepcopy(args))
    kernel, got_args, got = run_strict(Kernel, backend, args)
    assert same_value(got, want, op), (got, want)
    assert kernel.last_call.nests[0].backend == backend
    assert kernel.last_call.nests[0].parallel_loops == (("i",) if dims == 1 else ("i", "j"))
    for a, b in zip(got_args[:2], args[:2]):
        assert np.array_equal(a, b)


class Several(LoopKernel):
    """Four reductions of one band at once (each its own local array, one tree of barriers)."""

    def kernel(self, X, K, n, m):
        s = 0.0
        p = 1.0
        lo = 10**9
        hi = -1.0
        f = np.float32(0.0)
        for i in range(n):
            for j in range(m):
                s += X[i, j]
                p = p * (1.0 + X[i, j] * 1e-4)
                lo = min(lo, int(K[i, j]))
                hi = max(hi, float(X[i, j]))
                f += np.float32(X[i, j])
        return s, p, lo, hi, f


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("count", [1, G + 1, 2 * REDUCTION_LANES + 7])
def test_several_scalars_reduced_in_one_tree(backend, count):
    X, K, n, m = arguments("sum", "float", 2, count)
    args = (X, K, n, m)
    want = Several().original_kernel(*copy.deepcopy(args))
    kernel, _, got = run_strict(Several, backend, args)
    assert [type(v) for v in got] == [type(v) for v in want]
    assert got[0] == pytest.approx(want[0], rel=1e-9)
    assert got[1] == pytest.approx(want[1], rel=1e-9)
    assert got[2:4] == want[2:4]
    assert got[4] == pytest.approx(want[4], rel=1e-4)   # float32, reassociated
    assert kernel.last_call.nests[0].backend == backend


# -- the bits: the documented order (test_reduction_determinism.device_model), on every run and
# backend ---------------------------------------------------------------------------------------

def wild(rng, shape) -> np.ndarray:
    """Values over 16 orders of magnitude, of both signs: every change of order shows."""
    return rng.normal(size=shape) * 10.0 ** rng.uniform(-8, 8, size=shape)


@pytest.mark.parametrize("count", [2, G - 1, G + 1, 3 * G + 5, 2 * REDUCTION_LANES + 7])
@pytest.mark.parametrize("dims", [1, 2])
def test_a_float_sum_has_the_documented_bits_on_every_run_and_backend(dims, count):
    Kernel = reduction_kernel("sum", "float", dims)
    X, K, n, m = arguments("sum", "float", dims, count)
    X = wild(np.random.default_rng(count), X.shape)
    model = device_model([float(v) for v in X.reshape(-1)], 0.5)
    python = Kernel().original_kernel(X, K, n, m)
    seen = {}
    for backend in ["cuda-emulated"] + (["opencl"] if OPENCL_MISSING is None else []) + \
            (["cuda"] if CUDA_MISSING is None else []):
        kernel = Kernel(backend=backend, strict=True)
        runs = [kernel.kernel(X, K, n, m) for _ in range(2)]
        runs.append(Kernel(backend=backend, strict=True).kernel(X, K, n, m))
        assert {float(r).hex() for r in runs} == {model.hex()}, (backend, runs, model)
        seen[backend] = runs[0]
    assert len({float(v).hex() for v in seen.values()}) == 1
    assert model == pytest.approx(python, rel=1e-6, abs=1e-6 * np.abs(X).max())


def test_the_groups_depend_on_the_trip_count_alone():
    assert [reduction_groups(t) for t in (0, 1, G - 1, G, G + 1, 10**9)] == \
        [0, 1, 1, 1, 2, REDUCTION_GROUPS]
    assert REDUCTION_LANES == REDUCTION_GROUPS * G
    # the cost model reads the same numbers without importing the code generator
    assert (cost_device.GROUP_SIZE, cost_device.REDUCTION_GROUPS) == (G, REDUCTION_GROUPS)


# -- errors inside a reduction ------------------------------------------------------------------

DIVIDE = load_source(
    "from specializers.loopnest import LoopKernel\n"
    "class Kernel(LoopKernel):\n"
    "    def kernel(self, X, c, k, n):\n"
    "        s = 0.0\n"
    "        t = 0\n"
    "        for i in range(n):\n"
    "            s += 1.0 / (float(X[i]) - c)\n"
    "            t += 1000 // (i - k)\n"
    "        return s, t\n")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("where", [0, G - 1, G, 2 * REDUCTION_LANES + 6])
def test_a_division_by_zero_in_a_reduction_raises_as_python_does(backend, where):
    """At the first iteration, the last of the first work-group, the first of the second,
    the last of all; a float division, then an integer one."""
    n = 2 * REDUCTION_LANES + 7
    X = np.arange(float(n))
    kernel = DIVIDE(backend=backend, strict=True)
    for c, k in [(float(where), -1), (-0.5, where)]:
        with pytest.raises(ZeroDivisionError):
            DIVIDE().original_kernel(X.copy(), c, k, n)
        with pytest.raises(ZeroDivisionError):
            kernel.kernel(X.copy(), c, k, n)
    got = kernel.kernel(X.copy(), -0.5, -1, n)    # and a call that does not fail runs there
    want = DIVIDE().original_kernel(X.copy(), -0.5, -1, n)
    assert got[1] == want[1] and got[0] == pytest.approx(want[0], rel=1e-9)
    assert kernel.last_call.nests[0].backend == backend


INT_SUM = load_source(
    "from specializers.loopnest import LoopKernel\n"
    "class Kernel(LoopKernel):\n"
    "    def kernel(self, K, n):\n"
    "        s = 0\n"
    "        for i in range(n):\n"
    "            s += int(K[i])\n"
    "        return s\n")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("where", ["tree", "combine"])
def test_a_python_int_beyond_64_bits_in_the_tree_or_the_combine_raises(backend, where):
    """Each lane's own sum fits in 64 bits; two of them added in the work-group's tree (lanes
    0 and 1), or two work-groups' results in the combine (lanes 0 and G), do not: the
    checked addition there reports it, and a forced backend raises, as for any Python int
    beyond 64 bits."""
    n = G + 1
    K = np.zeros(n, np.int64)
    K[[0, 1] if where == "tree" else [0, G]] = 2**62 + 2**61
    assert INT_SUM().original_kernel(K, n) == 2 * (2**62 + 2**61)
    with pytest.raises(BeyondInt64):
        INT_SUM(backend=backend, strict=True).kernel(K, n)
    K[1 if where == "tree" else G] = -(2**62)   # and in range: the exact sum
    kernel, _, got = run_strict(INT_SUM, backend, (K, n))
    assert got == 2**61 and type(got) is int


# -- the kernels' shape ---------------------------------------------------------------------------

def test_the_kernels_reduce_in_work_group_trees():
    args = (np.ones((3, 5)), np.ones((3, 5), np.int64), 3, 5)
    for dialect, local, barrier in [("opencl", "__local double", "barrier(CLK_LOCAL_MEM_FENCE);"),
                                    ("cuda", "__shared__ double", "__syncthreads();")]:
        module = _module(reduction_kernel("sum", "float", 2), args, dialect)
        first, combine = module.kernels
        assert first.group == G and combine.group == 0 and combine.combine
        text = module.source.split(first.name + "(", 1)[1].split(combine.name, 1)[0]
        assert f"{local} asp_loc_s[{G}];" in text
        assert text.count(barrier) == G.bit_length() - 1     # log2(G) steps
        assert "return" not in text      # every lane reaches every barrier
        assert ("reqd_work_group_size(128, 1, 1)" if dialect == "opencl"
                else "__launch_bounds__(128)") in module.source
        assert "asp_k < asp_groups" in module.source   # the combine: over work-groups


@needs_opencl
def test_a_device_with_smaller_work_groups_is_refused_with_the_reason(monkeypatch):
    from asp_core.backends import opencl
    from asp_core.errors import SpecializationError
    from asp_core.specializer import FallbackWarning, clear_warnings

    small = dataclasses.replace(opencl.device(), max_work_group_size=G // 2)
    monkeypatch.setattr(opencl, "device", lambda: small)
    Kernel = reduction_kernel("sum", "float", 1)
    args = arguments("sum", "float", 1, G + 1)
    want = Kernel().original_kernel(*copy.deepcopy(args))
    clear_warnings()
    with pytest.warns(FallbackWarning, match=f"work-groups of at most {G // 2} work items"):
        kernel = Kernel(backend="opencl")
        assert kernel.kernel(*copy.deepcopy(args)) == want
    assert kernel.last_call.nests[0].backend != "opencl"
    with pytest.raises(SpecializationError, match=f"work-groups of {G}"):
        Kernel(backend="opencl", strict=True).kernel(*copy.deepcopy(args))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_nvcc_compiles_the_reductions(tmp_path):
    """The CUDA of reductions of every kind (the shared arrays, barriers and launch bounds),
    compiled for sm_90 (no GPU needed to compile)."""
    modules = [_module(Several, arguments("sum", "float", 2, G + 1), "cuda")]
    for op in UPDATES:
        for kind in ("float", "int"):
            modules.append(_module(reduction_kernel(op, kind, 2),
                                   arguments(op, kind, 2, G + 1), "cuda"))
    for index, module in enumerate(modules):
        src = tmp_path / f"r{index}.cu"
        src.write_text(module.source)
        done = subprocess.run(["nvcc", "-arch=sm_90", "--fmad=false", "-diag-suppress", "177",
                               "-c", "-o", str(tmp_path / f"r{index}.o"), str(src)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
