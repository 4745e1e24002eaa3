"""Value ranges of Python-int expressions, so that compiled code can skip checks it does not
need.

Python ints never overflow and ``x / 0`` raises; compiled code therefore checks each
operation between Python ints (``asp_add_py`` ...). Most of those operations combine loop
variables and small constants, whose values the binding knows at each call. A variant assumes
a *range class* for each loop variable, coarse enough to be shared by most calls:

* the low end is 0 (the variable never goes negative), -2**31, or unknown;
* the high end is 2**31, or unknown;

and the class is part of the variant's key (a call whose loops fall in other classes gets
another variant). Under those assumptions ``int_range`` bounds an integer expression by
interval arithmetic; an operation whose result interval lies inside int64 is computed without
the overflow check, a division whose divisor interval excludes 0 without the zero check.
Everything not understood (other scalars, shapes, array elements, calls) is unknown: the
whole int64 range, which keeps every check.
"""

from __future__ import annotations

from typing import Mapping

from .. import dast as d

INT64_MIN, INT64_MAX = -2**63, 2**63 - 1
SMALL = 2**31
Interval = tuple[int, int]
UNKNOWN: Interval = (INT64_MIN, INT64_MAX)


def loop_ranges(plan) -> tuple[tuple[str, int, int], ...]:
    """The range class of every loop variable of ``plan`` (hulled over loops sharing a
    name): ``(name, low, high)``, sorted; part of a variant's key."""
    hull: dict[str, Interval] = {}
    for loop in plan.bound.loops.values():
        low = 0 if loop.v_low >= 0 else -SMALL if loop.v_low >= -SMALL else INT64_MIN
        high = SMALL if loop.v_high <= SMALL else INT64_MAX
        if loop.var in hull:
            low, high = min(low, hull[loop.var][0]), max(high, hull[loop.var][1])
        hull[loop.var] = (low, high)
    return tuple(sorted((name, low, high) for name, (low, high) in hull.items()))


def fits(interval: Interval) -> bool:
    """Whether every value of ``interval`` is an int64."""
    return INT64_MIN <= interval[0] and interval[1] <= INT64_MAX


def excludes_zero(interval: Interval) -> bool:
    return interval[0] > 0 or interval[1] < 0


def int_range(expr: d.Expr, variables: Mapping[str, Interval]) -> Interval:
    """The exact interval of an integer expression's value (possibly beyond int64), given
    intervals for some variables. Operands beyond int64 are clamped: compiled code checks the
    operation that produced them, so a later operation never sees such a value."""
    if isinstance(expr, d.Const) and isinstance(expr.value, int):
        return (int(expr.value), int(expr.value))
    if isinstance(expr, d.Var):
        return variables.get(expr.name, UNKNOWN)
    if isinstance(expr, d.UnaryOp) and expr.op in "-+":
        low, high = _clamp(int_range(expr.operand, variables))
        return (-high, -low) if expr.op == "-" else (low, high)
    if isinstance(expr, d.BinOp) and expr.op in ("+", "-", "*", "//", "%"):
        a = _clamp(int_range(expr.left, variables))
        b = _clamp(int_range(expr.right, variables))
        if expr.op == "+":
            return (a[0] + b[0], a[1] + b[1])
        if expr.op == "-":
            return (a[0] - b[1], a[1] - b[0])
        if expr.op == "*":
            products = [x * y for x in a for y in b]
            return (min(products), max(products))
        if b[0] > 0:  # floor division and modulo by a positive divisor
            if expr.op == "//":
                return (min(a[0] // b[0], a[0] // b[1]), max(a[1] // b[0], a[1] // b[1]))
            return (0, b[1] - 1)
    return UNKNOWN


def _clamp(interval: Interval) -> Interval:
    return (max(interval[0], INT64_MIN), min(interval[1], INT64_MAX))
