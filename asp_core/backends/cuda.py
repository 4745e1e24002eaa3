"""CUDA through pycuda: load a module compiled by nvcc, launch kernels, move arrays.

pycuda is optional (the ``[cuda]`` extra); it is imported only when one of these functions runs,
and its absence, or the absence of a GPU, raises ``BackendUnavailable``, which a specializer
treats as a reason to pick another variant. Modules are compiled by ``asp_core.backends.nvcc``
(cached on disk) for the device's own architecture and loaded with ``module_from_buffer``.

    module = load_cuda_module(source)
    x = to_device(np.arange(10.0))
    module.get_function("scale")(x, np.float64(2.0), np.int32(10), grid=(1, 1, 1), block=(32, 1, 1))
    result = x.get()
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Sequence

from ..errors import BackendUnavailable
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
def cuda_context(device: int = 0):
    """The primary context of ``device``, made current once for this process."""
    drv = _driver()
    try:
        drv.init()
        if drv.Device.count() <= device:
            raise BackendUnavailable(f"no CUDA device {device} (found {drv.Device.count()})")
        dev = drv.Device(device)
        context = dev.retain_primary_context()
        context.push()
    except drv.Error as exc:
        raise BackendUnavailable(f"CUDA driver error: {exc}") from exc
    import atexit

    atexit.register(context.pop)
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


@dataclass(eq=False)
class CudaModule:
    module: Any
    arch: str

    def get_function(self, name: str) -> CudaKernel:
        return CudaKernel(self.module.get_function(name), name)


def load_cuda_module(source: str, *, device: int = 0, options: Sequence[str] = ()) -> CudaModule:
    """Compile ``source`` for the device's architecture (cached) and load it."""
    cuda_context(device)
    arch = device_architecture(device)
    cubin = compile_cuda(source, arch=arch, target="cubin", options=options)
    return CudaModule(_driver().module_from_buffer(cubin), arch)


def to_device(array):
    """Copy a NumPy array to the GPU (a ``pycuda.gpuarray.GPUArray``)."""
    cuda_context()
    import pycuda.gpuarray as gpuarray

    return gpuarray.to_gpu(array)


def empty_on_device(shape, dtype):
    cuda_context()
    import pycuda.gpuarray as gpuarray

    return gpuarray.empty(shape, dtype)


def device_memory(device: int = 0) -> int:
    """Bytes of memory of ``device``."""
    cuda_context(device)
    return _driver().Device(device).total_memory()


def initialized(device: int = 0) -> bool:
    """Whether this process has made ``device``'s context already (its first use is paid)."""
    return cuda_context.cache_info().currsize > 0


def l2_cache_bytes(device: int = 0) -> int:
    """Bytes of ``device``'s L2 cache."""
    cuda_context(device)
    drv = _driver()
    return drv.Device(device).get_attribute(drv.device_attribute.L2_CACHE_SIZE)


def synchronize() -> None:
    cuda_context()
    _driver().Context.synchronize()
