"""Calls of the user's own small functions inside a nest: which ones are inlined, and why not.

A nest may call a plain Python function whose body is one ``return`` of an expression (a
docstring before it is allowed), or one of several statements that amount to one (assignments
to local names, ``if``/``elif``/``else``, ``pass`` and ``return <expression>``: see
``helper_bodies``), given positionally:

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
import dataclasses
import types
from dataclasses import dataclass
from typing import Any

from asp_core.errors import AspError
from asp_core.frontend import function_ast

#: The deepest chain of inlined calls (a helper calling a helper ...).
MAX_DEPTH = 8


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
    from .helper_bodies import body_expression   # (a body of several statements)

    expression, in_order, checks = body_expression(body, params)
    return Helper(name, key, params, expression, own_module, in_order=in_order, checks=checks)


def evaluation_order(helper: Helper, args: list[ast.expr]) -> tuple[bool, frozenset[str]]:
    """(whether putting ``args`` in place of the parameters keeps Python's order of
    evaluation, the parameters whose arguments must be evaluated first): see the module."""
    if len(args) != len(helper.params):
        raise NotInlinable(f"'{helper.name}' takes {len(helper.params)} arguments, "
                           f"not {len(args)}")
    raising = [p for p, a in zip(helper.params, args) if may_raise(a)]
    events: list[tuple[str, str | None, bool]] = []   # (kind, param, conditional)
    evaluation_events(helper.body, set(helper.params), events, False)
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


def may_raise(node: ast.expr) -> bool:
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


def evaluation_events(node: ast.expr, params: set[str], out: list, conditional: bool) -> None:
    """The uses of parameters and the operations that may raise in ``node``, in Python's
    order of evaluation; ``conditional``: whether this part may not be evaluated at all."""
    if isinstance(node, ast.Name):
        if node.id in params:
            out.append(("use", node.id, conditional))
        return
    if isinstance(node, ast.Constant):
        return
    if isinstance(node, ast.BinOp):
        evaluation_events(node.left, params, out, conditional)
        evaluation_events(node.right, params, out, conditional)
        if not isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            out.append(("raise", None, conditional))
        return
    if isinstance(node, ast.UnaryOp):
        evaluation_events(node.operand, params, out, conditional)
        if isinstance(node.op, ast.Invert):
            out.append(("raise", None, conditional))
        return
    if isinstance(node, ast.BoolOp):
        evaluation_events(node.values[0], params, out, conditional)
        for value in node.values[1:]:
            evaluation_events(value, params, out, True)
        return
    if isinstance(node, ast.Compare):
        evaluation_events(node.left, params, out, conditional)
        for k, comparator in enumerate(node.comparators):
            evaluation_events(comparator, params, out, conditional or k > 0)
        return
    if isinstance(node, ast.IfExp):
        evaluation_events(node.test, params, out, conditional)
        evaluation_events(node.body, params, out, True)
        evaluation_events(node.orelse, params, out, True)
        return
    if isinstance(node, ast.Call):
        func = node.func   # a function's name, or a module's function: nothing to evaluate
        if not (isinstance(func, ast.Name) or isinstance(func, ast.Attribute) and
                isinstance(func.value, ast.Name)):
            evaluation_events(func, params, out, conditional)
        for arg in node.args:
            evaluation_events(arg, params, out, conditional)
        out.append(("raise", None, conditional))
        return
    if isinstance(node, ast.Subscript):
        evaluation_events(node.value, params, out, conditional)
        evaluation_events(node.slice, params, out, conditional)
        out.append(("raise", None, conditional))
        return
    if isinstance(node, ast.Attribute):
        evaluation_events(node.value, params, out, conditional)
        out.append(("raise", None, conditional))
        return
    if isinstance(node, ast.Tuple):
        for element in node.elts:
            evaluation_events(element, params, out, conditional)
        return
    # anything else: lowering refuses it anyway; priced as raising
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.expr):
            evaluation_events(child, params, out, conditional)
    out.append(("raise", None, conditional))
