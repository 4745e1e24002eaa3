"""The cost model's machine parameters as a readable table with units (for the calibration
command and reports).

>>> from specializers.loopnest.cost.machine import DEFAULTS
>>> print(summary(DEFAULTS).splitlines()[0])
interpreter (CPython)
"""

from __future__ import annotations

from .features import KINDS, PY_KINDS
from .machine import MachineParams


def _ns(value: float) -> str:
    """A time given in nanoseconds, in the unit that reads best."""
    if value >= 1e6:
        return f"{value / 1e6:.2f} ms"
    if value >= 1e3:
        return f"{value / 1e3:.2f} us"
    return f"{value:.2f} ns" if value < 10 else f"{value:.1f} ns"


def summary(params: MachineParams) -> str:
    """A table of ``params``: one section per part of the machine, units in every row."""
    p = params
    rows = ["interpreter (CPython)",
            f"  loop iteration             {_ns(p.py_iteration_ns)}",
            f"  statement                  {_ns(p.py_statement_ns)}",
            f"  subscript beyond the first {_ns(p.py_subscript_ns)}",
            f"  entering a nest            {_ns(p.py_call_ns)} (beyond a compiled call's)",
            f"  a settled kernel's call    {_ns(p.settled_call_ns)} (beyond its method)",
            "compiled C (scalar, one thread)",
            f"  loop iteration             {_ns(p.c_iteration_ns)}",
            f"  vectorized speed-up        {p.vector_speedup:.2f}x",
            f"  an operation on a chain    {_ns(p.c_chain_ns)} (carried across iterations)",
            f"  one call of a variant      {_ns(p.c_call_ns)}",
            f"  choosing it (dispatch)     {_ns(p.dispatch_ns)} (a settled kernel skips it)",
            "per operation          interpreter     compiled    ratio"]
    for kind in (*KINDS, *PY_KINDS):
        py, c = p.py_op_ns.get(kind, 0.0), p.c_op_ns.get(PY_KINDS.get(kind, kind), 0.0)
        ratio = f"{py / c:8.0f}x" if c > 0 else "        -"
        rows.append(f"  {kind:<18} {_ns(py):>12} {_ns(c):>12} {ratio}")
    rows.append("memory")
    rows.append(f"  L2, into L1                {p.l2_bandwidth / 1e9:.1f} GB/s")
    rows.append(f"  last-level cache           {p.cache_bytes / 2**20:.1f} MiB, "
                f"{p.cache_bandwidth / 1e9:.1f} GB/s")
    for threads in sorted(p.bandwidth):
        rows.append(f"  DRAM, {threads:>3} thread{'s' if threads > 1 else ' '}         "
                    f"{p.bandwidth[threads] / 1e9:.1f} GB/s")
    rows.append("OpenMP                     fork/join      barrier    reduction")
    tables = (p.omp_fork_ns, p.omp_barrier_ns, p.omp_combine_ns)
    for threads in sorted(set().union(*tables)):
        cells = [_ns(table[threads]) if threads in table else "-" for table in tables]
        rows.append(f"  {threads:>3} threads            " +
                    " ".join(f"{cell:>12}" for cell in cells))
    rows.append(f"  first region after a sleep {_ns(p.omp_wake_ns)}")
    rows.append("compiling a variant")
    rows.append(f"  base                       {p.compile_base_s * 1e3:.1f} ms")
    rows.append(f"  per line of C              {p.compile_per_line_s * 1e3:.3f} ms "
                "(beyond the runtime header)")
    rows.append(f"  OpenMP's extra             {p.compile_openmp_s * 1e3:.1f} ms")
    rows.append(f"  a process's first          {p.compile_first_s * 1e3:.1f} ms more")
    rows.append(f"source: {p.source}")
    return "\n".join(rows)
