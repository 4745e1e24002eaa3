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


def test_non_affine_bounds_become_counted_loops():
    """(``counted``) The loop's variable is a value of the nest, its subscripts non-affine."""
    def k(self, A, n):
        for i in range(n):
            for j in range(i * i):
                A[j] = 0

    analysis = analyse_kernel(k).nests[0]
    assert [info.var for info in analysis.access.loops] == ["i", "__asp_wb0"]
    (write,) = [a for st in analysis.access.statements for a in st.accesses if a.write]
    assert write.subscripts == (None,)


def test_access_analysis_itself_rejects_non_affine_bounds():
    from specializers.loopnest import dast as d
    from specializers.loopnest.access import access_info
    from specializers.loopnest.names import nest_names

    i = d.Var("i")
    inner = d.Loop("j", d.Const(0), d.BinOp("*", i, i), d.Const(1),
                   (d.Assign(d.ArrayRef("A", (d.Var("j"),)), d.Const(0), 0),), 1)
    nest = d.Nest(0, d.Loop("i", d.Const(0), d.Var("n"), d.Const(1), (inner,), 0))
    with pytest.raises(UnsupportedConstruct, match="not an affine function"):
        access_info(nest, nest_names(nest))
