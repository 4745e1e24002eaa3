"""Domain AST (DAST) node base: frozen dataclasses with children, replace, walk and dump.

A specializer declares its node types as frozen dataclasses deriving from ``Node``::

    @dataclass(frozen=True)
    class Add(Node):
        left: Node
        right: Node

Fields hold data only: other nodes, tuples of nodes, or plain values (str, int, float, bool,
None, tuples of those). ``loc`` (a keyword-only field, ignored by ``==`` and by ``dump``)
remembers where in the user's file the node came from. Nodes compare and hash by value, so
they can key caches; ``dump()`` is a canonical text used for stable cache keys.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Iterator, TypeVar

from .errors import SourceLocation

N = TypeVar("N", bound="Node")
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}   # per node class (``Node.field_names``)


@dataclass(frozen=True)
class Node:
    """Base of DAST nodes."""

    loc: SourceLocation | None = field(default=None, compare=False, repr=False, kw_only=True)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """Data fields in declaration order (``loc`` excluded); read once per class (the
        analyses walk trees of thousands of nodes: ``dataclasses.fields`` on every visit
        took a tenth of a generated kernel's analysis and code generation)."""
        names = _FIELD_NAMES.get(cls)
        if names is None:
            names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls)
                                              if f.name != "loc")
        return names

    def fields(self) -> Iterator[tuple[str, Any]]:
        for name in self.field_names():
            yield name, getattr(self, name)

    def children(self) -> Iterator["Node"]:
        """Direct child nodes, in field order (nodes inside tuples included)."""
        for name in self.field_names():
            value = getattr(self, name)
            if isinstance(value, Node):
                yield value
            elif isinstance(value, tuple):
                for item in value:
                    if isinstance(item, Node):
                        yield item

    def replace(self: N, **changes: Any) -> N:
        """A copy with some fields changed (the node itself is never modified)."""
        return dataclasses.replace(self, **changes)

    def walk(self) -> Iterator["Node"]:
        """This node and all its descendants, in pre-order."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(list(node.children())))

    def dump(self, indent: int | None = 2) -> str:
        """Canonical text of the tree; ``indent=None`` puts it on one line."""
        return _dump(self, indent, 0)


def _dump(value: Any, indent: int | None, level: int) -> str:
    if isinstance(value, Node):
        items = [f"{name}={_dump(v, indent, level + 1)}" for name, v in value.fields()]
        return _wrap(type(value).__name__ + "(", items, ")", indent, level)
    if isinstance(value, tuple):
        items = [_dump(v, indent, level + 1) for v in value]
        return _wrap("(", items, ",)" if len(items) == 1 else ")", indent, level)
    if isinstance(value, (frozenset, set)):
        return _dump(tuple(sorted(value, key=repr)), indent, level)
    if isinstance(value, (str, int, float, bool, type(None))):
        return repr(value)  # repr round-trips floats exactly
    raise TypeError(f"DAST fields hold data only, not {type(value).__name__}: {value!r}")


def _wrap(open_: str, items: list[str], close: str, indent: int | None, level: int) -> str:
    if indent is None or sum(len(i) for i in items) < 60:
        return open_ + ", ".join(items) + close
    pad = " " * (indent * (level + 1))
    return f"{open_}\n{pad}" + (",\n" + pad).join(items) + f"\n{' ' * (indent * level)}{close}"
