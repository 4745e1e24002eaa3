"""OpenMP C: the serial C module with the schedule's parallelism expressed as OpenMP.

* The outermost parallel loop of each statement group is shared among the threads
  (``omp parallel for``); its private scalars, last-iteration scalars and reductions get their
  clauses; the flags of scalars assigned inside are OR-reduced. Where that loop is too short
  to give every thread several iterations (``wide_loops``), the parallel loops perfectly
  nested in it whose bounds do not depend on it are shared with it (``collapse``) down to the
  first one that is long enough. Not more: GCC walks a collapsed nest through one combined
  counter, which costs the inner loop its vectorization (3 to 5 times slower on conway and
  hilbert), so collapse is kept for the short loops it is for.
* A sequential loop around parallel loops runs inside one parallel region (every thread walks
  it; each parallel loop inside is an ``omp for`` whose barrier keeps the outer iterations in
  order), so threads are not forked once per outer iteration; a parallel loop inside with too
  little work per entry for its barrier (``MIN_SHARED_WORK``) runs on one thread instead; its own statements run in
  ``omp single`` blocks. Where every thread reads a shared predicate to decide whether to
  enter a worksharing loop, the iteration ends with a barrier: without it, a thread that
  skipped the loop could run the next iteration's ``single`` and change the predicate before
  a slower thread has read it, and the threads would meet different barriers (a deadlock).
  A ``break`` of such a loop is taken by every thread (``statement``), on the same terms.
* Inside a thread's share, an innermost parallel loop whose body has no error path gets
  ``omp simd`` where the compiler's own vectorizer would not vectorize it (a reduction, or
  arrays that share memory); other inner loops are left to the compiler.
* An innermost parallel loop at the top level that calls C library functions, or whose only
  error paths are the math module's checks, is vectorized (``_vector_loop``): the functions
  through wrappers with SIMD clones (each lane calls the function itself: the same bits), the
  checks without branches into the iteration's own error code.
* The thread count is the caller's setting, else ``OMP_NUM_THREADS`` (OpenMP's default).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from .. import dast as d
from ..schedule.tree import SLoop, SStmt
from .c import CEmitter, CModuleBuilder
from .cexpr import c_identifier
from .ranges import SMALL

_OPS = {"+": "+", "*": "*", "max": "max", "min": "min"}


class _ErrorForm(NamedTuple):
    """The C text of one form of a vector loop's error record (``_error_form``)."""

    declaration: str  # of the iteration's asp_code
    comment: str      # what the reduced key holds
    key: str          # a failing iteration's key (smaller: earlier)
    code: str         # the error code of the first failing key


#: Checked calls a vector loop's iteration code holds as fields (``asp_vmath1`` in the C
#: runtime): 2 bits each, below the iteration's distance from the start (at most 2**33).
VECTOR_FIELDS = 14

#: A loop gives each thread enough iterations to share alone from this many per thread.
ITERATIONS_PER_THREAD = 4


#: Statement instances per entry below which a parallel loop inside a sequential one runs on
#: one thread: sharing it would cost a barrier (about 0.25 us, far more on a busy machine)
#: per entry for a few microseconds of work (an LU decomposition's inner products).
MIN_SHARED_WORK = 4096


def small_loops(analysis, plan) -> frozenset[int]:
    """The parallel loops (ids) inside sequential loops of ``plan``'s schedule whose work per
    entry is below ``MIN_SHARED_WORK``: the OpenMP variant runs them on one thread (part of
    its key)."""
    from ..cost import domain
    from ..schedule.tree import SLoop, SStmt

    loops = plan.bound.loops
    out = set()

    def statements(node):
        if isinstance(node, SStmt):
            return [node.sid]
        return [sid for child in node.body for sid in statements(child)]

    def visit(node, inside: bool) -> None:
        if not isinstance(node, SLoop):
            return
        if node.parallel and inside:
            work = sum(domain.count(analysis.access.statement(sid).loops, loops).instances
                       for sid in statements(node))
            entries = max(1, domain.entries(node.lid, loops).instances)
            if work < MIN_SHARED_WORK * entries:
                out.add(node.lid)
                return
        for child in node.body:
            visit(child, inside or not node.parallel)

    for node in plan.schedule.root:
        visit(node, False)
    return frozenset(out)


def wide_loops(plan, threads: int) -> frozenset[int]:
    """The loops (ids) of ``plan`` that alone give ``threads`` threads enough iterations:
    what the collapse depth depends on (part of a variant's key)."""
    enough = ITERATIONS_PER_THREAD * max(1, threads)
    return frozenset(lid for lid, loop in plan.bound.loops.items() if loop.t_max + 1 >= enough)


class OpenMPModuleBuilder(CModuleBuilder):
    variant = "openmp"
    on_error = "guard"  # no jumping out of a parallel region

    def __init__(self, analysis, plan, types, signature: tuple, title: str, threads: int = 1):
        super().__init__(analysis, plan, types, signature, title)
        self.wide = wide_loops(plan, threads)
        self.small = small_loops(analysis, plan)

    def key_parts(self) -> tuple:
        return super().key_parts() + (tuple(sorted(self.wide)), tuple(sorted(self.small)))

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
        if stmt.kind == "break" and self.region and not self.share and not self.plain:
            # every thread walks the loop: each leaves it, after the single blocks before
            # (their barrier publishes the predicate); no thread may change the predicate
            # before all have read it (the barrier at the iteration's end: shared_reads)
            self.flush_single()
            if stmt.predicate:
                self.shared_reads = True
            super().statement(stmt, node)
            return
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
        if node.parallel and node.lid not in self.b.small:
            self._worksharing(loop, node, body)
        elif _contains_parallel(node, self.b.small):
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

    def _header(self, loop: d.Loop, hoist: bool = True) -> None:
        if hoist:
            self.hoist(loop)
        self.header(loop)

    def _body(self, body: Callable[[], None]) -> None:
        self.depth += 1
        body()
        self.flush_single()
        self.depth -= 1
        self.line("}")

    def _plain_loop(self, loop: d.Loop, node: SLoop, body, simd: bool) -> None:
        """A loop one thread runs: ``omp simd`` when it is innermost, free of error paths, and
        the compiler could not vectorize it alone: it has a reduction (reordering one is not
        the compiler's to decide) or touches arrays that share memory (no ``restrict``).
        Otherwise GCC's own vectorizer does better than under ``omp simd`` (conv2d: 45 ms
        against 30 on two threads)."""
        self._open_predicate(loop)
        self.line("{")
        self.depth += 1
        self.hoist(loop)
        saved, self.lines = self.lines, []
        depth = self.depth
        self._header(loop, hoist=False)
        self._body(body)
        loop_lines, self.lines = self.lines, saved
        if simd and not any(isinstance(c, SLoop) for c in node.body) and \
                not any("asp_err" in text or "({" in text for text in loop_lines) and \
                (node.reductions or self._arrays(node) & self.b.aliased):
            self.depth = depth
            self.line("#pragma omp simd" + self._clauses([node], simd=True))
        self.lines += loop_lines
        self.depth = depth - 1
        self.line("}")
        self._close_predicate(loop)

    def _worksharing(self, loop: d.Loop, node: SLoop, body) -> None:
        self.flush_single()
        nest = self._collapsible(node)
        if not self.region and len(nest) == 1 and \
                not any(isinstance(c, SLoop) for c in node.body) and \
                self._vector_loop(loop, node, body):
            return
        self._open_predicate(loop)
        self.line("{")
        self.depth += 1
        for lid in [n.lid for n in nest]:
            self.hoist(self.b.loops[lid])
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

    def _vector_loop(self, loop: d.Loop, node: SLoop, body) -> bool:
        """An innermost parallel loop at the top level whose only error paths are the math
        module's checks, or which calls C library functions: ``omp parallel for simd``, the
        functions called through their SIMD wrappers, each iteration's errors kept in its own
        ``asp_code`` (its later writes skipped) and the error of the first failing iteration
        raised after the loop (a ``min`` reduction of iteration and code: see
        ``asp_vmath1`` in the C runtime for the two forms of the code). False, with nothing
        emitted, where the body has other error paths or nothing to gain."""
        b = self.b
        if self.wide(loop):  # its iteration order would not fit the error key
            return False
        sites, functions = len(b.error_sites), set(b.expr.simd_functions)
        saved, depth = self.lines, self.depth
        self.lines, self.depth = [], 0
        b.expr.vector, b.expr.vector_checks = True, 0
        self.share += 1
        try:
            body()
        finally:
            b.expr.vector = False
            self.share -= 1
        lines, self.lines, self.depth = self.lines, saved, depth
        checks = b.expr.vector_checks > 0  # (every write tests asp_code: not a check)
        if any("asp_err" in text for text in lines) or \
                not (checks or len(b.expr.simd_functions) > len(functions)):
            del b.error_sites[sites:]
            b.expr.simd_functions = functions
            return False
        var = c_identifier(loop.var)
        first = f"asp_first_{var}"
        order = f"({var} - asp_lo_{var})" if b.plan.bound.loops[loop.lid].step > 0 else \
            f"(asp_lo_{var} - {var})"
        self._open_predicate(loop)
        self.line("{")
        self.depth += 1
        self.hoist(loop)
        pragma = "#pragma omp parallel for simd" + self._clauses([node])
        form = self._error_form(loop, order, first) if checks else None
        if form:
            self.line(f"int64_t {first} = INT64_MAX;  /* {form.comment} */")
            pragma += f" reduction(min: {first})"
        self.line(pragma + " num_threads(asp_nthreads)")
        self._header(loop, hoist=False)
        self.depth += 1
        self.line(form.declaration if form else "const uint64_t asp_code = 0;  /* no checks */")
        for text in lines:
            self.line(text)
        if form:
            self.line(f"const int64_t asp_key = asp_code ? {form.key} : INT64_MAX;")
            self.line(f"{first} = asp_key < {first} ? asp_key : {first};")
        self.depth -= 1
        self.line("}")
        if form:
            self.line(f"if ({first} != INT64_MAX) asp_fail(asp_err, {form.code}, 0, 0, 0);")
        self.depth -= 1
        self.line("}")
        self._close_predicate(loop)
        return True

    def _error_form(self, loop: d.Loop, order: str, first: str) -> "_ErrorForm":
        """How a vector loop's iterations record their errors (see ``asp_vmath1`` in the C
        runtime): a 2-bit field per checked call where few enough checks and a loop variable
        in 32-bit range (the variant's range class) let the iteration's distance from the
        start fit above them in a key, else the first error's code."""
        low, high = self.b.expr.ranges[loop.var]
        if self.b.expr.vector_checks <= VECTOR_FIELDS and low >= -SMALL and high <= SMALL:
            shift = 2 * self.b.expr.vector_checks  # the key stays below 2**33 * 2**28
            mask = f"(((int64_t)1 << {shift}) - 1)"
            return _ErrorForm("uint64_t asp_code = 0;",
                              f"first failing iteration << {shift} | its fields",
                              f"({order} << {shift}) | (int64_t)asp_code",
                              f"asp_vfields_code((uint64_t)({first} & {mask}))")
        return _ErrorForm("int32_t asp_code = 0;", "16 * first failing iteration + code",
                          f"{order} * 16 + asp_code", f"(int32_t)({first} & 15)")

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
        """The parallel loops to share with ``node`` (see the module docstring); never a wide
        loop, whose header declares its variable inside the body."""
        nest = [node]
        variables = {self.b.loops[node.lid].var}
        current = node
        while len(current.body) == 1 and isinstance(current.body[0], SLoop) and \
                not self.wide(self.b.loops[node.lid]):
            inner = current.body[0]
            info = self.b.analysis.access.loop(inner.lid)
            if not inner.parallel or info.predicate or self.wide(self.b.loops[inner.lid]) or \
                    (set(info.start.variables) | set(info.stop.variables)) & variables:
                break
            nest.append(inner)
            variables.add(info.var)
            current = inner
        for depth, loop in enumerate(nest):  # collapse only down to the first wide loop
            if loop.lid in self.b.wide:
                return nest[:depth + 1]
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

    def _arrays(self, node: SLoop) -> set[str]:
        """The arrays the statements inside ``node`` read or write."""
        return {acc.array for sid in _statements(node)
                for acc in self.b.analysis.access.statement(sid).accesses}

    def _assigned(self, node: SLoop) -> set[str]:
        out = set()
        for sid in _statements(node):
            target = self.b.statements[sid].target
            if isinstance(target, d.Var):
                out.add(target.name)
        return out


def _contains_parallel(node: SLoop, small: frozenset[int] = frozenset()) -> bool:
    """Whether ``node`` holds a loop the OpenMP variant shares among threads."""
    return any(isinstance(c, SLoop) and (c.parallel and c.lid not in small or
                                         _contains_parallel(c, small)) for c in node.body)


def _statements(node):
    if isinstance(node, SStmt):
        yield node.sid
    else:
        for child in node.body:
            yield from _statements(child)
