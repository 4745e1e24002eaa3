"""Binding: the run-time values a nest's analysis needs, and the nest in integer form.

Per call, ``Binder`` evaluates every invariant atom of the affine forms (``n``, ``self.n``,
``A.shape[0]``, ``n // 2`` ...) with a generated function, takes the arrays' shapes and finds
arrays that share memory. The ``BindingKey`` of these values keys the per-binding caches.

``bind_nest`` then rewrites loops and subscripts in *normalized iteration space*: each loop
runs ``t = 0, 1, ...`` in execution order with ``v = start + step * t``, so a subscript becomes
an integer affine form of the ``t`` of its loops (``TForm``). For each loop it also records the
largest ``t`` over all instances (``t_max``) and, as an affine form of the enclosing loops'
``t``, its extent: the loop runs while ``|step| * t <= extent - 1``. A subscript that Python
would wrap (always negative: ``A[-1 - i]``) gets the array's extent added; one whose sign may
change, or that may fall out of range, is marked unknown (``None``), which every test treats
as "may touch anything".

Compiled code computes bounds and affine subscripts in int64 arithmetic that wraps (the C
compiler's ``-fwrapv``). Sums and products wrapped modulo 2**64 still give the exact value
wherever the exact value is an int64, so the binding refuses (``UnsupportedArgument``: the nest
runs as Python) any call where an invariant, a loop's start, stop or step, an affine
subscript, or an operand of ``//`` or ``%`` in an invariant may leave int64. Loops whose
values come near the ends of int64 (``wide``: beyond +-2**61) are compiled with a trip count
and an iteration counter instead of stepping the loop variable past its stop.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

import numpy as np

from asp_core.errors import UnsupportedArgument

from .. import dast as d
from ..access import AccessInfo
from ..affine import Affine
from ..names import NestNames
from ..pretty import PythonExpression

_IDS = itertools.count()

INT64_MIN, INT64_MAX = -2**63, 2**63 - 1
#: Loops whose start, stop and step all lie within +-WIDE step their variable directly in C
#: (``v += step`` and OpenMP's own trip count, ``(stop - start + step - 1) / step``, cannot
#: overflow); others are compiled with an unsigned trip count and counter (``BoundLoop.wide``).
WIDE = 2**61


@dataclass(frozen=True)
class TForm:
    """``sum(coeffs[lid] * t_lid) + const`` over normalized loop iterations."""

    coeffs: tuple[tuple[int, int], ...]  # (lid, coefficient), sorted, no zero
    const: int

    def as_dict(self) -> dict[int, int]:
        return dict(self.coeffs)


def tform(coeffs: dict[int, int], const: int) -> TForm:
    return TForm(tuple(sorted((l, c) for l, c in coeffs.items() if c != 0)), const)


@dataclass(frozen=True)
class BoundLoop:
    lid: int
    depth: int
    parent: int
    var: str
    step: int
    start: TForm      # first value of the loop variable, in the enclosing loops' t
    extent: TForm     # sign(step) * (stop - start), in the enclosing loops' t
    t_max: int        # the largest t of any instance; -1 if the loop never runs
    v_low: int        # the loop variable's smallest and largest value (over-approximated)
    v_high: int
    wide: bool = False  # bounds or step beyond +-WIDE: compiled with a trip count (see WIDE)

    @property
    def triangular(self) -> bool:
        return bool(self.start.coeffs or self.extent.coeffs)


@dataclass(frozen=True)
class BoundAccess:
    sid: int
    position: int             # index in the statement's accesses
    array: str                # canonical name (arrays found identical in memory share one)
    dims: tuple[TForm | None, ...]
    write: bool
    modes: tuple[str, ...] = ()  # per dimension: "direct" (always in range), "shifted"
                                 # (always negative: add the extent), "checked" (anything else)
    raw: tuple[TForm | None, ...] = ()  # the affine forms before wrap-around (None: not affine)


DIRECT, SHIFTED, CHECKED = "direct", "shifted", "checked"


class BindingKey(NamedTuple):
    """The run-time values an analysis depends on (a tuple: cheap to hash per call)."""

    atoms: tuple[int, ...]
    shapes: tuple[tuple[int, ...], ...]
    aliases: tuple                     # () when no two arrays share memory
    #: the kernel's ``exact_reductions`` setting: the schedule runs every loop that carries a
    #: reduction sequentially (a setting, not a value; in the key so that plans of both
    #: settings live side by side)
    exact_reductions: bool = False


@dataclass(frozen=True)
class BoundNest:
    key: BindingKey
    loops: dict[int, BoundLoop]
    accesses: dict[int, tuple[BoundAccess, ...]]  # sid -> accesses
    canonical: dict[str, str]                      # array name -> canonical name
    overlapping: frozenset[frozenset[str]]         # canonical names that may partly overlap


def nest_atoms(access: AccessInfo) -> tuple[d.Expr, ...]:
    """Every invariant atom of the nest's affine forms, in a stable order."""
    found: set[d.Expr] = set()
    for loop in access.loops:
        found |= loop.start.atoms() | loop.stop.atoms() | loop.step.atoms()
    for st in access.statements:
        for acc in st.accesses:
            for form in acc.subscripts:
                if form is not None:
                    found |= form.atoms()
    return tuple(sorted(found, key=lambda a: a.dump(None)))


class Binder:
    """Computes the ``BindingKey`` of a call from the nest's input values."""

    def __init__(self, names: NestNames, access: AccessInfo):
        from ..codegen.python import identifier

        self.names = names
        self.atoms = nest_atoms(access)
        position = {name: i for i, name in enumerate(names.inputs)}
        self.array_positions = tuple(position[a] for a in names.arrays)
        written = {acc.array for st in access.statements for acc in st.accesses if acc.write}
        self.written = tuple(i for i, a in enumerate(names.arrays) if a in written)
        printer = PythonExpression(name=identifier)
        fname = f"atoms_{next(_IDS)}"
        params = ", ".join(identifier(n) for n in names.inputs)
        # The atoms, then every operand of // and % inside them: compiled code recomputes an
        # atom in wrapping int64 arithmetic, exact only if these values are int64 too.
        self.checkpoints = tuple(operand for atom in self.atoms for node in atom.walk()
                                 if isinstance(node, d.BinOp) and node.op in ("//", "%")
                                 for operand in (node.left, node.right))
        values = self.atoms + self.checkpoints
        body = ", ".join(printer.text(a) for a in values)
        source = f"def {fname}({params}):\n    return ({body}{',' if values else ''})\n"
        namespace: dict[str, Any] = {}
        exec(compile(source, f"<asp binding {fname}>", "exec"), namespace)  # noqa: S102
        self._evaluate = namespace[fname]
        self.source = source

    def key(self, inputs: Sequence[Any], exact_reductions: bool = False) -> BindingKey:
        try:
            values = self._evaluate(*inputs)
        except Exception as exc:  # what Python itself would raise; the original code reports it
            raise UnsupportedArgument(f"a loop bound or subscript cannot be evaluated before "
                                      f"the nest runs ({type(exc).__name__}: {exc})") from None
        for atom, value in zip(self.atoms + self.checkpoints, values):
            if type(value) is not int:
                if isinstance(value, np.integer) or (isinstance(value, int)):
                    values = tuple(int(v) for v in values)
                    continue
                from ..pretty import expression

                raise UnsupportedArgument(f"'{expression(atom)}' is {value!r}, not an integer; "
                                          "loop bounds and subscripts must be integers")
        if values and not INT64_MIN <= min(values) <= max(values) <= INT64_MAX:
            _beyond_int64(self.atoms + self.checkpoints, values)
        values = values[:len(self.atoms)]
        arrays = [inputs[i] for i in self.array_positions]
        shapes = tuple([a.shape for a in arrays])
        return BindingKey(values, shapes, self._aliases(arrays) if self.written else (),
                          exact_reductions)

    def _aliases(self, arrays: list) -> tuple:
        found = None
        for w in self.written:
            target = arrays[w]
            for j, other in enumerate(arrays):
                if j == w or (j < w and j in self.written):
                    continue
                if target is other or np.may_share_memory(target, other):
                    found = found or set()
                    found.add((min(w, j), max(w, j), _same_view(target, other)))
        return tuple(sorted(found)) if found else ()


def _beyond_int64(exprs: Sequence[d.Expr], values: Sequence[int]) -> None:
    from ..pretty import expression

    for expr, value in zip(exprs, values):
        if not INT64_MIN <= value <= INT64_MAX:
            raise UnsupportedArgument(
                f"'{expression(expr)}' is {value}, beyond the 64-bit integers compiled code "
                "computes loop bounds and subscripts with")


def _fits(what: str, *values: int) -> None:
    """Refuse the binding if any of ``values`` (the extremes of ``what``) leaves int64."""
    for value in values:
        if not INT64_MIN <= value <= INT64_MAX:
            raise UnsupportedArgument(
                f"{what} reaches {value}, beyond the 64-bit integers compiled code counts with")


def _same_view(a: np.ndarray, b: np.ndarray) -> bool:
    return (a is b) or (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
                        and a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype)


def bind_nest(names: NestNames, access: AccessInfo, atoms: tuple[d.Expr, ...],
              key: BindingKey) -> BoundNest:
    """The nest in normalized integer form for the values of ``key``."""
    values = dict(zip(atoms, key.atoms))
    loops: dict[int, BoundLoop] = {}
    vforms: dict[int, TForm] = {}   # loop variable as a TForm of its own and outer t
    var_lid: dict[int, dict[str, int]] = {}  # per loop: enclosing variable name -> lid
    for info in access.loops:
        scope = dict(var_lid.get(info.parent, {}))
        step = info.step.evaluate(values)
        if step == 0:
            raise UnsupportedArgument("a loop step is zero (Python raises ValueError)")
        start = _to_tform(info.start, values, scope, vforms)
        stop = _to_tform(info.stop, values, scope, vforms)
        sign = 1 if step > 0 else -1
        extent = _combine(stop, start, sign, -sign)
        outer_ok = info.parent < 0 or loops[info.parent].t_max >= 0
        lo, hi = _range(extent, loops)
        t_max = -(-hi // abs(step)) - 1 if outer_ok and hi > 0 else -1
        scope[info.var] = info.lid
        var_lid[info.lid] = scope
        vform = _combine(start, tform({info.lid: 1}, 0), 1, step)
        vforms[info.lid] = vform
        loops[info.lid] = BoundLoop(info.lid, info.depth, info.parent, info.var, step, start,
                                    extent, t_max, 0, 0)
        v_lo, v_hi = _range(vform, loops)
        stop_lo, stop_hi = _range(stop, loops)
        start_lo, start_hi = _range(start, loops)
        limits = (start_lo, start_hi, stop_lo, stop_hi, step)
        _fits(f"the range of loop '{info.var}'", *limits)
        if step > 0:
            v_hi = min(v_hi, stop_hi - 1)   # v < stop
        else:
            v_lo = max(v_lo, stop_lo + 1)   # v > stop
        wide = not all(-WIDE <= x <= WIDE for x in limits)
        loops[info.lid] = BoundLoop(info.lid, info.depth, info.parent, info.var, step, start,
                                    extent, t_max, v_lo, v_hi, wide)
    canonical, overlapping = _canonical_arrays(names.arrays, key.aliases)
    shapes = dict(zip(names.arrays, key.shapes))
    accesses: dict[int, tuple[BoundAccess, ...]] = {}
    for st in access.statements:
        scope = var_lid.get(st.loops[-1], {}) if st.loops else {}
        out = []
        for position, acc in enumerate(st.accesses):
            dims, modes, raw = [], [], []
            for k, form in enumerate(acc.subscripts):
                if form is None:
                    dims.append(None)
                    modes.append(CHECKED)
                    raw.append(None)
                    continue
                tf = _to_tform(form, values, scope, vforms)
                raw.append(tf)
                lo, hi = _range(tf, loops)
                v_lo, v_hi = _v_range(form, values, scope, loops)
                if _runs(st.loops, loops):
                    _fits(f"subscript {k} of '{acc.array}'", max(lo, v_lo), min(hi, v_hi))
                dim, mode = _wrap(tf, shapes[acc.array], k, max(lo, v_lo), min(hi, v_hi))
                dims.append(dim)
                modes.append(mode)
            out.append(BoundAccess(st.sid, position, canonical[acc.array], tuple(dims),
                                   acc.write, tuple(modes), tuple(raw)))
        accesses[st.sid] = tuple(out)
    return BoundNest(key, loops, accesses, canonical, overlapping)


def _runs(chain: Sequence[int], loops: dict[int, BoundLoop]) -> bool:
    return all(loops[lid].t_max >= 0 for lid in chain)


def _to_tform(form: Affine, values: dict, scope: dict[str, int], vforms: dict[int, TForm]) -> TForm:
    coeffs: dict[int, int] = {}
    const = form.const.evaluate(values)
    for term in form.terms:
        c = term.coeff.evaluate(values)
        if c == 0:
            continue
        vf = vforms[scope[term.var]]
        for lid, k in vf.coeffs:
            coeffs[lid] = coeffs.get(lid, 0) + c * k
        const += c * vf.const
    return tform(coeffs, const)


def _combine(a: TForm, b: TForm, ka: int, kb: int) -> TForm:
    """``ka * a + kb * b``."""
    coeffs: dict[int, int] = {}
    for lid, c in a.coeffs:
        coeffs[lid] = coeffs.get(lid, 0) + ka * c
    for lid, c in b.coeffs:
        coeffs[lid] = coeffs.get(lid, 0) + kb * c
    return tform(coeffs, ka * a.const + kb * b.const)


def _range(form: TForm, loops: dict[int, BoundLoop]) -> tuple[int, int]:
    """Smallest and largest value of ``form`` with every t in [0, t_max] (a bounding box)."""
    lo = hi = form.const
    for lid, c in form.coeffs:
        top = max(loops[lid].t_max, 0)
        if c > 0:
            hi += c * top
        else:
            lo += c * top
    return lo, hi


def _v_range(form: Affine, values: dict, scope: dict[str, int], loops: dict[int, BoundLoop]
             ) -> tuple[int, int]:
    """Range of an affine subscript from its loop variables' value ranges."""
    lo = hi = form.const.evaluate(values)
    for term in form.terms:
        c = term.coeff.evaluate(values)
        loop = loops[scope[term.var]]
        a, b = c * loop.v_low, c * loop.v_high
        lo += min(a, b)
        hi += max(a, b)
    return lo, hi


def _wrap(form: TForm, shape: tuple[int, ...], dim: int, lo: int, hi: int
          ) -> tuple[TForm | None, str]:
    """Python's negative-index wrap-around, where it applies to every instance; else unknown
    (None), and the subscript is checked when it runs. ``lo``/``hi`` bound its values."""
    if dim >= len(shape):
        return None, CHECKED
    extent = shape[dim]
    if 0 <= lo and hi < extent:
        return form, DIRECT
    if -extent <= lo and hi < 0:
        return TForm(form.coeffs, form.const + extent), SHIFTED
    return None, CHECKED


def _canonical_arrays(arrays: tuple[str, ...], aliases: tuple) -> tuple[dict[str, str], frozenset]:
    canonical = {a: a for a in arrays}
    overlapping = set()
    for i, j, same in aliases:
        a, b = arrays[i], arrays[j]
        if same:
            root = min(canonical[a], canonical[b])
            for name, c in list(canonical.items()):
                if c in (canonical[a], canonical[b]):
                    canonical[name] = root
        else:
            overlapping.add((a, b))
    return canonical, frozenset(frozenset((canonical[a], canonical[b])) for a, b in overlapping)
