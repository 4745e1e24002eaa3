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

The data suggest work by the arrays among the call's arguments and the kernel's attributes,
and the integers among the arguments (loop bounds): a nest ``L`` loops deep over arrays of up
to ``d`` dimensions and ``N`` elements runs about ``N`` iterations times, for each loop
deeper than ``d``, the extent of a dimension of the smallest arrays (gemm's three loops over
``n x n`` matrices: ``n ** 3``; conv2d's four: its image times its filter), each at least
``WORK_S_PER_ELEMENT`` in the interpreter, times one per ``BYTES_PER_UNIT`` bytes of the
method's bytecode (a loop body of more operations costs more per iteration); ``L`` and the
bytecode's size are read off the method's bytecode (the deepest nesting of its ``for``
loops), once. The analysis cost is proportional to the size of the method's bytecode
(``ANALYSIS_S_PER_BYTE``, measured on the twelve examples), plus, for the first kernel a
process analyses, the analysis's own first use (``FIRST_ANALYSIS_S``: the modules it loads,
measured at 20 to 25 ms). ``strict=True``, a forced backend, ``ASP_SELECTION=fixed``
or ``explain()`` analyse at once.
"""

from __future__ import annotations

import time
import types
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

#: Interpreter time per array element a call may touch, a lower bound of its work (seconds)...
WORK_S_PER_ELEMENT = 60e-9
#: ...times one per this many bytes of the method's bytecode (at least once). On the twelve
#: examples the time of plain Python over the element count times 60 ns was 1.1 (vadd, 108
#: bytes) to 34 (gemver, 562 bytes), at least 1/100 of the bytecode's size but for the two
#: whose depth the element count already overstates (conv2d, fbcorr); without the factor,
#: first calls of jacobi and conway at 512 x 512 ran as Python without analysis, twice as long
#: as analysing and compiling would have taken.
BYTES_PER_UNIT = 100
#: The analysis and rewrite of a kernel and its first binding, per byte of its bytecode, plus
#: a base (seconds): the static part alone measured 10 to 64 us a byte on the examples.
ANALYSIS_S_PER_BYTE = 30e-6
ANALYSIS_BASE_S = 2e-3
#: The first analysis in a process loads the analysis and code generation (seconds).
FIRST_ANALYSIS_S = 20e-3
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
    depth: int = 1        # the deepest nesting of for loops in the method
    weight: float = 1.0   # the work per element, in WORK_S_PER_ELEMENT (the bytecode's size)
    spent: float = 0.0
    calls: int = 0
    func: Callable | None = None   # the method (its compiled variants in the disk cache)
    build_s: float | None = None   # a first compiled variant's build (``first_build_s``)

    @classmethod
    def of(cls, func: Callable) -> "ColdStart":
        size = _bytecode_size(func.__code__)
        return cls(ANALYSIS_BASE_S + ANALYSIS_S_PER_BYTE * size, loop_depth(func.__code__),
                   max(1.0, size / BYTES_PER_UNIT), func=func)

    def stays_cold(self, owner: Any, args: tuple, kwargs: dict) -> bool:
        """Whether this call should run the original code without analysis."""
        first = 0.0 if _ANALYSED[0] else FIRST_ANALYSIS_S
        work = self.weight * work_hint(owner, args, kwargs, self.depth)
        if self.spent + work < self.analysis_s + first:
            return True
        if self.calls:
            return False   # the calls so far paid for the analysis (rent-or-buy)
        return work < self.analysis_s + first + self.first_build_s()

    def first_build_s(self) -> float:
        """What a first compiled variant of the method costs to get: loaded where a process
        compiled one into the disk cache (``cost.index``), else compiled (asked once)."""
        if self.build_s is None:
            from .cost import index
            from .cost.estimates import LOAD_SECONDS
            from .cost.machine import machine

            if self.func is not None and index.compiled_before(index.kernel_key(self.func)):
                self.build_s = LOAD_SECONDS
            else:
                m = machine()
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


_NO_ATTRIBUTES: dict = {}


def work_hint(owner: Any, args: tuple, kwargs: dict, depth: int = 1) -> float:
    """An estimate, in seconds of the interpreter, of the work a call with these arguments
    may do, for a method whose loops nest ``depth`` deep (see the module). Loops nested
    deeper than the largest array's dimensions run along the smallest array's dimensions
    first (a convolution's two inner loops walk its 3 x 3 filter, not its image: ``N ** (L /
    d)`` counted conv2d's first call on 32 x 32 as 326 ms of work where it took 8), then the
    largest's; a dimension of an array of ``n`` elements and ``k`` dimensions taken as
    ``n ** (1 / k)`` long. (One pass over the values, no other function: this runs on every
    cold call, where each new function's first run costs microseconds.)"""
    elements = largest = 0
    smallest = dims = small_dims = 1
    ndarray = np.ndarray
    for values in (args, kwargs.values(), getattr(owner, "__dict__", _NO_ATTRIBUTES).values()):
        for value in values:  # (run on every cold call: kept lean)
            kind = type(value)
            if kind is ndarray:
                size = value.size
                elements += size
                if size > largest:
                    largest, dims = size, value.ndim or 1
                if 1 < size and (smallest == 1 or size < smallest):
                    smallest, small_dims = size, value.ndim or 1
            elif kind is int and value > 0:
                elements += value
    if largest and depth > dims:
        loops = depth - dims
        walked = min(loops, small_dims)
        inner = smallest ** (walked / small_dims) * largest ** ((loops - walked) / dims)
        elements = max(elements, largest * inner)
    return elements * WORK_S_PER_ELEMENT


def loop_depth(code: types.CodeType) -> int:
    """The deepest nesting of ``for`` loops in ``code``, from its bytecode: each ``FOR_ITER``
    spans the instructions up to its exit."""
    import dis

    spans = [(ins.offset, ins.argval) for ins in dis.get_instructions(code)
             if ins.opname == "FOR_ITER" and isinstance(ins.argval, int)]
    deepest = 0
    for start, end in spans:
        depth = sum(1 for s, e in spans if s <= start < e)
        deepest = max(deepest, depth)
    return max(1, deepest)


def _bytecode_size(code: types.CodeType) -> int:
    """The bytes of ``code`` and of the code objects nested in it (comprehensions...)."""
    return len(code.co_code) + sum(_bytecode_size(c) for c in code.co_consts
                                   if isinstance(c, types.CodeType))
