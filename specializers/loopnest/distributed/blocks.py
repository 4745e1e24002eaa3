"""Blocks of a step: their boundaries, the partitioned loop's values in each, and where each
block's rows of each array start. Integer arithmetic only (no Dask), on the client.

Boundaries ``b_1 < ... < b_{K-1}`` cut the partitioned dimension of every partitioned array
alike: block ``k`` owns rows ``[b_k, b_{k+1})`` (``b_0 = 0``, and the last block owns the rest
of each array, whatever its extent) and runs the iterations whose loop value lies there (the
first block also those below 0, the last those beyond). Each block receives its rows plus the
halo (fewer at the array's ends: Dask's ``overlap`` with ``boundary="none"``), so its local
row 0 is the global row ``b_k - halo_low`` (0 for the first block).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


def boundaries(chunks: Sequence[int], limit: int, min_size: int) -> tuple[int, ...]:
    """Inner boundaries from an array's chunk sizes along its partitioned dimension: each
    block at least ``min_size`` rows (a halo comes from one neighbour), the last block's rows
    of the shortest array (``limit`` rows) too; chunks smaller than that are merged."""
    cuts, total, previous = [], 0, 0
    min_size = max(1, min_size)
    for size in list(chunks)[:-1]:
        total += size
        if total - previous >= min_size and limit - total >= min_size:
            cuts.append(total)
            previous = total
    return tuple(cuts)


def chunks_of(cuts: tuple[int, ...], extent: int) -> tuple[int, ...]:
    """The chunk sizes of an array of ``extent`` rows cut at ``cuts``."""
    edges = (0,) + cuts + (extent,)
    return tuple(b - a for a, b in zip(edges, edges[1:]))


def sub_range(start: int, stop: int, step: int, low: int | None, high: int | None
              ) -> tuple[int, int]:
    """``(first, stop)`` such that ``range(first, stop, step)`` is ``range(start, stop,
    step)``'s values ``v`` with ``low <= v < high`` (None: unbounded), in the same order."""
    values = range(start, stop, step)
    n = len(values)
    if step > 0:
        begin = 0 if low is None else min(n, max(0, -(-(low - start) // step)))
        end = n if high is None else min(n, max(0, -(-(high - start) // step)))
    else:
        begin = 0 if high is None else min(n, max(0, (start - high) // -step + 1))
        end = n if low is None else min(n, max(0, (start - low) // -step + 1))
    if begin >= end:
        return start, start
    picked = values[begin:end]
    return picked.start, picked.stop


@dataclass(frozen=True)
class Block:
    """Block ``index``: the loop's values (``range(first, stop, step)``), and per partitioned
    array its first row, rows held and rows owned (local ``[own_start, own_stop)``)."""

    index: int
    first: int
    stop: int
    origin: tuple[int, ...]      # global index of local row 0, per partitioned array
    held: tuple[int, ...]        # rows the block holds, halo included
    own: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class BlockTable:
    arrays: tuple[str, ...]        # the partitioned arrays, in the order of the tuples above
    extents: tuple[int, ...]       # their extents in their partitioned dimensions
    cuts: tuple[int, ...]
    blocks: tuple[Block, ...]


def block_table(cuts: tuple[int, ...], loop: tuple[int, int, int],
                arrays: Sequence[tuple[str, int, tuple[int, int]]]) -> BlockTable:
    """The blocks for ``cuts``: ``loop`` is the partitioned loop's (start, stop, step);
    ``arrays``: (name, extent, (halo below, halo above)) per partitioned array."""
    edges = (None,) + cuts + (None,)
    blocks = []
    for k in range(len(cuts) + 1):
        low, high = edges[k], edges[k + 1]
        first, stop = sub_range(*loop, low, high)
        origin, held, own = [], [], []
        for _, extent, (below, above) in arrays:
            row0 = 0 if low is None else low - below
            end = extent if high is None else min(extent, high + above)
            origin.append(row0)
            held.append(end - row0)
            own_stop = extent if high is None else high
            own.append(((low or 0) - row0, own_stop - row0))
        blocks.append(Block(k, first, stop, tuple(origin), tuple(held), tuple(own)))
    return BlockTable(tuple(a[0] for a in arrays), tuple(a[1] for a in arrays), cuts,
                      tuple(blocks))
