"""What one instance of each statement does, counted by operation kind (static, per nest).

The per-instance costs of the ALPyNA cost model (``I_int(s)``, ``I_cpu(s)``) are sums over a
statement's operations of a time per *kind* of operation, measured per machine
(``cost.machine``). The kinds:

* ``load`` / ``store``: an array element read / written;
* ``index``: arithmetic inside subscripts (Python builds the index tuple; C strength-reduces);
* ``arith``: ``+ - *`` and unary minus; ``div``: ``/ // %``; ``pow``: ``**``;
* ``cmp``: comparisons; ``logic``: ``and or not`` and conditional expressions;
* ``math``: transcendental functions (``math.exp``, ``np.log`` ...), ``math_cheap``: those a
  C compiler turns into a few instructions (``sqrt``, ``fabs``, ``floor``, ``min``, ``max``,
  ``abs`` ...); ``conv``: ``int()``, ``float()``, ``bool()`` and NumPy type conversions;
* ``scalar``: a read or write of a scalar the nest keeps in a variable;
* ``arith_py``, ``div_py``, ``cmp_py`` (``PY_KINDS``, the interpreter's only): arithmetic,
  division and comparison of two Python scalars (ints, floats: values that never came from an
  array), which CPython computes without NumPy's scalar machinery, three times faster;
  compiled code prices them as ``arith``, ``div``, ``cmp``. Counted so only when the caller
  says which values are Python scalars (``weak``: from the call's types).

``statement_features(stmt)`` returns the counts of one statement; a statement under an ``if``
(a predicate) also reads its predicate. ``recurrence_ops(stmt)`` counts the operations between
a statement's read of its own target and its write (``w[i] = w[i] + a * x[j]``: one): where a
loop runs the statement again on the same element, each instance waits for the previous one
through them, and compiled code cannot overlap the instances (nor vectorize floating-point
ones without reordering their rounding). Pure functions of the DAST.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable

from .. import dast as d

KINDS = ("load", "store", "index", "arith", "div", "pow", "cmp", "logic", "math",
         "math_cheap", "conv", "scalar")
#: Kinds the interpreter prices apart (see the module), each with the kind it is otherwise.
PY_KINDS = {"arith_py": "arith", "div_py": "div", "cmp_py": "cmp"}
#: Counted too, but priced apart (``MachineParams.py_subscript_ns``): subscripts beyond the
#: first of an element access (Python builds and unpacks the index tuple).
SUBSCRIPT = "subscript"

#: Calls a C compiler makes into a few instructions.
CHEAP_CALLS = frozenset({
    "abs", "min", "max", "math.sqrt", "math.fabs", "math.floor", "math.ceil", "math.trunc",
    "math.copysign", "math.isnan", "math.isinf", "math.isfinite", "math.degrees", "math.radians",
    "numpy.sqrt", "numpy.abs", "numpy.absolute", "numpy.fabs", "numpy.floor", "numpy.ceil",
    "numpy.trunc", "numpy.minimum", "numpy.maximum", "numpy.fmin", "numpy.fmax",
    "numpy.copysign", "numpy.square", "numpy.sign", "numpy.isnan", "numpy.isinf",
    "numpy.isfinite", "numpy.degrees", "numpy.radians"})
CONVERSIONS = frozenset({
    "int", "float", "bool", "numpy.float32", "numpy.float64", "numpy.int8", "numpy.int16",
    "numpy.int32", "numpy.int64", "numpy.uint8", "numpy.uint16", "numpy.uint32",
    "numpy.uint64", "numpy.bool_"})
_ARITH = {"+": "arith", "-": "arith", "*": "arith", "/": "div", "//": "div", "%": "div",
          "**": "pow"}


@dataclass(frozen=True)
class Features:
    """Operation counts of one instance of a statement, as ``(kind, count)`` pairs."""

    counts: tuple[tuple[str, int], ...]
    math_calls: tuple[str, ...] = ()   # the transcendental functions called (vector loops)

    def __getitem__(self, kind: str) -> int:
        return dict(self.counts).get(kind, 0)

    def cost(self, ns: dict) -> float:
        """Nanoseconds per instance at ``ns`` per operation of each kind (a kind of
        ``PY_KINDS`` that ``ns`` does not price at the price of its general kind)."""
        return sum(n * ns.get(kind, ns.get(PY_KINDS.get(kind, kind), 0.0))
                   for kind, n in self.counts)


def statement_features(stmt: d.Assign, weak: Callable[[d.Expr], bool] | None = None
                       ) -> Features:
    """The counts of one instance of ``stmt``; ``weak(expr)``: whether the value of an
    operation is a Python scalar (then counted as one of ``PY_KINDS``)."""
    counts: Counter[str] = Counter()
    calls: list[str] = []

    def kind_of(expr: d.Expr, kind: str) -> str:
        return kind + "_py" if weak is not None and kind + "_py" in PY_KINDS and weak(expr) \
            else kind

    def visit(expr: d.Expr, index: bool = False) -> None:
        if isinstance(expr, d.ArrayRef):
            counts["load"] += 1
            counts[SUBSCRIPT] += max(0, len(expr.index) - 1)
            for sub in expr.index:
                visit(sub, True)
            return
        if isinstance(expr, d.Var):
            counts["scalar"] += 1
            return
        if isinstance(expr, (d.Const, d.Shape)):
            return
        if isinstance(expr, d.BinOp):
            counts["index" if index and expr.op in "+-*" else
                   kind_of(expr, _ARITH[expr.op])] += 1
        elif isinstance(expr, d.UnaryOp):
            counts["logic" if expr.op == "not" else "index" if index else
                   kind_of(expr, "arith")] += 1
        elif isinstance(expr, d.Compare):
            counts[kind_of(expr, "cmp")] += 1
        elif isinstance(expr, (d.BoolOp, d.IfExp)):
            counts["logic"] += 1
        elif isinstance(expr, d.Call):
            if expr.func in CONVERSIONS:
                counts["conv"] += 1
            elif expr.func in CHEAP_CALLS:
                counts["math_cheap"] += max(1, len(expr.args) - 1)
            else:
                counts["math"] += 1
                calls.append(expr.func)
        for child in expr.children():
            visit(child, index)

    visit(stmt.value)
    if isinstance(stmt.target, d.ArrayRef):  # (``A[i] += x`` is lowered as A[i] = A[i] + x)
        counts["store"] += 1
        counts[SUBSCRIPT] += max(0, len(stmt.target.index) - 1)
        for sub in stmt.target.index:
            visit(sub, True)
    else:
        counts["scalar"] += 1
    if stmt.predicate:
        counts["scalar"] += 1
    return Features(tuple(sorted(counts.items())), tuple(calls))


def recurrence_ops(stmt: d.Assign) -> int:
    """The most arithmetic operations (``+ - * /``, unary minus) on a path from a read of
    ``stmt``'s own target (the same scalar, or the same element written the same way) up to
    the value it assigns; 0 where the value does not read the target, or only through
    something else: a call or a selection (``max(t, x)``: a compare and a move of a cycle
    or two, which the loop's other work hides: jacobi's ``err``, priced as a chain, came out
    5 times its time) or a subscript (see the module)."""
    def depth(expr: d.Expr) -> int:   # -1: the target is not read below ``expr``
        if expr == stmt.target:
            return 0
        if not isinstance(expr, (d.BinOp, d.UnaryOp)) or expr.op in ("**", "not"):
            return -1
        below = max((depth(child) for child in expr.children()), default=-1)
        return below + 1 if below >= 0 else -1

    return max(depth(stmt.value), 0)
