"""The worker side of ``benchmarks.bench_selection``: the examples at their sizes, and a process
that runs the kernels of one example at one size and times their calls on command.

    python -m benchmarks.selection_worker     # JSON commands on stdin, one reply per line
    python -m benchmarks.selection_worker --first EXAMPLE N CONTENDER    # one first call

Commands (one JSON object per line, ``op`` naming it):

* ``load`` ``{example, n, contenders}``: make the inputs and the kernels (the previous size's
  go first); a contender is ``python`` (the original code, ``Cls().original_kernel``), ``c``,
  ``openmp@K``, ``opencl`` (forced, strict), ``acm`` or ``rule`` (``Cls()``: the default choice, which is
  the fixed rule in a worker started with ``ASP_SELECTION=fixed``), or a peer of
  ``benchmarks.peers`` (``numpy``, ``numba``, ``numba-parallel``: ``asp bench`` times them);
* ``burst`` ``{name, seconds}``: call back to back for ``seconds`` (once at least): the best
  and median time, the choices made;
* ``call`` ``{name}``: one call: its time and the choice made.

With ``--first``, the process times its first call of one contender (after making the inputs)
and prints it as JSON: the first-call mode runs one such process per measurement, each with an
empty cache folder. (Forked children of one interpreter would save the 0.4 s of interpreter
start, but their first calls took 30-50% longer here: copy-on-write faults.)

Every call runs on inputs restored from a pristine copy just before it (outside the timing).
"""

from __future__ import annotations

import copy
import functools
import importlib
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from . import peers

DEFAULT, RULE = "acm", "rule"


# -- the examples and their sizes ----------------------------------------------------------------

def _example(name: str):
    return importlib.import_module(f"examples.{name}")


@dataclass(frozen=True)
class Case:
    """An example at sizes ``start * 2**i`` (``points`` of them) of one size parameter ``n``;
    work grows as ``n**order`` and the inputs take about ``bytes_per * n**dims`` bytes."""

    name: str
    cls: str
    make: Callable[[int], tuple]
    order: int
    dims: int
    bytes_per: float
    start: int
    points: int

    def sizes(self, max_bytes: float, quick: bool) -> list[int]:
        sizes = [self.start << i for i in range(self.points)]
        if quick:  # three sizes of the smaller half
            sizes = sizes[:self.points // 2 + 1:max(1, self.points // 4)][:3]
        return [n for n in sizes if self.bytes_per * n ** self.dims <= max_bytes]


# Start: plain Python takes a few microseconds; end: the fastest variant takes about a second
# (0.1 to 0.9 s here), or the memory-bound kernels reach a few hundred MiB of inputs (a few
# milliseconds here).
CASES = [
    Case("vadd", "VAdd", lambda n: _example("vadd").make_inputs(n), 1, 1, 24, 16, 19),
    Case("saxpy", "Saxpy", lambda n: _example("saxpy").make_inputs(n), 1, 1, 16, 16, 19),
    Case("hilbert", "Hilbert", lambda n: _example("hilbert").make_inputs(n), 2, 2, 8, 4, 12),
    Case("jacobi", "Jacobi", lambda n: _example("jacobi").make_inputs(n), 2, 2, 16, 4, 11),
    Case("conway", "Conway", lambda n: _example("conway").make_inputs(n), 2, 2, 16, 4, 11),
    Case("mandelbrot", "Mandelbrot",
         lambda n: _example("mandelbrot").make_inputs(n, max_iter=100), 2, 2, 4, 2, 12),
    Case("black_scholes", "BlackScholes",
         lambda n: _example("black_scholes").make_inputs(n), 1, 1, 56, 4, 20),
    Case("gemm", "Gemm", lambda n: _example("gemm").make_inputs(n), 3, 2, 24, 4, 9),
    Case("gemver", "Gemver", lambda n: _example("gemver").make_inputs(n), 2, 2, 8, 4, 11),
    Case("syr2k", "Syr2k",
         lambda n: _example("syr2k").make_inputs(n, m=max(1, 3 * n // 4)), 3, 2, 32, 4, 9),
    Case("conv2d", "Conv2D", lambda n: _example("conv2d").make_inputs(n, k=5), 2, 2, 16, 4, 11),
    Case("fbcorr", "FBCorr",
         lambda n: _example("fbcorr").make_inputs(batch=2, channels=3, size=n, nfilters=8,
                                                  fsize=5), 2, 2, 176, 4, 9),
]


def case_named(name: str) -> Case:
    for case in CASES:
        if case.name == name:
            return case
    raise KeyError(f"no example {name!r}; the examples: {', '.join(c.name for c in CASES)}")


def thread_counts() -> list[int]:
    """OpenMP thread counts to time: 2 to the cores this process may run on."""
    return list(range(2, len(os.sched_getaffinity(0)) + 1))


def device_variants() -> list[str]:
    """Device variants to time: ``opencl`` where pyopencl finds a device here (PoCL on this
    machine's CPU). Asked once, of a child process (the driver's first use stays out of the
    benchmark's own process and out of every worker that does not time it)."""
    return list(_devices())


@functools.lru_cache(maxsize=1)
def _devices() -> tuple[str, ...]:
    import subprocess

    probe = "from asp_core.backends import opencl; print(opencl.device().name)"
    try:
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                              timeout=120,
                              cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    except subprocess.TimeoutExpired:
        return ()
    return ("opencl",) if done.returncode == 0 else ()


def forced_variants() -> list[str]:
    return ["python", "c"] + [f"openmp@{k}" for k in thread_counts()] + device_variants()


# -- kernels and calls ---------------------------------------------------------------------------

def _make_kernel(cls, contender: str) -> tuple[Any, Callable]:
    """The kernel instance (None for plain Python) and the function a call runs."""
    if contender == "python":
        return None, cls().original_kernel
    if contender in peers.PEERS:
        return None, peers.make(contender, cls)
    if contender == "c":
        kernel = cls(backend="c", strict=True)
    elif contender == "opencl":
        kernel = cls(backend="opencl", strict=True)
    elif contender.startswith("openmp@"):
        kernel = cls(backend="openmp", num_threads=int(contender.split("@")[1]), strict=True)
    elif contender in (DEFAULT, RULE):
        kernel = cls()
    else:
        raise ValueError(f"unknown contender {contender!r}")
    return kernel, kernel.kernel


def describe_choice(kernel) -> dict:
    """What a kernel's last call ran, per nest (with the model's prediction and measurement
    where the record has them), and one label for it all (``c``, ``openmp@2``, or per nest
    joined by ``+``)."""
    if kernel is None or kernel.last_call is None:
        return {}
    if getattr(kernel.last_call, "cold", False):  # the original code, before any analysis
        return {"choice": "python", "nests": [], "cold": True}
    state = getattr(kernel, "_asp_current", None)
    building = any(runner._building for runner in getattr(state, "runners", ()))
    if kernel.last_call.settled:
        # the original method ran whole (``settled``; its record shows the settling call's)
        return {"choice": "python", "nests": [], "settled": True, "building": building}
    nests, labels = [], []
    for nest in kernel.last_call.nests:
        if nest.backend is None:  # this nest did not run in the call
            continue
        threads = getattr(nest, "threads", None)
        nests.append({"backend": nest.backend, "threads": threads, "fallback": nest.fallback,
                      "predicted_s": getattr(nest, "predicted_s", None),
                      "measured_s": getattr(nest, "measured_s", None)})
        labels.append(f"openmp@{threads}" if nest.backend == "openmp" and threads
                      else nest.backend)
    label = labels[0] if len(set(labels)) == 1 else "+".join(labels)
    return {"choice": label or "-", "nests": nests, "building": building}


class Bench:
    """The kernels of the contenders named at one size of one example, over one set of inputs
    restored from a pristine copy before every call."""

    def __init__(self, example: str, n: int, contenders: Sequence[str]):
        case = case_named(example)
        cls = getattr(_example(example), case.cls)
        self.pristine = case.make(n)
        self.work = copy.deepcopy(self.pristine)
        self.kernels = {name: _make_kernel(cls, name) for name in contenders}

    def call(self, name: str) -> dict:
        for work, pristine in zip(self.work, self.pristine):
            if isinstance(work, np.ndarray):
                np.copyto(work, pristine)
        kernel, fn = self.kernels[name]
        t0 = time.perf_counter()
        fn(*self.work)
        seconds = time.perf_counter() - t0
        return {"s": seconds, **describe_choice(kernel)}

    def burst(self, name: str, seconds: float) -> dict:
        """Calls back to back until ``seconds`` have passed (one at least): the best and the
        median time, how often each choice ran, and the last call's record."""
        times, choices, t0 = [], {}, time.perf_counter()
        while not times or time.perf_counter() - t0 < seconds:
            reply = self.call(name)
            times.append(reply.pop("s"))
            label = reply.get("choice")
            if label is not None:
                choices[label] = choices.get(label, 0) + 1
        return {"s": min(times), "median_s": float(np.median(times)), "calls": len(times),
                "choices": choices, **reply}


def first_call(example: str, n: int, contender: str) -> dict:
    """The first call of ``contender`` in this process (compile counted)."""
    return Bench(example, n, [contender]).call(contender)


def extension_loaded() -> None:
    """Wait for the call guards' extension (``asp_core.call_guard``): a process's first
    compiled calls start loading it in the background, and take a slower path until it is
    loaded; warm calls are timed with it loaded (serial C's first round on saxpy at 16
    elements, 11 us a call instead of 1.3, once pruned it from the later rounds)."""
    from asp_core import call_guard

    call_guard.unavailable()


def serve() -> None:
    """The worker loop: JSON commands on stdin, one JSON reply per line on the original stdout
    (anything the kernels print goes to stderr). An error ends the worker, its traceback on
    stderr."""
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    bench = None
    for line in sys.stdin:
        command = json.loads(line)
        op = command.pop("op")
        if op == "load":
            bench = None  # the previous size's arrays go before the new ones come
            bench = Bench(**command)
            extension_loaded()
            reply: dict = {}
        elif op == "burst":
            reply = bench.burst(**command)
        elif op == "call":
            reply = bench.call(**command)
        else:
            raise ValueError(f"unknown command {op!r}")
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--first"]:
        example, n, contender = sys.argv[2:5]
        print(json.dumps(first_call(example, int(n), contender)))
    else:
        serve()
