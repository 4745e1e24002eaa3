"""Partitioning a nest over Dask arrays: which loop, which array dimensions, which halos.

A pure function of one nest's analysis and the plan of one binding (``pipeline.Plan``: the
bound loops and subscripts, the dependence graph), run per ``on_dask`` call on the client:
``partition_nest`` returns a frozen ``NestPartition`` or raises ``PartitionRefused`` with the
reason and the user's line. Nothing here knows Dask.

**A step** runs a loop ``L`` of the nest (its root, or a loop under unrolled ones) as blocks
of the values of one loop ``P`` in the perfect chain under ``L`` (``L`` itself, or a loop every
statement of ``L`` is inside): block ``k`` runs every statement instance of ``L`` whose ``P``
value lies in its rows, in the original order. This is legal when

* no dependence joins two instances with different values of ``P`` within one iteration of
  the unrolled loops: every edge between statements of ``L`` not carried by an unrolled loop
  has ``=`` at ``P`` (a dependence is assumed wherever the analysis could not disprove one);
* each scalar the step writes is private to an iteration of ``P`` and not read after the
  step, or a reduction (``+ - * max min``) over every loop from ``L`` down to ``P``, whose
  per-block partial results are combined in block order;
* owner computes: every write to an array has subscript exactly ``P`` in one dimension (the
  same for all writes to that array) and no ``P`` elsewhere, the array is a Dask argument, and
  every access to it, proven in range (``binding.DIRECT``), reads ``P + offset`` in that
  dimension with offsets bounded by the loops' ranges: the halo. An array the step only
  reads is partitioned the same way where it can be, else passed whole to every block.

``P``'s bounds may depend on invariants and the unrolled loops' variables only (they are
numbers per step). Where no loop of the chain partitions, a loop whose body holds loops only
(a time loop) is unrolled: each iteration runs its child loops in order, each partitioned
on its own (``Unrolled``); the steps then follow each other through the arrays they write.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from asp_core.errors import SourceLocation, UnsupportedConstruct

from .. import dast as d
from ..analysis.binding import DIRECT
from ..names import nest_names
from ..pretty import expression
from ..scalars import PRIVATE, REDUCTION, classify_scalars, exposed
from .refusal import PartitionRefused

#: The most steps (iterations of unrolled loops times their child loops) one nest may become:
#: each is a layer of Dask tasks.
MAX_STEPS = 4096
#: Reduction operator families and the functions a ``max``/``min`` reduction may call.
_MINMAX = ("max", "min", "numpy.maximum", "numpy.minimum", "numpy.fmax", "numpy.fmin")


@dataclass(frozen=True)
class ArrayPart:
    """How one array reaches the blocks of a step."""

    name: str
    dim: int | None              # the partitioned dimension; None: whole, to every block
    halo: tuple[int, int] = (0, 0)   # rows below and above a block's own (partitioned)
    written: bool = False
    sources: tuple[str, ...] = ()  # the accesses that set the halo (for explain)
    why_whole: str = ""          # why an array read is passed whole


@dataclass(frozen=True)
class Reduction:
    """A scalar reduced over the blocks: ``op`` is the family (``+ * max min``), ``func`` the
    function a max/min statement calls (its canonical name), ``first`` whether the scalar is
    its first argument (the order the combination keeps)."""

    name: str
    op: str
    func: str | None = None
    first: bool = True


@dataclass(frozen=True)
class Step:
    """Loop ``root`` (a lid of the nest) run in blocks of loop ``loop``'s values."""

    root: int
    loop: int
    var: str
    arrays: tuple[ArrayPart, ...]
    reductions: tuple[Reduction, ...]
    unrolled: tuple[str, ...]    # the variables of the unrolled loops around it
    live: frozenset[str]         # scalars read after the step (outside it, or after the nest)
    line: int

    def part(self, name: str) -> ArrayPart:
        return next(p for p in self.arrays if p.name == name)

    @property
    def partitioned(self) -> tuple[ArrayPart, ...]:
        return tuple(p for p in self.arrays if p.dim is not None)


@dataclass(frozen=True)
class Unrolled:
    """Loop ``loop`` run as a Python loop at graph-building time, its children in order."""

    loop: int
    var: str
    body: tuple["Step | Unrolled", ...]
    line: int


@dataclass(frozen=True)
class NestPartition:
    index: int
    line: int
    root: Step | Unrolled
    steps: int                   # how many steps the nest becomes
    notes: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class CallFacts:
    """What ``partition_nest`` needs to know of the call beyond the plan."""

    dask_arrays: frozenset[str]   # the nest's arrays given as Dask arrays
    exact_reductions: bool = False
    scalar_kinds: dict = field(default_factory=dict)  # scalar -> dtype kind ("f", "i", ...)


class _NoPartition(Exception):
    """One candidate loop does not partition (the message says why)."""

    def __init__(self, message: str, loc: SourceLocation | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc


def partition_nest(analysis, plan, facts: CallFacts) -> NestPartition:
    """The partition of ``analysis`` for the binding of ``plan`` (raises ``PartitionRefused``)."""
    where = _location(analysis)
    if analysis.order_restriction:
        raise PartitionRefused(f"loop nest {analysis.index}: {analysis.order_restriction}", where)
    if plan.bound.key.aliases:
        raise PartitionRefused(f"loop nest {analysis.index}: two of its arrays are the same "
                               "array (or share memory); the blocks would write it apart", where)
    context = _Context(analysis, plan, facts)
    root_info = analysis.access.loops[0]
    try:
        root = context.region(root_info.lid, ())
    except _NoPartition as exc:
        raise PartitionRefused(f"loop nest {analysis.index} does not partition over Dask "
                               f"arrays: {exc.message}", exc.loc or where) from None
    steps = count_steps(root, context)
    if steps > MAX_STEPS:
        raise PartitionRefused(f"loop nest {analysis.index} would become {steps} steps (at "
                               f"most {MAX_STEPS}): its unrolled loops run too long", where)
    return NestPartition(analysis.index, analysis.line, root, steps)


def count_steps(node: Step | Unrolled, context: "_Context") -> int:
    if isinstance(node, Step):
        return 1
    trips = context.plan.bound.loops[node.loop].t_max + 1
    return max(trips, 0) * sum(count_steps(child, context) for child in node.body)


def _location(analysis) -> SourceLocation | None:
    loc = analysis.nest.loop.loc
    return loc


class _Context:
    """The analysis, plan and facts one partitioning looks at."""

    def __init__(self, analysis, plan, facts: CallFacts):
        self.analysis = analysis
        self.access = analysis.access
        self.plan = plan
        self.facts = facts
        self.values = dict(zip(analysis.binder.atoms, plan.bound.key.atoms))
        self.loops = {loop.lid: loop for loop in d.loops(analysis.nest.loop)}

    # -- regions: a step, or an unrolled loop around regions ------------------------------

    def region(self, lid: int, unrolled: tuple[int, ...]) -> Step | Unrolled:
        loop = self.loops[lid]
        reasons = []
        for candidate in self.chain(loop):
            try:
                return self.step(loop, candidate, unrolled)
            except _NoPartition as exc:
                reasons.append(exc)
        first = reasons[0]   # the outermost candidate's reason (the others' are alike)
        if loop.predicate or d.exits(loop) or not loop.body or \
                not all(isinstance(s, d.Loop) for s in loop.body):
            raise first
        if self.plan.bound.loops[lid].t_max < 0:  # never runs: nothing to unroll
            return Unrolled(lid, loop.var, (), _line(loop))
        try:
            body = tuple(self.region(child.lid, unrolled + (lid,)) for child in loop.body)
        except _NoPartition as inner:
            raise _NoPartition(f"{first.message}; nor as one step per iteration of "
                               f"{loop.var}: {inner.message}", first.loc) from None
        return Unrolled(lid, loop.var, body, _line(loop))

    def chain(self, loop: d.Loop) -> list[d.Loop]:
        """``loop`` and the loops perfectly nested in it (each the only statement of its
        parent, with no condition of its own)."""
        chain = [loop]
        while len(chain[-1].body) == 1 and isinstance(chain[-1].body[0], d.Loop) and \
                chain[-1].body[0].predicate is None:
            chain.append(chain[-1].body[0])
        return chain

    # -- one step ------------------------------------------------------------------------

    def step(self, root: d.Loop, loop: d.Loop, unrolled: tuple[int, ...]) -> Step:
        access, bound = self.access, self.plan.bound
        where = loop.loc
        inside = [st for st in access.statements if root.lid in st.loops]
        if any(loop.lid not in st.loops for st in inside):
            raise _NoPartition(f"loop {loop.var}: a statement is outside it", where)
        if loop.predicate:
            raise _NoPartition(f"loop {loop.var} runs under a condition", where)
        chain = self.chain(root)
        chain = chain[:chain.index(loop) + 1]
        unrolled_vars = {self.loops[lid].var for lid in unrolled}
        info = access.loop(loop.lid)
        for form in (info.start, info.stop):
            for var in form.variables:
                if var not in unrolled_vars:
                    raise _NoPartition(f"loop {loop.var}: its bounds depend on loop {var}", where)
        live = self.live_after(root, unrolled)
        info = self.step_scalars(root, live)
        reductions, private = self.scalars(inside, chain, loop, live, info)
        self.dependences(inside, loop, len(unrolled), {r.name for r in reductions} | private)
        arrays = self.arrays(inside, loop, bound)
        return Step(root.lid, loop.lid, loop.var, arrays, reductions,
                    tuple(self.loops[lid].var for lid in unrolled), live, _line(loop))

    def live_after(self, root: d.Loop, unrolled: tuple[int, ...]) -> frozenset[str]:
        """Scalars that may be read after the step before being written: after the nest, or
        by the rest of the unrolled loops' bodies (their later statements in this iteration,
        any of them in the next)."""
        names = set(self.analysis.names.scalars) | set(self.analysis.names.temps)
        live = set(self.analysis.live)
        child = root
        for lid in reversed(unrolled):
            body = self.loops[lid].body
            after = body[body.index(child) + 1:]
            live |= {s for s in names if exposed(s, after) or exposed(s, body)}
            child = self.loops[lid]
        return frozenset(live)

    def step_scalars(self, root: d.Loop, live: frozenset[str]):
        """The step's scalars classified within the step alone (the nest's own classes see
        reads in the other steps)."""
        nest = d.Nest(self.analysis.nest.index, root)
        try:
            return classify_scalars(nest, nest_names(nest), live)
        except UnsupportedConstruct as exc:
            raise _NoPartition(f"loop {root.var}: {exc.message}", exc.location) from None

    def scalars(self, inside, chain: list[d.Loop], loop: d.Loop, live: frozenset[str], info
                ) -> tuple[tuple[Reduction, ...], set[str]]:
        """The step's reductions, and its scalars private to an iteration of ``loop``."""
        written = sorted({st.scalar_write for st in inside if st.scalar_write})
        found, private = [], set()
        for name in written:
            classes = [info.of(name, l.lid) for l in chain]
            if all(c is not None and c.kind == REDUCTION for c in classes) and \
                    len({c.op for c in classes}) == 1:
                found.append(self.reduction(name, classes[0].op, inside, loop))
                continue
            mine = info.of(name, loop.lid)
            stmt = self._writer(name, inside)
            if mine is None or mine.kind != PRIVATE:
                raise _NoPartition(f"loop {loop.var}: scalar '{_user(name)}' carries a value "
                                   f"from one iteration to the next", stmt.loc)
            if name in live:
                raise _NoPartition(f"loop {loop.var}: scalar '{_user(name)}' is read after the "
                                   "loop, where it holds the last iteration's value", stmt.loc)
            private.add(name)
        return tuple(found), private

    def _writer(self, name: str, inside) -> d.Assign:
        for st in inside:
            if st.scalar_write == name:
                return self.analysis.statements[st.sid]
        raise AssertionError(name)

    def reduction(self, name: str, op: str, inside, loop: d.Loop) -> Reduction:
        forms = set()
        for st in inside:
            if st.scalar_write != name:
                continue
            value = self.analysis.statements[st.sid].value
            if isinstance(value, d.Call):
                forms.add((value.func, value.args[0] == d.Var(name)))
            elif op in ("max", "min"):
                forms.add((None, True))
        stmt = self._writer(name, inside)
        if op in ("max", "min"):
            if len(forms) != 1 or next(iter(forms))[0] not in _MINMAX:
                raise _NoPartition(f"loop {loop.var}: the {op}-reduction of '{name}' is written "
                                   "in more than one form; the blocks' results could not be "
                                   "combined as Python combines them", stmt.loc)
            func, first = next(iter(forms))
            return Reduction(name, op, func, first)
        kind = self.facts.scalar_kinds.get(name)
        if self.facts.exact_reductions and kind != "i" and kind != "u":
            raise _NoPartition(f"loop {loop.var}: exact_reductions keeps Python's order of the "
                               f"reduction '{name}', which blocks would reassociate", stmt.loc)
        return Reduction(name, op)

    def dependences(self, inside, loop: d.Loop, unrolled: int, scalars: set[str]) -> None:
        """Every dependence within one step instance keeps ``loop``'s value, but those
        through ``scalars`` (reduced over the blocks, or private to each iteration)."""
        mine = {st.sid for st in inside}
        analysis = self.analysis
        for edge in self.plan.graph.edges:
            if edge.source not in mine or edge.sink not in mine:
                continue
            if edge.level is not None and edge.level <= unrolled:
                continue   # between iterations of unrolled loops: the steps keep that order
            if edge.variable in scalars and edge.test == "scalar":
                continue   # combined over the blocks, or a copy per iteration
            position = edge.loops.index(loop.lid)
            if edge.vector[position] != "=":
                source = analysis.statements[edge.source]
                sink = analysis.statements[edge.sink]
                raise _NoPartition(
                    f"loop {loop.var} carries a dependence: {edge.kind} on "
                    f"'{_user(edge.variable)}' from S{edge.source} ({_text(source)}) to "
                    f"S{edge.sink} ({_text(sink)}), direction "
                    f"({', '.join(edge.vector)}) over "
                    f"({', '.join(self.loops[l].var for l in edge.loops)})", sink.loc)

    # -- arrays ----------------------------------------------------------------------------

    def arrays(self, inside, loop: d.Loop, bound) -> tuple[ArrayPart, ...]:
        by_array: dict[str, list] = {}
        for st in inside:
            alive = all(bound.loops[lid].t_max >= 0 for lid in st.loops)
            for position, acc in enumerate(st.accesses):
                by_array.setdefault(acc.array, []).append((st, position, acc, alive))
        parts = []
        for name in sorted(by_array):
            uses = by_array[name]
            if any(acc.write for _, _, acc, _ in uses):
                parts.append(self.written(name, uses, loop))
            else:
                parts.append(self.read(name, uses, loop))
        return tuple(parts)

    def written(self, name: str, uses, loop: d.Loop) -> ArrayPart:
        first = next(acc for _, _, acc, _ in uses if acc.write)
        if name not in self.facts.dask_arrays:
            raise _NoPartition(f"loop {loop.var}: it writes '{name}', which is not a Dask array "
                               "argument of the call (its new value could not be returned)",
                               first.loc)
        dims = set()
        for st, _, acc, alive in uses:
            if not acc.write:
                continue
            dim, low, high = self.follows(st, acc, loop, alive)
            if dim is None or (low, high) != (0, 0):
                raise _NoPartition(
                    f"loop {loop.var}: '{_access(acc)}' does not write the row of the "
                    f"iteration (owner computes: a write's subscript must be exactly "
                    f"{loop.var} in one dimension)", acc.loc)
            dims.add(dim)
        if len(dims) != 1:
            raise _NoPartition(f"loop {loop.var}: '{name}' is written along different "
                               "dimensions", first.loc)
        return self.part(name, uses, loop, dims.pop(), True)

    def read(self, name: str, uses, loop: d.Loop) -> ArrayPart:
        if name not in self.facts.dask_arrays:
            return ArrayPart(name, None, why_whole="not a Dask array argument")
        dims = {self.follows(st, acc, loop, alive)[0] for st, _, acc, alive in uses}
        if len(dims) != 1 or None in dims:
            mentions = any(form is None or loop.var in form.variables
                           for _, _, acc, _ in uses for form in acc.subscripts)
            why = (f"its subscripts do not all follow {loop.var} in one dimension" if mentions
                   else f"its subscripts do not hold {loop.var}")
            return ArrayPart(name, None, why_whole=why)
        try:
            return self.part(name, uses, loop, dims.pop(), False)
        except _NoPartition as exc:
            return ArrayPart(name, None, why_whole=exc.message)

    def part(self, name: str, uses, loop: d.Loop, dim: int, written: bool) -> ArrayPart:
        low = high = 0
        low_src: list[str] = []
        high_src: list[str] = []
        for st, position, acc, alive in uses:
            found, lo, hi = self.follows(st, acc, loop, alive)
            if found != dim:
                raise _NoPartition(f"loop {loop.var}: '{_access(acc)}' does not follow "
                                   f"{loop.var} in dimension {dim}", acc.loc)
            if not alive:
                continue   # never runs: no rows needed
            mode = self.plan.bound.accesses[st.sid][position].modes[dim]
            if mode != DIRECT:
                raise _NoPartition(f"loop {loop.var}: '{_access(acc)}' may leave the array in "
                                   f"dimension {dim} (Python would wrap or raise)", acc.loc)
            if -lo > low:
                low, low_src = -lo, []
            if -lo == low and lo < 0:
                low_src.append(_access(acc))
            if hi > high:
                high, high_src = hi, []
            if hi == high and hi > 0:
                high_src.append(_access(acc))
        sources = tuple(dict.fromkeys(low_src + high_src))
        return ArrayPart(name, dim, (low, high), written, sources)

    def follows(self, st, acc, loop: d.Loop, alive: bool = True) -> tuple[int | None, int, int]:
        """The dimension where ``acc``'s subscript is ``loop.var`` plus an offset, with the
        offset's range (not computed for a statement that never runs: (dim, 0, 0) where the
        offset is a constant 0, else (dim, 0, 1)); (None, 0, 0) where there is no single such
        dimension, or a subscript is not affine (it may hold the variable)."""
        if any(form is None for form in acc.subscripts):
            return None, 0, 0
        found = None
        for dim, form in enumerate(acc.subscripts):
            coefficient = form.coeff(loop.var).evaluate(self.values)
            if coefficient == 0:
                continue
            if coefficient != 1 or found is not None:
                return None, 0, 0
            found = dim
        if found is None:
            return None, 0, 0
        form = acc.subscripts[found]
        if not alive:
            exact = len(form.terms) == 1 and form.const.evaluate(self.values) == 0
            return found, 0, 0 if exact else 1
        low, high = self.offset_range(st, form, loop.var)
        return found, low, high

    def offset_range(self, st, form, var: str) -> tuple[int, int]:
        """The range of ``form - var`` over the iterations (from the loops' value ranges)."""
        low = high = form.const.evaluate(self.values)
        by_var = {self.access.loop(lid).var: lid for lid in st.loops}
        for term in form.terms:
            if term.var == var:
                continue
            c = term.coeff.evaluate(self.values)
            info = self.plan.bound.loops[by_var[term.var]]
            a, b = c * info.v_low, c * info.v_high
            low += min(a, b)
            high += max(a, b)
        return low, high


def _line(node: d.Node) -> int:
    return node.loc.line if node.loc else 0


def _text(stmt: d.Assign) -> str:
    from ..pretty import statement

    return statement(stmt)


def _access(acc) -> str:
    return f"{acc.array}[{', '.join(expression(i) for i in acc.index)}]"


def _user(name: str) -> str:
    from ..lastvalues import variable_of

    return variable_of(name)
