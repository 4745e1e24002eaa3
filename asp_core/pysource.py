"""Small generated Python functions, written without a template.

A specializer's Python side often needs one tiny function made per nest or per variant: read
the inputs from a frame (``def gather(L, G, C): return (L['a'], G['n'], ...)``) or pass them to
a native entry point (``def call(inputs): return entry(ap(ffi, inputs[0]), ...)``). Mako would
compile a template for each kind first (about 10 ms per template in a new cache folder, paid by
a new user's first call); such a function is one ``return`` of a call or a tuple, so it is
written here directly. Anything longer belongs in a template.
"""

from __future__ import annotations

from typing import Sequence


def returning(name: str, params: Sequence[str], items: Sequence[str], callee: str = "") -> str:
    """Source of ``def name(params): return callee(items...)``, or of a function returning the
    tuple of ``items`` when ``callee`` is empty; one item a line (tracebacks name it)."""
    if not name.isidentifier() or not all(p.isidentifier() for p in params) or \
            (callee and not callee.isidentifier()):
        raise ValueError(f"not identifiers: {name!r}, {list(params)!r}, {callee!r}")
    lines = [f"def {name}({', '.join(params)}):", f"    return {callee}("]
    lines += [f"        {item}," for item in items]
    lines.append("    )")
    return "\n".join(lines) + "\n"
