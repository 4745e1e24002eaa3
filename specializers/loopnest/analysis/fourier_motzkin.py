"""Fourier-Motzkin elimination over the integers: can a system of linear constraints hold?

The exact test behind the classical ones: where ZIV, SIV, GCD and Banerjee stay inconclusive
(coupled subscripts, triangular bounds), the whole dependence system (subscript equalities,
the loop bounds of both iterations, direction constraints) is checked. Everything stays in
integer arithmetic:

* equalities are eliminated first, exactly: a variable with coefficient ``c`` is removed from
  every other row ``r`` as ``|c|*r - sign(c)*r_x*eq`` (scaling an inequality by a positive
  number keeps it); an equality whose coefficients' GCD does not divide its constant has no
  integer solution (the GCD test);
* inequalities ``sum(a*x) + k >= 0`` are divided by the GCD ``g`` of their coefficients, with
  ``k`` rounded down (``floor(k/g)``): valid for every integer point, and it strengthens the
  test;
* variables are then eliminated by Fourier-Motzkin, combining each lower bound with each
  upper bound.

"Infeasible" therefore proves there is no integer solution, hence independence; "feasible"
only allows a dependence. If the system grows past ``LIMIT`` rows the answer is "feasible", so
the test is always sound. A ``budget`` (``analysis.budget``), where given, is charged for every
row built (its number of coefficients) before the rows are built; past its limit
``BudgetExhausted`` propagates, and the caller keeps the dependence.

A constraint is ``(coeffs, const)``: ``sum(coeffs[v] * v) + const >= 0`` (``== 0`` for an
equality), with integer coefficients.
"""

from __future__ import annotations

from math import gcd
from typing import Mapping

from .budget import Budget

LIMIT = 300

Constraint = tuple[Mapping[str, int], int]


def feasible(equalities: list[Constraint], inequalities: list[Constraint],
             budget: Budget | None = None) -> bool:
    """True unless the system provably has no integer solution."""
    return project(equalities, inequalities, keep=(), budget=budget) is not None


class Projection:
    """A system with every variable but ``names`` eliminated (integer-sound shadow)."""

    def __init__(self, names: tuple[str, ...], rows: dict[tuple[int, ...], int]):
        self.names = names
        self.rows = rows

    def feasible_with(self, equalities: list[Constraint], inequalities: list[Constraint],
                      budget: Budget | None = None) -> bool:
        """Is the projection, with these extra constraints on its variables, feasible?"""
        ineqs = [(dict(zip(self.names, co)), k) for co, k in self.rows.items()]
        return feasible(list(equalities), ineqs + list(inequalities), budget)


def project(equalities: list[Constraint], inequalities: list[Constraint],
            keep: tuple[str, ...] | set[str], budget: Budget | None = None
            ) -> Projection | None:
    """Eliminate every variable not in ``keep``; None if the system has no integer solution.

    Equalities are used to eliminate variables outside ``keep`` first; those left only on kept
    variables become pairs of inequalities. ``budget``: charged per row built (see above).
    """
    names = sorted({v for co, _ in equalities for v in co} |
                   {v for co, _ in inequalities for v in co} | set(keep))
    index = {v: i for i, v in enumerate(names)}
    n = len(names)
    kept = {index[v] for v in keep}

    def row(co: Mapping[str, int], k: int) -> list[int]:
        r = [0] * (n + 1)
        for v, c in co.items():
            r[index[v]] += c
        r[n] = k
        return r

    spend = budget.spend if budget is not None else _free
    eqs = [row(co, k) for co, k in equalities]
    ineqs = [row(co, k) for co, k in inequalities]
    spend((len(eqs) + len(ineqs)) * (n + 1))
    while eqs:
        eq = eqs.pop()
        g = 0
        for c in eq[:n]:
            g = gcd(g, c)
        if g == 0:
            if eq[n] != 0:
                return None
            continue
        if eq[n] % g:
            return None  # GCD test
        eq = [c // g for c in eq]
        candidates = [i for i in range(n) if eq[i] and i not in kept]
        if not candidates:  # only kept variables: keep it as two inequalities
            ineqs += [eq, [-c for c in eq]]
            continue
        # Pivot on the variable with the smallest nonzero coefficient (|1| if there is one).
        pivot = min(candidates, key=lambda i: abs(eq[i]))
        c = eq[pivot]
        sign = 1 if c > 0 else -1
        spend((len(eqs) + len(ineqs)) * (n + 1))
        eqs = [_eliminate(r, eq, pivot, c, sign) for r in eqs]
        ineqs = [_eliminate(r, eq, pivot, c, sign) for r in ineqs]
    system = _fourier_motzkin(ineqs, n, kept, spend)
    if system is None:
        return None
    order = sorted(kept)
    rows: dict[tuple[int, ...], int] = {}
    for co, k in system.items():
        reduced = tuple(co[i] for i in order)
        if reduced not in rows or k < rows[reduced]:
            rows[reduced] = k
    return Projection(tuple(names[i] for i in order), rows)


def _eliminate(r: list[int], eq: list[int], pivot: int, c: int, sign: int) -> list[int]:
    x = r[pivot]
    if x == 0:
        return r
    scale = abs(c)
    return [scale * a - sign * x * b for a, b in zip(r, eq)]


def _normalize(r: list[int], n: int) -> tuple[tuple[int, ...], int] | None | bool:
    """(coefficients, constant) divided by their GCD with the constant floored; True for a
    trivially true row, False for a trivially false one."""
    coeffs = r[:n]
    g = gcd(*coeffs)
    if g == 0:
        return r[n] >= 0
    if g == 1:
        return tuple(coeffs), r[n]
    return tuple(c // g for c in coeffs), r[n] // g  # floor division: integer tightening


def _free(units: int) -> None:
    """The charge of a run without a budget: nothing."""


def _fourier_motzkin(rows: list[list[int]], n: int, kept: set[int] = frozenset(),
                     spend=_free) -> dict[tuple[int, ...], int] | None:
    """Eliminate every variable outside ``kept``; None if infeasible. Past ``LIMIT`` rows the
    remaining variables are dropped with the rows that mention them (a relaxation: sound).
    ``spend(units)`` is charged for each elimination's rows before they are built."""
    system = _dedupe(rows, n)
    if system is None:
        return None
    alive = set(range(n)) - set(kept)
    while True:
        used = [i for i in alive if any(co[i] for co in system)]
        if not used:
            return system
        if len(system) > LIMIT:  # give up on precision: keep only rows free of the others
            return {co: k for co, k in system.items() if not any(co[i] for i in used)}
        spend(len(system) * len(used))
        def cost(i: int) -> int:
            pos = sum(1 for co in system if co[i] > 0)
            neg = sum(1 for co in system if co[i] < 0)
            return pos * neg - pos - neg
        var = min(used, key=cost)
        lower, upper, rest = [], [], []
        for co, k in system.items():
            c = co[var]
            if c > 0:
                lower.append((co, k, c))
            elif c < 0:
                upper.append((co, k, c))
            else:
                rest.append(list(co) + [k])
        spend((len(lower) * len(upper) + len(rest)) * (n + 1))
        for co_l, k_l, c_l in lower:
            for co_u, k_u, c_u in upper:
                # c_l*x + L >= 0 and c_u*x + U >= 0 (c_u < 0)  =>  (-c_u)*L + c_l*U >= 0
                combined = [(-c_u) * a + c_l * b for a, b in zip(co_l, co_u)]
                combined.append((-c_u) * k_l + c_l * k_u)
                rest.append(combined)
        alive.discard(var)
        system = _dedupe(rest, n)
        if system is None:
            return None


def _dedupe(rows: list[list[int]], n: int) -> dict[tuple[int, ...], int] | None:
    """Normalized rows, keeping the tightest constant per coefficient vector; None if some
    row is trivially false or two rows contradict each other (a*x >= -k1, -a*x >= -k2)."""
    system: dict[tuple[int, ...], int] = {}
    for r in rows:
        norm = _normalize(r, n)
        if norm is True:
            continue
        if norm is False:
            return None
        co, k = norm
        if co not in system or k < system[co]:
            system[co] = k
    for co, k in system.items():
        opposite = tuple(-c for c in co)
        if opposite in system and k + system[opposite] < 0:
            return None
    return system


def evaluate(coeffs: Mapping[str, int], const: int, point: Mapping[str, int]) -> int:
    """Value of a linear form at a point (for tests)."""
    return sum(c * point[v] for v, c in coeffs.items()) + const
