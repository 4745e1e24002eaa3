"""cost.domain: exact instance counts of triangular, stepped, reversed and empty loops, per
iteration of a loop, entries of a loop, and the sampled estimate beyond MAX_POINTS."""

import itertools

import numpy as np
import pytest

from specializers.loopnest.cost import domain
from specializers.loopnest.pipeline import analyse_kernel


def bound(kernel, **values):
    a = analyse_kernel(kernel).nests[0]
    inputs = tuple(values.get(n) for n in a.names.inputs)
    return a, a.plan(a.binder.key(inputs)).bound.loops


def lu_like(self, A, n, s):
    for k in range(n):
        for i in range(k + 1, n):
            for j in range(k + 1, n, s):
                A[i, j] = A[i, j] - A[i, k] * A[k, j]
        for i in range(n - 1, k, -3):
            A[i, 0] = 0.0


def brute(n: int, s: int) -> tuple[int, int]:
    first = sum(1 for k in range(n) for i in range(k + 1, n) for j in range(k + 1, n, s))
    second = sum(1 for k in range(n) for i in range(n - 1, k, -3))
    return first, second


@pytest.mark.parametrize("n, s", [(0, 1), (1, 1), (7, 1), (23, 2), (40, 5), (9, 100)])
def test_triangular_stepped_and_reversed_loops_are_counted_exactly(n, s):
    a, loops = bound(lu_like, A=np.zeros((max(n, 1), max(n, 1))), n=n, s=s)
    counts = [domain.count(st.loops, loops) for st in a.access.statements]
    assert [c.instances for c in counts] == list(brute(n, s))
    assert all(c.exact for c in counts)


def test_per_iteration_and_entries():
    n = 12
    a, loops = bound(lu_like, A=np.zeros((n, n)), n=n, s=1)
    chain = a.access.statements[0].loops
    per_k = domain.per_iteration(chain, loops, chain[0])
    assert per_k.tolist() == [(n - k - 1) ** 2 for k in range(n)]
    assert domain.entries(chain[2], loops).instances == sum(n - k - 1 for k in range(n))
    assert domain.entries(chain[0], loops).instances == 1


def test_beyond_max_points_the_count_is_sampled_and_close(monkeypatch):
    def pyramid(self, A, n):
        for i in range(n):
            for j in range(i):
                for k in range(j):
                    A[0] = 1.0

    monkeypatch.setattr(domain, "MAX_POINTS", 4000)
    n = 200
    a, loops = bound(pyramid, A=np.zeros(1), n=n)
    count = domain.count(a.access.statements[0].loops, loops)   # (i, j): 19900 points
    exact = sum(j for i in range(n) for j in range(i))
    assert not count.exact and abs(count.instances - exact) / exact < 0.05


def test_random_triangular_nests_against_enumeration():
    def kernel(self, A, n, m, c):
        for i in range(n):
            for j in range(i, m, c):
                for k in range(j - i, n + m - j):
                    A[0] = 1.0

    for n, m, c in itertools.product((0, 3, 8), (2, 9), (1, 2, 4)):
        a, loops = bound(kernel, A=np.zeros(1), n=n, m=m, c=c)
        want = sum(1 for i in range(n) for j in range(i, m, c) for k in range(j - i, n + m - j))
        assert domain.count(a.access.statements[0].loops, loops).instances == want, (n, m, c)


def test_per_iteration_of_every_loop_against_enumeration():
    """The uniform shortcut (a constant trip count nothing deeper depends on) and the
    enumeration agree with counting the instances per iteration by brute force, for every
    loop of rectangular, triangular and stepped nests."""
    def kernel(self, A, n, m, c):
        for i in range(n):
            for j in range(m):
                for k in range(i, n + m, c):
                    A[0] = 1.0

    for n, m, c in itertools.product((0, 1, 5), (1, 4), (1, 3)):
        a, loops = bound(kernel, A=np.zeros(1), n=n, m=m, c=c)
        chain = a.access.statements[0].loops
        points = [(i, j, (k - i) // c) for i in range(n) for j in range(m)
                  for k in range(i, n + m, c)]
        for depth, lid in enumerate(chain):
            got = domain.per_iteration(chain, loops, lid)
            size = max(loops[lid].t_max + 1, 0)
            want = np.bincount([p[depth] for p in points], minlength=size)[:size]
            assert got is not None and np.array_equal(got, want), (n, m, c, depth)
