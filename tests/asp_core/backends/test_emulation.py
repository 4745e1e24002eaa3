"""backends.emulation: CUDA kernels run on the CPU, one thread at a time, over grid and blocks."""

import numpy as np
import pytest

from asp_core.backends import emulation
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


def test_refuses_what_one_thread_at_a_time_cannot_run():
    with pytest.raises(UnsupportedConstruct, match="__syncthreads"):
        emulation.emulate_cuda_module(SAXPY + "__global__ void s(){ __syncthreads(); }")
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
