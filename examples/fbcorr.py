"""fbcorr: filter-bank correlation, a seven-deep loop nest (ALPyNA benchmark).

out[b, f, y, x] = sum over c, fy, fx of img[b, c, y + fy, x + fx] * filters[f, c, fy, fx]
"""

import numpy as np

from examples.harness import run_example
from specializers.loopnest import LoopKernel


class FBCorr(LoopKernel):
    def kernel(self, imgs, filters, out):
        for b in range(out.shape[0]):
            for f in range(out.shape[1]):
                for y in range(out.shape[2]):
                    for x in range(out.shape[3]):
                        for c in range(filters.shape[1]):
                            for fy in range(filters.shape[2]):
                                for fx in range(filters.shape[3]):
                                    out[b, f, y, x] += (imgs[b, c, y + fy, x + fx]
                                                        * filters[f, c, fy, fx])


def make_inputs(batch=2, channels=3, size=32, nfilters=8, fsize=5, seed=0):
    rng = np.random.default_rng(seed)
    out_size = size - fsize + 1
    return (rng.random((batch, channels, size, size)),
            rng.random((nfilters, channels, fsize, fsize)),
            np.zeros((batch, nfilters, out_size, out_size)))


def numpy_reference(imgs, filters, out):
    if out.size == 0:   # images smaller than the filters: no window, nothing to add
        return None, (imgs, filters, out)
    windows = np.lib.stride_tricks.sliding_window_view(imgs, filters.shape[2:], axis=(2, 3))
    out += np.einsum("bcyxij,fcij->bfyx", windows, filters)
    return None, (imgs, filters, out)


def main(batch=2, channels=3, size=32, nfilters=8, fsize=5, python=True, backend=None):
    return run_example("fbcorr", FBCorr, make_inputs(batch, channels, size, nfilters, fsize),
                       numpy_reference, python=python, backend=backend)


if __name__ == "__main__":
    print(main().line())
