"""Which device kernels a plan becomes: the pure decision behind ``codegen.device``.

``DeviceLayout(analysis, plan, types, gpu).bands()`` says, per kernel in schedule order, which
schedule node it runs, which loops it maps onto grid axes (its *band*) and which sequential
top-level loop the host runs it in; or None where no node is a grid's, or the nodes a grid
cannot run share scalars with the others, and the whole nest runs on one work item. The code
generator prints kernels from it; the cost model (``cost.device``) counts launches, threads and
work per thread from it, so both see the same kernels.

* A parallel top-level loop with no last-iteration scalar, no predicate and bounds far from
  the ends of int64 becomes a grid kernel; the parallel loops perfectly nested in it whose
  bounds do not depend on the band (up to ``MAX_AXES``) join its band, once
  ``device_order.parallel_first`` has moved them outside the sequential loops between them
  where that is legal (gemm's i, k, j runs as i, j on the grid and k in each thread).
* One that reduces scalars becomes a reduction (lanes, then a combine), where every lane's
  partial result combines as the loop's own statements combine (``combination``) and no later
  node reads the scalars.
* A sequential top-level loop whose body is such parallel loops only is a host loop; its
  sibling loops run as one kernel where ``codegen.device_fusion`` proves it legal.
* Any other top-level nodes (a recurrence, statements of their own), consecutive ones together,
  run on one work item, in a kernel of their own between the grid kernels (a *segment*: its
  band is empty), where no scalar flows between kernels (``_confined``): a scalar one kernel
  assigns is read by no other (outside loops of its own binding it), and a scalar live after
  the nest is assigned by one kernel at most, which stores it.
* ``axes(band)``: the band's loops on grid axes, x for the loop whose neighbouring threads
  touch neighbouring elements in the most accesses (Chikin et al.'s inter-thread stride, from
  the affine subscripts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .. import dast as d
from ..schedule.distribution import distribute
from ..schedule.tree import SLoop, SStmt, statement_ids
from ..schedule.verify import violations
from .cexpr import c_identifier, ctype, wrapping_arith
from .device_fusion import fuse
from .device_order import parallel_first

#: The most loops a kernel maps onto grid axes.
MAX_AXES = 3


@dataclass(frozen=True)
class Axis:
    """A loop mapped onto a grid axis: the host passes its first value, step and trip count."""

    lid: int
    axis: int
    var: str


class DeviceLayout:
    """The kernels of one plan for one call's types (see the module)."""

    def __init__(self, analysis, plan, types, gpu: bool = True):
        self.analysis = analysis
        self.plan = plan
        self.types = types
        #: a GPU (many threads, each slow) takes every parallel loop of a band onto its grid
        #: (``device_order``); a CPU device (PoCL) keeps the CPU's order, whose innermost loop
        #: its compiler vectorizes in each work item: gemm at n = 256 ran 3 to 4 times slower
        #: on PoCL here with k inside each work item, conv2d 1.9, fbcorr 2.4
        self.gpu = gpu
        self.loops = {loop.lid: loop for loop in d.loops(analysis.nest.loop)}
        self.statements = {s.sid: s for s in analysis.statements}
        self.schedule = self._distributed(plan)

    def _distributed(self, plan):
        """The plan's schedule with its parallel loops split where a part is a loop nest
        (``schedule.distribution``), so that each part is a kernel whose band may take the
        nest's loops (syr2k's rows scale, then update: two grids over i and j), kept only if
        ``schedule.verify`` finds it legal."""
        split = distribute(plan.schedule, self.loops)
        return split if split is plan.schedule or not violations(split, plan.graph) \
            else plan.schedule

    def bands(self) -> list[tuple[SLoop | tuple, tuple[d.Loop, ...], SLoop | None]] | None:
        """Per kernel: its top-level node (or a node in the body of a host loop), its band of
        mapped loops (outermost first) and the host loop around it (or None); for a segment
        run on one work item, a tuple of top-level nodes and an empty band. None where no
        node is a grid's or the segments are not ``_confined`` (then one work item runs it
        all)."""
        out, pending, kernels = [], [], []   # kernels: the top-level nodes of each, in order
        root = self.schedule.root

        def flush():
            if pending:
                out.append((tuple(pending), (), None))
                kernels.append(tuple(pending))
                pending.clear()

        for position, node in enumerate(root):
            if self._host_loop(node):
                flush()
                body = tuple(self._parallel_first(inner, node) for inner in node.body)
                siblings = fuse(body, lambda inner: self._band(inner, ()),
                                self.analysis.access, self.plan.bound, self.scalar_uses,
                                (node.lid,))
                out.extend((inner, band, node) for inner, band in siblings)
                kernels.append((node,))
                continue
            reductions = node.reductions if isinstance(node, SLoop) else ()
            if self._mappable(node, reductions) and \
                    self._reducible(reductions, root[position + 1:]):
                flush()
                node = self._parallel_first(node)
                out.append((node, self._band(node, reductions, hull=not reductions), None))
                kernels.append((node,))
            else:
                pending.append(node)
        flush()
        if out and all(not band for _, band, _ in out):
            return None   # no grid: one work item runs the nest
        if any(not band for _, band, _ in out) and not self._confined(kernels):
            return None
        return out

    def _confined(self, kernels: list[tuple]) -> bool:
        """Whether no scalar flows between the kernels (each a tuple of top-level nodes): none
        that one assigns is read free by another (before the nest's value, or a kernel's own
        result: each kernel has its own registers), and each live one is assigned by one
        kernel at most (it stores the result)."""
        scalars = set(self.analysis.names.scalars) | set(self.analysis.names.temps) | \
            set(self.analysis.names.loop_vars)
        uses = [self.scalar_uses(nodes) for nodes in kernels]
        for k, (_, assigned) in enumerate(uses):
            for j, (free, _) in enumerate(uses):
                if j != k and assigned & free & scalars:
                    return False
        live = set(self.analysis.scalars.live_out)
        return all(sum(name in assigned for _, assigned in uses) <= 1 for name in live)

    def scalar_uses(self, nodes) -> tuple[set[str], set[str]]:
        """(free, assigned) of schedule ``nodes``: the names their statements and loop bounds
        read or write that no loop among them binds (predicates included), and the names they
        assign (loop variables included)."""
        free: set[str] = set()
        assigned: set[str] = set()

        def visit(node, bound: frozenset) -> None:
            if isinstance(node, SStmt):
                stmt = self.statements[node.sid]
                names = {n.name for n in stmt.walk() if isinstance(n, d.Var)}
                if stmt.predicate:
                    names.add(stmt.predicate)
                if isinstance(stmt.target, d.Var):
                    assigned.add(stmt.target.name)
                free.update(names - bound)
                return
            loop = self.loops[node.lid]
            free.update({n.name for b in (loop.start, loop.stop, loop.step) for n in b.walk()
                         if isinstance(n, d.Var)} - bound)
            assigned.add(loop.var)
            for child in node.body:
                visit(child, bound | {loop.var})

        for node in nodes:
            visit(node, frozenset())
        return free, assigned

    def _parallel_first(self, node, host: SLoop | None = None):
        """``node`` with its band's parallel loops outermost (``device_order``), so that the
        grid runs them all."""
        return parallel_first(node, self.schedule, self.plan, self.loops, host) \
            if self.gpu and isinstance(node, SLoop) else node

    def _band(self, node: SLoop, reductions, hull: bool = False) -> tuple[d.Loop, ...]:
        """``node``'s loop and the parallel loops perfectly nested in it that join its grid:
        those whose bounds read no loop of the band, and with ``hull`` (a grid kernel of its
        own, reducing nothing) those a triangle's hull runs (``triangle``)."""
        band, current = [self.loops[node.lid]], node
        while len(band) < MAX_AXES and len(current.body) == 1 and \
                self._mappable(current.body[0], reductions):
            inner = self.loops[current.body[0].lid]
            if self.depends_on(inner, band) and not (hull and self.triangle(inner, band)):
                break
            current = current.body[0]
            band.append(inner)
        return tuple(band)

    def triangle(self, loop: d.Loop, band) -> bool:
        """Whether ``loop``, whose range reads loops of ``band``, runs on the grid over its
        hull (``device.launch_grid``: its ranges' union over the corners of the loops it
        follows), each work item outside its own range idle (the kernel's guard): a step of
        1, and it follows only band loops whose own ranges follow none (syr2k's j in
        range(i + 1); a GPU ran its rows on n threads, each a row's triangle, 9 times OpenMP's
        time on an H100 at n = 1024)."""
        bound = self.plan.bound.loops[loop.lid]
        if bound.step != 1 or bound.wide or _reads(loop.step, band):
            return False
        followed = {lid for lid, _ in bound.start.coeffs + bound.extent.coeffs}
        lids = {outer.lid for outer in band}
        return followed <= lids and not any(
            self.depends_on(self.loops[lid], band) for lid in followed)

    def _host_loop(self, node) -> bool:
        """A sequential top-level loop the host can drive: its body is parallel loops only
        (no statement of its own, no reduction, no last-iteration scalar), each a grid
        kernel launched once per iteration with the loop's variable as an argument."""
        if not isinstance(node, SLoop) or node.parallel or node.reductions or \
                self.loops[node.lid].predicate or self.plan.bound.loops[node.lid].wide:
            return False
        return bool(node.body) and all(self._mappable(inner) for inner in node.body)

    def _mappable(self, node, reductions=()) -> bool:
        """A parallel loop a grid may run: no last-iteration scalar, no reduction but those
        of the band it heads (``reductions``), no predicate, not near the ends of int64."""
        if not isinstance(node, SLoop) or not node.parallel or node.lastprivate or \
                not set(node.reductions) <= set(reductions):
            return False
        loop = self.loops[node.lid]
        bound = self.plan.bound.loops[node.lid]
        return not loop.predicate and not bound.wide

    def _reducible(self, reductions, later) -> bool:
        """Whether the lanes' partial results of ``reductions`` can be combined on the device
        as Python's operator would (``combination``), and no later top-level node reads the
        scalars (their value lives on the device until the call ends)."""
        if not reductions:
            return True
        names = {name for name, _ in reductions}
        if any(name not in self.analysis.required for name in names):
            return False
        for node in later:
            for sid in statement_ids(node):
                stmt = self.statements[sid]
                if any(isinstance(n, d.Var) and n.name in names for n in stmt.walk()):
                    return False
        return all(self.combination(name, op) is not None for name, op in reductions)

    def combination(self, name: str, op: str) -> str | None:
        """See ``combination`` (the module's function)."""
        return combination(self.analysis, self.types, name, op)

    def identity(self, name: str, op: str) -> str:
        """See ``identity`` (the module's function)."""
        return identity(self.types, name, op)

    @staticmethod
    def depends_on(loop: d.Loop, band) -> bool:
        """Whether a bound of ``loop`` reads the variable of a loop of ``band``."""
        return any(_reads(bound, band) for bound in (loop.start, loop.stop, loop.step))

    def axes(self, band: tuple[d.Loop, ...], sids: Sequence[int]) -> tuple[Axis, ...]:
        """The band's loops on grid axes: x for the loop whose neighbouring threads touch
        neighbouring elements in the most accesses (Chikin et al.'s inter-thread stride, from
        the affine subscripts at the binding: ``thread_stride``; a stride of 0 or 1 coalesces),
        then the smaller total stride, then the innermost; the others outermost first. Only
        the accesses of the kernel's own statements ``sids`` count (a sibling kernel's say
        nothing of this one's strides)."""
        accesses = [acc for sid in sids for acc in self.plan.bound.accesses.get(sid, ())]

        def rank(k: int) -> tuple:
            strides = [thread_stride(acc, band[k].lid) for acc in accesses]
            return (-sum(stride <= 1 for stride in strides), sum(strides), -k)

        first = min(range(len(band)), key=rank)
        order = [first] + [k for k in range(len(band)) if k != first]
        return tuple(Axis(band[k].lid, axis, band[k].var) for axis, k in enumerate(order))


def _reads(expr: d.Expr, band) -> bool:
    """Whether ``expr`` reads the variable of a loop of ``band``."""
    names = {outer.var for outer in band}
    return any(isinstance(n, d.Var) and n.name in names for n in expr.walk())


#: The stride ``thread_stride`` gives a loop that walks a dimension before the last (a whole
#: row or more apart) or a subscript the binding could not read.
FAR = 1 << 20


def thread_stride(access, lid: int) -> int:
    """Elements apart that two threads, neighbouring along loop ``lid`` (one iteration apart),
    touch in ``access`` (a ``binding.BoundAccess``, its subscripts affine in the loops'
    iteration counts, steps included): 0 where its subscripts do not use the loop, the last
    subscript's coefficient where only the last uses it, ``FAR`` where an earlier one does, or
    a subscript is not affine. Shapes are not read, so that one module serves every size."""
    stride = 0
    for position, dim in enumerate(access.dims):
        if dim is None:
            return FAR
        coeff = dict(dim.coeffs).get(lid, 0)
        if coeff and position < len(access.dims) - 1:
            return FAR
        if coeff:
            stride = min(abs(coeff), FAR)
    return stride


def loop_ids(node) -> list[int]:
    """The source loop of each loop copy under a schedule node (or a tuple of them, itself
    included), in schedule order."""
    if isinstance(node, SStmt):
        return []
    if isinstance(node, tuple):
        return [lid for child in node for lid in loop_ids(child)]
    return [node.lid] + [lid for child in node.body for lid in loop_ids(child)]


def combination(analysis, types, name: str, op: str) -> str | None:
    """C text combining partial result ``asp_p`` into ``s`` (the scalar's C name) as the
    loop's own statements combine a value into it, or None where that is not one known
    operator (say, Python's max in one statement and NumPy's in another). The device's lanes
    and the OpenMP variant's chunks (``codegen.openmp``) combine their partial results with it,
    in order. A max or min keeps the statements' order of arguments (``m = max(m, e)``: the
    first of equal values, ``m = max(e, m)``: the last), so that the combination selects the
    value the statements would select."""
    ident = c_identifier(name)
    ty = types.variables[name]
    forms = set()   # (function, the scalar's position among its arguments)
    for stmt in analysis.statements:
        if isinstance(stmt.target, d.Var) and stmt.target.name == name and \
                isinstance(stmt.value, d.Call):
            first = stmt.value.args[0] == d.Var(name)
            forms.add((stmt.value.func, 0 if first else 1))
    if op in ("+", "*"):
        if forms:
            return None
        if ty.kind == "f":
            return f"{ident} = {ident} {op} asp_p;"
        if ty.weak:
            helper = "asp_add_py" if op == "+" else "asp_mul_py"
            return f"{ident} = {helper}(asp_err, {ident}, asp_p);"
        return f"{ident} = {wrapping_arith(ident, op, 'asp_p', ty)};"
    if ty.kind != "f":   # integers: equal values are the same value
        forms = {(func, 0) for func, _ in forms}
    if len(forms) != 1:
        return None
    ((func, position),) = forms
    args = (ident, "asp_p") if position == 0 else ("asp_p", ident)
    sign = ">" if op == "max" else "<"
    if func in ("max", "min") or ty.kind != "f":  # Python's: the first unless the other wins
        return f"{ident} = ({args[1]} {sign} {args[0]}) ? {args[1]} : {args[0]};"
    if func in ("numpy.maximum", "numpy.minimum"):   # NaN propagates
        return f"{ident} = asp_np_{'maximum' if op == 'max' else 'minimum'}_" \
               f"{'f64' if ctype(ty) == 'double' else 'f32'}({', '.join(args)});"
    if func in ("numpy.fmax", "numpy.fmin"):         # NaN ignored
        return f"{ident} = {'fmax' if op == 'max' else 'fmin'}({', '.join(args)});"
    return None


def identity(types, name: str, op: str) -> str:
    """The value a partial result starts from: ``op``'s identity in the scalar's type (for a
    float sum -0.0, the one zero that leaves every value, -0.0 included, as it is: a partial
    result of one element is that element, bit for bit)."""
    ty = types.variables[name]
    if op == "+":
        if ty.kind == "f":
            return "-0.0" if ctype(ty) == "double" else "-0.0f"
        return "0"
    if op == "*":
        return "1"
    if ty.kind == "f":
        return "(-INFINITY)" if op == "max" else "INFINITY"
    limits = {"int64_t": ("INT64_MIN", "INT64_MAX"), "int32_t": ("INT32_MIN", "INT32_MAX"),
              "int16_t": ("INT16_MIN", "INT16_MAX"), "int8_t": ("INT8_MIN", "INT8_MAX"),
              "uint64_t": ("0", "UINT64_MAX"), "uint32_t": ("0", "UINT32_MAX"),
              "uint16_t": ("0", "UINT16_MAX"), "uint8_t": ("0", "UINT8_MAX"),
              "bool": ("0", "1")}[ctype(ty)]
    return limits[0] if op == "max" else limits[1]
