"""black-scholes: European call and put prices (ALPyNA benchmark).

The cumulative normal distribution uses the Abramowitz-Stegun polynomial, with an ``if`` for
the sign of its argument (if-conversion at work).
"""

import math

import numpy as np

from examples.harness import run_example
from specializers.loopnest import LoopKernel

RSQRT2PI = 0.39894228040143267794
A1, A2, A3, A4, A5 = 0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429


class BlackScholes(LoopKernel):
    def kernel(self, call, put, S, X, T, r, v):
        for i in range(S.shape[0]):
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


def make_inputs(n=200_000, seed=0):
    rng = np.random.default_rng(seed)
    S = rng.uniform(5.0, 30.0, n)
    X = rng.uniform(1.0, 100.0, n)
    T = rng.uniform(0.25, 10.0, n)
    return np.zeros(n), np.zeros(n), S, X, T, 0.02, 0.30


def _cnd(d):
    k = 1.0 / (1.0 + 0.2316419 * np.abs(d))
    w = RSQRT2PI * np.exp(-0.5 * d * d) * (k * (A1 + k * (A2 + k * (A3 + k * (A4 + k * A5)))))
    return np.where(d > 0, 1.0 - w, w)


def numpy_reference(call, put, S, X, T, r, v):
    sqrt_t = np.sqrt(T)
    d1 = (np.log(S / X) + (r + 0.5 * v * v) * T) / (v * sqrt_t)
    d2 = d1 - v * sqrt_t
    c1, c2 = _cnd(d1), _cnd(d2)
    discount = np.exp(-r * T)
    call[:] = S * c1 - X * discount * c2
    put[:] = X * discount * (1.0 - c2) - S * (1.0 - c1)
    return None, (call, put, S, X, T, r, v)


def main(n=200_000, python=True, backend=None):
    return run_example("black-scholes", BlackScholes, make_inputs(n), numpy_reference,
                       python=python, backend=backend)


if __name__ == "__main__":
    print(main().line())
