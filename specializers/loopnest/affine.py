"""Affine forms: subscripts and loop bounds as ``sum(coeff * loop_var) + const``.

Coefficients and the constant are polynomials with integer coefficients over loop-invariant
*atoms*: names read but not written by the nest (``n``, ``self.n``), shapes (``A.shape[0]``)
and any other invariant sub-expression (``n // 2``), kept whole. So ``A[n*i + j + k]`` has the
form ``n*i + 1*j + k``: symbolic until the call binds ``n`` and ``k`` to numbers.

A subscript that is not of this form (``A[idx[i]]``, ``A[i*i]``, ``A[i % 2]``, a scalar the
nest computes) has no affine form (``None``) and is handled conservatively by every analysis.

Pure functions; results are frozen DAST nodes, so they dump into stable keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from asp_core.dast import Node

from . import dast as d

# Working form of a polynomial: {monomial (sorted tuple of atoms): integer coefficient}.
_Poly = dict[tuple[d.Expr, ...], int]


@dataclass(frozen=True)
class Monomial(Node):
    coeff: int
    atoms: tuple[d.Expr, ...]  # sorted by dump; () for a constant


@dataclass(frozen=True)
class Poly(Node):
    """An integer polynomial over invariant atoms (``()`` is zero)."""

    terms: tuple[Monomial, ...]

    @property
    def is_constant(self) -> bool:
        return all(not m.atoms for m in self.terms)

    @property
    def constant(self) -> int | None:
        """The value if it does not depend on any atom, else None."""
        if not self.is_constant:
            return None
        return sum(m.coeff for m in self.terms)

    def atoms(self) -> set[d.Expr]:
        return {a for m in self.terms for a in m.atoms}

    def evaluate(self, values: Mapping[d.Expr, int]) -> int:
        total = 0
        for m in self.terms:
            term = m.coeff
            for atom in m.atoms:
                term *= values[atom]
            total += term
        return total


@dataclass(frozen=True)
class Term(Node):
    var: str
    coeff: Poly


@dataclass(frozen=True)
class Affine(Node):
    """``sum(coeff * var for terms) + const``; terms sorted by variable, no zero coefficient."""

    terms: tuple[Term, ...]
    const: Poly

    def coeff(self, var: str) -> Poly:
        for t in self.terms:
            if t.var == var:
                return t.coeff
        return ZERO

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(t.var for t in self.terms)

    def atoms(self) -> set[d.Expr]:
        out = self.const.atoms()
        for t in self.terms:
            out |= t.coeff.atoms()
        return out


ZERO = Poly(())


def _freeze(poly: _Poly) -> Poly:
    items = [(atoms, c) for atoms, c in poly.items() if c != 0]
    items.sort(key=lambda item: (len(item[0]), [a.dump(None) for a in item[0]]))
    return Poly(tuple(Monomial(c, atoms) for atoms, c in items))


def _thaw(poly: Poly) -> _Poly:
    return {m.atoms: m.coeff for m in poly.terms}


def _add(a: _Poly, b: _Poly, sign: int = 1) -> _Poly:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + sign * v
    return {k: v for k, v in out.items() if v != 0}


def _mul(a: _Poly, b: _Poly) -> _Poly:
    out: _Poly = {}
    for ka, va in a.items():
        for kb, vb in b.items():
            key = tuple(sorted(ka + kb, key=lambda e: e.dump(None)))
            out[key] = out.get(key, 0) + va * vb
    return {k: v for k, v in out.items() if v != 0}


# Working affine form: {loop var or "": polynomial}; "" holds the constant part.
_Aff = dict[str, _Poly]


def _aff_add(a: _Aff, b: _Aff, sign: int = 1) -> _Aff:
    out = dict(a)
    for k, v in b.items():
        out[k] = _add(out.get(k, {}), v, sign)
    return {k: v for k, v in out.items() if v}


def _aff_scale(a: _Aff, p: _Poly) -> _Aff:
    return {k: _mul(v, p) for k, v in a.items() if _mul(v, p)}


class AffineBuilder:
    """Builds affine forms for one nest: which names are loop variables and which invariant."""

    def __init__(self, loop_vars: Iterable[str], invariants: Iterable[str]):
        self.loop_vars = frozenset(loop_vars)
        self.invariants = frozenset(invariants)

    def is_invariant(self, expr: d.Expr) -> bool:
        """True if ``expr`` reads only invariant names, shapes and constants."""
        for node in expr.walk():
            if isinstance(node, d.ArrayRef):
                return False
            if isinstance(node, d.Var) and node.name not in self.invariants:
                return False
        return True

    def affine(self, expr: d.Expr) -> Affine | None:
        form = self._form(expr)
        if form is None:
            return None
        terms = tuple(Term(var, _freeze(form[var])) for var in sorted(form) if var)
        return Affine(terms, _freeze(form.get("", {})))

    def _form(self, expr: d.Expr) -> _Aff | None:
        if isinstance(expr, d.Const):
            if isinstance(expr.value, bool) or not isinstance(expr.value, int):
                return None  # a float (or bool) index is Python's business: IndexError
            return {"": {(): expr.value}} if expr.value else {}
        if isinstance(expr, d.Var) and expr.name in self.loop_vars:
            return {expr.name: {(): 1}}
        if isinstance(expr, d.BinOp) and expr.op in ("+", "-", "*"):
            left, right = self._form(expr.left), self._form(expr.right)
            if left is None or right is None:
                return self._atom(expr)
            if expr.op == "+":
                return _aff_add(left, right)
            if expr.op == "-":
                return _aff_add(left, right, -1)
            if set(left) <= {""}:
                return _aff_scale(right, left.get("", {}))
            if set(right) <= {""}:
                return _aff_scale(left, right.get("", {}))
            return None  # product of loop variables
        if isinstance(expr, d.UnaryOp) and expr.op in ("-", "+"):
            inner = self._form(expr.operand)
            if inner is None:
                return self._atom(expr)
            return inner if expr.op == "+" else _aff_scale(inner, {(): -1})
        return self._atom(expr)

    def _atom(self, expr: d.Expr) -> _Aff | None:
        if self.is_invariant(expr) and not isinstance(expr, d.Const):
            return {"": {(expr,): 1}}
        return None


def poly_of_constant(value: int) -> Poly:
    return _freeze({(): value} if value else {})
