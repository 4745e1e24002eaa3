"""The machine parameters of the loop-nest cost model, and where they come from.

``MachineParams`` holds what the cost functions (``cost.models``) multiply the counts of a nest
by: the interpreter's and compiled code's time per operation kind (``cost.features.KINDS``),
per loop iteration and per call, memory bandwidth by thread count, OpenMP's fork/join and
barrier costs by thread count, and the compile time against the size of the generated source.

``machine()`` returns the parameters of this machine: a stored calibration if there is one for
it (``cost.calibrate``, ``python -m specializers.loopnest calibrate``; stored per CPU model,
core count and compiler version by ``asp_core.calibration``), else ``DEFAULTS`` (measured by
the full calibration on the project's development machine, a 2-core AMD EPYC VM, as their
``source`` says). The online correction of the dispatcher absorbs what either gets wrong for a
given nest.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping

#: Name of the calibration record (``asp_core.calibration``) and its format version.
CALIBRATION = "loopnest-acm"
FORMAT = 9   # 2: dispatch_ns, settled_call_ns; 3: omp_combine_ns; 4: py_op_ns of PY_KINDS;
#            5: the warm call path shortened (dispatch_ns and c_call_ns measured again);
#            6: compile_openmp_s, compile_first_s; 7: compile_first_s with the compiler probe
#            made before the timed process (``first_use``); 8: l2_bandwidth; 9: c_chain_ns


@dataclass(frozen=True)
class MachineParams:
    """Times in nanoseconds unless named otherwise; mappings by operation kind or threads."""

    # The interpreter: CPython running the original loops over NumPy scalars.
    py_iteration_ns: float = 13.0          # one iteration of ``for v in range(...)``
    py_statement_ns: float = 3.0           # the fixed cost of one assignment
    py_op_ns: Mapping[str, float] = field(default_factory=lambda: dict(
        load=37.0, store=25.0, index=9.5, arith=31.0, div=31.0, pow=54.0, cmp=9.7,
        logic=4.3, math=40.0, math_cheap=19.0, conv=30.0, scalar=0.0,
        arith_py=8.0, div_py=10.0, cmp_py=8.0))
    py_subscript_ns: float = 27.0          # each subscript of an array access beyond the first
    py_call_ns: float = 500.0              # entering a nest that runs as the original code,
                                           # beyond what a compiled call pays

    # Compiled C, scalar code, one thread.
    c_op_ns: Mapping[str, float] = field(default_factory=lambda: dict(
        load=0.0, store=0.01, index=0.0, arith=0.06, div=1.1, pow=9.8, cmp=0.35,
        logic=0.0, math=3.5, math_cheap=2.1, conv=0.0, scalar=0.0))
    c_iteration_ns: float = 0.35           # loop overhead per iteration
    c_chain_ns: float = 0.6                # one operation on a chain carried from iteration
                                           # to iteration (``w[i] = w[i] + ...`` along ``j``):
                                           # its latency, beyond the iteration's overhead
    c_call_ns: float = 2200.0              # one compiled variant's run: arguments, cffi,
                                           # results
    dispatch_ns: float = 8800.0            # the rest of entering a nest: its signature,
                                           # binding and choice (a settled kernel skips it)
    settled_call_ns: float = 1100.0        # a call of a settled kernel beyond its method
    vector_speedup: float = 4.7            # compute speed-up of a vectorized inner loop

    # Memory: bytes per second from DRAM by thread count, from the last-level cache and from
    # one core's L2 (``cost.locality`` counts the bytes each level loads).
    bandwidth: Mapping[int, float] = field(default_factory=lambda: {1: 15e9, 2: 19e9})
    cache_bytes: int = 32 * 2**20
    cache_bandwidth: float = 80e9
    l2_bandwidth: float = 120e9   # (measured on the Xeon VM of the later sessions)

    # OpenMP, by thread count: entering and leaving a parallel region, one barrier, one
    # reduction's combine.
    omp_fork_ns: Mapping[int, float] = field(default_factory=lambda: {2: 520.0})
    omp_barrier_ns: Mapping[int, float] = field(default_factory=lambda: {2: 240.0})
    omp_combine_ns: Mapping[int, float] = field(default_factory=lambda: {2: 60.0})
                                           # combining one reduction's partial results
    omp_wake_ns: float = 43000.0           # the first region of a call after the team slept

    # Compiling a variant (gcc through codepy): seconds, base plus per line of C beyond the
    # runtime header every module includes (``c_runtime.h.mako``, compiled in the base).
    compile_base_s: float = 0.07
    compile_per_line_s: float = 0.0011
    compile_openmp_s: float = 0.012        # an OpenMP variant's compile beyond serial C's
                                           # (-fopenmp, the outlined regions)
    compile_first_s: float = 0.08          # the first compiled variant a process builds,
                                           # beyond a later one (``cost.first_use``; a quick
                                           # calibration keeps this default: 0.07 to 0.13 s in
                                           # five full ones on 2026-11-28, where 0.02 had
                                           # been measured before the code generation's
                                           # imports and templates grew)

    source: str = ("defaults (a full calibration of the project's development VM: 2-core AMD "
                   "EPYC (Zen 4) under KVM, 32 MiB L3, gcc 12.2 -O3 -march=native, CPython "
                   "3.11; medians of 4 runs)")

    def per_thread(self, table: Mapping[int, float], threads: int) -> float:
        """``table`` at ``threads`` (the nearest measured count, scaled linearly beyond)."""
        if threads in table:
            return table[threads]
        known = sorted(table)
        below = [k for k in known if k <= threads]
        nearest = below[-1] if below else known[0]
        return table[nearest] * max(1.0, threads / nearest)

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        for name in ("bandwidth", "omp_fork_ns", "omp_barrier_ns", "omp_combine_ns"):
            out[name] = {str(k): v for k, v in out[name].items()}
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "MachineParams":
        """Parameters from a stored record; ``ValueError`` for anything malformed."""
        names = {f.name for f in dataclasses.fields(cls)}
        if not isinstance(data, Mapping) or set(data) - names:
            raise ValueError(f"unexpected fields {sorted(set(data) - names)}")
        values = dict(data)
        for name in ("bandwidth", "omp_fork_ns", "omp_barrier_ns", "omp_combine_ns"):
            if name in values:
                values[name] = {int(k): float(v) for k, v in values[name].items()}
        for name in ("py_op_ns", "c_op_ns"):
            if name in values:
                values[name] = {str(k): float(v) for k, v in values[name].items()}
        params = cls(**values)
        params.validate()
        return params

    def validate(self) -> None:
        """``ValueError`` unless every time and rate is a positive finite number."""
        import math

        def positive(name: str, value: Any) -> None:
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} = {value!r} is not a non-negative number")

        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "source":
                continue
            if isinstance(value, Mapping):
                if not value:
                    raise ValueError(f"{f.name} is empty")
                for k, v in value.items():
                    positive(f"{f.name}[{k}]", v)
            else:
                positive(f.name, value)


DEFAULTS = MachineParams()

_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def machine() -> MachineParams:
    """This machine's parameters: its stored calibration, else ``DEFAULTS``."""
    from . import calibrate

    with _LOCK:
        found = calibrate.stored()
        if found is None:  # a quick calibration in the background (ASP_CALIBRATE=0: none)
            calibrate.ensure(background=True)
        return found or DEFAULTS


def clear_cache() -> None:
    machine.cache_clear()
