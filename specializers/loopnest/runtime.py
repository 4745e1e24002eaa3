"""Per-call dispatch of one loop nest: read its inputs, check them, find or build a variant.

``NestRunner`` is an ``asp_core`` ``Specializer`` whose "function" is one nest of a kernel:
its arguments are the nest's inputs (arrays, loop-invariant values, and the scalars and loop
variables it may leave bound), read from the kernel's frame by a generated gather function.
Running the original code of the nest is its plain-Python fallback: the hook then returns
``RUN_ORIGINAL`` and the rewritten kernel runs the loop itself (see ``rewrite``).

Which variant runs is the cost model's choice (``cost.estimates`` predicts, the dispatcher in
``asp_core.specializer`` chooses with ``asp_core.selection``): the original code (label
``original``), serial C (``c``) or OpenMP C at a thread count (``openmp@2``); a forced backend,
or ``ASP_SELECTION=fixed`` (the rule before the model: ``candidates``), skips the model.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any, Callable, Sequence

import numpy as np

from asp_core import config as config_module
from asp_core import forking, gc_pause
from asp_core.errors import BackendUnavailable, UnsupportedArgument
from asp_core.lru import LRUCache
from asp_core.platform import others_busy
from asp_core.pysource import returning
from asp_core.signature import ArraySig, ObjectSig, signature_of
from asp_core.specializer import PYTHON, CallRecord, Specializer, Variant, warn_once

from . import dast as d
from .codegen.c import serial_schedule
from .codegen.finals import UNCHANGED, computable, finals_function
from .codegen.openmp import small_loops, wide_loops
from .codegen.ranges import INT64_MAX, INT64_MIN, loop_ranges
from .codegen.python import compile_python, python_source
from .cost import index as variant_index
from .cost.estimates import ORIGINAL, NestEstimator, parse_label
from .rollback import (COMPILED_ERRORS, exact_on_error, in_source_order, saved_on_overflow,
                       written_positions)
from .safety import check_arrays
from .schedule.tree import SLoop, STile
from .lowering import KernelContext
from .pipeline import NestAnalysis, RejectedNest
from .rewrite import NO_VALUE, RUN_ORIGINAL

log = logging.getLogger("asp.loopnest")

_GATHER_IDS = itertools.count()


#: The plain-Python executor run as an order checker: parallel loops reversed or shuffled.
CHECKERS = {"python-reversed": "reversed", "python-shuffled": "shuffled"}
#: Compiled backends.
COMPILED = ("c", "openmp")
#: Device backends (``device_variants``): OpenCL, CUDA, and the host emulation of CUDA launches
#: (a checker, as the order checkers are).
DEVICE = ("opencl", "cuda", "cuda-emulated")
#: Every backend a kernel may be forced to.
BACKENDS = ("python",) + tuple(CHECKERS) + COMPILED + DEVICE


def _modes(plan) -> tuple:
    """What a compiled variant depends on beyond the schedule: how each subscript is used
    and the sign of each step."""
    modes = tuple(tuple(a.modes for a in accs) for _, accs in sorted(plan.bound.accesses.items()))
    steps = tuple(sorted((lid, b.step > 0, b.wide) for lid, b in plan.bound.loops.items()))
    return modes, steps, plan.bound.key.aliases


#: Work (statement instances) from which the fixed rule prefers OpenMP to serial C: the rule
#: before the cost model, kept for comparisons (``ASP_SELECTION=fixed``) and for forced runs.
OPENMP_MIN_WORK = 1 << 15

#: Executors kept per nest runner (one per schedule, subscript modes, loop ranges, signature).
EXECUTOR_CACHE_SIZE = 64
#: Call signatures (argument types) whose check is remembered per nest runner.
CHECKED_CACHE_SIZE = 64


class NestRunner(Specializer):
    """Dispatches one nest of one kernel instance."""

    backends = COMPILED
    background_builds = True

    def __init__(self, analysis: NestAnalysis | RejectedNest, ctx: KernelContext, *,
                 backend: str | None = None, strict: bool = False,
                 config: config_module.Config | None = None, nests: int = 1):
        kernel_func = ctx.fa.func
        super().__init__(kernel_func, backend=backend, strict=strict, config=config)
        self.analysis = analysis
        self.name = f"{kernel_func.__qualname__}: loop nest {analysis.index} (line {analysis.line})"
        self._kernel_noted = False   # (``cost.index.kernel_key`` recorded)
        self.last_inputs: tuple | None = None   # (set by whoever calls: ``enter``, the lane)
        self._gather = None
        # Executors (Python or compiled) per schedule and code-relevant details, and the call
        # signatures already checked: bounded, the least recently used forgotten (lru).
        self._executors = LRUCache(EXECUTOR_CACHE_SIZE)
        self._checked = LRUCache(CHECKED_CACHE_SIZE)
        self._key = None
        self._forced = (self.backend,) if self.backend else ()
        from asp_core.platform import cpu_cores

        self._cores = cpu_cores()
        self._ints: tuple[int, ...] = ()   # positions of the inputs that are not arrays
        self.estimator = None
        self._estimates = LRUCache(EXECUTOR_CACHE_SIZE)
        self._tilings = LRUCache(EXECUTOR_CACHE_SIZE)   # ``_tiled``
        if not isinstance(analysis, RejectedNest):
            self.estimator = NestEstimator(analysis, self._profile_of,
                                           self._device_profile_of, _device_ready, nests)
            self._gather = _make_gather(analysis, ctx)
            self._ints = tuple(i for i, name in enumerate(analysis.names.inputs)
                               if name not in analysis.names.arrays)

    @property
    def last_plan(self):
        """The plan of the last call's binding (None before any): what its variant ran. (Read
        from the binding, not recorded by each variant call: a warm call's 0.1 us.)"""
        key = self._key
        return None if key is None else self.analysis.plan(key)

    @property
    def last_schedule(self):
        """The schedule of ``last_plan``."""
        plan = self.last_plan
        return None if plan is None else plan.schedule

    # -- the hook ----------------------------------------------------------------------------

    def enter(self, local_values: dict[str, Any]) -> Any:
        """Run the nest for the kernel frame whose locals are ``local_values``."""
        self.last_estimate = None
        if self.config.disable_jit:  # before a rejected nest's fallback, which strict raises
            self.last_call = CallRecord(PYTHON, "disabled by ASP_DISABLE_JIT")
            return RUN_ORIGINAL
        if self._gather is None:
            error = self.analysis.error
            return self._fallback(str(error), (), {}, error)
        try:
            inputs = self._gather(local_values)
        except (KeyError, AttributeError, ValueError, NameError) as exc:
            reason = UnsupportedArgument(
                f"an input of the nest has no value when it starts ({exc!r}); running the "
                "original code, which raises NameError where it reads it")
            return self._fallback(str(reason), (), {}, reason)
        self.last_inputs = inputs
        return self(*inputs)

    def run_python(self, args: Sequence[Any], kwargs: dict) -> Any:
        return RUN_ORIGINAL

    def ran_original(self, seconds: float) -> None:
        """The original code of the nest ran in ``seconds`` (the rewritten kernel times it)."""
        estimate = self.last_estimate
        if estimate is not None and estimate.label == ORIGINAL:
            self.observed(estimate, seconds)
            self.last_estimate = estimate  # (observed() keeps it: the report shows both)

    # -- Specializer hooks --------------------------------------------------------------------

    def signature(self, args: Sequence[Any]):
        """Types of the inputs, and the binding of the values the analysis depends on (whose
        plan is made here, so that a binding no variant can take falls back to Python)."""
        types = signature_of(args)
        if types not in self._checked.recent and types not in self._checked:
            if any(type(sig) is ObjectSig for sig in types):   # (a Dask array is an object)
                from .distributed.refusal import refuse_dask_arguments

                refuse_dask_arguments((), dict(zip(self.analysis.names.inputs, args)))
            check_arguments(self.analysis, types)
            self._checked.add(types)
        for position in self._ints:
            value = args[position]
            if type(value) is int and not INT64_MIN <= value <= INT64_MAX:
                raise UnsupportedArgument(
                    f"'{self.analysis.names.inputs[position]}' is {value}, a Python int beyond "
                    "the 64 bits compiled code holds it in")
        key = self.analysis.binder.key(args, self.config.exact_reductions)
        self.analysis.plan(key)
        self._key = key
        self._vouched = None   # (a warm call's guard tells ``guarded`` of its key again)
        return types, key

    def guard(self, signature, args: Sequence[Any]):
        """The native check that a warm call's inputs have this signature and binding
        (``guards``): False where none can stand for them, None where none can be made now."""
        from .guards import make_guard

        types, key = signature
        try:
            return make_guard(self.analysis, types, key, args)
        except Exception:  # noqa: BLE001 - a bug: logged; the calls compute their signature
            log.exception("%s: no call guard for %s", self.name, signature)
            return False

    def guarded(self, signature) -> None:
        self._key = signature[1]

    def candidates(self) -> tuple[str, ...]:
        """The forced backend (and serial C after a forced OpenMP in a process forked where
        OpenMP cannot run, see ``asp_core.forking``), else OpenMP (when the schedule has
        parallel loops and enough work, and this machine more than one core) then serial C."""
        if self._forced:
            return self._forced
        plan = self.analysis.plan(self._key)
        if plan.parallel and plan.work >= OPENMP_MIN_WORK and self._cores > 1:
            return ("openmp", "c")
        return ("c",)

    # -- the cost model -------------------------------------------------------------------------

    def estimates(self, signature, args: Sequence[Any]):
        """The cost model's estimates for this call (``cost.estimates``), kept while the
        variants built and the usable threads stay the same (the selector's fast path)."""
        key = (signature, self._build_count, int(2 * others_busy() + 0.5))  # (half cores)
        found = self._estimates.recent.get(key)
        if found is None:
            with gc_pause.paused():
                found = self._estimates.put(key, self.estimator.estimates(
                    signature, lambda label: self.available(signature, label),
                    lambda label: self._compiled_before(signature, label)))
        return found

    def _profile_of(self, signature):
        """The cost model's profile of a binding and call signature, or None where compiled
        code cannot take the call (the dispatcher then states why)."""
        from .cost.models import profile
        from .typeinfer import infer_types

        types, key = signature
        plan = self.analysis.plan(key)
        try:
            check_arrays(self.analysis, types, plan.bound)
            info = infer_types(self.analysis, types)
        except UnsupportedArgument:
            return None
        layouts = {name: sig.layout for name, sig in zip(self.analysis.names.inputs, types)
                   if isinstance(sig, ArraySig)}
        return profile(self.analysis, plan, info, layouts,
                       compiled=lambda shared: self._tiling(plan, types, shared))

    def _device_profile_of(self, signature, profile, gpu: bool = True):
        """The cost model's profile of the device kernels of a binding and call signature,
        laid out for a GPU or a CPU device (``gpu``)."""
        from .cost.device import device_profile
        from .cost.machine import machine
        from .typeinfer import infer_types

        types, key = signature
        return device_profile(self.analysis, self.analysis.plan(key),
                              infer_types(self.analysis, types), profile, machine(), gpu)

    def build(self, backend: str, signature, args: Sequence[Any]) -> Variant:
        analysis = self.analysis
        types, key = signature
        plan = analysis.plan(key)
        if backend == ORIGINAL:  # the cost model's plain Python: the original code itself
            return Variant(PYTHON, _run_original, timed=False)
        kind, threads = parse_label(backend)
        if kind in COMPILED:
            return self._compiled(kind, plan, types, threads)
        if kind in DEVICE:
            return self._device(kind, plan, types)
        if backend == PYTHON or backend in CHECKERS:
            order = CHECKERS.get(backend, "source")
            schedule = forced_tiling(analysis, plan, self.config.tile)
            memo = (order, schedule)
            run = self._executors.get(memo)
            if run is None:
                seed = None if order == "reversed" else self.config_seed()
                run = python_executor(analysis, schedule, self.name, order, seed)
                if order != "source" or analysis.guarded or schedule is not plan.schedule or \
                        not in_source_order(plan.schedule, analysis.sequential):
                    # Any Python operation may raise: leave Python's state when one does.
                    run = exact_on_error(run, written_positions(analysis), (Exception,),
                                         self.name)
                self._executors.put(memo, run)
            self._dump_plan(plan)
            return Variant(backend, run)
        return super().build(backend, signature, args)

    def _compiled(self, backend: str, plan, signature, threads: int | None = None) -> Variant:
        from .typeinfer import infer_types
        from .variants import BeyondInt64, CopyFailed, compile_variant

        if backend == "openmp" and forking.openmp_unusable():
            raise BackendUnavailable(forking.openmp_unusable())
        check_arrays(self.analysis, signature, plan.bound)
        types = infer_types(self.analysis, signature)
        threads = threads or self.config.num_threads
        memo = self._memo(backend, plan, signature, threads)
        run = self._executors.get(memo) or self.analysis.executors.get(memo)
        if run is None:
            compiled = compile_variant(backend, self.analysis, plan, types, signature,
                                       self.name, threads)
            run = compiled
            # whether a failure it raises leaves the arrays as a run in source order stops
            stops_in_order = compiled.in_order
            if compiled.module.can_fail and (self.analysis.guarded or not compiled.in_order and
                                             (backend == "c" or self.config.exact_errors)):
                redo = None if self.analysis.guarded else \
                    self._in_order(plan, types, signature)
                run = exact_on_error(compiled, written_positions(self.analysis),
                                     COMPILED_ERRORS, self.name, redo)
                stops_in_order = True   # (it reruns in source order, or raises nothing)
            run.module = compiled.module
            run.stops_in_order = stops_in_order
            run.warming_up = compiled.warming_up
            if backend == "openmp":  # a fork must not leave a child hanging in libgomp
                forking.watch_openmp()
                forking.on_unusable_child(self, NestRunner._forget_openmp)
            self.analysis.executors.put(memo, run)
            variant_index.record(variant_index.index_key(self.analysis, memo))
            if not self._kernel_noted:
                self._kernel_noted = True
                variant_index.record(variant_index.kernel_key(self.func))
            self.dump(f"nest{self.analysis.index}.{backend}.c", run.module.source)
            self._dump_plan(plan)
        self._executors.put(memo, run)
        module, key, warming = run.module, run.module.key, run.warming_up
        stops_in_order = getattr(run, "stops_in_order", False)
        if module.packs:   # (no memory for its copies: the call again, without them)
            run = exact_on_error(run, (), (CopyFailed,), self.name,
                                 self._in_order(plan, types, signature))
        if module.beyond_int64 and not self._forced and not self.strict:
            run = exact_on_error(run, saved_on_overflow(self.analysis, plan, stops_in_order),
                                 (BeyondInt64,), self.name, notice=self._beyond_int64)
        return Variant(backend, run, key, warming=warming)

    def _beyond_int64(self, error: BaseException) -> None:
        """A compiled call met a Python int beyond 64 bits (``variants.BeyondInt64``): the
        call runs as the original code, which carries the larger int as Python does."""
        reason = ("this call ran as plain Python: a Python int left the 64-bit range of "
                  "compiled code, where plain Python carries it on")
        warn_once(self.name, reason)
        self.last_call = CallRecord(PYTHON, reason)

    def _device(self, backend: str, plan, signature) -> Variant:
        """A device variant (``device_variants``): OpenCL, CUDA or CUDA's host emulation."""
        from .codegen.device import device_module
        from .device_variants import DeviceVariant
        from .typeinfer import infer_types

        check_arrays(self.analysis, signature, plan.bound)
        self._fits_device(backend, plan, signature)
        types = infer_types(self.analysis, signature)
        memo = (backend, plan.schedule, _modes(plan), loop_ranges(plan), signature)
        run = self._executors.get(memo)
        if run is None:
            from .device_variants import gpu_layout

            dialect = "cuda" if backend.startswith("cuda") else "opencl"
            module = device_module(dialect, self.analysis, plan, types, signature, self.name,
                                   gpu_layout(backend))
            analysis = self.analysis
            run = DeviceVariant(backend, module, analysis, lambda: analysis.plan(self._key),
                                raise_beyond=bool(self._forced) or self.strict)
            self._executors.put(memo, run)
            suffix = "cl" if dialect == "opencl" else "cu"
            self.dump(f"nest{analysis.index}.{backend}.{suffix}", module.source)
            self._dump_plan(plan)
        return Variant(backend, run, run.module.key)

    def _fits_device(self, backend: str, plan, signature) -> None:
        """Refuse (``BackendUnavailable``: the next variant runs, the reason is said) a call
        whose arrays would not fit the device's memory."""
        from .device_variants import REDUCTION_LANES, device_memory

        memory = device_memory(backend)
        if memory is None:
            return
        needed = REDUCTION_LANES * 8 * len(self.analysis.names.scalars)
        for name, shape in zip(self.analysis.names.arrays, plan.bound.key.shapes):
            sig = signature[self.analysis.names.inputs.index(name)]
            needed += int(np.prod(shape, dtype=np.int64)) * sig.dtype.itemsize
        if needed > memory:
            raise BackendUnavailable(f"the call's arrays need {needed / 2**20:.1f} MiB on the "
                                     f"{backend} device, which holds {memory / 2**20:.1f} MiB")

    def _memo(self, backend: str, plan, signature, threads: int | None) -> tuple:
        """What a compiled executor depends on (its key among the nest's executors, which
        every instance of the kernel shares: ``NestAnalysis.executors``)."""
        return (backend, self._tiled(plan, signature, backend == "openmp"), _modes(plan),
                loop_ranges(plan), signature,
                (wide_loops(plan, threads or self._cores), threads,
                 small_loops(self.analysis, plan))
                if backend == "openmp" else None, self.config.exact_errors)

    def _tiled(self, plan, signature, shared: bool):
        """The schedule compiled C runs for this binding and signature (``_tiling``)."""
        return self._tiling(plan, signature, shared)[0]

    def _tiling(self, plan, signature, shared: bool):
        """(the schedule compiled C runs for this binding and signature, its tiled bands:
        ``codegen.c.serial_schedule``), memoized: the cost model's profile and every variant
        built for the call ask for it."""
        key = (plan.bound.key, signature, shared, self.config.tile)
        found = self._tilings.get(key)
        if found is None:
            names = self.analysis.names
            found = self._tilings.put(key, serial_schedule(self.analysis, plan, {
                name: sig.dtype.itemsize for name, sig in zip(names.inputs, signature)
                if name in names.arrays}, shared, self.config.tile))
        return found

    def _memo_of(self, signature, label: str) -> tuple | None:
        """The executor memo of compiled variant ``label`` for a call (None: not compiled)."""
        kind, threads = parse_label(label)
        if kind not in COMPILED:
            return None
        types, key = signature
        return self._memo(kind, self.analysis.plan(key), types,
                          threads or self.config.num_threads)

    def _compiled_before(self, signature, label: str) -> bool:
        """Whether a process compiled variant ``label`` for this call into the disk cache
        (it need only be generated and loaded: ``cost.index``)."""
        memo = self._memo_of(signature, label)
        return memo is not None and \
            variant_index.compiled_before(variant_index.index_key(self.analysis, memo))

    def available(self, signature, label: str) -> bool:
        """Whether variant ``label`` can run this call without building: built by this
        runner, or compiled already by another instance of the kernel."""
        if self.built(signature, label):
            return True
        memo = self._memo_of(signature, label)
        return memo is not None and memo in self.analysis.executors

    def _forget_openmp(self, reason: str) -> None:
        """In a forked child where OpenMP cannot run: drop the OpenMP variants, and let a
        forced OpenMP fall back to serial C (their build now fails with ``reason``)."""
        self.forget_backend("openmp")
        for executors in (self._executors, self.analysis.executors):
            for memo in [memo for memo in executors if memo[0] == "openmp"]:
                del executors[memo]
        if self._forced == ("openmp",):
            self._forced = ("openmp", "c")

    def _in_order(self, plan, types, signature):
        """What reruns a call whose out-of-order variant failed (``rollback``): serial C of
        the source-order schedule, built when first needed, which stops where Python stops
        (as fast as the variant, where the original code would crawl to the error)."""
        from .pipeline import Plan
        from .variants import compile_variant

        built = []

        def redo(*inputs):
            if not built:
                sequential = Plan(plan.bound, plan.graph, self.analysis.sequential, plan.work)
                built.append(compile_variant("c", self.analysis, sequential, types, signature,
                                             self.name, 1, tiled=False))
            return built[0](*inputs)

        return redo

    def config_seed(self) -> int:
        import os

        return int(os.environ.get("ASP_SHUFFLE_SEED", "0"))

    def _dump_plan(self, plan) -> None:
        if self.dump_dir is None:
            return
        index = self.analysis.index
        self.dump(f"nest{index}.dast.txt", self.analysis.nest.dump())
        self.dump(f"nest{index}.dependences.txt", plan.graph.dump())
        self.dump(f"nest{index}.schedule.txt", plan.schedule.dump())


def _device_ready(backend: str) -> bool:
    """Whether ``backend``'s device is in use in this process already (its first use, the
    driver and a context, is paid)."""
    if backend == "opencl":
        from asp_core.backends import opencl

        return opencl.initialized()
    from asp_core.backends import cuda

    return cuda.initialized()


def _run_original(*inputs):
    return RUN_ORIGINAL


def check_arguments(analysis: NestAnalysis, signature) -> None:
    """Raise ``UnsupportedArgument`` if the values cannot run through a variant."""
    names = analysis.names
    for name, sig in zip(names.inputs, signature):
        if name in names.arrays:
            if not isinstance(sig, ArraySig):
                raise UnsupportedArgument(f"'{name}' is indexed as an array but is a {sig}, not "
                                          "a NumPy array")
            if sig.dtype.kind not in "biuf":
                raise UnsupportedArgument(f"array '{name}' has dtype {sig.dtype}; only bool, "
                                          "integer and floating-point arrays are specialized")
            rank = analysis.ranks.get(name)
            if rank is not None and rank != sig.ndim:
                raise UnsupportedArgument(f"array '{name}' has {sig.ndim} dimensions but is "
                                          f"indexed with {rank} subscripts (one element at a "
                                          "time is supported)")


def forced_tiling(analysis: NestAnalysis, plan, force: int | None):
    """The schedule the plain-Python executor runs: the plan's, with its bands tiled in
    blocks of ``force`` (``ASP_TILE``, for tests: the order checker then runs the tiled order
    serial C would run, so an illegal tiling shows as a wrong result)."""
    return serial_schedule(analysis, plan, {}, force=force)[0] if force else plan.schedule


def python_executor(analysis: NestAnalysis, schedule, title: str, order: str = "source",
                    seed: int | None = None):
    """The plain-Python executor of ``analysis`` under ``schedule``."""
    names = analysis.names
    fa_name = f"nest_{analysis.index}"
    header = f"plain-Python executor ({order} order) of {title}"
    source, calls = python_source(analysis.nest, schedule, names.inputs, names.outputs,
                                  name=fa_name, header=header, order=order)
    run = compile_python(source, fa_name, calls, f"<asp {title}>", seed)
    scheduled = list(_loops(schedule.root))
    tiled = any(isinstance(node, STile) for node in _nodes(schedule.root))
    if (order == "source" or not any(loop.parallel for loop in scheduled)) and not tiled and (
            len({loop.lid for loop in scheduled}) == len(d.loops(analysis.nest.loop))
            or not computable(analysis.nest, analysis.live_loop_vars)):
        return run  # every loop ran in source order: loop variables end as Python leaves them
    # (a loop without statements, say ``for i in range(n): pass``, is in no schedule)
    return with_final_loop_values(run, analysis)


def _loops(nodes):
    for node in _nodes(nodes):
        if isinstance(node, SLoop):
            yield node


def _nodes(nodes):
    for node in nodes:
        yield node
        if isinstance(node, (SLoop, STile)):
            yield from _nodes(node.body)


def with_final_loop_values(run, analysis: NestAnalysis):
    """``run``, with the loop variables the kernel reads afterwards set as a source-order run
    would leave them (computed from the bounds), for runs that reorder loops."""
    live = analysis.live_loop_vars
    if not live:
        return run
    finals = finals_function(analysis.nest, analysis.names.inputs, live)
    positions = [analysis.names.outputs.index(v) for v in live]

    def wrapped(*inputs):
        outputs = list(run(*inputs))
        for position, value in zip(positions, finals(*inputs)):
            outputs[position] = inputs[len(inputs) - len(outputs) + position] \
                if value is UNCHANGED else value
        return tuple(outputs)

    return wrapped


def input_reads(analysis: NestAnalysis, ctx: KernelContext,
                local: Callable[[str, bool], str | None], cells: str = "C",
                globals_: str = "G") -> list[str] | None:
    """The expression reading each of the nest's inputs where it starts: a local variable of
    the kernel through ``local(name, optional)`` (``optional``: the nest may find it unbound,
    a scalar it assigns before reading, or a loop variable's last value, ``lastvalues``; None:
    it cannot be read there, and then nothing is returned), an attribute of one, a closure
    cell (``cells``) or a global (``globals_``)."""
    freevars = ctx.fa.func.__code__.co_freevars
    names = analysis.names
    items = []
    for input_name in names.inputs:
        base, _, attr = input_name.partition(".")
        kernel_name = names.kernel_name(input_name)
        if kernel_name != input_name:   # a loop variable's last value (``lastvalues``)
            read = local(kernel_name, True)
        elif base in ctx.local_names:
            read = local(base, not attr and input_name in names.outputs and
                         input_name not in analysis.required)
        elif base in freevars:
            read = f"{cells}[{base!r}].cell_contents"
        else:
            read = f"{globals_}[{base!r}]"
        if read is None:
            return None
        items.append(f"{read}.{attr}" if attr else read)
    return items


def gather_source(analysis: NestAnalysis, ctx: KernelContext, name: str) -> str:
    """Python source of a function reading the nest's inputs from the kernel's locals (L),
    globals (G) and closure cells (C); ``UNBOUND`` for outputs the kernel has not bound yet."""
    items = input_reads(analysis, ctx, lambda local, optional: f"L.get({local!r}, UNBOUND)"
                        if optional else f"L[{local!r}]")
    return returning(name, ("L", "G", "C", "UNBOUND"), items)


def _make_gather(analysis: NestAnalysis, ctx: KernelContext):
    """The gather function of ``analysis``, bound to the kernel's globals and closure."""
    kernel_func = ctx.fa.func
    name = f"gather_{next(_GATHER_IDS)}"
    namespace: dict[str, Any] = {}
    exec(compile(gather_source(analysis, ctx, name), f"<asp gather {name}>", "exec"),  # noqa: S102
         namespace)
    gather = namespace[name]
    cells = dict(zip(kernel_func.__code__.co_freevars, kernel_func.__closure__ or ()))
    gather.__defaults__ = (kernel_func.__globals__, cells, NO_VALUE)  # gather(local_values)
    return gather
