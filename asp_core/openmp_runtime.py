"""The OpenMP runtime's wait policy, set before the project first loads OpenMP code.

Between parallel regions, GCC's libgomp keeps its idle threads spinning for
``GOMP_SPINCOUNT`` iterations (300,000 by default, a few hundred microseconds; 30 billion with
``OMP_WAIT_POLICY=active``) before they sleep. On a machine other processes are using, spinning
threads take cores from them, and from the process's own threads when it has more threads than
free cores. So, unless the user chose a policy (``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` set
in the environment), ``set_wait_policy()`` sets ``GOMP_SPINCOUNT`` to ``SPIN_COUNT`` (about 10 to
30 microseconds of spinning: enough for the regions and barriers of one call to meet spinning
threads, short enough that idle threads sleep between calls). libgomp reads it once, when it
is loaded; a process that loaded libgomp before the project did keeps that library's choice.
The cost model's OpenMP costs are measured under this policy (``cost.calibrate``).
"""

from __future__ import annotations

import os

#: Spin iterations before an idle OpenMP thread sleeps (libgomp's ``GOMP_SPINCOUNT``).
SPIN_COUNT = "10000"


def set_wait_policy() -> str:
    """Set the wait policy for libgomp unless the user set one; return the one in force."""
    if "OMP_WAIT_POLICY" in os.environ:
        return f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']} (the user's)"
    if "GOMP_SPINCOUNT" in os.environ:
        return f"GOMP_SPINCOUNT={os.environ['GOMP_SPINCOUNT']}"
    os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT
    return f"GOMP_SPINCOUNT={SPIN_COUNT}"
