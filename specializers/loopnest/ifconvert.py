"""If-conversion: ``If`` statements -> predicated assignments (after Allen, Kennedy et al. 1983).

Each ``if`` evaluates its condition once, into a predicate temporary assigned unconditionally
in the same iteration (``__asp_p1 = P and cond``, where ``P`` is the enclosing predicate, so the
condition is not evaluated where Python would not evaluate it). Statements of the branch run
under that predicate; an ``else`` gets its own (``__asp_p2 = P and not __asp_p1``), and
``elif`` chains follow. A loop inside a branch carries the predicate itself, so it does not run
(nor bind its variable) where the branch is not taken. Later statements that depend on the
condition read the temporary rather than re-evaluating the condition, which the branch may have
changed (``if A[i] > 0: A[i] = -A[i]; B[i] = 1``).

``break`` and ``continue`` leave the rest of the iteration: the statements after one run under
the predicate that the iteration goes on (``__asp_p3 = __asp_p2 or not __asp_p1`` after an
``if`` whose branch may have left), so every analysis sees them as conditional, as they are. A
``break`` also becomes an assignment of kind ``"break"`` under the predicate where it is
taken; the dependence graph makes its loop sequential (``analysis.graph.exit_edges``) and the
code generators print their own ``break`` there, so the loop ends as Python's does (its later
iterations never run). ``continue`` needs nothing more: a loop with one may still be parallel.

Statements and loops are renumbered in source order afterwards (``sid``, ``lid``).
"""

from __future__ import annotations

import itertools

from . import dast as d

PREDICATE_PREFIX = "__asp_p"
#: The flag a ``break`` of loop N assigns (``__asp_xN``; no statement reads it).
EXIT_PREFIX = "__asp_x"


def if_convert(nest: d.Nest) -> d.Nest:
    """The nest without ``If``, ``Break`` and ``Continue`` statements."""
    counter = itertools.count(1)
    loop = _convert_loop(nest.loop, None, counter)
    return renumber(nest.replace(loop=loop))


#: The continuation of a block that always leaves the iteration (``break``/``continue``).
_DEAD = "<dead>"


def _convert_loop(loop: d.Loop, pred: str | None, counter) -> d.Loop:
    body, _ = _convert_block(loop.body, None, counter, loop)
    return loop.replace(predicate=pred, body=body)


def _convert_block(stmts, pred: str | None, counter, loop: d.Loop
                   ) -> tuple[tuple[d.Stmt, ...], str | None]:
    """The statements of a block run under ``pred``, and the predicate under which the
    iteration goes on after the block (``pred`` unless a ``break`` or ``continue`` of ``loop``
    may have left it; ``_DEAD`` if one always does)."""
    out: list[d.Stmt] = []
    current = pred
    for stmt in stmts:
        if isinstance(stmt, d.Assign):
            out.append(stmt.replace(predicate=current))
        elif isinstance(stmt, d.Loop):
            out.append(_convert_loop(stmt, current, counter))
        elif isinstance(stmt, (d.Break, d.Continue)):
            if isinstance(stmt, d.Break):
                flag = d.Var(f"{EXIT_PREFIX}{loop.lid}", loc=stmt.loc)
                out.append(d.Assign(flag, d.Const(True, loc=stmt.loc), sid=-1,
                                    predicate=current, kind="break", loc=stmt.loc))
            return tuple(out), _DEAD   # what follows in this block never runs
        elif isinstance(stmt, d.If):
            then_pred = f"{PREDICATE_PREFIX}{next(counter)}"
            out.append(_predicate(then_pred, _and(current, stmt.test), stmt))
            body, then_goes_on = _convert_block(stmt.body, then_pred, counter, loop)
            out.extend(body)
            else_goes_on = None   # the else branch's continuation (None: the branch itself)
            if stmt.orelse:
                else_pred = f"{PREDICATE_PREFIX}{next(counter)}"
                negated = d.UnaryOp("not", d.Var(then_pred), loc=stmt.loc)
                out.append(_predicate(else_pred, _and(current, negated), stmt))
                body, else_goes_on = _convert_block(stmt.orelse, else_pred, counter, loop)
                out.extend(body)
                if else_goes_on == else_pred:
                    else_goes_on = None
            if then_goes_on == then_pred and else_goes_on is None:
                continue   # no exit in either branch: the iteration goes on under current
            # the rest runs where the iteration went on through either branch; written as
            # "current and (...)" (each way implies current) so that it implies current
            # (``scalars.predicate_implications``)
            ways: list[d.Expr] = []
            if then_goes_on != _DEAD:
                ways.append(d.Var(then_goes_on, loc=stmt.loc))
            if else_goes_on is None:   # no else, or an else without exits
                ways.append(d.UnaryOp("not", d.Var(then_pred), loc=stmt.loc))
            elif else_goes_on != _DEAD:
                ways.append(d.Var(else_goes_on, loc=stmt.loc))
            if not ways:
                return tuple(out), _DEAD
            either = ways[0] if len(ways) == 1 else d.BoolOp("or", tuple(ways), loc=stmt.loc)
            current_after = f"{PREDICATE_PREFIX}{next(counter)}"
            out.append(_predicate(current_after, _and(current, either), stmt))
            current = current_after
        else:
            raise TypeError(f"unexpected statement {type(stmt).__name__}")
    return tuple(out), current


def _and(pred: str | None, test: d.Expr) -> d.Expr:
    if pred is None:
        return test
    return d.BoolOp("and", (d.Var(pred), test), loc=test.loc)


def _predicate(name: str, value: d.Expr, origin: d.If) -> d.Assign:
    return d.Assign(d.Var(name, loc=origin.loc), value, sid=-1, kind="predicate", loc=origin.loc)


def renumber(nest: d.Nest) -> d.Nest:
    """Give every assignment its position in source order as ``sid``, and every loop as
    ``lid``: the code after a ``break`` or ``continue`` is gone, loops with it, and the
    analyses index loops by ``lid`` (``AccessInfo.loop``)."""
    statements, loops = itertools.count(), itertools.count()

    def block(stmts):
        out = []
        for stmt in stmts:
            if isinstance(stmt, d.Assign):
                out.append(stmt.replace(sid=next(statements)))
            elif isinstance(stmt, d.Loop):
                out.append(loop(stmt))
            else:
                out.append(stmt)
        return tuple(out)

    def loop(node: d.Loop) -> d.Loop:
        lid = next(loops)
        return node.replace(lid=lid, body=block(node.body))

    return nest.replace(loop=loop(nest.loop))
