"""conv-2d: 'valid' 2-D convolution of an image with an M x M kernel (ALPyNA benchmark).

The kernel-offset loops are outermost, as in the paper: they carry the accumulation into
``out``; the output loops inside them are parallel.
"""

import numpy as np

from examples.harness import run_example
from specializers.loopnest import LoopKernel


class Conv2D(LoopKernel):
    def kernel(self, img, K, out):
        kh, kw = K.shape
        for i in range(kh):
            for j in range(kw):
                for m in range(out.shape[0]):
                    for n in range(out.shape[1]):
                        out[m, n] += img[m + i, n + j] * K[kh - 1 - i, kw - 1 - j]


def make_inputs(n=256, k=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n + k - 1, n + k - 1)), rng.random((k, k)), np.zeros((n, n))


def numpy_reference(img, K, out):
    windows = np.lib.stride_tricks.sliding_window_view(img, K.shape)
    out += np.einsum("mnij,ij->mn", windows, K[::-1, ::-1])
    return None, (img, K, out)


def main(n=256, k=5, python=True, backend=None):
    return run_example("conv-2d", Conv2D, make_inputs(n, k), numpy_reference, python=python,
                       backend=backend)


if __name__ == "__main__":
    print(main().line())
