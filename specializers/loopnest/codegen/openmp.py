"""OpenMP C: the serial C module with the schedule's parallelism expressed as OpenMP.

* The outermost parallel loop of each statement group is shared among the threads
  (``omp parallel for``), together with the parallel loops perfectly nested in it whose bounds
  do not depend on them (``collapse``); its private scalars, last-iteration scalars and
  reductions get their clauses; the flags of scalars assigned inside are OR-reduced.
* A sequential loop around parallel loops runs inside one parallel region (every thread walks
  it; each parallel loop inside is an ``omp for`` whose barrier keeps the outer iterations in
  order), so threads are not forked once per outer iteration; its own statements run in
  ``omp single`` blocks. Where every thread reads a shared predicate to decide whether to
  enter a worksharing loop, the iteration ends with a barrier: without it, a thread that
  skipped the loop could run the next iteration's ``single`` and change the predicate before
  a slower thread has read it, and the threads would meet different barriers (a deadlock).
* Inside a thread's share, an innermost parallel loop whose body has no error path gets
  ``omp simd`` (its reductions too); other inner loops are left to the compiler.
* The thread count is the caller's setting, else ``OMP_NUM_THREADS`` (OpenMP's default).
"""

from __future__ import annotations

from typing import Callable

from .. import dast as d
from ..schedule.tree import SLoop, SStmt
from .c import CEmitter, CModuleBuilder
from .cexpr import c_identifier

_OPS = {"+": "+", "*": "*", "max": "max", "min": "min"}


class OpenMPModuleBuilder(CModuleBuilder):
    variant = "openmp"
    on_error = "guard"  # no jumping out of a parallel region

    def emitter(self) -> "OpenMPEmitter":
        return OpenMPEmitter(self)


class OpenMPEmitter(CEmitter):
    def __init__(self, builder: CModuleBuilder):
        super().__init__(builder)
        self.region = False        # inside "omp parallel"
        self.share = 0             # inside a worksharing loop (one thread's iterations)
        self.plain = 0             # inside code that one thread runs alone (single)
        self.collapse_rest = 0     # inner loops of a collapsed nest still to open
        self.pending: list[str] = []
        self.shared_reads = False  # every thread read a shared predicate in this iteration

    def prologue(self) -> list[str]:
        return ["const int asp_nthreads = asp_threads > 0 ? asp_threads : omp_get_max_threads();"]

    # -- statements ----------------------------------------------------------------------------

    def statement(self, stmt: d.Assign, node: SStmt) -> None:
        if self.region and not self.share and not self.plain:
            saved, self.lines = self.lines, []
            depth, self.depth = self.depth, 1
            super().statement(stmt, node)
            self.pending += self.lines
            self.lines, self.depth = saved, depth
        else:
            super().statement(stmt, node)

    def flush_single(self) -> None:
        """Emit the region-level statements gathered so far as one ``omp single`` block (only
        at region level: inside a thread's share or a single block they stay pending)."""
        if not self.pending or self.share or self.plain:
            return
        self.line("#pragma omp single")
        self.line("{")
        for text in self.pending:
            self.line(text)
        self.line("}")
        self.pending = []

    # -- loops ---------------------------------------------------------------------------------

    def loop(self, loop: d.Loop, node: SLoop, body: Callable[[], None]) -> None:
        if self.collapse_rest:
            self.collapse_rest -= 1
            self._header(loop, hoist=False)
            self._body(body)
            return
        if self.share or self.plain:
            self._plain_loop(loop, node, body, simd=node.parallel)
            return
        if node.parallel:
            self._worksharing(loop, node, body)
        elif _contains_parallel(node):
            self._region_loop(loop, node, body)
        elif self.region:  # a sequential loop with no parallel work: one thread runs it
            saved, self.lines = self.lines, []
            depth, self.depth = self.depth, 1
            self.plain += 1
            super().loop(loop, node, body)
            self.plain -= 1
            self.pending += self.lines
            self.lines, self.depth = saved, depth
        else:
            super().loop(loop, node, body)

    def _open_predicate(self, loop: d.Loop) -> None:
        if loop.predicate:
            if self.region and not self.share and not self.plain:
                self.shared_reads = True
            self.line(f"if ({c_identifier(loop.predicate)}) {{")
            self.depth += 1

    def _close_predicate(self, loop: d.Loop) -> None:
        if loop.predicate:
            self.depth -= 1
            self.line("}")

    def _hoist(self, loop: d.Loop) -> None:
        var = c_identifier(loop.var)
        start, stop, step, _ = self.bounds(loop)
        self.line(f"const int64_t asp_lo_{var} = {start}, asp_hi_{var} = {stop}, "
                  f"asp_step_{var} = {step};")

    def _header(self, loop: d.Loop, hoist: bool = True) -> None:
        var = c_identifier(loop.var)
        if hoist:
            self._hoist(loop)
        cmp = self.bounds(loop)[3]
        self.line(f"for (int64_t {var} = asp_lo_{var}; {var} {cmp} asp_hi_{var}; "
                  f"{var} += asp_step_{var}) {{")

    def _body(self, body: Callable[[], None]) -> None:
        self.depth += 1
        body()
        self.flush_single()
        self.depth -= 1
        self.line("}")

    def _plain_loop(self, loop: d.Loop, node: SLoop, body, simd: bool) -> None:
        """A loop one thread runs: maybe ``omp simd`` when innermost and free of error paths."""
        self._open_predicate(loop)
        self.line("{")
        self.depth += 1
        self._hoist(loop)
        saved, self.lines = self.lines, []
        depth = self.depth
        self._header(loop, hoist=False)
        self._body(body)
        loop_lines, self.lines = self.lines, saved
        if simd and not any(isinstance(c, SLoop) for c in node.body) and \
                not any("asp_err" in text or "({" in text for text in loop_lines):
            self.depth = depth
            self.line("#pragma omp simd" + self._clauses([node], simd=True))
        self.lines += loop_lines
        self.depth = depth - 1
        self.line("}")
        self._close_predicate(loop)

    def _worksharing(self, loop: d.Loop, node: SLoop, body) -> None:
        self.flush_single()
        nest = self._collapsible(node)
        self._open_predicate(loop)
        self.line("{")
        self.depth += 1
        for lid in [n.lid for n in nest]:
            self._hoist(self.b.loops[lid])
        pragma = "#pragma omp for" if self.region else "#pragma omp parallel for"
        if len(nest) > 1:
            pragma += f" collapse({len(nest)})"
        pragma += self._clauses(nest)
        if not self.region:
            pragma += " num_threads(asp_nthreads)"
        self.line(pragma)
        self._header(loop, hoist=False)
        self.collapse_rest = len(nest) - 1  # the inner loops open bare (see loop())
        self.share += 1
        self._body(body)
        self.share -= 1
        self.depth -= 1
        self.line("}")
        self._close_predicate(loop)

    def _region_loop(self, loop: d.Loop, node: SLoop, body) -> None:
        opened = not self.region
        self.flush_single()
        if opened:
            self.line("#pragma omp parallel num_threads(asp_nthreads)")
            self.line("{")
            self.depth += 1
            self.region = True
        self._open_predicate(loop)
        self.line("{")
        self.depth += 1
        self._header(loop)
        outer_reads, self.shared_reads = self.shared_reads, False
        self.depth += 1
        body()
        self.flush_single()
        if self.shared_reads:  # see the module's docstring
            self.line("#pragma omp barrier")
        self.shared_reads = outer_reads
        self.depth -= 1
        self.line("}")
        self.depth -= 1
        self.line("}")
        self._close_predicate(loop)
        if opened:
            self.flush_single()
            self.region = False
            self.depth -= 1
            self.line("}")

    # -- clauses -------------------------------------------------------------------------------

    def _collapsible(self, node: SLoop) -> list[SLoop]:
        nest = [node]
        variables = {self.b.loops[node.lid].var}
        current = node
        while len(current.body) == 1 and isinstance(current.body[0], SLoop):
            inner = current.body[0]
            info = self.b.analysis.access.loop(inner.lid)
            if not inner.parallel or info.predicate or \
                    (set(info.start.variables) | set(info.stop.variables)) & variables:
                break
            nest.append(inner)
            variables.add(info.var)
            current = inner
        return nest

    def _clauses(self, nest: list[SLoop], simd: bool = False) -> str:
        private = sorted({c_identifier(s) for n in nest for s in n.private
                          if s not in n.lastprivate})
        last = sorted({c_identifier(s) for n in nest for s in n.lastprivate})
        reductions: dict[str, set[str]] = {}
        for n in nest:
            for name, op in n.reductions:
                reductions.setdefault(_OPS[op], set()).add(c_identifier(name))
        flags = sorted({f"asp_w_{c_identifier(name)}" for name in self._assigned(nest[0])
                        if name in self.b.live})
        text = ""
        if private:
            text += f" private({', '.join(private)})"
        if last:
            text += f" lastprivate({', '.join(last)})"
        for op, names in sorted(reductions.items()):
            text += f" reduction({op}: {', '.join(sorted(names))})"
        if flags and not simd:
            text += f" reduction(|: {', '.join(flags)})"
        return text

    def _assigned(self, node: SLoop) -> set[str]:
        out = set()
        for sid in _statements(node):
            target = self.b.statements[sid].target
            if isinstance(target, d.Var):
                out.add(target.name)
        return out


def _contains_parallel(node: SLoop) -> bool:
    return any(isinstance(c, SLoop) and (c.parallel or _contains_parallel(c)) for c in node.body)


def _statements(node):
    if isinstance(node, SStmt):
        yield node.sid
    else:
        for child in node.body:
            yield from _statements(child)
