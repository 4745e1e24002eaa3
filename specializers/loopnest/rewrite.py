"""Rewriting a kernel: each top-level loop nest becomes a call into the specializer.

After ALPyNA's closures: in a copy of ``kernel()``'s AST, every top-level ``for`` statement
``F`` (numbered ``k``) is replaced by::

    __asp_r = __asp_nests[k](__asp_locals())
    if __asp_r is __asp_fallback:
        F                                # the original code, run by the interpreter
    else:
        if __asp_r[0] is not __asp_unbound:
            s = __asp_r[0]               # scalars and loop variables the nest leaves bound
        ...

A nest with a ``return`` inside has ``__asp_rf = False`` before the call and, after the writes,
``if __asp_rf: return __asp_rv`` (``lowering.returning``); its original code returns itself.

So statements before, between and after nests run as Python, the nest sees the current
values of the kernel's locals, and scalars written by the nest are left as Python would leave
them. Where the hook asks for the original code, the time it takes is reported to
``__asp_done[k]`` (in seconds, after the loop ends normally): the cost model's measurement of
the plain-Python variant. The function is compiled with the original file name and line numbers, closes over the
original closure cells (and ``__class__``, so ``super()`` works) and uses the original globals.
"""

from __future__ import annotations

import ast
import builtins
import copy
import sys
import time
import types
from typing import Any, Callable, Sequence

from asp_core.frontend import FunctionAST, ast_depth, copy_ast, fix_missing_locations

from .lowering import RETURN_FLAG, RETURN_VALUE

HOOKS = "__asp_nests"
FALLBACK = "__asp_fallback"
UNBOUND = "__asp_unbound"
LOCALS = "__asp_locals"
RESULT = "__asp_r"
DONE = "__asp_done"
CLOCK = "__asp_clock"
STARTED = "__asp_t0"


class _Sentinel:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: Returned by a nest hook: run the original code of the nest instead.
RUN_ORIGINAL = _Sentinel("RUN_ORIGINAL")
#: Passed for, and returned as, a variable that has no value (stays unbound).
NO_VALUE = _Sentinel("NO_VALUE")


def rewrite_kernel(fa: FunctionAST, nest_nodes: Sequence[ast.For],
                   outputs: Sequence[Sequence[str]], hooks: Sequence[Callable[[dict], Any]],
                   done: Sequence[Callable[[Any, float], None]] | None = None,
                   self_name: str | None = None) -> types.FunctionType:
    """The kernel with nest ``k`` calling ``hooks[k]`` and writing back ``outputs[k]``; the
    time of each run of the original code of nest ``k`` goes to ``done[k](self, seconds)``
    (``self_name``: the kernel's first parameter)."""
    if done is None or self_name is None:
        done, self_name = None, None
    tree = copy_ast(fa.tree)
    originals = {id(n): i for i, n in enumerate(nest_nodes)}
    # deepcopy keeps structure: find the copies of the nest nodes by position.
    copies = _matching_nodes(fa.tree, tree, originals)
    _Replacer(copies, outputs, self_name).visit(tree)
    tree.decorator_list = []
    func = fa.func
    freevars = list(func.__code__.co_freevars)
    params = [HOOKS, FALLBACK, UNBOUND, LOCALS, DONE, CLOCK] + freevars
    if "__class__" in freevars:
        # Mention __class__ so the new function closes over it: zero-argument super() needs it.
        tree.body.insert(0, ast.copy_location(ast.Expr(ast.Name("__class__", ast.Load())),
                                              tree.body[0]))
    fields = dict(name="__asp_make",
                  args=ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params],
                                     kwonlyargs=[], kw_defaults=[], defaults=[]),
                  body=[tree, ast.Return(ast.Name(tree.name, ast.Load()))], decorator_list=[],
                  returns=None)
    if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
        fields["type_params"] = []
    maker = ast.FunctionDef(**fields)
    ast.copy_location(maker, tree)
    module = fix_missing_locations(ast.Module(body=[maker], type_ignores=[]))
    namespace: dict[str, Any] = {}
    exec(compile_deep(module, fa.filename), namespace)  # noqa: S102 - the user's own code
    values = {HOOKS: tuple(hooks), FALLBACK: RUN_ORIGINAL, UNBOUND: NO_VALUE,
              LOCALS: builtins.locals, DONE: tuple(done or ()), CLOCK: time.perf_counter}
    inner = namespace["__asp_make"](*[values.get(p) for p in params[:6]],
                                    *[None for _ in freevars])
    cells = dict(zip(freevars, func.__closure__ or ()))
    closure = tuple(cells[name] if name in cells else types.CellType(values[name])
                    for name in inner.__code__.co_freevars)
    result = types.FunctionType(inner.__code__, func.__globals__, func.__name__,
                                func.__defaults__, closure)
    result.__kwdefaults__ = func.__kwdefaults__
    result.__qualname__ = func.__qualname__
    result.__doc__ = func.__doc__
    result.__module__ = func.__module__
    return result


def compile_deep(module: ast.Module, filename: str) -> types.CodeType:
    """``compile`` of an AST, with room for its depth: CPython converts an AST object level
    by level, counting each against the recursion limit, so a kernel with a 2000-term sum
    (which Python compiles from its source) fails there at the default limit of 1000. The
    conversion is C code with small frames; the limit is raised for it alone."""
    depth, _ = ast_depth(module)
    limit = sys.getrecursionlimit()
    if depth + 200 <= limit:
        return compile(module, filename, "exec")
    sys.setrecursionlimit(depth + limit)
    try:
        return compile(module, filename, "exec")
    finally:
        sys.setrecursionlimit(limit)


def _matching_nodes(original: ast.AST, copied: ast.AST, wanted: dict[int, int]) -> dict[int, int]:
    """id(copied node) -> nest index, for the copies of the nodes in ``wanted``."""
    found = {}
    for a, b in zip(ast.walk(original), ast.walk(copied)):
        if id(a) in wanted:
            found[id(b)] = wanted[id(a)]
    return found


class _Replacer(ast.NodeTransformer):
    def __init__(self, nests: dict[int, int], outputs: Sequence[Sequence[str]],
                 self_name: str | None):
        self.nests = nests
        self.outputs = outputs
        self.self_name = self_name

    def visit_While(self, node: ast.While):
        return self.visit_For(node)   # a top-level while over arrays is a nest too

    def visit_For(self, node: ast.For | ast.While):
        index = self.nests.get(id(node))
        if index is None:
            return self.generic_visit(node)
        call = ast.Assign(
            targets=[ast.Name(RESULT, ast.Store())],
            value=ast.Call(ast.Subscript(ast.Name(HOOKS, ast.Load()), ast.Constant(index),
                                         ast.Load()),
                           [ast.Call(ast.Name(LOCALS, ast.Load()), [], [])], []))
        writes = []
        for position, name in enumerate(self.outputs[index]):
            value = ast.Subscript(ast.Name(RESULT, ast.Load()), ast.Constant(position), ast.Load())
            writes.append(ast.If(
                test=ast.Compare(value, [ast.IsNot()], [ast.Name(UNBOUND, ast.Load())]),
                body=[ast.Assign([ast.Name(name, ast.Store())], copy.deepcopy(value))],
                orelse=[]))
        fallback = [node]
        if self.self_name is not None:  # time the original code for the cost model
            clock = ast.Call(ast.Name(CLOCK, ast.Load()), [], [])
            start = ast.Assign([ast.Name(STARTED, ast.Store())], clock)
            report = ast.Expr(ast.Call(
                ast.Subscript(ast.Name(DONE, ast.Load()), ast.Constant(index), ast.Load()),
                [ast.Name(self.self_name, ast.Load()),
                 ast.BinOp(copy.deepcopy(clock), ast.Sub(), ast.Name(STARTED, ast.Load()))],
                []))
            fallback = [start, node, report]
        returns = [n for n in ast.walk(node) if isinstance(n, ast.Return)]
        if returns:   # the nest returns where its flag is up (``lowering.returning``)
            value = ast.Name(RETURN_VALUE, ast.Load()) if returns[0].value is not None else None
            writes.append(ast.If(test=ast.Name(RETURN_FLAG, ast.Load()),
                                 body=[ast.Return(value)], orelse=[]))
        branch = ast.If(
            test=ast.Compare(ast.Name(RESULT, ast.Load()), [ast.Is()], [ast.Name(FALLBACK, ast.Load())]),
            body=fallback, orelse=writes or [ast.Pass()])
        # New nodes take the position of the loop they replace (fix_missing_locations fills
        # their children); the original loop keeps its own positions.
        out = [ast.copy_location(call, node), ast.copy_location(branch, node)]
        if returns:
            lowered = ast.Assign([ast.Name(RETURN_FLAG, ast.Store())], ast.Constant(False))
            out.insert(0, ast.copy_location(lowered, node))
        return out
