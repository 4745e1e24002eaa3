"""The loop-nest pipeline: the one place that knows the order of the passes.

Static, once per kernel (``analyse_kernel``), for each top-level nest:

    lowering -> counted loops -> last values -> if-conversion -> name analysis -> access
    analysis -> scalar classification

A nest outside the supported subset becomes a ``RejectedNest`` holding the
``UnsupportedConstruct`` that names the construct and its line; it runs as the original Python.

Per binding of run-time values (``NestAnalysis.plan``, memoized; ``runtime.NestRunner`` drives
it on each call):

    binding -> dependence testing (what the static part left open) -> scheduling

and then, per call signature and schedule, code generation for a backend, build, run.
"""

from __future__ import annotations

import ast
import functools
import logging
from dataclasses import dataclass
from typing import Callable

from asp_core.errors import UnsupportedConstruct
from asp_core.frontend import ast_depth
from asp_core.lru import LRUCache

from . import dast as d
from .access import AccessInfo, access_info
from .codegen.finals import computable
from .frontend import KernelSource, guarded_loops, kernel_source, names_read_outside
from .ifconvert import if_convert
from .lastvalues import needing_shadows, shadow_of, with_shadows
from .counted import with_counted_loops
from .lowering import (RETURN_FLAG, RETURN_VALUE, WHILE_PREFIX, KernelContext, StaticMethod,
                       lower_nest)
from .names import NestNames, nest_names
from .pretty import statement as statement_text
from .scalars import ScalarInfo, classify_scalars, exposed
from .analysis.binding import Binder, BindingKey, BoundNest, bind_nest
from .analysis.graph import DependenceGraph, StaticDependences, dependence_graph, static_dependences
from .schedule.allen_kennedy import NestStructure, nest_structure, schedule_nest
from .schedule.sequential import sequential_schedule
from .schedule.verify import violations
from .schedule.tree import Schedule


@dataclass(frozen=True, eq=False)
class NestAnalysis:
    """Everything known about one nest before any call."""

    index: int
    node: ast.For
    nest: d.Nest              # if-converted DAST
    names: NestNames
    access: AccessInfo
    scalars: ScalarInfo
    required: tuple[str, ...]  # outputs whose value on entry is read (must be bound)
    ranks: dict[str, int]      # number of subscripts each indexed array takes
    live: frozenset[str]       # names the kernel reads outside this nest
    guarded: bool = False      # inside a try or with: the kernel may go on after it raises;
                               # or an inlined call is out of order: errors rerun the original
    methods: tuple = ()        # static methods inlined through self (``lowering.StaticMethod``)

    @functools.cached_property
    def live_loop_vars(self) -> tuple[str, ...]:
        """Loop variables whose final values the kernel may read after the nest."""
        return tuple(v for v in dict.fromkeys(self.names.loop_vars) if v in self.live)

    @functools.cached_property
    def order_restriction(self) -> str | None:
        """Why the nest must keep its source order whatever the dependences allow, or None."""
        if not computable(self.nest, self.live_loop_vars):
            return ("a loop variable read after the nest belongs to a loop under an if (or to "
                    "sibling loops): its final value depends on the order of execution")
        return None

    @property
    def line(self) -> int:
        return self.node.lineno

    @functools.cached_property
    def exit_loops(self) -> frozenset[int]:
        """The loops (ids) a ``break`` may end: how many iterations they run depends on data."""
        return frozenset(loop.lid for loop in d.loops(self.nest.loop) if d.exits(loop))

    @functools.cached_property
    def statements(self) -> tuple[d.Assign, ...]:
        return tuple(d.statements(self.nest.loop))

    def text(self, sid: int) -> str:
        return statement_text(self.statements[sid])

    @functools.cached_property
    def sequential(self) -> Schedule:
        return sequential_schedule(self.nest)

    # -- staged dependence analysis ------------------------------------------------------------

    @functools.cached_property
    def static_dependences(self) -> StaticDependences:
        """The part of the dependence analysis that holds for every call (computed once)."""
        return static_dependences(self.access, self.scalars, self.statements)

    @functools.cached_property
    def structure(self) -> NestStructure:
        return nest_structure(self.nest, self.access, self.scalars)

    @functools.cached_property
    def executors(self) -> LRUCache:
        """Compiled executors of this nest, shared by every instance of the kernel (keyed by
        everything their code depends on: ``runtime.NestRunner._memo``)."""
        return LRUCache(EXECUTOR_CACHE_SIZE)

    @functools.cached_property
    def binder(self) -> Binder:
        return Binder(self.names, self.access)

    @functools.cached_property
    def _plans(self) -> LRUCache:
        """BindingKey -> Plan, for the bindings used most recently (``PLAN_CACHE_SIZE``)."""
        return LRUCache(PLAN_CACHE_SIZE)

    def plan(self, key: BindingKey) -> "Plan":
        """Dependence graph and schedule for one binding (memoized per binding)."""
        found = self._plans.recent.get(key)  # a hit: one dict lookup (see asp_core.lru)
        if found is None:
            found = self._plans.get(key)
            if found is None:
                found = self._plans.put(key, make_plan(self, key))
        return found


log = logging.getLogger("asp.loopnest")

PLAN_CACHE_SIZE = 256
#: Compiled executors kept per nest (shared by the kernel's instances).
EXECUTOR_CACHE_SIZE = 128


@dataclass(frozen=True, eq=False)
class Plan:
    """The per-binding result: the bound nest, its dependence graph and its schedule."""

    bound: BoundNest
    graph: DependenceGraph
    schedule: Schedule
    work: int = 0   # an upper bound of the number of statement instances
    rejected: tuple[str, ...] = ()  # what schedule verification found (then: source order)

    @functools.cached_property
    def parallel(self) -> bool:
        """Does the schedule run any loop in parallel?"""
        return bool(self.schedule.parallel_loops())


def make_plan(analysis: NestAnalysis, key: BindingKey) -> Plan:
    """Finish the staged analysis for one binding: bind, test the remaining pairs, schedule."""
    bound = bind_nest(analysis.names, analysis.access, analysis.binder.atoms, key)
    graph = dependence_graph(analysis.access, analysis.static_dependences, bound)
    work = 0
    for st in analysis.access.statements:
        count = 1
        for lid in st.loops:
            count *= max(bound.loops[lid].t_max + 1, 0)
        work += count
    if analysis.order_restriction:
        return Plan(bound, graph, analysis.sequential, work)
    schedule = schedule_nest(analysis.structure, graph, key.exact_reductions)
    wrong = tuple(violations(schedule, graph))
    if wrong:  # a scheduler bug: never run it; keep the source order, which is always legal
        log.error("loop nest %d at line %d: the schedule violates dependences (%s); running "
                  "it in source order", analysis.index, analysis.line, "; ".join(wrong[:3]))
        return Plan(bound, graph, analysis.sequential, work, wrong)
    return Plan(bound, graph, schedule, work)


@dataclass(frozen=True, eq=False)
class RejectedNest:
    """A nest outside the supported subset: it runs as the original Python code."""

    index: int
    node: ast.For
    error: UnsupportedConstruct

    @property
    def line(self) -> int:
        return self.node.lineno


@dataclass(frozen=True, eq=False)
class KernelAnalysis:
    source: KernelSource
    nests: tuple[NestAnalysis | RejectedNest, ...]


# Keyed by the function's identity (the value keeps it alive, so the id is not reused).
_KERNELS: dict[int, KernelAnalysis] = {}


def analyse_kernel(func: Callable) -> KernelAnalysis:
    """The static analysis of a kernel method (memoized per function)."""
    found = _KERNELS.get(id(func))
    if found is not None and found.source.fa.func is func:
        return found
    source = kernel_source(func)
    guarded = guarded_loops(source.fa.tree.body)
    nests = tuple(analyse_nest(source.ctx, node, index, id(node) in guarded)
                  for index, node in enumerate(source.nests))
    result = KernelAnalysis(source, nests)
    _KERNELS[id(func)] = result
    return result


def clear_cache() -> None:
    _KERNELS.clear()


def forget_executors() -> None:
    """Forget the compiled executors every kernel's nests share in this process (they are
    built again, or loaded from the disk cache, when next needed)."""
    for kernel in _KERNELS.values():
        for nest in kernel.nests:
            if isinstance(nest, NestAnalysis):
                nest.executors.clear()


#: The deepest nest (loops, statements and expressions, as levels of Python's AST) the
#: analyses take: they are recursive, a few frames per level, and stay well inside Python's
#: default recursion limit (1000) up to here. A deeper nest runs as Python with the reason.
MAX_AST_DEPTH = 160


def analyse_nest(ctx: KernelContext, node: ast.For, index: int, guarded: bool = False
                 ) -> NestAnalysis | RejectedNest:
    depth, deepest = ast_depth(node)
    if depth > MAX_AST_DEPTH:
        error = UnsupportedConstruct(
            f"the nest is {depth} levels deep as a syntax tree (a very long expression?); "
            f"the specializer takes up to {MAX_AST_DEPTH}", ctx.fa.location(deepest),
            "deep expression")
        return RejectedNest(index, node, error)
    try:
        live = names_read_outside(ctx.fa.tree, node)
        methods: list[StaticMethod] = []
        lowered = with_counted_loops(lower_nest(ctx, node, index, methods), WHILE_PREFIX, live)
        shadowed = needing_shadows(lowered, live)
        nest = if_convert(with_shadows(lowered, shadowed))
        names = nest_names(nest)
        access = access_info(nest, names)
        live = (live - shadowed) | {shadow_of(v) for v in shadowed} | \
            ({RETURN_FLAG, RETURN_VALUE} & set(names.scalars))   # read by ``rewrite``
        scalars = classify_scalars(nest, names, live)
        ranks = array_ranks(access)
    except UnsupportedConstruct as exc:
        return RejectedNest(index, node, exc)
    required = tuple(s for s in names.scalars if _read_on_entry(nest, s))
    names = names.unread_outside(live, required)
    # an inlined call out of Python's order: its errors come from the original code, as in try
    return NestAnalysis(index, node, nest, names, access, scalars, required, ranks, live,
                        guarded or nest.reordered, tuple(methods))


def array_ranks(access: AccessInfo) -> dict[str, int]:
    """How many subscripts each array takes (one element at a time: always the same number)."""
    ranks: dict[str, int] = {}
    for st in access.statements:
        for acc in st.accesses:
            known = ranks.setdefault(acc.array, len(acc.index))
            if known != len(acc.index):
                raise UnsupportedConstruct(
                    f"unsupported partial indexing: '{acc.array}' is indexed with {known} and "
                    f"with {len(acc.index)} subscripts", acc.loc, "partial indexing")
    return ranks


def _read_on_entry(nest: d.Nest, name: str) -> bool:
    return exposed(name, (nest.loop,))
