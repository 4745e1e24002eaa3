"""Python's state after an error, whatever order a variant ran the nest in.

When plain Python raises in the middle of a nest, the arrays hold exactly the writes of the
statement instances before the failing one, in source order. A variant that runs the nest in
that same order (serial C of a schedule in source order, the plain-Python executor in source
order) stops at the same instance and leaves the same state. Any other variant (a schedule that
distributes or interchanges loops, OpenMP threads, the order checkers) may have made writes
Python had not made yet, or not made writes Python had. For those, when the variant can fail at
all, ``exact_on_error`` keeps a copy of every array the nest writes, taken before it runs; on
an error it puts the copies back and runs the call again in source order: through serial C of
the source-order schedule for compiled variants (which stops where Python stops), else by
returning ``RUN_ORIGINAL``, so that the original code of the nest runs and raises exactly as
Python does, leaving exactly Python's arrays and scalars. The copy is only taken for variants that can fail and do not run in source order
(for OpenMP only when asked, ``exact_errors``: its cost, a pass over the written arrays per
call, was 16% of black_scholes' OpenMP time), and for every variant that can fail of a nest
inside a ``try`` or ``with`` statement, after which the kernel may go on and read the scalars
the nest left (a variant that raises returns none).

Without the copy, an OpenMP variant guarantees this when it raises: the exception is one the
nest's code raises at some failing instance (for a vectorized loop with the math module's
checks, exactly Python's: the first failing iteration's first error); every element of an array
the nest writes holds its value before the call or the value some iteration that ran wrote
(the parallel iterations are independent, so that is the value Python writes there); the
iterations that started after the error was recorded skip their writes, so writes Python made
before its error may be missing and writes of iterations after it may be present.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

import numpy as np

from . import dast as d
from .rewrite import RUN_ORIGINAL
from .schedule.tree import Schedule, SLoop, SStmt

log = logging.getLogger("asp.loopnest")

#: What compiled code raises for a failure it recorded (``variants.python_error``).
COMPILED_ERRORS = (ArithmeticError, LookupError, ValueError, TypeError)


def in_source_order(schedule: Schedule, sequential: Schedule) -> bool:
    """Whether a serial run of ``schedule`` visits the statement instances in the order of
    ``sequential`` (the source's): the same tree of loops and statements, whatever loops it
    marks parallel."""
    def shape(node: SLoop | SStmt):
        if isinstance(node, SStmt):
            return node.sid
        return (node.lid, tuple(shape(child) for child in node.body))

    return tuple(map(shape, schedule.root)) == tuple(map(shape, sequential.root))


def written_positions(analysis) -> tuple[int, ...]:
    """Positions, among the nest's inputs, of the arrays it writes (one per array object is
    enough, but names are cheap to keep apart)."""
    written = {acc.array for st in analysis.access.statements for acc in st.accesses if acc.write}
    return tuple(i for i, name in enumerate(analysis.names.inputs) if name in written)


def read_positions(analysis) -> tuple[int, ...]:
    """Positions, among the nest's inputs, of the arrays the nest reads an element of (in a
    value, a subscript or a bound: anywhere but as the element an assignment writes)."""
    read: set[str] = set()

    def reads(expr: d.Expr) -> None:
        for node in expr.walk():
            if isinstance(node, d.ArrayRef):
                read.add(node.array)
            elif isinstance(node, d.Var):
                read.add(node.name)

    def visit(stmt: d.Stmt) -> None:
        if isinstance(stmt, d.Loop):
            for bound in (stmt.start, stmt.stop, stmt.step):
                reads(bound)
            for child in stmt.body:
                visit(child)
        elif isinstance(stmt, d.Assign):
            reads(stmt.value)
            if isinstance(stmt.target, d.ArrayRef):
                for index in stmt.target.index:
                    reads(index)
        else:   # (an if-converted nest has none: assume every array is read)
            read.update(analysis.names.inputs)

    visit(analysis.nest.loop)
    return tuple(i for i, name in enumerate(analysis.names.inputs) if name in read)


def saved_on_overflow(analysis, plan, stops_in_order: bool) -> tuple[int, ...]:
    """The arrays to copy before a call that may fail with ``variants.BeyondInt64`` (then
    the original code of the nest runs from the state before the call): every array the nest
    writes; but where the failing run stops in source order, as Python would at that instance
    (serial C of the source order, or a variant that reruns so on any failure), and no two
    arguments share memory, only those it also reads. An array the nest only writes needs no
    copy there: the failed run wrote the values Python writes at the instances before its
    failure, and the original code, run again, writes each of those instances again (and
    raises, if it does, at a later one), so it leaves exactly what it leaves from the
    untouched array."""
    written = written_positions(analysis)
    if not stops_in_order or plan.bound.key.aliases:
        return written
    read = set(read_positions(analysis))
    return tuple(i for i in written if i in read)


def exact_on_error(run: Callable[..., Any], written: Sequence[int],
                   errors: tuple[type[BaseException], ...], title: str,
                   redo: Callable[..., Any] | None = None,
                   notice: Callable[[BaseException], None] | None = None) -> Callable[..., Any]:
    """``run``, made to leave Python's state on an error: the arrays at ``written`` are copied
    before each call, and an exception in ``errors`` puts them back (and is told to ``notice``)
    and runs the call again through ``redo``, a variant that runs in source order, or else
    returns ``RUN_ORIGINAL`` (the original code then runs: it raises where Python raises, or,
    for a failure that is the variant's and not the user's code's, such as
    ``variants.BeyondInt64``, goes on as Python does)."""
    def exact(*inputs: Any) -> Any:
        saved = _copies(inputs, written) if written else ()   # (none: 0.5 us a call less)
        try:
            return run(*inputs)
        except errors as exc:
            _restore(saved)
            log.debug("%s: %s: %s; running the call again %s", title, type(exc).__name__, exc,
                      "as the original code" if redo is None else "in source order")
            if notice is not None:
                notice(exc)
            return RUN_ORIGINAL if redo is None else redo(*inputs)

    return exact


def _copies(inputs: Sequence[Any], written: Sequence[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    """A copy of each array at ``written`` (once per array object)."""
    saved = []
    seen: set[int] = set()
    for position in written:
        array = inputs[position]
        if id(array) not in seen:
            seen.add(id(array))
            saved.append((array, array.copy(order="K")))
    return saved


def _restore(saved: Sequence[tuple[np.ndarray, np.ndarray]]) -> None:
    for array, copy in saved:
        np.copyto(array, copy)
