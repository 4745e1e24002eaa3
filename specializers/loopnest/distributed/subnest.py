"""The nest one block runs: a step of a partitioned nest, restricted to the block's rows.

From the analysed nest (``pipeline.NestAnalysis``: its if-converted DAST) and a step of its
partition (``partition.Step``), ``step_nest`` makes a new DAST nest whose root is the step's
loop, in which

* the partitioned loop runs ``range(__asp_dk_lo, __asp_dk_hi, step)``: the block's values of
  it, in the original order (the client computes them per block);
* every subscript of a partitioned array in its partitioned dimension has the block's first
  row subtracted (``A[i - 1, j]`` becomes ``A[i - 1 - __asp_dk_o_A, j]``): the block holds
  the array's rows from that one on, halo included;
* ``A.shape[d]`` reads ``__asp_dk_s{d}_A``: the whole array's extent, given by the client (a
  block holds part of it; an array the step reads only the shape of is not sent at all);
* the variables of unrolled loops around the step are loop-invariant values.

``step_analysis`` runs the static passes the pipeline runs after lowering (names, accesses,
scalar classes) on it, so the block runs through the ordinary specializer: its own dependence
analysis, the cost model's choice for the block's size, code generation, the disk cache.
Loops and statements are renumbered from 0, as the passes expect. Pure, memoized per recipe.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable

from .. import dast as d
from ..access import access_info
from ..names import nest_names
from ..pipeline import NestAnalysis, array_ranks
from ..scalars import classify_scalars, exposed
from .locate import KernelRef

LO, HI = "__asp_dk_lo", "__asp_dk_hi"


def offset_name(array: str) -> str:
    """The invariant holding the global index of a block's first row of ``array``."""
    return "__asp_dk_o_" + array


def shape_name(array: str, dim: int) -> str:
    """The invariant holding ``array.shape[dim]`` (of the whole array)."""
    return f"__asp_dk_s{dim}_" + array.replace(".", "__")


def shapes_read(nest: d.Nest, root: int) -> tuple[tuple[str, int], ...]:
    """The (array, dimension) pairs whose extents loop ``root`` of ``nest`` reads."""
    found = next(n for n in d.loops(nest.loop) if n.lid == root)
    return tuple(sorted({(n.array, n.dim) for n in found.walk() if isinstance(n, d.Shape)}))


def step_nest(nest: d.Nest, root: int, loop: int, parts: tuple[tuple[str, int], ...]) -> d.Nest:
    """The DAST a block runs (see the module); ``parts``: (array, partitioned dimension)."""
    found = next(n for n in d.loops(nest.loop) if n.lid == root)
    dims = dict(parts)

    def expr(node: d.Expr) -> d.Expr:
        if isinstance(node, d.ArrayRef):
            index = tuple(expr(i) for i in node.index)
            dim = dims.get(node.array)
            if dim is not None:
                shifted = d.BinOp("-", index[dim], d.Var(offset_name(node.array), loc=node.loc),
                                  loc=index[dim].loc)
                index = index[:dim] + (shifted,) + index[dim + 1:]
            return node.replace(index=index)
        if isinstance(node, d.Shape):
            return d.Var(shape_name(node.array, node.dim), loc=node.loc)
        return _map_children(node, expr)

    lids = {n.lid: k for k, n in enumerate(sorted(d.loops(found), key=lambda n: n.lid))}
    sids = {s.sid: k for k, s in enumerate(sorted(d.statements(found), key=lambda s: s.sid))}

    def stmt(node: d.Stmt) -> d.Stmt:
        if isinstance(node, d.Loop):
            start, stop = expr(node.start), expr(node.stop)
            if node.lid == loop:
                start, stop = d.Var(LO, loc=node.loc), d.Var(HI, loc=node.loc)
            return node.replace(start=start, stop=stop, step=expr(node.step),
                                body=tuple(stmt(s) for s in node.body), lid=lids[node.lid])
        assert isinstance(node, d.Assign), node
        target = expr(node.target) if isinstance(node.target, d.ArrayRef) else node.target
        return node.replace(target=target, value=expr(node.value), sid=sids[node.sid])

    return d.Nest(nest.index, stmt(found), nest.reordered, loc=nest.loc)


def _map_children(node: d.Node, change: Callable[[d.Expr], d.Expr]) -> d.Node:
    changes = {}
    for name, value in node.fields():
        if isinstance(value, d.Expr):
            changes[name] = change(value)
        elif isinstance(value, tuple) and any(isinstance(v, d.Expr) for v in value):
            changes[name] = tuple(change(v) if isinstance(v, d.Expr) else v for v in value)
    return node.replace(**changes) if changes else node


def sub_analysis(analysis: NestAnalysis, nest: d.Nest, live: frozenset[str]) -> NestAnalysis:
    """The static analysis of ``nest`` (a step of ``analysis``), as ``pipeline.analyse_nest``
    makes it after lowering; ``live``: the scalars read after the step (raises
    ``UnsupportedConstruct`` where a pass does)."""
    names = nest_names(nest)
    access = access_info(nest, names)
    live = frozenset(live) - set(names.loop_vars)
    scalars = classify_scalars(nest, names, live)
    ranks = array_ranks(access)
    required = tuple(s for s in names.scalars if exposed(s, (nest.loop,)))
    return NestAnalysis(analysis.index, analysis.node, nest, names, access, scalars, required,
                        ranks, live, analysis.guarded, analysis.methods)


@dataclasses.dataclass(frozen=True)
class Recipe:
    """What identifies the nest a block runs: picklable, sent to the workers, which make the
    same ``step_analysis`` from it (``locate``: the kernel's class, found by name)."""

    kernel: KernelRef
    nest: int
    root: int
    loop: int
    parts: tuple[tuple[str, int], ...]
    live: frozenset[str]


def nest_analysis(ref: KernelRef, index: int):
    """The analysis of nest ``index`` of the kernel of ``ref``'s class, as ``kernel`` makes
    it for an instance of that class (a ``NestAnalysis`` or a ``pipeline.RejectedNest``), and
    the kernel's context."""
    from .. import pipeline
    from ..kernel import _for_instance, _original_of

    kernel_class = ref.resolve()
    kernel = pipeline.analyse_kernel(_original_of(kernel_class))
    return _for_instance(kernel.nests[index], kernel_class), kernel.source.ctx


@functools.lru_cache(maxsize=64)
def step_analysis(recipe: Recipe) -> NestAnalysis:
    """The analysis of the nest a block of ``recipe``'s step runs (memoized per process)."""
    analysis, _ = nest_analysis(recipe.kernel, recipe.nest)
    nest = step_nest(analysis.nest, recipe.root, recipe.loop, recipe.parts)
    return sub_analysis(analysis, nest, recipe.live)


def clear_cache() -> None:
    step_analysis.cache_clear()
