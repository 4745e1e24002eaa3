"""The pure functions a loop nest may call, under canonical names.

A call in user code is recognised by the object it names at specialization time (so ``np.sqrt``,
``numpy.sqrt`` and ``from numpy import sqrt`` are all ``numpy.sqrt``), never by spelling. Each
intrinsic keeps the Python object itself (the plain-Python executor calls it, and type rules
are read off it) and the number of arguments it takes.
"""

from __future__ import annotations

import builtins
import functools
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np


@dataclass(frozen=True)
class Intrinsic:
    name: str              # canonical: "abs", "math.sqrt", "numpy.sqrt", ...
    func: Callable[..., Any]
    min_args: int
    max_args: int


_BUILTINS = {"abs": (1, 1), "min": (2, 8), "max": (2, 8), "int": (1, 1), "float": (1, 1),
             "bool": (1, 1)}
_MATH = {name: (1, 1) for name in (
    "sqrt", "exp", "log2", "log10", "log1p", "expm1", "sin", "cos", "tan", "asin", "acos",
    "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "floor", "ceil", "trunc", "fabs",
    "erf", "erfc", "gamma", "lgamma", "isnan", "isinf", "isfinite", "degrees", "radians")}
_MATH.update({"log": (1, 2), "atan2": (2, 2), "pow": (2, 2), "hypot": (2, 2),
              "copysign": (2, 2), "fmod": (2, 2)})
_NUMPY = {name: (1, 1) for name in (
    "sqrt", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sin", "cos", "tan",
    "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh",
    "floor", "ceil", "trunc", "abs", "absolute", "fabs", "isnan", "isinf", "isfinite", "sign",
    "square", "cbrt", "degrees", "radians",
    "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "bool_")}
_NUMPY.update({name: (2, 2) for name in (
    "arctan2", "power", "hypot", "minimum", "maximum", "fmin", "fmax", "copysign")})


@functools.lru_cache(maxsize=1)
def table() -> dict[int, Intrinsic]:
    """id(python object) -> intrinsic (built on first use)."""
    entries: dict[int, Intrinsic] = {}

    def add(prefix: str, module: Any, names: dict[str, tuple[int, int]]) -> None:
        for name, (lo, hi) in names.items():
            obj = getattr(module, name)
            canonical = f"{prefix}{name}"
            if id(obj) not in entries:  # np.abs is np.absolute: the first name wins
                entries[id(obj)] = Intrinsic(canonical, obj, lo, hi)

    add("", builtins, _BUILTINS)
    add("math.", math, _MATH)
    add("numpy.", np, _NUMPY)
    return entries


def by_object(obj: Any) -> Intrinsic | None:
    """The intrinsic that ``obj`` is, or None."""
    return table().get(id(obj))


@functools.lru_cache(maxsize=None)
def by_name(name: str) -> Intrinsic:
    for entry in table().values():
        if entry.name == name:
            return entry
    raise KeyError(name)


#: Constants that may appear as attributes of the math and numpy modules.
CONSTANTS = {
    (math, "pi"): math.pi, (math, "e"): math.e, (math, "tau"): math.tau,
    (math, "inf"): math.inf, (math, "nan"): math.nan,
    (np, "pi"): np.pi, (np, "e"): np.e, (np, "inf"): np.inf, (np, "nan"): np.nan,
}


def module_constant(module: Any, attr: str) -> float | None:
    for (mod, name), value in CONSTANTS.items():
        if mod is module and name == attr:
            return value
    return None
