"""If-conversion: ``If`` statements -> predicated assignments (after Allen, Kennedy et al. 1983).

Each ``if`` evaluates its condition once, into a predicate temporary assigned unconditionally
in the same iteration (``__asp_p1 = P and cond``, where ``P`` is the enclosing predicate, so the
condition is not evaluated where Python would not evaluate it). Statements of the branch run
under that predicate; an ``else`` gets its own (``__asp_p2 = P and not __asp_p1``), and
``elif`` chains follow. A loop inside a branch carries the predicate itself, so it does not run
(nor bind its variable) where the branch is not taken. Later statements that depend on the
condition read the temporary rather than re-evaluating the condition, which the branch may have
changed (``if A[i] > 0: A[i] = -A[i]; B[i] = 1``).

Statements are renumbered in source order afterwards (``sid``).
"""

from __future__ import annotations

import itertools

from . import dast as d

PREDICATE_PREFIX = "__asp_p"


def if_convert(nest: d.Nest) -> d.Nest:
    """The nest without ``If`` statements."""
    counter = itertools.count(1)
    loop = _convert_loop(nest.loop, None, counter)
    return renumber(nest.replace(loop=loop))


def _convert_loop(loop: d.Loop, pred: str | None, counter) -> d.Loop:
    return loop.replace(predicate=pred, body=_convert_block(loop.body, None, counter))


def _convert_block(stmts, pred: str | None, counter) -> tuple[d.Stmt, ...]:
    out: list[d.Stmt] = []
    for stmt in stmts:
        if isinstance(stmt, d.Assign):
            out.append(stmt.replace(predicate=pred))
        elif isinstance(stmt, d.Loop):
            out.append(_convert_loop(stmt, pred, counter))
        elif isinstance(stmt, d.If):
            then_pred = f"{PREDICATE_PREFIX}{next(counter)}"
            out.append(_predicate(then_pred, _and(pred, stmt.test), stmt))
            out.extend(_convert_block(stmt.body, then_pred, counter))
            if stmt.orelse:
                else_pred = f"{PREDICATE_PREFIX}{next(counter)}"
                negated = d.UnaryOp("not", d.Var(then_pred), loc=stmt.loc)
                out.append(_predicate(else_pred, _and(pred, negated), stmt))
                out.extend(_convert_block(stmt.orelse, else_pred, counter))
        else:
            raise TypeError(f"unexpected statement {type(stmt).__name__}")
    return tuple(out)


def _and(pred: str | None, test: d.Expr) -> d.Expr:
    if pred is None:
        return test
    return d.BoolOp("and", (d.Var(pred), test), loc=test.loc)


def _predicate(name: str, value: d.Expr, origin: d.If) -> d.Assign:
    return d.Assign(d.Var(name, loc=origin.loc), value, sid=-1, kind="predicate", loc=origin.loc)


def renumber(nest: d.Nest) -> d.Nest:
    """Give every assignment its position in source order as ``sid``."""
    counter = itertools.count()

    def block(stmts):
        out = []
        for stmt in stmts:
            if isinstance(stmt, d.Assign):
                out.append(stmt.replace(sid=next(counter)))
            elif isinstance(stmt, d.Loop):
                out.append(stmt.replace(body=block(stmt.body)))
            else:
                out.append(stmt)
        return tuple(out)

    return nest.replace(loop=nest.loop.replace(body=block(nest.loop.body)))
