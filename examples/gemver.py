"""gemver (Polybench): A += u1 v1^T + u2 v2^T; x += beta A^T y + z; w += alpha A x."""

import numpy as np

from examples.harness import run_example
from specializers.loopnest import LoopKernel


class Gemver(LoopKernel):
    def kernel(self, alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
        n = A.shape[0]
        for i in range(n):
            for j in range(n):
                A[i, j] = A[i, j] + u1[i] * v1[j] + u2[i] * v2[j]
        for i in range(n):
            for j in range(n):
                x[i] = x[i] + beta * A[j, i] * y[j]
        for i in range(n):
            x[i] = x[i] + z[i]
        for i in range(n):
            for j in range(n):
                w[i] = w[i] + alpha * A[i, j] * x[j]


def make_inputs(n=256, seed=0):
    rng = np.random.default_rng(seed)
    vec = lambda: rng.random(n)  # noqa: E731
    return (1.5, 1.2, rng.random((n, n)), vec(), vec(), vec(), vec(), np.zeros(n), vec(), vec(),
            vec())


def numpy_reference(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    A += np.outer(u1, v1) + np.outer(u2, v2)
    x += beta * (A.T @ y) + z
    w += alpha * (A @ x)
    return None, (alpha, beta, A, u1, v1, u2, v2, w, x, y, z)


def main(n=256, python=True, backend=None):
    return run_example("gemver", Gemver, make_inputs(n), numpy_reference, python=python,
                       backend=backend)


if __name__ == "__main__":
    print(main().line())
