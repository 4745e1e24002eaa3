"""The plain-Python executor: a scheduled nest as Python source, compiled with ``exec``.

The slow reference that isolates front-end bugs from back-end bugs: it runs the DAST (after
if-conversion and scheduling) with Python's own semantics, on the same NumPy objects. With
``order="source"`` every loop runs in order. The order checker (``order="reversed"`` or
``"shuffled"``) runs each *parallel* loop in reversed or shuffled order instead: if the
analysis wrongly called a loop parallel, its results differ from plain Python's. Private
scalars marked ``lastprivate`` and the loop variables of loops inside a reordered loop get the
values of the sequentially last iteration, as in any parallel run. A tiled schedule
(``schedule.tiling``, under ``ASP_TILE``) runs in its blocked order, parallel loops reordered
within their blocks.
"""

from __future__ import annotations

import random
from typing import Any, Callable

from asp_core.templates import render

from .. import dast as d
from .. import intrinsics
from ..pretty import PythonExpression
from ..schedule.tiling import triangular
from ..schedule.tree import Schedule, SLoop, SStmt, STile
from .walker import walk

ORDERS = ("source", "reversed", "shuffled")


def identifier(name: str) -> str:
    """A Python identifier for a DAST name (``self.n`` -> ``__asp_attr_self_n``)."""
    return "__asp_attr_" + name.replace(".", "_") if "." in name else name


def function_identifier(canonical: str) -> str:
    return "__asp_fn_" + canonical.replace(".", "_")


class PythonEmitter:
    """Emits Python statements for the walker."""

    def __init__(self, order: str = "source"):
        if order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}")
        self.order = order
        self.lines: list[str] = []
        self.depth = 0
        self.calls: set[str] = set()
        self.counter = 0
        self.tiles: dict[int, str] = {}   # lid -> the block its open tile loop is at
        self.open: dict[int, d.Loop] = {}  # lid -> the loop of each open tile loop
        self.corners: dict[int, str] = {}  # lid -> (first, last) values its block may hold
        self.expr = PythonExpression(name=identifier, call=self._call)

    def _call(self, canonical: str) -> str:
        self.calls.add(canonical)
        return function_identifier(canonical)

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def text(self, expr: d.Expr) -> str:
        return self.expr.text(expr)

    def tile(self, loop: d.Loop, node: STile, body: Callable[[], None]) -> None:
        """A tile loop (``schedule.tiling``): the loop's range in blocks of ``node.size``, in
        order; the loop itself runs one block inside (see ``loop``). A triangular loop
        (``tiling.triangular``) walks its iterations' numbers, up to the most it runs at a
        corner of the blocks it follows, and runs, inside, those of its own range."""
        self.counter += 1
        followed = triangular(loop, [self.open[lid] for lid in self.tiles])
        if followed:   # (blocks of its iterations' numbers, over the most it runs)
            hull = f"__asp_hull{self.counter}"
            corners = " ".join(f"for {identifier(o.var)} in {self.corners[o.lid]}"
                               for o in followed)
            span = f"range({self.text(loop.start)}, {self.text(loop.stop)}, {self.text(loop.step)})"
            self.line(f"{hull} = max([len({span}) {corners}])")
            tile = f"__asp_tile{self.counter}"
            self.line(f"for {tile} in range(0, {hull}, {node.size}):")
            self.tiles[loop.lid] = f"{span}[{tile}:{tile} + {node.size}]"
            self.corners[loop.lid] = "()"   # (followed by none: ``tiling._simple``)
        else:
            blocks = f"__asp_blocks{self.counter}"
            self.line(f"{blocks} = range({self.text(loop.start)}, {self.text(loop.stop)}, "
                      f"{self.text(loop.step)})")
            self.line(f"for __asp_tile{self.counter} in range(0, len({blocks}), {node.size}):")
            self.tiles[loop.lid] = f"{blocks}[__asp_tile{self.counter}:__asp_tile{self.counter} + " \
                                   f"{node.size}]"
            self.corners[loop.lid] = f"({self.tiles[loop.lid]}[0], {self.tiles[loop.lid]}[-1])"
        self.depth += 1
        self.open[loop.lid] = loop
        before = len(self.lines)
        body()
        if len(self.lines) == before:
            self.line("pass")
        del self.tiles[loop.lid], self.open[loop.lid], self.corners[loop.lid]
        self.depth -= 1

    def loop(self, loop: d.Loop, node: SLoop, body: Callable[[], None]) -> None:
        if loop.predicate:
            self.line(f"if {identifier(loop.predicate)}:")
            self.depth += 1
        bounds = self.tiles.get(loop.lid) or \
            f"range({self.text(loop.start)}, {self.text(loop.stop)}, {self.text(loop.step)})"
        var = identifier(loop.var)
        if node.parallel and self.order != "source":
            self._reordered_loop(var, bounds, node, body)
        else:
            self.line(f"for {var} in {bounds}:")
            self.depth += 1
            before = len(self.lines)
            body()
            if len(self.lines) == before:
                self.line("pass")
            self.depth -= 1
        if loop.predicate:
            self.depth -= 1

    def _reordered_loop(self, var: str, bounds: str, node: SLoop, body: Callable[[], None]) -> None:
        """The loop over its range in another order; scalars marked lastprivate get the values
        of the sequentially last iteration (loop variables are set afterwards, from the
        bounds: see ``finals``)."""
        self.counter += 1
        rng, snap = f"__asp_range{self.counter}", f"__asp_last{self.counter}"
        keep = [identifier(s) for s in node.lastprivate]
        self.line(f"{rng} = {bounds}")
        self.line(f"for {var} in __asp_order({rng}):")
        self.depth += 1
        body()
        if keep:
            self.line(f"if {var} == {rng}[-1]:")
            self.line(f"    {snap} = ({', '.join(keep)},)")
        self.depth -= 1
        if keep:
            self.line(f"if len({rng}):")
            self.line(f"    ({', '.join(keep)},) = {snap}")

    def statement(self, stmt: d.Assign, node: SStmt) -> None:
        if stmt.kind == "break":   # (``ifconvert``)
            self.line(f"if {identifier(stmt.predicate)}: break" if stmt.predicate else "break")
            return
        target = self.text(stmt.target)
        value = self.text(stmt.value)
        if stmt.predicate:
            self.line(f"if {identifier(stmt.predicate)}:")
            self.line(f"    {target} = {value}")
        else:
            self.line(f"{target} = {value}")


def python_source(nest: d.Nest, schedule: Schedule, params: tuple[str, ...],
                  outputs: tuple[str, ...], *, name: str, header: str,
                  order: str = "source") -> tuple[str, set[str]]:
    """Python source of the executor, and the canonical names of the intrinsics it calls."""
    emitter = PythonEmitter(order)
    walk(schedule, nest, emitter)
    source = render("loopnest/python_nest.py.mako", header=header, name=name,
                    params=[identifier(p) for p in params], body=emitter.lines,
                    outputs=[identifier(o) for o in outputs])
    return source, emitter.calls


def compile_python(source: str, name: str, calls: set[str], filename: str,
                   seed: int | None = None) -> Callable[..., Any]:
    """Execute the generated source and return the function ``name``."""
    namespace: dict[str, Any] = {function_identifier(c): intrinsics.by_name(c).func for c in calls}
    order_rng = random.Random(seed)

    def order(r: range):
        items = list(r)
        if seed is None:
            items.reverse()
        else:
            order_rng.shuffle(items)
        return items

    namespace["__asp_order"] = order
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - our own generated code
    return namespace[name]
