"""gemm: C = alpha * A @ B + C, written with k outermost as in ALPyNA's cost-model paper."""

import numpy as np

from examples.harness import run_example
from specializers.loopnest import LoopKernel


class Gemm(LoopKernel):
    def kernel(self, alpha, C, A, B):
        for k in range(A.shape[1]):
            for i in range(A.shape[0]):
                for j in range(B.shape[1]):
                    C[i, j] = C[i, j] + alpha * A[i, k] * B[k, j]


def make_inputs(n=128, seed=0):
    rng = np.random.default_rng(seed)
    return 1.5, rng.random((n, n)), rng.random((n, n)), rng.random((n, n))


def numpy_reference(alpha, C, A, B):
    C += alpha * (A @ B)
    return None, (alpha, C, A, B)


def main(n=128, python=True, backend=None):
    return run_example("gemm", Gemm, make_inputs(n), numpy_reference, python=python,
                       backend=backend)


if __name__ == "__main__":
    print(main().line())
