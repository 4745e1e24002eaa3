"""mandelbrot: escape-time counts of z = z*z + c over a grid (ALPyNA benchmark).

Written without ``break``: the iteration keeps going but stops changing once |z| > 2, as
if-conversion would write it.
"""

import numpy as np

from examples.harness import run_example
from specializers.loopnest import LoopKernel


class Mandelbrot(LoopKernel):
    def kernel(self, counts, xmin, xmax, ymin, ymax, max_iter):
        height, width = counts.shape
        dx = (xmax - xmin) / width
        dy = (ymax - ymin) / height
        for i in range(height):
            for j in range(width):
                cr = xmin + j * dx
                ci = ymin + i * dy
                zr = 0.0
                zi = 0.0
                count = 0
                for k in range(max_iter):
                    if zr * zr + zi * zi <= 4.0:
                        t = zr * zr - zi * zi + cr
                        zi = 2.0 * zr * zi + ci
                        zr = t
                        count += 1
                counts[i, j] = count


def make_inputs(n=256, max_iter=64, seed=0):
    return np.zeros((n, n), dtype=np.int32), -2.0, 1.0, -1.5, 1.5, max_iter


def numpy_reference(counts, xmin, xmax, ymin, ymax, max_iter):
    height, width = counts.shape
    dx, dy = (xmax - xmin) / width, (ymax - ymin) / height
    cr = xmin + np.arange(width) * dx
    ci = ymin + np.arange(height) * dy
    cr, ci = np.meshgrid(cr, ci)
    zr, zi = np.zeros_like(cr), np.zeros_like(ci)
    n = np.zeros(counts.shape, dtype=np.int32)
    for _ in range(max_iter):
        inside = zr * zr + zi * zi <= 4.0
        t = zr * zr - zi * zi + cr
        zi = np.where(inside, 2.0 * zr * zi + ci, zi)
        zr = np.where(inside, t, zr)
        n += inside
    counts[:] = n
    return None, (counts, xmin, xmax, ymin, ymax, max_iter)


def main(n=256, max_iter=64, python=True, backend=None):
    return run_example("mandelbrot", Mandelbrot, make_inputs(n, max_iter), numpy_reference,
                       python=python, backend=backend)


if __name__ == "__main__":
    print(main().line())
