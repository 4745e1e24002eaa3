"""ifconvert: if/elif/else -> predicate temporaries and predicated statements."""

from specializers.loopnest import dast as d
from specializers.loopnest.frontend import kernel_source
from specializers.loopnest.ifconvert import if_convert
from specializers.loopnest.lowering import lower_nest


def converted(func):
    src = kernel_source(func)
    return if_convert(lower_nest(src.ctx, src.nests[0], 0))


def test_if_elif_else_chain():
    def k(self, A, n):
        for i in range(n):
            if A[i] > 0:
                A[i] = 1
            elif A[i] < 0:
                A[i] = -1
            else:
                A[i] = 0

    body = converted(k).loop.body
    assert all(isinstance(s, d.Assign) for s in body) and [s.sid for s in body] == list(range(7))
    p1, s1, p2, p3, s2, p4, s3 = body
    assert p1.kind == "predicate" and p1.target == d.Var("__asp_p1") and p1.predicate is None
    assert s1.predicate == "__asp_p1"
    assert p2.value == d.UnaryOp("not", d.Var("__asp_p1"))
    # the elif's condition is evaluated only where the first test failed
    assert p3.value == d.BoolOp("and", (d.Var("__asp_p2"), d.Compare("<", d.ArrayRef("A", (d.Var("i"),)), d.Const(0))))
    assert s2.predicate == "__asp_p3" and s3.predicate == "__asp_p4"
    assert p4.value == d.BoolOp("and", (d.Var("__asp_p2"), d.UnaryOp("not", d.Var("__asp_p3"))))


def test_loop_inside_branch_carries_the_predicate():
    def k(self, A, n):
        for i in range(n):
            if i % 2 == 0:
                for j in range(n):
                    if A[j] > i:
                        A[j] = i

    outer = converted(k).loop
    pred, inner = outer.body
    assert inner.predicate == "__asp_p1"
    p2, st = inner.body
    assert p2.value == d.Compare(">", d.ArrayRef("A", (d.Var("j"),)), d.Var("i"))  # no P and ...
    assert st.predicate == "__asp_p2"
    assert not any(isinstance(n, d.If) for n in outer.walk())
