"""The element-wise map's domain AST: a scalar function of float64 arguments.

``Function(params, lets, result)``: each ``Let`` binds a local once; ``result`` is returned.
"""

from __future__ import annotations

from dataclasses import dataclass

from asp_core.dast import Node


class Expr(Node):
    """Base of expressions (all float64-valued, comparisons give 0 or 1)."""


@dataclass(frozen=True)
class Param(Expr):
    name: str


@dataclass(frozen=True)
class Local(Expr):
    name: str


@dataclass(frozen=True)
class Const(Expr):
    value: int | float  # as written (ints stay ints until folded or converted to double)


@dataclass(frozen=True)
class BinOp(Expr):
    op: str  # + - * / // % **
    left: Expr
    right: Expr


@dataclass(frozen=True)
class UnaryOp(Expr):
    op: str  # - + not
    operand: Expr


@dataclass(frozen=True)
class Compare(Expr):
    op: str  # < <= > >= == !=
    left: Expr
    right: Expr


@dataclass(frozen=True)
class BoolOp(Expr):
    op: str  # and, or (operands are comparisons)
    values: tuple[Expr, ...]


@dataclass(frozen=True)
class IfExp(Expr):
    test: Expr
    body: Expr
    orelse: Expr


@dataclass(frozen=True)
class Call(Expr):
    func: str  # a name from lowering.FUNCTIONS
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Let(Node):
    name: str
    value: Expr


@dataclass(frozen=True)
class Function(Node):
    name: str
    params: tuple[str, ...]
    lets: tuple[Let, ...]
    result: Expr
