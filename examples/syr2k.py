"""syr2k (Polybench): C = alpha A B^T + alpha B A^T + beta C, on the lower triangle of C."""

import numpy as np

from examples.harness import run_example
from specializers.loopnest import LoopKernel


class Syr2k(LoopKernel):
    def kernel(self, alpha, beta, C, A, B):
        n, m = A.shape
        for i in range(n):
            for j in range(i + 1):
                C[i, j] *= beta
            for k in range(m):
                for j in range(i + 1):
                    C[i, j] += A[j, k] * alpha * B[i, k] + B[j, k] * alpha * A[i, k]


def make_inputs(n=128, m=96, seed=0):
    rng = np.random.default_rng(seed)
    return 1.5, 1.2, rng.random((n, n)), rng.random((n, m)), rng.random((n, m))


def numpy_reference(alpha, beta, C, A, B):
    full = alpha * (A @ B.T) + alpha * (B @ A.T) + beta * C
    lower = np.tril(np.ones(C.shape, dtype=bool))
    C[lower] = full[lower]
    return None, (alpha, beta, C, A, B)


def main(n=128, m=96, python=True, backend=None):
    return run_example("syr2k", Syr2k, make_inputs(n, m), numpy_reference, python=python,
                       backend=backend)


if __name__ == "__main__":
    print(main().line())
