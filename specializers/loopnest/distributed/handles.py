"""Stand-ins the kernel's own Python code runs on during ``on_dask``.

``ArrayHandle`` takes the place of each array argument: the code around the nests sees its
``shape``, ``dtype``, ``ndim``, ``size`` and ``len()``; a nest that writes it replaces the
lazy Dask array it holds (``array``). Anything else (reading an element, NumPy functions,
slicing) raises ``PartitionRefused`` naming the kernel's line: that code would run on the
client, element by element, and is not what ``on_dask`` runs.

``standin`` makes a NumPy array of a handle's shape and dtype that takes no memory (every
stride 0): the analysis of a nest's binding (bounds, shapes, types) reads only that.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from asp_core.errors import SourceLocation

from .refusal import PartitionRefused


def standin(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An array of ``shape`` and ``dtype`` backed by one element (all strides 0)."""
    return np.lib.stride_tricks.as_strided(np.zeros(1, dtype=dtype), shape=tuple(shape),
                                           strides=(0,) * len(shape), writeable=True)


class ArrayHandle:
    """An array argument of ``on_dask``: the Dask array it holds now, and the parameter it
    came through (the key of the result)."""

    __slots__ = ("param", "array", "original", "written", "kernel_code", "_standin")

    def __init__(self, param: str, array: Any, kernel_code: Any = None):
        self.param = param
        self.array = array
        self.original = array
        self.written = False
        self.kernel_code = kernel_code
        self._standin = None

    # -- what the kernel's code may read ------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(n) for n in self.array.shape)

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    @property
    def ndim(self) -> int:
        return self.array.ndim

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"<on_dask array '{self.param}': {self.array!r}>"

    def standin(self) -> np.ndarray:
        """A memoryless NumPy array of this shape and dtype (one per handle: two parameters
        given the same handle are the same array to the analysis)."""
        if self._standin is None or self._standin.shape != self.shape or \
                self._standin.dtype != self.dtype:
            self._standin = standin(self.shape, self.dtype)
        return self._standin

    def replace(self, array: Any) -> None:
        """A nest wrote the array: it holds ``array`` from now on."""
        self.array = array
        self.written = True

    # -- what it may not ----------------------------------------------------------------------

    def _refuse(self, what: str):
        raise PartitionRefused(
            f"on_dask: the kernel's code outside its loop nests {what} '{self.param}', a Dask "
            "array: only its shape, dtype, ndim, size and len() are available there (element "
            "reads and writes belong in a loop nest)", _kernel_line(self.kernel_code))

    def __getitem__(self, key):
        self._refuse("reads an element or slice of")

    def __setitem__(self, key, value):
        self._refuse("writes an element or slice of")

    def __iter__(self):
        self._refuse("iterates over")

    def __array__(self, *args, **kwargs):
        self._refuse("makes a NumPy array of")

    def __array_function__(self, func, types, args, kwargs):
        self._refuse(f"calls numpy.{getattr(func, '__name__', func)} on")

    def __array_ufunc__(self, ufunc, method, *args, **kwargs):
        self._refuse(f"applies numpy.{ufunc.__name__} to")

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        self._refuse(f"reads .{name} of")

    def __bool__(self):
        self._refuse("tests the truth of")

    def _arith(self, *_):
        self._refuse("computes with")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _arith
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __pow__ = __neg__ = _arith
    __lt__ = __le__ = __gt__ = __ge__ = _arith


def _kernel_line(code: Any) -> SourceLocation | None:
    """Where the kernel's code is now: the innermost frame running ``code``."""
    if code is None:
        return None
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == code.co_filename and \
                frame.f_code.co_name == code.co_name:
            return SourceLocation(frame.f_code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return None
