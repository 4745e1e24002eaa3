"""Parallel schedules after Allen and Kennedy's code generation (ch. 2 and 6).

``schedule_nest`` walks the loop tree level by level. At level k, among the statements of a
loop body, it groups statements that must stay together (those sharing a scalar private to a
loop at depth >= k: its definition and its uses must see the same iteration), finds the
strongly connected components of the dependence graph restricted to dependences carried at
level k or deeper (or loop-independent), and emits them in topological order (loop
distribution). A component whose statements carry no dependence at level k runs that loop in
parallel; reduction updates may carry their own reduction dependences and still run in
parallel, combined by the reduction (with ``exact_reductions`` those count as any other
dependence, so that a reduction keeps Python's order). Consecutive parallel components of the
same loop with no dependence carried at level k between them are fused again (typed fusion),
so distribution never costs a separate parallel loop per statement. A sequential component
that forms a perfect band is offered to ``interchange``, which moves parallel loops outward
when that is legal (gemm with k innermost, or k outermost, runs i and j in parallel and k
sequentially).
"""

from __future__ import annotations

import dataclasses
import heapq
from dataclasses import dataclass

from .. import dast as d
from ..access import AccessInfo
from ..analysis.graph import DependenceGraph, Edge
from ..scalars import PRIVATE, ScalarInfo, reduction_family
from .interchange import parallel_outward
from .tree import Schedule, SLoop, SStmt, StatementSchedule


@dataclass
class _Context:
    loops: dict[int, d.Loop]
    depth: dict[int, int]
    stmt_loops: dict[int, tuple[int, ...]]
    statements: dict[int, d.Assign]
    edges: tuple[Edge, ...]
    private_groups: list[tuple[int, frozenset[int]]]          # (depth, statements)
    private_at: dict[int, list[tuple[str, bool]]]             # lid -> [(scalar, lastprivate)]
    access: AccessInfo


@dataclass(frozen=True)
class NestStructure:
    """What scheduling needs that does not depend on the binding (computed once per nest)."""

    loops: dict[int, d.Loop]
    depth: dict[int, int]
    stmt_loops: dict[int, tuple[int, ...]]
    statements: dict[int, d.Assign]
    private_groups: tuple[tuple[int, frozenset[int]], ...]
    private_at: dict[int, list[tuple[str, bool]]]
    access: AccessInfo


def nest_structure(nest: d.Nest, access: AccessInfo, scalars: ScalarInfo) -> NestStructure:
    depth = {info.lid: info.depth for info in access.loops}
    private_groups, private_at = [], {}
    for c in scalars.classes:
        if c.kind != PRIVATE:
            continue
        users = frozenset(st.sid for st in access.statements if c.lid in st.loops and
                          (c.name in st.scalar_reads or st.scalar_write == c.name))
        private_groups.append((depth[c.lid], users))
        private_at.setdefault(c.lid, []).append((c.name, c.lastprivate))
    return NestStructure({loop.lid: loop for loop in d.loops(nest.loop)}, depth,
                         {st.sid: st.loops for st in access.statements},
                         {s.sid: s for s in d.statements(nest.loop)}, tuple(private_groups),
                         private_at, access)


def schedule_nest(structure: NestStructure, graph: DependenceGraph,
                  exact_reductions: bool = False) -> Schedule:
    """The nest's schedule. ``exact_reductions``: a reduction's own dependences count as any
    other (a loop that carries one runs sequentially), so that every variant performs its
    operations in Python's order (the kernel's ``exact_reductions`` setting)."""
    s = structure
    edges = graph.edges
    if exact_reductions:
        edges = tuple(dataclasses.replace(e, reduction=None) if e.reduction else e
                      for e in edges)
    ctx = _Context(s.loops, s.depth, s.stmt_loops, s.statements, edges,
                   list(s.private_groups), s.private_at, s.access)
    root = _build(ctx, 1, None, frozenset(s.stmt_loops))
    return Schedule(tuple(root), statement_schedules(root, ctx))


def _build(ctx: _Context, level: int, container: int | None, stmts: frozenset[int]) -> list:
    edges = [e for e in ctx.edges if e.source in stmts and e.sink in stmts
             and (e.level is None or e.level >= level)]
    groups = _private_groups(ctx, level, stmts)
    components = _ordered_components(stmts, edges, groups)
    out: list = []
    run: list[int] = []
    run_loop: int | None = None
    run_parallel = False

    def flush() -> None:
        if run:
            out.extend(_emit_loop(ctx, level, run_loop, frozenset(run), run_parallel, edges))
            run.clear()

    for comp in components:
        sample = next(iter(comp))
        if len(ctx.stmt_loops[sample]) == level - 1:  # a statement directly in the container
            # Such statements share no loop at this level, so they cannot be in a cycle.
            assert len(comp) == 1, comp
            flush()
            run_loop = None
            out.append(SStmt(sample))
            continue
        lid = ctx.stmt_loops[sample][level - 1]
        parallel = not any(e.level == level and e.reduction is None
                           for e in edges if e.source in comp and e.sink in comp)
        fusable = (run and lid == run_loop and parallel and run_parallel and not any(
            e.level == level and e.reduction is None for e in edges
            if (e.source in run and e.sink in comp) or (e.source in comp and e.sink in run)))
        if not fusable:
            flush()
        run_loop, run_parallel = lid, parallel
        run.extend(sorted(comp))
    flush()
    return out


def _private_groups(ctx: _Context, level: int, stmts: frozenset[int]) -> dict[int, int]:
    """Union-find: statement -> representative, joining users of scalars private to a loop
    at depth >= level."""
    parent = {s: s for s in stmts}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for depth, users in ctx.private_groups:
        if depth < level:
            continue
        members = sorted(users & stmts)
        for other in members[1:]:
            parent[find(other)] = find(members[0])
    return {s: find(s) for s in stmts}


def _ordered_components(stmts: frozenset[int], edges: list[Edge], groups: dict[int, int]
                        ) -> list[frozenset[int]]:
    """Strongly connected components of the group graph, in a topological order that follows
    the source order where dependences leave a choice."""
    nodes = sorted(set(groups.values()))
    succ: dict[int, set[int]] = {n: set() for n in nodes}
    for e in edges:
        a, b = groups[e.source], groups[e.sink]
        if a != b:
            succ[a].add(b)
    comp_of = _tarjan(nodes, succ)
    members: dict[int, set[int]] = {}
    for s in stmts:
        members.setdefault(comp_of[groups[s]], set()).add(s)
    csucc: dict[int, set[int]] = {c: set() for c in members}
    indeg = {c: 0 for c in members}
    for a in nodes:
        for b in succ[a]:
            ca, cb = comp_of[a], comp_of[b]
            if ca != cb and cb not in csucc[ca]:
                csucc[ca].add(cb)
                indeg[cb] += 1
    heap = [(min(members[c]), c) for c in members if indeg[c] == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        _, c = heapq.heappop(heap)
        order.append(frozenset(members[c]))
        for nxt in csucc[c]:
            indeg[nxt] -= 1
            if indeg[nxt] == 0:
                heapq.heappush(heap, (min(members[nxt]), nxt))
    assert len(order) == len(members), "the condensation of a graph is acyclic"
    return order


def _tarjan(nodes: list[int], succ: dict[int, set[int]]) -> dict[int, int]:
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    comp: dict[int, int] = {}
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(succ[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(succ[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                while True:
                    x = stack.pop()
                    on_stack.discard(x)
                    comp[x] = node
                    if x == node:
                        break
    return comp


def _loop_clauses(ctx: _Context, lid: int, stmts: frozenset[int], edges: list[Edge],
                  level: int) -> tuple[tuple, tuple, tuple]:
    reductions = sorted({(e.variable, e.reduction) for e in edges
                         if e.level == level and e.reduction is not None
                         and e.source in stmts and e.sink in stmts})
    private, last = _private_in(ctx, (lid,), stmts)
    return tuple(reductions), private, last


def _private_in(ctx: _Context, lids, stmts: frozenset[int]) -> tuple[tuple, tuple]:
    """(private, lastprivate): the scalars private to the loops ``lids`` that the statements
    ``stmts`` use. A loop distributed into pieces privatizes in each only what that piece's
    statements use: a piece that does not assign a lastprivate scalar would otherwise copy its
    uninitialized private copy out over the value another piece left (a generated kernel's
    ``t1 = A[0, 0]`` came back 0.0 from OpenMP, its loop's other piece interchanged)."""
    used = set()
    for sid in stmts:
        info = ctx.access.statements[sid]
        used |= set(info.scalar_reads) | ({info.scalar_write} - {None})
    private = {(name, last) for lid in lids for name, last in ctx.private_at.get(lid, [])
               if name in used}
    return (tuple(sorted({n for n, _ in private})),
            tuple(sorted({n for n, last in private if last})))


def _emit_loop(ctx: _Context, level: int, lid: int, stmts: frozenset[int], parallel: bool,
               edges: list[Edge]) -> list:
    reductions, private, lastprivate = _loop_clauses(ctx, lid, stmts, edges, level)
    body = tuple(_build(ctx, level + 1, lid, stmts))
    chosen = SLoop(lid, parallel, body, reductions if parallel else (), private, lastprivate)
    if not parallel:
        band = _interchanged_band(ctx, level, lid, stmts, edges)
        if band is not None and _score(band, ctx) > _score(chosen, ctx):
            chosen = band
    return [_with_locality(ctx, chosen, stmts, edges)]


def _with_locality(ctx: _Context, node: SLoop, stmts: frozenset[int], edges: list[Edge]) -> SLoop:
    """In a perfect band, move innermost the loop that walks the most subscripts with unit
    stride (the last subscript, coefficient 1), when that is legal and keeps the outermost
    loop's parallelism: what a CPU's caches and vector units want (gemm runs i, k, j)."""
    chain = [node]
    while len(chain[-1].body) == 1 and isinstance(chain[-1].body[0], SLoop):
        chain.append(chain[-1].body[0])
    if len(chain) < 2 or any(isinstance(c, SLoop) for c in chain[-1].body):
        return node
    band = [n.lid for n in chain]
    if any(d.exits(ctx.loops[l]) for l in band):
        return node   # a break ends its own loop: that loop keeps its place
    variables = {ctx.loops[l].var for l in band}
    for l in band[1:]:
        info = ctx.access.loop(l)
        if info.predicate or (set(info.start.variables) | set(info.stop.variables)) & variables:
            return node
    best = _unit_stride_loop(ctx, stmts, band)
    if best is None or best == band[-1] or unrolled(ctx.access, band[band.index(best) + 1:]):
        return node
    order = [l for l in band if l != best] + [best]
    # ``edges`` holds the dependences not yet satisfied by an enclosing sequential loop; a
    # reduction's own count too: interchanging the loops around it would change the order of
    # its operations, and a float sum rounds differently (the python and serial C variants
    # must give Python's result exactly; a parallel loop still reduces in parallel)
    vectors = [{l: e.vector[ctx.depth[l] - 1] for l in band} for e in edges
               if e.source in stmts and e.sink in stmts and e.level is not None]
    flags = _legal_flags(order, vectors)
    if flags is None or flags[0] != chain[0].parallel or sum(flags) < sum(n.parallel for n in chain):
        return node
    reductions = {l: tuple(sorted({(e.variable, e.reduction) for e in edges
                                   if e.reduction is not None and e.source in stmts
                                   and e.sink in stmts and e.vector[ctx.depth[l] - 1] != "="}))
                  for l in band}
    private = tuple(sorted({p for n in chain for p in n.private}))
    last = tuple(sorted({p for n in chain for p in n.lastprivate}))
    inner: tuple = chain[-1].body
    for l, parallel in reversed(list(zip(order, flags))):
        inner = (SLoop(l, parallel, inner, reductions[l] if parallel else (), private, last),)
    return inner[0]


#: Loops of constant trip counts, at most this many iterations in all, inside the loop of unit
#: stride keep it outside them: the C compiler unrolls them completely (``unrolled``; the C
#: variants ask for it) and vectorizes that loop over their straight-line body, each of its
#: iterations keeping its own order. A 5 x 5 'valid' convolution (``out[i, j] += img[i + p,
#: j + q] * w[p, q]``) ran at 16 GFLOP/s in that order against 9 with j moved inside p and q
#: (3 x 3 taps: 12 against 6); 7 x 7 taps, unrolled, ran 1.5 times slower outside (gcc 12,
#: -O3, n = 2000).
UNROLLED_TRIPS = 25


def unrolled(access: AccessInfo, lids: list[int]) -> bool:
    """Whether the loops ``lids`` (a perfect band, outermost first) all have constant trip
    counts, at most ``UNROLLED_TRIPS`` in all: a band the compiler unrolls completely."""
    trips = 1
    for lid in lids:
        count = access.loop(lid).constant_trips
        if count is None:
            return False
        trips *= count
    return bool(lids) and trips <= UNROLLED_TRIPS


def _unit_stride_loop(ctx: _Context, stmts: frozenset[int], band: list[int]) -> int | None:
    scores: dict[int, int] = {}
    for sid in stmts:
        info = ctx.access.statement(sid)
        scope = {ctx.loops[l].var: l for l in info.loops}
        for acc in info.accesses:
            if not acc.subscripts or acc.subscripts[-1] is None:
                continue
            last = acc.subscripts[-1]
            for term in last.terms:
                lid = scope.get(term.var)
                if lid in band and term.coeff.constant in (1, -1) and not any(
                        s is None or lid in [scope.get(t.var) for t in s.terms]
                        for s in acc.subscripts[:-1]):
                    scores[lid] = scores.get(lid, 0) + 1
    if not scores:
        return None
    return max(band, key=lambda l: (scores.get(l, 0), band.index(l)))


def _legal_flags(order: list[int], vectors: list[dict[int, str]]) -> list[bool] | None:
    """Whether each loop of the permuted band is parallel, or None if the permutation would
    reverse a dependence."""
    unsatisfied = list(vectors)
    flags = []
    for l in order:
        directions = {v[l] for v in unsatisfied}
        if directions <= {"="}:
            flags.append(True)
        elif directions <= {"=", "<"}:
            flags.append(False)
            unsatisfied = [v for v in unsatisfied if v[l] == "="]
        else:
            return None
    return flags


def _score(node: SLoop, ctx: _Context) -> tuple[int, int]:
    """How much parallelism a subtree exposes: the number of (statement, parallel loop)
    pairs, then how many of those parallel loops come before any sequential one."""
    total = outer = 0
    for sch in statement_schedules([node], ctx):
        total += len(sch.parallel) + len(sch.reductions)
    def walk(n, prefix: bool) -> None:
        nonlocal outer
        if isinstance(n, SStmt):
            return
        still = prefix and n.parallel
        if still:
            outer += sum(1 for _ in _statements_in(n))
        for child in n.body:
            walk(child, still)
    walk(node, True)
    return total, outer


def _statements_in(node):
    if isinstance(node, SStmt):
        yield node.sid
    else:
        for child in node.body:
            yield from _statements_in(child)


def _interchanged_band(ctx: _Context, level: int, lid: int, stmts: frozenset[int],
                       edges: list[Edge]) -> SLoop | None:
    chains = {ctx.stmt_loops[s][level - 1:] for s in stmts}
    if len(chains) != 1:
        return None
    (band,) = chains
    if len(band) < 2 or any(ctx.loops[l].predicate for l in band[1:]) or \
            any(d.exits(ctx.loops[l]) for l in band):
        return None
    band_vars = {ctx.loops[l].var for l in band}
    for l in band:
        info = ctx.access.loop(l)
        if (set(info.start.variables) | set(info.stop.variables)) & band_vars:
            return None  # not rectangular within the band
    vectors = []
    for e in edges:   # (a reduction's too: see ``_with_locality``)
        if e.source in stmts and e.sink in stmts and e.level is not None:
            vectors.append({l: e.vector[ctx.depth[l] - 1] for l in band})
    order = parallel_outward(band, vectors)
    if order is None or not order[0][1] or [l for l, _ in order] == list(band):
        return None
    innermost = band[-1]
    node: SLoop | tuple = tuple(_build(ctx, level + len(band), innermost, stmts))
    for position in range(len(order) - 1, -1, -1):
        l, parallel = order[position]
        reductions = tuple(sorted({(e.variable, e.reduction) for e in edges
                                   if e.reduction is not None and e.source in stmts
                                   and e.sink in stmts and e.vector[ctx.depth[l] - 1] != "="}))
        private, last = _private_in(ctx, band, stmts)
        node = (SLoop(l, parallel, node if isinstance(node, tuple) else (node,),
                      reductions if parallel else (), private, last),)
    return node[0]


def statement_schedules(root: list, ctx: _Context) -> tuple[StatementSchedule, ...]:
    """Each statement's loops split into sequential, parallel and reduction ones."""
    out: dict[int, StatementSchedule] = {}

    def visit(node, path: tuple[SLoop, ...]) -> None:
        if isinstance(node, SStmt):
            seq, par, red = [], [], []
            stmt = ctx.statements[node.sid]
            for loop in path:
                var = ctx.loops[loop.lid].var
                if not loop.parallel:
                    seq.append(var)
                elif any(reduction_family(stmt, name) for name, _ in loop.reductions):
                    red.append(var)
                else:
                    par.append(var)
            out[node.sid] = StatementSchedule(node.sid, tuple(seq), tuple(par), tuple(red))
            return
        for child in node.body:
            visit(child, path + (node,))

    for node in root:
        visit(node, ())
    return tuple(out[sid] for sid in sorted(out))
