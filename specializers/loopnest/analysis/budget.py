"""Work budgets of the dependence analysis: how much one test, and one nest, may spend.

Two steps of the dependence tests grow exponentially with a nest's depth: the enumeration of
direction vectors (up to ``3**depth`` candidates, each checked with the Banerjee inequalities)
and Fourier-Motzkin elimination (rows multiply with each variable eliminated). Each of their
steps charges a ``Budget``; once its limit is passed, ``spend`` raises ``BudgetExhausted`` and
the test that was running answers conservatively: the directions the cheap tests left open,
i.e. a dependence. A budget can therefore only add dependences, never remove one, and the
analysis of any nest ends in bounded time and memory.

The units are deterministic counts of work (one coefficient of a Fourier-Motzkin row built;
``PREFIX_UNITS`` per equation updated for one direction-vector prefix), not seconds: a nest
gets the same answer, and so the same schedule and the same generated code, on every machine
and under any load. Measured on this project's machines, a unit costs 0.15 to 0.2
microseconds, so a pair stops after about 0.1 s and a nest after about 0.3 s.

A ``Budget`` is the one mutable value the analysis passes down: a counter owned by one
``dependence_graph`` run (the nest's budget) or one ``test_pair`` call (the pair's, charged
to the nest's as well). Nothing outside that run sees it.
"""

from __future__ import annotations

#: Work one pair of references may spend before its test answers conservatively.
PAIR_UNITS = 600_000
#: Work all the pairs of one nest (for one binding) may spend together.
NEST_UNITS = 1_500_000
#: Units per equation touched by one direction-vector prefix (as long as a Fourier-Motzkin
#: row coefficient takes, about four).
PREFIX_UNITS = 4
#: Direction vectors one pair may report before they are merged per carrying level.
MAX_VECTORS = 256

#: What a test's name says when a budget stopped it (``explain()`` shows it per pair).
MARK = "budget exhausted"


class BudgetExhausted(Exception):
    """Raised by ``Budget.spend`` past the limit; the test catching it answers conservatively
    (an internal signal of the analysis, never seen by users)."""


class Budget:
    """A count of work units spent against a limit (and against a parent's, if any)."""

    __slots__ = ("limit", "spent", "parent")

    def __init__(self, limit: int, parent: "Budget | None" = None):
        self.limit = limit
        self.spent = 0
        self.parent = parent

    def spend(self, units: int) -> None:
        """Charge ``units``; raise ``BudgetExhausted`` once this budget or its parent is
        over its limit."""
        self.spent += units
        if self.parent is not None:
            self.parent.spend(units)
        if self.spent > self.limit:
            raise BudgetExhausted(f"{self.spent} work units spent, limit {self.limit}")

    @property
    def exhausted(self) -> bool:
        """Is this budget (or its parent) past its limit?"""
        return self.spent > self.limit or (self.parent is not None and self.parent.exhausted)

    def __repr__(self) -> str:
        return f"Budget({self.spent}/{self.limit})"
