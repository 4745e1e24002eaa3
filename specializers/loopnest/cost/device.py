"""The device variants' terms of the cost model (the ALPyNA cost model's section 3.3).

A device variant runs the kernels ``codegen.device_layout`` makes of a plan: grid kernels over
their band's loops, reductions (lanes in work-groups, each work-group then a tree of
``log2(GROUP_SIZE)`` steps between barriers; then a combine of the work-groups' results on one
work item), kernels launched once per iteration of a host loop, or the whole nest on one work
item. ``device_profile`` counts, per kernel, its launches, its work items per launch and the
compiled work and bytes of all its launches, from the same exact iteration counts as the CPU
variants (``cost.domain``); ``device_cost`` prices them with the device's ``DeviceParams``:

* a launch runs ``threads`` work items in ``max(1, threads / lanes)`` waves of the device's
  ``lanes`` work items at once (equation 6: blocks over the SMs, ``v * w`` threads at a time
  on each), each work item at ``lane_scale`` times the serial C model's time for the same
  statements (``models.c_cost`` without vectorization: equations 12-13, with the ratio of a
  lane's speed to a core's measured on the device and in serial C instead of derived from
  clocks and caches).
  Statements under a predicate (if-converted branches) run at ``units`` work items at once
  instead: a CPU device vectorizes work items only where they do not diverge (a GPU's
  ``units`` equal its ``lanes``). Against that, a roofline: the bytes a launch moves over the
  device's bandwidth (of its cache, where the arrays fit in it);
* a kernel launched once costs ``launch_ns`` plus its run; one launched once per iteration of
  a host loop costs, per iteration, the larger of the two: the host enqueues the next launch
  while the device runs the last, and a device that finishes first waits, starved (equations
  7 and 9; ``lambda_x`` reports the paper's starvation threshold, the work items of the
  simplest statement that take as long as a launch);
* the call copies every array it touches to the device and those it writes back, at the
  measured copy bandwidth plus a fixed cost per copy (equation 10's transfer term), and pays a
  fixed cost of its own (device buffers for the error word and the results, reading them).

``DeviceParams`` come from a calibration on the device (``cost.device_probes``: OpenCL here,
through PoCL; CUDA wherever a GPU is), never from defaults: a device not calibrated is not
offered by the cost model (``cost.device_calibrate``). ``cuda_params`` derives a CUDA device's
from its attributes after equations 6 and 12 (SMs, warp schedulers, warp size, clocks, memory
bus): the paper's reading of a GPU, kept for one whose calibration cannot run; the model does
not call it (no GPU here to check it against: it offers a GPU once calibrated).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping

from ..codegen.device_layout import DeviceLayout, loop_ids, statement_ids
from ..coverage import overwritten
from . import domain
from .machine import MachineParams
from .models import OVERSUBSCRIBED, NestProfile, source_chain

#: A reduction's work-group size and its most work-groups (as ``codegen.device.GROUP_SIZE``
#: and ``device_variants.REDUCTION_GROUPS``, which import the code generator: the model reads
#: the same numbers without it).
GROUP_SIZE = 128
REDUCTION_GROUPS = 32
REDUCTION_LANES = REDUCTION_GROUPS * GROUP_SIZE


#: More work items at once than any device runs (an H100: 132 multiprocessors of 2048
#: resident threads, 270,336): a stored calibration claiming more is noise, and redone.
MAX_LANES = 1 << 20


@dataclass(frozen=True)
class DeviceParams:
    """One device's parameters; times in nanoseconds unless named otherwise."""

    backend: str           # "opencl", "cuda"
    device: str            # the device's name, as its driver gives it
    lanes: float           # work items running at once at full occupancy (u * v * w)
    units: float           # ... where they diverge (a CPU device's cores; a GPU's lanes)
    lane_scale: float      # one work item's time over serial C's for the same statements
                           # (applied to the serial C model's, not vectorized)
    bandwidth: float       # device memory, bytes per second, all lanes
    cache_bytes: float     # the device's last-level cache
    cache_bandwidth: float  # bytes per second from it
    launch_ns: float       # one launch among many in a row (Cki_vm)
    call_ns: float         # a call's fixed cost beyond its launches and array copies
    upload_bw: float       # host to device, bytes per second
    download_bw: float     # device to host
    transfer_ns: float     # fixed cost of one array copy, either way
    build_s: float         # generating and building one device program
    init_s: float          # the first use in a process: driver and context
    simple_ns: float = 0.0  # the calibration's simplest statement, serial C, per instance
    host_memory: bool = False   # a CPU device: its memory is the host's (see device_cost)
    #: copies of arrays of ``FRESH_BYTES`` and more: uploads into device memory allocated
    #: anew for each, downloads into the caller's arrays (0: not measured, as ``upload_bw``
    #: / ``download_bw``)
    upload_fresh_bw: float = 0.0
    download_fresh_bw: float = 0.0
    source: str = ""

    def transfer_s(self, p: "DeviceProfile") -> float:
        """The bytes ``p`` copies each way over their bandwidths, arrays of ``FRESH_BYTES``
        and more at their own."""
        up_fresh = self.upload_fresh_bw or self.upload_bw
        down_fresh = self.download_fresh_bw or self.download_bw
        return (p.uploaded - p.fresh_uploaded) / self.upload_bw + \
            p.fresh_uploaded / up_fresh + \
            (p.downloaded - p.fresh_downloaded) / self.download_bw + \
            p.fresh_downloaded / down_fresh

    @property
    def lambda_x(self) -> float:
        """The paper's starvation threshold: work items of the simplest statement that keep
        the device busy for as long as one launch takes (equation 8)."""
        per_item = self.simple_ns * self.lane_scale / max(self.lanes, 1.0)
        return self.launch_ns / per_item if per_item > 0 else math.inf

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "DeviceParams":
        """Parameters from a stored record; ``ValueError`` for anything malformed."""
        names = {f.name for f in dataclasses.fields(cls)}
        if not isinstance(data, Mapping) or set(data) - names:
            raise ValueError("unexpected fields in device parameters")
        try:
            params = cls(**data)
        except TypeError as exc:
            raise ValueError(f"malformed device parameters: {exc}") from exc
        params.validate()
        return params

    def validate(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in ("backend", "device", "source"):
                if not isinstance(value, str):
                    raise ValueError(f"{f.name} = {value!r} is not a string")
                continue
            if f.name == "host_memory":
                if not isinstance(value, bool):
                    raise ValueError(f"{f.name} = {value!r} is not a bool")
                continue
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{f.name} = {value!r} is not a non-negative number")
        if self.lanes < 1 or self.units < 1 or self.lane_scale <= 0 or \
                min(self.bandwidth, self.cache_bandwidth, self.upload_bw, self.download_bw) <= 0:
            raise ValueError("device lanes, lane scale and bandwidths must be positive")
        if self.lanes > MAX_LANES:
            raise ValueError(f"{self.lanes:.0f} lanes: more than any device runs at once "
                             f"({MAX_LANES}; a noisy calibration)")


@dataclass(frozen=True)
class KernelLoad:
    """What one kernel of a device module does over a call."""

    launches: int          # times launched (its host loop's iterations, else 1)
    threads: float         # work items per launch, on average
    compute_ns: float      # the serial C model's time for its statements' instances (not
                           # vectorized), all launches
    guarded_ns: float      # ... of those under a predicate
    bytes: float           # bytes its statements move, all launches
    single: bool = False   # runs on one work item (the whole nest, or a reduction's combine)


@dataclass(frozen=True)
class DeviceProfile:
    kernels: tuple[KernelLoad, ...]
    uploaded: float        # bytes copied to the device
    downloaded: float      # bytes copied back
    copies: int            # arrays copied, either way
    footprint: float       # bytes of the arrays the nest touches
    fresh_uploaded: float = 0.0     # ... of which in arrays of FRESH_BYTES and more
    fresh_downloaded: float = 0.0
    #: on a CPU device (``host_memory``), the time its kernels' bytes take to come over the
    #: time they would take streamed: the serial C schedule's, with its reuse in the caches
    #: (``cost.locality``; 1.0 where the profile has no traffic)
    host_reuse: float = 1.0


#: Arrays this large are copied into memory that is mapped anew for each copy, its pages
#: faulted in as they are written: glibc's malloc serves an allocation from its heap, reused,
#: below its dynamic mmap threshold, which grows with the blocks freed up to 32 MiB
#: (``DEFAULT_MMAP_THRESHOLD_MAX`` on 64-bit, mallopt(3)), and maps every larger one (PoCL's
#: buffers and NumPy's arrays both come from it). Uploads to PoCL here: 7 GB/s for arrays of
#: 16 to 31 MiB, 2.3 for 32 and 64 MiB; gemver's four nests on 4096 x 4096, each uploading
#: its 128 MiB matrix, were priced 120 ms short and ran on OpenCL, 1.3 times OpenMP's time.
FRESH_BYTES = 32 << 20


def device_profile(analysis, plan, types, profile: NestProfile, m: MachineParams,
                   gpu: bool = True) -> DeviceProfile:
    """The kernels a device module of ``plan`` runs (``codegen.device_layout``) and what each
    does, from the nest's CPU ``profile`` of the same call (its statements' counts, features
    and bytes, its arrays' footprint)."""
    by_sid = {s.sid: s for s in profile.statements}
    loops = plan.bound.loops

    def work(sids) -> tuple[float, float, float]:
        compute = guarded = moved = 0.0
        for sid in sids:
            s = by_sid.get(sid)
            if s is not None:
                ns = s.instances * s.features.cost(m.c_op_ns)
                compute += ns
                guarded += ns if s.guarded else 0.0
                moved += s.instances * s.bytes
        return compute, guarded, moved

    bands = DeviceLayout(analysis, plan, types, gpu).bands()
    kernels = []
    if bands is None:   # the whole nest on one work item
        compute, guarded, moved = work(list(by_sid))
        iterations = sum(domain.count(source_chain(lid, loops), loops).instances
                         for lid in loops)
        kernels.append(KernelLoad(1, 1.0, compute + iterations * m.c_iteration_ns, guarded,
                                  moved, single=True))
    else:
        for node, band, host in bands:
            if not band:   # a segment of top-level nodes on one work item
                compute, guarded, moved = work(statement_ids(node))
                iterations = sum(domain.count(source_chain(lid, loops), loops).instances
                                 for lid in loop_ids(node))
                kernels.append(KernelLoad(1, 1.0, compute + iterations * m.c_iteration_ns,
                                          guarded, moved, single=True))
                continue
            chain = ((host.lid,) if host is not None else ()) + tuple(lp.lid for lp in band)
            items = domain.count(chain, loops).instances
            launches = domain.count((host.lid,), loops).instances if host is not None else 1
            compute, guarded, moved = work(statement_ids(node))
            compute += items * m.c_iteration_ns
            if node.reductions:   # lanes, each reducing its share; then the combine
                groups = min(REDUCTION_GROUPS, -(-int(items) // GROUP_SIZE))
                lanes = groups * GROUP_SIZE
                # a combination: one operation and a step (a barrier, a loop's iteration)
                step = len(node.reductions) * (m.c_op_ns.get("arith", 0.0) + m.c_iteration_ns)
                tree = lanes * (GROUP_SIZE.bit_length() - 1) * step   # log2(G) steps a lane
                kernels.append(KernelLoad(1, float(lanes), compute + tree, guarded, moved))
                kernels.append(KernelLoad(1, 1.0, groups * step, 0.0, 0.0, single=True))
            else:
                kernels.append(KernelLoad(launches, items / max(launches, 1), compute,
                                          guarded, moved))
    # every array goes to the device (``profile.footprint``) but those the call overwrites
    # whole (``coverage``: allocated there, nothing copied in); those written come back
    written = {acc.array for st in analysis.access.statements for acc in st.accesses
               if acc.write}
    sizes = {name: math.prod(shape) * types.arrays[name].dtype.itemsize
             for name, shape in zip(analysis.names.arrays, plan.bound.key.shapes)}
    whole = overwritten(analysis, plan)
    kept = {name for name in sizes if plan.bound.canonical[name] in whole and
            plan.bound.canonical[name] == name}
    downloaded = sum(size for name, size in sizes.items() if name in written)
    fresh = {name: size for name, size in sizes.items() if size >= FRESH_BYTES}
    copies = len(analysis.names.arrays) - len(kept) + len(written)
    return DeviceProfile(tuple(kernels),
                         float(max(0, profile.footprint - sum(sizes[n] for n in kept))),
                         float(downloaded), copies, float(profile.footprint),
                         float(sum(size for name, size in fresh.items() if name not in kept)),
                         float(sum(size for name, size in fresh.items() if name in written)),
                         _host_reuse(profile, m))


def _host_reuse(profile: NestProfile, m: MachineParams) -> float:
    """``DeviceProfile.host_reuse``: a CPU device runs the nest's loops on the host's cores and
    caches, work-groups of neighbouring work items one after another, so its bytes are taken
    to come as the serial C schedule's do (``models.memory_seconds``, one thread), against
    the same bytes streamed (the profile without its traffic). (Streamed, gemm's work items
    on PoCL were priced 59 ms of memory at 512 x 512 where the call takes 14.)"""
    from .models import memory_seconds

    if profile.traffic is None:
        return 1.0
    streamed = memory_seconds(dataclasses.replace(profile, traffic=None), m, 1.0)
    return memory_seconds(profile, m, 1.0) / streamed if streamed > 0 else 1.0


def device_cost(p: DeviceProfile, dev: DeviceParams, m: MachineParams | None = None,
                cores: int = 0, busy: float = 0.0) -> tuple[float, dict[str, float]]:
    """Predicted seconds of one call of a device variant, and its main terms (the module).
    A CPU device (``host_memory``) moves its bytes at the host's bandwidths (``m``: those the
    OpenMP variant is priced with, for the same bytes), not at its own measured figure, so
    that the two variants on the same cores and memory compare on the same terms; and its
    threads (``units``, one per core) share the ``cores`` of the affinity mask with the
    ``busy`` cores of other processes as an OpenMP team does (``models.openmp_cost``): its runs
    take longer by the share of the cores it gets, its launches wait for descheduled threads."""
    slower = waiting = 1.0
    threads = min(dev.units, cores)   # (one per core at once, as calibrated on them)
    if dev.host_memory and cores and threads + busy > cores:
        slower = (threads + busy) / cores
        waiting = 1.0 + OVERSUBSCRIBED * (threads + busy - cores)
    compute = memory = launches = overlap = 0.0
    if dev.host_memory and m is not None:
        if p.footprint <= m.cache_bytes:
            bandwidth = m.cache_bandwidth * min(max(dev.units, 1.0), 2.0)
        else:
            bandwidth = m.per_thread(m.bandwidth, max(1, int(dev.units)))
    else:
        bandwidth = dev.cache_bandwidth if p.footprint <= dev.cache_bytes else dev.bandwidth
    for k in p.kernels:
        if k.launches == 0 or (k.threads == 0 and not k.single):
            continue
        items = max(k.threads, 1.0)
        per_item = (k.compute_ns - k.guarded_ns) / k.launches / items * dev.lane_scale
        per_guarded = k.guarded_ns / k.launches / items * dev.lane_scale
        if k.single:
            run_c = per_item + per_guarded
        else:
            run_c = per_item * max(1.0, items / dev.lanes) + \
                per_guarded * max(1.0, items / dev.units)
        run_m = k.bytes / k.launches / bandwidth * 1e9 * \
            (p.host_reuse if dev.host_memory and m is not None else 1.0)
        run = max(run_c, run_m) * slower
        launches += k.launches * dev.launch_ns * waiting
        if run_c >= run_m:
            compute += k.launches * run
        else:
            memory += k.launches * run
        if k.launches > 1:   # a host loop: per iteration the larger of a launch and a run
            overlap -= k.launches * min(dev.launch_ns * waiting, run)
    transfers = dev.transfer_s(p) + p.copies * dev.transfer_ns * 1e-9
    terms = {"transfers": transfers, "launches": launches * 1e-9, "compute": compute * 1e-9,
             "memory": memory * 1e-9, "host-device overlap": overlap * 1e-9,
             "call": dev.call_ns * 1e-9}
    return sum(terms.values()), terms


def cuda_params(attributes: Mapping[str, int], name: str) -> DeviceParams:
    """A CUDA device's parameters from its attributes alone (pycuda's names), for a device
    never calibrated: lanes after equation 6 (SMs x warp schedulers x warp size), the lane
    scale after equation 12 (the clock ratio, at one instruction per cycle where a CPU core
    retires several), bandwidth from the memory clock and bus; launch and copy costs at the
    typical figures of a PCIe 4 GPU (5 us a launch, 20 GB/s)."""
    sms = attributes["MULTIPROCESSOR_COUNT"]
    warp = attributes.get("WARP_SIZE", 32)
    major = attributes.get("COMPUTE_CAPABILITY_MAJOR", 8)
    schedulers = 4 if major >= 5 else 2     # warp schedulers per SM (Maxwell on: 4)
    clock_ghz = attributes.get("CLOCK_RATE", 1_500_000) / 1e6   # kHz -> GHz
    memory_hz = attributes.get("MEMORY_CLOCK_RATE", 1_000_000) * 1e3
    bus = attributes.get("GLOBAL_MEMORY_BUS_WIDTH", 256)
    l2 = attributes.get("L2_CACHE_SIZE", 4 << 20)
    cpu_ghz, cpu_ipc = 3.0, 4.0
    lanes = float(sms * schedulers * warp)
    bandwidth = 2.0 * memory_hz * bus / 8
    return DeviceParams(
        backend="cuda", device=name, lanes=lanes, units=lanes,
        lane_scale=cpu_ghz * cpu_ipc / clock_ghz, bandwidth=bandwidth, cache_bytes=float(l2),
        cache_bandwidth=2.5 * bandwidth, launch_ns=5000.0, call_ns=30000.0, upload_bw=20e9,
        download_bw=20e9,
        transfer_ns=10000.0, build_s=1.0, init_s=0.3,
        source="derived from the device's attributes (not calibrated)")
