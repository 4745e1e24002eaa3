"""Final values of loop variables, computed from the bounds alone.

Python leaves every loop variable bound to its last value: for an inner loop, the last value of
the last instance that ran, which may be in an earlier outer iteration if the inner range is
empty in the last ones. A run whose loops did not execute in source order (parallel, or
reordered by the order checker) recovers these values by searching the enclosing iterations
from the last backwards until the loop's range is non-empty (usually at once). This needs the
bounds only, so it is impossible for a loop under an ``if`` (whether it ran depends on data):
``computable`` says so, and such a nest keeps its source order.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable

from asp_core.templates import render

from .. import dast as d
from ..pretty import PythonExpression
from .python import identifier

_IDS = itertools.count()


def loop_chains(nest: d.Nest) -> dict[str, list[list[d.Loop]]]:
    """Loop variable -> the chains (ancestors + the loop) of every loop with that variable."""
    chains: dict[str, list[list[d.Loop]]] = {}

    def visit(loop: d.Loop, above: list[d.Loop]) -> None:
        chain = above + [loop]
        chains.setdefault(loop.var, []).append(chain)
        for child in loop.body:
            if isinstance(child, d.Loop):
                visit(child, chain)

    visit(nest.loop, [])
    return chains


def computable(nest: d.Nest, variables: tuple[str, ...]) -> bool:
    """Can the final values of ``variables`` be found from the bounds alone?"""
    chains = loop_chains(nest)
    for var in variables:
        entries = chains.get(var, [])
        if len(entries) != 1 or any(loop.predicate for loop in entries[0]):
            return False  # sibling loops sharing a name, or a loop under an if
    return True


def finals_function(nest: d.Nest, params: tuple[str, ...], variables: tuple[str, ...]
                    ) -> Callable[..., tuple]:
    """A function of the nest's inputs returning the final value of each of ``variables``
    (``UNCHANGED`` where the loop never ran)."""
    chains = loop_chains(nest)
    printer = PythonExpression(name=identifier)

    def bounds(loop: d.Loop) -> str:
        return (f"range({printer.text(loop.start)}, {printer.text(loop.stop)}, "
                f"{printer.text(loop.step)})")

    finals = []
    for var in variables:
        (chain,) = chains[var]
        lines = []
        for depth, ancestor in enumerate(chain[:-1]):  # enclosing iterations, last first
            lines.append("    " * depth + f"for {identifier(ancestor.var)} in reversed({bounds(ancestor)}):")
        indent = "    " * (len(chain) - 1)
        lines += [f"{indent}r = {bounds(chain[-1])}", f"{indent}if len(r):",
                  f"{indent}    return r[-1]"]
        finals.append((identifier(var), lines))
    name = f"finals_{next(_IDS)}"
    source = render("loopnest/python_finals.py.mako", name=name,
                    params=[identifier(p) for p in params], finals=finals)
    namespace: dict[str, Any] = {"UNCHANGED": UNCHANGED}
    exec(compile(source, f"<asp {name}>", "exec"), namespace)  # noqa: S102
    function = namespace[name]
    function.__asp_source__ = source
    return function


class _Unchanged:
    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED = _Unchanged()
