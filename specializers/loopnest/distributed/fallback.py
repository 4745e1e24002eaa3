"""Where the user allows it, a kernel ``on_dask`` refuses runs whole on one worker.

Inside ``with allow_one_machine():`` a ``PartitionRefused`` does not reach the caller:
``on_dask`` returns instead a result whose arrays come from one task, which (when the result
is computed) gathers every array argument whole on one worker, copies it, runs ``kernel()``
on the NumPy copies (specialized as usual, on that worker's cores) and hands back every array
argument (what code the analysis did not follow writes is not known, so all of them) and the
return value (a ``dask.delayed`` value under ``"return"``, where the kernel's source returns
something). ``explain()`` of the result says why. Nothing is silently partitioned.

The kernel instance travels as its class and its attributes (``LoopKernel``'s own state is
made again on the worker from its settings).
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
from typing import Any

import numpy as np

_ALLOWED: contextvars.ContextVar[bool] = contextvars.ContextVar("asp_dask_one_machine",
                                                                 default=False)


@contextlib.contextmanager
def allow_one_machine():
    """Inside: a kernel ``on_dask`` cannot partition runs whole on one worker."""
    token = _ALLOWED.set(True)
    try:
        yield
    finally:
        _ALLOWED.reset(token)


def one_machine_allowed() -> bool:
    return _ALLOWED.get()


class _Slot:
    """Where array argument ``index`` goes in the call."""

    def __init__(self, index: int):
        self.index = index


def whole_kernel(kernel: Any, run, refusal) -> "Any":
    """The ``DaskResult`` of running ``kernel`` whole in one task (see the module)."""
    import dask
    import dask.array as da

    from .dask_run import DaskResult
    from .explain import explain_text
    from .handles import ArrayHandle

    handles = run.handles
    slots = {id(h): _Slot(k) for k, h in enumerate(handles)}

    def template(value: Any) -> Any:
        if isinstance(value, ArrayHandle):
            return slots[id(value)]
        if isinstance(value, tuple):
            return tuple(template(v) for v in value)
        if isinstance(value, dict):
            return {k: template(v) for k, v in value.items()}
        return value

    args, kwargs = run.bound_args
    state = {k: v for k, v in vars(kernel).items() if not k.startswith("_asp_")}
    spec = (run.ref, state, run.options)
    task = dask.delayed(_run_whole, pure=True)(spec, template(args), template(kwargs),
                                               *[h.original for h in handles])
    out: dict[str, Any] = {}
    for k, h in enumerate(handles):
        array = da.from_delayed(task[k], shape=h.original.shape, dtype=h.original.dtype)
        out[h.param] = array.rechunk(h.original.chunks)
    if _returns_value(run.function):
        out["return"] = task[len(handles)]
    text = explain_text(run, refusal) + "\n\nallow_one_machine(): the whole kernel runs in " \
        "one task on one worker, on NumPy copies of its arrays, when the result is computed"
    return DaskResult(out, text)


def _run_whole(spec, args, kwargs, *arrays) -> tuple:
    """On a worker: the kernel on NumPy copies of its arrays."""
    from ..kernel import LoopKernel

    ref, state, options = spec
    kernel_class = ref.resolve()
    copies = [np.array(a, copy=True) for a in arrays]

    def fill(value: Any) -> Any:
        if isinstance(value, _Slot):
            return copies[value.index]
        if isinstance(value, tuple):
            return tuple(fill(v) for v in value)
        if isinstance(value, dict):
            return {k: fill(v) for k, v in value.items()}
        return value

    kernel = kernel_class.__new__(kernel_class)
    vars(kernel).update(state)
    LoopKernel.__init__(kernel, backend=options.backend, strict=options.strict,
                        num_threads=options.num_threads, exact_errors=options.exact_errors,
                        exact_reductions=options.exact_reductions)
    value = kernel.kernel(*fill(args), **fill(kwargs))
    return tuple(copies) + (value,)


def _returns_value(function) -> bool:
    """Whether the kernel's source has a ``return`` with a value."""
    from asp_core.frontend import function_ast

    tree = function_ast(function).tree
    return any(isinstance(n, ast.Return) and n.value is not None and
               not (isinstance(n.value, ast.Constant) and n.value.value is None)
               for n in ast.walk(tree))
