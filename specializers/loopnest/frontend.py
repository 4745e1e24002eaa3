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

from .lowering import KernelContext


@dataclass(frozen=True, eq=False)
class KernelSource:
    ctx: KernelContext
    nests: tuple[ast.For, ...]  # the top-level for statements, in source order

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
    ctx = KernelContext(fa=fa, free=free_variables(fa.func, fa),
                        local_names=frozenset(local_names(tree)),
                        self_name=params[0] if params else None)
    return KernelSource(ctx, tuple(top_level_loops(tree.body)))


def top_level_loops(body: list[ast.stmt]) -> list[ast.For]:
    """``for`` statements not inside another ``for`` (nor inside nested functions)."""
    found: list[ast.For] = []

    def visit(stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            if isinstance(stmt, ast.For):
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


def names_read_outside(tree: ast.AST, inside: ast.AST) -> frozenset[str]:
    """Names whose value a nest leaves may be read elsewhere in ``tree``: names loaded
    anywhere except within ``inside`` (a loop around the nest can bring earlier statements
    after it), not counting reads of ``v`` in the body of a ``for v in ...`` loop, which
    always see that loop's own binding."""
    skip = {id(n) for n in ast.walk(inside)}
    found: set[str] = set()

    def visit(node: ast.AST, rebound: frozenset[str]) -> None:
        if id(node) in skip:
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id not in rebound:
                found.add(node.id)
            return
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            visit(node.iter, rebound)
            inner = rebound | {node.target.id}
            for child in node.body:
                visit(child, inner)
            for child in node.orelse:  # runs after the loop: the loop's last value
                visit(child, rebound)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, rebound)

    visit(tree, frozenset())
    return frozenset(found)
