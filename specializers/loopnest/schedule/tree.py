"""The schedule tree: the loop structure code generation walks.

A ``Schedule`` is a tree of ``SLoop`` (a copy of source loop ``lid``, sequential or parallel)
and ``SStmt`` (statement ``sid``), and, in the serial C variant's tiled schedules, ``STile``
(a loop's blocks). Loop distribution makes several copies of one source loop;
interchange nests them in another order. Each statement also gets a ``StatementSchedule``:
which of its loops must run sequentially, which may run in parallel, which are reductions.
"""

from __future__ import annotations

from dataclasses import dataclass

from asp_core.dast import Node


@dataclass(frozen=True)
class SStmt(Node):
    sid: int


@dataclass(frozen=True)
class SLoop(Node):
    """A copy of source loop ``lid``. ``parallel``: its iterations may run in any order or at
    once. ``reductions``: (scalar, operator) pairs combined across iterations. ``private``:
    scalars each iteration has its own copy of; ``lastprivate`` those whose value after the
    loop is the last iteration's."""

    lid: int
    parallel: bool
    body: tuple["SLoop | SStmt", ...]
    reductions: tuple[tuple[str, str], ...] = ()
    private: tuple[str, ...] = ()
    lastprivate: tuple[str, ...] = ()


@dataclass(frozen=True)
class STile(Node):
    """The tile loop of source loop ``lid`` (``schedule.tiling``): it walks the loop's range in
    blocks of ``size`` iterations, in order; the ``SLoop`` of the same ``lid`` inside it runs
    the iterations of one block. Tile loops of one band come first, outermost first, then
    their loops in the band's order."""

    lid: int
    size: int
    body: tuple["STile | SLoop", ...]


@dataclass(frozen=True)
class StatementSchedule(Node):
    """For one statement: its loop variables split by how they may run."""

    sid: int
    sequential: tuple[str, ...]
    parallel: tuple[str, ...]
    reductions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Schedule(Node):
    root: tuple[SLoop | SStmt | STile, ...]
    statements: tuple[StatementSchedule, ...]
    #: arrays compiled code reads through a transposed copy (``schedule.packing``)
    packs: tuple[str, ...] = ()
    #: loops ``schedule.packing`` moved innermost in their bands (to vectorize)
    moved: tuple[str, ...] = ()

    def of(self, sid: int) -> StatementSchedule:
        return self.statements[sid]

    def parallel_loops(self) -> tuple[str, ...]:
        """Loop variables that run in parallel for every statement they enclose."""
        candidates: dict[str, bool] = {}
        for st in self.statements:
            for var in st.sequential:
                candidates[var] = False
            for var in st.parallel + st.reductions:
                candidates.setdefault(var, True)
        return tuple(v for v, ok in candidates.items() if ok)


def statement_ids(node) -> list[int]:
    """The statements under a schedule node (or a tuple of nodes), in schedule order."""
    if isinstance(node, SStmt):
        return [node.sid]
    children = node if isinstance(node, tuple) else node.body
    return [sid for child in children for sid in statement_ids(child)]


def perfect_chain(node: SLoop) -> list[SLoop]:
    """``node`` and the loops perfectly nested in it (each the only child of the last)."""
    chain = [node]
    while len(chain[-1].body) == 1 and isinstance(chain[-1].body[0], SLoop):
        chain.append(chain[-1].body[0])
    return chain
