"""Running a loop-nest kernel over Dask arrays, partitioned by what the analysis proves.

``LoopKernel.on_dask(*args, **kwargs)`` calls ``on_dask`` here: the kernel's Python code runs
once, on stand-ins for the Dask arrays (``handles``); each top-level nest is partitioned along
one loop (``partition``, a pure function of the nest's analysis) and becomes Dask graph layers
(``dask_run``): halos through ``dask.array.overlap``, one task per block running the nest
restricted to the block (``subnest``, ``worker``), reductions through
``dask.array.reduction``. A nest that cannot be proven partitionable raises
``PartitionRefused`` naming the reason and the line, or, inside ``allow_one_machine()``, the
whole kernel runs in one task on one worker (``fallback``). ``explain_dask`` reports the
partitioning (``explain``).

Nothing here imports Dask until a function needs it: ``refuse_dask_arguments`` (``refusal``)
is called by ``kernel()``'s slow path and must stay cheap.
"""

from __future__ import annotations

from typing import Any

from .refusal import DaskArgumentError, PartitionRefused, refuse_dask_arguments


def on_dask(kernel: Any, args: tuple, kwargs: dict) -> "dict[str, Any]":
    """Run ``kernel.kernel(*args, **kwargs)`` over Dask arrays (see ``dask_run.on_dask``)."""
    from .dask_run import on_dask as run

    return run(kernel, args, kwargs)


def explain_dask(kernel: Any, args: tuple, kwargs: dict):
    """The report of how ``kernel.on_dask(*args, **kwargs)`` partitions each nest (a
    ``Report``; nothing is computed)."""
    from .dask_run import explain_dask as explain

    return explain(kernel, args, kwargs)


def allow_one_machine():
    """A context manager: inside it, a kernel ``on_dask`` cannot partition runs whole, in one
    task on one worker, when the result is computed (see ``fallback``)."""
    from .fallback import allow_one_machine as allow

    return allow()


__all__ = ["DaskArgumentError", "PartitionRefused", "allow_one_machine", "explain_dask",
           "on_dask", "refuse_dask_arguments"]
