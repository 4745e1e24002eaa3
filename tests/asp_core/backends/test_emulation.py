"""backends.emulation: CUDA kernels run on the CPU, one thread at a time, over grid and blocks;
kernels with barriers and shared memory run the threads of a block as fibers meeting at each
barrier."""

import types
from pathlib import Path

import numpy as np
import pytest

from asp_core.backends import emulation
from asp_core.backends.emulation import BarrierDivergence
from asp_core.errors import UnsupportedConstruct

SAXPY = """
extern "C" __global__ void saxpy(int n, float a, const float * __restrict__ x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""

GRID2D = """
__device__ double weight(int i, int j) { return 1.0 / (i + j + 1); }

extern "C" __global__ void hilbert(double *h, int rows, int cols) {
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows && j < cols) h[i * cols + j] = weight(i, j);
}

extern "C" __global__ void who(int *out) {
    int t = (blockIdx.x * blockDim.x + threadIdx.x);
    out[t] = gridDim.x * 1000 + blockDim.x * 100 + threadIdx.x * 10 + blockIdx.x;
}
"""


def test_guarded_1d_launch_with_padding():
    k = emulation.emulate_cuda_module(SAXPY).get_function("saxpy")
    x = np.arange(10, dtype=np.float32)
    y = np.ones(10, dtype=np.float32)
    k(np.int32(10), np.float32(2.0), x, y, grid=(3,), block=(4,))  # 12 threads, 10 elements
    np.testing.assert_array_equal(y, 2 * np.arange(10, dtype=np.float32) + 1)


def test_2d_grid_and_device_functions():
    k = emulation.emulate_cuda_module(GRID2D).get_function("hilbert")
    h = np.zeros((5, 7))
    k(h, 5, 7, grid=(2, 3, 1), block=(4, 2, 1))
    i, j = np.indices((5, 7))
    np.testing.assert_array_equal(h, 1.0 / (i + j + 1))


def test_builtin_variables_are_set():
    out = np.zeros(6, dtype=np.int32)
    emulation.emulate_cuda_module(GRID2D).get_function("who")(out, grid=(2,), block=(3,))
    assert out.tolist() == [2300, 2310, 2320, 2301, 2311, 2321]


def test_refuses_what_it_cannot_run():
    with pytest.raises(UnsupportedConstruct, match="templates"):
        emulation.emulate_cuda_module(SAXPY + "template <int N> __device__ int f() { return N; }")
    with pytest.raises(UnsupportedConstruct, match="dynamic shared memory"):
        emulation.emulate_cuda_module(SAXPY + "__global__ void s(float *a) { extern __shared__ "
                                      "float b[]; b[0] = a[0]; }")
    with pytest.raises(UnsupportedConstruct, match="no __global__"):
        emulation.emulate_cuda_module("__device__ int f() { return 1; }")


def test_argument_checks():
    k = emulation.emulate_cuda_module(SAXPY).get_function("saxpy")
    with pytest.raises(TypeError, match="takes 4 arguments"):
        k(1, 2.0, grid=(1,), block=(1,))
    with pytest.raises(TypeError, match="needs an array"):
        k(1, 2.0, [1.0], np.zeros(1, np.float32))
    with pytest.raises(KeyError):
        emulation.emulate_cuda_module(SAXPY).get_function("nope")


ORDER = """
__global__ void visit(long long *order, long long *counter, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) order[i] = atomicAdd(counter, 1LL);
}
"""


@pytest.mark.parametrize("seed", [0, 1, 7, 12345])
def test_seeded_launch_order_is_a_permutation_and_not_the_identity(seed):
    module = emulation.emulate_cuda_module(ORDER)
    module.set_order_seed(seed)
    n = 96
    order, counter = np.full(n, -1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    module.get_function("visit")(order, counter, n, grid=(4, 1, 1), block=(24, 1, 1))
    assert sorted(order) == list(range(n))             # every thread ran once
    assert (seed == 0) == (list(order) == list(range(n)))
    module.set_order_seed(0)


# -- barriers and shared memory -------------------------------------------------------------------

BLOCK_SUM = """
__device__ void meet() { __syncthreads(); }

extern "C" __global__ void __launch_bounds__(64) block_sum(const long long *x, long long *out,
                                                           unsigned *who, int n) {
    __shared__ long long part[64];
    const int t = threadIdx.x;
    const int i = blockIdx.x * blockDim.x + t;
    part[t] = i < n ? x[i] : 0;    /* every thread takes part, in range or not */
    __syncthreads();
    for (int d = 1; d < 64; d *= 2) {
        if (t % (2 * d) == 0) part[t] = part[t] * 3 + part[t + d];   /* order matters */
        meet();                     /* a barrier in a function the kernel calls */
    }
    if (t == 0) out[blockIdx.x] = part[0];
    who[i] = blockIdx.x * 1000 + threadIdx.x;   /* threadIdx as this thread's, after barriers */
}

extern "C" __global__ void plain(long long *x) { x[threadIdx.x] += 1; }
"""


def block_sum_model(x, blocks):
    """The block tree of BLOCK_SUM in Python."""
    out = []
    for b in range(blocks):
        part = [int(v) for v in x[b * 64:(b + 1) * 64]] + [0] * 64
        part = part[:64]
        d = 1
        while d < 64:
            for t in range(0, 64, 2 * d):
                part[t] = part[t] * 3 + part[t + d]
            d *= 2
        out.append(part[0])
    return out


def test_which_kernels_synchronize():
    assert emulation.synchronizing_kernels(BLOCK_SUM, ["block_sum", "plain"]) == {"block_sum"}
    assert emulation.synchronizing_kernels(SAXPY, ["saxpy"]) == set()
    macro = "#define SYNC() __syncthreads()\n" + SAXPY
    assert emulation.synchronizing_kernels(macro, ["saxpy"]) == {"saxpy"}   # unsure: all
    quoted = SAXPY.replace("{", '{ const char *s = "__syncthreads()"; // __syncthreads()\n', 1)
    assert emulation.synchronizing_kernels(quoted, ["saxpy"]) == set()


@pytest.mark.parametrize("seed", [0, 1, 7, 12345])
@pytest.mark.parametrize("n", [1, 63, 64, 200])
def test_a_block_tree_in_shared_memory_with_barriers(seed, n):
    module = emulation.emulate_cuda_module(BLOCK_SUM)
    module.set_order_seed(seed)
    blocks = -(-n // 64)
    x = np.random.default_rng(n).integers(-9, 9, size=blocks * 64).astype(np.int64)
    x[n:] = 0
    out, who = np.zeros(blocks, np.int64), np.zeros(blocks * 64, np.uint32)
    module.get_function("block_sum")(x, out, who, np.int32(n), grid=(blocks,), block=(64,))
    assert out.tolist() == block_sum_model(x, blocks)
    assert who.tolist() == [b * 1000 + t for b in range(blocks) for t in range(64)]
    y = np.zeros(8, np.int64)   # a kernel without barriers in the same module: as before
    module.get_function("plain")(y, grid=(3,), block=(8,))
    assert y.tolist() == [3] * 8
    module.set_order_seed(0)


MISSING_BARRIER = """
extern "C" __global__ void shift(const int *x, int *y, int with_barrier) {
    __shared__ int v[32];
    const int t = threadIdx.x;
    v[t] = x[t];
    if (with_barrier) __syncthreads();
    y[t] = t > 0 ? v[t - 1] : -1;
    __syncthreads();   /* (every thread reaches this one) */
    v[t] = -7;         /* what the next launch's readers must not see */
}
"""


def test_a_missing_barrier_is_caught_under_the_random_order():
    """Each thread reads its neighbour's element of shared memory: right with the barrier in
    every order; without it, right in order (the neighbour ran first) and wrong in some of
    the seeded orders."""
    module = emulation.emulate_cuda_module(MISSING_BARRIER)
    shift = module.get_function("shift")
    x = np.arange(100, 132, dtype=np.int32)
    want = [-1] + list(range(100, 131))
    caught = 0
    for seed in range(12):
        module.set_order_seed(seed)
        for barrier in (1, 0):
            y = np.zeros(32, np.int32)
            shift(x, y, np.int32(barrier), grid=(1,), block=(32,))
            if barrier or seed == 0:
                assert y.tolist() == want, (seed, barrier)
            else:
                caught += y.tolist() != want
    module.set_order_seed(0)
    assert caught >= 6, caught


DIVERGENT = """
extern "C" __global__ void early_return(int *x) {
    if (threadIdx.x >= 5) return;   /* the others wait for these forever on a GPU */
    __syncthreads();
    x[threadIdx.x] = 1;
}

extern "C" __global__ void two_barriers(int *x) {
    if (threadIdx.x % 2) { x[threadIdx.x] = 1; __syncthreads(); }
    else { __syncthreads(); x[threadIdx.x] = 2; }
}

extern "C" __global__ void uneven_loop(int *x) {
    for (int k = 0; k < (int)threadIdx.x; ++k) __syncthreads();
    x[threadIdx.x] = 3;
}

extern "C" __global__ void uniform(int *x) {
    for (int k = 0; k < 3; ++k) { x[threadIdx.x] += k; __syncthreads(); }
}
"""


@pytest.mark.parametrize("name", ["early_return", "two_barriers", "uneven_loop"])
@pytest.mark.parametrize("seed", [0, 3])
def test_divergent_barriers_raise_instead_of_hanging(name, seed):
    module = emulation.emulate_cuda_module(DIVERGENT)
    module.set_order_seed(seed)
    with pytest.raises(BarrierDivergence, match="not reached by every thread"):
        module.get_function(name)(np.zeros(16, np.int32), grid=(2,), block=(8,))
    x = np.zeros(8, np.int32)   # and the module still runs a kernel whose barriers are uniform
    module.get_function("uniform")(x, grid=(1,), block=(8,))
    assert x.tolist() == [3] * 8
    module.set_order_seed(0)


PHASES = """
extern "C" __global__ void phases(long long *before, long long *after, long long *counter) {
    const int t = threadIdx.x;
    before[t] = atomicAdd(counter, 1LL);
    __syncthreads();
    after[t] = atomicAdd(counter + 1, 1LL);
}
"""


def test_threads_go_on_from_a_barrier_in_a_new_seeded_order():
    module = emulation.emulate_cuda_module(PHASES)
    changed = False
    for seed in (0, 1, 7, 12345):
        module.set_order_seed(seed)
        before, after = np.zeros(24, np.int64), np.zeros(24, np.int64)
        module.get_function("phases")(before, after, np.zeros(2, np.int64), grid=(1,),
                                      block=(24,))
        assert sorted(before) == sorted(after) == list(range(24))
        assert (seed == 0) == (list(before) == list(range(24)) == list(after))
        changed |= list(before) != list(after)
    module.set_order_seed(0)
    assert changed


def test_launches_from_several_python_threads_take_turns():
    """The emulation's state (the block's shared memory, the fibers' scheduler) is one per
    module: launches from several threads run one at a time, each right."""
    import threading

    module = emulation.emulate_cuda_module(BLOCK_SUM)
    x = np.arange(256, dtype=np.int64) % 7
    want = block_sum_model(x, 4)
    wrong = []

    def work():
        for _ in range(10):
            out, who = np.zeros(4, np.int64), np.zeros(256, np.uint32)
            module.get_function("block_sum")(x, out, who, np.int32(256), grid=(4,), block=(64,))
            if out.tolist() != want:
                wrong.append(out.tolist())

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong


def test_the_prelude_is_precompiled_once_and_used(tmp_path, monkeypatch):
    """The emulation's system headers are precompiled once per compiler and flags (GCC's
    ``.gch``, in the disk cache) and the modules built with it run the same; another compiler,
    or a prelude that cannot be built, compiles without one."""
    import subprocess

    from asp_core.backends import c as c_backend

    monkeypatch.setenv("ASP_CACHE_DIR", str(tmp_path))
    compiler = c_backend.find_c_compiler(None, ("-O1",), "c++")
    flags = c_backend.precompiled_prelude(emulation.PRELUDE_HEADERS, compiler)
    assert flags[0] == "-include"
    assert Path(flags[1] + ".gch").is_file() and Path(flags[1]).is_relative_to(tmp_path)
    assert c_backend.precompiled_prelude(emulation.PRELUDE_HEADERS, compiler) == flags
    source = tmp_path / "probe.cc"   # GCC says "!" where it uses a precompiled header
    source.write_text("#include <cmath>\nint f(void) { return 0; }\n")
    done = subprocess.run([compiler.cc, *compiler.toolchain.cflags, *flags, "-H", "-c",
                           str(source), "-o", str(tmp_path / "probe.o")],
                          capture_output=True, text=True, check=True)
    assert done.stderr.startswith("! "), done.stderr[:300]
    test_guarded_1d_launch_with_padding()   # a module built with it runs
    clang = types.SimpleNamespace(cc="/usr/bin/clang++", language="c++",   # (never run)
                                  version="Debian clang version 14.0.6")
    assert c_backend.precompiled_prelude(emulation.PRELUDE_HEADERS, clang) == ()
    assert c_backend.precompiled_prelude(("no_such_header.h",), compiler) == ()
