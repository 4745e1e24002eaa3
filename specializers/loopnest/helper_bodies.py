"""A helper's body of several statements as one expression (``inlining``): assignments to
local names, ``if``/``elif``/``else``, ``pass`` and ``return <expression>`` on every path,
with the checks that keep Python's errors where a path does not read a value that may raise
(see ``body_expression``)."""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass

from .inlining import NotInlinable, evaluation_events, may_raise

#: At most this many paths through a body's ``if`` statements, and an expression of at most
#: this many nodes once its local names are put in place.
MAX_PATHS = 32
MAX_BODY_NODES = 600


def body_expression(body: list[ast.stmt], params: tuple[str, ...]
                    ) -> tuple[ast.expr, bool, tuple[ast.expr, ...]]:
    """One expression with the value of a function body of several statements, whether it
    evaluates what may raise in the body's order, and the checks it needs.

    Each path through the body's ``if`` statements ends in a ``return``; an ``if`` becomes a
    conditional expression whose branches are the paths through each of its branches (the
    statements after the ``if`` follow each one), and a local name is replaced by the
    expression last assigned to it on the path (``y = x * x; return y + 1`` is
    ``x * x + 1``). The subset has no side effects, so a value computed at each of its uses,
    or not at all, is the same value; what may differ is which error comes first, or whether
    one comes at all:

    * a value that may raise (a subscript, a division, a call...) is computed where it is
      used, not where it is assigned: the helper counts as out of order (``in_order``
      False: the nest answers an error by running the original code again, which raises
      Python's error; see the module);
    * such a value that a path may not use (assigned and never read, read only under a
      condition, or only by another value that is itself not surely used) becomes a *check*:
      an expression that the call evaluates first, only for its errors (into a temporary of
      the nest, as an argument that may raise and is not surely used), under the tests of
      its path (``bool(test) and not bool(other) and value != 0.5``), so that it raises
      where Python raises at the assignment.

    Refused: a path that ends without ``return <expression>``, a local name read before it
    is assigned on some path (Python's ``UnboundLocalError``), any other statement (loops,
    ``global``, calls as statements...), more than ``MAX_PATHS`` paths, or an expression of
    more than ``MAX_BODY_NODES`` nodes."""
    local_names = {target.id for node in body for inner in ast.walk(node)
                   for target in _assigned(inner)} - set(params)
    paths = [0]
    in_order = [True]
    checks: dict[tuple, ast.expr] = {}

    def reads(node: ast.expr, env: dict[str, ast.expr]) -> ast.expr:
        """``node`` with the path's local values in place of their names."""
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name) and inner.id in local_names and inner.id not in env:
                raise NotInlinable(f"'{inner.id}' may be read before it is assigned "
                                   f"(line {inner.lineno})")
        return _Substitute(env).visit(_copy(node))

    def walk(statements: list[ast.stmt], env: dict[str, ast.expr], trail: tuple,
             tests: tuple) -> ast.expr:
        for index, statement in enumerate(statements):
            rest = statements[index + 1:]
            if isinstance(statement, ast.Pass):
                continue
            assigned = _assignment(statement)
            if assigned is not None:
                target, value = assigned
                env = {**env, target: reads(value, env)}
                trail += (_Step(target, value, env[target], statement, tests),)
                continue
            if isinstance(statement, ast.If):
                test = reads(statement.test, env)
                trail += (_Step(None, statement.test, test, statement, tests),)
                chosen = walk(statement.body + rest, env, trail, tests + ((test, True),))
                other = walk(statement.orelse + rest, env, trail, tests + ((test, False),))
                return ast.copy_location(ast.IfExp(test, chosen, other), statement)
            if isinstance(statement, ast.Return) and statement.value is not None:
                paths[0] += 1
                if paths[0] > MAX_PATHS:
                    raise NotInlinable(f"its body has more than {MAX_PATHS} paths")
                surely, unsure = _surely_evaluated(trail, statement.value)
                in_order[0] &= surely and not unsure
                for step in unsure:
                    checks.setdefault((id(step.statement), step.tests), _check(step))
                return reads(statement.value, env)
            raise NotInlinable(
                f"line {statement.lineno}: '{ast.unparse(statement).splitlines()[0]}' (a body "
                "of several statements may only assign local names, branch with if/else, "
                "pass and return a value)")
        raise NotInlinable("a path through its body ends without 'return <expression>'")

    expression = walk(body, {}, (), ())
    size = sum(1 for part in (expression, *checks.values()) for _ in ast.walk(part))
    if size > MAX_BODY_NODES:
        raise NotInlinable(f"its body, as one expression, is larger than {MAX_BODY_NODES} nodes")
    return expression, in_order[0], tuple(checks.values())


@dataclass(frozen=True)
class _Step:
    """A step of a path through a helper's body: an assignment (``target``) or an ``if``'s
    test (``target`` None), as written and with the path's values in place (``value``), under
    the tests (substituted, and the branch taken) of the path before it."""

    target: str | None
    written: ast.expr
    value: ast.expr
    statement: ast.stmt
    tests: tuple


def _surely_evaluated(trail: tuple, returned: ast.expr) -> tuple[bool, list[_Step]]:
    """(whether the values a path assigns that may raise, and that it surely uses, are
    evaluated where Python evaluates them: False where one is evaluated later; the
    assignments of values that may raise and that the path may not use: see
    ``body_expression``). Back from the ``return``: a name is surely used if the returned
    value, a later test or a surely used later value reads it unconditionally."""
    needed = _unconditional(returned)
    in_order = True
    unsure = []
    for step in reversed(trail):
        if step.target is None:
            needed |= _unconditional(step.written)
            continue
        raising = may_raise(step.written)
        if step.target in needed:
            needed.discard(step.target)
            needed |= _unconditional(step.written)
            in_order &= not raising
        elif raising:
            unsure.append(step)
    return in_order, unsure


def _check(step: _Step) -> ast.expr:
    """An expression that evaluates ``step``'s value where its path's tests hold (a bool
    whatever its value, so that it is a value of one type), for the errors it may raise."""
    def truth(test: ast.expr, holds: bool) -> ast.expr:
        value = ast.Call(ast.Name("bool", ast.Load()), [_copy(test)], [])
        return value if holds else ast.UnaryOp(ast.Not(), value)

    evaluated = ast.Compare(_copy(step.value), [ast.NotEq()], [ast.Constant(0.5)])
    parts = [truth(test, holds) for test, holds in step.tests] + [evaluated]
    check = parts[0] if len(parts) == 1 else ast.BoolOp(ast.And(), parts)
    for node in ast.walk(check):   # (where its errors are reported: the assignment)
        if not hasattr(node, "lineno"):
            ast.copy_location(node, step.statement)
    return check


def _assigned(node: ast.AST) -> list[ast.Name]:
    """The names a statement binds (to find the body's local names)."""
    if isinstance(node, ast.Assign):
        return [t for target in node.targets for t in ast.walk(target) if isinstance(t, ast.Name)]
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
        return [node.target]
    if isinstance(node, (ast.For, ast.NamedExpr)):
        return [t for t in ast.walk(node.target) if isinstance(t, ast.Name)]
    return []


def _assignment(statement: ast.stmt) -> tuple[str, ast.expr] | None:
    """(name, value) of ``name = value``, ``name: T = value`` or ``name op= value``."""
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and \
            isinstance(statement.targets[0], ast.Name):
        return statement.targets[0].id, statement.value
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and \
            statement.value is not None:
        return statement.target.id, statement.value
    if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
        name = statement.target.id
        value = ast.BinOp(ast.Name(name, ast.Load()), statement.op, statement.value)
        return name, ast.copy_location(value, statement)
    return None


def _unconditional(node: ast.expr) -> set[str]:
    """The names ``node`` reads whatever values it meets (not only under a condition)."""
    events: list = []
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    evaluation_events(node, names, events, False)
    return {name for kind, name, conditional in events if kind == "use" and not conditional}


class _Substitute(ast.NodeTransformer):
    """Puts each local name's value (a copy) where the name is read."""

    def __init__(self, env: dict[str, ast.expr]):
        self.env = env

    def visit_Name(self, node: ast.Name) -> ast.expr:
        value = self.env.get(node.id)
        return node if value is None or not isinstance(node.ctx, ast.Load) else _copy(value)


def _copy(node: ast.expr) -> ast.expr:
    return copy.deepcopy(node)
