"""jacobi: one Jacobi relaxation sweep on a 2-D grid and its largest change (ALPyNA benchmark)."""

import numpy as np

from examples.harness import run_example
from specializers.loopnest import LoopKernel


class Jacobi(LoopKernel):
    def kernel(self, A, B):
        n, m = A.shape
        err = 0.0
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                B[i, j] = 0.25 * (A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1])
                err = max(err, abs(B[i, j] - A[i, j]))
        return err


def make_inputs(n=512, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.random((n, n))
    return A, A.copy()


def numpy_reference(A, B):
    B[1:-1, 1:-1] = 0.25 * (A[:-2, 1:-1] + A[2:, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:])
    err = float(np.max(np.abs(B[1:-1, 1:-1] - A[1:-1, 1:-1]), initial=0.0))
    return err, (A, B)


def main(n=512, python=True, backend=None):
    return run_example("jacobi", Jacobi, make_inputs(n), numpy_reference, python=python,
                       backend=backend)


if __name__ == "__main__":
    print(main().line())
