"""Calls of the user's own small functions inside a nest: which ones are inlined, and why not.

A nest may call a plain Python function whose body is one ``return`` of an expression (a
docstring before it is allowed), or one of several statements that amount to one (assignments
to local names, ``if``/``elif``/``else``, ``pass`` and ``return <expression>``: see
``_body_expression``), given positionally:

* a module-level function the kernel refers to (or a ``lambda`` bound to a module-level
  name); one of another module only where it reads no global value of its own module (the
  nest reads globals from the kernel's module, at each call);
* a function defined in the kernel method itself (``def match(a, b): return a + b == 3`` or
  ``match = lambda a, b: ...``), bound once, at the method's top level, before the nest.

The call is replaced by the body with each parameter standing for its argument (lowering then
handles the result as if the user had written it in place). Python evaluates every argument,
then the body; the inlined body evaluates an argument where it uses the parameter. An argument
that could raise (a subscript, a division, a call...) and that the body does not use, or uses
only under a condition (in one branch of a conditional expression, after the first operand of
``and``/``or`` or of a chain of comparisons), is evaluated first instead, into a temporary of
the nest (``__asp_a1 = x[i + 1]``, before the statement), so that the inlined code raises
wherever Python does. Which error comes first may still differ, and a temporary may raise
where Python never evaluates the call at all: where the body uses such arguments in another
order than they are given, or may raise itself before it has used them all, or an argument
was evaluated first, the nest is marked ``reordered`` and its compiled variants answer any
error by running the original code again from the arrays as they were (as for a nest inside
``try``), which raises exactly Python's error, or none.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import types
from dataclasses import dataclass
from typing import Any

from asp_core.errors import AspError
from asp_core.frontend import function_ast

#: The deepest chain of inlined calls (a helper calling a helper ...).
MAX_DEPTH = 8
#: A body of several statements: at most this many paths through its ``if`` statements, and
#: an expression of at most this many nodes once its local names are put in place.
MAX_PATHS = 32
MAX_BODY_NODES = 600


@dataclass(frozen=True)
class Helper:
    """A function to inline: its parameters and the expression it returns."""

    name: str
    key: Any                      # what identifies it (recursion is refused)
    params: tuple[str, ...]
    body: ast.expr
    own_module: dict | None       # a module-level helper's globals (None: the kernel's scope)
    same_globals: bool = True     # ... which are the kernel's (its global values readable)
    filename: str | None = None   # the file its source is in, where not the kernel's
    in_order: bool = True         # ``body`` evaluates what may raise in the function's order
    checks: tuple = ()            # expressions evaluated first, for their errors alone


class NotInlinable(Exception):
    """Why a call of the user's function cannot be inlined (a sentence)."""


def nested_helper(kernel_tree: ast.FunctionDef, name: str, nest: ast.AST) -> Helper | None:
    """The function bound to ``name`` by the kernel method itself, or None where the method
    does not bind ``name`` to a ``def`` or ``lambda`` (``NotInlinable`` where it does, but not
    once, at its top level, before ``nest``)."""
    bindings = [node for node in ast.walk(kernel_tree) if _binds(node, name)]
    if not bindings:
        return None
    definitions = [node for node in kernel_tree.body if _binds(node, name)]
    if len(bindings) != 1 or len(definitions) != 1:
        raise NotInlinable(f"'{name}' is bound more than once, or not at the method's top level")
    (node,) = definitions
    if node.lineno >= getattr(nest, "lineno", 0):
        raise NotInlinable(f"'{name}' is defined after the nest")
    if isinstance(node, ast.FunctionDef):
        return _helper(name, node, ("nested", node.lineno, node.col_offset), None)
    value = node.value
    if not isinstance(value, ast.Lambda):
        return None   # a value, not a function
    return _helper(name, value, ("nested", node.lineno, node.col_offset), None)


def module_helper(name: str, obj: Any, kernel_globals: dict, static: bool = False
                  ) -> Helper | None:
    """The helper ``obj`` (a free name of the kernel refers to it; ``static``: the function of
    a ``staticmethod``), or None where ``obj`` is not a plain Python function."""
    if not isinstance(obj, types.FunctionType):
        return None
    if obj.__closure__:
        raise NotInlinable(f"'{name}' is a closure over variables the kernel cannot see")
    try:
        parsed = function_ast(obj)
    except AspError as exc:
        raise NotInlinable(f"the source of '{name}' cannot be read ({exc.message})") from exc
    helper = _helper(name, parsed.tree, obj.__code__, obj.__globals__, static)
    return dataclasses.replace(helper, same_globals=obj.__globals__ is kernel_globals,
                               filename=parsed.filename)


def _binds(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.FunctionDef) and node.name == name:
        return True
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return isinstance(node.target, ast.Name) and node.target.id == name
    if isinstance(node, (ast.For, ast.comprehension)):
        return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node.target))
    if isinstance(node, ast.NamedExpr):
        return node.target.id == name
    return False


def _helper(name: str, tree: ast.FunctionDef | ast.Lambda, key: Any,
            own_module: dict | None, static: bool = False) -> Helper:
    args = tree.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.kw_defaults:
        raise NotInlinable(f"'{name}' takes default, keyword-only or starred parameters")
    params = tuple(a.arg for a in args.posonlyargs + args.args)
    if isinstance(tree, ast.Lambda):
        return Helper(name, key, params, tree.body, own_module)
    decorators = [ast.unparse(d) for d in tree.decorator_list]
    if decorators and decorators != (["staticmethod"] if static else []):
        raise NotInlinable(f"'{name}' is decorated")
    body = list(tree.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]   # the docstring
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        return Helper(name, key, params, body[0].value, own_module)
    expression, in_order, checks = _body_expression(name, body, params)
    return Helper(name, key, params, expression, own_module, in_order=in_order, checks=checks)


# -- a body of several statements, as one expression ----------------------------------------------

def _body_expression(name: str, body: list[ast.stmt], params: tuple[str, ...]
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
    ``_body_expression``). Back from the ``return``: a name is surely used if the returned
    value, a later test or a surely used later value reads it unconditionally."""
    needed = _unconditional(returned)
    in_order = True
    unsure = []
    for step in reversed(trail):
        if step.target is None:
            needed |= _unconditional(step.written)
            continue
        raising = _may_raise(step.written)
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
    _events(node, names, events, False)
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


def evaluation_order(helper: Helper, args: list[ast.expr]) -> tuple[bool, frozenset[str]]:
    """(whether putting ``args`` in place of the parameters keeps Python's order of
    evaluation, the parameters whose arguments must be evaluated first): see the module."""
    if len(args) != len(helper.params):
        raise NotInlinable(f"'{helper.name}' takes {len(helper.params)} arguments, "
                           f"not {len(args)}")
    raising = [p for p, a in zip(helper.params, args) if _may_raise(a)]
    events: list[tuple[str, str | None, bool]] = []   # (kind, param, conditional)
    _events(helper.body, set(helper.params), events, False)
    first: dict[str, int] = {}
    hoisted: set[str] = set()
    for index, (kind, param, conditional) in enumerate(events):
        if kind == "use" and param not in first and param not in hoisted:
            if conditional and param in raising:
                hoisted.add(param)   # (used only under a condition: evaluated first)
            else:
                first[param] = index
    hoisted |= {p for p in raising if p not in first}   # unused: evaluated first
    order = [first[p] for p in raising if p in first]
    if not order:
        return helper.in_order and not hoisted, frozenset(hoisted)
    last = max(order)
    in_order = order == sorted(order) and not any(kind == "raise"
                                                  for kind, _, _ in events[:last])
    return helper.in_order and in_order and not hoisted, frozenset(hoisted)


def _may_raise(node: ast.expr) -> bool:
    """Whether evaluating ``node`` may raise (conservative: only names, constants, ``+ - *``,
    comparisons, ``and``/``or``/``not`` and conditional expressions of such cannot)."""
    for n in ast.walk(node):
        if isinstance(n, (ast.Subscript, ast.Call, ast.Attribute, ast.Starred, ast.NamedExpr)):
            return True
        if isinstance(n, ast.BinOp) and not isinstance(n.op, (ast.Add, ast.Sub, ast.Mult)):
            return True
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Invert):
            return True
    return False


def _events(node: ast.expr, params: set[str], out: list, conditional: bool) -> None:
    """The uses of parameters and the operations that may raise in ``node``, in Python's
    order of evaluation; ``conditional``: whether this part may not be evaluated at all."""
    if isinstance(node, ast.Name):
        if node.id in params:
            out.append(("use", node.id, conditional))
        return
    if isinstance(node, ast.Constant):
        return
    if isinstance(node, ast.BinOp):
        _events(node.left, params, out, conditional)
        _events(node.right, params, out, conditional)
        if not isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            out.append(("raise", None, conditional))
        return
    if isinstance(node, ast.UnaryOp):
        _events(node.operand, params, out, conditional)
        if isinstance(node.op, ast.Invert):
            out.append(("raise", None, conditional))
        return
    if isinstance(node, ast.BoolOp):
        _events(node.values[0], params, out, conditional)
        for value in node.values[1:]:
            _events(value, params, out, True)
        return
    if isinstance(node, ast.Compare):
        _events(node.left, params, out, conditional)
        for k, comparator in enumerate(node.comparators):
            _events(comparator, params, out, conditional or k > 0)
        return
    if isinstance(node, ast.IfExp):
        _events(node.test, params, out, conditional)
        _events(node.body, params, out, True)
        _events(node.orelse, params, out, True)
        return
    if isinstance(node, ast.Call):
        func = node.func   # a function's name, or a module's function: nothing to evaluate
        if not (isinstance(func, ast.Name) or isinstance(func, ast.Attribute) and
                isinstance(func.value, ast.Name)):
            _events(func, params, out, conditional)
        for arg in node.args:
            _events(arg, params, out, conditional)
        out.append(("raise", None, conditional))
        return
    if isinstance(node, ast.Subscript):
        _events(node.value, params, out, conditional)
        _events(node.slice, params, out, conditional)
        out.append(("raise", None, conditional))
        return
    if isinstance(node, ast.Attribute):
        _events(node.value, params, out, conditional)
        out.append(("raise", None, conditional))
        return
    if isinstance(node, ast.Tuple):
        for element in node.elts:
            _events(element, params, out, conditional)
        return
    # anything else: lowering refuses it anyway; priced as raising
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.expr):
            _events(child, params, out, conditional)
    out.append(("raise", None, conditional))
