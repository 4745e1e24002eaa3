"""OpenMP C: the serial C module with the schedule's parallelism expressed as OpenMP.

* The outermost parallel loop of each statement group is shared among the threads
  (``omp parallel for``); its private scalars, last-iteration scalars and integer reductions
  get their clauses; the flags of scalars assigned inside are OR-reduced. Where that loop is
  too short to give every thread several iterations (``wide_loops``), the parallel loops
  perfectly nested in it whose bounds do not depend on it are shared with it (``collapse``)
  down to the first one that is long enough. Not more: GCC walks a collapsed nest through one
  combined counter, which costs the inner loop its vectorization (3 to 5 times slower on
  conway and hilbert), so collapse is kept for the short loops it is for.
* A floating-point reduction's result must not depend on the thread count, the runtime or the
  vector width, as OpenMP's reduction clauses let it: a parallel loop with one is cut into
  chunks fixed by its trip count, reduced in order, shared among the threads and combined in
  chunk order by one thread (``_chunked``); an innermost loop's floating-point sums and
  products run on a fixed number of lanes, which ``omp simd`` vectorizes without reordering
  any operation (``_laned``); a float max or min stays in order inside a chunk.
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
  ``omp simd`` where the compiler's own vectorizer would not vectorize it (an integer
  reduction, a floating-point sum on lanes, or arrays that share memory); other inner loops
  are left to the compiler.
* An innermost parallel loop at the top level that calls C library functions, or whose only
  error paths are the math module's checks, is vectorized (``_vector_loop``): the functions
  through wrappers with SIMD clones (each lane calls the function itself: the same bits), the
  checks without branches into the iteration's own error code.
* The thread count is the caller's setting, else ``OMP_NUM_THREADS`` (OpenMP's default).
"""

from __future__ import annotations

import re
from typing import Callable, NamedTuple

from .. import dast as d
from ..schedule.tiling import triangular
from ..schedule.tree import SLoop, SStmt, STile, perfect_chain
from .c import CEmitter, CModuleBuilder
from .cexpr import c_identifier, ctype
from .device_layout import combination, identity, loop_ids
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

#: The chunks a parallel loop with a floating-point reduction splits its iterations into: this
#: many, or one per iteration where there are fewer (a function of the trip count alone, never
#: of the thread count: ``OpenMPEmitter._chunked``).
REDUCTION_CHUNKS = 256

#: The lanes an innermost loop's floating-point sums and products run on (``_laned``): a
#: constant, so that the result does not depend on the machine's vector width.
REDUCTION_LANES = 8


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
    tiles = "shared"
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
        self.collapsed: list | None = None   # ...whose iteration may go in a function of its
                                             # own: (the outermost SLoop, its loops so far)
        self.pending: list[str] = []
        self.shared_reads = False  # every thread read a shared predicate in this iteration
        self.band: list[d.Loop] = []       # a chunked band's loops (``_chunked``)
        self.band_rest: list[d.Loop] = []  # its loops still to open
        self.partials: list[str] = []      # declarations of the chunks' partial results
        self.chunked = 0                   # chunked loops so far
        self.outlined: list[str] = []      # functions of their own (``_outline``), C lines

    def prologue(self) -> list[str]:
        return ["const int asp_nthreads = asp_threads > 0 ? asp_threads : omp_get_max_threads();",
                *self.partials]

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

    def tile(self, loop: d.Loop, node: STile, body: Callable[[], None]) -> None:
        """A tiled top-level band headed by a parallel loop (``schedule.tiling``, shared): the
        threads share the head's blocks (``omp parallel for`` on its tile loop); inside, one
        thread runs the other tile loops and the band's loops over its blocks."""
        if self.region or self.share or self.plain:
            super().tile(loop, node, body)
            return
        self.line("{")
        self.depth += 1
        self.hoist(loop)
        clauses = self._clauses(_band_under(node))
        self.tiles.add(loop.lid)
        self.share += 1
        block = self._captured(body)   # one thread's blocks
        self.share -= 1
        self.tiles.discard(loop.lid)
        call = None if clauses else self._outline(loop, node, block)
        band = [self.b.loops[n.lid] for n in _band_under(node)]
        if any(triangular(inner, band[:k]) for k, inner in enumerate(band)):
            # a triangle's blocks hold ever more work (or less): handed out one at a time,
            # not in equal runs of blocks (of a lower triangle's rows, the second half holds
            # three quarters of the work)
            clauses += " schedule(dynamic, 1)"
        self.line("#pragma omp parallel for" + clauses + " num_threads(asp_nthreads)")
        self.tile_header(loop, node)
        self.depth += 1
        for line in [call] if call else block:
            self.line(line)
        self.depth -= 1
        self.line("}")
        self.depth -= 1
        self.line("}")

    def _outline(self, loop: d.Loop, node: STile, block: list[str]) -> str | None:
        """The call of a function of its own (``outlined``) running ``block``, the code one
        thread runs for a block of a tiled band, or None where that code reads a local of
        the nest's function other than its parameters and the tile loop's bounds (a scalar,
        a partial result, an enclosing loop's variable: it stays inline). GCC compiles an
        OpenMP loop's body into a function that reads the caller's variables through a
        pointer and keeps no ``restrict`` of its pointers: gemm's register blocks, every
        store possibly changing every array, ran at 13 GFLOP/s a thread where the same code
        as serial C runs at 26; in a function of its own, its ``restrict`` parameters hold
        (``firstprivate`` copies and ``restrict`` locals did not help)."""
        if self.partials:
            return None
        used = set(re.findall(r"\b[A-Za-z_]\w*\b", "\n".join(block)))
        if used & self._outer_locals(node):
            return None
        var = c_identifier(loop.var)
        own = [f"const int64_t asp_{part}_{var}" for part in ("lo", "hi", "step", "tile", "end")]
        if self.wide(loop):
            own.append(f"const uint64_t asp_n_{var}")
        return self._function(own, block, used)

    def _function(self, own: list[str], block: list[str], used: set[str]) -> str:
        """A function of its own (``outlined``) running ``block``, taking the nest's
        parameters (the error record where ``used`` has it) and ``own``; the call of it."""
        params = [p for p in self.b.arguments()[0] if not p.endswith(" asp_threads")]
        params += ["asp_error * asp_err"] * ("asp_err" in used) + own
        params += [f"const {ctype(self.b.types.arrays[name])} * restrict asp_pk_{ident}"
                   for name in self.b.schedule.packs
                   if f"ASP_AT_{(ident := c_identifier(name))}" in used]  # (the copies)
        name = f"asp_block_{len(self.outlined)}"
        # (noinline: called once, GCC inlined it into the region's outlined body, where its
        # restrict parameters stopped holding: syr2k's blocks ran 25% slower on one thread,
        # 29 GFLOP/s against serial C's 38 at n = 2000)
        self.outlined += [f"__attribute__((noinline)) static void {name}({', '.join(params)}) {{",
                          *(f"    {line}" for line in block), "}", ""]
        return f"{name}({', '.join(p.rsplit(' ', 1)[1] for p in params)});"

    def _outer_locals(self, node: STile | SLoop) -> set[str]:
        """The nest function's locals that code under ``node`` could read: the scalars and
        their flags, the thread count, the result record, and the variables, bounds and
        predicates of the loops not under ``node`` (but the names the loops under it declare
        for themselves)."""
        names = {"asp_nthreads", "asp_out"}
        for name in self.b.names.scalars + self.b.names.temps:
            names |= {c_identifier(name), f"asp_w_{c_identifier(name)}"}
        inside = set(loop_ids(node))
        own: set[str] = set()   # declared in the block itself (a loop's variable and bounds)
        for lid, loop in self.b.loops.items():
            var = c_identifier(loop.var)
            parts = {var} | {f"asp_{part}_{var}"
                             for part in ("lo", "hi", "step", "n", "tile", "end", "jam")}
            if lid in inside:
                own |= parts
                continue
            names |= parts
            if loop.predicate:
                names.add(c_identifier(loop.predicate))
        # (a loop beside the block with a variable of the same name as one inside it, say
        # the j of a row's scaling split off beside syr2k's band: the block's own j hides
        # it; counted, it kept the block inline, its pointers not restrict: 25% slower)
        return names - own

    def loop(self, loop: d.Loop, node: SLoop, body: Callable[[], None]) -> None:
        if loop.lid in self.tiles:   # one block of a tiled band's loop (one thread's)
            CEmitter.loop(self, loop, node, body)
            return
        if self.band_rest and self.band_rest[0].lid == loop.lid:  # a chunked band's next loop
            self._band_level(loop, node, body)
            return
        if self.collapse_rest:
            self.collapse_rest -= 1
            self._header(loop, hoist=False)
            if self.collapse_rest and self.collapsed is not None:
                self.collapsed.append(loop)
            if self.collapse_rest or self.collapsed is None:
                self._body(body)
            else:   # the innermost loop of a collapsed nest: its iteration
                collapsed, self.collapsed = self.collapsed, None
                self._iteration(collapsed + [loop], collapsed[0], body)
            return
        if self.share or self.plain:
            self._plain_loop(loop, node, body, simd=node.parallel)
            return
        if node.parallel and node.lid not in self.b.small:
            self._worksharing(loop, node, body)
        elif _contains_parallel(node, self.b.small):
            self._region_loop(loop, node, body)
        elif self.region:  # a sequential loop with no parallel work: one thread runs it
            self._one_thread(loop, node, body)
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
        against 30 on two threads). A floating-point sum or product runs on fixed lanes
        instead (``_laned``); a floating-point max or min in order, never under ``omp simd``."""
        self._open_predicate(loop)
        self.line("{")
        self.depth += 1
        self.hoist(loop)
        lines = self._captured(body)
        innermost = not any(isinstance(c, SLoop) for c in node.body)
        fails = any("asp_err" in text or "({" in text for text in lines)
        lanes = self._lanes(node) if simd and not fails else None
        if lanes:
            var = c_identifier(loop.var)
            if not self.wide(loop):
                self.line(f"const uint64_t asp_n_{var} = asp_trip_count(asp_lo_{var}, "
                          f"asp_hi_{var}, asp_step_{var});")
            self._laned(loop, node, lines, lanes, "0", f"asp_n_{var}")
        else:
            if simd and innermost and not fails and not self._ordered([node]) and \
                    (node.reductions or self._arrays(node) & self.b.aliased):
                self.line("#pragma omp simd" + self._clauses([node], simd=True))
            else:
                for pragma in self.pragmas(loop, node):   # (a few constant iterations)
                    self.line(pragma)
            self._header(loop, hoist=False)
            self.depth += 1
            for text in lines:
                self.line(text)
            self.depth -= 1
            self.line("}")
        self.depth -= 1
        self.line("}")
        self._close_predicate(loop)

    def _captured(self, body) -> list[str]:
        """The lines ``body`` emits, indented from depth 0 (code one thread runs: nothing
        goes to a single block)."""
        saved, self.lines = self.lines, []
        depth, self.depth = self.depth, 0
        body()
        lines, self.lines, self.depth = self.lines, saved, depth
        return lines

    def _worksharing(self, loop: d.Loop, node: SLoop, body) -> None:
        self.flush_single()
        band = self._band(node)
        ordered = self._ordered(band)
        if ordered:
            self._chunked(loop, node, body, band, ordered)
            return
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
        elif self._dealt_out(node):
            pragma += self._cyclic_schedule(loop)
        pragma += self._clauses(nest)
        if not self.region:
            pragma += " num_threads(asp_nthreads)"
        self.line(pragma)
        self._header(loop, hoist=False)
        self.collapse_rest = len(nest) - 1  # the inner loops open bare (see loop())
        self.share += 1
        if self.region or self._clauses(nest):
            self._body(body)
        elif len(nest) > 1:   # the innermost collapsed loop's iteration (see loop())
            self.collapsed = [node, loop]
            self._body(body)
            self.collapsed = None
        else:
            self._iteration([node, loop], node, body)
        self.share -= 1
        self.depth -= 1
        self.line("}")
        self._close_predicate(loop)

    def _iteration(self, loops: list, node: SLoop, body) -> None:
        """One thread's iteration of a top-level shared loop (``loops``: the outermost
        ``SLoop``, then the ``d.Loop`` of each loop shared, collapsed ones included), in a
        function of its own where it can be (``_outline_iteration``), and the loop's end."""
        block = self._captured(body)
        call = self._outline_iteration(loops[1:], node, block)
        self.depth += 1
        for line in [call] if call else block:
            self.line(line)
        self.depth -= 1
        self.line("}")

    def _outline_iteration(self, loops: list[d.Loop], node: SLoop,
                           block: list[str]) -> str | None:
        """The call of a function of its own (``outlined``) running ``block``, one iteration
        of a top-level ``omp parallel for`` over ``loops`` (collapsed, ``node`` the
        outermost) with no clauses, or None where that code reads a local of the nest's
        function other than its parameters and the loops' variables (it stays inline). As for
        a tiled band's blocks (``_outline``), GCC keeps no ``restrict`` of the pointers an OpenMP body reads through the caller's frame:
        bench_peak's conv2d (a 5 x 5 filter unrolled in a vectorized row loop) reloaded the
        filter and checked the arrays' overlap at every row, and ran on two threads slower
        than serial C (19 GFLOP/s against 22 at n = 2000)."""
        if self.partials or any(self.wide(loop) or loop.predicate for loop in loops):
            return None
        variables = [c_identifier(loop.var) for loop in loops]
        used = set(re.findall(r"\b[A-Za-z_]\w*\b", "\n".join(block)))
        own = {f"asp_{part}_{var}" for var in variables
               for part in ("lo", "hi", "step", "n", "tile", "end", "jam")}
        if used & (self._outer_locals(node) | own):
            return None
        return self._function([f"const int64_t {var}" for var in variables], block, used)

    def _dealt_out(self, node: SLoop) -> bool:
        """``cost.models.dealt_out``: the model prices the schedule it says."""
        from ..cost.models import dealt_out

        return dealt_out(self.b.plan.bound, node)

    def _cyclic_schedule(self, loop: d.Loop) -> str:
        """The clause dealing a triangular loop's iterations out in turn, in chunks chosen at
        run time (``cost.models.cyclic_chunk``), and the line computing the chunk."""
        from ..cost.models import CYCLIC_CHUNK, CYCLIC_ROUNDS

        var = c_identifier(loop.var)
        self.line(f"const int64_t asp_chunk_{var} = asp_trip_count(asp_lo_{var}, asp_hi_{var}, "
                  f"asp_step_{var}) >= {CYCLIC_CHUNK * CYCLIC_ROUNDS} * (uint64_t)asp_nthreads"
                  f" ? {CYCLIC_CHUNK} : 1;")
        return f" schedule(static, asp_chunk_{var})"

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

    # -- floating-point reductions: chunks in a fixed order ---------------------------------------

    def _ordered(self, nodes) -> list[tuple[str, str]]:
        """The floating-point reductions of ``nodes`` ((scalar, operator), sorted): their value
        depends on the order of the operations (a sum's rounding; which of two equal maxima, or
        a NaN, a max keeps), so they are never left to OpenMP's reduction clause or to ``omp
        simd``, whose order depends on the thread count, the runtime and the vector width."""
        found = {}
        for node in nodes:
            for name, op in node.reductions:
                if self.b.types.variables[name].kind == "f":
                    found[name] = op
        return sorted(found.items())

    def _chunked(self, loop: d.Loop, node: SLoop, body, band: list[SLoop], ordered) -> None:
        """A parallel loop with floating-point reductions (``ordered``), shared so that its
        result depends on the trip count alone: the iterations of its band (``_band``, one
        iteration space in Python's order) are cut into ``min(trips, REDUCTION_CHUNKS)``
        contiguous chunks; each chunk reduces its iterations in order into its own partial
        result, from the scalar's value before the loop for the first chunk and from the
        operator's identity for the others; the threads share the chunks (``schedule(static)``,
        or one at a time where the loop is a triangle, ``cost.models.dealt_out``),
        and one thread then combines the partial results in chunk order, with the loop's own
        operator (``device_layout.combination``). Where some reduction has no single operator
        to combine with, the loop runs on one thread instead (``_one_thread``)."""
        b = self.b
        combine = {name: combination(b.analysis, b.types, name, op) for name, op in ordered}
        if any(text is None for text in combine.values()):
            self._one_thread(loop, node, body)
            return
        k, self.chunked = self.chunked, self.chunked + 1
        chunks = f"asp_chunks{k}"
        loops = [b.loops[n.lid] for n in band]
        names = [c_identifier(x.var) for x in loops]
        types = {name: ctype(b.types.variables[name]) for name, _ in ordered}
        self.line(f"int64_t {chunks} = 0;  /* chunks of the loop on {loops[0].var} */")
        self._open_predicate(loop)
        self.line("{")
        self.depth += 1
        for x, var in zip(loops, names):
            self.hoist(x)
            if not self.wide(x):
                self.line(f"const uint64_t asp_n_{var} = asp_trip_count(asp_lo_{var}, "
                          f"asp_hi_{var}, asp_step_{var});")
        self.line(f"const uint64_t asp_total = {' * '.join(f'asp_n_{v}' for v in names)};")
        self.line(f"{chunks} = asp_total < {REDUCTION_CHUNKS} ? (int64_t)asp_total : "
                  f"{REDUCTION_CHUNKS};")
        self.line(f"const uint64_t asp_q = {chunks} ? asp_total / (uint64_t){chunks} : 0;")
        self.line(f"const uint64_t asp_r = {chunks} ? asp_total % (uint64_t){chunks} : 0;")
        for name, _ in ordered:
            ident = c_identifier(name)
            self.partials.append(f"{types[name]} asp_part{k}_{ident}[{REDUCTION_CHUNKS}];")
            self.line(f"const {types[name]} asp_s0_{ident} = {ident};")
        pragma = "#pragma omp for" if self.region else "#pragma omp parallel for"
        # (a triangle's chunks dealt out one at a time: balanced, and the partial results
        # are combined in chunk order whichever thread computed them)
        pragma += (" schedule(static, 1)" if self._dealt_out(node) else " schedule(static)") + \
            self._clauses(band, chunked=ordered)
        if not self.region:
            pragma += " num_threads(asp_nthreads)"
        self.line(pragma)
        self.line(f"for (int64_t asp_c = 0; asp_c < {chunks}; asp_c++) {{")
        self.depth += 1
        for name, op in ordered:  # (the loop's statements update this copy)
            ident = c_identifier(name)
            self.line(f"{types[name]} {ident} = asp_c == 0 ? asp_s0_{ident} : "
                      f"{identity(b.types, name, op)};")
        self.line("const uint64_t asp_from = (uint64_t)asp_c * asp_q + "
                  "((uint64_t)asp_c < asp_r ? (uint64_t)asp_c : asp_r);")
        self.line("const uint64_t asp_to = asp_from + asp_q + ((uint64_t)asp_c < asp_r);")
        if len(loops) > 1:  # the band's counters at the chunk's first iteration
            self.line("uint64_t asp_left = asp_to - asp_from, asp_rest = asp_from;")
            for var in reversed(names[1:]):
                self.line(f"uint64_t asp_ct_{var} = asp_rest % asp_n_{var};")
                self.line(f"asp_rest /= asp_n_{var};")
            self.line(f"uint64_t asp_ct_{names[0]} = asp_rest;")
        self.band, self.band_rest = loops, loops
        self.share += 1
        self._band_level(loop, node, body)
        self.share -= 1
        self.band = self.band_rest = []
        for name, _ in ordered:
            ident = c_identifier(name)
            self.line(f"asp_part{k}_{ident}[asp_c] = {ident};")
        self.depth -= 1
        self.line("}")
        self.depth -= 1
        self.line("}")
        self._close_predicate(loop)
        lines = []
        for name, _ in ordered:
            ident = c_identifier(name)
            lines += [f"for (int64_t asp_c = 0; asp_c < {chunks}; asp_c++) {{",
                      f"    const {types[name]} asp_p = asp_part{k}_{ident}[asp_c];",
                      f"    if (asp_c == 0) {ident} = asp_p; else {combine[name]}",
                      "}"]
        if self.region:   # one thread combines, in the next single block
            self.pending += ["    " + text for text in lines]
        else:
            for text in lines:
                self.line(text)

    def _band_level(self, loop: d.Loop, node: SLoop, body) -> None:
        """Open one loop of a chunked band (``_chunked``): it runs the band's counters from the
        chunk's first iteration (``asp_from``) for its iterations (``asp_left``), in order;
        the innermost one, where it takes lanes (``_lanes``), on lanes (``_laned``)."""
        level = len(self.band) - len(self.band_rest)
        self.band_rest = self.band_rest[1:]
        var = c_identifier(loop.var)
        single = len(self.band) == 1
        if level == len(self.band) - 1:  # the innermost: counters [start, end)
            start, end = ("asp_from", "asp_to") if single else (f"asp_ct_{var}", f"asp_e_{var}")
            if not single:
                self.line(f"const uint64_t asp_e_{var} = asp_n_{var} - asp_ct_{var} < asp_left "
                          f"? asp_n_{var} : asp_ct_{var} + asp_left;")
                self.line(f"asp_left -= asp_e_{var} - asp_ct_{var};")
            lanes = self._lanes(node)
            lines = self._captured(body) if lanes else None
            if lanes and not any("asp_err" in text or "({" in text for text in lines):
                self.line("{")
                self.depth += 1
                self._laned(loop, node, lines, lanes, start, end)
                self.depth -= 1
                self.line("}")
                return
            counter = f"uint64_t asp_ct_{var} = asp_from" if single else ""
            self.line(f"for ({counter}; asp_ct_{var} < {end}; asp_ct_{var}++) {{")
            self.line(f"    const int64_t {var} = {self._value(var, f'asp_ct_{var}')};")
            if lines is None:
                self._body(body)
                return
            self.depth += 1
            for text in lines:
                self.line(text)
            self.depth -= 1
            self.line("}")
            return
        inner = c_identifier(self.band[level + 1].var)
        test = "asp_left" if level == 0 else f"asp_left && asp_ct_{var} < asp_n_{var}"
        self.line(f"for (; {test}; asp_ct_{var}++, asp_ct_{inner} = 0) {{")
        self.line(f"    const int64_t {var} = {self._value(var, f'asp_ct_{var}')};")
        self._body(body)

    @staticmethod
    def _value(var: str, counter: str) -> str:
        """The C value of loop variable ``var`` at iteration ``counter`` (uint64, from 0):
        computed modulo 2**64, exact since every value of the loop is an int64."""
        return f"(int64_t)((uint64_t)asp_lo_{var} + {counter} * (uint64_t)asp_step_{var})"

    def _lanes(self, node: SLoop) -> list[tuple[str, str]] | None:
        """The reductions of ``node`` to run on lanes (``_laned``): its floating-point ones,
        where it is innermost, all of those are sums or products (a max or min stays in
        order: the value it selects among equal ones, or NaN, would depend on the lanes), and
        it has some; else None."""
        ordered = self._ordered([node])
        if not node.parallel or not ordered or any(op not in ("+", "*") for _, op in ordered) \
                or any(isinstance(c, SLoop) for c in node.body):
            return None
        return ordered

    def _laned(self, loop: d.Loop, node: SLoop, lines: list[str], lanes, start: str,
               end: str) -> None:
        """An innermost loop's iterations ``start`` to ``end`` (counters from 0, C texts) with
        its floating-point sums and products (``lanes``) on ``REDUCTION_LANES`` lanes: lane k
        reduces, in order and from the identity, the iterations ``start + k``, ``start + k +
        REDUCTION_LANES``, ...; then the lanes' results are combined in lane order into the
        scalar. Each lane is its own sequence of operations, so ``omp simd`` vectorizes the
        lanes without reordering any, and the result depends on the trip count alone, never on
        the vector width (which ``omp simd reduction`` would lend it). ``lines``: the body's
        text (``_captured``), printed twice: for the full rounds of lanes, and for the last
        partial round."""
        b = self.b
        var = c_identifier(loop.var)
        width = REDUCTION_LANES
        types = {name: ctype(b.types.variables[name]) for name, _ in lanes}
        for name, op in lanes:
            ident = c_identifier(name)
            self.line(f"{types[name]} asp_lane_{ident}[{width}];")
            self.line(f"for (int asp_l = 0; asp_l < {width}; asp_l++) asp_lane_{ident}[asp_l] = "
                      f"{identity(b.types, name, op)};")
        self.line(f"uint64_t asp_b_{var} = {start};")
        self.line(f"for (; {end} - asp_b_{var} >= {width}; asp_b_{var} += {width}) {{")
        self.depth += 1
        self.line("#pragma omp simd" + self._clauses([node], simd=True, chunked=lanes))
        self._lane_loop(var, lines, lanes, types, f"asp_l < {width}")
        self.depth -= 1
        self.line("}")
        self._lane_loop(var, lines, lanes, types, f"(uint64_t)asp_l < {end} - asp_b_{var}")
        for name, _ in lanes:
            ident = c_identifier(name)
            self.line(f"for (int asp_l = 0; asp_l < {width}; asp_l++) {{")
            self.line(f"    const {types[name]} asp_p = asp_lane_{ident}[asp_l];")
            self.line(f"    {combination(b.analysis, b.types, name, dict(lanes)[name])}")
            self.line("}")

    def _lane_loop(self, var: str, lines: list[str], lanes, types, test: str) -> None:
        self.line(f"for (int asp_l = 0; {test}; asp_l++) {{")
        self.depth += 1
        self.line(f"const int64_t {var} = {self._value(var, f'(asp_b_{var} + asp_l)')};")
        for name, _ in lanes:
            ident = c_identifier(name)
            self.line(f"{types[name]} {ident} = asp_lane_{ident}[asp_l];")
        for text in lines:
            self.line(text)
        for name, _ in lanes:
            ident = c_identifier(name)
            self.line(f"asp_lane_{ident}[asp_l] = {ident};")
        self.depth -= 1
        self.line("}")

    def _one_thread(self, loop: d.Loop, node: SLoop, body) -> None:
        """A loop run by one thread, in order (inside a region, in the next single block)."""
        if not self.region:
            self.plain += 1
            super().loop(loop, node, body)
            self.plain -= 1
            return
        saved, self.lines = self.lines, []
        depth, self.depth = self.depth, 1
        self.plain += 1
        super().loop(loop, node, body)
        self.plain -= 1
        self.pending += self.lines
        self.lines, self.depth = saved, depth

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
        """The parallel loops to share with ``node`` (see the module docstring): its band, down
        to the first loop long enough for the threads."""
        nest = self._band(node)
        for depth, loop in enumerate(nest):  # collapse only down to the first wide loop
            if loop.lid in self.b.wide:
                return nest[:depth + 1]
        return nest

    def _band(self, node: SLoop) -> list[SLoop]:
        """``node`` and the parallel loops perfectly nested in it whose bounds do not depend
        on the band, none near the ends of int64 (whose header declares its variable inside
        the body)."""
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
        return nest

    def _clauses(self, nest: list[SLoop], simd: bool = False, chunked=()) -> str:
        """The clauses of a loop sharing ``nest``: private, last-iteration, reduction (but of
        the ``chunked`` reductions, which ``_chunked`` combines itself) and the flags of the
        scalars assigned inside."""
        private = sorted({c_identifier(s) for n in nest for s in n.private
                          if s not in n.lastprivate})
        last = sorted({c_identifier(s) for n in nest for s in n.lastprivate})
        reductions: dict[str, set[str]] = {}
        skip = {name for name, _ in chunked}
        for n in nest:
            for name, op in n.reductions:
                if name not in skip:
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


def _band_under(node: STile) -> list[SLoop]:
    """The loops of the band a tile loop heads (below its tile loops)."""
    while isinstance(node, STile):
        node = node.body[0]
    return perfect_chain(node)


def _statements(node):
    if isinstance(node, SStmt):
        yield node.sid
    else:
        for child in node.body:
            yield from _statements(child)
