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
    threads: int | None = None        # OpenMP threads the cost model chose
    predicted_s: float | None = None  # the cost model's prediction for the variant that ran
    measured_s: float | None = None   # and its measured time (the variant's own run)

    @property
    def ran(self) -> bool:
        return self.backend is not None


@dataclass(frozen=True)
class KernelCall:
    nests: tuple[NestCall, ...]
    cold: bool = False   # the kernel ran as its original code, not analysed yet (coldstart)
    settled: bool = False  # it ran as its original code, as its nests last chose (settled)


def nest_call(analysis: NestAnalysis | RejectedNest, backend: str | None, fallback: str | None,
              schedule: Schedule | None, runner=None) -> NestCall:
    if isinstance(analysis, RejectedNest):
        return NestCall(analysis.index, analysis.line, backend, fallback, (), ())
    threads = predicted = measured = None
    estimate = runner.last_estimate if runner is not None and backend is not None else None
    if estimate is not None:
        threads = _threads(estimate.label)
        predicted = runner.selector.corrected(estimate)
        measured = runner.last_measured_s
    schedule = schedule or analysis.sequential
    statements, scalars, parallel = _static_parts(analysis, schedule)
    if fallback is not None:
        parallel = ()
    if backend == "python" and estimate is not None:
        parallel = ()  # the cost model left it to the original code
    return NestCall(analysis.index, analysis.line, backend, fallback, parallel, statements,
                    dict(scalars), threads, predicted, measured)


_PARTS: dict[int, tuple] = {}   # id(schedule) -> (schedule, analysis, its parts)
_PARTS_SIZE = 256


def _static_parts(analysis: NestAnalysis, schedule: Schedule) -> tuple:
    """The parts of a nest's call record that depend on its analysis and schedule alone (the
    statements' text and loops, the scalars, the parallel loops), made once per schedule:
    printing them took 0.3 ms, on every read of ``last_call``."""
    found = _PARTS.get(id(schedule))
    if found is not None and found[0] is schedule and found[1] is analysis:
        return found[2]
    statements = tuple(
        StatementCall(stmt.loc.line if stmt.loc else analysis.line, analysis.text(stmt.sid),
                      sch.sequential, sch.parallel, sch.reductions)
        for stmt, sch in zip(analysis.statements, schedule.statements) if stmt.kind == "user")
    scalars = {name: analysis.scalars.overall(name) for name in analysis.names.scalars}
    parts = (statements, scalars, schedule.parallel_loops())
    if len(_PARTS) >= _PARTS_SIZE:
        _PARTS.clear()
    _PARTS[id(schedule)] = (schedule, analysis, parts)
    return parts


def _threads(label: str) -> int | None:
    _, _, threads = label.partition("@")
    return int(threads) if threads else None


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


def explain_text(kernel: KernelAnalysis, call: KernelCall | None, plans=(), runners=()) -> str:
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
            lines += _plan_text(analysis, plan, record.backend)
        if runners and record is not None and record.ran:
            lines += tiles_text(runners[index], record.backend)
            lines += choice_text(runners[index])
    return "\n".join(lines)


def tiles_text(runner, backend: str | None) -> list[str]:
    """The arrays the variant that ran reads through transposed copies (``schedule.packing``),
    the bands it tiled (``schedule.tiling``), with their blocks and why,
    the loops it unrolled and jammed in their blocks, and the few constant iterations it
    unrolled completely (``codegen.c.CEmitter.pragmas``)."""
    for variant in runner._executors.values():
        module = getattr(variant, "module", None)
        if module is not None and getattr(variant, "backend", backend) == backend and \
                (getattr(module, "tiles", ()) or getattr(module, "jams", ()) or
                 getattr(module, "packs", ())):
            return [f"  {backend}: {text}" for text in module.packs + module.tiles + module.jams]
    return []


def device_text(runner, backend: str) -> list[str]:
    """How a device variant ran the last call: its kernels, their grids and host loops."""
    from .runtime import DEVICE

    if backend not in DEVICE:
        return []
    found = [run for run in runner._executors.values()
             if getattr(run, "backend", None) == backend and hasattr(run, "module")]
    if not found:
        return []
    out = [f"  {backend} kernels:"]
    for kernel in found[-1].module.kernels:
        if kernel.combine:
            shape = "one work item combining the lanes' partial results of " + \
                ", ".join(name for name, _ in kernel.reduced)
        elif kernel.reduced:
            shape = "lanes over " + ", ".join(a.var for a in kernel.axes) + \
                " reducing " + ", ".join(name for name, _ in kernel.reduced)
        elif kernel.single:
            shape = "one work item (the whole nest, serially)"
        else:
            shape = "grid " + ", ".join(f"{'xyz'[a.axis]}={a.var}" for a in kernel.axes)
        if kernel.host_loop is not None:
            shape += f", launched by the host once per iteration of {kernel.host_loop.var}"
        out.append(f"    {kernel.name}: {shape}")
    return out


def choice_text(runner) -> list[str]:
    """The cost model's view of the last call: every candidate's predicted time (corrected by
    what was measured) with its main terms, what was measured so far, the choice and why."""
    from asp_core.selection import _s
    from .cost.calibrate import status

    decision = runner.last_decision
    if decision is None or runner.last_estimate is None:
        reason = "forced" if runner.backend else "not chosen by the cost model"
        ran = runner.last_call.backend if runner.last_call else "-"
        return [f"  variant: {reason} ({ran})"] + device_text(runner, ran)
    out = [f"  variants (cost model; machine parameters: {status()}):"]
    selector = runner.selector
    for e in decision.estimates:
        mark = "->" if e.label == runner.last_estimate.label else "  "
        terms = ", ".join(f"{k} {_s(v)}" for k, v in e.terms.items() if v)
        factor = selector.factor(e.label, e.size_class, e.kin, e.kin_faster)
        seen = selector.measurements(e.label)
        build = f", build {_s(e.build_s)} first" if e.build_s else ""
        fixed = f" + {_s(e.fixed_s)} fixed" if e.fixed_s else ""
        out.append(f"    {mark} {e.label:10s} {_s(selector.corrected(e)):>10s}  (model "
                   f"{_s(e.seconds)}{fixed} x {factor:.2f} measured/predicted over {seen} "
                   f"call(s){build}; {terms})")
    out.append(f"    choice: {decision.reason}")
    if runner.last_measured_s is not None:
        out.append(f"    this call: {_s(runner.last_measured_s)} measured")
    return out


#: How each backend runs a reduction of a parallel loop (``explain``'s mark on the schedule).
_REDUCTION_ORDER = {
    "openmp": "reassociated: chunks of the iteration space (their number fixed by the trip "
              "count) reduced in order, combined in a fixed order: the same result for any "
              "thread count and run (an integer one: exact in any order); "
              "exact_reductions=True keeps Python's order",
    "device": "reassociated: lanes (their number fixed by the trip count) each reducing "
              "every lanes-th iteration in order, combined in lane order: the same result "
              "for any grid; exact_reductions=True keeps Python's order",
    "checker": "reassociated: in the checker's order",
    "serial": "in Python's order (this variant runs the loop on one thread)",
}


def _reduction_order(backend: str | None) -> str | None:
    if backend in ("openmp", "opencl", "cuda", "cuda-emulated"):
        return _REDUCTION_ORDER["openmp" if backend == "openmp" else "device"]
    if backend in ("python-reversed", "python-shuffled"):
        return _REDUCTION_ORDER["checker"]
    if backend in ("c", "python"):
        return _REDUCTION_ORDER["serial"]
    return None


def _plan_text(analysis: NestAnalysis, plan, backend: str | None = None) -> list[str]:
    """Dependences (every tested pair, with its test) and the schedule tree, each reduction
    of a parallel loop marked with the order the variant that ran (``backend``) gives it."""
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
    for stmt in analysis.statements:
        if stmt.kind == "break":
            loop = analysis.access.loop(analysis.access.statement(stmt.sid).loops[-1])
            line = stmt.loc.line if stmt.loc else analysis.line
            out.append(f"    S{stmt.sid} (break, line {line}) ends {_loop_name(loop.var)}: it runs "
                       "its iterations in order and stops there, as in Python")
    if analysis.order_restriction:
        out.append(f"  schedule: source order kept, because {analysis.order_restriction}")
    if plan.bound.key.exact_reductions and \
            any(c.kind == "reduction" for c in analysis.scalars.classes):
        out.append("  reductions in Python's order (exact_reductions): the loops that carry "
                   "them run sequentially")
    out.append("  schedule:")
    order = _reduction_order(backend)

    def visit(node, depth: int) -> None:
        pad = "    " + "  " * depth
        if isinstance(node, SLoop):
            kind = "parallel" if node.parallel else "sequential"
            extra = "".join(f", reduction({op}: {v})" for v, op in node.reductions)
            if node.private:
                extra += f", private({', '.join(node.private)})"
            out.append(f"{pad}for {loops[node.lid]}  [{kind}{extra}]")
            if node.parallel and node.reductions and order:
                clauses = " ".join(f"reduction({op}: {v})" for v, op in node.reductions)
                out.append(f"{pad}  ({clauses} {order})")
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
        if _loop_name(loop.var) != f"loop {loop.var}":
            line = src.loc.line if src.loc else analysis.line
            out.append(f"    {'  ' * (loop.depth - 1)}while loop (line {line}){guard}")
            continue
        out.append(f"    {'  ' * (loop.depth - 1)}for {loop.var} in range({expression(src.start)}, "
                   f"{expression(src.stop)}, {expression(src.step)}){guard}")
    out.append("  statements:")
    for stmt in analysis.statements:
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


def _loop_name(var: str) -> str:
    """A loop as the user wrote it: ``while`` loops have no variable of their own."""
    from .lowering import WHILE_PREFIX

    return "the while loop" if var.startswith(WHILE_PREFIX) else f"loop {var}"
