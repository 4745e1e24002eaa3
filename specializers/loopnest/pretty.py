"""Python-syntax text of DAST expressions and statements (for reports and the Python executor).

``expression(e)`` is valid Python that computes ``e`` given the names it reads; intrinsics are
printed under their canonical names (``math.sqrt``, ``numpy.exp``), which the caller binds.
Parentheses follow Python's precedence rules, so the text reads as the user would write it.
"""

from __future__ import annotations

from asp_core.visitors import NodeVisitor

from . import dast as d


_PREC = {"or": 1, "and": 2, "not": 3, "cmp": 4, "+": 6, "-": 6, "*": 7, "/": 7, "//": 7,
         "%": 7, "unary": 8, "**": 9}
_ATOM = 10


class PythonExpression(NodeVisitor):
    """Prints an expression with the parentheses Python's precedence needs (and no more);
    ``name`` maps a variable or array name, ``call`` a canonical function name, to text."""

    def __init__(self, name=lambda n: n, call=lambda f: f):
        self.name = name
        self.call = call

    def text(self, expr: d.Expr) -> str:
        return self.visit(expr)[0]

    def wrap(self, expr: d.Expr, minimum: int) -> str:
        text, prec = self.visit(expr)
        return f"({text})" if prec < minimum else text

    def visit_Const(self, node: d.Const):
        value = node.value
        if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
            return f"float({str(value)!r})", _ATOM
        return repr(value), (_ATOM if not (isinstance(value, (int, float)) and value < 0)
                             else _PREC["unary"])

    def visit_Var(self, node: d.Var):
        return self.name(node.name), _ATOM

    def visit_ArrayRef(self, node: d.ArrayRef):
        index = ", ".join(self.text(i) for i in node.index) or "()"  # a 0-d array: A[()]
        return f"{self.name(node.array)}[{index}]", _ATOM

    def visit_Shape(self, node: d.Shape):
        return f"{self.name(node.array)}.shape[{node.dim}]", _ATOM

    def visit_BinOp(self, node: d.BinOp):
        prec = _PREC[node.op]
        if node.op == "**":  # right-associative, binds tighter than unary minus on its left
            return f"{self.wrap(node.left, _ATOM)} ** {self.wrap(node.right, _PREC['unary'])}", prec
        return f"{self.wrap(node.left, prec)} {node.op} {self.wrap(node.right, prec + 1)}", prec

    def visit_UnaryOp(self, node: d.UnaryOp):
        if node.op == "not":
            return f"not {self.wrap(node.operand, _PREC['not'])}", _PREC["not"]
        return f"{node.op}{self.wrap(node.operand, _PREC['unary'])}", _PREC["unary"]

    def visit_Compare(self, node: d.Compare):
        prec = _PREC["cmp"]
        return f"{self.wrap(node.left, prec + 1)} {node.op} {self.wrap(node.right, prec + 1)}", prec

    def visit_BoolOp(self, node: d.BoolOp):
        prec = _PREC[node.op]
        return f" {node.op} ".join(self.wrap(v, prec + 1) for v in node.values), prec

    def visit_IfExp(self, node: d.IfExp):
        return (f"{self.wrap(node.body, 1)} if {self.wrap(node.test, 1)} else "
                f"{self.wrap(node.orelse, 0)}"), 0

    def visit_Call(self, node: d.Call):
        return f"{self.call(node.func)}({', '.join(self.text(a) for a in node.args)})", _ATOM


def _display(name: str) -> str:
    from .counted import display_name

    return display_name(name)


_PLAIN = PythonExpression(name=_display)


def expression(expr: d.Expr) -> str:
    """Readable Python text of ``expr``."""
    return _PLAIN.text(expr)


def statement(stmt: d.Assign) -> str:
    """Readable text of an assignment, with its augmented form and predicate."""
    target = expression(stmt.target)
    if stmt.kind == "break":
        text = "break"
    elif stmt.aug and isinstance(stmt.value, d.BinOp):
        text = f"{target} {stmt.aug}= {expression(stmt.value.right)}"
    else:
        text = f"{target} = {expression(stmt.value)}"
    return f"{text}  [if {stmt.predicate}]" if stmt.predicate else text
