"""The dependence graph of a nest: statements, and edges with kind, direction vector, distance,
carrying level and the test that decided them.

Staged, after ALPyNA's partial evaluation cache:

* ``static_dependences`` runs once per nest: the scalar dependences (from the scalar
  classification: private scalars carry nothing across the loops they are private to, and
  reduction updates are marked as such), the list of array reference pairs to test, and the
  pairs proven independent before any value is known (ZIV or GCD on a subscript position
  without symbols);
* ``dependence_graph`` runs once per binding: it tests the remaining pairs on the bound nest
  and assembles the graph.

A static verdict compares subscripts as written, but Python wraps negative indices: ``A[-1]``
and ``A[7]`` are one element of an 8-element axis, and ``A[2*i - 1]`` reaches ``A[n - 1]``.
So a static verdict is *conditional*: it holds for a binding only where both subscripts of
its deciding position are used unchanged (both ``direct``) or both shifted by the same extent
(both ``shifted``, see ``binding``); otherwise the pair is tested again on the bound forms,
where wrap-around has been applied (or the position is unknown).

Edges are oriented from the statement instance that runs first. ``level`` is the position (1 =
outermost) of the common loop that carries the dependence, or None for a loop-independent one.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

from asp_core.dast import Node

from ..access import AccessInfo
from ..affine import Affine
from ..pretty import expression
from ..scalars import CARRIED, PRIVATE, REDUCTION, ScalarInfo, reduction_family
from .binding import DIRECT, SHIFTED, BoundNest
from .budget import NEST_UNITS, Budget
from .dependence import STAR, PairResult, test_pair

FLOW, ANTI, OUTPUT = "flow", "anti", "output"


@dataclass(frozen=True)
class Edge(Node):
    source: int
    sink: int
    kind: str
    variable: str
    loops: tuple[int, ...]          # the common loops (lids), outermost first
    vector: tuple[str, ...]
    level: int | None               # carrying level; None: loop-independent
    distance: tuple[int | None, ...]
    test: str
    reduction: str | None = None    # the reduction operator, for a reduction's own edges

    @property
    def carried(self) -> bool:
        return self.level is not None


@dataclass(frozen=True)
class PairRecord(Node):
    """One tested pair of references and its outcome (for ``explain``)."""

    first: str
    second: str
    outcome: str
    edges: tuple[int, ...]


@dataclass(frozen=True)
class DependenceGraph(Node):
    edges: tuple[Edge, ...]
    pairs: tuple[PairRecord, ...]


@dataclass(frozen=True)
class StaticVerdict:
    """A pair proven independent by one subscript position, as written: it holds for a
    binding where that position of both references is used without wrap-around, or with the
    same shift (see the module docstring)."""

    pair: tuple[int, int, int, int]    # (sid1, pos1, sid2, pos2)
    dim: int                           # the deciding subscript position
    record: PairRecord


@dataclass(frozen=True)
class StaticDependences:
    scalar_edges: tuple[Edge, ...]
    pairs: tuple[tuple[int, int, int, int], ...]   # (sid1, pos1, sid2, pos2) to test per binding
    proven: tuple[StaticVerdict, ...]              # pairs independent unless indices wrap
    descriptions: dict[tuple[int, int], str]      # (sid, position) -> "S1 writes A[i, j]"
    common: dict[tuple[int, int], tuple[int, ...]]  # (sid1, sid2) -> common loops


def _kind(first_writes: bool, second_writes: bool) -> str | None:
    if first_writes and second_writes:
        return OUTPUT
    if first_writes:
        return FLOW
    if second_writes:
        return ANTI
    return None


def common_loops(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for x, y in zip(a, b):
        if x != y:
            break
        out.append(x)
    return tuple(out)


# -- static part ---------------------------------------------------------------------------------

def static_dependences(access: AccessInfo, scalars: ScalarInfo, statements) -> StaticDependences:
    pairs, proven = [], []
    flat = [(st.sid, pos, acc) for st in access.statements for pos, acc in enumerate(st.accesses)]
    descriptions = {(sid, pos): _describe(access, sid, pos) for sid, pos, _ in flat}
    for i, (s1, p1, a1) in enumerate(flat):
        for s2, p2, a2 in flat[i:]:
            if a1.array != a2.array or not (a1.write or a2.write):
                continue
            key = (s1, p1, s2, p2)
            verdict = _static_verdict(a1.subscripts, a2.subscripts)
            if verdict:
                test, dim = verdict
                proven.append(StaticVerdict(key, dim, PairRecord(
                    descriptions[s1, p1], descriptions[s2, p2],
                    f"independent ({test}, decided once)", ())))
            else:
                pairs.append(key)
    common = {(a.sid, b.sid): common_loops(a.loops, b.loops)
              for a in access.statements for b in access.statements}
    return StaticDependences(scalar_edges(access, scalars, statements) +
                             exit_edges(access, statements), tuple(pairs),
                             tuple(proven), descriptions, common)


def _static_verdict(f: tuple[Affine | None, ...], g: tuple[Affine | None, ...]
                    ) -> tuple[str, int] | None:
    """Independence of the subscripts as written (no symbols involved): the test and the
    deciding position, else None. Valid only where neither index wraps differently."""
    for dim, (a, b) in enumerate(zip(f, g)):
        if a is None or b is None or a.atoms() or b.atoms():
            continue
        if not a.terms and not b.terms:
            if a.const.constant != b.const.constant:
                return "ZIV", dim
            continue
        coeffs = [t.coeff.constant for t in a.terms] + [t.coeff.constant for t in b.terms]
        g_ = 0
        for c in coeffs:
            g_ = gcd(g_, c)
        if g_ and (b.const.constant - a.const.constant) % g_:
            return "GCD", dim
    return None


def holds(verdict: StaticVerdict, bound: BoundNest) -> bool:
    """Whether a static verdict holds for ``bound``: its deciding position of both references
    is used as written (``direct``), or both are shifted by the one extent (``shifted``)."""
    s1, p1, s2, p2 = verdict.pair
    first = bound.accesses[s1][p1].modes[verdict.dim]
    second = bound.accesses[s2][p2].modes[verdict.dim]
    return first == second and first in (DIRECT, SHIFTED)


def scalar_edges(access: AccessInfo, scalars: ScalarInfo, statements) -> tuple[Edge, ...]:
    """Dependences through scalars the nest writes (every instance touches the same value)."""
    edges: list[Edge] = []
    users: dict[str, list] = {}
    for st in access.statements:
        for name in set(st.scalar_reads) | ({st.scalar_write} - {None}):
            users.setdefault(name, []).append(st)
    for name in sorted(users):
        sts = users[name]
        for i, x in enumerate(sts):
            for y in sts[i:]:
                edges += _scalar_pair_edges(name, x, y, scalars, statements)
                if x is not y:
                    edges += _scalar_pair_edges(name, y, x, scalars, statements,
                                                loop_independent=False)
    return tuple(edges)


def exit_edges(access: AccessInfo, statements) -> tuple[Edge, ...]:
    """The order a ``break`` imposes on its loop (``ifconvert``): whether a later iteration
    runs at all depends on it, so every statement instance inside the loop depends on the
    break of each earlier iteration and precedes the break of each later one (carried both
    ways: the loop is sequential and none of its statements leaves it), and within one
    iteration the statements keep their places before and after it (loop-independent)."""
    edges: list[Edge] = []
    for st in access.statements:
        stmt = statements[st.sid]
        if stmt.kind != "break":
            continue
        loops, level = st.loops, len(st.loops)
        carried = ("=",) * (level - 1) + ("<",)
        unknown = (None,) * level
        for other in access.statements:
            if other.loops[:level] != loops:
                continue   # outside the loop the break ends
            pairs = {(st.sid, other.sid), (other.sid, st.sid)}
            for source, sink in sorted(pairs):
                edges.append(Edge(source, sink, FLOW, stmt.target.name, loops, carried, level,
                                  unknown, "break"))
            if other.sid != st.sid:
                first, second = sorted((st.sid, other.sid))
                edges.append(Edge(first, second, FLOW, stmt.target.name, loops,
                                  ("=",) * level, None, unknown, "break"))
    return tuple(edges)


def _scalar_pair_edges(name: str, x, y, scalars: ScalarInfo, statements,
                       loop_independent: bool = True) -> list[Edge]:
    """Edges from statement x to statement y on scalar ``name`` (x's instance first)."""
    loops = common_loops(x.loops, y.loops)
    out: list[Edge] = []
    reads = {st.sid: name in st.scalar_reads for st in (x, y)}
    writes = {st.sid: st.scalar_write == name for st in (x, y)}
    kinds = []
    for kind, ok in ((FLOW, writes[x.sid] and reads[y.sid]), (ANTI, reads[x.sid] and writes[y.sid]),
                     (OUTPUT, writes[x.sid] and writes[y.sid])):
        if ok:
            kinds.append(kind)
    if not kinds:
        return out
    private_depths = {k for k, lid in enumerate(loops, 1)
                      if (c := scalars.of(name, lid)) is not None and c.kind == PRIVATE}
    for level in range(1, len(loops) + 1):
        cls = scalars.of(name, loops[level - 1])
        if any(p >= level for p in private_depths) and not (cls and cls.kind == CARRIED):
            # private to an inner loop: every read there follows a write of the same
            # iteration; but where this loop carries it (its last value is read after this
            # loop, and an inner loop writes it only when it runs), the order of the writes
            # across this loop's iterations decides that value
            continue
        reduction = None
        if cls is not None and cls.kind == REDUCTION and \
                reduction_family(statements[x.sid], name) and reduction_family(statements[y.sid], name):
            reduction = cls.op
        vector = ("=",) * (level - 1) + ("<",) + (STAR,) * (len(loops) - level)
        for kind in kinds:
            out.append(Edge(x.sid, y.sid, kind, name, loops, vector, level,
                            (None,) * len(loops), "scalar", reduction))
    if loop_independent and x.sid < y.sid:
        for kind in kinds:
            out.append(Edge(x.sid, y.sid, kind, name, loops, ("=",) * len(loops), None,
                            (None,) * len(loops), "scalar"))
    return out


# -- per binding -----------------------------------------------------------------------------------

def dependence_graph(access: AccessInfo, static: StaticDependences, bound: BoundNest,
                     exact: bool = True) -> DependenceGraph:
    edges: list[Edge] = list(static.scalar_edges)
    records: list[PairRecord] = []
    pairs = list(static.pairs)
    for verdict in static.proven:
        if holds(verdict, bound):
            records.append(verdict.record)
        else:  # an index wraps (or may): test again on the bound forms
            pairs.append(verdict.pair)
    pairs += _alias_pairs(access, bound)
    budget = Budget(NEST_UNITS)  # the work all pairs may spend (analysis.budget)
    for key in pairs:
        s1, p1, s2, p2 = key
        a, b = bound.accesses[s1][p1], bound.accesses[s2][p2]
        loops1, loops2 = access.statements[s1].loops, access.statements[s2].loops
        common = static.common[s1, s2]
        first, second = static.descriptions[s1, p1], static.descriptions[s2, p2]
        if _dead(bound, loops1) or _dead(bound, loops2):
            records.append(PairRecord(first, second, "independent (a statement never runs)", ()))
            continue
        if a.array != b.array:  # distinct names that may partly overlap in memory
            result = PairResult(((STAR,) * len(common),), (None,) * len(common),
                                "arrays may overlap in memory")
        else:
            result = test_pair(a, b, loops1, loops2, common, bound.loops, exact, budget)
        if result.independent:
            records.append(PairRecord(first, second, f"independent ({result.test})", ()))
            continue
        new = orient(result, a, b, s1, s2, common, self_pair=(s1, p1) == (s2, p2),
                     variable=access.statements[s1].accesses[p1].array)
        if not new:  # they meet only within one statement instance
            records.append(PairRecord(first, second, "independent across instances "
                                      f"({result.test})", ()))
            continue
        indices = tuple(range(len(edges), len(edges) + len(new)))
        edges.extend(new)
        records.append(PairRecord(first, second, f"dependent ({result.test})", indices))
    return DependenceGraph(tuple(edges), tuple(records))


def _dead(bound: BoundNest, loops: tuple[int, ...]) -> bool:
    return any(bound.loops[lid].t_max < 0 for lid in loops)


def _alias_pairs(access: AccessInfo, bound: BoundNest) -> list[tuple[int, int, int, int]]:
    """Pairs of references to differently named arrays that share memory in this call."""
    if not bound.key.aliases:
        return []
    out = []
    flat = [(st.sid, pos, acc) for st in access.statements for pos, acc in enumerate(st.accesses)]
    for i, (s1, p1, a1) in enumerate(flat):
        for s2, p2, a2 in flat[i:]:
            if a1.array == a2.array or not (a1.write or a2.write):
                continue
            c1, c2 = bound.canonical[a1.array], bound.canonical[a2.array]
            if c1 == c2 or frozenset((c1, c2)) in bound.overlapping:
                out.append((s1, p1, s2, p2))
    return out


def _describe(access: AccessInfo, sid: int, pos: int) -> str:
    acc = access.statements[sid].accesses[pos]
    index = ", ".join(expression(i) for i in acc.index)
    return f"S{sid} {'writes' if acc.write else 'reads'} {acc.array}[{index}]"


def orient(result: PairResult, a, b, s1: int, s2: int, common: tuple[int, ...], *,
           self_pair: bool, variable: str) -> list[Edge]:
    """Edges from the pair's vectors, each from the instance that runs first."""
    edges: list[Edge] = []
    n = len(common)

    def add(source_is_a: bool, vector: tuple[str, ...], level: int | None, sign: int) -> None:
        src, dst = (a, b) if source_is_a else (b, a)
        kind = _kind(src.write, dst.write)
        if kind is None:
            return
        dist = tuple(None if x is None else sign * x for x in result.distances) or (None,) * n
        edges.append(Edge(src.sid, dst.sid, kind, variable, common, vector, level, dist,
                          result.test))

    flip = {"<": ">", ">": "<", "=": "=", STAR: STAR}
    for vector in result.vectors:
        stack = [tuple(vector)]
        while stack:
            v = stack.pop()
            first = next((k for k, x in enumerate(v) if x != "="), None)
            if first is None:  # loop-independent: textual order decides
                if s1 != s2:
                    add(s1 < s2, v, None, 1 if s1 < s2 else -1)
                continue
            x = v[first]
            if x == STAR:
                for choice in ("<", "=", ">"):
                    stack.append(v[:first] + (choice,) + v[first + 1:])
            elif x == "<":
                add(True, v, first + 1, 1)
            elif not self_pair:  # ">": b's instance runs first (a pair with itself: seen as "<")
                add(False, tuple(flip[y] for y in v), first + 1, -1)
    return edges
