"""Lowering: the Python AST of one top-level ``for`` loop -> a loop-nest DAST (``dast.Nest``).

Accepted (anything else raises ``UnsupportedConstruct`` naming the construct and its line):

* ``for v in range(...)`` with one to three arguments and no ``else``; ``while test:`` (no
  ``else``), lowered to ``for __asp_wN in range(0, WHILE_STOP)`` whose body starts with
  ``if not test: break``; ``break`` and ``continue`` (removed by ``ifconvert``); ``return``
  (of one value, or none), lowered to ``__asp_rv = value; __asp_rf = True; break`` with
  ``if __asp_rf: break`` after each loop around it (the kernel returns: ``rewrite``);
* assignments and augmented assignments to array elements (``A[i, j]``, ``A[i][j]``) and to
  scalar names; ``if``/``elif``/``else``; ``pass``;
* constants, names, ``self.x`` attributes, ``A.shape[k]``, ``len(A)``, ``math``/``numpy``
  constants, arithmetic (``+ - * / // % **``), unary ``- + not``, comparisons (chains too),
  ``and``/``or``, conditional expressions, and calls of the pure functions in ``intrinsics``
  and of the user's own one-expression functions, inlined (``inlining``): module functions,
  nested definitions and lambdas, and static methods called as ``self.f(...)`` or
  ``ClassName.f(...)``.

Names are resolved against the kernel's locals and free variables: a local name is a value of
the kernel; a free name that is ``range``, ``len``, a module or an intrinsic is recognised by
the object it refers to when the kernel is first specialized.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import types
from dataclasses import dataclass
from typing import Any

from asp_core.errors import SourceLocation, UnsupportedConstruct
from asp_core.frontend import FunctionAST
from asp_core.visitors import NodeVisitor

from . import dast as d
from . import inlining, intrinsics

RESERVED_PREFIX = "__asp"
#: Temporaries holding the arguments of inlined calls that are evaluated first (``inline``).
ARGUMENT_PREFIX = "__asp_a"
#: The variables of the loops ``while`` loops become.
WHILE_PREFIX = "__asp_w"
#: A ``return`` inside a nest sets this flag and keeps the value in ``RETURN_VALUE``; every
#: loop around it ends (``break``), and the rewritten kernel returns (``rewrite``).
RETURN_FLAG = "__asp_rf"
RETURN_VALUE = "__asp_rv"
_MISSING = object()

_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
           ast.Mod: "%", ast.Pow: "**"}
_CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_UNARY = {ast.USub: "-", ast.UAdd: "+", ast.Not: "not"}

#: Statement types with a readable name for error messages.
_STATEMENT_NAMES = {
    ast.With: "with statement", ast.Try: "try statement",
    ast.FunctionDef: "function definition", ast.ClassDef: "class definition",
    ast.Delete: "del statement", ast.Global: "global statement", ast.Nonlocal: "nonlocal statement",
    ast.Raise: "raise statement", ast.Assert: "assert statement", ast.Import: "import",
    ast.ImportFrom: "import", ast.AsyncFor: "async for", ast.Match: "match statement",
}


@dataclass(frozen=True)
class KernelContext:
    """What lowering needs to know about the kernel function."""

    fa: FunctionAST
    free: dict[str, Any]        # values of the kernel's free names (globals, closure, builtins)
    local_names: frozenset[str]  # parameters and names assigned in the kernel
    self_name: str | None       # the first parameter (the LoopKernel instance)


def lower_nest(ctx: KernelContext, node: ast.For, index: int,
               methods: list[StaticMethod] | None = None) -> d.Nest:
    """The DAST of the top-level loop ``node`` (the ``index``-th nest of the kernel);
    ``methods`` receives the static methods inlined through ``self`` (``kernel`` checks that
    an instance's class has the same ones)."""
    lowering = _Lowering(ctx, node)
    loop = lowering.while_loop(node, set()) if isinstance(node, ast.While) else \
        lowering.loop(node, set())
    if methods is not None:
        methods.extend(lowering.methods)
    if lowering.pending:   # (a temporary would have to precede the nest itself)
        raise lowering.unsupported(getattr(node, "iter", node), "call", "an inlined call in the nest's own range() "
                                   "whose arguments must be evaluated first")
    return d.Nest(index, loop, lowering.reordered, loc=ctx.fa.location(node))


@dataclass(frozen=True)
class StaticMethod:
    """A ``staticmethod`` a nest inlined as ``self.name(...)``: an instance of a subclass that
    binds ``name`` to something else runs that nest as Python."""

    name: str
    method: staticmethod
    loc: Any


def defining_class(func) -> type | None:
    """The class a kernel method is defined in, found through its qualified name in its module
    (None for a class defined inside a function)."""
    parts = func.__qualname__.split(".")
    if "<locals>" in parts or len(parts) < 2:
        return None
    found = func.__globals__.get(parts[0])
    for part in parts[1:-1]:
        found = getattr(found, part, None)
    return found if isinstance(found, type) else None


@dataclass
class _Inlined:
    """A helper's body being lowered in place of its call (``inlining``)."""

    helper: inlining.Helper
    values: dict[str, d.Expr]           # parameter -> its argument, lowered
    arrays: dict[str, str | None]       # parameter -> the array its argument names, if one


class _Lowering(NodeVisitor):
    def __init__(self, ctx: KernelContext, nest: ast.For | None = None):
        self.ctx = ctx
        self.nest = nest
        self.next_sid = 0
        self.next_lid = 0
        self.inlined: list[_Inlined] = []   # the helpers being inlined, innermost last
        self.reordered = False   # an inlined call evaluates its arguments out of order
        self.pending: list[d.Stmt] = []   # temporaries of the statement being lowered
        self.next_temp = 0
        self.returns: str | None = None   # "value" or "bare" once a return is lowered
        self.methods: list[StaticMethod] = []   # static methods inlined through self

    # -- helpers ------------------------------------------------------------------------------

    def loc(self, node: ast.AST):
        """Where ``node`` is: in the kernel's file, or in the file of the helper whose body
        is being inlined (a function of another module)."""
        if self.inlined and self.inlined[-1].helper.filename is not None:
            return SourceLocation(self.inlined[-1].helper.filename,
                                  getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        return self.ctx.fa.location(node)

    def unsupported(self, node: ast.AST, construct: str, detail: str = "") -> UnsupportedConstruct:
        message = f"unsupported {construct}" + (f": {detail}" if detail else "")
        return UnsupportedConstruct(message, self.loc(node), construct)

    def resolve(self, name: str) -> Any:
        """The object a free name refers to (None for kernel locals, a helper's parameters
        and unknown names); inside a module-level helper, the name in its module."""
        if self.inlined:
            scope = self.inlined[-1]
            if name in scope.values:
                return None
            if scope.helper.own_module is not None:
                found = scope.helper.own_module.get(name, _MISSING)
                return vars(builtins).get(name) if found is _MISSING else found
        if name in self.ctx.local_names:
            return None
        return self.ctx.free.get(name)

    def check_name(self, node: ast.AST, name: str) -> None:
        if name.startswith(RESERVED_PREFIX):
            raise self.unsupported(node, "name", f"names starting with {RESERVED_PREFIX} are reserved")

    # -- statements ---------------------------------------------------------------------------

    def loop(self, node: ast.For, enclosing: set[str]) -> d.Loop:
        if node.orelse:
            raise self.unsupported(node, "for-else")
        if not isinstance(node.target, ast.Name):
            raise self.unsupported(node.target, "loop target", "only 'for name in range(...)'")
        var = node.target.id
        self.check_name(node.target, var)
        if var in enclosing:
            raise self.unsupported(node.target, "loop variable reuse",
                                   f"'{var}' is already the variable of an enclosing loop")
        call = node.iter
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                and self.resolve(call.func.id) is builtins.range):
            raise self.unsupported(node.iter, "loop iterator",
                                   f"'{ast.unparse(node.iter)}': only range(...) loops")
        if call.keywords or not 1 <= len(call.args) <= 3 or \
                any(isinstance(a, ast.Starred) for a in call.args):
            raise self.unsupported(call, "range call", "range takes one to three arguments")
        args = [self.expr(a) for a in call.args]
        if len(args) == 1:
            start, stop, step = d.Const(0), args[0], d.Const(1)
        elif len(args) == 2:
            start, stop, step = args[0], args[1], d.Const(1)
        else:
            start, stop, step = args
        lid = self.next_lid
        self.next_lid += 1
        body = self.block(node.body, enclosing | {var})
        return d.Loop(var, start, stop, step, body, lid, loc=self.loc(node))

    def returning(self, node: ast.Return) -> tuple[d.Stmt, ...]:
        """``return value`` inside the nest: keep the value, raise the flag, leave the loop
        (``block`` makes each loop around it leave too)."""
        kind = "bare" if node.value is None else "value"
        if self.returns not in (None, kind):
            raise self.unsupported(node, "return", "a nest that returns a value in one place "
                                   "and nothing in another")
        self.returns = kind
        loc = self.loc(node)
        out: list[d.Stmt] = []
        if node.value is not None:
            if isinstance(node.value, ast.Tuple):
                raise self.unsupported(node, "return", "of a tuple: return one number")
            out.append(self.assign(node, d.Var(RETURN_VALUE, loc=loc), self.expr(node.value),
                                   None))
        out.append(self.assign(node, d.Var(RETURN_FLAG, loc=loc), d.Const(True, loc=loc), None))
        return tuple(out) + (d.Break(loc=loc),)

    def block(self, stmts: list[ast.stmt], enclosing: set[str]) -> tuple[d.Stmt, ...]:
        out: list[d.Stmt] = []
        for stmt in stmts:
            outer, self.pending = self.pending, []
            if isinstance(stmt, ast.Return):
                lowered = self.returning(stmt)
            else:
                lowered = self.statement(stmt, enclosing)
                if isinstance(stmt, (ast.For, ast.While)) and self.returns is not None and \
                        any(isinstance(n, ast.Return) for n in ast.walk(stmt)):
                    # a return inside that loop ends this one too
                    leave = d.If(d.Var(RETURN_FLAG, loc=self.loc(stmt)),
                                 (d.Break(loc=self.loc(stmt)),), (), loc=self.loc(stmt))
                    lowered = (lowered, leave)
            out += self.pending   # arguments of inlined calls evaluated first (``inline``)
            self.pending = outer
            if isinstance(lowered, tuple):
                out.extend(lowered)
            elif lowered is not None:
                out.append(lowered)
        return tuple(out)

    def while_loop(self, node: ast.While, enclosing: set[str]) -> d.Loop:
        """``while test: body`` as ``for w in range(0, WHILE_STOP): if not test: break`` and
        the body: the test is evaluated before each iteration, as Python does."""
        if node.orelse:
            raise self.unsupported(node, "while-else")
        lid = self.next_lid
        self.next_lid += 1
        test = self.truth(node.test)
        first, self.pending = tuple(self.pending), []  # an inlined call's arguments, each time
        loc = self.loc(node)
        stop = d.If(d.UnaryOp("not", test, loc=test.loc), (d.Break(loc=loc),), (), loc=loc)
        body = first + (stop,) + self.block(node.body, enclosing)
        return d.Loop(f"{WHILE_PREFIX}{lid}", d.Const(0), d.Const(d.WHILE_STOP), d.Const(1),
                      body, lid, loc=loc)

    def statement(self, node: ast.stmt, enclosing: set[str]) -> d.Stmt | None:
        if isinstance(node, ast.For):
            return self.loop(node, enclosing)
        if isinstance(node, ast.While):
            return self.while_loop(node, enclosing)
        if isinstance(node, ast.Break):
            return d.Break(loc=self.loc(node))
        if isinstance(node, ast.Continue):
            return d.Continue(loc=self.loc(node))
        if isinstance(node, ast.If):
            return d.If(self.truth(node.test), self.block(node.body, enclosing),
                        self.block(node.orelse, enclosing), loc=self.loc(node))
        if isinstance(node, ast.Assign):
            if len(node.targets) != 1:
                raise self.unsupported(node, "chained assignment", "write one target per statement")
            target = self.target(node.targets[0])
            return self.assign(node, target, self.expr(node.value), None)
        if isinstance(node, ast.AnnAssign):
            if node.value is None:
                return None  # a bare annotation does nothing
            target = self.target(node.target)
            return self.assign(node, target, self.expr(node.value), None)
        if isinstance(node, ast.AugAssign):
            op = _BINOPS.get(type(node.op))
            if op is None:
                raise self.unsupported(node, f"operator {type(node.op).__name__}")
            target = self.target(node.target)
            value = d.BinOp(op, target, self.expr(node.value), loc=self.loc(node))
            return self.assign(node, target, value, op)
        if isinstance(node, ast.Pass):
            return None
        if isinstance(node, ast.Expr):
            if isinstance(node.value, ast.Constant):
                return None  # a docstring or a bare constant does nothing
            what = "call" if isinstance(node.value, ast.Call) else "expression statement"
            raise self.unsupported(node, what, f"'{ast.unparse(node.value)}' has side effects "
                                   "the loop-nest specializer cannot reason about")
        name = _STATEMENT_NAMES.get(type(node), f"statement {type(node).__name__}")
        raise self.unsupported(node, name)

    def assign(self, node: ast.stmt, target: d.ArrayRef | d.Var, value: d.Expr,
               aug: str | None) -> d.Assign:
        sid = self.next_sid
        self.next_sid += 1
        return d.Assign(target, value, sid, aug=aug, loc=self.loc(node))

    def target(self, node: ast.expr) -> d.ArrayRef | d.Var:
        if isinstance(node, ast.Name):
            self.check_name(node, node.id)
            return d.Var(node.id, loc=self.loc(node))
        if isinstance(node, ast.Subscript):
            ref = self.expr(node)
            if isinstance(ref, d.ArrayRef):
                return ref
            raise self.unsupported(node, "assignment target", f"'{ast.unparse(node)}'")
        if isinstance(node, ast.Attribute):
            raise self.unsupported(node, "attribute write", f"'{ast.unparse(node)}'")
        if isinstance(node, (ast.Tuple, ast.List)):
            raise self.unsupported(node, "tuple assignment", "assign one name or element at a time")
        raise self.unsupported(node, "assignment target", f"'{ast.unparse(node)}'")

    # -- expressions --------------------------------------------------------------------------

    def expr(self, node: ast.expr) -> d.Expr:
        return self.visit(node)

    def truth(self, node: ast.expr) -> d.Expr:
        """A condition as Python tests it: ``bool(value)`` unless already a truth value."""
        value = self.expr(node)
        if _is_truth_value(value):
            return value
        return d.Call("bool", (value,), loc=value.loc)

    def generic_visit(self, node: ast.AST):
        raise self.unsupported(node, f"expression {type(node).__name__}",
                               f"'{ast.unparse(node)}'" if isinstance(node, ast.expr) else "")

    def visit_Constant(self, node: ast.Constant) -> d.Expr:
        value = node.value
        if isinstance(value, (bool, int, float)):
            return d.Const(value, loc=self.loc(node))
        raise self.unsupported(node, "constant", f"{value!r} (only int, float and bool)")

    def visit_Name(self, node: ast.Name) -> d.Expr:
        self.check_name(node, node.id)
        if self.inlined:
            scope = self.inlined[-1]
            if node.id in scope.values:
                return scope.values[node.id]
            helper = scope.helper
            if helper.own_module is not None and not isinstance(
                    self.resolve(node.id), types.ModuleType) and (
                    not helper.same_globals or node.id in self.ctx.local_names or
                    node.id not in helper.own_module or
                    node.id in self.ctx.fa.func.__code__.co_freevars):
                raise self.unsupported(node, "name", f"'{helper.name}' reads '{node.id}', a "
                                       "global of its module that the nest cannot read as "
                                       "the helper does")
        obj = self.resolve(node.id)
        if isinstance(obj, types.ModuleType) or (callable(obj) and not _is_value(obj)):
            raise self.unsupported(node, "name", f"'{node.id}' refers to a "
                                   f"{type(obj).__name__}, not to a number or an array")
        return d.Var(node.id, loc=self.loc(node))

    def visit_Attribute(self, node: ast.Attribute) -> d.Expr:
        base = node.value
        if isinstance(base, ast.Name):
            if base.id == self.ctx.self_name and base.id in self.ctx.local_names:
                return d.Var(f"{base.id}.{node.attr}", loc=self.loc(node))
            module = self.resolve(base.id)
            if isinstance(module, types.ModuleType):
                value = intrinsics.module_constant(module, node.attr)
                if value is not None:
                    return d.Const(value, loc=self.loc(node))
        raise self.unsupported(node, "attribute", f"'{ast.unparse(node)}'")

    def visit_Subscript(self, node: ast.Subscript) -> d.Expr:
        # A.shape[k]
        if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
            array = self.array_name(node.value.value)
            dim = node.slice
            if isinstance(dim, ast.Constant) and isinstance(dim.value, int) \
                    and not isinstance(dim.value, bool):
                return d.Shape(array, dim.value, loc=self.loc(node))
            if isinstance(dim, ast.UnaryOp) and isinstance(dim.op, ast.USub) \
                    and isinstance(dim.operand, ast.Constant) and isinstance(dim.operand.value, int):
                return d.Shape(array, -dim.operand.value, loc=self.loc(node))
            raise self.unsupported(node, "shape index", "use a constant: A.shape[0]")
        # A[i][j] -> A[i, j]
        indices: list[ast.expr] = []
        base: ast.expr = node
        while isinstance(base, ast.Subscript):
            sl = base.slice
            items = sl.elts if isinstance(sl, ast.Tuple) else [sl]
            indices[:0] = items
            base = base.value
        for item in indices:
            if isinstance(item, ast.Slice):
                raise self.unsupported(item, "slice", f"'{ast.unparse(node)}': index one "
                                       "element at a time")
            if isinstance(item, ast.Starred):
                raise self.unsupported(item, "starred index")
        array = self.array_name(base)
        return d.ArrayRef(array, tuple(self.expr(i) for i in indices), loc=self.loc(node))

    def array_name(self, node: ast.expr) -> str:
        if isinstance(node, ast.Name) and self.inlined and node.id in self.inlined[-1].arrays:
            array = self.inlined[-1].arrays[node.id]
            if array is None:
                raise self.unsupported(node, "subscript", f"'{node.id}' is not given an array")
            return array
        if isinstance(node, ast.Name):
            self.check_name(node, node.id)
            obj = self.resolve(node.id)
            if isinstance(obj, types.ModuleType) or (obj is not None and callable(obj)):
                raise self.unsupported(node, "subscript", f"'{node.id}' is not an array")
            return node.id
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == self.ctx.self_name:
            return f"{node.value.id}.{node.attr}"
        raise self.unsupported(node, "array expression", f"'{ast.unparse(node)}': index arrays "
                               "by name (or self.name)")

    def visit_BinOp(self, node: ast.BinOp) -> d.Expr:
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.unsupported(node, f"operator {type(node.op).__name__}")
        return d.BinOp(op, self.expr(node.left), self.expr(node.right), loc=self.loc(node))

    def visit_UnaryOp(self, node: ast.UnaryOp) -> d.Expr:
        op = _UNARY.get(type(node.op))
        if op is None:
            raise self.unsupported(node, f"operator {type(node.op).__name__}")
        return d.UnaryOp(op, self.expr(node.operand), loc=self.loc(node))

    def visit_Compare(self, node: ast.Compare) -> d.Expr:
        operands = [node.left, *node.comparators]
        parts = []
        for op, left, right in zip(node.ops, operands, operands[1:]):
            name = _CMPOPS.get(type(op))
            if name is None:
                raise self.unsupported(node, f"comparison {type(op).__name__}")
            parts.append(d.Compare(name, self.expr(left), self.expr(right), loc=self.loc(node)))
        if len(parts) == 1:
            return parts[0]
        return d.BoolOp("and", tuple(parts), loc=self.loc(node))  # a < b < c

    def visit_BoolOp(self, node: ast.BoolOp) -> d.Expr:
        op = "and" if isinstance(node.op, ast.And) else "or"
        return d.BoolOp(op, tuple(self.expr(v) for v in node.values), loc=self.loc(node))

    def visit_IfExp(self, node: ast.IfExp) -> d.Expr:
        return d.IfExp(self.truth(node.test), self.expr(node.body), self.expr(node.orelse),
                       loc=self.loc(node))

    def visit_Call(self, node: ast.Call) -> d.Expr:
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise self.unsupported(node, "call", "keyword and starred arguments are not supported")
        obj = self.callee(node.func)
        if obj is builtins.len:
            if len(node.args) != 1:
                raise self.unsupported(node, "call", "len takes one argument")
            return d.Shape(self.array_name(node.args[0]), 0, loc=self.loc(node))
        entry = intrinsics.by_object(obj) if obj is not None else None
        if entry is None:
            helper = self.helper(node)
            if helper is not None:
                return self.inline(node, helper)
            raise self.unsupported(node, "call", f"'{ast.unparse(node.func)}' is not a known "
                                   "pure function (see the README's supported subset)")
        if not entry.min_args <= len(node.args) <= entry.max_args:
            raise self.unsupported(node, "call", f"{entry.name} with {len(node.args)} arguments")
        args = tuple(self.expr(a) for a in node.args)
        if entry.name == "bool" and _is_truth_value(args[0]):
            return args[0]
        return d.Call(entry.name, args, loc=self.loc(node))

    def helper(self, node: ast.Call) -> inlining.Helper | None:
        """The user's function ``node`` calls, to inline, or None where it calls none."""
        if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
            return self.static_helper(node.func)
        if not isinstance(node.func, ast.Name):
            return None
        name = node.func.id
        own = self.inlined[-1].helper.own_module if self.inlined else None
        try:
            if own is None and name in self.ctx.local_names:
                if self.inlined and name in self.inlined[-1].values:
                    return None   # a parameter: not a function
                return inlining.nested_helper(self.ctx.fa.tree, name, self.nest)
            return inlining.module_helper(name, self.resolve(name), self.ctx.fa.func.__globals__)
        except inlining.NotInlinable as exc:
            raise self.unsupported(node, "call", f"'{name}' cannot be inlined: {exc}") from None

    def static_helper(self, func: ast.Attribute) -> inlining.Helper | None:
        """A ``staticmethod`` called as ``self.f(...)`` or ``ClassName.f(...)``, or None."""
        base, name = func.value.id, func.attr
        through_self = not self.inlined and base == self.ctx.self_name and \
            base in self.ctx.local_names
        cls = defining_class(self.ctx.fa.func) if through_self else self.resolve(base)
        if through_self and cls is None:
            raise self.unsupported(func, "call", f"'{base}.{name}': the kernel's class is "
                                   "defined inside a function, where its methods cannot be found")
        if not isinstance(cls, type):
            return None
        method = inspect.getattr_static(cls, name, None)
        if not isinstance(method, staticmethod):
            return None
        try:
            helper = inlining.module_helper(f"{base}.{name}", method.__func__,
                                            self.ctx.fa.func.__globals__, static=True)
        except inlining.NotInlinable as exc:
            raise self.unsupported(func, "call", f"'{base}.{name}' cannot be inlined: {exc}"
                                   ) from None
        if through_self:
            self.methods.append(StaticMethod(name, method, self.loc(func)))
        return helper

    def inline(self, node: ast.Call, helper: inlining.Helper) -> d.Expr:
        """``helper``'s body in place of the call ``node`` (``inlining``)."""
        if any(scope.helper.key == helper.key for scope in self.inlined):
            raise self.unsupported(node, "call", f"'{helper.name}' is recursive")
        if len(self.inlined) >= inlining.MAX_DEPTH:
            raise self.unsupported(node, "call", f"calls nested more than "
                                   f"{inlining.MAX_DEPTH} deep")
        try:
            in_order, hoisted = inlining.evaluation_order(helper, list(node.args))
        except inlining.NotInlinable as exc:
            raise self.unsupported(node, "call", f"'{helper.name}' cannot be inlined: {exc}"
                                   ) from None
        self.reordered |= not in_order
        values = {}
        for param, arg in zip(helper.params, node.args):
            value = self.expr(arg)
            if param in hoisted:   # evaluated first, into a temporary of the nest
                self.next_temp += 1
                temp = d.Var(f"{ARGUMENT_PREFIX}{self.next_temp}", loc=self.loc(arg))
                self.pending.append(self.assign(arg, temp, value, None))
                value = temp
            values[param] = value
        arrays = {p: self._array_argument(a) for p, a in zip(helper.params, node.args)}
        self.inlined.append(_Inlined(helper, values, arrays))
        try:
            for check in helper.checks:   # (a local value a path may not use: its errors)
                self.next_temp += 1
                temp = d.Var(f"{ARGUMENT_PREFIX}{self.next_temp}", loc=self.loc(check))
                self.pending.append(self.assign(check, temp, self.expr(check), None))
            return self.expr(helper.body)
        finally:
            self.inlined.pop()

    def _array_argument(self, node: ast.expr) -> str | None:
        """The array an argument names (a name that is not a module or function), or None."""
        if not isinstance(node, ast.Name):
            return None
        if self.inlined and node.id in self.inlined[-1].arrays:
            return self.inlined[-1].arrays[node.id]
        obj = self.resolve(node.id)
        return None if isinstance(obj, types.ModuleType) or callable(obj) else node.id

    def callee(self, func: ast.expr) -> Any:
        if isinstance(func, ast.Name):
            return self.resolve(func.id)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            module = self.resolve(func.value.id)
            if isinstance(module, types.ModuleType):
                return getattr(module, func.attr, None)
        return None


def _is_value(obj: Any) -> bool:
    """Numbers and arrays (which may be callable in odd cases) count as values."""
    import numpy as np

    return isinstance(obj, (int, float, complex, np.ndarray, np.generic))


def _is_truth_value(expr: d.Expr) -> bool:
    if isinstance(expr, d.Compare):
        return True
    if isinstance(expr, d.UnaryOp) and expr.op == "not":
        return True
    if isinstance(expr, d.BoolOp):
        return all(_is_truth_value(v) for v in expr.values)
    if isinstance(expr, d.Const):
        return isinstance(expr.value, bool)
    if isinstance(expr, d.Call):
        return expr.func in ("bool", "math.isnan", "math.isinf", "math.isfinite")
    return False
