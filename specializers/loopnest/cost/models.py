"""The ALPyNA cost model (ACM) of a loop nest: a predicted time per variant kind.

``profile(analysis, plan, types)`` gathers, once per binding and call signature, everything the
cost functions need (``NestProfile``): per statement its exact number of instances
(``cost.domain``), its operations by kind (``cost.features``), the bytes it moves per instance
and whether the compiler can vectorize it; per loop its iterations; the parallel regions,
barriers and work imbalance of the OpenMP schedule; the arrays' footprint.

Each variant kind has one cost function, registered in ``COSTS`` (a device variant adds its
own; nothing else changes). Each returns the predicted seconds and its main terms:

* ``python`` (the original code, in the interpreter), after the paper's equations 2-3:
  per statement, instances (half of them under an ``if``: ``GUARDED_SHARE``) times the
  interpreter's time per operation of each kind, plus the loop iterations and the cost of
  entering the nest;
* ``c`` (serial C), after equations 4-5, relative to measured compiled-code times per
  operation kind, with a roofline memory term: the time is the larger of compute (divided by
  the vector speed-up for vectorizable inner loops, their loop overhead too; outside them a
  statement under an ``if`` branches, half its instances as in the interpreter; a statement
  whose innermost loop carries a floating-point chain through it, as an accumulation into one
  element, neither vectorizes nor overlaps its instances: at least the chain's latency per
  instance, ``MachineParams.c_chain_ns`` per operation on it) and the time the
  bytes the schedule loads into each cache level take to come (``cost.locality``: reuse found
  where a working set fits; over the calibrated bandwidths of L2, the last-level cache and
  memory), plus the compiled call's fixed cost;
* ``openmp`` at ``threads`` threads: the parallel statements' compute split over the threads
  (times the imbalance of static scheduling over triangular loops), the serial statements'
  compute on one thread, memory over the bandwidths of that many threads, plus fork/join per
  parallel region entered, a barrier per worksharing loop and ``single`` block entered, and
  a combine per reduction variable of each parallel loop entered.

Compile time: ``build_seconds`` predicts the compile of a variant from the size of its source.
All times from ``cost.machine.MachineParams``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from .. import dast as d
from ..analysis.binding import DIRECT, SHIFTED
from ..schedule.tree import SLoop, SStmt, STile
from . import domain
from ..scalars import PRIVATE
from .features import SUBSCRIPT, Features, recurrence_ops, statement_features
from .machine import MachineParams

#: Bytes a strided or unpredictable access moves (a cache line).
LINE = 64
#: Lines of the generated C module around the nest itself (runtime helpers).
MODULE_LINES = 400
#: Lines of the nest's own C: a base (its entry points), per statement, per loop (its bounds
#: and braces) and per dimension of the arrays it takes (a parameter each, in the function and
#: in its packed-argument caller). Fitted to the serial C of the twelve examples: 40 (saxpy)
#: to 89 lines (black_scholes), each within 5 of the estimate, but jacobi 57 for 52. Without
#: the dimensions, fbcorr's seven loops over four-dimensional arrays were priced as 62 lines
#: where it has 81 (and gcc compiles a line in about 0.8 ms).
NEST_LINES, STATEMENT_LINES, LOOP_LINES, DIMENSION_LINES = 30, 3, 4, 2
#: The share of its instances a statement under an ``if`` is predicted to run where the code
#: branches (which skips it where the predicate is false: mandelbrot's escaped points): the
#: branch's probability is unknown before a measurement corrects it, 1/2 its neutral prior.
#: The interpreter branches, and so does compiled code outside vectorized loops; a vectorized
#: loop (masked) and a device's work-items (lanes in step, ``cost.device``) run every instance.
#: (Priced whole in serial C too, mandelbrot's C was predicted 1.7 times its time and OpenCL,
#: priced whole as it runs, chosen over C at 512 x 512 where it took 1.3 times as long.)
GUARDED_SHARE = 0.5


@dataclass(frozen=True)
class StatementProfile:
    sid: int
    instances: int
    features: Features
    bytes: float              # bytes moved from memory per instance (streaming accesses)
    vector: bool              # its innermost loop is one a compiler vectorizes
    vector_omp: bool          # ... in the OpenMP variant (which vectorizes math calls too)
    parallel: bool            # it runs inside a parallel loop (OpenMP shares it)
    guarded: bool = False     # it runs under an ``if`` (a predicate computed by another)
    carried: int = 0          # operations on a floating-point chain its innermost loop in
    carried_omp: int = 0      # serial C (in OpenMP) carries (``_carried_ops``; 0: none)


@dataclass(frozen=True)
class NestProfile:
    statements: tuple[StatementProfile, ...]
    iterations: int           # loop iterations, all loops
    regions: int              # parallel regions entered (OpenMP)
    barriers: int             # barriers met (OpenMP: worksharing loops, single blocks)
    combines: int             # reductions combined (OpenMP: per parallel loop entered, its
                              # reduction variables)
    imbalance: float          # the busiest thread's share of parallel work over the mean
    footprint: int            # bytes of the arrays the nest touches
    work: int                 # statement instances
    exact: bool               # every count exact (else sampled)
    lines: int                # lines of generated C (estimated)
    simd_lines: int = 0       # lines the OpenMP variant adds: SIMD clones of math functions
    #: bytes loaded into L1, into L2 and into the last-level cache by the serial C variant's
    #: schedule and by the OpenMP variant's (``cost.locality``; None: each instance streams
    #: its ``StatementProfile.bytes``)
    traffic: tuple[float, float, float] | None = None
    traffic_omp: tuple[float, float, float] | None = None
    #: iterations of innermost loops whose statements all vectorize (serial C, OpenMP): their
    #: loop overhead is shared by the lanes of a vector
    vector_iterations: int = 0
    vector_iterations_omp: int = 0

    def loop_iterations(self, m: MachineParams, openmp: bool = False) -> float:
        """Loop iterations as the compiled code pays for them (``c_iteration_ns`` each): those
        of vectorized innermost loops divided by the vector speed-up."""
        vector = self.vector_iterations_omp if openmp else self.vector_iterations
        return self.iterations - vector * (1.0 - 1.0 / m.vector_speedup)

    @property
    def size_class(self) -> int:
        """Calls whose work is within a factor of 4 share online corrections."""
        return int(math.log(max(self.work, 1), 4))


def profile(analysis, plan, types, layouts: Mapping[str, str] | None = None,
            compiled: Callable[[bool], tuple] | None = None) -> NestProfile:
    """The counts of one nest for one binding (``plan``) and call types (``types``);
    ``compiled(shared)``: the caller's memo of ``codegen.c.serial_schedule`` for them (the
    runtime's, which the variants it builds share; None: computed here)."""
    from ..codegen.cexpr import INSTRUCTIONS
    from ..codegen.openmp import small_loops

    loops = plan.bound.loops
    schedule = plan.schedule
    chains = _schedule_chains(schedule)

    def weak(expr) -> bool:   # a Python scalar in the interpreter (``features.PY_KINDS``)
        try:
            return types.of(expr).weak
        except Exception:  # noqa: BLE001 - a value typeinfer does not type: priced as NumPy's
            return False

    footprint = 0
    for name, shape in zip(analysis.names.arrays, plan.bound.key.shapes):
        footprint += math.prod(shape) * types.arrays[name].dtype.itemsize
    if compiled is None:
        def compiled(shared: bool) -> tuple:
            return _compiled_schedule(analysis, plan, types, shared)
    serial, bands = compiled(False)
    shared = compiled(True)[0] if bands else serial
    compiled_chains = _schedule_chains(serial), _schedule_chains(shared)
    small = small_loops(analysis, plan)   # OpenMP runs them on one thread
    statements = []
    innermost: dict[int, list[StatementProfile]] = {}   # lid -> the statements it is inner to
    exact = True
    for st in analysis.access.statements:
        stmt = analysis.statements[st.sid]
        count = domain.count(st.loops, loops)
        exact = exact and count.exact
        chain = chains.get(st.sid, ())
        inner = chain[-1] if chain else None
        parallel = any(node.parallel and node.lid not in small for node in chain)
        moved, unit = _bytes(analysis, plan, types, st.sid, inner, layouts or {})
        feats = statement_features(stmt, weak)
        carried, carried_omp = (_carried_ops(analysis, stmt, plan, types,
                                             found.get(st.sid, ()), openmp)
                                for found, openmp in zip(compiled_chains, (False, True)))
        vector = unit and inner is not None and not feats["math"] and not feats["div"] and \
            not feats["div_py"] and \
            not feats["conv"] and st.predicate is None and not carried
        vector_omp = unit and inner is not None and inner.parallel and len(chain) == 1 and \
            st.predicate is None
        statements.append(StatementProfile(st.sid, count.instances, feats, moved,
                                           vector, (vector_omp or vector and parallel) and
                                           not carried_omp,
                                           parallel, st.predicate is not None,
                                           carried, carried_omp))
        if inner is not None:
            innermost.setdefault(inner.lid, []).append(statements[-1])
    iterations, vector_iterations, vector_iterations_omp = \
        _loop_iterations(schedule, loops, innermost)
    regions, barriers, combines, imbalance = _openmp_structure(analysis, plan, small)
    work = sum(s.instances for s in statements)
    dimensions = sum(len(shape) for shape in plan.bound.key.shapes)
    jammed = _jammed_blocks(analysis, serial) if bands else 0
    lines = MODULE_LINES + NEST_LINES + STATEMENT_LINES * len(statements) + \
        LOOP_LINES * len(loops) + DIMENSION_LINES * dimensions + \
        TILED_BAND_LINES * len(bands) + \
        JAMMED_BLOCK_LINES * jammed
    functions = {f.rpartition(".")[2] for s in statements if s.vector_omp
                 for f in s.features.math_calls} - INSTRUCTIONS   # (sqrt... vectorize as is)
    simd_lines = SIMD_LINES + SIMD_FUNCTION_LINES * len(functions) if functions else 0
    traffic = _traffic(analysis, plan, types, serial, footprint, layouts or {})
    traffic_omp = traffic if shared is serial else \
        _traffic(analysis, plan, types, shared, footprint, layouts or {})
    return NestProfile(tuple(statements), iterations, regions, barriers, combines, imbalance,
                       footprint, work, exact, lines, simd_lines, traffic, traffic_omp,
                       vector_iterations, vector_iterations_omp)


#: Lines the OpenMP variant adds where its vector loops call C library functions (exp, log...)
#: through wrappers with SIMD clones (``codegen.openmp``): a base, and each function's. They
#: compile at the per-line rate of the rest: black_scholes' OpenMP variant (exp and log: 69
#: lines more) took 48 ms longer to compile than its serial C, vadd's 8, jacobi's 12, and the
#: model's constant OpenMP extra (about 10 ms) had priced its first call 40 ms short.
SIMD_LINES, SIMD_FUNCTION_LINES = 39, 15


#: Lines a tiled band adds to the generated C (its tile loops: hilbert's band adds 6 lines,
#: 6 ms of gcc here), and what a band whose block is unrolled and jammed (``codegen.c``'s
#: ``CEmitter._jams``: a register block and its remainders) adds beyond, in lines of the
#: per-line compile rate: gemm's jammed band is 71 lines more, but its unrolled FMA chains
#: took gcc 88 ms more to compile, the time of about 140 plain lines. (One figure of 80 lines
#: for any band priced hilbert's compile 45 ms long, and gemm's 75 ms short.)
TILED_BAND_LINES = 6
JAMMED_BLOCK_LINES = 140


def _jammed_blocks(analysis, schedule) -> int:
    """How many of ``schedule``'s tiled bands the C emitter unrolls and jams: those whose last
    loop holds only statements (``codegen.c.JAM_STATEMENTS`` at most), one of which writes an
    element that the loop around it, of the band too, does not move (gemm's ``C[i, j]`` under
    ``k``), as ``CEmitter._jams`` and ``_pair`` ask."""
    from ..codegen.c import JAM_STATEMENTS

    variables = {loop.lid: loop.var for loop in d.loops(analysis.nest.loop)}
    access = analysis.access
    found = 0

    def visit(node, tiled: frozenset[int], outer: SLoop | None) -> None:
        nonlocal found
        if isinstance(node, STile):
            for child in node.body:
                visit(child, tiled | {node.lid}, None)
            return
        if not isinstance(node, SLoop):
            return
        if outer is not None and node.lid in tiled and outer.lid in tiled and \
                len(outer.body) == 1 and node.body and \
                all(isinstance(c, SStmt) for c in node.body) and \
                len(node.body) <= JAM_STATEMENTS:
            var = variables[outer.lid]
            if any(acc.write and acc.affine and
                   all(var not in sub.variables for sub in acc.subscripts)
                   for child in node.body for acc in access.statement(child.sid).accesses):
                found += 1
                return
        for child in node.body:
            visit(child, tiled, node)

    for node in schedule.root:
        visit(node, frozenset(), None)
    return found


def _compiled_schedule(analysis, plan, types, shared: bool):
    """(the schedule the serial C variant runs for this binding, or the OpenMP variant's where
    ``shared``; the bands it tiles): ``codegen.c``'s, its loops reordered where arrays are
    read through transposed copies, tiled where its arrays do not fit the L2. (Asked whatever
    the arrays' size: a copy may move a loop innermost, which decides whether the statement
    vectorizes or waits on a chain: syr2k's ``j``.)"""
    from asp_core import config

    from ..codegen.c import serial_schedule

    force = config.current().tile
    itemsize = {name: types.arrays[name].dtype.itemsize for name in analysis.names.arrays}
    return serial_schedule(analysis, plan, itemsize, shared=shared, force=force)


def _traffic(analysis, plan, types, schedule, footprint: int,
             layouts: Mapping[str, str]) -> tuple[float, float, float]:
    """Bytes ``schedule`` loads into L1, L2 and the last-level cache (``cost.locality``)."""
    from asp_core import platform

    from . import locality

    bound = plan.bound
    loops = bound.loops
    canonical = bound.canonical
    itemsize, shapes, contiguous = {}, {}, {}
    copied = 0   # bytes of the transposed copies (``schedule.packing``): read, then written
    for name, shape in zip(analysis.names.arrays, bound.key.shapes):
        key = canonical.get(name, name)
        itemsize[key] = types.arrays[name].dtype.itemsize
        shapes[key] = tuple(shape)
        if name in schedule.packs:   # the nest reads the copy, its first dimension adjacent
            contiguous[key] = 0
            copied += 2 * math.prod(shape) * itemsize[key]
        elif layouts.get(name, "C") != "C":
            contiguous[key] = -1
    found = locality.groups(schedule.root, bound.accesses, itemsize, shapes, contiguous)
    caches = platform.data_caches()
    l1 = caches.l1 or 32 * 1024
    l2 = caches.l2 or 1 << 20
    llc = caches.l3 or l2

    def entered(chain) -> float:
        """How often the innermost loop of ``chain`` is entered: its enclosing loops'
        iterations (tile loops and the loops inside them counted by blocks)."""
        ancestors = chain[:-1]
        tiles = {n.lid: n.size for n in ancestors if isinstance(n, STile)}
        factor = 1.0
        plain = []
        for n in ancestors:
            full = max(loops[n.lid].t_max + 1, 0)
            if isinstance(n, STile):
                factor *= -(-full // n.size)
            elif n.lid in tiles:
                factor *= min(tiles[n.lid], full)
            else:
                plain.append(n)
        if plain:
            factor *= entries_of(tuple(plain), loops)
        return factor

    mean = {}
    for lid, loop in loops.items():   # a triangle's rows: their mean length
        if loop.start.coeffs or loop.extent.coeffs:
            chain = source_chain(lid, loops)
            outer = domain.count(chain[:-1], loops).instances
            mean[lid] = domain.count(chain, loops).instances / outer if outer else 0.0
    return tuple(locality.traffic(found, loops, entered, capacity, footprint, mean) +
                 (copied if footprint > locality.CACHE_SHARE * capacity else 0.0)
                 for capacity in (l1, l2, llc))


def _loop_iterations(schedule, loops, innermost: Mapping[int, list]) -> tuple[int, int, int]:
    """(iterations, those of loops innermost to vectorized statements in serial C, in
    OpenMP) as the compiled code runs the loops: each loop of the schedule counted along its
    chain in the schedule (each copy of a distributed loop apart), where its bounds allow
    that order (a bound that reads a loop the schedule puts deeper, or a tiled plan: counted
    in source order). Counted in source order, a loop the schedule moved innermost kept its
    outer count: fbcorr's ``x``, vectorized below ``c, fy, fx``, counted 60 per row where it
    runs 60 per ``fx``, and ``fx`` the reverse, so its loop overhead was priced twice as
    high."""
    totals = [0, 0, 0]

    def add(lid: int, chain: tuple[int, ...]) -> None:
        counted = domain.count(chain, loops).instances
        body = innermost.get(lid)
        totals[0] += counted
        totals[1] += counted if body and all(s.vector for s in body) else 0
        totals[2] += counted if body and all(s.vector_omp for s in body) else 0

    def ordered(chain: tuple[int, ...]) -> bool:
        return all(dep in chain[:i] for i, lid in enumerate(chain)
                   for dep, _ in loops[lid].extent.coeffs)

    def visit(node, chain: tuple[int, ...]) -> None:
        if isinstance(node, SLoop):
            chain = chain + (node.lid,)
            add(node.lid, chain if ordered(chain) else source_chain(node.lid, loops))
            for child in node.body:
                visit(child, chain)

    if any(isinstance(node, STile) for root in schedule.root for node in root.walk()):
        for lid in loops:
            add(lid, source_chain(lid, loops))
    else:
        for node in schedule.root:
            visit(node, ())
    return totals[0], totals[1], totals[2]


def source_chain(lid: int, loops) -> tuple[int, ...]:
    chain = [lid]
    while loops[chain[-1]].parent >= 0:
        chain.append(loops[chain[-1]].parent)
    return tuple(reversed(chain))


def _schedule_chains(schedule) -> dict[int, tuple[SLoop, ...]]:
    """Per statement, the schedule loops around it, outermost first."""
    out: dict[int, tuple[SLoop, ...]] = {}

    def visit(node, chain: tuple[SLoop, ...]) -> None:
        if isinstance(node, SStmt):
            out[node.sid] = chain
        else:
            for child in node.body:
                visit(child, chain + (node,))

    for node in schedule.root:
        visit(node, ())
    return out


def _carried_ops(analysis, stmt, plan, types, chain: tuple, openmp: bool) -> int:
    """The operations of ``stmt``'s floating-point recurrence (``features.recurrence_ops``)
    that the innermost loop of ``chain`` (the compiled schedule's loops around it) carries:
    where that loop leaves the element it writes in place (``w[i] = w[i] + A[i, j] * x[j]``
    along ``j``), or the scalar is not private to it (``s = s + e``), each instance waits for
    the previous one. 0 for a statement under an ``if`` (it may not run: the chain breaks,
    as mandelbrot's ``z`` once it escapes), an integer (compilers sum integers in any order),
    a target that moves with the loop, or (``openmp``) a sum or product the OpenMP variant
    runs on lanes (``codegen.openmp``: a parallel innermost loop's reduction)."""
    loops = [node for node in chain if isinstance(node, SLoop)]
    if not loops or stmt.predicate is not None:
        return 0
    inner = loops[-1].lid
    target = stmt.target
    if openmp and loops[-1].parallel and isinstance(target, d.Var) and \
            any(name == target.name and op in ("+", "*") for name, op in loops[-1].reductions):
        return 0
    if isinstance(target, d.ArrayRef):
        if types.arrays[target.array].dtype.kind not in "fc":
            return 0
        write = next(a for a in plan.bound.accesses[stmt.sid] if a.write)
        if any(form is None or form.as_dict().get(inner, 0) for form in write.dims):
            return 0
    else:
        try:
            kind = types.of(target).dtype.kind
        except Exception:  # noqa: BLE001 - a scalar typeinfer does not type: no chain priced
            return 0
        found = analysis.scalars.of(target.name, inner)
        if kind not in "fc" or found is None or found.kind == PRIVATE:
            return 0
    return recurrence_ops(stmt)


def _bytes(analysis, plan, types, sid: int, inner: SLoop | None, layouts) -> tuple[float, bool]:
    """(bytes per instance from memory, whether every access has unit or zero stride along
    the innermost loop): invariant accesses stay in registers, unit-stride ones stream their
    element, others cost a cache line."""
    moved = 0.0
    unit = True
    info = analysis.access.statement(sid)
    for acc, bound in zip(info.accesses, plan.bound.accesses[sid]):
        size = types.arrays[acc.array].dtype.itemsize
        if inner is None:
            moved += size
            continue
        strides = []
        known = True
        for dim, mode in zip(bound.dims, bound.modes):
            if dim is None or mode not in (DIRECT, SHIFTED):
                known = False
                break
            strides.append(dim.as_dict().get(inner.lid, 0))
        if not known:
            moved += LINE
            unit = False
        elif not any(strides):
            continue                       # invariant in the inner loop
        elif all(s == 0 for s in strides[:-1]) and abs(strides[-1]) == 1 and \
                layouts.get(acc.array, "C") == "C":
            moved += size
        else:
            moved += min(LINE, size * max(abs(s) for s in strides if s) * 8)
            unit = False
    return moved, unit


def _openmp_structure(analysis, plan, small: frozenset[int]) -> tuple[int, int, int, float]:
    """(parallel regions entered, barriers met, reductions combined, imbalance) of the OpenMP
    variant, after the emitter's rules (``codegen.openmp``): a top-level parallel loop is a
    region entered once; a top-level sequential loop around parallel loops is one region, in
    which each parallel loop is a worksharing loop (a barrier per entry) and statements or
    sequential loops at region level run in ``single`` blocks (a barrier per entry). Each entry
    of a parallel loop combines each of its reduction variables once."""
    loops = plan.bound.loops
    regions = barriers = combines = 0
    imbalance = 1.0

    def statements_under(node) -> list[int]:
        if isinstance(node, SStmt):
            return [node.sid]
        return [sid for child in node.body for sid in statements_under(child)]

    def shared(node) -> bool:
        return isinstance(node, SLoop) and node.parallel and node.lid not in small

    def has_parallel(node) -> bool:
        return isinstance(node, SLoop) and (shared(node) or any(map(has_parallel, node.body)))

    def region_level(node, ancestors: tuple[SLoop, ...]) -> None:
        nonlocal barriers, combines, imbalance
        if shared(node):
            entered = entries_of(ancestors, loops)
            barriers += entered
            combines += entered * len(node.reductions)
            imbalance = max(imbalance, _shared_imbalance(analysis, loops, node,
                                                         statements_under(node), plan.bound))
        elif isinstance(node, SLoop) and has_parallel(node):
            for child in node.body:
                region_level(child, ancestors + (node,))
        else:
            barriers += entries_of(ancestors, loops)   # a single block (one thread runs it)

    for node in plan.schedule.root:
        if not has_parallel(node):
            continue
        regions += 1
        if node.parallel:
            combines += len(node.reductions)
            imbalance = max(imbalance, _shared_imbalance(analysis, loops, node,
                                                         statements_under(node), plan.bound))
        else:
            for child in node.body:
                region_level(child, (node,))
    return regions, barriers, combines, imbalance


def entries_of(ancestors: tuple[SLoop, ...], loops) -> int:
    """How often the body of the innermost of ``ancestors`` (schedule loops, outermost first)
    runs: their iterations, counted exactly over triangular and stepped domains."""
    if not ancestors:
        return 1
    lids = {a.lid for a in ancestors}
    chain = tuple(l for l in _longest_chain(ancestors, loops) if l in lids)
    return domain.count(chain, loops).instances


def _longest_chain(ancestors: tuple[SLoop, ...], loops) -> tuple[int, ...]:
    """The source chain of the innermost ancestor (its enclosing source loops included)."""
    return source_chain(ancestors[-1].lid, loops)


#: Threads the imbalance is computed for (the work split of static scheduling).
IMBALANCE_THREADS = 2


#: A parallel loop whose inner loops' bounds depend on it (a triangle: contiguous blocks of
#: its iterations would give the second of two threads three quarters of the work) is dealt
#: out in turn, in chunks of CYCLIC_CHUNK iterations where it runs at least CYCLIC_ROUNDS
#: chunks per thread, else of one (``schedule(static, chunk)``, the chunk chosen at run time:
#: one module serves every size). Chunks of 8 rows of doubles: no two threads write one
#: cache line of a row.
CYCLIC_CHUNK = 8
CYCLIC_ROUNDS = 4


def dealt_out(bound, node: SLoop) -> bool:
    """Whether the OpenMP variant deals parallel loop ``node``'s iterations out in turn
    (``CYCLIC_CHUNK``): some loop inside it has bounds that depend on it (``triangular``).
    ``codegen.openmp`` and the cost model both ask this."""
    return not bound.loops[node.lid].wide and triangular(bound, node)


def triangular(bound, node: SLoop) -> bool:
    """Whether some loop inside ``node`` has bounds that depend on it (else every iteration
    of ``node`` does the same work)."""
    def inner(n) -> bool:
        if not isinstance(n, SLoop):
            return False
        b = bound.loops[n.lid]
        return any(lid == node.lid for lid, _ in b.start.coeffs + b.extent.coeffs) or \
            any(map(inner, n.body))
    return any(map(inner, node.body))


def cyclic_chunk(trips: int, threads: int) -> int:
    """The chunk a loop ``dealt_out`` in turn runs in (see ``CYCLIC_CHUNK``)."""
    return CYCLIC_CHUNK if trips >= CYCLIC_CHUNK * CYCLIC_ROUNDS * threads else 1


def _shared_imbalance(analysis, loops, node: SLoop, sids: list[int], bound) -> float:
    """The imbalance of ``node`` as the OpenMP variant shares it (``dealt_out``). Where its
    iterations all do the same work, the count of the contiguous blocks alone says it
    (``_imbalance`` counts each iteration's work: 0.1 s of a first call on a million)."""
    trips, threads = loops[node.lid].t_max + 1, IMBALANCE_THREADS
    if not triangular(bound, node):
        return 1.0 if trips < threads else -(-trips // threads) / (trips / threads)
    chunk = cyclic_chunk(trips, threads) if dealt_out(bound, node) else None
    return _imbalance(analysis, loops, node, sids, chunk=chunk)


def _imbalance(analysis, loops, node: SLoop, sids: list[int], threads: int = 0,
               chunk: int | None = None) -> float:
    """The busiest thread's share of the work of parallel loop ``node`` split into contiguous
    chunks (OpenMP's static schedule), or into ``chunk`` iterations dealt out in turn, over
    the mean; 1.0 for balanced loops."""
    threads = threads or IMBALANCE_THREADS
    total = None
    for sid in sids:
        chain = analysis.access.statement(sid).loops
        if node.lid not in chain:
            continue
        work = domain.per_iteration(chain, loops, node.lid)
        if work is None:
            return 1.0
        total = work if total is None else total + work
    if total is None or len(total) < threads or not total.sum():
        return 1.0
    if chunk:   # rounds of ``threads`` chunks: thread t runs the t-th of each
        rounds = np.pad(total, (0, -len(total) % (threads * chunk))).reshape(-1, threads, chunk)
        shares = rounds.sum(axis=(0, 2))
    else:
        shares = [c.sum() for c in _split(total, threads)]
    return float(max(shares) / (total.sum() / threads))


def _split(values, parts: int):
    size = -(-len(values) // parts)
    return [values[k:k + size] for k in range(0, len(values), size)]


# -- cost functions -------------------------------------------------------------------------------

Prediction = tuple[float, dict[str, float]]


def python_cost(p: NestProfile, m: MachineParams, threads: int = 1, cores: int = 0,
                busy: float = 0.0, guarded: float = GUARDED_SHARE) -> Prediction:
    """The original code: the interpreter's time, on the share of a core the process gets
    (``running``), running ``guarded`` of the instances of the statements under an ``if``."""
    share = running(1, cores, busy)
    statements = sum(s.instances * (m.py_statement_ns + s.features.cost(m.py_op_ns) +
                                    s.features[SUBSCRIPT] * m.py_subscript_ns) *
                     (guarded if s.guarded else 1.0)
                     for s in p.statements) / share
    loops = p.iterations * m.py_iteration_ns / share
    terms = {"statements": statements * 1e-9, "loop iterations": loops * 1e-9,
             "entering the nest": m.py_call_ns * 1e-9 / share}
    return sum(terms.values()), terms


def running(threads: int, cores: int, busy: float) -> float:
    """The cores ``threads`` runnable threads get where other processes keep ``busy`` cores
    busy (of ``cores``, the affinity mask's; 0: as many as threads): all they ask for while
    the runnable threads fit the cores, else their share of them (the scheduler's, fair per
    thread). Serial code too runs slower on a busy machine: with two busy processes on two
    cores, a third runnable thread gets two thirds of a core. (While only OpenMP's time
    counted the load, serial C's slowdown went into its measured correction, which an OpenMP
    variant not measured yet borrows: the load counted twice kept serial C where two threads
    ran 1.5 to 1.8 times faster.)"""
    cores = cores or threads
    return threads * min(1.0, cores / (threads + busy)) if threads + busy > cores else threads


#: Operation kinds a vectorized loop still runs one lane at a time: C library functions
#: (``exp``, ``log``, ``pow`` ...) called through wrappers whose SIMD clones call the scalar
#: function in each lane (the same bits as serial C). Priced at the vector speed-up,
#: black_scholes' OpenMP variant was predicted 4.7 times faster than it ran, serial C 2.
LANE_CALLS = ("math", "pow")


def _compute_ns(s: StatementProfile, m: MachineParams, vector: bool, carried: int) -> float:
    """A statement's compute: its operations' throughput, vectorized or not; where its
    innermost loop carries a chain through it (``carried`` operations), at least their
    latency per instance."""
    per = s.features.cost(m.c_op_ns)
    if vector:   # (a vector loop calls C library functions once per lane: ``codegen.openmp``)
        calls = s.features.cost({kind: m.c_op_ns.get(kind, 0.0) for kind in LANE_CALLS})
        return s.instances * ((per - calls) / m.vector_speedup + calls)
    return s.instances * max(per * (GUARDED_SHARE if s.guarded else 1.0),
                             carried * m.c_chain_ns)


def memory_seconds(p: NestProfile, m: MachineParams, threads: float, openmp: bool = False) -> float:
    """The time the bytes the variant loads take to come (``openmp``: the OpenMP variant's
    schedule): the slowest level of a roofline over L2 into L1, the last-level cache into L2
    and memory into the last-level cache (``NestProfile.traffic``), on ``threads`` threads (a
    fraction where a busy machine leaves a team less than its cores: interpolated between the
    measured counts)."""
    if threads < 1.0:   # a share of one core's time: its bandwidth that share of the time
        return memory_seconds(p, m, 1.0, openmp) / threads
    traffic = p.traffic_omp if openmp else p.traffic
    low = max(1, int(threads))
    rate = m.per_thread(m.bandwidth, low)
    if threads > low:
        high = m.per_thread(m.bandwidth, low + 1)
        rate += (high - rate) * (threads - low)
    cached = m.cache_bandwidth * min(max(threads, 1.0), 2.0)
    if traffic is None:   # every instance streams its bytes
        moved = sum(s.instances * s.bytes for s in p.statements)
        return moved / (cached if p.footprint <= m.cache_bytes else rate)
    into_l1, into_l2, into_llc = traffic
    return max(into_l1 / (m.l2_bandwidth * threads), into_l2 / cached, into_llc / rate)


def c_cost(p: NestProfile, m: MachineParams, threads: int = 1, cores: int = 0,
           busy: float = 0.0) -> Prediction:
    """Serial C, on the share of a core the process gets (``running``)."""
    share = running(1, cores, busy)
    compute = sum(_compute_ns(s, m, s.vector, s.carried) for s in p.statements) * 1e-9 / share
    compute += p.loop_iterations(m) * m.c_iteration_ns * 1e-9 / share
    memory = memory_seconds(p, m, share)
    terms = {"compute": compute, "memory": memory, "call": m.c_call_ns * 1e-9}
    return max(compute, memory) + terms["call"], terms


def openmp_cost(p: NestProfile, m: MachineParams, threads: int = 2, cores: int = 0,
                busy: float = 0.0) -> Prediction:
    """``cores``: the cores of the affinity mask (0: as many as threads); ``busy``: cores
    other processes keep busy. With more runnable threads than cores, the team gets its share
    of them (the scheduler's), and each barrier or region waits for a thread that may be
    descheduled: they cost ``OVERSUBSCRIBED`` times more per thread too many."""
    cores = cores or threads
    effective = running(threads, cores, busy)
    waiting = 1.0 + OVERSUBSCRIBED * max(0.0, threads + busy - cores)
    parallel = sum(_compute_ns(s, m, s.vector_omp, s.carried_omp)
                   for s in p.statements if s.parallel) * 1e-9
    serial = sum(_compute_ns(s, m, s.vector and not s.carried_omp, s.carried_omp)
                 for s in p.statements if not s.parallel) * 1e-9
    share = parallel * p.imbalance / effective
    loops = p.loop_iterations(m, openmp=True) * m.c_iteration_ns * 1e-9 / effective
    compute = share + serial + loops
    memory = memory_seconds(p, m, effective, openmp=True)   # (the bandwidth of the team's cores)
    regions = p.regions * m.per_thread(m.omp_fork_ns, threads) * 1e-9 * waiting
    barriers = p.barriers * m.per_thread(m.omp_barrier_ns, threads) * 1e-9 * waiting
    reductions = p.combines * m.per_thread(m.omp_combine_ns, threads) * 1e-9 * waiting
    # Waking a team that slept since the last call (``omp_wake_ns``) depends on how calls
    # follow each other, which the online correction learns: calls back to back never pay
    # it, calls between long Python pauses always do. It is not in the prediction.
    terms = {"parallel compute": share, "serial compute": serial, "loop iterations": loops,
             "memory": memory,
             "regions": regions, "barriers": barriers, "reductions": reductions,
             "call": m.c_call_ns * 1e-9}
    return max(compute, memory) + regions + barriers + reductions + terms["call"], terms


#: How much more a barrier or region costs per runnable thread beyond the cores (measured
#: on the development VM with two busy processes: a few microseconds instead of 0.25).
OVERSUBSCRIBED = 10.0


def build_seconds(p: NestProfile, m: MachineParams, openmp: bool = False) -> float:
    """Predicted time to generate and compile one variant of the nest (``openmp``: its
    OpenMP variant)."""
    return m.compile_base_s + m.compile_per_line_s * max(0, p.lines - MODULE_LINES) + \
        (m.compile_openmp_s + m.compile_per_line_s * p.simd_lines if openmp else 0.0)


#: Cost function per variant kind: (profile, machine, threads) -> (seconds, terms).
COSTS: dict[str, Callable[[NestProfile, MachineParams, int], Prediction]] = {
    "python": python_cost,
    "c": c_cost,
    "openmp": openmp_cost,
}
