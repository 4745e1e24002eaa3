"""Kernels that are one loop nest: their calls hand the nest its inputs straight from the
arguments.

Most kernels are a single nest and nothing else (``for i in range(n): c[i] = a[i] + b[i]``).
A call of such a kernel through the rewritten method builds the frame's ``locals()``
dictionary, enters the nest's hook, finds the kernel's state and the nest's runner again, and
reads the inputs out of the dictionary: four Python frames and a dictionary per call, a third
of a warm call of a tiny kernel. For a method whose body is exactly one top-level nest (a
docstring aside), ``whole_nest`` makes a function with the method's own parameters that
returns the nest's inputs (``pick``), read as the nest's gather reads them (parameters,
attributes of ``self``, globals, closure cells); the dispatcher then calls the nest's runner
with them directly (``kernel._dispatching_kernel``).

Nothing the method's original code would do differs: the nest's outputs (scalars and loop
variables it leaves bound) are dead, since the method ends with the nest and returns None; a
nest that returns (``return`` inside it) has no lane; and wherever the runner asks for the
original code (``RUN_ORIGINAL``), the original method runs whole, timed for the cost model as
the rewritten method times its nest. A call the lane cannot take as it stands (keyword
arguments, another number of positional ones, an input that cannot be read:
``LANE_MISSES``) goes through the rewritten method as before.
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass
from typing import Any, Callable

from asp_core.pysource import returning

from .rewrite import NO_VALUE

_IDS = itertools.count()
#: The pick function's own parameters after the method's (names no method parameter has).
_GLOBALS, _CELLS, _UNBOUND = "__asp_globals", "__asp_cells", "__asp_unbound"

#: What reading an input may raise where the method's own code would raise it (or fall back):
#: the call then goes through the rewritten method, which handles it.
LANE_MISSES = (KeyError, AttributeError, ValueError, NameError)


@dataclass(frozen=True)
class WholeNest:
    """The lane of a kernel method that is one nest: ``pick(self, *args)`` returns the
    nest's inputs for a call of exactly ``arity`` positional arguments (``self`` included)."""

    pick: Callable[..., tuple]
    arity: int


def whole_nest(source, analysis) -> WholeNest | None:
    """The lane of the kernel whose source is ``source`` (``frontend.KernelSource``) and
    whose only nest's analysis is ``analysis``, or None where the method is not one nest
    the lane can take (see the module)."""
    tree = source.fa.tree
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]   # the docstring
    if len(source.nests) != 1 or len(body) != 1 or body[0] is not source.nests[0] or \
            source.ctx.self_name is None:
        return None
    if any(isinstance(n, ast.Return) for n in ast.walk(body[0])):
        return None
    args = tree.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        return None
    params = [a.arg for a in args.args]
    items = _reads(source.ctx, analysis, set(params))
    if items is None:
        return None
    name = f"pick_{next(_IDS)}"
    namespace: dict[str, Any] = {}
    exec(compile(returning(name, params + [_GLOBALS, _CELLS, _UNBOUND], items),  # noqa: S102
                 f"<asp pick {name}>", "exec"), namespace)
    pick = namespace[name]
    func = source.fa.func
    cells = dict(zip(func.__code__.co_freevars, func.__closure__ or ()))
    pick.__defaults__ = (func.__globals__, cells, NO_VALUE)
    return WholeNest(pick, len(params))


def _reads(ctx, analysis, params: set[str]) -> list[str] | None:
    """The expression reading each of the nest's inputs at the method's start (as the
    nest's gather, ``runtime.gather_source``, reads it from the frame's locals), or None
    where one is a local variable the method's start cannot have bound."""
    freevars = ctx.fa.func.__code__.co_freevars
    names = analysis.names
    items = []
    for input_name in names.inputs:
        base, _, attr = input_name.partition(".")
        if names.kernel_name(input_name) != input_name:
            items.append(_UNBOUND)   # a loop variable's last value: unbound at the start
        elif base in ctx.local_names:
            if base in params:
                items.append(f"{base}.{attr}" if attr else base)
            elif input_name in names.outputs and input_name not in analysis.required \
                    and not attr:
                items.append(_UNBOUND)   # assigned by the nest before any read
            else:
                return None
        elif base in freevars:
            items.append(f"{_CELLS}[{base!r}].cell_contents" + (f".{attr}" if attr else ""))
        else:
            items.append(f"{_GLOBALS}[{base!r}]" + (f".{attr}" if attr else ""))
    return items
