"""Lowering: the Python AST of a scalar function -> the element-wise DAST.

Accepted: parameters, float/int/bool constants, locals assigned once (``t = ...``), one final
``return``; ``+ - * / // % **``, unary ``-``/``+``/``not``, comparisons, ``and``/``or`` of
comparisons, conditional expressions, ``abs``/``min``/``max`` and the ``math`` functions in
``FUNCTIONS``. Anything else raises ``UnsupportedConstruct`` naming the line.
"""

from __future__ import annotations

import ast
import builtins
import math
import operator

from asp_core.errors import UnsupportedConstruct
from asp_core.frontend import FunctionAST, free_variables
from asp_core.visitors import NodeVisitor

from . import dast as d

# name -> (arity, whether the result can overflow to infinity from a finite argument)
FUNCTIONS = {
    "sqrt": (1, False), "exp": (1, True), "log": (1, False), "log10": (1, False),
    "sin": (1, False), "cos": (1, False), "tan": (1, False), "tanh": (1, False),
    "atan": (1, False), "fabs": (1, False), "floor": (1, False), "ceil": (1, False),
    "hypot": (2, True), "atan2": (2, False),
}
BUILTINS = {"abs": 1, "min": 2, "max": 2}
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
           ast.Mod: "%", ast.Pow: "**"}
_PY_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.Pow: operator.pow}
_CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


def lower(fa: FunctionAST) -> d.Function:
    """The DAST of the scalar function ``fa`` (raises ``UnsupportedConstruct``)."""
    tree = fa.tree
    if isinstance(tree, ast.Lambda):
        body: list[ast.stmt] = [ast.Return(value=tree.body, lineno=tree.lineno,
                                           col_offset=tree.col_offset)]
    else:
        body = list(tree.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # docstring
    args = tree.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.defaults:
        raise UnsupportedConstruct("only plain positional parameters are supported",
                                   fa.location(tree), "parameters")
    params = tuple(a.arg for a in args.posonlyargs + args.args)
    lowering = _ExprLowering(fa, params, free_variables(fa.func, fa))
    lets = []
    for stmt in body[:-1]:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)):
            raise UnsupportedConstruct(f"unsupported statement {type(stmt).__name__}; only "
                                       "'name = expression' and a final return",
                                       fa.location(stmt), type(stmt).__name__)
        name = stmt.targets[0].id
        if name in lowering.locals or name in params:
            raise UnsupportedConstruct(f"'{name}' is assigned twice", fa.location(stmt),
                                       "reassignment")
        lets.append(d.Let(name, lowering.visit(stmt.value), loc=fa.location(stmt)))
        lowering.locals.add(name)
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        where = body[-1] if body else tree
        raise UnsupportedConstruct("the function must end with 'return <expression>'",
                                   fa.location(where), "return")
    result = lowering.visit(body[-1].value)
    return d.Function(fa.name, params, tuple(lets), result, loc=fa.location())


class _ExprLowering(NodeVisitor):
    def __init__(self, fa: FunctionAST, params: tuple[str, ...], free: dict):
        self.fa = fa
        self.params = params
        self.free = free
        self.locals: set[str] = set()

    def unsupported(self, node: ast.AST, what: str) -> UnsupportedConstruct:
        return UnsupportedConstruct(f"unsupported {what}", self.fa.location(node), what)

    def generic_visit(self, node):
        raise self.unsupported(node, f"construct {type(node).__name__}")

    def visit_Name(self, node: ast.Name) -> d.Expr:
        if node.id in self.params:
            return d.Param(node.id, loc=self.fa.location(node))
        if node.id in self.locals:
            return d.Local(node.id, loc=self.fa.location(node))
        value = self.free.get(node.id)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return d.Const(value, loc=self.fa.location(node))  # a global constant
        raise self.unsupported(node, f"name '{node.id}'")

    def visit_Constant(self, node: ast.Constant) -> d.Expr:
        if isinstance(node.value, (int, float, bool)):
            return d.Const(node.value if not isinstance(node.value, bool) else int(node.value),
                           loc=self.fa.location(node))
        raise self.unsupported(node, f"constant {node.value!r}")

    def visit_Attribute(self, node: ast.Attribute) -> d.Expr:
        if (isinstance(node.value, ast.Name) and self.free.get(node.value.id) is math
                and node.attr in ("pi", "e", "inf")):
            return d.Const(getattr(math, node.attr), loc=self.fa.location(node))
        raise self.unsupported(node, "attribute")

    def visit_BinOp(self, node: ast.BinOp) -> d.Expr:
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.unsupported(node, f"operator {type(node.op).__name__}")
        left, right = self.visit(node.left), self.visit(node.right)
        if isinstance(left, d.Const) and isinstance(right, d.Const):
            return self.fold(node, left.value, right.value)
        return d.BinOp(op, left, right, loc=self.fa.location(node))

    def fold(self, node: ast.BinOp, a, b) -> d.Const:
        """Constants combine with Python's own meaning (int arithmetic, ZeroDivisionError)."""
        try:
            value = _PY_OPS[type(node.op)](a, b)
        except ArithmeticError as exc:
            raise UnsupportedConstruct(f"constant expression raises {type(exc).__name__}: {exc}",
                                       self.fa.location(node), "constant") from exc
        if not isinstance(value, (int, float)):
            raise self.unsupported(node, f"constant expression of type {type(value).__name__}")
        return d.Const(value, loc=self.fa.location(node))

    def visit_UnaryOp(self, node: ast.UnaryOp) -> d.Expr:
        ops = {ast.USub: "-", ast.UAdd: "+", ast.Not: "not"}
        if type(node.op) not in ops:
            raise self.unsupported(node, f"operator {type(node.op).__name__}")
        operand = self.visit(node.operand)
        if isinstance(operand, d.Const) and type(node.op) in (ast.USub, ast.UAdd):
            # a signed constant is a constant (``-1.0 / (2.5 - 2.5)`` raises as Python does)
            value = -operand.value if isinstance(node.op, ast.USub) else +operand.value
            return d.Const(value, loc=self.fa.location(node))
        return d.UnaryOp(ops[type(node.op)], operand, loc=self.fa.location(node))

    def visit_Compare(self, node: ast.Compare) -> d.Expr:
        if len(node.ops) != 1 or type(node.ops[0]) not in _CMPOPS:
            raise self.unsupported(node, "comparison (only one of < <= > >= == != at a time)")
        return d.Compare(_CMPOPS[type(node.ops[0])], self.visit(node.left),
                         self.visit(node.comparators[0]), loc=self.fa.location(node))

    def visit_BoolOp(self, node: ast.BoolOp) -> d.Expr:
        values = tuple(self.visit(v) for v in node.values)
        if not all(isinstance(v, (d.Compare, d.BoolOp)) or
                   (isinstance(v, d.UnaryOp) and v.op == "not") for v in values):
            # Python's and/or return an operand, not a truth value: keep to truth values.
            raise self.unsupported(node, "and/or of values that are not comparisons")
        return d.BoolOp("and" if isinstance(node.op, ast.And) else "or", values,
                        loc=self.fa.location(node))

    def visit_IfExp(self, node: ast.IfExp) -> d.Expr:
        return d.IfExp(self.visit(node.test), self.visit(node.body), self.visit(node.orelse),
                       loc=self.fa.location(node))

    def visit_Call(self, node: ast.Call) -> d.Expr:
        if node.keywords:
            raise self.unsupported(node, "keyword arguments")
        func = node.func
        name = None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and self.free.get(func.value.id) is math and func.attr in FUNCTIONS:
            name = func.attr
            arity = FUNCTIONS[name][0]
        elif isinstance(func, ast.Name) and func.id in BUILTINS \
                and self.free.get(func.id) is getattr(builtins, func.id):
            name = func.id
            arity = BUILTINS[name]
        if name is None:
            raise self.unsupported(node, f"call of {ast.unparse(func)}")
        if len(node.args) != arity:
            raise self.unsupported(node, f"{name} with {len(node.args)} arguments")
        return d.Call(name, tuple(self.visit(a) for a in node.args), loc=self.fa.location(node))
