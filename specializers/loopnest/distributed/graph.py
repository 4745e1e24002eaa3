"""The Dask layers of one step of a partitioned nest (``partition.Step``).

For a step and the current Dask arrays and scalar values, on the client:

1. the partitioned arrays are cut alike (``blocks.boundaries``) from the one with the most
   chunks along its partitioned dimension (each block at least as long as the largest halo;
   a read-only array whose halo exceeds a quarter of it goes whole instead), rechunked to
   those blocks (whole in their other dimensions), and given their halos by
   ``dask.array.overlap.overlap`` (``boundary="none"``: no rows invented at the ends);
2. one ``dask.array.blockwise`` task per block runs ``worker.run_block`` on its rows, the
   whole arrays, and lazy scalars (0-d arrays);
3. each written array is one ``blockwise`` layer picking the block's rows from the tasks'
   results (chunks: the blocks); each reduction goes through ``dask.array.reduction``
   (``reductions``).

Nothing is computed: the results are lazy Dask arrays.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..rewrite import NO_VALUE
from .blocks import Block, block_table, boundaries, chunks_of
from .partition import ArrayPart, Step
from .reductions import Finish, Fold, identity, identity_of_dtype
from .refusal import is_dask_collection
from .subnest import Recipe, shape_name, shapes_read
from .worker import BlockCall, Options, partial, pick, run_block


@dataclass(frozen=True)
class StepLayout:
    """How a step was cut (for ``explain``)."""

    blocks: int
    cuts: tuple[int, ...]
    primary: str | None          # the array whose chunks gave the boundaries
    loop_range: tuple[int, int, int]
    whole: tuple[str, ...]       # read-only arrays sent whole because of their halos


@dataclass(frozen=True)
class StepResult:
    arrays: dict                 # written array -> new Dask array
    scalars: dict                # reduced scalar -> lazy 0-d Dask array
    layout: StepLayout


def build_step(step: Step, recipe: Recipe, sub, options: Options, arrays: dict[str, Any],
               env: dict[str, Any], loop_range: tuple[int, int, int], weak: set,
               types: dict[str, Any], analysis_nest, shapes: dict[str, tuple[int, ...]]
               ) -> StepResult:
    """The layers of ``step`` (see the module). ``sub``: the step's nest analysis
    (``subnest.step_analysis``); ``arrays``: name -> Dask array of every array it uses;
    ``env``: the values of the scalars (lazy ones as 0-d Dask arrays); ``weak``: the names of
    lazy scalars Python holds as int/float; ``types``: scalar -> ``typeinfer.Ty`` after the
    nest; ``analysis_nest``: the nest's DAST, and ``shapes`` its arrays' shapes (the step reads
    some of them)."""
    import dask.array as da

    parts = list(step.arrays)
    parts, whole = _demote(parts, arrays)
    partitioned = [p for p in parts if p.dim is not None]
    extents = {p.name: int(arrays[p.name].shape[p.dim]) for p in partitioned}
    primary = None
    cuts: tuple[int, ...] = ()
    if partitioned:
        primary = max(partitioned, key=lambda p: (arrays[p.name].numblocks[p.dim], p.written))
        min_size = max(max(p.halo) for p in partitioned)
        cuts = boundaries(arrays[primary.name].chunks[primary.dim], min(extents.values()),
                          min_size)
    table = block_table(cuts, loop_range, [(p.name, extents[p.name], p.halo)
                                           for p in partitioned])
    letters = iter(string.ascii_letters.replace("p", ""))
    args: list[Any] = []
    inputs: list[str] = []
    for part in parts:
        array = arrays[part.name]
        if part.dim is None:
            array = array.rechunk(-1)
            index = "".join(next(letters) for _ in range(array.ndim))
        else:
            array = array.rechunk({d: chunks_of(cuts, extents[part.name]) if d == part.dim
                                   else -1 for d in range(array.ndim)})
            if cuts and part.halo != (0, 0):
                depth = {d: (part.halo if d == part.dim else 0) for d in range(array.ndim)}
                array = da.overlap.overlap(array, depth=depth, boundary="none")
            index = "".join("p" if d == part.dim else next(letters) for d in range(array.ndim))
        args += [array, index]
        inputs.append(part.name)
    constants, weak_inputs, reductions = [], [], []
    starts = {}
    for reduction in step.reductions:
        entry = env.get(reduction.name, NO_VALUE)
        if is_dask_collection(entry):
            starts[reduction.name] = None if reduction.op in ("max", "min") else \
                identity_of_dtype(reduction.op, entry.dtype, reduction.name in weak)
        else:
            starts[reduction.name] = identity(reduction.op, entry)
        reductions.append((reduction.name, starts[reduction.name]))
    for array, dim in shapes_read(analysis_nest, step.root):
        constants.append((shape_name(array, dim), int(shapes[array][dim])))
    names = sub.names
    for name in names.invariants + names.outputs:
        value = env.get(name, NO_VALUE)
        if name in starts and starts[name] is not None:
            continue
        if name in names.outputs and name not in starts:
            continue   # private to the step's iterations: nothing to pass in
        if is_dask_collection(value):
            args += [value, ""]
            inputs.append(name)
            if name in weak:
                weak_inputs.append(name)
        elif value is not NO_VALUE:
            constants.append((name, value))
    written = tuple(p.name for p in partitioned if p.written)
    call = BlockCall(recipe, options, _table_shape(table), tuple((p.name, p.dim)
                                                                 for p in partitioned),
                     tuple(inputs), tuple(weak_inputs), tuple(constants), written,
                     tuple(reductions))
    index_blocks = np.empty(len(table.blocks), dtype=object)
    for k, block in enumerate(table.blocks):
        index_blocks[k] = block
    index = da.from_array(index_blocks, chunks=1)
    results = da.blockwise(_run, "p", index, "p", *args, call=call, dtype=object,
                           meta=np.empty((0,), dtype=object), concatenate=False,
                           align_arrays=False)
    new_arrays = {}
    for position, name in enumerate(written):
        part = next(p for p in partitioned if p.name == name)
        original = arrays[name]
        others = {}
        index_out = ""
        for d in range(original.ndim):
            if d == part.dim:
                index_out += "p"
            else:
                letter = next(letters)
                others[letter] = int(original.shape[d])
                index_out += letter
        new_arrays[name] = da.blockwise(
            pick, index_out, results, "p", position, None, new_axes=others,
            adjust_chunks={"p": chunks_of(cuts, extents[name])}, dtype=original.dtype,
            meta=np.empty((0,) * original.ndim, dtype=original.dtype), align_arrays=False)
    new_scalars = {}
    for offset, reduction in enumerate(step.reductions):
        fold = Fold(reduction.op, reduction.func, reduction.first)
        partials = da.blockwise(partial, "p", results, "p", len(written) + offset, None,
                                dtype=object, meta=np.empty((0,), dtype=object),
                                align_arrays=False)
        total = da.reduction(partials, fold.chunk, fold.aggregate, combine=fold.combine,
                             axis=0, keepdims=False, dtype=object, concatenate=True,
                             meta=np.empty((), dtype=object))
        ty = types[reduction.name]
        finish = Finish(fold, ty.dtype)
        entry = env.get(reduction.name)
        if reduction.op in ("max", "min"):
            new = da.blockwise(finish, "", total, "", dtype=ty.dtype,
                               meta=np.empty((), dtype=ty.dtype))
        elif is_dask_collection(entry):
            new = da.blockwise(finish, "", total, "", entry, "", dtype=ty.dtype,
                               meta=np.empty((), dtype=ty.dtype))
        else:
            new = da.blockwise(finish, "", total, "", entry, None, dtype=ty.dtype,
                               meta=np.empty((), dtype=ty.dtype))
        new_scalars[reduction.name] = new
    layout = StepLayout(len(table.blocks), cuts, primary.name if primary else None,
                        loop_range, tuple(whole))
    return StepResult(new_arrays, new_scalars, layout)


def _run(block: np.ndarray, *values: Any, call: BlockCall) -> tuple:
    """A block's task: its ``Block`` arrives as a 1-element object array, each array as its
    one chunk, in as many nested 1-element lists as it has dimensions other than the blocks'
    (``blockwise`` without ``concatenate``, which would copy each chunk)."""
    return run_block(np.asarray(block).ravel()[0], *map(_only_chunk, values), call=call)


def _only_chunk(value: Any) -> Any:
    while isinstance(value, list):
        (value,) = value
    return value


def _table_shape(table):
    """The table without its blocks (each task receives its own ``Block``)."""
    return type(table)(table.arrays, table.extents, table.cuts, ())


def _demote(parts: list[ArrayPart], arrays: dict[str, Any]
            ) -> tuple[list[ArrayPart], list[str]]:
    """Read-only arrays whose halo exceeds a quarter of their extent go whole (blocks at
    least as long as the halo would be a few at most)."""
    out, whole = [], []
    for p in parts:
        if p.dim is not None and not p.written and \
                4 * max(p.halo) > arrays[p.name].shape[p.dim]:
            out.append(ArrayPart(p.name, None, why_whole=f"its halo ({p.halo[0]} below, "
                                 f"{p.halo[1]} above) exceeds a quarter of the array"))
            whole.append(p.name)
        else:
            out.append(p)
    return out, whole


__all__ = ["Block", "StepLayout", "StepResult", "build_step"]
