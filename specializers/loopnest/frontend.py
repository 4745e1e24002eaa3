"""Front end: a kernel method -> its AST, its context, and its top-level loop nests.

A *top-level* loop nest is a ``for`` statement of ``kernel()`` that is not inside another
``for`` (it may be inside an ``if``, ``while`` or ``with``); each becomes a call into the
specializer, and the statements around it run as Python (ALPyNA's closures).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable

from asp_core.frontend import FunctionAST, free_variables, function_ast, local_names

from .lowering import RETURN_FLAG, RETURN_VALUE, KernelContext


@dataclass(frozen=True, eq=False)
class KernelSource:
    ctx: KernelContext
    nests: tuple[ast.For | ast.While, ...]  # the top-level loops (``top_level_loops``)

    @property
    def fa(self) -> FunctionAST:
        return self.ctx.fa


def kernel_source(func: Callable) -> KernelSource:
    """Parse a kernel method and find its top-level loop nests."""
    fa = function_ast(func)
    tree = fa.tree
    if not isinstance(tree, ast.FunctionDef):
        raise TypeError(f"{fa.qualname}: kernel() must be a plain method (def), not a "
                        f"{type(tree).__name__}")
    params = fa.parameters()
    nests = tuple(top_level_loops(tree.body))
    names = set(local_names(tree))
    if any(isinstance(n, ast.Return) for nest in nests for n in ast.walk(nest)):
        names |= {RETURN_FLAG, RETURN_VALUE}   # set by the rewritten kernel (``rewrite``)
    ctx = KernelContext(fa=fa, free=free_variables(fa.func, fa), local_names=frozenset(names),
                        self_name=params[0] if params else None)
    return KernelSource(ctx, nests)


def top_level_loops(body: list[ast.stmt]) -> list[ast.For | ast.While]:
    """``for`` statements not inside another ``for`` (nor inside nested functions), and
    ``while`` loops over arrays without a ``for`` inside (``array_while``)."""
    found: list[ast.For | ast.While] = []

    def visit(stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            if isinstance(stmt, ast.For) or array_while(stmt):
                found.append(stmt)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            else:
                for field in ("body", "orelse", "finalbody"):
                    visit(getattr(stmt, field, []) or [])
                for handler in getattr(stmt, "handlers", []) or []:
                    visit(handler.body)
                for case in getattr(stmt, "cases", []) or []:
                    visit(case.body)

    visit(body)
    return found


def array_while(stmt: ast.stmt) -> bool:
    """Whether ``stmt`` is a ``while`` loop that is a nest of its own: one that indexes
    something (array work, such as a search) and has no ``for`` loop inside. Other ``while``
    loops run as Python, around the nests inside them (a convergence loop around sweeps keeps
    its sweeps compiled even where something else in it is not in the subset)."""
    if not isinstance(stmt, ast.While):
        return False
    nodes = list(ast.walk(stmt))
    return any(isinstance(n, ast.Subscript) for n in nodes) and not any(
        isinstance(n, (ast.For, ast.AsyncFor, ast.FunctionDef, ast.AsyncFunctionDef,
                       ast.ClassDef, ast.Lambda)) for n in nodes)


def guarded_loops(body: list[ast.stmt]) -> frozenset[int]:
    """Ids of the top-level ``for`` statements inside a ``try`` or ``with`` statement: code
    that may go on after such a nest raises, and read what it left in scalars and arrays."""
    found: set[int] = set()
    for stmt in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(stmt, (ast.Try, ast.With) + ((ast.TryStar,) if hasattr(ast, "TryStar")
                                                       else ())):
            found.update(id(loop) for loop in top_level_loops(stmt.body))
    return frozenset(found)


#: Builtins that read a frame's variables by name (any local may be read through them), and
#: attributes that reach a frame (``sys._getframe()``, ``inspect.currentframe()``, ``f_locals``).
FRAME_READERS = frozenset({"locals", "vars", "eval", "exec", "dir", "breakpoint"})
FRAME_ATTRIBUTES = frozenset({"_getframe", "currentframe", "f_locals", "f_back"})


def names_read_outside(tree: ast.AST, inside: ast.AST) -> frozenset[str]:
    """Names whose value a nest leaves may be read elsewhere in ``tree``: names loaded
    anywhere except within ``inside`` (a loop around the nest can bring earlier statements
    after it), not counting reads of ``v`` in the body of a ``for v in ...`` loop, which
    always see that loop's own binding. Also names deleted (``del v`` fails where ``v`` is
    unbound) or declared ``global`` or ``nonlocal`` (their value outlives the call), and, where
    the function calls a builtin that reads its frame by name (``FRAME_READERS``) or reaches a
    frame (``FRAME_ATTRIBUTES``), every name."""
    skip = {id(n) for n in ast.walk(inside)}
    found: set[str] = set()
    frame_read = False   # (then every name: walked once, at the end)
    stack: list[tuple[ast.AST, frozenset[str]]] = [(tree, frozenset())]
    while stack:  # no recursion: expressions may be deeper than Python's recursion limit
        node, rebound = stack.pop()
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            found.update(node.names)
        if id(node) in skip:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Load, ast.Del)):
            if node.id not in rebound or isinstance(node.ctx, ast.Del):
                found.add(node.id)
            frame_read = frame_read or node.id in FRAME_READERS and isinstance(node.ctx, ast.Load)
            continue
        if isinstance(node, ast.Attribute) and node.attr in FRAME_ATTRIBUTES:
            frame_read = True
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            stack.append((node.iter, rebound))
            inner = rebound | {node.target.id}
            stack.extend((child, inner) for child in node.body)
            # the else clause runs after the loop: it sees the loop's last value
            stack.extend((child, rebound) for child in node.orelse)
            continue
        stack.extend((child, rebound) for child in ast.iter_child_nodes(node))
    if frame_read:
        found.update(n.id for n in ast.walk(tree) if isinstance(n, ast.Name))
    return frozenset(found)
