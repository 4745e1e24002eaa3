"""analysis.binding: run-time values -> normalized integer forms; wrap-around; aliasing."""

import numpy as np
import pytest

from asp_core.errors import UnsupportedArgument
from specializers.loopnest.analysis.binding import bind_nest
from specializers.loopnest.pipeline import analyse_kernel


def bound(kernel, **values):
    a = analyse_kernel(kernel).nests[0]
    for name in a.names.outputs:
        values.setdefault(name, None)
    inputs = tuple(values[n] for n in a.names.inputs)
    key = a.binder.key(inputs)
    return a, key, bind_nest(a.names, a.access, a.binder.atoms, key)


def test_negative_steps_and_triangular_bounds_in_normalized_space():
    def kernel(self, A, n):
        for i in range(n - 1, -1, -2):          # i = n-1, n-3, ...  i.e. i = n-1 - 2t
            for j in range(i, n):               # triangular
                A[i, j] = 0

    a, key, b = bound(kernel, A=np.zeros((7, 7)), n=7)
    outer, inner = b.loops[0], b.loops[1]
    assert outer.step == -2 and outer.t_max == 3 and (outer.v_low, outer.v_high) == (0, 6)
    assert inner.start.as_dict() == {0: -2} and inner.start.const == 6   # j starts at i
    assert inner.triangular and inner.t_max == 6
    (write,) = b.accesses[0]
    assert write.dims[0].as_dict() == {0: -2} and write.dims[0].const == 6
    assert write.dims[1].as_dict() == {0: -2, 1: 1} and write.dims[1].const == 6
    assert key.atoms == (7,) and key.shapes == ((7, 7),) and key.aliases == ()


def test_wrap_around_and_unknown_subscripts():
    def kernel(self, A, B, n, k):
        for i in range(n):
            A[-1 - i] = B[i - k]

    _, _, b = bound(kernel, A=np.zeros(5), B=np.zeros(5), n=5, k=2)
    read, write = b.accesses[0]
    assert write.dims[0].as_dict() == {0: -1} and write.dims[0].const == 4  # -1-i + 5
    assert read.dims[0] is None  # i - 2 changes sign: Python wraps some, not all


def test_aliases():
    def kernel(self, A, B, n):
        for i in range(n):
            A[i] = B[i + 1]

    X = np.zeros(10)
    _, key, b = bound(kernel, A=X, B=X, n=5)
    assert b.canonical == {"A": "A", "B": "A"} and not b.overlapping
    _, key, b = bound(kernel, A=X[1:], B=X[:-1], n=5)
    assert b.overlapping == {frozenset({"A", "B"})}
    _, key, b = bound(kernel, A=np.zeros(10), B=np.zeros(10), n=5)
    assert key.aliases == ()


def test_values_that_cannot_bind():
    def kernel(self, A, n):
        for i in range(n):
            A[i] = 0

    with pytest.raises(UnsupportedArgument, match="not an integer"):
        bound(kernel, A=np.zeros(3), n=2.5)

    def stepped(self, A, n, s):
        for i in range(0, n, s):
            A[i] = 0

    with pytest.raises(UnsupportedArgument, match="step is zero"):
        bound(stepped, A=np.zeros(3), n=3, s=0)
