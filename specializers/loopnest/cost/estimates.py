"""The cost model's answer for one call of a nest: an ``Estimate`` per variant it could run.

``NestEstimator`` (one per nest runner) turns a call's signature and binding into estimates
for ``asp_core.selection``: the original code (label ``original``), serial C (``c``) and OpenMP
C at each thread count (``openmp@2`` ... up to the cores of the affinity mask, priced for the
cores other processes keep busy: ``asp_core.platform.others_busy``), each with its predicted
time (``cost.models``), its main
terms and, where it is not built yet, its build time (the first compiled variant of a process
also pays ``compile_first_s``, as a device's first build pays its ``init_s``: both measured
by ``cost.first_use``). The profile of a binding and signature is
computed once and kept; a warm call looks it up and checks which variants are built.

Device variants (``opencl``, ``cuda``) are offered where their device is calibrated
(``cost.device_calibrate``), priced by ``cost.device`` from the kernels the device module of
the call's plan would run; their build time counts the device's first use in the process.

A variant this machine cannot run is not offered: no C compiler, no OpenMP, OpenMP in a
process forked where it cannot run, no parallel loop for OpenMP to share, no calibrated
device. Where compiled code
cannot take the call at all (an unsupported dtype ...), ``estimates`` returns None and the
dispatcher's fallback states the reason, as without a cost model.
"""

from __future__ import annotations

import functools
from typing import Callable, Hashable

from asp_core import forking
from asp_core.lru import LRUCache
from asp_core.platform import cpu_cores, others_busy
from asp_core.selection import Estimate

from . import device_calibrate, models
from .device import device_cost
from .machine import machine

ORIGINAL = "original"
#: Profiles kept per nest runner (one per binding and call signature).
PROFILES = 64


@functools.lru_cache(maxsize=1)
def compiled_available() -> tuple[bool, bool]:
    """(a C compiler, OpenMP) on this machine: asked of the C backend itself, not of
    ``query_platform``, whose CUDA questions (an ``nvcc --version`` run) cost a first call
    5 ms for nothing here."""
    from asp_core.backends.c import default_compiler, openmp_flags
    from asp_core.errors import AspError

    try:
        compiler = default_compiler()
    except AspError:
        return False, False
    return True, openmp_flags(compiler) is not None


def openmp_label(threads: int) -> str:
    return f"openmp@{threads}"


def parse_label(label: str) -> tuple[str, int | None]:
    """``"openmp@2"`` -> ("openmp", 2); ``"c"`` -> ("c", None)."""
    backend, _, threads = label.partition("@")
    return backend, int(threads) if threads else None


class NestEstimator:
    """Estimates for the calls of one nest (see the module)."""

    def __init__(self, analysis, profile_of: Callable[[Hashable], models.NestProfile | None],
                 device_profile_of: Callable[[Hashable, models.NestProfile], object] | None
                 = None, device_ready: Callable[[str], bool] | None = None, sharers: int = 1):
        self.analysis = analysis
        #: The nests of the kernel: a process's first use of a backend (serial C's first
        #: compile, a device's driver and context) is priced to each at its share. Charged
        #: whole to each nest, the nests of a multi-nest kernel each declined what they would
        #: jointly have paid for (gemver's four nests on 512 x 512 ran as Python, 220 ms, where
        #: OpenCL for them all took 183: nest 0 alone saw 92 ms of Python against 98 ms of a
        #: first build). A kernel whose other nests never build undercharges by that share.
        self.sharers = max(1, sharers)
        self._profile_of = profile_of   # (types, key) -> profile, None if compiled code cannot
        self._profiles = LRUCache(PROFILES)
        # (types, key), profile -> the device kernels' profile (``cost.device``)
        self._device_profile_of = device_profile_of
        self._device_profiles = LRUCache(PROFILES)
        self._device_ready = device_ready   # backend -> its device is in use in this process

    def profile(self, signature: Hashable) -> models.NestProfile | None:
        found = self._profiles.recent.get(signature, False)
        if found is False:
            found = self._profiles.get(signature, False)
            if found is False:
                found = self._profiles.put(signature, self._profile_of(signature))
        return found

    def estimates(self, signature: Hashable, built: Callable[[str], bool],
                  on_disk: Callable[[str], bool] | None = None) -> tuple[Estimate, ...] | None:
        """The estimates for a call with ``signature`` ((types, binding key)); ``built(label)``
        says whether a variant is in memory, ``on_disk(label)`` whether it need only be loaded."""
        profile = self.profile(signature)
        if profile is None:
            return None
        m = machine()
        size = profile.size_class
        cores, busy = cpu_cores(), others_busy()
        seconds, terms = models.python_cost(profile, m, 1, cores, busy)
        fixed = terms.pop("entering the nest")   # not part of what the kernel times
        spread = None
        if any(s.guarded for s in profile.statements):   # its branches: none taken, all taken
            spread = tuple(models.python_cost(profile, m, 1, cores, busy, guarded=share)[0] -
                           fixed for share in (0.0, 1.0))
        out = [Estimate(ORIGINAL, seconds - fixed, terms, size_class=size, fixed_s=fixed,
                        spread=spread)]
        compiler, openmp = compiled_available()
        if not compiler:
            return tuple(out)

        from asp_core.backends import c as c_backend

        first = 0.0 if c_backend.initialized() else m.compile_first_s / self.sharers

        def cost_to_build(label: str) -> float:
            if built(label):
                return 0.0
            build = models.build_seconds(profile, m, openmp=label != "c") + first
            return min(build, LOAD_SECONDS) if on_disk is not None and on_disk(label) \
                else build

        labels = ["c"]
        if openmp and profile.regions and not forking.openmp_unusable():
            labels += [openmp_label(threads) for threads in range(2, cores + 1)]
        for label in labels:
            kind, threads = parse_label(label)
            # An OpenMP variant borrows serial C's correction and the other teams' (its
            # compute is theirs); serial C only where they ran faster (``Estimate.kin_faster``:
            # a team's slowness is often its threads', beside other processes).
            others = tuple(other for other in reversed(labels) if other != label)
            kin, faster = ((), others) if kind == "c" else (others, ())
            seconds, terms = models.c_cost(profile, m, 1, cores, busy) if kind == "c" else \
                models.openmp_cost(profile, m, threads, cores, busy)
            out.append(Estimate(label, seconds, terms, cost_to_build(label), size, kin=kin,
                                kin_faster=faster,
                                switch_s=0.0 if kind == "c" else m.omp_wake_ns * 1e-9))
        if self._device_profile_of is not None:
            for backend in device_calibrate.offered():
                out.append(self._device_estimate(backend, signature, profile, built, size,
                                                 out))
        return tuple(out)

    def _device_estimate(self, backend: str, signature: Hashable, profile, built,
                         size: int, cpu: list[Estimate]) -> Estimate:
        dev = device_calibrate.params(backend)
        gpu = not dev.host_memory   # (a CPU device's kernels keep the CPU's loop order)
        found = self._device_profiles.get((signature, gpu), None)
        if found is None:
            found = self._device_profiles.put(
                (signature, gpu), self._device_profile_of(signature, profile, gpu))
        seconds, terms = device_cost(found, dev, machine(), cpu_cores(), others_busy())
        kin: tuple[str, ...] = ()
        if dev.host_memory:
            # A CPU device runs the same loops on the same cores and memory as the compiled
            # variants, with work-items, copies and launches on top: its run is not priced
            # below theirs (the best of serial C and OpenMP on as many threads as its units).
            team = openmp_label(min(int(dev.units), cpu_cores()))
            runs = [e.seconds for e in cpu if e.label in ("c", team)]
            floor = min(runs, default=0.0) + terms["transfers"] + terms["call"]
            if floor > seconds:
                terms = {**terms, "no faster than the CPU variants": floor - seconds}
                seconds = floor
            # ...and until it is measured, it borrows their correction (``Selector.factor``):
            # what made them slower than predicted (a load on these cores) slows it as much.
            # Without it, beside two spinning processes, OpenMP's and serial C's corrections
            # rose about threefold over their first calls while PoCL's estimate stayed, and
            # black_scholes on 2**20 elements built and ran PoCL (140 ms a call) in place of
            # OpenMP (48 ms) until PoCL's own measurements came in.
            kin = tuple(label for label in (team, "c") if any(e.label == label for e in cpu))
        build = 0.0
        if not built(backend):
            ready = self._device_ready is not None and self._device_ready(backend)
            build = dev.build_s + (0.0 if ready else dev.init_s / self.sharers)
        return Estimate(backend, seconds, terms, build, size, kin=kin)


#: Generating a variant and loading it from the disk cache (no compile), seconds.
LOAD_SECONDS = 0.03
