"""Type inference: the NumPy-level type of every expression and scalar of a nest, per call.

Types are those plain Python would see: array elements have the array's dtype; Python ``int``,
``float`` and ``bool`` values (loop variables, arguments, literals) are *weak*: NumPy lets them
take the other operand's precision (NEP 50). The result type of each operation is read off the
installed NumPy and Python themselves, by applying the operation to sample values of the
operand types, so the rules are NumPy's by construction.

What compiled code cannot reproduce raises ``UnsupportedArgument`` (the nest then runs as
Python, with the reason): a type that depends on the values (``max(1, 2.5)`` returns an int or
a float; an ``int ** int`` with a variable exponent is an int or a float), bool arithmetic
(NumPy's ``True + True`` is ``True``), complex numbers, or a scalar whose type changes in the
nest in a way Python's first operation would round differently.

Scalar types come from a fixpoint over the assignments. A scalar that starts as a Python float
and becomes, say, ``np.float32`` (``s = 0.0; s += x32[i]``) is kept as ``float32`` when every read
of it combines it directly with a ``float32`` operand: Python converts the weak value to
``float32`` at that first operation anyway (NEP 50), so converting it on entry is exact.
"""

from __future__ import annotations

import functools
import operator
import warnings
from dataclasses import dataclass

import numpy as np

from asp_core.errors import UnsupportedArgument
from asp_core.signature import ArraySig, ScalarSig

from . import dast as d
from . import intrinsics
from .counted import BOUND
from .pretty import expression


@dataclass(frozen=True)
class Ty:
    """A value's type: a NumPy dtype, weak for Python scalars."""

    dtype: np.dtype
    weak: bool = False

    @property
    def kind(self) -> str:
        return self.dtype.kind  # b i u f

    def __str__(self) -> str:
        if self.weak:
            return {"b": "bool", "i": "int", "f": "float"}[self.kind]
        return f"numpy.{self.dtype.name}"


INT = Ty(np.dtype(np.int64), True)
FLOAT = Ty(np.dtype(np.float64), True)
BOOL = Ty(np.dtype(np.bool_), True)
SUPPORTED_KINDS = "biuf"
#: The dtypes compiled code holds (C has no half or quad floats of NumPy's layout).
SUPPORTED_DTYPES = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float32, np.float64))


def _supported(dtype: np.dtype, what: str) -> None:
    if dtype not in SUPPORTED_DTYPES:
        raise UnsupportedArgument(f"{what} of dtype {dtype.name} cannot be compiled (only bool, "
                                  "integers up to 64 bits, float32 and float64)")

_BINOPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
           "//": operator.floordiv, "%": operator.mod, "**": operator.pow}
_CMPOPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
           "==": operator.eq, "!=": operator.ne}


def sample(ty: Ty, value=1):
    """A value of type ``ty`` (for reading result types off NumPy)."""
    if ty.weak:
        return {"b": bool, "i": int, "f": float}[ty.kind](value)
    return ty.dtype.type(value)


def type_of_value(value) -> Ty:
    if isinstance(value, np.generic):  # first: np.float64 is a subclass of float
        _supported(np.dtype(type(value)), "a value")
        return Ty(np.dtype(type(value)))
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return INT
    if isinstance(value, float):
        return FLOAT
    raise UnsupportedArgument(f"a value of type {type(value).__name__} cannot be compiled")


def type_of_sig(sig) -> Ty:
    if isinstance(sig, ScalarSig):
        if sig.dtype.kind not in SUPPORTED_KINDS:
            raise UnsupportedArgument(f"scalars of type {sig} cannot be compiled")
        _supported(sig.dtype, "a scalar")
        return Ty(sig.dtype, sig.weak)
    if isinstance(sig, ArraySig):
        _supported(sig.dtype, "an array")
        return Ty(sig.dtype)
    raise UnsupportedArgument(f"{sig} is not a number")


@functools.lru_cache(maxsize=None)
def binop_type(op: str, a: Ty, b: Ty) -> Ty:
    if a.kind == "b" and b.kind == "b" and op in "+-*/":
        raise UnsupportedArgument(f"arithmetic on two booleans ({a} {op} {b}) is not compiled")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = _BINOPS[op](sample(a, 2), sample(b, 2))
        except Exception as exc:
            raise UnsupportedArgument(f"{a} {op} {b} is not defined ({exc})") from None
    return type_of_value(result)


@functools.lru_cache(maxsize=None)
def compare_type(op: str, a: Ty, b: Ty) -> Ty:
    return type_of_value(_CMPOPS[op](sample(a), sample(b)))


@functools.lru_cache(maxsize=None)
def common_type(a: Ty, b: Ty) -> Ty:
    """The type both operands are converted to by an arithmetic operation (or a comparison)."""
    if a == b:
        return a
    if a.kind == "b" and b.kind == "b":
        return Ty(np.dtype(np.bool_), a.weak and b.weak)
    return binop_type("+", Ty(a.dtype if a.kind != "b" else np.dtype(np.int64), a.weak),
                      Ty(b.dtype if b.kind != "b" else np.dtype(np.int64), b.weak))


@functools.lru_cache(maxsize=None)
def call_type(func: str, args: tuple[Ty, ...]) -> Ty:
    if func in ("min", "max"):
        if len({a.dtype for a in args}) != 1:
            raise UnsupportedArgument(f"{func}() of values of different types "
                                      f"({', '.join(map(str, args))}) returns one of them as "
                                      "it is: its type depends on the values")
        return Ty(args[0].dtype, all(a.weak for a in args))
    if func == "int":
        return INT
    if func == "float":
        return FLOAT
    if func == "bool":
        return BOOL
    if func.startswith("numpy.") and func[6:] in ("int8", "int16", "int32", "int64", "uint8",
                                                    "uint16", "uint32", "uint64", "bool_"):
        raise UnsupportedArgument(f"{func}() conversions are not compiled (NumPy checks the "
                                  "range of Python ints but wraps NumPy ones)")
    entry = intrinsics.by_name(func)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = entry.func(*(sample(a, 2) for a in args))
        except Exception as exc:
            raise UnsupportedArgument(f"{func}({', '.join(map(str, args))}) is not defined "
                                      f"({exc})") from None
    if isinstance(result, np.ndarray):  # a 0-d result of a ufunc on Python scalars
        result = result[()]
    return type_of_value(result)


@dataclass(frozen=True)
class TypeInfo:
    variables: dict[str, Ty]           # storage type of every scalar (loop vars: int)
    arrays: dict[str, Ty]
    converted_inputs: tuple[str, ...]  # scalars whose input value is converted on entry
    result_types: dict[str, Ty]        # type of the value a written scalar is left with

    def of(self, expr: d.Expr) -> Ty:
        return expr_type(expr, self.variables, self.arrays)


def expr_type(expr: d.Expr, variables: dict[str, Ty], arrays: dict[str, Ty]) -> Ty:
    """The (storage) type of ``expr`` when every scalar has its storage type: one dtype, weak
    only if every possibility is (``max(A[i], x)`` may be either, of one dtype)."""
    types = expr_types(expr, {k: frozenset({v}) for k, v in variables.items()}, arrays)
    (dtype,) = {t.dtype for t in types}
    return Ty(dtype, all(t.weak for t in types))


def expr_types(expr: d.Expr, variables: dict[str, frozenset[Ty]], arrays: dict[str, Ty]
               ) -> frozenset[Ty]:
    """Every type ``expr`` may have when scalars may hold any of their possible types.

    Raises ``UnsupportedArgument`` where the possibilities differ in more than weakness at an
    operation (the computed value would then depend on which one Python holds)."""
    if isinstance(expr, d.Const):
        return frozenset({type_of_value(expr.value)})
    if isinstance(expr, d.Var):
        found = variables.get(expr.name)
        if not found:
            raise _Unknown(expr.name)
        return found
    if isinstance(expr, d.Shape):
        return frozenset({INT})
    if isinstance(expr, d.ArrayRef):
        for index in expr.index:
            for ity in expr_types(index, variables, arrays):
                if ity.kind == "b":
                    raise UnsupportedArgument(
                        f"subscript {expression(index)} of {expr.array} is a {ity}: NumPy "
                        "takes a bool subscript as a mask (every element, or none), not as "
                        "the element 0 or 1")
                if ity.kind not in "iu":
                    raise UnsupportedArgument(
                        f"subscript {expression(index)} of {expr.array} is a {ity}, not an "
                        "integer (Python raises IndexError)")
        return frozenset({arrays[expr.array]})
    children = [expr_types(c, variables, arrays) for c in expr.children()]
    if isinstance(expr, d.Call) and expr.func in ("min", "max"):
        # Python's min/max return one of their arguments as it is: any of their types.
        out = frozenset().union(*children)
        _one_dtype(expr, out)
        _one_dtype(expr, frozenset(common_type(*combo) for combo in _product(children)
                                   if len(combo) == 2))
        return out
    if isinstance(expr, d.IfExp):  # one of the two branches, as it is
        out = children[1] | children[2]
        _one_dtype(expr, out)
        return out
    if isinstance(expr, d.BoolOp) and not all(t.kind == "b" for c in children for t in c):
        out = frozenset().union(*children)  # and/or return one of their operands
        _one_dtype(expr, out)
        return out
    out = frozenset(_node_type(expr, combo) for combo in _product(children))
    _one_dtype(expr, out)
    if isinstance(expr, d.Compare):  # also the type the operands are compared in
        _one_dtype(expr, frozenset(common_type(*combo) for combo in _product(children)))
    return out


def _product(sets: list[frozenset[Ty]]):
    if not sets:
        yield ()
        return
    for first in sets[0]:
        for rest in _product(sets[1:]):
            yield (first,) + rest


def _one_dtype(expr: d.Expr, types: frozenset[Ty]) -> None:
    if len({t.dtype for t in types}) > 1:
        raise UnsupportedArgument(
            f"'{expression(expr)}' is computed as {' or '.join(sorted(map(str, types)))} "
            "depending on the values its scalars hold at that point")


def _node_type(expr: d.Expr, args: tuple[Ty, ...]) -> Ty:
    if isinstance(expr, d.BinOp):
        a, b = args
        if expr.op == "**" and a.kind in "iub" and b.kind in "iub":
            if not (isinstance(expr.right, d.Const) and expr.right.value >= 0):
                raise UnsupportedArgument(f"{expression(expr)}: an integer power with an "
                                          "exponent that is not a non-negative constant (its "
                                          "type, int or float, depends on the exponent's sign)")
        return binop_type(expr.op, a, b)
    if isinstance(expr, d.UnaryOp):
        (a,) = args
        if expr.op == "not":
            return BOOL
        if a.kind == "b":
            if a.weak:
                return INT
            raise UnsupportedArgument(f"{expr.op}{a} (negating a NumPy bool) is not compiled")
        return a
    if isinstance(expr, d.Compare):
        return compare_type(expr.op, *args)
    if isinstance(expr, d.BoolOp):
        if all(t.kind == "b" for t in args):
            return BOOL if all(t.weak for t in args) else Ty(np.dtype(np.bool_))
        if len(set(args)) != 1:
            raise UnsupportedArgument(f"'{expression(expr)}': and/or return one of their "
                                      "operands, here of different types")
        return args[0]
    if isinstance(expr, d.IfExp):
        _, a, b = args
        if a != b:
            raise UnsupportedArgument(f"'{expression(expr)}': the branches have types {a} and "
                                      f"{b}, so its type depends on the condition")
        return a
    if isinstance(expr, d.Call):
        return call_type(expr.func, args)
    raise TypeError(f"unexpected expression {type(expr).__name__}")


class _Unknown(Exception):
    """A scalar whose type is not known yet (during the fixpoint)."""


def infer_types(analysis, signature) -> TypeInfo:
    """Types of the nest's scalars and arrays for a call with ``signature`` (input order)."""
    names = analysis.names
    arrays: dict[str, Ty] = {}
    fixed: dict[str, frozenset[Ty]] = {}
    for name, sig in zip(names.inputs, signature):
        if name in names.arrays:
            ty = type_of_sig(sig)
            if ty.kind not in SUPPORTED_KINDS:
                raise UnsupportedArgument(f"array {name} has dtype {sig.dtype}")
            arrays[name] = ty
        elif name in names.invariants:
            fixed[name] = frozenset({type_of_sig(sig)})
    for var in names.loop_vars:
        fixed[var] = frozenset({INT})
    inputs = dict(zip(names.inputs, signature))
    entry = {s: type_of_sig(inputs[s]) for s in analysis.required}
    assigned: dict[str, frozenset[Ty]] = {s: frozenset() for s in names.scalars + names.temps}
    statements = analysis.statements

    def possible() -> dict[str, frozenset[Ty]]:
        out = dict(fixed)
        for s, types in assigned.items():
            both = types | ({entry[s]} if s in entry else set())
            if both:
                out[s] = frozenset(both)
        return out

    for _ in range(2 * len(statements) + 2):  # fixpoint over the assignments
        changed = False
        for stmt in statements:
            if not isinstance(stmt.target, d.Var):
                continue
            try:
                types = expr_types(stmt.value, possible(), arrays)
            except _Unknown:
                continue
            name = stmt.target.name
            if not types <= assigned[name]:
                assigned[name] = assigned[name] | types
                changed = True
        if not changed:
            break
    variables: dict[str, Ty] = {k: next(iter(v)) for k, v in fixed.items()}
    result_types: dict[str, Ty] = {}
    final = possible()
    for name in assigned:
        types = final.get(name)
        if not types:
            raise UnsupportedArgument(f"the type of scalar '{name}' cannot be inferred")
        variables[name] = _storage(name, types, assigned[name])
        if len({t.dtype for t in assigned[name]}) > 1 and \
                name in analysis.scalars.live_out:
            # The kernel reads it after the nest: Python leaves it with the type of the last
            # assignment that ran (``s = 0`` per row, then ``s = s + x[j] * 0.5``: an int
            # where the last row adds nothing), which the storage type cannot tell.
            raise UnsupportedArgument(
                f"scalar '{name}' is read after the nest and is left holding "
                f"{' or '.join(sorted(map(str, assigned[name])))} depending on the run")
        if assigned[name]:
            # Several types of one dtype (a Python float or a numpy.float64, as max(m, A[i])
            # leaves it): the value is the same; the NumPy scalar is returned.
            result_types[name] = next(iter(assigned[name])) if len(assigned[name]) == 1 \
                else Ty(variables[name].dtype, False)
    for stmt in statements:  # every expression must type; whole-value reads of ambiguous
        try:                 # scalars must not change the value they carry
            expr_types(stmt.value, final, arrays)
            if stmt.kind == BOUND:   # int(bound) of a counted loop (``counted``)
                _check_bound(stmt, expr_types(stmt.value.args[0], final, arrays))
            if isinstance(stmt.target, d.ArrayRef):
                expr_types(stmt.target, final, arrays)
        except _Unknown as exc:
            raise UnsupportedArgument(f"the type of '{exc}' cannot be inferred") from None
        if isinstance(stmt.target, d.Var) and isinstance(stmt.value, d.Var):
            source = final.get(stmt.value.name, frozenset())
            if len({t.dtype for t in source}) > 1:
                raise UnsupportedArgument(f"'{expression(stmt.target)} = {expression(stmt.value)}'"
                                          " copies a value whose precision depends on the run")
    # Only a change of dtype converts the value (weak and strong of one dtype hold the same).
    converted = tuple(s for s in analysis.required if entry[s].dtype != variables[s].dtype)
    for s in converted:
        _check_whole_reads(analysis, s, entry[s], variables[s])
    return TypeInfo(variables, arrays, converted, result_types)


def _check_bound(stmt: d.Assign, types: frozenset[Ty]) -> None:
    """A bound of ``range()`` must be an integer: Python raises TypeError for a float (or a
    NumPy bool), which ``int()`` would truncate."""
    for ty in types:
        if not (ty.kind in "iu" or (ty.kind == "b" and ty.weak)):
            raise UnsupportedArgument(f"range() of {ty} ('{expression(stmt.value.args[0])}'): "
                                      "Python raises TypeError")


def _storage(name: str, types: frozenset[Ty], assigned: frozenset[Ty] = frozenset()) -> Ty:
    """One storage type for the values a scalar may hold: their common dtype; a weak entry
    value may be converted to the (only) strong dtype the nest gives it, and a Python int on
    entry to a Python float where the nest assigns only floats (the accumulator ``s = 0``
    before ``s = s + x * 0.5``: Python converts the int at the first addition; where the nest
    assigns nothing, the kernel keeps its int)."""
    dtypes = {t.dtype for t in types}
    strong = {t.dtype for t in types if not t.weak}
    if len(dtypes) == 1:
        return Ty(dtypes.pop(), all(t.weak for t in types))
    if types == {INT, FLOAT} and assigned == {FLOAT}:
        return FLOAT
    if len(strong) == 1:
        target = Ty(strong.pop())
        if all(common_type(t, target) == target for t in types if t.weak):
            return target
    raise UnsupportedArgument(f"scalar '{name}' holds values of types "
                              f"{', '.join(sorted(map(str, types)))}")


def _check_whole_reads(analysis, s: str, given: Ty, stored: Ty) -> None:
    """A scalar converted on entry may only be read inside operations (which NumPy would
    convert it for anyway), not as a whole value stored elsewhere."""
    me = d.Var(s)
    for stmt in analysis.statements:
        if stmt.value == me:
            raise UnsupportedArgument(
                f"scalar '{s}' enters the nest as {given} and is stored as {stored}: "
                f"'{analysis.text(stmt.sid)}' would see a rounded value (initialize it as "
                f"numpy.{stored.dtype.name}(...))")
