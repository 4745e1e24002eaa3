"""Sibling loops of a host loop fused into one device kernel, where the dependences allow it.

A time loop around two sweeps (``for t: for i: b[i] = f(a[i]); for i: c[i] = g(b[i])``) is run
by the host, a kernel per sweep per iteration (``codegen.device_layout``). Where the second
sweep reads only what the first wrote at the same ``i`` (and nothing else ties them), one
kernel can run both: each thread runs the first loop's body, then the second's, for its
``i``. Fewer launches, and the second body finds the first's values in registers or cache.

``fuse(siblings, ...)`` fuses consecutive siblings ``A``, ``B`` (pure: schedule nodes in, nodes
out) when all of these hold:

* the two heads of band (the loops a grid would map) have the same depth and, at this call's
  binding, the same bounds (start, extent, step and trip count as functions of the enclosing
  loops, ``B``'s loops renamed to ``A``'s): each thread then has the same iteration in both.
  Where ``B``'s loops have other names (``for i`` then ``for j``), the kernel binds each to
  ``A``'s (``const int64_t j = i;``: ``codegen.device``), so that the names in ``B``'s body
  mean what they meant; ``A`` must not use those names itself;
* no scalar crosses: none that one assigns is read free by the other (a temporary of ``A``
  read in ``B`` would see ``A``'s value at the same ``i``, not at the last ``i``);
* every pair of accesses to one array, one in each (a write among them), tested by the
  dependence test of ``analysis.dependence`` with ``B``'s band loops renamed to ``A``'s, may
  meet only at the same band iteration (direction ``=`` on every band loop) whenever the host
  loops' iterations may be the same; a pair that may meet at different band iterations would
  run in another order once fused (or, were the fused loop still parallel, race), so it
  keeps the two kernels. Arrays that may overlap in memory never fuse; nor do bound accesses
  the test cannot read (an unknown subscript answers ``*``: a dependence).

The fused node keeps ``A``'s loops (and lids) with ``B``'s innermost band body appended to
``A``'s; the cost model and the code generator read it as any grid kernel's node.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

from ..analysis.binding import BoundAccess, BoundNest, TForm, tform
from ..analysis.dependence import test_pair
from ..analysis.tests import EQ
from ..schedule.tree import SLoop, statement_ids

#: Enclosing-loop directions under which two accesses may meet in one host iteration.
_SAME_HOST = ("=", "*")


def fuse(siblings: Sequence[SLoop], band_of: Callable[[SLoop], tuple], access, bound: BoundNest,
         scalar_uses: Callable[[tuple], tuple[set[str], set[str]]],
         host_chain: tuple[int, ...]) -> list[tuple[SLoop, tuple]]:
    """``siblings`` (the grid nodes of one host loop, in order) with consecutive fusible ones
    fused: (node, band) per kernel. ``band_of(node)``: a node's band of loops; ``access``:
    the nest's ``AccessInfo``; ``scalar_uses(nodes)``: (free, assigned) scalar names;
    ``host_chain``: the lids of the loops around the siblings, outermost first."""
    out: list[tuple[SLoop, tuple]] = []
    members: list[list[SLoop]] = []
    for node in siblings:
        band = band_of(node)
        if out and _fusible(members[-1], out[-1][1], node, band, access, bound, scalar_uses,
                            host_chain):
            out[-1] = (_merge(out[-1][0], node, len(band)), out[-1][1])
            members[-1].append(node)
        else:
            out.append((node, band))
            members.append([node])
    return out


def _fusible(group: list[SLoop], band_a: tuple, b: SLoop, band_b: tuple, access,
             bound: BoundNest, scalar_uses, host_chain: tuple[int, ...]) -> bool:
    rename = _renaming(band_a, band_b, bound)
    if rename is None:
        return False
    free_a, assigned_a = scalar_uses(tuple(group))
    free_b, assigned_b = scalar_uses((b,))
    band_vars = {loop.var for loop in band_a}
    if (assigned_a & free_b) - band_vars or (assigned_b & free_a) - band_vars:
        return False
    if any(lb.var != la.var and lb.var in free_a | assigned_a
           for la, lb in zip(band_a, band_b)):
        return False   # (B's loop's name, bound to A's in the kernel, would mean something
        # in A; the subset refuses such a nest today: a loop variable assigned elsewhere)
    common = host_chain + tuple(loop.lid for loop in band_a)
    band_at = range(len(host_chain), len(common))
    first = [sid for node in group for sid in statement_ids(node)]
    for s1 in first:
        for s2 in statement_ids(b):
            for f in bound.accesses[s1]:
                for g in bound.accesses[s2]:
                    if not (f.write or g.write):
                        continue
                    if f.array != g.array:
                        if frozenset((f.array, g.array)) in bound.overlapping:
                            return False   # (the device refuses such arrays anyway)
                        continue           # distinct arrays, apart in memory
                    loops1 = access.statements[s1].loops
                    loops2 = tuple(rename.get(lid, lid) for lid in access.statements[s2].loops)
                    result = test_pair(f, _renamed(g, rename), loops1, loops2, common,
                                       bound.loops)
                    for vector in result.vectors:
                        if all(vector[k] in _SAME_HOST for k in range(len(host_chain))) and \
                                any(vector[k] != EQ for k in band_at):
                            return False
    return True


def _renaming(band_a: tuple, band_b: tuple, bound: BoundNest) -> dict[int, int] | None:
    """B's band lids -> A's where the bands match (same depth, bounds at this binding, B's in
    terms of A's loops), else None."""
    if len(band_a) != len(band_b):
        return None
    rename: dict[int, int] = {}
    for la, lb in zip(band_a, band_b):
        rename[lb.lid] = la.lid
        a, b = bound.loops[la.lid], bound.loops[lb.lid]
        # (at the same depth: the kernel binds B's loop to the band loop of its depth, and a
        # band that device_order reordered pairs with one reordered alike)
        if (a.depth, a.step, a.t_max, a.wide) != (b.depth, b.step, b.t_max, b.wide) or \
                a.start != _rename_form(b.start, rename) or \
                a.extent != _rename_form(b.extent, rename):
            return None
    return rename


def _rename_form(form: TForm | None, rename: dict[int, int]) -> TForm | None:
    if form is None:
        return None
    coeffs: dict[int, int] = {}
    for lid, c in form.coeffs:
        target = rename.get(lid, lid)
        coeffs[target] = coeffs.get(target, 0) + c
    return tform(coeffs, form.const)


def _renamed(access: BoundAccess, rename: dict[int, int]) -> BoundAccess:
    return dataclasses.replace(
        access, dims=tuple(_rename_form(d, rename) for d in access.dims),
        raw=tuple(_rename_form(d, rename) for d in access.raw))


def _merge(a: SLoop, b: SLoop, depth: int) -> SLoop:
    """``a`` with ``b``'s body appended at band depth ``depth`` (their bands match)."""
    if depth == 1:
        return dataclasses.replace(a, body=a.body + b.body,
                                   private=tuple(dict.fromkeys(a.private + b.private)))
    return dataclasses.replace(a, body=(_merge(a.body[0], b.body[0], depth - 1),))
