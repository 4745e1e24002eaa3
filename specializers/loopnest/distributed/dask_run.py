"""``on_dask``: run a kernel's Python code once, its nests as Dask graph layers.

The kernel method runs as written (rewritten as for ``kernel()``: see ``rewrite``), on
``handles.ArrayHandle`` stand-ins for its array arguments (Dask arrays; NumPy arrays are
wrapped with ``dask.array.from_array``); each top-level nest calls ``_Run.enter`` instead of
running. There the nest's inputs are read from the kernel's frame, its binding analysed on
memoryless stand-ins (``handles.standin``: shapes and dtypes are all a binding needs), its
partition found (``partition``, or ``PartitionRefused``) and its steps built
(``graph.build_step``): the arrays it writes become new lazy Dask arrays in their handles, its
reductions lazy 0-d Dask arrays in the kernel's scalars. The result is a ``DaskResult``:
parameter name -> lazy Dask array of each array the kernel wrote, and ``"return"``.

Lazy scalars (a reduction's value) may flow into later nests as values; a loop bound or a
subscript that depends on one is refused (the analysis needs numbers). The kernel's code
between nests may compute with them as Dask arrays (``err / n``); testing one (``if err <
tol``) makes Dask compute it there.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from dataclasses import dataclass
from typing import Any

import numpy as np

from asp_core import config as config_module
from asp_core.errors import UnsupportedArgument, UnsupportedConstruct
from asp_core.signature import signature_of

from ..rewrite import NO_VALUE, rewrite_kernel
from .graph import StepLayout, build_step
from .handles import ArrayHandle, standin
from .locate import kernel_ref
from .partition import CallFacts, NestPartition, Step, Unrolled, partition_nest
from .refusal import PartitionRefused, is_dask_collection
from .subnest import Recipe, step_analysis
from .worker import Options

_CURRENT: contextvars.ContextVar["_Run"] = contextvars.ContextVar("asp_on_dask_run")


def _dask_array():
    try:
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ImportError("on_dask needs Dask: pip install 'asp-sejits[dask]' (dask[array] "
                          "and distributed)") from exc
    return da


class DaskResult(dict):
    """Parameter name -> lazy Dask array of each array the kernel wrote (and ``"return"``
    for a return value other than None); ``explain()`` reports how each nest was cut."""

    def __init__(self, values: dict, report_text: str):
        super().__init__(values)
        self.report_text = report_text

    def explain(self):
        from ..report import Report

        return Report(self.report_text)


@dataclass(frozen=True)
class NestRecord:
    """What ``on_dask`` did with one nest (for ``explain``)."""

    index: int
    line: int
    partition: NestPartition | None
    layouts: dict            # Step -> StepLayout of its first run
    refused: str | None = None


def on_dask(kernel: Any, args: tuple, kwargs: dict) -> DaskResult:
    """Run ``kernel.kernel(*args, **kwargs)`` over Dask arrays (see the module)."""
    _dask_array()
    from .fallback import one_machine_allowed, whole_kernel

    run = _Run(kernel)
    call_args, call_kwargs = run.bind(args, kwargs)
    try:
        value = run.execute(call_args, call_kwargs)
    except PartitionRefused as refusal:
        if not one_machine_allowed():
            raise
        return whole_kernel(kernel, run, refusal)
    return run.result(value)


def explain_dask(kernel: Any, args: tuple, kwargs: dict):
    """The report of how ``on_dask`` partitions each nest of this call; a refusal is
    reported, not raised. Nothing is computed."""
    from ..report import Report
    from .explain import explain_text

    _dask_array()
    run = _Run(kernel)
    call_args, call_kwargs = run.bind(args, kwargs)
    refusal = None
    try:
        run.execute(call_args, call_kwargs)
    except PartitionRefused as exc:
        refusal = exc
    return Report(explain_text(run, refusal))


class _Run:
    """One ``on_dask`` call: the handles, the nests' records, the lazy scalars' types."""

    def __init__(self, kernel: Any):
        from ..kernel import LoopKernel, _original_of
        from .. import pipeline

        if not hasattr(kernel, "_asp_states"):  # a subclass __init__ forgot super().__init__()
            LoopKernel.__init__(kernel)
        self.kernel = kernel
        self.kernel_class = type(kernel)
        self.ref = kernel_ref(self.kernel_class)
        self.function = _original_of(self.kernel_class)
        self.analysis = pipeline.analyse_kernel(self.function)
        self.handles: list[ArrayHandle] = []
        self.records: list[NestRecord] = []
        self.weak: set[str] = set()    # Dask names of lazy scalars Python holds as int/float
        exact = kernel._asp_exact_reductions
        if exact is None:
            exact = config_module.current().exact_reductions
        self.options = Options(kernel._asp_backend, kernel._asp_strict, kernel._asp_threads,
                               kernel._asp_exact_errors, kernel._asp_exact_reductions)
        self.exact_reductions = bool(exact)

    # -- the call ---------------------------------------------------------------------------

    def bind(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """The arguments with each array (Dask or NumPy) replaced by a handle (one per
        distinct object)."""
        da = _dask_array()
        signature = inspect.signature(self.function)
        try:
            bound = signature.bind(self.kernel, *args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{self.kernel_class.__qualname__}.on_dask(): {exc}") from None
        made: dict[int, ArrayHandle] = {}

        def handle(param: str, value: Any) -> Any:
            if isinstance(value, np.ndarray):
                array = da.from_array(value)
            elif is_dask_collection(value) and hasattr(value, "chunks"):
                array = value
                if any(n != n for n in array.shape):
                    raise PartitionRefused(
                        f"on_dask: '{param}' has unknown chunk sizes (shape {array.shape}); "
                        "call its compute_chunk_sizes() first")
            else:
                return value
            found = made.get(id(value))
            if found is None:
                found = made[id(value)] = ArrayHandle(param, array, self.function.__code__)
                self.handles.append(found)
            return found

        params = list(signature.parameters.values())
        for param in params[1:]:
            if param.name not in bound.arguments:
                continue
            value = bound.arguments[param.name]
            if param.kind is param.VAR_POSITIONAL:
                bound.arguments[param.name] = tuple(
                    handle(f"{param.name}[{k}]", v) for k, v in enumerate(value))
            elif param.kind is param.VAR_KEYWORD:
                bound.arguments[param.name] = {k: handle(k, v) for k, v in value.items()}
            else:
                bound.arguments[param.name] = handle(param.name, value)
        self.bound_args = (bound.args[1:], bound.kwargs)
        return self.bound_args

    def execute(self, args: tuple, kwargs: dict) -> Any:
        rewritten = _rewritten(self.function)
        token = _CURRENT.set(self)
        try:
            return rewritten(self.kernel, *args, **kwargs)
        finally:
            _CURRENT.reset(token)

    def result(self, value: Any) -> DaskResult:
        from .explain import explain_text

        out = {h.param: h.array for h in self.handles if h.written}
        if value is not None:
            out["return"] = _unwrap(value)
        return DaskResult(out, explain_text(self, None))

    # -- one nest -------------------------------------------------------------------------

    def enter(self, index: int, local_values: dict[str, Any]) -> tuple:
        from .. import pipeline
        from ..kernel import _for_instance

        analysis = _for_instance(self.analysis.nests[index], self.kernel_class)
        if isinstance(analysis, pipeline.RejectedNest):
            self._refuse(index, analysis.line, f"loop nest {index} is outside the supported "
                         f"subset: {analysis.error.message}", analysis.error.location)
        try:
            return _NestRun(self, analysis, local_values).run()
        except PartitionRefused as exc:
            self.records.append(NestRecord(index, analysis.line, None, {}, exc.message))
            raise

    def _refuse(self, index: int, line: int, message: str, where) -> None:
        self.records.append(NestRecord(index, line, None, {}, message))
        raise PartitionRefused(message, where)


class _NestRun:
    """One nest of one ``on_dask`` call."""

    def __init__(self, run: _Run, analysis, local_values: dict[str, Any]):
        self.run_ = run
        self.analysis = analysis
        self.where = analysis.nest.loop.loc
        gather = _gather(analysis, run.analysis.source.ctx)
        self.inputs = dict(zip(analysis.names.inputs, gather(local_values)))

    def refuse(self, message: str) -> None:
        raise PartitionRefused(f"loop nest {self.analysis.index}: {message}", self.where)

    def run(self) -> tuple:
        da = _dask_array()
        analysis, names = self.analysis, self.analysis.names
        arrays: dict[str, Any] = {}      # name -> Dask array the steps read
        handles: dict[str, ArrayHandle] = {}
        stand: dict[str, Any] = {}
        for name in names.arrays:
            value = self.inputs[name]
            if isinstance(value, ArrayHandle):
                handles[name] = value
                arrays[name] = value.array
                stand[name] = value.standin()
            elif is_dask_collection(value) and hasattr(value, "chunks"):
                arrays[name] = value
                stand[name] = standin(value.shape, value.dtype)
            elif isinstance(value, np.ndarray):
                arrays[name] = da.from_array(value, chunks=-1)
                stand[name] = value
            else:
                self.refuse(f"'{name}' is indexed as an array but is a "
                            f"{type(value).__name__}")
        lazy = {}
        for name in names.invariants + names.outputs:
            value = self.inputs[name]
            if isinstance(value, ArrayHandle):
                self.refuse(f"'{name}' is a Dask array used as a value")
            if is_dask_collection(value):
                if getattr(value, "shape", None) != ():
                    self.refuse(f"'{name}' is a Dask collection used as a value")
                lazy[name] = value
                stand[name] = _scalar_standin(value, value.name in self.run_.weak)
            else:
                stand[name] = value
        self.check_bounds(lazy)
        inputs = tuple(stand[name] for name in names.inputs)
        try:
            signature = signature_of(inputs)
            from ..runtime import check_arguments
            from ..typeinfer import infer_types

            check_arguments(analysis, signature)
            key = analysis.binder.key(inputs, self.run_.exact_reductions)
            types = infer_types(analysis, signature)
        except (UnsupportedArgument, UnsupportedConstruct) as exc:
            self.refuse(exc.message)
        plan = analysis.plan(key)
        facts = CallFacts(frozenset(handles), self.run_.exact_reductions,
                          {s: t.dtype.kind for s, t in types.variables.items()})
        partition = partition_nest(analysis, plan, facts)
        record = NestRecord(analysis.index, analysis.line, partition, {})
        env = {name: self.inputs[name] for name in names.invariants + names.outputs}
        context = _StepContext(self, plan, types, arrays, handles, record)
        context.region(partition.root, env)
        self.run_.records.append(record)
        return self.outputs(env, inputs)

    def check_bounds(self, lazy: dict[str, Any]) -> None:
        """No loop bound or subscript may depend on a lazy value."""
        from .. import dast as d

        for atom in self.analysis.binder.atoms:
            for node in atom.walk():
                if isinstance(node, d.Var) and node.name in lazy:
                    self.refuse(f"a loop bound or subscript depends on '{node.name}', a lazy "
                                "result of an earlier nest (its value is not known before "
                                "compute())")

    def outputs(self, env: dict[str, Any], inputs: tuple) -> tuple:
        analysis, names = self.analysis, self.analysis.names
        finals = {}
        live_vars = analysis.live_loop_vars
        if live_vars:
            from ..codegen.finals import UNCHANGED, finals_function

            values = finals_function(analysis.nest, names.inputs, live_vars)(*inputs)
            finals = {v: (self.inputs[v] if value is UNCHANGED else value)
                      for v, value in zip(live_vars, values)}
        out = []
        for name in names.outputs:
            if name in finals:
                out.append(finals[name])
            elif name in names.scalars and name in analysis.live:
                out.append(env.get(name, NO_VALUE))
            else:
                out.append(NO_VALUE)
        return tuple(out)


class _StepContext:
    """Runs the regions of one nest's partition: unrolled loops in Python, steps as layers."""

    def __init__(self, nest: _NestRun, plan, types, arrays, handles, record: NestRecord):
        self.nest = nest
        self.analysis = nest.analysis
        self.plan = plan
        self.types = types
        self.arrays = arrays
        self.handles = handles
        self.record = record
        self.values = dict(zip(self.analysis.binder.atoms, plan.bound.key.atoms))

    def region(self, node: Step | Unrolled, env: dict[str, Any]) -> None:
        if isinstance(node, Step):
            self.step(node, env)
            return
        info = self.analysis.access.loop(node.loop)
        for value in range(*self.bounds(info, env)):
            env[node.var] = value
            for child in node.body:
                self.region(child, env)

    def bounds(self, info, env: dict[str, Any]) -> tuple[int, int, int]:
        def evaluate(form) -> int:
            total = form.const.evaluate(self.values)
            for term in form.terms:
                total += term.coeff.evaluate(self.values) * env[term.var]
            return total

        return evaluate(info.start), evaluate(info.stop), info.step.evaluate(self.values)

    def step(self, step: Step, env: dict[str, Any]) -> None:
        run = self.nest.run_
        for reduction in step.reductions:
            if env.get(reduction.name, NO_VALUE) is NO_VALUE:
                self.nest.refuse(f"'{reduction.name}' has no value when the loop starts")
        recipe = Recipe(run.ref, self.analysis.index, step.root, step.loop,
                        tuple((p.name, p.dim) for p in step.partitioned), step.live)
        try:
            sub = step_analysis(recipe)
        except UnsupportedConstruct as exc:  # a pass refuses the step's nest: a bug, said
            self.nest.refuse(f"the nest of one block cannot be analysed ({exc.message})")
        loop_range = self.bounds(self.analysis.access.loop(step.loop), env)
        arrays = {p.name: self.arrays[p.name] for p in step.arrays}
        shapes = {name: tuple(int(n) for n in array.shape)
                  for name, array in self.arrays.items()}
        result = build_step(step, recipe, sub, run.options, arrays, env, loop_range,
                            run.weak, self.types.result_types, self.analysis.nest, shapes)
        self.record.layouts.setdefault(step, result.layout)
        for name, array in result.arrays.items():
            self.arrays[name] = array
            self.handles[name].replace(array)
        for name, value in result.scalars.items():
            env[name] = value
            if self.types.result_types[name].weak:
                run.weak.add(value.name)


def _scalar_standin(value: Any, weak: bool) -> Any:
    """A number of a lazy scalar's type (what the binding's type inference reads)."""
    zero = np.zeros((), dtype=value.dtype)[()]
    return zero.item() if weak else zero


def _unwrap(value: Any) -> Any:
    if isinstance(value, ArrayHandle):
        return value.array
    if isinstance(value, (tuple, list)):
        return type(value)(_unwrap(v) for v in value)
    return value


@functools.lru_cache(maxsize=128)
def _rewritten(function):
    """The kernel method with each nest calling ``_enter`` (memoized per method)."""
    from .. import pipeline

    analysis = pipeline.analyse_kernel(function)
    source = analysis.source
    hooks = [functools.partial(_enter, index) for index in range(len(analysis.nests))]
    outputs = [() if isinstance(a, pipeline.RejectedNest) else
               tuple(a.names.kernel_name(name) for name in a.names.outputs)
               for a in analysis.nests]
    return rewrite_kernel(source.fa, source.nests, outputs, hooks)


def _enter(index: int, local_values: dict[str, Any]) -> tuple:
    return _CURRENT.get().enter(index, local_values)


#: The gather function of each nest (``runtime``: reads its inputs from the kernel's frame).
_GATHERS: dict = {}


def _gather(analysis, ctx):
    found = _GATHERS.get(analysis)
    if found is None:
        from ..runtime import _make_gather

        found = _GATHERS[analysis] = _make_gather(analysis, ctx)
    return found


def clear_cache() -> None:
    _rewritten.cache_clear()
    _GATHERS.clear()


__all__ = ["DaskResult", "NestRecord", "StepLayout", "explain_dask", "on_dask"]
