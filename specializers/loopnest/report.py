"""What a kernel call did (``LoopKernel.last_call``) and the readable report of ``explain()``.

``KernelCall.nests`` has one ``NestCall`` per top-level loop nest, in source order: the backend
that ran it (``None`` if the nest did not run in that call), why it ran as the original Python
code (``fallback``), the loops that ran in parallel for every statement they enclose, and per
user assignment its line and its loop variables split into sequential, parallel and reduction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .analysis.budget import MARK as BUDGET_MARK
from .pipeline import KernelAnalysis, NestAnalysis, RejectedNest
from .pretty import expression
from .schedule.tree import Schedule


@dataclass(frozen=True)
class StatementCall:
    line: int
    text: str
    sequential: tuple[str, ...]
    parallel: tuple[str, ...]
    reductions: tuple[str, ...]


@dataclass(frozen=True)
class NestCall:
    index: int
    line: int
    backend: str | None          # "python" | "c" | "openmp" | "cuda"; None: did not run
    fallback: str | None         # why the original Python code ran instead; None if accepted
    parallel_loops: tuple[str, ...]
    statements: tuple[StatementCall, ...]
    scalars: dict[str, str] = field(default_factory=dict)  # scalar -> private/reduction/carried

    @property
    def ran(self) -> bool:
        return self.backend is not None


@dataclass(frozen=True)
class KernelCall:
    nests: tuple[NestCall, ...]


def nest_call(analysis: NestAnalysis | RejectedNest, backend: str | None, fallback: str | None,
              schedule: Schedule | None) -> NestCall:
    if isinstance(analysis, RejectedNest):
        return NestCall(analysis.index, analysis.line, backend, fallback, (), ())
    schedule = schedule or analysis.sequential
    statements = tuple(
        StatementCall(stmt.loc.line if stmt.loc else analysis.line, analysis.text(stmt.sid),
                      sch.sequential, sch.parallel, sch.reductions)
        for stmt, sch in zip(analysis.statements, schedule.statements) if stmt.kind == "user")
    scalars = {name: analysis.scalars.overall(name) for name in analysis.names.scalars}
    parallel = schedule.parallel_loops() if fallback is None else ()
    return NestCall(analysis.index, analysis.line, backend, fallback, parallel, statements, scalars)


class Report:
    """A readable report: ``print(report)``, or shown as text in a notebook."""

    def __init__(self, text: str):
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str:
        return "```text\n" + self.text + "\n```"


def explain_text(kernel: KernelAnalysis, call: KernelCall | None, plans=()) -> str:
    fa = kernel.source.fa
    lines = [f"kernel {fa.qualname} ({fa.filename}:{fa.tree.lineno}): "
             f"{len(kernel.nests)} top-level loop nest(s)"]
    plans = list(plans) or [None] * len(kernel.nests)
    for index, analysis in enumerate(kernel.nests):
        record = call.nests[index] if call else None
        lines.append("")
        lines += _nest_text(analysis, record)
        plan = plans[index] if record is not None and record.ran else None
        if plan is not None and not isinstance(analysis, RejectedNest):
            lines += _plan_text(analysis, plan)
    return "\n".join(lines)


def _plan_text(analysis: NestAnalysis, plan) -> list[str]:
    """Dependences (every tested pair, with its test) and the schedule tree."""
    from .schedule.tree import SLoop

    loops = {l.lid: l.var for l in analysis.access.loops}
    out = ["  dependences (source -> sink: kind, direction vector over the common loops, "
           "distance, carrying loop; the test that decided):"]
    edges = plan.graph.edges

    def edge_text(e) -> str:
        common = [loops[l] for l in e.loops]
        vector = "(" + ", ".join(e.vector) + ")"
        dist = "(" + ", ".join("-" if d is None else str(d) for d in e.distance) + ")"
        level = f"carried by {common[e.level - 1]}" if e.level else "loop-independent"
        red = f", {e.reduction} reduction" if e.reduction else ""
        return (f"S{e.source} -> S{e.sink} {e.kind} on {e.variable}: {vector} over "
                f"({', '.join(common)}), distance {dist}, {level}{red}")

    for pair in plan.graph.pairs:
        out.append(f"    {pair.first} / {pair.second}: {pair.outcome}")
        for index in pair.edges:
            out.append(f"        {edge_text(edges[index])}")
    stopped = sum(BUDGET_MARK in pair.outcome for pair in plan.graph.pairs)
    if stopped:
        out.append(f"    {stopped} pair(s) stopped at the analysis budget ({BUDGET_MARK}): "
                   "every direction a test had not ruled out when it stopped is assumed, so "
                   "loops may run sequentially that could run in parallel")
    scalar = [e for e in edges if e.test == "scalar"]
    if scalar:
        out.append("    through scalars:")
        out += [f"        {edge_text(e)}" for e in scalar]
    if analysis.order_restriction:
        out.append(f"  schedule: source order kept, because {analysis.order_restriction}")
    out.append("  schedule:")

    def visit(node, depth: int) -> None:
        pad = "    " + "  " * depth
        if isinstance(node, SLoop):
            kind = "parallel" if node.parallel else "sequential"
            extra = "".join(f", reduction({op}: {v})" for v, op in node.reductions)
            if node.private:
                extra += f", private({', '.join(node.private)})"
            out.append(f"{pad}for {loops[node.lid]}  [{kind}{extra}]")
            for child in node.body:
                visit(child, depth + 1)
        else:
            out.append(f"{pad}S{node.sid}: {analysis.text(node.sid)}")

    for node in plan.schedule.root:
        visit(node, 0)
    return out


def _nest_text(analysis: NestAnalysis | RejectedNest, record: NestCall | None) -> list[str]:
    head = f"nest {analysis.index} at line {analysis.line}"
    if record is not None:
        ran = f"ran on {record.backend}" if record.ran else "did not run in this call"
        head += f": {ran}"
        if record.fallback:
            head += f" (as the original Python: {record.fallback})"
    out = [head]
    if isinstance(analysis, RejectedNest):
        out.append(f"  not specialized: {analysis.error}")
        return out
    out.append("  loops:")
    for loop in analysis.access.loops:
        guard = f" when {loop.predicate}" if loop.predicate else ""
        src = next(l for l in _loops(analysis) if l.lid == loop.lid)
        out.append(f"    {'  ' * (loop.depth - 1)}for {loop.var} in range({expression(src.start)}, "
                   f"{expression(src.stop)}, {expression(src.step)}){guard}")
    out.append("  statements:")
    schedule = analysis.sequential
    for stmt in analysis.statements:
        sch = schedule.statements[stmt.sid]
        where = f"line {stmt.loc.line}" if stmt.loc else ""
        kind = " (if-conversion predicate)" if stmt.kind == "predicate" else ""
        out.append(f"    S{stmt.sid} {where}: {analysis.text(stmt.sid)}{kind}")
        if record is not None and record.ran and stmt.kind == "user":
            rec = next((s for s in record.statements if s.text == analysis.text(stmt.sid)), None)
            if rec is not None:
                out.append(f"        sequential {list(rec.sequential)}  parallel "
                           f"{list(rec.parallel)}  reductions {list(rec.reductions)}")
        subs = [a for a in analysis.access.statement(stmt.sid).accesses]
        for acc in subs:
            forms = ", ".join(_affine_text(s) if s is not None else "non-affine"
                              for s in acc.subscripts)
            out.append(f"        {'writes' if acc.write else 'reads '} {acc.array}[{forms}]")
    if analysis.names.scalars or analysis.names.temps:
        out.append("  scalars:")
        for c in analysis.scalars.classes:
            loop = next(l for l in analysis.access.loops if l.lid == c.lid)
            extra = f" ({c.op})" if c.op else (" (last value kept)" if c.lastprivate else "")
            out.append(f"    {c.name} in loop {loop.var}: {c.kind}{extra}")
        if analysis.scalars.live_out:
            out.append(f"    read after the nest: {', '.join(analysis.scalars.live_out)}")
    return out


def _loops(analysis: NestAnalysis):
    from .dast import loops

    return loops(analysis.nest.loop)


def _affine_text(form) -> str:
    """``2*i + n*j - 1`` style text of an affine form."""
    parts = []
    for term in form.terms:
        coeff = _poly_text(term.coeff)
        parts.append(term.var if coeff == "1" else f"-{term.var}" if coeff == "-1"
                     else f"{coeff}*{term.var}")
    const = _poly_text(form.const)
    if const != "0" or not parts:
        parts.append(const)
    return " + ".join(parts).replace("+ -", "- ")


def _poly_text(poly) -> str:
    if not poly.terms:
        return "0"
    out = []
    for m in poly.terms:
        factors = [expression(a) for a in m.atoms]
        if m.coeff == -1 and factors:
            factors[0] = "-" + factors[0]
        elif m.coeff != 1 or not factors:
            factors.insert(0, str(m.coeff))
        out.append("*".join(factors))
    text = " + ".join(out).replace("+ -", "- ")
    return f"({text})" if len(out) > 1 else text
