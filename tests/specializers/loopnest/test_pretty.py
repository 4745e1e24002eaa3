"""pretty: Python text of DAST nodes with only the parentheses precedence needs."""

import pytest

from specializers.loopnest import dast as d
from specializers.loopnest.pretty import expression, statement

a, b, c = d.Var("a"), d.Var("b"), d.Var("c")


@pytest.mark.parametrize("expr, text", [
    (d.BinOp("*", d.BinOp("+", a, b), c), "(a + b) * c"),
    (d.BinOp("+", a, d.BinOp("*", b, c)), "a + b * c"),
    (d.BinOp("-", a, d.BinOp("-", b, c)), "a - (b - c)"),
    (d.BinOp("**", d.UnaryOp("-", a), b), "(-a) ** b"),
    (d.UnaryOp("-", d.BinOp("**", a, b)), "-a ** b"),
    (d.BoolOp("or", (d.BoolOp("and", (a, b)), c)), "a and b or c"),
    (d.UnaryOp("not", d.Compare("<", a, b)), "not a < b"),
    (d.IfExp(a, b, c), "b if a else c"),
    (d.Call("math.sqrt", (d.ArrayRef("A", (a, d.Const(1))),)), "math.sqrt(A[a, 1])"),
    (d.Const(float("inf")), "float('inf')"),
])
def test_expressions(expr, text):
    assert expression(expr) == text
    compile(text, "<pretty>", "eval")  # valid Python


def test_statements():
    st = d.Assign(d.Var("s"), d.BinOp("+", d.Var("s"), a), 0, predicate="__asp_p1", aug="+")
    assert statement(st) == "s += a  [if __asp_p1]"
