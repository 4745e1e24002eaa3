"""The loop-nest DAST: frozen nodes for loop nests, predicated assignments and expressions.

Produced by ``lowering`` (one tree per top-level loop nest of a kernel), then rewritten by the
passes (``ifconvert`` removes ``If``, ``Break`` and ``Continue``: a ``break`` becomes an
``Assign`` of kind ``"break"``, which the code generators print as their own ``break``). Every
node may carry ``loc`` (file, line, column in the user's source), which ``==`` and ``dump()``
ignore.

Names: a ``Var`` is a scalar: a loop variable, a scalar the nest writes, or a loop-invariant
value read from the kernel's locals, closure or globals; ``self.x`` attributes appear as
``Var("self.x")``. Arrays are referred to by name in ``ArrayRef`` and ``Shape``.
"""

from __future__ import annotations

from dataclasses import dataclass

from asp_core.dast import Node


class Expr(Node):
    """Base of expressions."""


@dataclass(frozen=True)
class Const(Expr):
    value: int | float | bool


@dataclass(frozen=True)
class Var(Expr):
    name: str


@dataclass(frozen=True)
class ArrayRef(Expr):
    """One element of a NumPy array: ``A[i, j]`` (also written ``A[i][j]``)."""

    array: str
    index: tuple[Expr, ...]


@dataclass(frozen=True)
class Shape(Expr):
    """``A.shape[dim]`` (``len(A)`` is ``Shape(A, 0)``)."""

    array: str
    dim: int


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
    """Python's ``and``/``or``: the value is one of the operands, not necessarily a bool."""

    op: str  # and, or
    values: tuple[Expr, ...]


@dataclass(frozen=True)
class IfExp(Expr):
    test: Expr
    body: Expr
    orelse: Expr


@dataclass(frozen=True)
class Call(Expr):
    """A call of a pure function with a canonical name (see ``intrinsics``)."""

    func: str
    args: tuple[Expr, ...]


class Stmt(Node):
    """Base of statements."""


@dataclass(frozen=True)
class Assign(Stmt):
    """``target = value``, executed only where the predicate variable (if any) is true.

    ``aug`` records an augmented assignment as written (``"+"`` for ``+=``); ``value`` is then
    already the full right-hand side (``target + expr``). ``sid`` numbers statements in source
    order within the nest; ``kind`` is ``"user"``, ``"predicate"`` (a temporary made by
    if-conversion) or ``"break"``: where its predicate holds, the innermost enclosing loop ends
    (its target is a flag no statement reads; the code generators print a ``break``).
    """

    target: ArrayRef | Var
    value: Expr
    sid: int
    predicate: str | None = None
    aug: str | None = None
    kind: str = "user"


@dataclass(frozen=True)
class If(Stmt):
    """``if``/``else`` as written; removed by the if-conversion pass."""

    test: Expr
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]


@dataclass(frozen=True)
class Break(Stmt):
    """``break``: ends the innermost enclosing loop (removed by if-conversion)."""


@dataclass(frozen=True)
class Continue(Stmt):
    """``continue``: skips the rest of the innermost enclosing loop's iteration (removed by
    if-conversion: the statements after it run under a predicate)."""


#: The stop of the loop a ``while`` loop becomes (``for __asp_wN in range(0, WHILE_STOP)``
#: whose body starts with ``if not test: break``): no loop runs that long, and the cost
#: model counts such a loop as ``cost.domain.WHILE_TRIPS`` iterations.
WHILE_STOP = 2 ** 62


@dataclass(frozen=True)
class Loop(Stmt):
    """``for var in range(start, stop, step)``; ``lid`` numbers loops in source order.

    A loop that if-conversion found inside a branch runs only where ``predicate`` is true
    (so that, as in Python, its variable is not even assigned otherwise).
    """

    var: str
    start: Expr
    stop: Expr
    step: Expr
    body: tuple[Stmt, ...]
    lid: int
    predicate: str | None = None


@dataclass(frozen=True)
class Nest(Node):
    """One top-level loop nest of a kernel (``index`` counts nests in source order);
    ``reordered``: a call inlined into it evaluates its arguments in another order than Python
    would (``inlining``), so an error must be raised by the original code, run again."""

    index: int
    loop: Loop
    reordered: bool = False


def statements(node: Node) -> list[Assign]:
    """The assignments under ``node``, in source order."""
    return [n for n in node.walk() if isinstance(n, Assign)]


def exits(loop: Loop) -> list[Assign]:
    """The ``break`` statements that end ``loop`` (after if-conversion)."""
    return [s for s in loop.body if isinstance(s, Assign) and s.kind == "break"]


def map_loops(stmts: tuple[Stmt, ...], change) -> tuple[Stmt, ...]:
    """``stmts`` with each loop among them (those under an ``if`` too; not those inside a
    loop, which ``change`` handles) replaced by ``change(loop)``."""
    def one(stmt: Stmt) -> Stmt:
        if isinstance(stmt, Loop):
            return change(stmt)
        if isinstance(stmt, If):
            return stmt.replace(body=map_loops(stmt.body, change),
                                orelse=map_loops(stmt.orelse, change))
        return stmt

    return tuple(one(s) for s in stmts)


def loops(node: Node) -> list[Loop]:
    """The loops under ``node`` (itself included), in source order."""
    return [n for n in node.walk() if isinstance(n, Loop)]
