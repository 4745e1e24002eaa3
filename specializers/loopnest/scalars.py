"""Scalar classification: for each scalar a nest writes and each loop around its uses, is it

* **private** to an iteration of the loop: every iteration writes it before reading it, so each
  iteration may have its own copy (``lastprivate`` when its value is needed after the loop:
  then every iteration must write it, so the last iteration's value is Python's);
* a **reduction** over the loop: inside the loop it is only updated as ``s = s + e``,
  ``s += e``, ``s -= e``, ``s = s * e``, ``s = max(s, e)`` or ``s = min(s, e)`` (also under an
  ``if``), with one operator family and no other read;
* **carried** from one iteration to the next: anything else.

Also which scalars are *live out*: read by the kernel after the nest (Python leaves them bound).
Runs once per nest (static). Pure functions over the if-converted DAST.
"""

from __future__ import annotations

from dataclasses import dataclass

from asp_core.dast import Node

from . import dast as d
from .ifconvert import PREDICATE_PREFIX
from .names import NestNames

PRIVATE, REDUCTION, CARRIED = "private", "reduction", "carried"
_REDUCTION_FAMILY = {"+": "+", "-": "+", "*": "*"}
_MINMAX = {"max": "max", "min": "min", "numpy.maximum": "max", "numpy.minimum": "min",
           "numpy.fmax": "max", "numpy.fmin": "min"}


@dataclass(frozen=True)
class LoopScalar(Node):
    """How scalar ``name`` behaves across the iterations of loop ``lid``."""

    lid: int
    name: str
    kind: str               # private | reduction | carried
    op: str | None = None   # reduction family: + * max min
    lastprivate: bool = False


@dataclass(frozen=True)
class ScalarInfo(Node):
    classes: tuple[LoopScalar, ...]
    live_out: tuple[str, ...]

    def of(self, name: str, lid: int) -> LoopScalar | None:
        for c in self.classes:
            if c.name == name and c.lid == lid:
                return c
        return None

    def overall(self, name: str) -> str:
        """One word for a scalar: carried if any loop carries it, else reduction, else private."""
        kinds = {c.kind for c in self.classes if c.name == name}
        for kind in (CARRIED, REDUCTION, PRIVATE):
            if kind in kinds:
                return kind
        return PRIVATE


def reduction_family(stmt: d.Assign, name: str) -> str | None:
    """The reduction operator family if ``stmt`` updates ``name`` as a reduction, else None."""
    if not (isinstance(stmt.target, d.Var) and stmt.target.name == name):
        return None
    if stmt.predicate == name:
        return None
    value, me = stmt.value, d.Var(name)
    if isinstance(value, d.BinOp) and value.op in _REDUCTION_FAMILY:
        if value.left == me and not _reads(value.right, name):
            return _REDUCTION_FAMILY[value.op]
        if value.op in ("+", "*") and value.right == me and not _reads(value.left, name):
            return value.op
    if isinstance(value, d.Call) and value.func in _MINMAX and len(value.args) == 2:
        a, b = value.args
        if (a == me and not _reads(b, name)) or (b == me and not _reads(a, name)):
            return _MINMAX[value.func]
    return None


def classify_scalars(nest: d.Nest, names: NestNames, live_out: frozenset[str]) -> ScalarInfo:
    scalars = set(names.scalars) | set(names.temps)
    statements = d.statements(nest.loop)
    enclosing = _enclosing_loops(nest.loop)
    readers = {s: [st for st in statements if _reads_stmt(st, s)] for s in scalars}
    classes = []
    for loop in d.loops(nest.loop):
        inside = [st for st in statements if loop.lid in enclosing[st.sid]]
        used = sorted({s for st in inside for s in scalars
                       if _reads_stmt(st, s) or _writes(st, s)})
        for s in used:
            classes.append(_classify(loop, s, inside, readers[s], enclosing, s in live_out))
    return ScalarInfo(tuple(classes), tuple(sorted(s for s in names.scalars if s in live_out)))


def _classify(loop: d.Loop, s: str, inside: list[d.Assign], readers: list[d.Assign],
              enclosing: dict[int, set[int]], live_out: bool) -> LoopScalar:
    if not exposed(s, loop.body):
        needed_after = live_out or any(loop.lid not in enclosing[st.sid] for st in readers)
        if not needed_after:
            return LoopScalar(loop.lid, s, PRIVATE)
        if _must_define(s, loop.body):
            return LoopScalar(loop.lid, s, PRIVATE, lastprivate=True)
        return LoopScalar(loop.lid, s, CARRIED)
    families = set()
    for st in inside:
        if _reads_stmt(st, s) or _writes(st, s):
            family = reduction_family(st, s)
            if family is None:
                return LoopScalar(loop.lid, s, CARRIED)
            families.add(family)
    if len(families) == 1:
        return LoopScalar(loop.lid, s, REDUCTION, op=families.pop())
    return LoopScalar(loop.lid, s, CARRIED)


def exposed(s: str, body: tuple[d.Stmt, ...], guards: frozenset[str] = frozenset(),
             covering: tuple[frozenset[str], ...] = (), implied: dict[str, frozenset[str]] | None
             = None) -> bool:
    """Can one execution of ``body`` read ``s`` before writing it?

    A write covers a later read when it runs whenever the read runs: its guards (the predicate
    variables it runs under, fixed for one iteration) are a subset of the read's. A nested
    branch's predicate implies its enclosing one (``p3 = p1 and cond``), so a statement under
    ``p3`` also runs under ``p1``. A write inside an inner loop covers nothing after that loop,
    which may run zero times.
    """
    if implied is None:
        implied = predicate_implications(body)
    covering_now = list(covering)
    for stmt in body:
        if isinstance(stmt, d.Loop):
            inner = guards | implied.get(stmt.predicate, {stmt.predicate}) if stmt.predicate \
                else guards
            if stmt.predicate == s or _bounds_read(stmt, s):
                if not any(c <= guards for c in covering_now):
                    return True
            if exposed(s, stmt.body, inner, tuple(covering_now), implied):
                return True
        else:
            mine = guards | implied.get(stmt.predicate, {stmt.predicate}) if stmt.predicate \
                else guards
            read_guards = mine | _short_circuit_guard(stmt, s, implied)
            if _reads_stmt(stmt, s) and not any(c <= read_guards for c in covering_now):
                return True
            if _writes(stmt, s):
                covering_now.append(mine)
    return False


def predicate_implications(body: tuple[d.Stmt, ...]) -> dict[str, frozenset[str]]:
    """Predicate temporary -> the predicates true whenever it is (itself included).

    If-conversion assigns a nested branch's predicate as ``p = P and cond`` (``P`` the enclosing
    branch's predicate) once per iteration, after ``P`` and in the same loop body, so within
    one iteration ``p`` implies ``P``. Only if-conversion's temporaries are followed: a user's
    boolean could be reassigned between the two statements.
    """
    parents: dict[str, str] = {}
    for node in body:
        for stmt in d.statements(node):
            if stmt.kind != "predicate" or not isinstance(stmt.target, d.Var):
                continue
            value = stmt.value
            if (isinstance(value, d.BoolOp) and value.op == "and"
                    and isinstance(value.values[0], d.Var)
                    and value.values[0].name.startswith(PREDICATE_PREFIX)):
                parents[stmt.target.name] = value.values[0].name
    implied: dict[str, frozenset[str]] = {}
    for name in parents:
        chain, current = {name}, name
        while current in parents and parents[current] not in chain:
            current = parents[current]
            chain.add(current)
        implied[name] = frozenset(chain)
    return implied


def _short_circuit_guard(stmt: d.Assign, s: str, implied: dict[str, frozenset[str]]
                         ) -> set[str]:
    """If-conversion writes a nested condition as ``p2 = p1 and cond``: ``cond`` is evaluated
    only where ``p1`` holds, so a read of ``s`` there runs under ``p1`` too."""
    value = stmt.value
    if (stmt.kind == "predicate" and isinstance(value, d.BoolOp) and value.op == "and"
            and isinstance(value.values[0], d.Var) and value.values[0].name != s
            and not _reads(value.values[0], s)):
        first = value.values[0].name
        return set(implied.get(first, {first}))
    return set()


def _must_define(s: str, body: tuple[d.Stmt, ...]) -> bool:
    """Does every execution of ``body`` write ``s`` (not only under a predicate, not only in an
    inner loop that might run zero times)?"""
    return any(isinstance(st, d.Assign) and _writes(st, s) and st.predicate is None for st in body)


def _reads_stmt(stmt: d.Assign, s: str) -> bool:
    return s in _names_read(stmt)


#: Names each statement reads, by ``id`` (the statement kept with them, so that the id is not
#: reused): the classification asks each statement about each scalar, and walking the
#: statement every time took mandelbrot's analysis 26 ms of its 40. Bounded; a dict's
#: operations are atomic, so threads at worst compute an entry twice.
_NAMES_READ: dict[int, tuple[d.Assign, frozenset[str]]] = {}
_NAMES_READ_MAX = 4096


def _names_read(stmt: d.Assign) -> frozenset[str]:
    found = _NAMES_READ.get(id(stmt))
    if found is not None and found[0] is stmt:
        return found[1]
    parts = [stmt.value, *(stmt.target.index if isinstance(stmt.target, d.ArrayRef) else ())]
    names = {n.name for part in parts for n in part.walk() if isinstance(n, d.Var)}
    if stmt.predicate is not None:
        names.add(stmt.predicate)
    if len(_NAMES_READ) >= _NAMES_READ_MAX:
        _NAMES_READ.clear()
    result = frozenset(names)
    _NAMES_READ[id(stmt)] = (stmt, result)
    return result


def _reads(expr: d.Expr, s: str) -> bool:
    return any(isinstance(n, d.Var) and n.name == s for n in expr.walk())


def _writes(stmt: d.Assign, s: str) -> bool:
    return isinstance(stmt.target, d.Var) and stmt.target.name == s


def _bounds_read(loop: d.Loop, s: str) -> bool:
    return any(_reads(b, s) for b in (loop.start, loop.stop, loop.step))


def _enclosing_loops(root: d.Loop) -> dict[int, set[int]]:
    """sid -> lids of the loops around that statement."""
    out: dict[int, set[int]] = {}

    def visit(stmt: d.Stmt, lids: frozenset[int]) -> None:
        if isinstance(stmt, d.Loop):
            for child in stmt.body:
                visit(child, lids | {stmt.lid})
        else:
            out[stmt.sid] = set(lids)

    visit(root, frozenset())
    return out
