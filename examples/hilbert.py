"""hilbert: the Hilbert matrix H[i, j] = 1 / (i + j + 1) (ALPyNA benchmark; 0-based)."""

import numpy as np

from examples.harness import run_example
from specializers.loopnest import LoopKernel


class Hilbert(LoopKernel):
    def kernel(self, H):
        rows, cols = H.shape
        for i in range(rows):
            for j in range(cols):
                H[i, j] = 1.0 / (i + j + 1)


def make_inputs(n=512, seed=0):
    return (np.zeros((n, n)),)


def numpy_reference(H):
    i, j = np.indices(H.shape)
    H[:] = 1.0 / (i + j + 1)
    return None, (H,)


def main(n=512, python=True, backend=None):
    return run_example("hilbert", Hilbert, make_inputs(n), numpy_reference, python=python,
                       backend=backend)


if __name__ == "__main__":
    print(main().line())
