"""Access analysis: per statement, the loops around it and the array elements and scalars it
reads and writes, with every subscript as an affine form where it has one; per loop, its
bounds as affine forms of the enclosing loop variables.

Runs once per nest (static); symbols stay unbound (see ``affine``).
"""

from __future__ import annotations

from dataclasses import dataclass

from asp_core.dast import Node
from asp_core.errors import UnsupportedConstruct

from . import dast as d
from .affine import Affine, AffineBuilder, Poly
from .names import NestNames


@dataclass(frozen=True)
class Access(Node):
    """One array element read or written by a statement."""

    array: str
    index: tuple[d.Expr, ...]
    subscripts: tuple[Affine | None, ...]  # per dimension; None where not affine
    write: bool

    @property
    def affine(self) -> bool:
        return all(s is not None for s in self.subscripts)


@dataclass(frozen=True)
class LoopInfo(Node):
    lid: int
    var: str
    depth: int                # 1 for the outermost loop
    parent: int               # lid of the enclosing loop, -1 for the outermost
    start: Affine
    stop: Affine
    step: Poly
    predicate: str | None

    @property
    def constant_trips(self) -> int | None:
        """The loop's trip count where its bounds are constants (``range(5)``), else None."""
        start, stop, step = self.start.const.constant, self.stop.const.constant, \
            self.step.constant
        if self.start.terms or self.stop.terms or None in (start, stop, step) or step == 0:
            return None
        return max(0, -(-(stop - start) // step))


@dataclass(frozen=True)
class StatementInfo(Node):
    sid: int
    loops: tuple[int, ...]         # lids of the enclosing loops, outermost first
    accesses: tuple[Access, ...]   # reads in evaluation order, then the write (if an element)
    scalar_reads: tuple[str, ...]  # scalars the nest writes that this statement reads
                                   # (including the predicates it and its loops run under)
    scalar_write: str | None       # the scalar assigned, if the target is a scalar
    predicate: str | None
    kind: str                      # "user" or "predicate"


@dataclass(frozen=True)
class AccessInfo(Node):
    loops: tuple[LoopInfo, ...]
    statements: tuple[StatementInfo, ...]

    def loop(self, lid: int) -> LoopInfo:
        return self.loops[lid]

    def statement(self, sid: int) -> StatementInfo:
        return self.statements[sid]


def access_info(nest: d.Nest, names: NestNames) -> AccessInfo:
    """The accesses of an if-converted nest (raises ``UnsupportedConstruct`` for bounds that
    are not affine in the enclosing loop variables)."""
    builder = AffineBuilder(names.loop_vars, names.invariants)
    nest_scalars = set(names.scalars) | set(names.temps)
    loops: list[LoopInfo] = []
    statements: list[StatementInfo] = []

    def visit(stmt: d.Stmt, enclosing: tuple[d.Loop, ...]) -> None:
        if isinstance(stmt, d.Loop):
            loops.append(LoopInfo(
                lid=stmt.lid, var=stmt.var, depth=len(enclosing) + 1,
                parent=enclosing[-1].lid if enclosing else -1,
                start=_bound(builder, stmt.start), stop=_bound(builder, stmt.stop),
                step=_step(builder, stmt.step), predicate=stmt.predicate))
            for child in stmt.body:
                visit(child, enclosing + (stmt,))
            return
        assert isinstance(stmt, d.Assign)
        reads = list(_array_reads(stmt.value, builder))
        if isinstance(stmt.target, d.ArrayRef):
            for index in stmt.target.index:
                reads.extend(_array_reads(index, builder))
            accesses = reads + [_access(stmt.target, builder, write=True)]
            scalar_write = None
        else:
            accesses = reads
            scalar_write = stmt.target.name
        scalar_reads = []
        for node in _exprs_of(stmt):
            for n in node.walk():
                if isinstance(n, d.Var) and n.name in nest_scalars and n.name not in scalar_reads:
                    scalar_reads.append(n.name)
        guards = [stmt.predicate] + [loop.predicate for loop in enclosing]
        for guard in guards:  # a loop's predicate is read each time the loop starts
            if guard and guard not in scalar_reads:
                scalar_reads.append(guard)
        statements.append(StatementInfo(
            sid=stmt.sid, loops=tuple(l.lid for l in enclosing), accesses=tuple(accesses),
            scalar_reads=tuple(scalar_reads), scalar_write=scalar_write,
            predicate=stmt.predicate, kind=stmt.kind))

    visit(nest.loop, ())
    loops.sort(key=lambda l: l.lid)
    statements.sort(key=lambda s: s.sid)
    return AccessInfo(tuple(loops), tuple(statements))


def _exprs_of(stmt: d.Assign):
    yield stmt.value
    if isinstance(stmt.target, d.ArrayRef):
        yield from stmt.target.index


def _array_reads(expr: d.Expr, builder: AffineBuilder):
    """Array reads of ``expr`` in evaluation order (inner subscripts before the element)."""
    if isinstance(expr, d.ArrayRef):
        for index in expr.index:
            yield from _array_reads(index, builder)
        yield _access(expr, builder, write=False)
        return
    for child in expr.children():
        yield from _array_reads(child, builder)


def _access(ref: d.ArrayRef, builder: AffineBuilder, write: bool) -> Access:
    return Access(ref.array, ref.index, tuple(builder.affine(i) for i in ref.index), write,
                  loc=ref.loc)


def _bound(builder: AffineBuilder, expr: d.Expr) -> Affine:
    form = builder.affine(expr)
    if form is None:
        raise UnsupportedConstruct(
            "unsupported loop bound: not an affine function of the enclosing loop variables "
            f"({_text(expr)})", expr.loc, "loop bound")
    return form


def _step(builder: AffineBuilder, expr: d.Expr) -> Poly:
    form = builder.affine(expr)
    if form is None or form.terms:
        raise UnsupportedConstruct(f"unsupported loop step ({_text(expr)}): it must be an "
                                   "integer that does not change inside the nest", expr.loc,
                                   "loop step")
    return form.const


def _text(expr: d.Expr) -> str:
    from .pretty import expression

    return expression(expr)
