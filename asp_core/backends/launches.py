"""Launch sequences of device kernels in compiled code: CUDA grids within the device's limits,
and host loops of CUDA or OpenCL launches with no Python between them; the shape of a block
(an OpenCL work-group) from the domain and the device's limits.

One small C library (``templates/asp_core/host_loops.c.mako``, built once per machine and
cached) takes the drivers' entry points as function pointers, so it links against no driver:
CUDA's ``cuLaunchKernel`` (from the driver library, ``backends.cuda``) or the host emulation's
launch of the same signature (``backends.emulation``), OpenCL's ``clSetKernelArg`` and
``clEnqueueNDRangeKernel`` (``backends.opencl``). The emulation therefore runs the very code
that launches on a GPU: the block shapes, the grid's split at the device's limits and the host
loops are tested on machines without one.

A CUDA launch (``cuda_launch``) shapes its block from the threads of each axis and the
device's limits (``GridLimits``; ``block_shape``): along x, then y, then z, the smallest power
of two that covers the axis, within the block's threads (OpenCL's work-groups likewise, the
work items padded to whole work-groups); an axis that needs more blocks than the device
launches along it (65535 along y and z) is split into launches of chunks of it, each told its
chunk's first value and trip count. A grid kernel takes those, per axis, as three int64
arguments (first value, step, trip count) from position ``base`` on.

    args = Arguments([address_of_x, np.float64(2.0), np.int64(0), np.int64(1), np.int64(n)])
    cuda_launch(launch, function, limits, [n], args, base=2)
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

#: The C library's functions (cffi declarations; pointers to driver functions as void *).
CDEF = """
void asp_block_shape(int32_t, const int64_t *, const int64_t *, int64_t *);
int32_t asp_opencl_host_loop(void *, void *, void *, const int64_t *, int64_t, int64_t, int64_t,
                             int32_t, void **, const int32_t *, const int32_t *,
                             const int32_t *, const int64_t *);
int32_t asp_cuda_launch(void *, void *, void *, const int64_t *, int32_t, const int64_t *,
                        int32_t, int32_t, void **);
int32_t asp_cuda_host_loop(void *, void *, const int64_t *, int64_t, int64_t, int64_t, int32_t,
                           void **, void ***, const int32_t *, const int32_t *,
                           const int32_t *, const int64_t *);
"""

#: What ``asp_cuda_launch`` returns for a launch it cannot make (an axis past the grid's limit
#: in a kernel that takes no first value and trip count per axis).
CANNOT_SPLIT = -1


@dataclass(frozen=True)
class GridLimits:
    """How big a CUDA launch may be: ``threads`` per block at most (the block size the
    launches aim at, within the device's most), the device's most threads per block along x,
    y, z (``block``) and blocks along x, y, z (``grid``)."""

    threads: int
    block: tuple[int, int, int]
    grid: tuple[int, int, int]

    def as_array(self) -> np.ndarray:
        return np.array([self.threads, *self.block, *self.grid], np.int64)


#: The threads of a block the launches aim at: four warps, a block every CUDA device runs (up
#: to 1024); nvcc's report for the examples' kernels (``benchmarks/bench_device.py``) gives
#: their registers at it an occupancy of 0.56 to 1.00 on sm_90.
BLOCK_THREADS = 128

#: A CUDA device's limits since compute capability 3.0 (the emulation's, and a GPU's unless
#: its attributes say otherwise: ``cuda.grid_limits``).
CUDA_LIMITS = GridLimits(BLOCK_THREADS, (1024, 1024, 64), (2**31 - 1, 65535, 65535))


_LOCK = threading.Lock()
_LIBRARY: list[Any] = []   # the library, once loaded


def library() -> Any:
    """The compiled launch library (a ``CModule``), built once per machine (disk cache) and
    loaded once per process (threads that ask first at once wait for one build; later calls,
    one per launch, take no lock)."""
    if not _LIBRARY:
        with _LOCK:
            if not _LIBRARY:
                from ..templates import render
                from .c import compile_c

                _LIBRARY.append(compile_c(render("asp_core/host_loops.c.mako"), CDEF,
                                          name="host_loops"))
    return _LIBRARY[0]


class Arguments:
    """A kernel's arguments as ``cuLaunchKernel`` takes them: ``params``, an array of pointers,
    one to each value. Each value has an 8-byte slot of its own: a NumPy scalar is stored in
    its own type, an int is a device address (a pointer argument)."""

    def __init__(self, values: Sequence[Any]):
        ffi = library().ffi
        self._slots = np.zeros(max(len(values), 1), np.uint64)
        raw = self._slots.view(np.uint8)
        for index, value in enumerate(values):
            if isinstance(value, np.generic):
                raw[8 * index:8 * index + value.itemsize] = np.frombuffer(value.tobytes(),
                                                                          np.uint8)
            else:
                self._slots[index] = int(value)
        address = self._slots.ctypes.data
        self.params = ffi.new("void *[]", [ffi.cast("void *", address + 8 * index)
                                           for index in range(len(self._slots))])

    def int64(self, index: int) -> int:
        """The value of argument ``index``, an int64."""
        return int(self._slots[index:index + 1].view(np.int64)[0])


def block_shape(sizes: Sequence[int], limits: GridLimits) -> tuple[int, ...]:
    """The block (work-group) over ``sizes`` threads per axis, one size per axis, by the rule
    the compiled launches follow (see the module; ``asp_block_shape`` in the C). Written in
    Python too, so that an OpenCL launch outside a host loop needs no compiled library: its
    build (90 ms in a new cache folder) was a process's first OpenCL call's. A test holds
    the two to the same shapes."""
    left, block = limits.threads, []
    for size, most in zip(sizes, limits.block):
        b = 1
        while b < size and 2 * b <= left and 2 * b <= most:
            b *= 2
        block.append(b)
        left //= b
    return tuple(block)


def compiled_block_shape(sizes: Sequence[int], limits: GridLimits) -> tuple[int, ...]:
    """``block_shape`` as the compiled library computes it."""
    module = library()
    ffi = module.ffi
    block = ffi.new("int64_t[3]")
    module.function("asp_block_shape")(len(sizes), ffi.new("int64_t[]", [int(s) for s in sizes]
                                                           or [1]),
                                       ffi.from_buffer("int64_t[]", limits.as_array()), block)
    return tuple(block[a] for a in range(len(sizes)))


def cuda_launch(launch: int, function: int, limits: GridLimits, sizes: Sequence[int],
                arguments: Arguments, *, group: int = 0, base: int = -1, stream: int = 0
                ) -> int:
    """Launch ``function`` (an address ``launch``, of ``cuLaunchKernel``'s signature, takes)
    over ``sizes`` threads per axis (none: one thread), in blocks of ``group`` threads along x
    where ``group`` (``sizes[0]`` a multiple of it), else of the block shape of the module's
    rule. ``base``: the position of the first axis's first value, step and trip count, where
    the launch may be split (see the module). Returns the launch's error code (0: none;
    ``CANNOT_SPLIT``)."""
    module = library()
    ffi = module.ffi
    return module.function("asp_cuda_launch")(
        ffi.cast("void *", launch), ffi.cast("void *", function), ffi.cast("void *", stream),
        ffi.from_buffer("int64_t[]", limits.as_array()), len(sizes),
        ffi.new("int64_t[]", [int(s) for s in sizes] or [1]), group, base, arguments.params)


@dataclass(frozen=True)
class HostLoop:
    """A sequential loop of launches: iterations ``0 .. trips - 1``, its variable
    ``first + t * step``; per kernel, its number of grid axes, the position of its first
    axis's arguments and of the loop variable's, and per axis five ``forms`` (counting the
    axes of all kernels in order): its first value ``forms[0] + forms[1] * t``, its extent
    ``forms[2] + forms[3] * t`` and its step ``forms[4]``."""

    trips: int
    first: int
    step: int
    naxes: tuple[int, ...]
    base: tuple[int, ...]
    host: tuple[int, ...]
    forms: tuple[int, ...]

    def c_arrays(self, ffi) -> tuple:
        return (ffi.new("int32_t[]", list(self.naxes)), ffi.new("int32_t[]", list(self.base)),
                ffi.new("int32_t[]", list(self.host)), ffi.new("int64_t[]", list(self.forms) or [0]))


def cuda_host_loop(launch: int, functions: Sequence[int], arguments: Sequence[Arguments],
                   limits: GridLimits, loop: HostLoop, *, stream: int = 0) -> int:
    """Run ``loop``: per iteration, each kernel's axes and the loop variable written into its
    ``arguments``, then the kernel launched as ``cuda_launch`` does (a kernel with an empty
    axis is not). Returns the first launch's error code (0: none)."""
    module = library()
    ffi = module.ffi
    return module.function("asp_cuda_host_loop")(
        ffi.cast("void *", launch), ffi.cast("void *", stream),
        ffi.from_buffer("int64_t[]", limits.as_array()), loop.trips, loop.first, loop.step,
        len(functions), ffi.new("void *[]", [ffi.cast("void *", f) for f in functions]),
        ffi.new("void **[]", [a.params for a in arguments]), *loop.c_arrays(ffi))


def opencl_host_loop(set_arg: int, enqueue: int, queue: int, kernels: Sequence[int],
                     limits: Sequence[GridLimits], loop: HostLoop) -> int:
    """Run ``loop`` on OpenCL: per iteration, each kernel's axes and the loop variable set
    (``set_arg``: ``clSetKernelArg``'s address) and the kernel enqueued on ``queue``
    (``enqueue``: ``clEnqueueNDRangeKernel``'s) in work-groups of ``block_shape`` within its
    ``limits``, its work items padded to whole work-groups. The kernels' other arguments must
    be set already. Returns the first OpenCL error code (0: none)."""
    module = library()
    ffi = module.ffi
    return module.function("asp_opencl_host_loop")(
        ffi.cast("void *", set_arg), ffi.cast("void *", enqueue), ffi.cast("void *", queue),
        ffi.from_buffer("int64_t[]", np.concatenate([lim.as_array() for lim in limits])),
        loop.trips, loop.first, loop.step, len(kernels),
        ffi.new("void *[]", [ffi.cast("void *", k) for k in kernels]), *loop.c_arrays(ffi))
