"""Last values of loop variables where the bounds cannot tell them.

Python leaves a loop variable bound to the last value it took. The compiled variants compute
those values from the bounds (``codegen.finals``), which is impossible for a loop a ``break``
(or a ``return``) may end early, a loop under an ``if`` or after one that may ``continue`` or
``break`` (whether it ran depends on data), the loops inside those, and two loops sharing a
variable. For each such variable that
the kernel reads after the nest, this pass (on the lowered nest, before if-conversion) makes
every loop with that variable assign it, as its first statement, to a scalar of the nest
(``__asp_last_v = v``): after the nest, that scalar holds the value of the last iteration that
began, as Python's variable does, and keeps its value on entry (the kernel's ``v``) where no
such loop ran. ``names`` hands the scalar back to the kernel as ``v`` (``NestNames.shadows``).
"""

from __future__ import annotations

from . import dast as d

SHADOW_PREFIX = "__asp_last_"


def shadow_of(var: str) -> str:
    return SHADOW_PREFIX + var


def variable_of(shadow: str) -> str:
    """The loop variable a shadow scalar stands for (``shadow`` itself if it is not one)."""
    return shadow[len(SHADOW_PREFIX):] if shadow.startswith(SHADOW_PREFIX) else shadow


def needing_shadows(nest: d.Nest, live: frozenset[str]) -> frozenset[str]:
    """The variables read after the nest whose last values the bounds do not tell: of loops
    that end early or are inside one, under an ``if`` or inside one (whether they ran depends
    on data), or of two loops or more (which ran last)."""
    out: set[str] = set()
    count: dict[str, int] = {}

    def visit(loop: d.Loop, unknown: bool) -> None:
        count[loop.var] = count.get(loop.var, 0) + 1
        unknown = unknown or _ends_early(loop.body)
        if unknown and loop.var in live:
            out.add(loop.var)
        for stmt, branch in _stmts(loop.body):
            if isinstance(stmt, d.Loop):
                visit(stmt, unknown or branch)

    visit(nest.loop, False)
    kept = {variable_of(s.target.name) for s in nest.walk() if isinstance(s, d.Assign)
            and isinstance(s.target, d.Var) and s.target.name.startswith(SHADOW_PREFIX)}
    # (``counted`` keeps the last value of a loop it rewrote: its other loops must too)
    return frozenset(out | kept | {v for v, n in count.items() if n > 1 and v in live})


def with_shadows(nest: d.Nest, variables: frozenset[str]) -> d.Nest:
    """``nest`` with ``__asp_last_v = v`` first in the body of every loop whose variable ``v``
    is one of ``variables``."""
    if not variables:
        return nest

    def loop(node: d.Loop) -> d.Loop:
        body = d.map_loops(node.body, loop)
        if node.var in variables:
            keep = d.Assign(d.Var(shadow_of(node.var), loc=node.loc), d.Var(node.var, loc=node.loc),
                            sid=-1, loc=node.loc)
            body = (keep,) + body
        return node.replace(body=body)

    return nest.replace(loop=loop(nest.loop))


def _ends_early(body: tuple[d.Stmt, ...]) -> bool:
    """Whether a ``break`` of this loop is in ``body`` (under ifs, not in inner loops)."""
    return any(isinstance(s, d.Break) for s, _ in _stmts(body))


def _stmts(body: tuple[d.Stmt, ...], branch: bool = False):
    """(statement, under an if?) for the statements of a loop body, those inside its ifs
    included (not inner loops'). A statement after an ``if`` that may leave the iteration
    (a ``continue`` or ``break`` in it) runs only where the iteration went on: as if under
    an ``if`` too."""
    for stmt in body:
        yield stmt, branch
        if isinstance(stmt, d.If):
            inside = [*_stmts(stmt.body, True), *_stmts(stmt.orelse, True)]
            yield from inside
            if any(isinstance(s, (d.Break, d.Continue)) for s, _ in inside):
                branch = True
