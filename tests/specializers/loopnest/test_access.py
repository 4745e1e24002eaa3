"""access: per statement its loops and accesses (affine where possible); per loop its bounds."""

import pytest

from asp_core.errors import UnsupportedConstruct
from specializers.loopnest.pipeline import analyse_kernel


def nest0(func):
    return analyse_kernel(func).nests[0]


def test_accesses_and_bounds():
    def k(self, A, B, idx, n):
        for i in range(1, n):
            for j in range(i, 2 * n, 2):
                A[i, j] = B[idx[j], i - 1] + A[i, j]

    a = nest0(k)
    outer, inner = a.access.loops
    assert (outer.depth, inner.depth, inner.parent) == (1, 2, 0)
    assert inner.start.coeff("i").constant == 1 and inner.step.constant == 2
    (st,) = a.access.statements
    assert st.loops == (0, 1)
    arrays = [(x.array, x.write, x.affine) for x in st.accesses]
    assert arrays == [("idx", False, True), ("B", False, False), ("A", False, True),
                      ("A", True, True)]
    b = st.accesses[1]
    assert b.subscripts[0] is None and b.subscripts[1].const.constant == -1


def test_scalar_reads_and_writes():
    def k(self, A, n):
        for i in range(n):
            t = A[i]
            if t > 0:
                A[i] = t * 2

    sts = nest0(k).access.statements
    assert sts[0].scalar_write == "t" and sts[1].scalar_write == "__asp_p1"
    assert set(sts[2].scalar_reads) == {"t", "__asp_p1"} and sts[2].predicate == "__asp_p1"


def test_non_affine_bounds_are_rejected():
    def k(self, A, n):
        for i in range(n):
            for j in range(i * i):
                A[j] = 0

    rejected = analyse_kernel(k).nests[0]
    assert isinstance(rejected.error, UnsupportedConstruct)
    assert "not an affine function" in str(rejected.error)
