"""A kind of variant's first build in a process, beyond what any later build costs.

The first variant a process builds pays for more than its compile: the modules of its code
generation and of its loader (cffi's, or pyopencl and the device's context), and, with an
empty cache, its templates' compile (Mako's, cached on disk afterwards). On the development
machine a first call of serial C took 110 ms where a second kernel's took 55; a first call of
OpenCL on PoCL, 63 ms for the driver and context alone. A first call that can wait for a build
takes the one of least build plus run (``asp_core.selection``), so these costs decide between
kinds on first calls and must be measured alike.

``measure(backend)`` times it in a new Python process (the calibrating one has paid it) with
an empty private cache that holds only the compiler probe, as a first process on a new machine
would have: ``probe_kernels.Tiny`` is analysed first (the analysis is everyone's cost, priced
apart by ``coldstart``), then its variant of ``backend`` is built and run on float64 arrays
(the first build), then on float32 arrays (a second build: same code size, new signature).
The first use is the difference (the best of two processes), or ``None`` where it could not be
measured.

The compiler probe (``openmp_flags``) is made by a process of its own before the timed one,
as an earlier process would have made it: made in the timed process, it imported cffi (its C
parser: about 18 ms here) before the first build, which then measured 20 ms where a first call
of serial C on a cache holding the probe paid 55 ms more than a second kernel's build.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

#: Made once per cache folder, in a process of its own (see the module).
PROBE_SCRIPT = "from asp_core.backends.c import openmp_flags; openmp_flags()"

_SCRIPT = """
import time
import numpy as np
from specializers.loopnest.cost.probe_kernels import Tiny

def inputs(dtype):
    return [np.ones(64, dtype) for _ in range(3)]

Tiny(backend="python", strict=True).kernel(*inputs(np.float64))   # analysed
kernel = Tiny(backend={backend!r}, strict=True)
started = time.perf_counter()
kernel.kernel(*inputs(np.float64))
first = time.perf_counter() - started
started = time.perf_counter()
kernel.kernel(*inputs(np.float32))
second = time.perf_counter() - started
print(first - second)
"""


def measure(backend: str, runs: int = 2) -> float | None:
    """Seconds of ``backend``'s first build in a process beyond a later one (see the
    module); None where no run succeeded."""
    seconds = best_in_new_processes(_SCRIPT.format(backend=backend), runs, private_cache=True,
                                    prepare=PROBE_SCRIPT)
    return None if seconds is None else max(0.0, seconds)


def best_in_new_processes(script: str, runs: int = 2, private_cache: bool = False,
                          timeout: float = 300, prepare: str | None = None) -> float | None:
    """The least of the numbers ``script`` prints last, each run in a new Python process
    that imports this project (``private_cache``: with an empty cache folder of its own, no
    calibration and no forced backend, where ``prepare`` runs first, in a process of its
    own); None where no run succeeded."""
    root = str(Path(__file__).resolve().parents[3])   # (where asp_core is)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    if private_cache:
        env["ASP_CALIBRATE"] = "0"
        env.pop("ASP_BACKEND", None)
    times = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="asp-first-use-") as folder:
            if private_cache:
                env["ASP_CACHE_DIR"] = folder
            try:
                if prepare is not None and private_cache:
                    subprocess.run([sys.executable, "-c", prepare], env=env,
                                   capture_output=True, timeout=timeout, check=True)
                done = subprocess.run([sys.executable, "-c", script], env=env,
                                      capture_output=True, text=True, timeout=timeout,
                                      check=True)
                times.append(float(done.stdout.strip().splitlines()[-1]))
            except (OSError, subprocess.SubprocessError, ValueError, IndexError):
                continue
    return min(times) if times else None
