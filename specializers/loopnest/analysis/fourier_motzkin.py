"""Fourier-Motzkin elimination: is a system of linear constraints feasible over the rationals?

The exact test behind the classical ones: where ZIV, SIV, GCD and Banerjee stay inconclusive
(coupled subscripts, triangular bounds), the whole dependence system (subscript equalities,
loop bounds of both iterations, direction constraints) is checked for a rational solution.
No rational solution means no integer one, so "infeasible" proves independence; "feasible" is
only a possible dependence. Equalities are eliminated exactly first (Gaussian elimination with
an integer GCD check); inequalities then by Fourier-Motzkin. If the system grows past
``LIMIT`` constraints the answer is "feasible" (a dependence is assumed), so the test is always
sound and never slow.

A constraint is a pair ``(coeffs, const)`` meaning ``sum(coeffs[v] * v) + const >= 0`` (or
``== 0`` for equalities), with integer coefficients.
"""

from __future__ import annotations

from fractions import Fraction
from math import gcd
from typing import Mapping

LIMIT = 400

Constraint = tuple[dict[str, int], int]


def feasible(equalities: list[Constraint], inequalities: list[Constraint]) -> bool:
    """True unless the system provably has no rational (hence no integer) solution."""
    eqs = [_normalize_eq(c) for c in equalities]
    ineqs = [(dict(c), k) for c, k in inequalities]
    for coeffs, const in eqs:
        if not coeffs:
            if const != 0:
                return False
            continue
        g = 0
        for v in coeffs.values():
            g = gcd(g, v)
        if const % g:
            return False  # the GCD test on this equation: no integer solution
    # Gaussian elimination of the equalities, substituting into everything else.
    rows = [({v: Fraction(c) for v, c in co.items()}, Fraction(k)) for co, k in eqs if co]
    ineq_rows = [({v: Fraction(c) for v, c in co.items()}, Fraction(k)) for co, k in ineqs]
    while rows:
        coeffs, const = rows.pop()
        if not coeffs:
            if const != 0:
                return False
            continue
        var = min(coeffs, key=lambda v: (abs(coeffs[v]), v))
        pivot = coeffs[var]
        # var = -(sum(other) + const) / pivot
        sub = {v: -c / pivot for v, c in coeffs.items() if v != var}
        sub_const = -const / pivot
        rows = [_substitute(r, var, sub, sub_const) for r in rows]
        ineq_rows = [_substitute(r, var, sub, sub_const) for r in ineq_rows]
    return _fm_feasible(ineq_rows)


def _normalize_eq(c: Constraint) -> Constraint:
    coeffs, const = c
    return {v: k for v, k in coeffs.items() if k != 0}, const


def _substitute(row, var, sub, sub_const):
    coeffs, const = row
    c = coeffs.get(var)
    if c is None:
        return row
    out = {v: k for v, k in coeffs.items() if v != var}
    for v, k in sub.items():
        out[v] = out.get(v, 0) + c * k
    return {v: k for v, k in out.items() if k != 0}, const + c * sub_const


def _fm_feasible(rows: list) -> bool:
    rows = _dedupe(rows)
    while True:
        if rows is None:
            return False
        variables = {v for co, _ in rows for v in co}
        if not variables:
            return all(k >= 0 for _, k in rows)
        if len(rows) > LIMIT:
            return True  # give up: assume a dependence
        # Eliminate the variable that creates the fewest new constraints.
        def cost(v):
            pos = sum(1 for co, _ in rows if co.get(v, 0) > 0)
            neg = sum(1 for co, _ in rows if co.get(v, 0) < 0)
            return pos * neg - pos - neg
        var = min(sorted(variables), key=cost)
        lower, upper, rest = [], [], []
        for co, k in rows:
            c = co.get(var, 0)
            if c > 0:
                lower.append((co, k, c))
            elif c < 0:
                upper.append((co, k, c))
            else:
                rest.append((co, k))
        for co_l, k_l, c_l in lower:
            for co_u, k_u, c_u in upper:
                # c_l*var + L >= 0 and c_u*var + U >= 0 (c_u < 0)  =>  (-c_u)*L + c_l*U >= 0
                combined: dict[str, Fraction] = {}
                for v, k in co_l.items():
                    if v != var:
                        combined[v] = combined.get(v, 0) + (-c_u) * k
                for v, k in co_u.items():
                    if v != var:
                        combined[v] = combined.get(v, 0) + c_l * k
                combined = {v: k for v, k in combined.items() if k != 0}
                rest.append((combined, (-c_u) * k_l + c_l * k_u))
        rows = _dedupe(rest)


def _dedupe(rows):
    """Normalize rows (scale so the coefficients' largest magnitude is 1), drop duplicates and
    trivially true ones; None if some row is trivially false."""
    seen: dict[tuple, Fraction] = {}
    for co, k in rows:
        if not co:
            if k < 0:
                return None
            continue
        scale = max(abs(v) for v in co.values())
        key = tuple(sorted((v, c / scale) for v, c in co.items()))
        value = k / scale
        if key not in seen or value < seen[key]:
            seen[key] = value  # keep the tightest
    return [(dict(key), k) for key, k in seen.items()]


def evaluate(coeffs: Mapping[str, int], const: int, point: Mapping[str, int]) -> int:
    """Value of a linear form at a point (for tests)."""
    return sum(c * point[v] for v, c in coeffs.items()) + const
