"""analysis.dependence: per pair of references, the direction vectors (or independence) and
which test decided, on kernels whose answer is known."""

import numpy as np

from specializers.loopnest.pipeline import analyse_kernel


def plan_of(kernel, **values):
    a = analyse_kernel(kernel).nests[0]
    for name in a.names.outputs:
        values.setdefault(name, None)
    return a.plan(a.binder.key(tuple(values[n] for n in a.names.inputs)))


def outcomes(plan):
    return [(p.first, p.second, p.outcome) for p in plan.graph.pairs]


def edges(plan, variable=None):
    return {(e.source, e.sink, e.kind, e.vector, e.level, e.distance)
            for e in plan.graph.edges if variable in (None, e.variable)}


def test_strong_siv_distance_and_direction():
    def kernel(self, A, n, k):
        for i in range(n):
            A[i + k] = A[i] + 1.0

    plan = plan_of(kernel, A=np.zeros(40), n=30, k=8)
    assert edges(plan) == {(0, 0, "flow", ("<",), 1, (8,))}
    assert "strong SIV" in outcomes(plan)[0][2]
    assert edges(plan_of(kernel, A=np.zeros(80), n=30, k=40)) == set()   # |k| >= n

    def reads_ahead(self, A, n, k):
        for i in range(n):
            A[i] = A[i + k] + 1.0

    plan = plan_of(reads_ahead, A=np.zeros(40), n=30, k=3)                 # anti, distance 3
    assert edges(plan) == {(0, 0, "anti", ("<",), 1, (3,))}
    # A[i - 3] with i from 0 wraps around for i < 3 (Python's negative indices): the analysis
    # cannot use an affine form and assumes every direction.
    wrapped = plan_of(kernel, A=np.zeros(40), n=30, k=-3)
    assert {e[2] for e in edges(wrapped)} == {"flow", "anti", "output"}


def test_ziv_and_gcd():
    def kernel(self, A, B, n):
        for i in range(n):
            A[i, 0] = A[i, 1]
            B[2 * i] = B[2 * i + 1]

    plan = plan_of(kernel, A=np.zeros((20, 2)), B=np.zeros(20), n=5)
    assert edges(plan) == set()
    texts = " ".join(o for _, _, o in outcomes(plan))
    assert "ZIV" in texts and "GCD" in texts and "decided once" in texts


def test_weak_zero_and_weak_crossing():
    def kernel(self, A, B, n):
        for i in range(n):
            A[i] = A[0] + 1.0           # weak-zero: reads A[0], written at i == 0 only
            B[i] = B[n - 1 - i]         # weak-crossing

    plan = plan_of(kernel, A=np.zeros(6), B=np.zeros(6), n=6)
    a = edges(plan, "A")
    assert (0, 0, "flow", ("<",), 1, (None,)) in a and all(e[3] == ("<",) for e in a)
    b = edges(plan, "B")
    assert {e[2] for e in b} == {"flow", "anti"} and all(e[4] == 1 for e in b)


def test_coupled_subscripts_are_intersected():
    def kernel(self, A, n):
        for i in range(n):
            A[i, i] = A[i + 1, i] + 1.0   # dims disagree: never the same element

    assert edges(plan_of(kernel, A=np.zeros((10, 10)), n=8)) == set()


def test_triangular_transpose_is_independent_by_fourier_motzkin():
    def kernel(self, A, n):
        for i in range(n):
            for j in range(i):
                A[i, j] = A[j, i]        # lower triangle from the upper: no overlap

    plan = plan_of(kernel, A=np.zeros((6, 6)), n=6)
    assert edges(plan) == set()
    assert "Fourier-Motzkin" in outcomes(plan)[0][2]


def test_miv_with_banerjee():
    def kernel(self, A, n):
        for i in range(n):
            for j in range(n):
                A[i + j] = A[i + j + 2 * n] + 1.0   # ranges [0, 2n-2] and [2n, 4n-2]

    plan = plan_of(kernel, A=np.zeros(40), n=5)
    assert {e[2] for e in edges(plan)} == {"output"}  # only the write with itself (i+j = i'+j')
    assert any("independent (Banerjee)" in o for _, _, o in outcomes(plan))


def test_unknown_subscripts_assume_every_direction():
    def kernel(self, A, idx, n):
        for i in range(n):
            A[idx[i]] = A[i] + 1.0

    e = edges(plan_of(kernel, A=np.zeros(6), idx=np.arange(6), n=6), "A")
    assert {x[2] for x in e} == {"flow", "anti", "output"}


def test_arrays_passed_twice_are_one_array():
    def kernel(self, A, B, n):
        for i in range(n - 1):
            A[i + 1] = B[i] * 2.0

    X = np.zeros(10)
    assert edges(plan_of(kernel, A=np.zeros(10), B=np.zeros(10), n=9)) == set()
    assert edges(plan_of(kernel, A=X, B=X, n=9)) == {(0, 0, "flow", ("<",), 1, (1,))}
    overlapping = plan_of(kernel, A=X[1:], B=X[:-1], n=8)
    assert any("may overlap" in o for _, _, o in outcomes(overlapping))
    assert edges(overlapping)
