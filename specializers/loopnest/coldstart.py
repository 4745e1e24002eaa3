"""Cold start: the first calls of a kernel that the specializer's own work would not pay for.

Analysing a kernel (its AST, its nests, their accesses and scalars) and rewriting it takes
1 to 25 ms on the development machine, once per kernel; a first call on small arrays runs in
microseconds as the original code. So a kernel starts *cold*: its calls run the original
method directly, timed, until that time reaches the predicted cost of its analysis (the
rent-or-buy rule of ``asp_core.selection``, one level up: a kernel called once on small data
never pays for an analysis it does not need; one called over and over is analysed after at
most about the analysis time spent in the original code). A call whose data suggest more work
than the analysis costs is analysed at once, so the cost model can choose a compiled variant
for it (compiling it in the same call where that pays off).

The data suggest work by the elements of the arrays among the call's arguments and the
kernel's attributes (each element read at least once in Python: ``WORK_NS_PER_ELEMENT``) and
by the integers among the arguments (a loop bound); the analysis cost is proportional to the
size of the method's bytecode (``ANALYSIS_S_PER_BYTE``, measured on the twelve examples), plus
the specializer's first imports. ``strict=True``, a forced backend, ``ASP_SELECTION=fixed``
or ``explain()`` analyse at once.
"""

from __future__ import annotations

import time
import types
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

#: Interpreter time per array element a call may touch, a lower bound of its work (seconds).
WORK_S_PER_ELEMENT = 60e-9
#: The analysis and rewrite of a kernel and its first binding, per byte of its bytecode, plus
#: a base (seconds): the static part alone measured 10 to 64 us a byte on the examples.
ANALYSIS_S_PER_BYTE = 30e-6
ANALYSIS_BASE_S = 2e-3


@dataclass
class ColdStart:
    """A kernel method not analysed yet: the time its original code has run, and the
    predicted cost of its analysis."""

    analysis_s: float
    spent: float = 0.0
    calls: int = 0

    @classmethod
    def of(cls, func: Callable) -> "ColdStart":
        return cls(ANALYSIS_BASE_S + ANALYSIS_S_PER_BYTE * _bytecode_size(func.__code__))

    def stays_cold(self, owner: Any, args: tuple, kwargs: dict) -> bool:
        """Whether this call should run the original code without analysis."""
        return self.spent + work_hint(owner, args, kwargs) < self.analysis_s

    def run(self, original: Callable, owner: Any, args: tuple, kwargs: dict) -> Any:
        """Run the original method, adding its time to what the cold kernel has spent."""
        started = time.perf_counter()
        try:
            return original(owner, *args, **kwargs)
        finally:
            self.spent += time.perf_counter() - started
            self.calls += 1


def work_hint(owner: Any, args: tuple, kwargs: dict) -> float:
    """A lower bound, in seconds of the interpreter, of the work a call with these arguments
    may do (see the module)."""
    elements = 0
    for value in (*args, *kwargs.values(), *getattr(owner, "__dict__", {}).values()):
        if type(value) is np.ndarray:
            elements += value.size
        elif type(value) is int and value > 0:
            elements += value
    return elements * WORK_S_PER_ELEMENT


def _bytecode_size(code: types.CodeType) -> int:
    """The bytes of ``code`` and of the code objects nested in it (comprehensions...)."""
    return len(code.co_code) + sum(_bytecode_size(c) for c in code.co_consts
                                   if isinstance(c, types.CodeType))
