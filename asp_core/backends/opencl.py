"""OpenCL through pyopencl: the device, its programs, its buffers.

pyopencl is optional (the ``[opencl]`` extra) and so is an OpenCL driver (on Debian, PoCL runs
OpenCL on the CPU: ``apt-get install pocl-opencl-icd``); either missing raises
``BackendUnavailable``, which a specializer treats as a reason to pick another variant.

The device is the first GPU any platform offers, else the first device of any kind
(``ASP_OPENCL_DEVICE=platform:device`` picks one by index). Programs are built once per
source and options in a process; pyopencl keeps the binaries on disk between processes in its
own cache (under this project's cache folder).

    program = build_program(source)
    kernel = program.asp_scale
    buf = to_device(np.arange(10.0))
    kernel(queue(), (10,), None, buf, np.float64(2.0))
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import BackendUnavailable, CompileError


def _cl():
    try:
        import pyopencl as cl
    except ImportError as exc:
        raise BackendUnavailable("pyopencl is not installed (pip install 'asp-sejits[opencl]')"
                                 ) from exc
    return cl


@dataclass(frozen=True)
class OpenCLDevice:
    """What the cost model and the code generator need to know of the device."""

    platform: str
    name: str
    kind: str                   # "GPU", "CPU", "ACCELERATOR"
    compute_units: int
    max_work_group_size: int
    max_work_item_sizes: tuple[int, int, int]   # the most work items of a work-group per axis
    global_memory: int          # bytes
    local_memory: int           # bytes
    cache: int                  # bytes of its global memory cache (0: none)
    doubles: bool               # cl_khr_fp64 (or OpenCL 1.2+'s double support)


_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def _runtime() -> tuple[Any, Any, OpenCLDevice]:
    cl = _cl()
    try:
        platforms = cl.get_platforms()
    except cl.Error as exc:   # no ICD loader configuration, no platform
        raise BackendUnavailable(f"no OpenCL platform: {exc}") from exc
    chosen = os.environ.get("ASP_OPENCL_DEVICE", "").strip()
    devices = [(p, dev) for p in platforms for dev in _devices(cl, p)]
    if not devices:
        raise BackendUnavailable("no OpenCL device (on Debian, 'apt-get install "
                                 "pocl-opencl-icd' runs OpenCL on the CPU)")
    if chosen:
        try:
            pi, di = (int(x) for x in chosen.split(":"))
            platform, device = platforms[pi], _devices(cl, platforms[pi])[di]
        except (ValueError, IndexError) as exc:
            raise BackendUnavailable(f"ASP_OPENCL_DEVICE={chosen!r} names no device "
                                     "(platform:device, by index)") from exc
    else:
        gpus = [(p, dev) for p, dev in devices if dev.type & cl.device_type.GPU]
        platform, device = (gpus or devices)[0]
    context = cl.Context([device])
    queue = cl.CommandQueue(context)
    extensions = device.extensions.split()
    info = OpenCLDevice(
        platform=platform.name.strip(), name=device.name.strip(),
        kind=next((name for name in ("GPU", "CPU", "ACCELERATOR")
                   if device.type & getattr(cl.device_type, name)), "OTHER"),
        compute_units=device.max_compute_units,
        max_work_group_size=device.max_work_group_size,
        max_work_item_sizes=tuple((list(device.max_work_item_sizes) + [1, 1, 1])[:3]),
        global_memory=device.global_mem_size, local_memory=device.local_mem_size,
        cache=device.global_mem_cache_size,
        doubles="cl_khr_fp64" in extensions or device.double_fp_config != 0)
    return context, queue, info


def _devices(cl, platform) -> list:
    try:
        return platform.get_devices()
    except cl.Error:
        return []


def initialized() -> bool:
    """Whether this process has set up its OpenCL device already (its first use is paid)."""
    return "pyopencl" in sys.modules and _runtime.cache_info().currsize > 0


def device() -> OpenCLDevice:
    """The OpenCL device this process uses (``BackendUnavailable`` if there is none)."""
    return _runtime()[2]


def context():
    return _runtime()[0]


def queue():
    return _runtime()[1]


#: Build options for Python's meaning of float32 arithmetic: division and square root
#: correctly rounded, as IEEE 754 and NumPy have them (OpenCL allows 2.5 ulp by default); and
#: no warnings (PoCL's compiler prints them on the process's stderr: "1 warning generated").
#: (Sources ask for no contraction into fused multiply-adds with ``#pragma OPENCL FP_CONTRACT
#: OFF``; PoCL refuses options it does not know, such as ``-fwrapv``.)
IEEE_OPTIONS = ("-cl-fp32-correctly-rounded-divide-sqrt", "-w")


@functools.lru_cache(maxsize=256)
def build_program(source: str, options: tuple[str, ...] = IEEE_OPTIONS) -> Any:
    """The program of ``source`` built for the device (``CompileError`` with the build log if
    the device compiler refuses it)."""
    cl = _cl()
    from ..config import current

    cache_dir = current().cache_dir
    folder = str(cache_dir / "pyopencl") if cache_dir else None
    try:
        with _LOCK, warnings.catch_warnings():
            # The device compiler's warnings about generated code (``x && 1``) are not the
            # user's to read: pyopencl's CompilerWarning is silenced here.
            warnings.simplefilter("ignore", cl.CompilerWarning)
            return cl.Program(context(), source).build(options=list(options),
                                                       cache_dir=folder)
    except cl.Error as exc:
        raise CompileError(f"the OpenCL compiler refused the program: {exc}",
                           output=str(exc)) from exc


def kernel(program: Any, name: str) -> Any:
    """Kernel ``name`` of ``program`` (one object per caller: set its arguments per launch)."""
    return _cl().Kernel(program, name)


def enqueue(kernel: Any, global_size: tuple[int, ...],
            local_size: tuple[int, ...] | None = None) -> None:
    """Launch ``kernel`` (its arguments set) over ``global_size`` work items, in work-groups
    of ``local_size`` (None: the size left to the implementation)."""
    _cl().enqueue_nd_range_kernel(queue(), kernel, global_size, local_size)


_OPENCL_CDEF = ("int32_t clSetKernelArg(void *, uint32_t, size_t, const void *);\n"
                "int32_t clEnqueueNDRangeKernel(void *, void *, uint32_t, const size_t *, "
                "const size_t *, const size_t *, uint32_t, const void *, void *);")


@functools.lru_cache(maxsize=1)
def _entry_points() -> tuple[int, int, Any] | None:
    """The addresses of the two OpenCL entry points a compiled host loop calls
    (``launches.opencl_host_loop``), from the process's OpenCL library, or None where it cannot
    be opened by name."""
    import cffi

    library = _loaded_library()
    if library is None:
        return None
    ffi = cffi.FFI()
    ffi.cdef(_OPENCL_CDEF)
    try:
        lib = ffi.dlopen(library)
    except OSError:
        return None
    addresses = [int(ffi.cast("uintptr_t", ffi.addressof(lib, name)))
                 for name in ("clSetKernelArg", "clEnqueueNDRangeKernel")]
    return addresses[0], addresses[1], lib   # (the library stays open with them)


def _loaded_library() -> str | None:
    """The OpenCL library pyopencl calls: the ICD loader mapped into this process (pyopencl's
    wheel bundles one of its own, ``pyopencl/.libs/libOpenCL-*.so``), else the system's by
    name. (Another loader than pyopencl's also works through the ICD dispatch of the objects,
    but loads the drivers a second time, and a machine may have no system loader at all.)"""
    import ctypes.util

    try:
        _runtime()   # (pyopencl's loader mapped)
    except BackendUnavailable:
        pass
    try:
        with open("/proc/self/maps") as maps:
            mapped = {line.split()[-1] for line in maps if "/libOpenCL" in line}
    except OSError:
        mapped = set()
    ours = sorted(path for path in mapped if "pyopencl" in path) or sorted(mapped)
    return ours[0] if ours else ctypes.util.find_library("OpenCL")


def host_loop_available() -> bool:
    return _entry_points() is not None


def host_loop(kernels: list, limits: list, loop) -> None:
    """Run a sequential loop of launches in compiled code (``launches.opencl_host_loop``, a
    ``launches.HostLoop``): per iteration, each kernel's grid arguments (first value, step,
    trip count per axis) and loop variable set, and the kernel enqueued in work-groups shaped
    within its ``limits`` (``launches.GridLimits``). The kernels' other arguments must be set
    already. ``RuntimeError`` with OpenCL's code if a call fails."""
    from . import launches

    set_arg, enqueue, _ = _entry_points()
    code = launches.opencl_host_loop(set_arg, enqueue, queue().int_ptr,
                                     [k.int_ptr for k in kernels], limits, loop)
    if code:
        raise RuntimeError(f"an OpenCL launch of the host loop failed with error {code}")


def to_device(array: np.ndarray) -> Any:
    """A device buffer holding a copy of ``array`` (any layout: copied C-contiguous)."""
    cl = _cl()
    data = np.ascontiguousarray(array)
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
    return cl.Buffer(context(), flags, size=max(data.nbytes, 1), hostbuf=data if data.nbytes
                     else np.zeros(1, np.uint8))


def empty_on_device(nbytes: int) -> Any:
    """A device buffer of ``nbytes`` whose contents are undefined (a kernel writes them all)."""
    cl = _cl()
    return cl.Buffer(context(), cl.mem_flags.READ_WRITE, size=max(nbytes, 1))


def from_device(buffer: Any, like: np.ndarray) -> np.ndarray:
    """A new C-contiguous array with the shape and dtype of ``like``, read from ``buffer``."""
    return from_device_many([(buffer, like)])[0]


def from_device_many(pairs: list[tuple[Any, np.ndarray]]) -> list[np.ndarray]:
    """``from_device`` of each (buffer, like) pair, the reads enqueued together and waited
    for once: a blocking read waits for the driver's queue to wake and drain (about 65 us each
    on PoCL here), so four of them cost a call four waits."""
    outs = [np.empty(like.shape, like.dtype) for _, like in pairs]
    read_into([(buffer, out) for (buffer, _), out in zip(pairs, outs)])
    return outs


def read_into(pairs: list[tuple[Any, np.ndarray]]) -> None:
    """Each (buffer, array) pair's buffer read into its array (C-contiguous, of the buffer's
    size), the reads enqueued together and waited for once."""
    cl = _cl()
    events = [cl.enqueue_copy(queue(), out, buffer, is_blocking=False)
              for buffer, out in pairs if out.nbytes]
    if events:
        cl.wait_for_events(events)
