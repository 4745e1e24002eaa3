"""saxpy: y = a*x + y on 32-bit floats (ALPyNA benchmark)."""

import numpy as np

from examples.harness import run_example
from specializers.loopnest import LoopKernel


class Saxpy(LoopKernel):
    def kernel(self, a, x, y):
        for i in range(x.shape[0]):
            y[i] = a * x[i] + y[i]


def make_inputs(n=1_000_000, seed=0):
    rng = np.random.default_rng(seed)
    return (np.float32(2.5), rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32))


def numpy_reference(a, x, y):
    y[:] = a * x + y
    return None, (a, x, y)


def main(n=1_000_000, python=True, backend=None):
    return run_example("saxpy", Saxpy, make_inputs(n), numpy_reference, python=python,
                       backend=backend)


if __name__ == "__main__":
    print(main().line())
