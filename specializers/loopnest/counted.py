"""Loops whose bounds the analysis cannot express, as counted loops (before if-conversion).

The dependence analysis needs each loop's bounds as affine forms of the enclosing loop
variables and invariants. A loop whose start or stop is not one (``range(i // 2, n)``, the rows
of a sparse matrix ``range(ptr[r], ptr[r + 1])``, a bound the nest computes) is rewritten so
that nothing about it needs a form, with Python's meaning::

    __asp_bloN = int(start)             # evaluated once, when the loop starts, as range() does
    __asp_bhiN = int(stop)
    for __asp_wbN in range(0, WHILE_STOP):
        __asp_bv_v_N = __asp_bloN + __asp_wbN * step
        if not (__asp_bv_v_N < __asp_bhiN):    # ">" for a negative step
            break
        __asp_last_v = __asp_bv_v_N     # where the kernel reads v after the nest (``lastvalues``)
        ...the body, reading __asp_bv_v_N for v

``v`` is no longer a loop variable: subscripts that use it have no affine form, so every
analysis treats them conservatively (dependences assumed, indices checked when the code runs),
the loop runs sequentially (its ``break``), and the loops around it may still run in parallel
where the analysis proves it. ``int()`` of a bound that is not an integer is refused when the
types are known (``typeinfer``: Python's ``range()`` raises TypeError there). The step must be a
non-zero integer constant. A nest's own loop so rewritten runs inside a loop of one iteration
(its bounds must be computed inside the nest; it takes its loop id from ``ifconvert.renumber``,
which numbers every loop in source order).
"""

from __future__ import annotations

import re

import itertools

from asp_core.errors import UnsupportedConstruct
from asp_core.visitors import NodeTransformer

from . import dast as d
from .affine import AffineBuilder
from .lastvalues import shadow_of

BOUND_PREFIX = "__asp_b"
_VALUE = re.compile(r"__asp_bv_(.+)_[0-9]+")


def display_name(name: str) -> str:
    """The user's name for a variable of a counted loop's (``__asp_bv_k_3`` is ``k``), for
    messages; any other name as it is."""
    found = _VALUE.fullmatch(name)
    return found.group(1) if found else name
#: The kind of the assignments that evaluate a rewritten loop's bounds (``typeinfer`` checks
#: that they are integers).
BOUND = "bound"


def with_counted_loops(nest: d.Nest, while_prefix: str, live: frozenset[str]) -> d.Nest:
    """``nest`` with every loop whose bounds have no affine form rewritten (see the module);
    ``live``: the names the kernel reads after the nest."""
    loops = d.loops(nest.loop)
    written = {s.target.name for s in nest.walk()
               if isinstance(s, d.Assign) and isinstance(s.target, d.Var)}
    read = {n.name for n in nest.walk() if isinstance(n, d.Var)}
    loop_vars = {loop.var for loop in loops}
    demoted: set[str] = set()   # variables of loops rewritten: scalars now

    def expressible(loop: d.Loop) -> bool:
        variables = loop_vars - demoted
        builder = AffineBuilder(variables, read - written - loop_vars)
        for bound in (loop.start, loop.stop):
            if builder.affine(bound) is None:
                return False
            if any(isinstance(n, d.Var) and n.name in (written | demoted) for n in bound.walk()):
                return False
        return True

    counter = itertools.count()

    def rewrite(loop: d.Loop) -> tuple[d.Stmt, ...]:
        if expressible(loop):
            return (loop.replace(body=block(loop.body)),)
        step = _constant(loop.step)
        if step is None or step == 0:
            raise UnsupportedConstruct(
                "unsupported loop bound: the analysis cannot express it, and the step is not a "
                "non-zero integer constant", loop.loc, "loop bound")
        assigned = next((s for s in loop.walk() if isinstance(s, d.Assign)
                         and isinstance(s.target, d.Var) and s.target.name == loop.var), None)
        if assigned is not None:   # (as for any loop variable: ``names``)
            raise UnsupportedConstruct(
                f"unsupported assignment to loop variable: '{loop.var}' is the variable of a "
                "loop of this nest", assigned.loc, "assignment to loop variable")
        demoted.add(loop.var)   # (before the body: bounds inside that read it are counted too)
        k = next(counter)
        loc = loop.loc
        lo, hi = (d.Var(f"{BOUND_PREFIX}{part}{k}", loc=loc) for part in ("lo", "hi"))
        value = d.Var(f"{BOUND_PREFIX}v_{loop.var}_{k}", loc=loc)   # (``display_name``)
        count = d.Var(f"{while_prefix}b{k}", loc=loc)
        evaluate = [d.Assign(lo, d.Call("int", (loop.start,), loc=loc), sid=-1, kind=BOUND, loc=loc),
                    d.Assign(hi, d.Call("int", (loop.stop,), loc=loc), sid=-1, kind=BOUND, loc=loc)]
        test = d.Compare("<" if step > 0 else ">", value, hi, loc=loc)
        counted: tuple[d.Stmt, ...] = (
            d.Assign(value, d.BinOp("+", lo, d.BinOp("*", count, d.Const(step), loc=loc), loc=loc),
                     sid=-1, loc=loc),
            d.If(d.UnaryOp("not", test, loc=loc), (d.Break(loc=loc),), (), loc=loc),
        )
        if loop.var in live:   # its last value, as Python leaves it (only iterations that ran)
            last = d.Var(shadow_of(loop.var), loc=loc)   # handed back as v (``lastvalues``)
            counted += (d.Assign(last, value, sid=-1, loc=loc),)
        substitute = _Substitute(loop.var, value)
        body = tuple(substitute.visit(stmt) for stmt in block(loop.body))
        inner = d.Loop(count.name, d.Const(0), d.Const(d.WHILE_STOP), d.Const(1),
                       counted + body, loop.lid, predicate=loop.predicate, loc=loc)
        return (*evaluate, inner)

    def block(stmts: tuple[d.Stmt, ...]) -> tuple[d.Stmt, ...]:
        out: list[d.Stmt] = []
        for stmt in stmts:
            if isinstance(stmt, d.Loop):
                out.extend(rewrite(stmt))
            elif isinstance(stmt, d.If):
                out.append(stmt.replace(body=block(stmt.body), orelse=block(stmt.orelse)))
            else:
                out.append(stmt)
        return tuple(out)

    top = rewrite(nest.loop)
    if len(top) == 1:
        return nest.replace(loop=top[0])
    once = d.Loop(f"{while_prefix}once", d.Const(0), d.Const(1), d.Const(1), top, -1,
                  loc=nest.loop.loc)
    return nest.replace(loop=once)


class _Substitute(NodeTransformer):
    """Reads of the variable ``name`` become reads of ``value`` (no statement assigns it)."""

    def __init__(self, name: str, value: d.Var):
        self.name, self.value = name, value

    def visit_Var(self, node: d.Var) -> d.Var:
        return self.value if node.name == self.name else node


def _constant(expr: d.Expr) -> int | None:
    """The value of an integer constant step (``1``, ``-1``), else None."""
    if isinstance(expr, d.UnaryOp) and expr.op in "-+":
        inner = _constant(expr.operand)
        return None if inner is None else (-inner if expr.op == "-" else inner)
    if isinstance(expr, d.Const) and isinstance(expr.value, int) and \
            not isinstance(expr.value, bool):
        return expr.value
    return None
