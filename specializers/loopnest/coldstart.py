"""Cold start: the first calls of a kernel that the specializer's own work would not pay for.

Analysing a kernel (its AST, its nests, their accesses and scalars) and rewriting it takes
1 to 25 ms on the development machine, once per kernel; a first call on small arrays runs in
microseconds as the original code. So a kernel starts *cold*: its calls run the original
method directly, timed, until that time reaches the predicted cost of its analysis (the
rent-or-buy rule of ``asp_core.selection``, one level up: a kernel called once on small data
never pays for an analysis it does not need; one called over and over is analysed after at
most about the analysis time spent in the original code). A call whose data suggest more work
than the analysis costs is analysed at once, so the cost model can choose a compiled variant
for it (compiling it in the same call where that pays off). On a kernel's first call the
analysis alone buys nothing: it pays off only where a compiled variant then pays off too, so
that call is analysed only where its work exceeds the analysis *and* a first variant's build
(``first_build_s``: compiled, or loaded where the disk cache says a process compiled a variant
of this method before, ``cost.index.kernel_key``). A first call of saxpy on 2**18 elements
(37 ms as Python) was analysed for 13 ms, and then ran as Python all the same.

The data suggest work by the arrays among the call's arguments and the kernel's attributes
(the integers among the arguments stand for a 1-D extent where there is no array): the loops
at depth ``L`` of a method whose largest array has ``N`` elements and ``d`` dimensions run
about ``N ** (L / d)`` iterations for ``L <= d``; loops deeper than ``d`` walk the smallest
array's dimensions first (gemm's three loops over ``n x n`` matrices: ``n ** 3``; conv2d's
four: its image times its filter), then the largest's. Each iteration costs what the
bytecode instructions of that loop's own body take (not counting the loops nested in it):
``INSTRUCTION_S`` each, ``SUBSCRIPT_S`` an array element read or written, ``CALL_S`` a call,
an ``if`` body's at ``GUARDED_WEIGHT``, read off the method's bytecode once
(``loop_levels``). The analysis cost is
proportional to the size of the method's bytecode (``ANALYSIS_S_PER_BYTE``, measured on the
twelve examples), plus, for the first kernel a process analyses, the analysis's own first use
(``FIRST_ANALYSIS_S``: the calibration read and the cost model's first estimates). These
prices are one machine's at one time; weighed against a first build (the calibration's compile
time), the work and the analysis are scaled by how much slower or faster the calibration finds
this machine's interpreter (``interpreter_scale``).
``strict=True``, a forced backend, ``ASP_SELECTION=fixed`` or ``explain()`` analyse at once.

The calls that stay cold take the *cold gate* where it is built (``gate``, ``_coldgate.c``): the
same decision and the same run, in C, so that a kernel's first call on small data costs its
original code and about a microsecond, not the 13 us that the dispatcher's own first execution
in Python costs (fbcorr on 4 x 4 images, a process's first call: 24 us through the Python
dispatcher, 10 through the gate, 9 as its original method).
"""

from __future__ import annotations

import functools
import logging
import time
import types
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from .distributed.refusal import PLAIN_TYPES, is_dask_collection, refuse_dask_arguments

#: Interpreter time per iteration of a loop body, per bytecode instruction (seconds): an
#: ordinary one, an array element read or written (``BINARY_SUBSCR``, ``STORE_SUBSCR``: NumPy
#: boxes or unboxes a scalar), a call. Fitted, in log, to the original code's time on the twelve
#: examples at 51 sizes from 1 to 150 ms here (``python -m benchmarks.bench_coldstart``):
#: within a factor 2.03 of every one (root mean square of the log error 0.22). One price for
#: every instruction (9 ns before; the best single one, 8 ns: 0.35) was off by up to 3.4x
#: (mandelbrot's escape-time loop, all arithmetic on locals: its first call on 128 x 128,
#: 63 ms as Python, was analysed for 23 ms, for nothing), and an earlier estimate per array
#: element by 2.5 (vadd to gemver).
INSTRUCTION_S = 3.25e-9
SUBSCRIPT_S = 32e-9
CALL_S = 150e-9
#: The analysis and rewrite of a kernel and its first binding, per byte of its bytecode, plus
#: a base (seconds): with the call's signature, 3.4 ms (vadd, 108 bytes) to 18.7 ms
#: (black_scholes, 944 bytes) in a new process here.
ANALYSIS_S_PER_BYTE = 18e-6
ANALYSIS_BASE_S = 1e-3
#: The first analysed call in a process also reads the machine's calibration and the
#: compiler's identity, and makes the cost model's first estimates (seconds: 5 to 7 ms and
#: 6 to 7 here).
FIRST_ANALYSIS_S = 12e-3
#: The interpreter these prices were fitted on, in the calibration's terms: an element loop's
#: iteration, load, arithmetic and store (``interpreter_scale``), in ns. Measured on
#: 2026-11-27 at 22:45: pinned to either core, the prices above were 1.9 and 2.5 times below
#: the twelve examples' measured times (51 points, geomean) with that figure at 134 ns, where
#: at their fit they were exact: this machine's interpreter had slowed about twofold.
INTERPRETER_REF_NS = 62.0
#: The most ``interpreter_scale`` moves the prices either way (a calibration made under load).
INTERPRETER_SCALE_LIMIT = 4.0
#: Lines of C a small nest adds to the runtime header (``cost.models.NestProfile.lines``).
TYPICAL_LINES = 50
_ANALYSED = [False]   # whether this process has analysed a kernel


def analysed() -> None:
    """A kernel was analysed in this process (the next ones cost less)."""
    _ANALYSED[0] = True


@dataclass
class ColdStart:
    """A kernel method not analysed yet: the time its original code has run, and the
    predicted cost of its analysis."""

    analysis_s: float
    #: per loop depth (1, 2, ...): the interpreter's time per iteration of the loops at that
    #: depth, their own bytecode instructions' (``loop_levels``)
    levels: tuple[float, ...] = (INSTRUCTION_S,)
    spent: float = 0.0
    calls: int = 0
    func: Callable | None = None   # the method (its compiled variants in the disk cache)
    build_s: float | None = None   # a first compiled variant's build (``first_build_s``)
    scale: float = 1.0             # the interpreter's speed against the prices' (read with it)

    @classmethod
    def of(cls, func: Callable) -> "ColdStart":
        code = func.__code__
        return cls(ANALYSIS_BASE_S + ANALYSIS_S_PER_BYTE * _bytecode_size(code),
                   tuple(loop_levels(code)), func=func)

    def stays_cold(self, owner: Any, args: tuple, kwargs: dict) -> bool:
        """Whether this call should run the original code without analysis (``work_hint``
        raises ``DaskArgumentError`` first for a Dask argument)."""
        work = work_hint(owner, args, kwargs, self.levels)
        limit = self.analysis_s if _ANALYSED[0] else self.analysis_s + FIRST_ANALYSIS_S
        if self.spent + work < limit:
            return True
        if self.calls:
            return False   # the calls so far paid for the analysis (rent-or-buy)
        if self.build_s is None:
            from .cost.estimates import LOAD_SECONDS

            if work < limit + LOAD_SECONDS:   # (a build costs at least a load: no need to
                return True                   # read what it costs, 7 ms on a first call)
        build = self.first_build_s()
        # The work and the analysis are the interpreter's, the build the compiler's: where
        # the calibration finds the interpreter slower than the prices' (``interpreter_scale``),
        # the build is worth more of them. (With the prices alone, saxpy's first call on 2**20
        # elements, 141 ms of work priced, 320 to 460 ms measured, stayed cold against a
        # build of 145 ms: its first call took 1.5 to 2 times the compiled one's.)
        return work * self.scale < limit * self.scale + build

    def first_build_s(self) -> float:
        """What a first compiled variant of the method costs to get: loaded where a process
        compiled one into the disk cache (``cost.index``), else compiled (asked once)."""
        if self.build_s is None:
            from .cost import index
            from .cost.estimates import LOAD_SECONDS
            from .cost.machine import machine

            m = machine()
            self.scale = interpreter_scale(m)
            if self.func is not None and index.compiled_before(index.kernel_key(self.func)):
                self.build_s = LOAD_SECONDS
            else:
                self.build_s = m.compile_base_s + m.compile_first_s + \
                    m.compile_per_line_s * TYPICAL_LINES
        return self.build_s

    def run(self, original: Callable, owner: Any, args: tuple, kwargs: dict) -> Any:
        """Run the original method, adding its time to what the cold kernel has spent."""
        started = time.perf_counter()
        try:
            return original(owner, *args, **kwargs)
        finally:
            self.spent += time.perf_counter() - started
            self.calls += 1


def interpreter_scale(m) -> float:
    """How much slower than the prices' interpreter (``INTERPRETER_REF_NS``) this machine's
    runs an element loop, by its calibration (``cost.machine.MachineParams``: an iteration, a
    load, an arithmetic operation and a store): 1.0 for the defaults, and within
    ``INTERPRETER_SCALE_LIMIT`` either way."""
    from .cost.machine import DEFAULTS

    if m is DEFAULTS:
        return 1.0
    ops = m.py_op_ns
    figure = m.py_iteration_ns + ops.get("load", 0.0) + ops.get("arith", 0.0) + \
        ops.get("store", 0.0)
    if not figure > 0:
        return 1.0
    return min(max(figure / INTERPRETER_REF_NS, 1 / INTERPRETER_SCALE_LIMIT),
               INTERPRETER_SCALE_LIMIT)


_NO_ATTRIBUTES: dict = {}
#: The attributes ``LoopKernel.__init__`` sets (``_asp_...``): an instance with no more has no
#: array among its attributes (not looked at: 5 us of a first call here).
LOOP_KERNEL_ATTRIBUTES = 8
_NDARRAY = np.ndarray
#: The types no Dask test is needed for: the plain arguments, and the kernel's own attributes.
_SKIPPED = PLAIN_TYPES | {dict}


def work_hint(owner: Any, args: tuple, kwargs: dict, levels: tuple[float, ...]) -> float:
    """An estimate, in seconds of the interpreter, of the work a call with these arguments
    may do, for a method whose loops at depth ``L`` cost ``levels[L - 1]`` an iteration (see
    the module); it raises ``DaskArgumentError`` for a Dask argument (``kernel()`` runs on
    NumPy arrays). The loops run along the largest array's dimensions, outermost first; loops
    nested deeper than its dimensions along the smallest array's (a convolution's two inner
    loops walk its 3 x 3 filter, not its image), then the largest's again. Without an array,
    the largest int argument is every loop's extent.

    This runs on a process's first call, where each object and code path touched for the
    first time costs a cache miss or more (about a microsecond each here): one pass over the
    values, with no other function for the common types, and integer products only. (As
    three functions, the Dask refusal, this estimate and its caller's checks took 18 us
    before a first call of vadd on 16 elements, which itself takes 12 us; extents taken as
    an array's size to the power of depth over dimensions, 14 us of a first call of fbcorr
    on 4 x 4 images, 9 of them in its seven levels' powers.)"""
    largest = longest = 0
    smallest = 1
    shape = small = _NO_SHAPE
    attributes = getattr(owner, "__dict__", _NO_ATTRIBUTES)
    for values in (args, kwargs.values() if kwargs else (),   # (``LoopKernel``'s own: none)
                   attributes.values() if len(attributes) > LOOP_KERNEL_ATTRIBUTES else ()):
        for value in values:
            kind = type(value)
            if kind is _NDARRAY:
                size = value.size
                if size > largest:
                    largest, shape = size, value.shape or _NO_SHAPE
                if 1 < size and (smallest == 1 or size < smallest):
                    smallest, small = size, value.shape
            elif kind is int:
                if value > longest:
                    longest = value
            elif kind not in _SKIPPED and is_dask_collection(value):
                refuse_dask_arguments(args, kwargs)   # (raises where it is an argument)
    if not largest:
        shape = small = (longest,)
    dims, small_dims = len(shape), len(small)
    work = 0.0
    iterations = depth = 0
    for seconds in levels:
        if depth < dims:
            iterations = shape[depth] if depth == 0 else iterations * shape[depth]
        elif depth - dims < small_dims:
            iterations *= small[depth - dims]
        else:
            iterations *= shape[(depth - dims - small_dims) % dims]
        depth += 1
        work += seconds * iterations
    return work


_NO_SHAPE = (1,)

log = logging.getLogger("asp.coldstart")
#: The types the gate passes over (no extent, and no Dask collection: ``work_hint`` asks Dask
#: and gets no), NumPy's common scalars among them.
_GATE_SKIPPED = frozenset(_SKIPPED | {np.float64, np.float32, np.int64, np.int32, np.int16,
                                      np.int8, np.uint64, np.uint32, np.uint16, np.uint8,
                                      np.bool_, np.complex128, np.complex64})
#: The cold gate's contract version (``GATE_ABI`` in ``_coldgate.c``).
GATE_ABI = 1


def gate(original: Callable, dispatch: Callable, table: dict, marker: Any) -> Callable:
    """A kernel method's entry point: the C cold gate in front of ``dispatch`` (the Python
    dispatcher), taking the calls that stay cold while ``table`` maps ``original`` to its
    ``ColdStart`` (and setting the instance's ``_asp_current`` to ``marker`` for them), where
    the extension is built and current; else ``dispatch`` itself. Either carries
    ``functools.update_wrapper``'s attributes of ``original``."""
    try:
        from . import _coldgate
    except ImportError:   # (not built: no Python headers where it was installed)
        return dispatch
    if getattr(_coldgate, "ABI", None) != GATE_ABI:
        log.info("the cold gate extension is stale (ABI %s, not %s): reinstall to rebuild "
                 "it; the Python dispatcher runs the cold calls",
                 getattr(_coldgate, "ABI", None), GATE_ABI)
        return dispatch
    entry = _coldgate.Gate(original, dispatch, table, _ANALYSED, _NDARRAY,
                           _GATE_SKIPPED, marker, FIRST_ANALYSIS_S,
                           LOOP_KERNEL_ATTRIBUTES)
    functools.update_wrapper(entry, original)
    entry._asp_dispatch = dispatch
    return entry


#: The weight of an instruction that a forward conditional jump may skip (an ``if``'s body):
#: the branch's neutral prior, as ``cost.models.GUARDED_SHARE`` prices a guarded statement.
#: (Counted whole, mandelbrot's escape-time loop suggested 88 ms of work on 64 x 64, where its
#: original code takes 16 ms, and its first call paid an analysis for nothing.)
GUARDED_WEIGHT = 0.5


def instruction_s(ins) -> float:
    """The interpreter's time for one bytecode instruction in a loop (see ``INSTRUCTION_S``;
    Python 3.14 reads a subscript with ``BINARY_OP []``)."""
    if ins.opname in ("BINARY_SUBSCR", "STORE_SUBSCR") or \
            (ins.opname == "BINARY_OP" and ins.argrepr == "[]"):
        return SUBSCRIPT_S
    return CALL_S if ins.opname == "CALL" else INSTRUCTION_S


def loop_instructions(code: types.CodeType) -> Iterator[tuple[int, Any, float]]:
    """Each bytecode instruction of a ``for`` loop's own body in ``code`` (not those of the
    loops nested in it), as (the loop's depth: 1, 2, ...; the instruction; its weight: 1, or
    ``GUARDED_WEIGHT`` where a forward conditional jump may skip it). A ``FOR_ITER`` spans the
    instructions up to its exit."""
    import dis

    listed = list(dis.get_instructions(code))
    spans = [(ins.offset, ins.argval) for ins in listed
             if ins.opname == "FOR_ITER" and isinstance(ins.argval, int)]
    skipped = [(ins.offset, ins.argval) for ins in listed
               if "JUMP" in ins.opname and "IF" in ins.opname and
               isinstance(ins.argval, int) and ins.argval > ins.offset]
    for start, end in spans:
        depth = sum(1 for s, e in spans if s <= start < e)
        inner = [(s, e) for s, e in spans if start < s < end]
        for ins in listed:
            if start <= ins.offset < end and not any(s <= ins.offset < e for s, e in inner):
                yield depth, ins, (GUARDED_WEIGHT if any(s < ins.offset < e
                                                         for s, e in skipped) else 1.0)


def loop_levels(code: types.CodeType) -> list[float]:
    """Per depth of ``for`` loops in ``code`` (1, 2, ...), the interpreter's time for one
    iteration of the loops at that depth: their own instructions' (``loop_instructions``),
    each at ``instruction_s`` times its weight."""
    levels: list[float] = []
    for depth, ins, weight in loop_instructions(code):
        levels.extend([0.0] * (depth - len(levels)))
        levels[depth - 1] += instruction_s(ins) * weight
    return levels


def _bytecode_size(code: types.CodeType) -> int:
    """The bytes of ``code`` and of the code objects nested in it (comprehensions...)."""
    return len(code.co_code) + sum(_bytecode_size(c) for c in code.co_consts
                                   if isinstance(c, types.CodeType))
