"""Safety checks made before native code runs, once per binding.

* Arrays the nest writes must be writeable (Python would raise ValueError at the first write).
* Arrays that share memory must hold the same dtype (a typed view of other bytes is left to
  Python).
* Every subscript the analysis could not prove in range is tried at the corners of the
  iteration space (each loop at its first and last iteration; not inside a loop under a branch
  or one a ``break`` may end, which may never get there): if one is out of range there,
  Python would raise IndexError sooner or later, so the call raises it before any native
  write, naming the array, the subscript and the iteration. What the corners do not settle
  is checked inside the generated code when it runs.
"""

from __future__ import annotations

import itertools
from typing import Iterator

from asp_core.errors import UnsupportedArgument
from asp_core.signature import ArraySig

from .analysis.binding import CHECKED, BoundLoop, TForm
from .pretty import expression


def check_arrays(analysis, signature, bound) -> None:
    """Raise ``UnsupportedArgument`` for arrays compiled code must not touch."""
    names = analysis.names
    sigs = dict(zip(names.inputs, signature))
    written = {acc.array for st in analysis.access.statements for acc in st.accesses if acc.write}
    for name in sorted(written):
        sig = sigs[name]
        if isinstance(sig, ArraySig) and not sig.writeable:
            raise UnsupportedArgument(f"array '{name}' is read-only (Python raises ValueError)")
    for a, canonical in bound.canonical.items():
        if canonical != a and sigs[a].dtype != sigs[canonical].dtype:
            raise UnsupportedArgument(f"arrays '{a}' and '{canonical}' share memory with "
                                      "different dtypes")
    for pair in bound.overlapping:
        a, b = sorted(pair)
        if sigs[a].dtype != sigs[b].dtype:
            raise UnsupportedArgument(f"arrays '{a}' and '{b}' overlap with different dtypes")


def corner_index_error(analysis, plan, shapes: dict[str, tuple[int, ...]]) -> IndexError | None:
    """The IndexError Python would raise, if a corner of the iteration space shows one."""
    loops = plan.bound.loops
    for st in analysis.access.statements:
        stmt = analysis.statements[st.sid]
        if stmt.predicate or any(loops[l].t_max < 0 for l in st.loops):
            continue
        if any(analysis.access.loop(l).predicate or l in analysis.exit_loops
               for l in st.loops):
            continue   # it may never reach a corner: a branch, or a break before it
        for acc, bound in zip(st.accesses, plan.bound.accesses[st.sid]):
            for dim, (mode, form) in enumerate(zip(bound.modes, bound.raw)):
                if mode != CHECKED or form is None:
                    continue
                extent = shapes[acc.array][dim]
                for point in corners(st.loops, loops):
                    value = _evaluate(form, point)
                    if not -extent <= value < extent:
                        where = ", ".join(f"{loops[l].var}={_value_of(loops[l], point)}"
                                          for l in st.loops)
                        line = stmt.loc.line if stmt.loc else analysis.line
                        subscript = ", ".join(expression(i) for i in acc.index)
                        return IndexError(
                            f"index {value} is out of bounds for axis {dim} with size {extent}: "
                            f"{acc.array}[{subscript}] at {where} (line {line})")
    return None


def corners(chain: tuple[int, ...], loops: dict[int, BoundLoop]) -> Iterator[dict[int, int]]:
    """Iteration vectors (normalized t per loop) with every loop at its first or last
    iteration, where that loop runs."""
    def extend(k: int, point: dict[int, int]):
        if k == len(chain):
            yield dict(point)
            return
        loop = loops[chain[k]]
        extent = _evaluate(loop.extent, point)
        if extent <= 0:
            return
        last = -(-extent // abs(loop.step)) - 1
        for t in sorted({0, last}):
            point[chain[k]] = t
            yield from extend(k + 1, point)
        point.pop(chain[k], None)

    yield from itertools.islice(extend(0, {}), 4096)


def _evaluate(form: TForm, point: dict[int, int]) -> int:
    return form.const + sum(c * point[lid] for lid, c in form.coeffs)


def _value_of(loop: BoundLoop, point: dict[int, int]) -> int:
    return _evaluate(loop.start, point) + loop.step * point[loop.lid]
