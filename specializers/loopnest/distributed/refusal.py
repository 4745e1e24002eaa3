"""The errors of running kernels over Dask arrays, and the check ``kernel()`` makes.

``PartitionRefused``: ``on_dask`` cannot prove a nest partitionable (or the kernel does
something the Dask run cannot follow); it names the reason and the user's line.
``refuse_dask_arguments``: ``kernel()`` given a Dask array raises ``DaskArgumentError``,
pointing to ``on_dask``. It is meant for ``kernel()``'s slow path (a cold call, a signature
not seen before): a loop over the arguments and a type test each, Dask not imported.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from asp_core.errors import AspError


class PartitionRefused(AspError):
    """A nest (or the kernel's code around it) cannot run partitioned over Dask arrays."""


class DaskArgumentError(TypeError):
    """``kernel()`` was given a Dask collection: it runs on NumPy arrays; ``on_dask`` takes
    Dask arrays."""


def is_dask_collection(value: Any) -> bool:
    """A Dask collection (array, delayed, dataframe...), told without importing Dask."""
    kind = type(value)
    return kind.__module__.startswith("dask") and hasattr(kind, "__dask_graph__")


#: Types no Dask collection has: the common arguments skip the test (it runs on cold calls).
PLAIN_TYPES = frozenset({np.ndarray, int, float, bool, complex, str, type(None)})


def refuse_dask_arguments(args: Sequence[Any], kwargs: Mapping[str, Any] | None = None) -> None:
    """Raise ``DaskArgumentError`` if an argument of ``kernel()`` is a Dask collection."""
    plain = PLAIN_TYPES
    for position, value in enumerate(args):
        if type(value) not in plain and is_dask_collection(value):
            _refuse(f"argument {position + 1}", value)
    for name, value in (kwargs or {}).items():
        if is_dask_collection(value):
            _refuse(f"argument '{name}'", value)


def _refuse(which: str, value: Any) -> None:
    kind = type(value)
    raise DaskArgumentError(
        f"kernel() got a Dask collection ({kind.__module__}.{kind.__qualname__}) as its "
        f"{which}: kernel() runs on NumPy arrays in this process. Call "
        "k.on_dask(...) with the same arguments instead: it runs the kernel over the Dask "
        "arrays, partitioned, and returns a dict of lazy Dask arrays of what it writes")
