"""Visitors and transformers over both Python ``ast`` nodes and DAST nodes.

``NodeVisitor.visit(node)`` calls ``visit_<ClassName>`` if defined, else ``generic_visit``, which
visits the children. ``NodeTransformer`` returns a new tree: a ``visit_*`` method returns the
replacement node, ``None`` to drop the node from a list field, or a list to splice in several.
Unlike ``ast.NodeTransformer`` it never modifies the input: changed nodes are copies (DAST nodes
through ``replace``; Python ``ast`` nodes through a shallow copy that keeps their positions).
"""

from __future__ import annotations

import ast
import copy
from typing import Any, Iterator

from .dast import Node

_AST_POSITIONS = ("lineno", "col_offset", "end_lineno", "end_col_offset")


def iter_fields(node: Any) -> Iterator[tuple[str, Any]]:
    """(name, value) of each field of a Python ``ast`` node or a DAST node."""
    if isinstance(node, Node):
        yield from node.fields()
    elif isinstance(node, ast.AST):
        yield from ast.iter_fields(node)
    else:
        raise TypeError(f"not a syntax tree node: {node!r}")


def iter_child_nodes(node: Any) -> Iterator[Any]:
    """Direct children of ``node`` (inside list or tuple fields too)."""
    for _, value in iter_fields(node):
        if isinstance(value, (Node, ast.AST)):
            yield value
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, (Node, ast.AST)):
                    yield item


class NodeVisitor:
    """Walks a tree calling ``visit_<ClassName>`` methods; ``generic_visit`` visits children."""

    def visit(self, node: Any) -> Any:
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is None:
            return self.generic_visit(node)
        return method(node)

    def generic_visit(self, node: Any) -> Any:
        for child in iter_child_nodes(node):
            self.visit(child)
        return None


class NodeTransformer(NodeVisitor):
    """Builds a transformed copy of a tree; unchanged subtrees are shared, not copied."""

    def generic_visit(self, node: Any) -> Any:
        changes = {}
        for name, value in iter_fields(node):
            new_value = self._transform_field(value)
            if new_value is not value:
                changes[name] = new_value
        if not changes:
            return node
        if isinstance(node, Node):
            return node.replace(**changes)
        clone = copy.copy(node)
        for name, value in changes.items():
            setattr(clone, name, value)
        return clone

    def _transform_field(self, value: Any) -> Any:
        if isinstance(value, (Node, ast.AST)):
            return self.visit(value)
        if isinstance(value, (list, tuple)):
            items: list[Any] = []
            changed = False
            for item in value:
                if not isinstance(item, (Node, ast.AST)):
                    items.append(item)
                    continue
                result = self.visit(item)
                if result is not item:
                    changed = True
                if result is None:
                    continue
                if isinstance(result, list):
                    items.extend(result)
                else:
                    items.append(result)
            if not changed:
                return value
            return type(value)(items) if isinstance(value, tuple) else items
        return value


def copy_location(new: ast.AST, old: ast.AST) -> ast.AST:
    """Give ``new`` the source position of ``old`` (returns ``new``)."""
    for attr in _AST_POSITIONS:
        if hasattr(old, attr):
            setattr(new, attr, getattr(old, attr))
    return new
