"""CUDA through pycuda: load a module compiled by nvcc, launch kernels, move arrays.

pycuda is optional (the ``[cuda]`` extra); it is imported only when one of these functions runs,
and its absence, or the absence of a GPU, raises ``BackendUnavailable``, which a specializer
treats as a reason to pick another variant. Modules are compiled by ``asp_core.backends.nvcc``
(cached on disk) for the device's own architecture and loaded with ``module_from_buffer``.

Launches from compiled code (``backends.launches``: grids within the device's limits, host
loops) call the driver's ``cuLaunchKernel`` themselves, with the ``CUfunction`` handles of the
same cubin loaded through the driver's ``cuModuleLoadData`` (pycuda does not expose its
handles); arrays are ``DeviceBuffer``s (the driver's allocations; their device address
``int(a.gpudata)``) and the context is pycuda's primary one, which the driver calls use as the
current context.

    module = load_cuda_module(source)
    x = to_device(np.arange(10.0))
    module.get_function("scale")(x, np.float64(2.0), np.int32(10), grid=(1, 1, 1), block=(32, 1, 1))
    result = x.get()
"""

from __future__ import annotations

import functools
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..errors import AspError, BackendUnavailable
from .nvcc import compile_cuda


def _driver():
    try:
        import pycuda.driver as drv
    except ImportError as exc:
        raise BackendUnavailable("pycuda is not installed (pip install 'asp-sejits[cuda]')") from exc
    except Exception as exc:  # pycuda imports, but libcuda is missing or broken
        raise BackendUnavailable(f"pycuda cannot load the CUDA driver: {exc}") from exc
    return drv


@functools.lru_cache(maxsize=None)
def _primary_context(device: int):
    """The primary context of ``device``, retained once for this process."""
    drv = _driver()
    try:
        drv.init()
        if drv.Device.count() <= device:
            raise BackendUnavailable(f"no CUDA device {device} (found {drv.Device.count()})")
        return drv.Device(device).retain_primary_context()
    except drv.Error as exc:
        raise BackendUnavailable(f"CUDA driver error: {exc}") from exc


#: Per thread, the device whose primary context it made current (a driver call from a thread
#: where no context is current fails: a calibration in a background thread, a user's threads).
_CURRENT = threading.local()


class _Pushed:
    """A context pushed in a thread other than the main one, popped when the thread ends:
    this object lives in the thread's own storage (``_CURRENT``), which CPython clears on the
    ending thread itself. pycuda aborts the process when a thread ends with a context left on
    its stack ("The context stack was not empty upon module cleanup"; seen on an H100 when a
    variant built in the background build thread loaded its module there)."""

    def __init__(self, context):
        self.context = context

    def __del__(self):
        try:
            self.context.pop()
        except Exception:   # the interpreter is going down: nothing left to pop into
            pass


def cuda_context(device: int = 0):
    """The primary context of ``device``, made current in the calling thread (once per
    thread; popped when the thread ends, the main thread's at the process's exit)."""
    context = _primary_context(device)
    if getattr(_CURRENT, "device", None) != device:
        drv = _driver()
        try:
            context.push()
        except drv.Error as exc:
            raise BackendUnavailable(f"CUDA driver error: {exc}") from exc
        _CURRENT.device = device
        if threading.current_thread() is threading.main_thread():
            import atexit

            atexit.register(context.pop)
        else:
            _CURRENT.pushed = _Pushed(context)
    return context


def device_architecture(device: int = 0) -> str:
    """``sm_XY`` of ``device``."""
    cuda_context(device)
    major, minor = _driver().Device(device).compute_capability()
    return f"sm_{major}{minor}"


@dataclass(eq=False)
class CudaKernel:
    """A ``__global__`` function; call it with ``grid`` and ``block`` (3-tuples)."""

    function: Any
    name: str

    def __call__(self, *args: Any, grid: Sequence[int] = (1, 1, 1),
                 block: Sequence[int] = (1, 1, 1)) -> None:
        grid3 = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
        block3 = tuple(int(b) for b in block) + (1,) * (3 - len(block))
        self.function(*args, grid=grid3, block=block3)


class CudaLaunchError(AspError):
    """A launch made through the driver's ``cuLaunchKernel`` (``launches``) failed."""


#: The driver library's own entry points that pycuda does not give: a module's function
#: handles, and ``cuLaunchKernel`` for launch sequences in compiled code (``launches``).
_DRIVER_CDEF = """
int cuModuleLoadData(void **module, const void *image);
int cuModuleGetFunction(void **function, void *module, const char *name);
int cuModuleUnload(void *module);
int cuLaunchKernel(void *, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                   unsigned int, unsigned int, void *, void **, void **);
int cuGetErrorName(int error, const char **name);
"""


@functools.lru_cache(maxsize=1)
def _driver_api() -> tuple[Any, Any]:
    """(ffi, library) of the CUDA driver library, as pycuda loaded it (``libcuda``)."""
    import ctypes.util

    import cffi

    cuda_context()
    ffi = cffi.FFI()
    ffi.cdef(_DRIVER_CDEF)
    names = [ctypes.util.find_library("cuda"), "libcuda.so.1", "libcuda.so"]
    for name in filter(None, names):
        try:
            return ffi, ffi.dlopen(name)
        except OSError:
            continue
    raise BackendUnavailable("the CUDA driver library (libcuda) cannot be opened by name")


def _check(code: int, what: str) -> None:
    if code:
        raise CudaLaunchError(f"{what} failed: {error_name(code)}")


def error_name(code: int) -> str:
    """The driver's name of error ``code`` (``CUDA_ERROR_...``)."""
    ffi, lib = _driver_api()
    name = ffi.new("const char **")
    if lib.cuGetErrorName(code, name) or name[0] == ffi.NULL:
        return f"CUDA error {code}"
    return ffi.string(name[0]).decode()


_HANDLES_LOCK = threading.Lock()


@dataclass(eq=False)
class CudaModule:
    module: Any
    arch: str
    cubin: bytes = b""
    #: the module loaded through the driver's own entry points, and its kernels' handles
    _driver_module: Any = field(default=None, repr=False)
    _handles: dict[str, int] = field(default_factory=dict, repr=False)

    def get_function(self, name: str) -> CudaKernel:
        return CudaKernel(self.module.get_function(name), name)

    def launch_address(self) -> int:
        """The address of the driver's ``cuLaunchKernel`` (for ``backends.launches``)."""
        ffi, lib = _driver_api()
        return int(ffi.cast("uintptr_t", ffi.addressof(lib, "cuLaunchKernel")))

    def function_address(self, name: str) -> int:
        """The ``CUfunction`` of kernel ``name``, for ``launch_address``'s function: from the
        module loaded once more through the driver's own entry points (pycuda's objects do
        not expose their handles; it is unloaded with this object)."""
        with _HANDLES_LOCK:
            if name not in self._handles:
                ffi, lib = _driver_api()
                if self._driver_module is None:
                    module = ffi.new("void **")
                    _check(lib.cuModuleLoadData(module, ffi.from_buffer(self.cubin)),
                           "loading the module")
                    self._driver_module = module[0]
                    weakref.finalize(self, lib.cuModuleUnload, module[0])
                function = ffi.new("void **")
                _check(lib.cuModuleGetFunction(function, self._driver_module, name.encode()),
                       f"finding kernel {name}")
                self._handles[name] = int(ffi.cast("uintptr_t", function[0]))
            return self._handles[name]

    def prepare(self, names: Sequence[str]) -> None:
        """The handles of kernels ``names`` found now, so that a module the driver refuses
        is refused before any call (``BackendUnavailable``: another variant runs)."""
        try:
            for name in names:
                self.function_address(name)
        except CudaLaunchError as exc:
            raise BackendUnavailable(str(exc)) from exc

    def launch_error(self, code: int, what: str) -> Exception:
        return CudaLaunchError(f"{what} failed: {error_name(code)}")


def load_cuda_module(source: str, *, device: int = 0, options: Sequence[str] = ()) -> CudaModule:
    """Compile ``source`` for the device's architecture (cached) and load it."""
    cuda_context(device)
    arch = device_architecture(device)
    cubin = compile_cuda(source, arch=arch, target="cubin", options=options)
    return CudaModule(_driver().module_from_buffer(cubin), arch, bytes(cubin))


def grid_limits(device: int = 0):
    """The ``launches.GridLimits`` of ``device``, from its attributes."""
    from .launches import BLOCK_THREADS, GridLimits

    cuda_context(device)
    drv = _driver()
    a = drv.device_attribute
    attrs = drv.Device(device).get_attributes()
    return GridLimits(
        min(BLOCK_THREADS, attrs[a.MAX_THREADS_PER_BLOCK]),
        (attrs[a.MAX_BLOCK_DIM_X], attrs[a.MAX_BLOCK_DIM_Y], attrs[a.MAX_BLOCK_DIM_Z]),
        (attrs[a.MAX_GRID_DIM_X], attrs[a.MAX_GRID_DIM_Y], attrs[a.MAX_GRID_DIM_Z]))


#: The attributes ``device_attributes`` reads (pycuda's names of the driver's).
ATTRIBUTES = ("MULTIPROCESSOR_COUNT", "WARP_SIZE", "COMPUTE_CAPABILITY_MAJOR", "CLOCK_RATE",
              "MEMORY_CLOCK_RATE", "GLOBAL_MEMORY_BUS_WIDTH", "L2_CACHE_SIZE",
              "MAX_THREADS_PER_MULTIPROCESSOR")


def device_attributes(device: int = 0) -> dict[str, int]:
    """``ATTRIBUTES`` of ``device`` by name, those its driver and pycuda know."""
    cuda_context(device)
    drv = _driver()
    attrs = drv.Device(device).get_attributes()
    return {name: int(attrs[getattr(drv.device_attribute, name)]) for name in ATTRIBUTES
            if hasattr(drv.device_attribute, name) and
            getattr(drv.device_attribute, name) in attrs}


class DeviceBuffer:
    """An array's bytes on the GPU, allocated by the driver (``gpudata``: the allocation, None
    for no bytes; pycuda's launches take any object with that attribute). pycuda's
    ``GPUArray`` costs some twenty Python calls per array made, copied in and read back: on an
    H100 a call of vadd on 16 elements took 424 us, most of it there."""

    __slots__ = ("gpudata", "shape", "dtype", "nbytes")

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(int(n) for n in shape), np.dtype(dtype)
        self.nbytes = self.dtype.itemsize * int(np.prod(self.shape, dtype=np.int64))
        self.gpudata = _driver().mem_alloc(self.nbytes) if self.nbytes else None

    def get(self) -> np.ndarray:
        """A new host array holding the buffer's bytes."""
        out = np.empty(self.shape, self.dtype)
        read_into([(self, out)])
        return out


def to_device(array) -> DeviceBuffer:
    """A GPU buffer holding a copy of the NumPy array ``array`` (any layout: copied C-ordered)."""
    cuda_context()
    data = np.ascontiguousarray(array)
    buffer = DeviceBuffer(data.shape, data.dtype)
    if buffer.nbytes:
        _driver().memcpy_htod(buffer.gpudata, data)
    return buffer


def read_into(pairs) -> None:
    """Each (buffer, array) pair's GPU buffer copied into the host array: C-contiguous, of the
    buffer's bytes, whatever their type (a bool array's bytes from a buffer of uint8)."""
    drv = _driver()
    for buffer, out in pairs:
        if out.nbytes != buffer.nbytes or not out.flags.c_contiguous:
            raise ValueError(f"cannot read {buffer.nbytes} bytes into a {out.shape} array of "
                             f"{out.dtype} (C-contiguous: {out.flags.c_contiguous})")
        if out.nbytes:
            drv.memcpy_dtoh(out, buffer.gpudata)


def empty_on_device(shape, dtype) -> DeviceBuffer:
    """A GPU buffer for an array of ``shape`` and ``dtype``, its bytes undefined."""
    cuda_context()
    return DeviceBuffer(shape, dtype)


def device_memory(device: int = 0) -> int:
    """Bytes of memory of ``device``."""
    cuda_context(device)
    return _driver().Device(device).total_memory()


def initialized(device: int = 0) -> bool:
    """Whether this process has made ``device``'s context already (its first use is paid)."""
    return _primary_context.cache_info().currsize > 0


def l2_cache_bytes(device: int = 0) -> int:
    """Bytes of ``device``'s L2 cache."""
    cuda_context(device)
    drv = _driver()
    return drv.Device(device).get_attribute(drv.device_attribute.L2_CACHE_SIZE)


def synchronize() -> None:
    cuda_context()
    _driver().Context.synchronize()
