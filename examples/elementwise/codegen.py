"""Code generation: the element-wise DAST -> C, through the template ``elementwise.c.mako``.

Each expression becomes a C expression on doubles. Python's meaning is kept where C differs:
``//`` and ``%`` round toward minus infinity (NumPy's float rules), ``min``/``max`` return the
first argument unless the second compares greater/smaller, and each ``math`` call checks its
result as CPython does (NaN from a non-NaN argument: ValueError; infinity from a finite one:
OverflowError or ValueError), reporting the first error through an error code.
"""

from __future__ import annotations

import math
from pathlib import Path

from asp_core.templates import templates
from asp_core.visitors import NodeVisitor

from . import dast as d
from .lowering import FUNCTIONS

TEMPLATE_DIR = Path(__file__).resolve().parent
ERRORS = {1: (ValueError, "math domain error"), 2: (OverflowError, "math range error")}


class CExpression(NodeVisitor):
    """Prints a DAST expression as C."""

    def visit_Param(self, node: d.Param) -> str:
        return f"p_{node.name}"

    def visit_Local(self, node: d.Local) -> str:
        return f"v_{node.name}"

    def visit_Const(self, node: d.Const) -> str:
        value = float(node.value)
        if math.isnan(value):
            return "NAN"
        if math.isinf(value):
            return "INFINITY" if value > 0 else "(-INFINITY)"
        return repr(value)

    def visit_BinOp(self, node: d.BinOp) -> str:
        a, b = self.visit(node.left), self.visit(node.right)
        special = {"//": "asp_floordiv", "%": "asp_mod", "**": "pow"}
        if node.op in special:
            return f"{special[node.op]}({a}, {b})"
        return f"({a} {node.op} {b})"

    def visit_UnaryOp(self, node: d.UnaryOp) -> str:
        return f"({'!' if node.op == 'not' else node.op}{self.visit(node.operand)})"

    def visit_Compare(self, node: d.Compare) -> str:
        return f"(double)({self.visit(node.left)} {node.op} {self.visit(node.right)})"

    def visit_BoolOp(self, node: d.BoolOp) -> str:
        op = " && " if node.op == "and" else " || "
        return "(double)(" + op.join(self.visit(v) for v in node.values) + ")"

    def visit_IfExp(self, node: d.IfExp) -> str:
        return f"({self.visit(node.test)} ? {self.visit(node.body)} : {self.visit(node.orelse)})"

    def visit_Call(self, node: d.Call) -> str:
        args = [self.visit(a) for a in node.args]
        if node.func == "abs":
            return f"fabs({args[0]})"
        if node.func in ("min", "max"):
            return f"asp_{node.func}({args[0]}, {args[1]})"
        _, can_overflow = FUNCTIONS[node.func]
        check = "asp_check1" if len(args) == 1 else "asp_check2"
        return f"{check}({node.func}({', '.join(args)}), {', '.join(args)}, {int(can_overflow)}, err)"


def c_source(function: d.Function, entry: str, header: str) -> str:
    """The C module for ``function``: a scalar function and a loop over the arrays."""
    printer = CExpression()
    return templates([TEMPLATE_DIR]).render(
        "elementwise.c.mako", header=header, entry=entry, params=function.params,
        lets=[(let.name, printer.visit(let.value)) for let in function.lets],
        result=printer.visit(function.result))


def cdef(function: d.Function, entry: str) -> str:
    arrays = "".join(f", void *{p}" for p in function.params)
    return f"int {entry}(int64_t n, void *out{arrays});"
