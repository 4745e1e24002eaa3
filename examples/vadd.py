"""vadd: element-wise addition of two vectors, c = a + b (ALPyNA benchmark)."""

import numpy as np

from examples.harness import run_example
from specializers.loopnest import LoopKernel


class VAdd(LoopKernel):
    def kernel(self, a, b, c):
        for i in range(len(a)):
            c[i] = a[i] + b[i]


def make_inputs(n=1_000_000, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random(n), rng.random(n), np.zeros(n)


def numpy_reference(a, b, c):
    c[:] = a + b
    return None, (a, b, c)


def main(n=1_000_000, python=True, backend=None):
    return run_example("vadd", VAdd, make_inputs(n), numpy_reference, python=python, backend=backend)


if __name__ == "__main__":
    print(main().line())
