"""Kernels that are one loop nest: their calls hand the nest its inputs straight from the
arguments.

Most kernels are a single nest and little else (``for i in range(n): c[i] = a[i] + b[i]``;
``s = 0.0``, a loop summing into ``s``, ``return s``). A call of such a kernel through the
rewritten method builds the frame's ``locals()`` dictionary, enters the nest's hook, finds the
kernel's state and the nest's runner again, and reads the inputs out of the dictionary: four
Python frames and a dictionary per call, a third of a warm call of a tiny kernel. For a method
whose body is one top-level nest, after a docstring and assignments of literal numbers to
names (``s = 0.0``), and before nothing or ``return`` of one of those names, ``whole_nest``
makes a function with the method's own parameters that returns the nest's inputs (``pick``),
read as the nest's gather reads them (``runtime.input_reads``: parameters, the literals,
attributes of ``self``, globals, closure cells); the dispatcher then calls the nest's runner with them directly
(``kernel._dispatching_kernel``) and returns the named scalar's value from the nest's outputs
(``result``).

Nothing the method's original code would do differs: the nest's other outputs (scalars and
loop variables it leaves bound) are dead after it; a nest that returns (``return`` inside it)
has no lane; and wherever the runner asks for the original code (``RUN_ORIGINAL``), the
original method runs whole, timed for the cost model as the rewritten method times its nest.
A call the lane cannot take as it stands (keyword arguments, another number of positional
ones, an input that cannot be read: ``LANE_MISSES``) goes through the rewritten method as
before.
"""
from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass
from typing import Any, Callable

from asp_core.pysource import returning

from .rewrite import NO_VALUE
from .runtime import input_reads

_IDS = itertools.count()
#: The pick function's own parameters after the method's (names no method parameter has).
_GLOBALS, _CELLS, _UNBOUND, _CONSTANTS = ("__asp_globals", "__asp_cells", "__asp_unbound",
                                       "__asp_constants")

#: What reading an input may raise where the method's own code would raise it (or fall back):
#: the call then goes through the rewritten method, which handles it.
LANE_MISSES = (KeyError, AttributeError, ValueError, NameError)


@dataclass(frozen=True)
class WholeNest:
    """The lane of a kernel method that is one nest: ``pick(self, *args)`` returns the
    nest's inputs for a call of exactly ``arity`` positional arguments (``self`` included);
    ``result(outputs)``, where the method returns a scalar after the nest, its value from
    the nest's outputs (None: the method returns None)."""

    pick: Callable[..., tuple]
    arity: int
    result: Callable[[tuple], Any] | None = None


def whole_nest(source, analysis) -> WholeNest | None:
    """The lane of the kernel whose source is ``source`` (``frontend.KernelSource``) and
    whose only nest's analysis is ``analysis``, or None where the method is not one nest
    the lane can take (see the module)."""
    tree = source.fa.tree
    body = list(tree.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]   # the docstring
    constants: dict[str, Any] = {}
    while body and _constant_assignment(body[0]) is not None:
        name, value = _constant_assignment(body[0])
        constants[name] = value
        body = body[1:]
    returned = None
    if len(body) == 2 and isinstance(body[1], ast.Return):
        value = body[1].value
        if value is None or isinstance(value, ast.Constant) and value.value is None:
            body = body[:1]
        elif isinstance(value, ast.Name) and value.id in constants:
            returned, body = value.id, body[:1]
    if len(source.nests) != 1 or len(body) != 1 or body[0] is not source.nests[0] or \
            source.ctx.self_name is None:
        return None
    if any(isinstance(n, ast.Return) for n in ast.walk(body[0])):
        return None
    args = tree.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        return None
    params = [a.arg for a in args.args]
    if set(params) & set(constants):
        return None
    names = list(constants)

    def local(name: str, optional: bool) -> str | None:
        if name in constants:
            return f"{_CONSTANTS}[{names.index(name)}]"
        if name in params:
            return name
        return _UNBOUND if optional else None   # (nothing else is bound at the start)

    items = input_reads(analysis, source.ctx, local, _CELLS, _GLOBALS)
    if items is None:
        return None
    name = f"pick_{next(_IDS)}"
    namespace: dict[str, Any] = {}
    exec(compile(returning(name, params + [_GLOBALS, _CELLS, _UNBOUND, _CONSTANTS],  # noqa: S102
                           items), f"<asp pick {name}>", "exec"), namespace)
    pick = namespace[name]
    func = source.fa.func
    cells = dict(zip(func.__code__.co_freevars, func.__closure__ or ()))
    pick.__defaults__ = (func.__globals__, cells, NO_VALUE, tuple(constants.values()))
    result = None
    if returned is not None:
        names = analysis.names
        positions = tuple(i for i, output in enumerate(names.outputs)
                          if names.kernel_name(output) == returned)
        result = _result(positions, constants[returned])
    return WholeNest(pick, len(params), result)


def _constant_assignment(node: ast.stmt) -> tuple[str, Any] | None:
    """(name, value) of ``name = <an int, float or bool literal>``, else None."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
            isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Constant) and \
            type(node.value.value) in (int, float, bool):
        return node.targets[0].id, node.value.value
    return None


def _result(positions: tuple[int, ...], before: Any) -> Callable[[tuple], Any]:
    """The value a scalar has after the nest (``positions``: where the nest's outputs hand
    it back, the last one that has a value winning, as the rewritten method assigns them),
    else its value before it."""
    if len(positions) == 1:   # (a warm call's own path: one output, read once)
        (position,) = positions

        def one(outputs: tuple) -> Any:
            value = outputs[position]
            return before if value is NO_VALUE else value
        return one

    def result(outputs: tuple) -> Any:
        value = before
        for position in positions:
            if outputs[position] is not NO_VALUE:
                value = outputs[position]
        return value
    return result
