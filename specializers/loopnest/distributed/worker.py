"""What a Dask task runs for one block, on a worker: the step's nest on NumPy blocks.

``run_block`` receives the block's index and its arrays (its rows of each partitioned array,
halo included; whole arrays; lazy scalars as 0-d arrays) and a ``BlockCall`` (the same for
every block of a step). It runs the nest of ``subnest.step_analysis`` through a
``runtime.NestRunner``, so the block runs the variant the cost model chooses for the block's
size (or the kernel's forced backend), built once per process and found in the disk cache by
the other workers; ``strict=True`` raises instead of falling back. Before that it checks that
the block's subscripts of its partitioned arrays are proven within the rows it holds (a wrong
partition raises ``RuntimeError`` rather than reading the wrong row or wrapping around). It
returns the rows the block owns of each array it writes, then each reduction's partial result.

Per process and thread it keeps the runners (``RUNNERS``, with ``clear()``): a runner holds
the cost model's state, which is not shared between threads.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np


from ..analysis.binding import DIRECT
from ..rewrite import NO_VALUE, RUN_ORIGINAL
from .blocks import Block, BlockTable
from .subnest import HI, LO, Recipe, offset_name, step_analysis


@dataclass(frozen=True)
class Options:
    """The kernel instance's settings the blocks' runners take."""

    backend: str | None = None
    strict: bool = False
    num_threads: int | None = None
    exact_errors: bool | None = None
    exact_reductions: bool | None = None


@dataclass(frozen=True)
class BlockCall:
    """Everything the blocks of one step share."""

    recipe: Recipe
    options: Options
    table: BlockTable                      # without its blocks: each task gets its own
    dims: tuple[tuple[str, int], ...]      # partitioned arrays and their dimensions
    inputs: tuple[str, ...]                # names of the task's arguments after the index
    weak: tuple[str, ...]                  # lazy scalars that Python holds as int/float
    constants: tuple[tuple[str, Any], ...]  # every other input of the nest, by name
    written: tuple[str, ...]               # arrays returned, in order
    reductions: tuple[tuple[str, Any], ...]  # (scalar, its value at the block's start or None)


class _Runners:
    """Runner and Python executor per (recipe, options, thread); blocks run per process."""

    def __init__(self):
        self._found: dict = {}
        self._lock = threading.Lock()
        self.blocks = 0
        self.ran: dict[str, int] = {}   # variant label -> blocks it ran

    def get(self, recipe: Recipe, options: Options):
        key = (recipe, options, threading.get_ident())
        found = self._found.get(key)
        if found is None:
            with self._lock:
                found = self._found.get(key)
                if found is None:
                    found = self._found[key] = _make_runner(recipe, options)
        return found

    def count(self, label: str) -> None:
        with self._lock:
            self.blocks += 1
            self.ran[label] = self.ran.get(label, 0) + 1

    def clear(self) -> None:
        with self._lock:
            self._found.clear()
            self.blocks = 0
            self.ran.clear()

    def stats(self) -> dict:
        return {"runners": len(self._found), "blocks": self.blocks, "ran": dict(self.ran)}


RUNNERS = _Runners()


def _make_runner(recipe: Recipe, options: Options):
    from ..kernel import instance_config
    from ..runtime import NestRunner
    from .subnest import nest_analysis

    analysis = step_analysis(recipe)
    _, ctx = nest_analysis(recipe.kernel, recipe.nest)
    config = instance_config(options.num_threads, options.exact_errors,
                             options.exact_reductions)
    runner = NestRunner(analysis, ctx, backend=options.backend, strict=options.strict,
                        config=config)
    return analysis, runner, []


def run_block(block: Block, *values: Any, call: BlockCall) -> tuple:
    """Run ``block`` of ``call``'s step on ``values`` (see the module)."""
    k = block.index
    analysis, runner, executor = RUNNERS.get(call.recipe, call.options)
    env: dict[str, Any] = dict(call.constants)
    written = {acc.array for st in analysis.access.statements for acc in st.accesses
               if acc.write}
    dims = dict(call.dims)
    position = {name: j for j, name in enumerate(call.table.arrays)}
    for name, value in zip(call.inputs, values):
        if name in analysis.names.arrays:
            value = np.asarray(value)
            if name in written:
                value = np.array(value, order="C", copy=True)
            if name in dims:
                j = position[name]
                if value.shape[dims[name]] != block.held[j]:
                    raise RuntimeError(
                        f"asp on_dask: block {k} of '{name}' holds {value.shape[dims[name]]} "
                        f"rows where the partition expected {block.held[j]} (a bug)")
        else:
            value = np.asarray(value)[()]
            if name in call.weak:
                value = value.item()
        env[name] = value
    env[LO], env[HI] = block.first, block.stop
    for name, j in position.items():
        env[offset_name(name)] = block.origin[j]
    for name, start in call.reductions:
        if start is not None:
            env[name] = start
    inputs = tuple(env.get(name, NO_VALUE) for name in analysis.names.inputs)
    _check_rows(analysis, runner, inputs, dims, k)
    outputs = runner(*inputs)
    estimate = runner.last_estimate
    label = estimate.label if estimate is not None else runner.last_call.backend
    if outputs is RUN_ORIGINAL:
        if not executor:
            from ..runtime import python_executor

            executor.append(python_executor(analysis, analysis.sequential,
                                            f"{runner.name} (block)"))
        outputs = executor[0](*inputs)
    RUNNERS.count(label)
    left = dict(zip(analysis.names.outputs, outputs))
    result = []
    for name in call.written:
        j = position[name]
        start, stop = block.own[j]
        rows = [slice(None)] * env[name].ndim
        rows[dims[name]] = slice(start, stop)
        result.append(env[name][tuple(rows)])
    for name, _ in call.reductions:
        result.append(left[name])
    return tuple(result)


def _check_rows(analysis, runner, inputs: tuple, dims: dict[str, int], k: int) -> None:
    """Every subscript of a partitioned array, in its partitioned dimension, is proven within
    the rows the block holds (statements that never run aside)."""
    key = analysis.binder.key(inputs, runner.config.exact_reductions)
    bound = analysis.plan(key).bound
    for st in analysis.access.statements:
        if any(bound.loops[lid].t_max < 0 for lid in st.loops):
            continue
        for acc, mode in zip(st.accesses, bound.accesses[st.sid]):
            dim = dims.get(acc.array)
            if dim is not None and mode.modes[dim] != DIRECT:
                raise RuntimeError(f"asp on_dask: block {k} may read '{acc.array}' outside the "
                                   "rows it holds (a bug in the partition)")


def pick(result: tuple, position: int) -> Any:
    """Element ``position`` of a block's result (one written array's rows)."""
    return result[position]


def partial(result: tuple, position: int) -> np.ndarray:
    """A reduction's partial result of one block, as a 1-element object array."""
    out = np.empty(1, dtype=object)
    out[0] = result[position]
    return out


def stats() -> dict:
    """This process's runners and blocks run (``client.run(stats)`` on every worker)."""
    return RUNNERS.stats()
