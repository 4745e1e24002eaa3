"""Device variants of a nest: a ``codegen.device`` module run on OpenCL (pyopencl), on CUDA
(pycuda), or through the host emulation of CUDA launches (``cuda-emulated``, a checker).

One call:

1. each array the nest reads or writes is copied to the device once, C-contiguous (bool arrays
   as bytes);
2. the module's kernels are launched in schedule order, all on one queue, nothing waited for
   in between: a grid kernel over its mapped loops' trip counts, taken from the call's binding
   (``launch_grid``); a one-work-item kernel on one; a reduction over ``reduction_groups``
   work-groups of ``GROUP_SIZE`` lanes (a function of the trip count alone), then its
   combining kernel on one work item; the kernels of a host loop once per iteration of it, in
   order, with its variable (and their grids at it), by a loop in compiled code
   (``asp_core.backends.launches``), with no Python between launches. CUDA launches (a GPU's
   and the emulation's alike) go through the same compiled code: ``cuLaunchKernel`` (or the
   emulation's launch of its signature) in blocks shaped from the domain and the device's
   limits, split along an axis that needs more blocks than the device launches there;
3. the error word, the result record and the arrays the nest writes are read back, all at
   once (one wait on OpenCL: a blocking read each cost a call 65 us on PoCL here): if a
   thread failed, nothing is copied into the caller's arrays, so they hold what they held
   before the call, and the call returns ``RUN_ORIGINAL``: the original code runs and raises
   (or, past 64 bits, computes) exactly as Python does. A forced backend or strict
   kernel raises ``BeyondInt64`` for a Python int beyond 64 bits instead, as the C variants do;
4. else the arrays the nest writes are copied into the caller's arrays, and the result record
   (scalars a one-work-item kernel leaves) gives the scalars.

The emulation runs the CUDA source compiled for the host (``asp_core.backends.emulation``) on
host copies of the arrays, with blocks and threads visited one at a time in a seeded random
order (``ASP_SHUFFLE_SEED``; a block whose kernel synchronizes runs its threads as fibers that
meet at each barrier, in a new random order after each); it tests the device code path (grid
mapping, guards, the index arithmetic of every thread, independence of the parallel
iterations, the barriers of a reduction's tree) without a GPU.

An OpenCL device (or a reduction kernel built for it) that cannot run work-groups of
``GROUP_SIZE`` work items, or lacks the local memory of its tree, is refused
(``BackendUnavailable``: another variant runs, the reason said): a smaller work-group would
reduce in another tree, and so give other bits, than every other device.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, Sequence

import numpy as np

from asp_core.backends import launches
from asp_core.backends.launches import HostLoop

from .codegen.device import (GROUP_SIZE, NUMPY_OF_CTYPE, DeviceModule, host_loop_range,
                              launch_grid)
from .rewrite import RUN_ORIGINAL
from .variants import BEYOND_INT64_MESSAGE, BeyondInt64, NestResults

#: The most lanes of a reduction (``REDUCTION_GROUPS`` work-groups of ``GROUP_SIZE``): each
#: reduces every lanes-th iteration of the band, each work-group combines its lanes' results in
#: a tree, one work item then the work-groups' results in order (``codegen.device``).
REDUCTION_GROUPS = 32
REDUCTION_LANES = REDUCTION_GROUPS * GROUP_SIZE


def reduction_groups(total: int) -> int:
    """Work-groups of a reduction over ``total`` iterations: one lane per iteration up to
    ``REDUCTION_LANES`` lanes, in whole work-groups. A function of the trip count alone, so
    that the result does not depend on the device."""
    return min(REDUCTION_GROUPS, -(-total // GROUP_SIZE))


class _Target:
    """Where a module runs: buffers, launches, reads."""

    def upload(self, array: np.ndarray) -> Any:
        raise NotImplementedError

    def allocate(self, like: np.ndarray) -> Any:
        """A buffer for an array like ``like`` that the call overwrites whole
        (``coverage``): nothing copied in."""
        return self.upload(like)

    def download(self, buffer: Any, like: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def download_many(self, pairs: list[tuple[Any, np.ndarray]]) -> list[np.ndarray]:
        """``download`` of each (buffer, like) pair (a target may wait for them at once)."""
        return [self.download(buffer, like) for buffer, like in pairs]

    def read_into(self, pairs: list[tuple[Any, np.ndarray]]) -> None:
        """Each (buffer, array) pair's buffer read into its array: C-contiguous, of the
        buffer's size and bytes (a bool array's uint8 view for a buffer of bools; a target
        may wait for them at once)."""
        for buffer, out in pairs:
            np.copyto(out, self.download(buffer, out))

    def launch(self, name: str, args: Sequence[Any], sizes: Sequence[int], group: int = 0,
               base: int = -1) -> None:
        """Launch kernel ``name`` over ``sizes`` work items, in work-groups of ``group`` along
        x (0: the target's choice); ``base``: the position of the first grid axis's first
        value, step and trip count among ``args`` (-1: none), where the target may split the
        launch along an axis."""
        raise NotImplementedError

    def host_loop(self, group: list, args: list, failed: Any, loop: HostLoop) -> bool:
        """Run a host loop's launches in compiled code; False: the caller launches them."""
        return False


#: The bytes of written arrays from which a call reads them straight into the caller's arrays.
DIRECT_BYTES = 1 << 20


def _read_back(target: _Target, pairs: list[tuple[Any, np.ndarray]]) -> None:
    """Each (buffer, host array) pair's buffer into its host array: straight in where the
    array is C-contiguous, else through a new array copied after."""
    outs = [host if host.flags.c_contiguous else np.empty(host.shape, host.dtype)
            for _, host in pairs]
    target.read_into([(buffer, out) for (buffer, _), out in zip(pairs, outs)])
    for (_, host), out in zip(pairs, outs):
        if out is not host:
            np.copyto(host, out)


def _host_loop(group: list, plan, host, values: range, before: int) -> HostLoop | None:
    """The ``launches.HostLoop`` of ``group``'s kernels over ``values`` of the host loop
    ``host``, their grid arguments after ``before`` others and the error word; None where a
    bound depends on more than the host loop (the caller launches from Python)."""
    naxes, base, hosts, forms = [], [], [], []
    for kernel in group:
        naxes.append(len(kernel.axes))
        base.append(before + 1)
        hosts.append(before + 1 + 3 * len(kernel.axes))
        for a in kernel.axes:
            bound = plan.bound.loops[a.lid]
            start, extent = dict(bound.start.coeffs), dict(bound.extent.coeffs)
            if set(start) - {host.lid} or set(extent) - {host.lid}:
                return None
            forms += [bound.start.const, start.get(host.lid, 0), bound.extent.const,
                      extent.get(host.lid, 0), bound.step]
    return HostLoop(len(values), values.start, values.step, tuple(naxes), tuple(base),
                    tuple(hosts), tuple(forms))


def _loop_arguments(args: list, failed: Any, loop: HostLoop, k: int) -> list:
    """Kernel ``k``'s arguments in host loop ``loop``: the nest's data, the error word, then
    zeros where the loop writes its axes and variable at each iteration."""
    return [*args, failed, *[np.int64(0)] * (loop.host[k] - len(args))]


class _CudaLaunches(_Target):
    """Launches of a CUDA module (a GPU's, or its emulation's) through ``launches``: in
    compiled code, with the block shapes and the grid's limits of ``self._limits``."""

    _module: Any
    _limits: launches.GridLimits

    def address(self, buffer: Any) -> int:
        """The device address of ``buffer``."""
        raise NotImplementedError

    def _arguments(self, args: Sequence[Any]) -> launches.Arguments:
        return launches.Arguments([a if isinstance(a, np.generic) else self.address(a)
                                   for a in args])

    def launch(self, name: str, args: Sequence[Any], sizes: Sequence[int], group: int = 0,
               base: int = -1) -> None:
        code = launches.cuda_launch(self._module.launch_address(),
                                    self._module.function_address(name), self._limits, sizes,
                                    self._arguments(args), group=group, base=base)
        if code == launches.CANNOT_SPLIT:
            raise RuntimeError(f"the launch of {name} over {list(sizes)} needs more blocks "
                               "than the device launches, and the kernel cannot be split")
        if code:
            raise self._module.launch_error(code, f"the launch of {name} over {list(sizes)}")

    def host_loop(self, group: list, args: list, failed: Any, loop: HostLoop) -> bool:
        arguments = [self._arguments(_loop_arguments(args, failed, loop, k))
                     for k in range(len(group))]
        code = launches.cuda_host_loop(
            self._module.launch_address(), [self._module.function_address(k.name)
                                            for k in group], arguments, self._limits, loop)
        if code:
            raise self._module.launch_error(code, "a launch of a host loop")
        return True


class OpenCLTarget(_Target):
    def __init__(self, module: DeviceModule):
        from asp_core.backends import opencl

        self._cl = opencl
        info = opencl.device()
        self._program = (opencl.build_program(module.source) if info.doubles else
                         _single_precision_program(opencl, module, info.name))
        self._kernels = {k.name: opencl.kernel(self._program, k.name) for k in module.kernels}
        for k in module.kernels:
            if k.group:
                self._check_group(k, info)
        # each kernel's work-groups: shaped from the domain (launches.block_shape) within the
        # device's limits and the kernel's own (its registers may allow fewer work items)
        self._limits = {k.name: self._group_limits(k.name, info) for k in module.kernels}
        self._last: dict[str, list] = {}   # each kernel's arguments at its last launch
        self._lock = threading.Lock()

    def _group_limits(self, name: str, info) -> launches.GridLimits:
        import pyopencl as cl

        most = self._kernels[name].get_work_group_info(
            cl.kernel_work_group_info.WORK_GROUP_SIZE, self._cl.context().devices[0])
        return launches.GridLimits(min(launches.BLOCK_THREADS, info.max_work_group_size, most),
                                   info.max_work_item_sizes, launches.CUDA_LIMITS.grid)

    def _check_group(self, kernel, info) -> None:
        """Refuse a device that cannot run ``kernel`` in its work-groups (see the module)."""
        import pyopencl as cl

        from asp_core.errors import BackendUnavailable

        handle = self._kernels[kernel.name]
        device = self._cl.context().devices[0]
        most = min(info.max_work_group_size, handle.get_work_group_info(
            cl.kernel_work_group_info.WORK_GROUP_SIZE, device))
        if most < kernel.group:
            raise BackendUnavailable(
                f"the OpenCL device {info.name} runs work-groups of at most {most} work items "
                f"for this reduction, which reduces in work-groups of {kernel.group} (the same "
                "on every device, for the same bits)")
        local = handle.get_work_group_info(cl.kernel_work_group_info.LOCAL_MEM_SIZE, device)
        if local > info.local_memory:
            raise BackendUnavailable(
                f"the OpenCL device {info.name} has {info.local_memory} bytes of local memory; "
                f"this reduction's tree needs {local}")

    def upload(self, array: np.ndarray) -> Any:
        return self._cl.to_device(array)

    def allocate(self, like: np.ndarray) -> Any:
        return self._cl.empty_on_device(like.nbytes)

    def download(self, buffer: Any, like: np.ndarray) -> np.ndarray:
        return self._cl.from_device(buffer, like)

    def download_many(self, pairs: list[tuple[Any, np.ndarray]]) -> list[np.ndarray]:
        return self._cl.from_device_many(pairs)

    def read_into(self, pairs: list[tuple[Any, np.ndarray]]) -> None:
        self._cl.read_into(pairs)

    def launch(self, name: str, args: Sequence[Any], sizes: Sequence[int], group: int = 0,
               base: int = -1) -> None:
        # Only the arguments that changed since this kernel's last launch are set again:
        # pyopencl's Kernel.__call__ sets all of them, 125 us for 17 arguments on PoCL here,
        # against 18 us for one set_arg and the enqueue (a host loop's launches).
        kernel = self._kernels[name]
        with self._lock:   # a kernel's arguments are state: one launch sets them at a time
            last = self._last.get(name)
            if last is None or len(last) != len(args):
                kernel.set_args(*args)
            else:
                for index, (old, new) in enumerate(zip(last, args)):
                    # (the same bits, not equal values: -0.0 == 0.0, and 1 / x tells them
                    # apart)
                    if old is not new and not (type(old) is type(new) and
                                               isinstance(new, np.generic) and
                                               old.tobytes() == new.tobytes()):
                        kernel.set_arg(index, new)
            self._last[name] = list(args)
            local = (group,) + (1,) * (len(sizes) - 1) if group else \
                launches.block_shape(sizes, self._limits[name])
            padded = tuple(-(-size // each) * each for size, each in zip(sizes, local))
            self._cl.enqueue(kernel, padded, local)

    def host_loop(self, group: list, args: list, failed: Any, loop: HostLoop) -> bool:
        """Run a host loop's launches in compiled code (``opencl.host_loop``): False where it
        cannot (no OpenCL library to call by name), and the caller launches from Python."""
        if not self._cl.host_loop_available():
            return False
        with self._lock:
            for k, kernel in enumerate(group):   # the arguments the loop does not change
                self._kernels[kernel.name].set_args(*_loop_arguments(args, failed, loop, k))
                self._last.pop(kernel.name, None)
            self._cl.host_loop([self._kernels[k.name] for k in group],
                               [self._limits[k.name] for k in group], loop)
        return True


class EmulatedCudaTarget(_CudaLaunches):
    """Host copies stand for device buffers; launches go through the emulation."""

    def __init__(self, module: DeviceModule):
        from asp_core.backends.emulation import emulate_cuda_module

        self._module = emulate_cuda_module(module.source, cflags=("-O1",))
        # A checker: blocks and threads in a seeded random order (``ASP_SHUFFLE_SEED``, as the
        # shuffled order checker takes it; the emulation's own order is the seed plus one).
        self._module.set_order_seed(int(os.environ.get("ASP_SHUFFLE_SEED", "0")) + 1)
        self._limits = launches.CUDA_LIMITS

    def upload(self, array: np.ndarray) -> Any:
        return np.array(array, order="C", copy=True)

    def allocate(self, like: np.ndarray) -> Any:
        # every byte set: an element the kernels leave unwritten reads as NaN or -1, and the
        # checker's results differ from Python's (a GPU's memory would hold anything)
        buffer = np.empty(like.shape, like.dtype)
        buffer.view(np.uint8).fill(0xFF)
        return buffer

    def address(self, buffer: np.ndarray) -> int:
        return buffer.ctypes.data

    def download(self, buffer: Any, like: np.ndarray) -> np.ndarray:
        return buffer


class CudaTarget(_CudaLaunches):
    """A CUDA GPU through pycuda (``asp_core.backends.cuda``)."""

    def __init__(self, module: DeviceModule):
        from asp_core.backends import cuda

        self._cuda = cuda
        self._module = cuda.load_cuda_module(module.source, options=("--fmad=false",))
        self._module.prepare([k.name for k in module.kernels])
        self._limits = cuda.grid_limits()

    def upload(self, array: np.ndarray) -> Any:
        return self._cuda.to_device(array)

    def allocate(self, like: np.ndarray) -> Any:
        return self._cuda.empty_on_device(like.shape, like.dtype)

    def address(self, buffer: Any) -> int:
        # an empty buffer has no allocation (gpudata None): no thread reads it
        return 0 if buffer.gpudata is None else int(buffer.gpudata)

    def download(self, buffer: Any, like: np.ndarray) -> np.ndarray:
        return buffer.get()

    def read_into(self, pairs: list[tuple[Any, np.ndarray]]) -> None:
        self._cuda.read_into(pairs)


#: The line of a device module after the runtime helpers (templates/loopnest/device_module.mako).
NEST_MARK = "/* ---- the nest ---- */"


def _single_precision_program(opencl, module: DeviceModule, device: str) -> Any:
    """``module`` built for a device without double precision: its runtime helpers in double
    left out (``ASP_NO_F64``). A nest that computes in double (its kernels, parameters or
    result name the type, or call a helper in double) is refused, saying why."""
    from asp_core.errors import BackendUnavailable, CompileError

    refusal = f"the OpenCL device {device} has no double precision, which this nest computes in"
    if "double" in module.source.partition(NEST_MARK)[2]:
        raise BackendUnavailable(refusal)
    try:
        return opencl.build_program("#define ASP_NO_F64 1\n" + module.source)
    except CompileError as exc:   # a helper in double (math.sqrt, true division...) it calls
        raise BackendUnavailable(f"{refusal} (through a helper: {exc})") from exc


def gpu_layout(backend: str) -> bool:
    """Whether ``backend``'s kernels are laid out for a GPU (``DeviceLayout``): CUDA's and
    its emulation's, and OpenCL's on a device that is not a CPU."""
    if backend != "opencl":
        return True
    from asp_core.backends import opencl

    return opencl.device().kind != "CPU"


def device_memory(backend: str) -> int | None:
    """Bytes of memory of the device ``backend`` runs on (None: the host's, emulated)."""
    if backend == "opencl":
        from asp_core.backends import opencl

        return opencl.device().global_memory
    if backend == "cuda":
        from asp_core.backends import cuda

        return cuda.device_memory()
    return None


TARGETS: dict[str, Callable[[DeviceModule], _Target]] = {
    "opencl": OpenCLTarget, "cuda": CudaTarget, "cuda-emulated": EmulatedCudaTarget}


class DeviceVariant:
    """A device module, called with the nest's inputs (see the module). ``plan_of()``: the
    plan of the current call's binding (its loops' first values, steps and trip counts)."""

    def __init__(self, backend: str, module: DeviceModule, analysis,
                 plan_of: Callable[[], Any], raise_beyond: bool):
        self.backend = backend
        self.module = module
        self._target = TARGETS[backend](module)
        self._plan_of = plan_of
        self._raise_beyond = raise_beyond
        self._analysis = analysis
        self._overwritten: tuple[Any, frozenset] = (None, frozenset())  # (plan, positions)
        self._results = NestResults(analysis, module.outputs)
        self._out_dtype = module.out_dtype()
        # consecutive kernels run by one host loop form a group; every other kernel its own
        self._groups: list[list[Any]] = []
        for kernel in module.kernels:
            if self._groups and kernel.host_loop is not None and \
                    self._groups[-1][0].host_loop == kernel.host_loop:
                self._groups[-1].append(kernel)
            else:
                self._groups.append([kernel])

    def _launch(self, kernel, plan, args: list, failed, out, groups: int, total: int,
                partials: list, t: dict[int, int] | None = None, value: int = 0
                ) -> tuple[int, int, list]:
        """Launch one kernel; ``t`` and ``value``: the iteration and variable of the host loop
        around it. A reduction's lanes return their work-groups' partial results, which its
        combining kernel, launched next, is given."""
        target = self._target
        extra: list[Any] = [failed]
        sizes = [1]
        if kernel.single:
            extra.append(out)
        else:
            grid = launch_grid(kernel, plan, t)
            sizes = [trips for _, _, trips in grid]
            for lo, step, trips in grid:
                extra += [np.int64(lo), np.int64(step), np.int64(trips)]
            if kernel.reduced:   # lanes, each reducing a share of the band's iterations
                total = int(np.prod(sizes, dtype=object))
                groups = reduction_groups(total)
                partials = [target.upload(np.zeros(max(groups, 1), NUMPY_OF_CTYPE[c]))
                            for _, c in kernel.reduced]
                sizes = [groups * kernel.group]
            if any(size == 0 for size in sizes):
                return groups, total, partials
        if kernel.host_loop is not None:
            extra.append(np.int64(value))
        if kernel.reduced:
            extra += [np.int64(groups), np.int64(total), *partials]
        base = -1 if kernel.single or kernel.reduced else len(args) + 1
        target.launch(kernel.name, args + extra, sizes, kernel.group, base)
        return groups, total, partials

    def _fresh_positions(self, plan) -> frozenset[int]:
        """The input positions of the arrays this call overwrites whole (``coverage``: they
        need no copy to the device), for the binding of ``plan`` (memoized on the last)."""
        if self._overwritten[0] is not plan:
            from .coverage import overwritten

            names = overwritten(self._analysis, plan)
            canonical = plan.bound.canonical
            inputs = self._analysis.names.inputs
            self._overwritten = (plan, frozenset(
                arg.position for arg in self.module.arguments if arg.kind == "array" and
                canonical.get(inputs[arg.position]) in names))
        return self._overwritten[1]

    def __call__(self, *inputs: Any) -> Any:
        module, target = self.module, self._target
        buffers: dict[int, Any] = {}     # input position -> its buffer
        by_memory: dict[tuple, Any] = {}  # one buffer per array memory (arguments passed twice)
        plan = self._plan_of()
        fresh = self._fresh_positions(plan)
        args = []
        for arg, ctype in zip(module.arguments, module.argument_types):
            value = inputs[arg.position]
            if arg.kind == "array":
                if arg.position not in buffers:
                    memory = (value.__array_interface__["data"][0], value.shape,
                              value.strides, value.dtype.str)
                    if memory not in by_memory:
                        data = value.view(np.uint8) if value.dtype == np.bool_ and \
                            ctype == "uint8_t" else value
                        by_memory[memory] = target.allocate(data) \
                            if arg.position in fresh else target.upload(data)
                    buffers[arg.position] = by_memory[memory]
                args.append(buffers[arg.position])
            elif arg.kind == "shape":
                args.append(np.int64(value.shape[arg.dim]))
            else:
                args.append(NUMPY_OF_CTYPE[ctype](value))
        failed = target.upload(np.zeros(1, np.int32))
        out = target.upload(np.zeros(1, self._out_dtype))
        groups = total = 0
        partials: list[Any] = []
        for group in self._groups:
            host = group[0].host_loop
            if host is None:
                for kernel in group:
                    groups, total, partials = self._launch(kernel, plan, args, failed, out,
                                                           groups, total, partials)
                continue
            values = host_loop_range(group[0], plan)
            loop = _host_loop(group, plan, host, values, len(args))
            if loop is not None and target.host_loop(group, args, failed, loop):
                continue
            for t, value in enumerate(values):
                for kernel in group:   # launched in order on one queue; nothing waited for
                    self._launch(kernel, plan, args, failed, out, 0, 0, [], {host.lid: t},
                                 value)
        # The caller's arrays are written only once the error word says the call did not
        # fail. Small ones are read with it, into new host arrays copied after it (one wait);
        # from DIRECT_BYTES on, the word is read first and the arrays straight into the
        # caller's (a second wait, against a copy and the page faults of new arrays: on an
        # H100 a read into new pages ran at 2.8 GB/s)
        written = module.written
        likes = [inputs[p].view(np.uint8) if inputs[p].dtype == np.bool_ else inputs[p]
                 for p in written]
        direct = sum(like.nbytes for like in likes) >= DIRECT_BYTES
        read = target.download_many([(failed, np.zeros(1, np.int32)),
                                     (out, np.zeros(1, self._out_dtype))] +
                                    ([] if direct else [(buffers[p], like)
                                                        for p, like in zip(written, likes)]))
        code = int(read[0][0])
        if code:
            if code == 5 and self._raise_beyond:
                raise BeyondInt64(BEYOND_INT64_MESSAGE)
            return RUN_ORIGINAL
        if direct:
            _read_back(target, [(buffers[p], like) for p, like in zip(written, likes)])
        else:
            for position, result in zip(written, read[2:]):
                host = inputs[position]
                np.copyto(host, result.view(host.dtype).reshape(host.shape))
        record = read[1][0]
        return self._results(inputs, lambda field: record[field])
