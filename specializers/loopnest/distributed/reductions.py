"""Combining a reduction's per-block results, as ``dask.array.reduction`` steps.

Each block reduces its iterations from the operator's identity (``+``: zero of the type of
the scalar's value on entry, ``-0.0`` for floats, which adds exactly; ``*``: one) or, for
``max``/``min``, from the value on entry itself (selecting it again changes nothing). The
partial results travel as 1-element object arrays (their exact Python or NumPy types kept);
``dask.array.reduction`` combines them in a tree over consecutive blocks, in block order, with
the statement's own operator (``Fold``), and ``Finish`` adds the value on entry (``+``, ``*``)
and makes the 0-d array of the scalar's dtype. Floating-point sums and products are thus
reassociated, deterministically for a given partition (``explain`` says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


def identity(op: str, entry: Any) -> Any:
    """A block's starting value for a reduction whose value on entry is ``entry``."""
    if op in ("max", "min"):
        return entry
    kind = type(entry)
    if isinstance(entry, np.generic):
        return kind(-0.0 if op == "+" and entry.dtype.kind == "f" else int(op == "*"))
    if kind is float:
        return -0.0 if op == "+" else 1.0
    return int(op == "*")


def identity_of_dtype(op: str, dtype: np.dtype, weak: bool) -> Any:
    """The starting value for an entry value known only by its type (a lazy scalar)."""
    value = np.asarray(-0.0 if op == "+" and dtype.kind == "f" else int(op == "*"),
                       dtype=dtype)[()]
    return value.item() if weak else value


@dataclass(frozen=True)
class Fold:
    """Combine values in order with the reduction's operator (``first``: the accumulated
    value is the first argument of the statement's ``max``/``min`` call)."""

    op: str
    func: str | None = None
    first: bool = True

    def apply(self, acc: Any, value: Any) -> Any:
        if self.op == "+":
            return acc + value
        if self.op == "*":
            return acc * value
        from ..intrinsics import by_name

        f = by_name(self.func).func
        return f(acc, value) if self.first else f(value, acc)

    def over(self, values: np.ndarray) -> Any:
        items = list(np.asarray(values, dtype=object).ravel())
        acc = items[0]
        for value in items[1:]:
            acc = self.apply(acc, value)
        return acc

    # the three steps of dask.array.reduction (concatenate=True)
    def chunk(self, x: np.ndarray, axis=None, keepdims=None) -> np.ndarray:
        return x

    def combine(self, x: np.ndarray, axis=None, keepdims=None) -> np.ndarray:
        out = np.empty(1, dtype=object)
        out[0] = self.over(x)
        return out

    def aggregate(self, x: np.ndarray, axis=None, keepdims=None) -> np.ndarray:
        out = np.empty((), dtype=object)
        out[()] = self.over(x)
        return out


@dataclass(frozen=True)
class Finish:
    """The reduction's value after the step: the entry value combined with the blocks'
    (for ``+``/``*``), as a 0-d array of ``dtype``."""

    fold: Fold
    dtype: np.dtype

    def __call__(self, total: np.ndarray, entry: Any = None) -> np.ndarray:
        value = np.asarray(total, dtype=object)[()]
        if self.fold.op in ("+", "*"):
            entry = np.asarray(entry)[()] if isinstance(entry, np.ndarray) else entry
            value = self.fold.apply(entry, value)
        return np.asarray(value, dtype=self.dtype)
