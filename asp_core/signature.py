"""Argument signatures: what a compiled variant depends on, computed per call (so, fast).

* NumPy arrays: dtype, number of dimensions, layout (``"C"`` contiguous or ``"S"`` strided),
  and whether they are writeable.
* Python scalars (``int``, ``float``, ``bool``, ``complex``): their kind, marked *weak* because
  NumPy lets them adopt the other operand's precision (NEP 50).
* NumPy scalars: their dtype (strong).
* Anything else: its type name, which no compiled backend accepts.

Signatures are small frozen values: hashable for in-process lookups, and ``str()`` gives a
stable text for on-disk keys.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Sequence

import numpy as np


class _Hashed:
    """Frozen signature parts hash once (signatures key the per-call variant lookup). Each
    subclass names ``__hash__ = _Hashed.__hash__`` in its own body: a frozen dataclass with
    ``eq`` otherwise gets a generated ``__hash__`` that hashes every field again per call."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash(tuple(getattr(self, f.name) for f in fields(self))))

    def __hash__(self) -> int:
        return self._hash


@dataclass(frozen=True, eq=True)
class ArraySig(_Hashed):
    dtype: np.dtype
    ndim: int
    layout: str  # "C" (C-contiguous) or "S" (any strides)
    writeable: bool = True

    __hash__ = _Hashed.__hash__

    def __str__(self) -> str:
        return f"{self.dtype.str}[{self.ndim}d,{self.layout}{'' if self.writeable else ',ro'}]"


@dataclass(frozen=True, eq=True)
class ScalarSig(_Hashed):
    dtype: np.dtype  # Python int -> int64, float -> float64, bool -> bool, complex -> complex128
    weak: bool       # True for Python scalars

    __hash__ = _Hashed.__hash__

    def __str__(self) -> str:
        return ("py:" if self.weak else "np:") + self.dtype.str


@dataclass(frozen=True, eq=True)
class ObjectSig(_Hashed):
    typename: str

    __hash__ = _Hashed.__hash__

    def __str__(self) -> str:
        return f"object:{self.typename}"


Sig = ArraySig | ScalarSig | ObjectSig

_OBJECTS: dict[type, "ObjectSig"] = {}
_PY_SCALARS = {
    bool: ScalarSig(np.dtype(np.bool_), True),
    int: ScalarSig(np.dtype(np.int64), True),
    float: ScalarSig(np.dtype(np.float64), True),
    complex: ScalarSig(np.dtype(np.complex128), True),
}
_NP_SCALARS: dict[type, ScalarSig] = {}


_ARRAYS: dict[tuple, ArraySig] = {}


def value_signature(value: Any) -> Sig:
    """The signature of one argument (signature objects are shared: cheap per call)."""
    t = type(value)
    sig = _PY_SCALARS.get(t)
    if sig is not None:
        return sig
    if t is np.ndarray:
        flags = value.flags
        key = (value.dtype, value.ndim, flags.c_contiguous, flags.writeable)
        sig = _ARRAYS.get(key)
        if sig is None:
            sig = _ARRAYS[key] = ArraySig(key[0], key[1], "C" if key[2] else "S", key[3])
        return sig
    if isinstance(value, np.generic):
        sig = _NP_SCALARS.get(t)
        if sig is None:
            sig = _NP_SCALARS[t] = ScalarSig(np.dtype(t), False)
        return sig
    if isinstance(value, np.ndarray):  # a subclass (e.g. np.memmap) behaves as its base
        return value_signature(value.view(np.ndarray))
    if isinstance(value, bool):
        return _PY_SCALARS[bool]
    if isinstance(value, int):
        return _PY_SCALARS[int]
    if isinstance(value, float):
        return _PY_SCALARS[float]
    sig = _OBJECTS.get(t)
    if sig is None:
        sig = _OBJECTS[t] = ObjectSig(f"{t.__module__}.{t.__qualname__}")
    return sig


def signature_of(args: Sequence[Any]) -> tuple[Sig, ...]:
    """The signatures of a call's positional arguments."""
    return tuple(map(value_signature, args))


def signature_text(sig: Sequence[Sig]) -> str:
    """A stable text for a signature (for on-disk keys and reports)."""
    return "(" + ", ".join(str(s) for s in sig) + ")"
