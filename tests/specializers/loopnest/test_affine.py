"""affine: subscripts as sums of coefficient * loop variable, with symbolic coefficients."""

from specializers.loopnest import dast as d
from specializers.loopnest.affine import AffineBuilder, poly_of_constant

i, j, k, n = d.Var("i"), d.Var("j"), d.Var("k"), d.Var("n")
B = AffineBuilder(loop_vars=("i", "j"), invariants=("n", "k", "self.m"))


def add(*xs):
    out = xs[0]
    for x in xs[1:]:
        out = d.BinOp("+", out, x)
    return out


def test_symbolic_coefficient_and_offset():
    form = B.affine(add(d.BinOp("*", n, i), j, k))  # A[n*i + j + k]
    assert form.variables == ("i", "j")
    assert form.coeff("i").terms[0].atoms == (n,) and form.coeff("i").terms[0].coeff == 1
    assert form.coeff("j").constant == 1
    assert form.const.atoms() == {k}
    assert form.const.evaluate({k: 5}) == 5 and form.coeff("i").evaluate({n: 7}) == 7


def test_constants_fold_and_cancel():
    form = B.affine(d.BinOp("-", add(d.BinOp("*", d.Const(2), i), d.Const(3)), i))  # 2*i + 3 - i
    assert form.coeff("i").constant == 1 and form.const.constant == 3
    assert B.affine(d.BinOp("-", i, i)).terms == ()
    assert B.affine(d.UnaryOp("-", j)).coeff("j").constant == -1
    assert poly_of_constant(0).terms == () and poly_of_constant(4).constant == 4


def test_invariant_subexpressions_become_atoms():
    half = d.BinOp("//", n, d.Const(2))
    form = B.affine(add(i, half, d.Shape("A", 0), d.Var("self.m")))
    assert form.const.atoms() == {half, d.Shape("A", 0), d.Var("self.m")}
    product = B.affine(d.BinOp("*", d.BinOp("+", n, d.Const(1)), i))  # (n + 1) * i
    assert {m.atoms for m in product.coeff("i").terms} == {(n,), ()}


def test_not_affine():
    assert B.affine(d.BinOp("*", i, j)) is None                   # product of loop variables
    assert B.affine(d.BinOp("*", i, i)) is None
    assert B.affine(d.BinOp("%", i, d.Const(2))) is None
    assert B.affine(d.ArrayRef("idx", (i,))) is None              # indirect
    assert B.affine(d.Var("t")) is None                           # a scalar the nest computes
    assert B.affine(d.BinOp("+", i, d.Const(1.5))) is None        # a float index
