"""The cyclic garbage collector held off while the specializer builds.

Analysing a kernel and generating, compiling and loading a variant allocate hundreds of
thousands of objects, most of them alive until the build ends (syntax trees, IR, templates).
Each 700 allocations start a collection of the youngest objects, and every few of those a
full one, which walks every object in the process: the user's data, NumPy's, and the
specializer's own modules. On first calls of jacobi at 1024 x 1024 in new processes, the
build of serial C took 132 to 139 ms with the collector on and 123 to 125 with it off when
the kernel was forced to C, and 148 to 158 against 116 to 129 under the cost model, whose
modules and calibration add objects to every full collection (its first calls were 15 to
20 ms slower than the forced ones for that alone). So ``paused()`` turns the collector off
for the duration of a build: a phase that allocates many objects that live until it ends,
where collections find little garbage and cost much.

Nothing is lost: objects freed by their reference count go at once as always, and cycles made
meanwhile are collected by the first collection after the build. The collector is process-
wide, so the pauses are counted: overlapping builds (a background build beside a call's) turn
it back on when the last ends, and only where it was on before the first (a program that
turned it off keeps it off).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from typing import Iterator

_LOCK = threading.Lock()
_STATE = [0, False]   # builds under way, whether the collector was on before the first


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The cyclic collector off while the block runs (counted across threads)."""
    with _LOCK:
        if not _STATE[0]:
            _STATE[1] = gc.isenabled()
            gc.disable()
        _STATE[0] += 1
    try:
        yield
    finally:
        with _LOCK:
            _STATE[0] -= 1
            if not _STATE[0] and _STATE[1]:
                gc.enable()
