"""Hardware and toolchain query: cores, CPU identity, C compiler, OpenMP, nvcc, CUDA devices.

``query_platform()`` answers once per process (``clear_cache()`` forgets). Each part that is
missing is reported as absent with the reason, never raised: a missing compiler or GPU is a
reason to choose another variant.

``cpu_identity()`` names the processor code is built for: its architecture, model and feature
flags (from ``/proc/cpuinfo`` on Linux). Cache keys of code built with ``-march=native`` carry
it, so a cache shared by two machines never hands one machine the other's instructions.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from dataclasses import dataclass, field

from .errors import AspError


@dataclass(frozen=True)
class CudaDevice:
    """Properties of one CUDA device (what a cost model and a launch configuration need)."""

    index: int
    name: str
    compute_capability: tuple[int, int]
    multiprocessors: int
    warp_size: int
    max_threads_per_block: int
    max_block_dim: tuple[int, int, int]
    max_grid_dim: tuple[int, int, int]
    total_memory: int
    clock_rate_khz: int
    memory_clock_rate_khz: int
    memory_bus_width: int

    @property
    def arch(self) -> str:
        return "sm_{}{}".format(*self.compute_capability)


@dataclass(frozen=True)
class CpuIdentity:
    """What the instructions a compiler may use depend on: ``machine`` (``x86_64``,
    ``aarch64``, ...), the model fields of ``/proc/cpuinfo`` (vendor, family, model, name;
    implementer and part on ARM) and the sorted feature flags."""

    machine: str
    model: tuple[tuple[str, str], ...] = ()
    flags: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line: architecture, model name, number of feature flags."""
        fields = dict(self.model)
        name = fields.get("model name") or fields.get("CPU part") or "unknown model"
        return f"{self.machine}, {name}, {len(self.flags)} feature flags"


# Fields of /proc/cpuinfo naming the processor (x86, ARM, POWER, RISC-V) and its features.
_MODEL_FIELDS = ("vendor_id", "cpu family", "model", "model name", "CPU implementer",
                 "CPU architecture", "CPU variant", "CPU part", "cpu", "isa", "uarch")
_FLAG_FIELDS = ("flags", "Features")


@functools.lru_cache(maxsize=1)
def cpu_identity() -> CpuIdentity:
    """This machine's processor as code generation sees it (memoized; ``clear_cache()``)."""
    return parse_cpuinfo(os.uname().machine, _read_cpuinfo())


def _read_cpuinfo() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:  # not Linux, or /proc not mounted: the architecture alone names the CPU
        return ""


def parse_cpuinfo(machine: str, text: str) -> CpuIdentity:
    r"""The identity in the first processor's block of a ``/proc/cpuinfo`` text.

    >>> parse_cpuinfo("x86_64", "processor : 0\nmodel name : Z\nflags : sse2 avx\n\n"
    ...               "processor : 1\nflags : other\n").flags
    ('avx', 'sse2')
    """
    model, flags = [], ()
    for line in text.split("\n\n", 1)[0].splitlines():
        name, sep, value = line.partition(":")
        name, value = name.strip(), value.strip()
        if not sep:
            continue
        if name in _MODEL_FIELDS:
            model.append((name, value))
        elif name in _FLAG_FIELDS:
            flags = tuple(sorted(set(value.split())))
    return CpuIdentity(machine=machine, model=tuple(sorted(model)), flags=flags)


@dataclass(frozen=True)
class PlatformInfo:
    cpu_cores: int
    c_compiler: str | None
    openmp: bool
    nvcc: str | None
    pycuda: bool
    cuda_devices: tuple[CudaDevice, ...] = ()
    notes: tuple[str, ...] = field(default=(), compare=False)
    cpu: CpuIdentity | None = None

    def summary(self) -> str:
        lines = [f"CPU cores available: {self.cpu_cores}",
                 f"CPU: {self.cpu.describe() if self.cpu else 'unknown'}",
                 f"C compiler: {self.c_compiler or 'none'}",
                 f"OpenMP: {'yes' if self.openmp else 'no'}",
                 f"nvcc: {self.nvcc or 'none'}",
                 f"pycuda: {'yes' if self.pycuda else 'no'}"]
        for d in self.cuda_devices:
            lines.append(f"GPU {d.index}: {d.name} ({d.arch}), {d.multiprocessors} SMs, warp "
                         f"{d.warp_size}, {d.max_threads_per_block} threads/block, "
                         f"{d.total_memory / 2**30:.1f} GiB")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


@functools.lru_cache(maxsize=1)
def cpu_cores() -> int:
    """Cores this process may run on (its affinity mask, not the machine's total; read once
    per process: ``clear_cache()`` reads it again)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class _Load:
    """Cores other processes would keep busy, from ``/proc/stat``, sampled at most every
    ``every`` s: the busy time of all cores over the last interval less this process's own
    CPU time, or, where more, the threads runnable at the sample less this one
    (``procs_running``). The busy time alone understates a demand the cores cannot meet:
    beside two processes spinning on two cores, this process's thread takes a third of the
    cores' time, and the others' busy time read 1.3 cores where they ask for 2 (so serial C
    was priced as running on 0.86 of a core where it got 0.67, and OpenMP's team on 1.2 where
    it got 1.0). Each sample is averaged with what was seen before."""

    every = 0.2

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.when = 0.0
        self.busy = self.own = None
        self.others = 0.0

    def __call__(self) -> float:
        now = time.monotonic()
        if now - self.when < self.every:
            return self.others
        with self.lock:
            if now - self.when < self.every:
                return self.others
            busy, running = _proc_stat()
            own = time.process_time()
            if busy is not None and self.busy is not None and now > self.when:
                cores_busy = (busy - self.busy) / _HZ / (now - self.when)
                others = max(0.0, cores_busy - (own - self.own) / (now - self.when),
                             (running or 1) - 1)
                # a short interval is noisy: average it with what was seen before
                self.others = others if self.when == 0 else 0.5 * (self.others + others)
            elif hasattr(os, "getloadavg"):  # a first guess: the 1-minute load, less us
                self.others = max(0.0, os.getloadavg()[0] - 1.0)
            self.when, self.busy, self.own = now, busy, own
            return self.others


_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _proc_stat() -> tuple[int | None, int | None]:
    """(jiffies all cores spent busy since boot, threads runnable now) from ``/proc/stat``,
    each None where it cannot be read."""
    try:
        with open("/proc/stat", "rb") as f:
            text = f.read()
    except OSError:
        return None, None
    return parse_proc_stat(text)


def parse_proc_stat(text: bytes) -> tuple[int | None, int | None]:
    """``_proc_stat`` of the text of ``/proc/stat``: the first line's busy jiffies (all but
    idle and iowait), and ``procs_running``."""
    busy = running = None
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        if fields[0] == b"cpu" and busy is None:
            values = [int(v) for v in fields[1:]]
            idle = values[3] + (values[4] if len(values) > 4 else 0)   # idle and iowait
            busy = sum(values[:8]) - idle
        elif fields[0] == b"procs_running" and len(fields) > 1:
            running = int(fields[1])
    return busy, running


others_busy = _Load()


@functools.lru_cache(maxsize=1)
def query_platform() -> PlatformInfo:
    notes = []
    compiler = None
    openmp = False
    try:
        from .backends.c import default_compiler, openmp_flags

        c = default_compiler()
        compiler = f"{c.cc} ({c.version})"
        openmp = openmp_flags(c) is not None
    except AspError as exc:
        notes.append(str(exc))
    nvcc = None
    try:
        from .backends.nvcc import find_nvcc

        nvcc = "{} ({})".format(*find_nvcc())
    except AspError as exc:
        notes.append(str(exc))
    devices, have_pycuda, note = _cuda_devices()
    if note:
        notes.append(note)
    return PlatformInfo(cpu_cores=cpu_cores(), c_compiler=compiler, openmp=openmp, nvcc=nvcc,
                        pycuda=have_pycuda, cuda_devices=devices, notes=tuple(notes),
                        cpu=cpu_identity())


def _cuda_devices() -> tuple[tuple[CudaDevice, ...], bool, str | None]:
    try:
        import pycuda.driver as drv
    except ImportError:
        return (), False, "pycuda is not installed: no CUDA variants"
    except Exception as exc:
        return (), False, f"pycuda does not load: {exc}"
    try:
        drv.init()
        count = drv.Device.count()
    except Exception as exc:  # pycuda.driver.Error: no driver, no device
        return (), True, f"no usable CUDA driver: {exc}"
    a = drv.device_attribute
    devices = []
    for index in range(count):
        dev = drv.Device(index)
        attrs = dev.get_attributes()
        devices.append(CudaDevice(
            index=index, name=dev.name(), compute_capability=dev.compute_capability(),
            multiprocessors=attrs[a.MULTIPROCESSOR_COUNT], warp_size=attrs[a.WARP_SIZE],
            max_threads_per_block=attrs[a.MAX_THREADS_PER_BLOCK],
            max_block_dim=(attrs[a.MAX_BLOCK_DIM_X], attrs[a.MAX_BLOCK_DIM_Y],
                           attrs[a.MAX_BLOCK_DIM_Z]),
            max_grid_dim=(attrs[a.MAX_GRID_DIM_X], attrs[a.MAX_GRID_DIM_Y],
                          attrs[a.MAX_GRID_DIM_Z]),
            total_memory=dev.total_memory(), clock_rate_khz=attrs[a.CLOCK_RATE],
            memory_clock_rate_khz=attrs[a.MEMORY_CLOCK_RATE],
            memory_bus_width=attrs[a.GLOBAL_MEMORY_BUS_WIDTH]))
    return tuple(devices), True, None if devices else "no CUDA device found"


@dataclass(frozen=True)
class DataCaches:
    """Sizes in bytes of the data caches one core sees (L1 data, L2, L3: 0 where unknown),
    and where they were read."""

    l1: int
    l2: int
    l3: int
    source: str


#: Where the platform says nothing (not Linux, no sysfs): a common x86 core's, stated as such.
DEFAULT_CACHES = DataCaches(32 << 10, 512 << 10, 0, "defaults (the platform did not say)")


@functools.lru_cache(maxsize=1)
def data_caches(root: str = "/sys/devices/system/cpu/cpu0/cache") -> DataCaches:
    """The data (and unified) caches of CPU 0, from Linux's sysfs (memoized)."""
    sizes: dict[int, int] = {}
    try:
        for entry in sorted(os.listdir(root)):
            if not entry.startswith("index"):
                continue
            folder = os.path.join(root, entry)
            with open(os.path.join(folder, "type")) as f:
                kind = f.read().strip()
            if kind not in ("Data", "Unified"):
                continue
            with open(os.path.join(folder, "level")) as f:
                level = int(f.read())
            with open(os.path.join(folder, "size")) as f:
                text = f.read().strip().upper()
            scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
            sizes[level] = int(text.rstrip("KMG")) * scale
    except (OSError, ValueError):
        return DEFAULT_CACHES
    if not sizes.get(1) or not sizes.get(2):
        return DEFAULT_CACHES
    return DataCaches(sizes[1], sizes[2], sizes.get(3, 0), root)


def clear_cache() -> None:
    """Forget the answers of ``query_platform()`` and ``cpu_identity()``."""
    query_platform.cache_clear()
    cpu_identity.cache_clear()
    cpu_cores.cache_clear()
    data_caches.cache_clear()
