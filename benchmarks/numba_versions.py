"""The Numba side of ``bench_compiled``: the examples' loops under ``@njit`` and by hand under
``@njit(parallel=True)``.

``same_source(cls)`` compiles the kernel method of an example exactly as written (``self``
dropped, the example module's globals as constants) with ``@njit``: the serial comparison.

``PRANGE`` holds the examples written by hand for ``@njit(parallel=True)``, with ``prange``
on the loops the dependence analysis proves parallel, as an expert would write them: where the
source's outermost loop is sequential (gemm's ``k``, conv2d's filter loops) the parallel loop
is moved outermost (a legal interchange), since a ``prange`` inside a sequential loop forks
threads once per outer iteration. Numba parallelizes the outermost ``prange`` of a nest only.

Numba is imported on first use: it is a benchmark-only extra (``pip install -e .[bench]``).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import math
import textwrap
from typing import Any, Callable

from examples.black_scholes import A1, A2, A3, A4, A5, RSQRT2PI

_NUMBA: Any = None


def numba():
    global _NUMBA
    if _NUMBA is None:
        import numba as module

        _NUMBA = module
    return _NUMBA


def same_source(cls) -> Callable:
    """``@njit`` of the kernel method's own source, without ``self``."""
    func = cls.kernel.__wrapped__
    tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    definition = tree.body[0]
    definition.decorator_list = []
    definition.args.args = definition.args.args[1:]
    namespace = dict(importlib.import_module(func.__module__).__dict__)
    exec(compile(tree, inspect.getsourcefile(func), "exec"), namespace)  # noqa: S102
    return numba().njit(namespace[definition.name])


def _vadd(a, b, c):
    for i in _prange(len(a)):
        c[i] = a[i] + b[i]


def _saxpy(a, x, y):
    for i in _prange(x.shape[0]):
        y[i] = a * x[i] + y[i]


def _hilbert(H):
    rows, cols = H.shape
    for i in _prange(rows):
        for j in range(cols):
            H[i, j] = 1.0 / (i + j + 1)


def _jacobi(A, B):
    n, m = A.shape
    err = 0.0
    for i in _prange(1, n - 1):
        for j in range(1, m - 1):
            B[i, j] = 0.25 * (A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1])
            err = max(err, abs(B[i, j] - A[i, j]))
    return err


def _conway(board, out):
    n, m = board.shape
    for i in _prange(1, n - 1):
        for j in range(1, m - 1):
            neighbours = (board[i - 1, j - 1] + board[i - 1, j] + board[i - 1, j + 1]
                          + board[i, j - 1] + board[i, j + 1]
                          + board[i + 1, j - 1] + board[i + 1, j] + board[i + 1, j + 1])
            if board[i, j] == 1 and (neighbours < 2 or neighbours > 3):
                out[i, j] = 0
            elif board[i, j] == 0 and neighbours == 3:
                out[i, j] = 1
            else:
                out[i, j] = board[i, j]


def _mandelbrot(counts, xmin, xmax, ymin, ymax, max_iter):
    height, width = counts.shape
    dx = (xmax - xmin) / width
    dy = (ymax - ymin) / height
    for i in _prange(height):
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



def _black_scholes(call, put, S, X, T, r, v):
    for i in _prange(S.shape[0]):
        sqrt_t = math.sqrt(T[i])
        d1 = (math.log(S[i] / X[i]) + (r + 0.5 * v * v) * T[i]) / (v * sqrt_t)
        d2 = d1 - v * sqrt_t
        k1 = 1.0 / (1.0 + 0.2316419 * abs(d1))
        cnd1 = RSQRT2PI * math.exp(-0.5 * d1 * d1) * \
            (k1 * (A1 + k1 * (A2 + k1 * (A3 + k1 * (A4 + k1 * A5)))))
        if d1 > 0:
            cnd1 = 1.0 - cnd1
        k2 = 1.0 / (1.0 + 0.2316419 * abs(d2))
        cnd2 = RSQRT2PI * math.exp(-0.5 * d2 * d2) * \
            (k2 * (A1 + k2 * (A2 + k2 * (A3 + k2 * (A4 + k2 * A5)))))
        if d2 > 0:
            cnd2 = 1.0 - cnd2
        discount = math.exp(-r * T[i])
        call[i] = S[i] * cnd1 - X[i] * discount * cnd2
        put[i] = X[i] * discount * (1.0 - cnd2) - S[i] * (1.0 - cnd1)


def _gemm(alpha, C, A, B):
    for i in _prange(A.shape[0]):          # i moved outermost: k carries C[i, j]
        for k in range(A.shape[1]):
            for j in range(B.shape[1]):
                C[i, j] = C[i, j] + alpha * A[i, k] * B[k, j]


def _gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    n = A.shape[0]
    for i in _prange(n):
        for j in range(n):
            A[i, j] = A[i, j] + u1[i] * v1[j] + u2[i] * v2[j]
    for i in _prange(n):
        for j in range(n):
            x[i] = x[i] + beta * A[j, i] * y[j]
    for i in _prange(n):
        x[i] = x[i] + z[i]
    for i in _prange(n):
        for j in range(n):
            w[i] = w[i] + alpha * A[i, j] * x[j]


def _syr2k(alpha, beta, C, A, B):
    n, m = A.shape
    for i in _prange(n):
        for j in range(i + 1):
            C[i, j] *= beta
        for k in range(m):
            for j in range(i + 1):
                C[i, j] += A[j, k] * alpha * B[i, k] + B[j, k] * alpha * A[i, k]


def _conv2d(img, K, out):
    kh, kw = K.shape
    for m in _prange(out.shape[0]):         # m moved outermost: i, j carry out[m, n]
        for i in range(kh):
            for j in range(kw):
                for n in range(out.shape[1]):
                    out[m, n] += img[m + i, n + j] * K[kh - 1 - i, kw - 1 - j]


def _fbcorr(imgs, filters, out):
    for b in range(out.shape[0]):
        for f in range(out.shape[1]):
            for y in _prange(out.shape[2]):
                for x in range(out.shape[3]):
                    for c in range(filters.shape[1]):
                        for fy in range(filters.shape[2]):
                            for fx in range(filters.shape[3]):
                                out[b, f, y, x] += (imgs[b, c, y + fy, x + fx]
                                                    * filters[f, c, fy, fx])


def _prange(*args):  # replaced by numba.prange when compiled (see parallel())
    return range(*args)


_HAND = {"vadd": _vadd, "saxpy": _saxpy, "hilbert": _hilbert, "jacobi": _jacobi,
         "conway": _conway, "mandelbrot": _mandelbrot, "black_scholes": _black_scholes,
         "gemm": _gemm, "gemver": _gemver, "syr2k": _syr2k, "conv2d": _conv2d,
         "fbcorr": _fbcorr}


def parallel(name: str) -> Callable:
    """``@njit(parallel=True)`` of the hand-written version of example ``name``."""
    func = _HAND[name]
    namespace = dict(globals(), _prange=numba().prange)
    rebound = type(func)(func.__code__, namespace, func.__name__)
    return numba().njit(parallel=True)(rebound)


def hand_written(name: str) -> Callable:
    """The hand-written version as plain Python (for checking it against the example)."""
    return _HAND[name]
