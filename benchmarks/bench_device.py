"""The device variants on this machine: OpenCL (here PoCL on the CPU) against serial C and
OpenMP, side by side in one run, and nvcc's register report for the generated CUDA.

    python -m benchmarks.bench_device [--rounds 3] [--only NAMES] [--out PREFIX]

Per example, at one mid-to-large size, every variant is called in turn in each round (warm:
built and called once before), a burst of calls per turn; the best call of all rounds is
reported, and the ratios to OpenMP. Then the cost of one iteration of a host-driven time
loop (two launches), on OpenCL and under the CUDA emulation, each with its compiled host loop
and with the loop in Python. The first call of the OpenCL variant (its build by the
device compiler, counted) is reported apart, and so is the cost model's prediction for the
OpenCL variant's call (the sum over the nests of its ``opencl`` estimate, from this
machine's device calibration, ``cost.device_calibrate``) over the time measured. The second table compiles the CUDA of each nest
with nvcc for sm_90 (``-Xptxas -v``) and reports registers per thread, spills, and the
occupancy those registers allow at the launches' 128 threads per block (CUDA's rules for
sm_90: 65536 registers and 64 warps per SM, registers allocated 256 per warp): a compile-time
figure, measured without a GPU; no GPU time is reported, since none was measured.

The machine is shared: the load average is printed at the start and the end.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from asp_core.selection import _s
from specializers.loopnest import LoopKernel
from benchmarks.selection_worker import CASES, _example

#: The size each example runs at (its ``n``): OpenMP takes about 1 to 50 ms there.
SIZES = {"vadd": 1 << 21, "saxpy": 1 << 21, "hilbert": 1024, "jacobi": 1024, "conway": 1024,
         "mandelbrot": 256, "black_scholes": 1 << 18, "gemm": 256, "gemver": 1024,
         "syr2k": 256, "conv2d": 512, "fbcorr": 64}
VARIANTS = ("c", "openmp", "opencl")
BURST_S = 0.2
#: sm_90: registers and warps per SM, the most blocks per SM, and the allocation granularity.
SM90 = {"registers": 65536, "warps": 64, "blocks": 32, "granularity": 256}
BLOCK = 128


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def time_examples(names: list[str], rounds: int) -> list[dict]:
    rows = []
    for case in CASES:
        if case.name not in names:
            continue
        cls = getattr(_example(case.name), case.cls)
        inputs = case.make(SIZES[case.name])
        kernels, first = {}, {}
        for variant in VARIANTS:
            kernel = cls(backend=variant, strict=True)
            work = copy.deepcopy(inputs)
            t0 = time.perf_counter()
            kernel.kernel(*work)
            first[variant] = time.perf_counter() - t0
            kernels[variant] = kernel
        best = {v: float("inf") for v in VARIANTS}
        for r in range(rounds):
            for variant in VARIANTS[r % len(VARIANTS):] + VARIANTS[:r % len(VARIANTS)]:
                work = copy.deepcopy(inputs)
                start = time.perf_counter()
                while True:
                    t0 = time.perf_counter()
                    kernels[variant].kernel(*work)
                    best[variant] = min(best[variant], time.perf_counter() - t0)
                    if time.perf_counter() - start > BURST_S:
                        break
        rows.append({"example": case.name, "n": SIZES[case.name], "best_s": best,
                     "opencl_first_s": first["opencl"],
                     "opencl_predicted_s": predicted(cls, inputs, "opencl")})
    return rows


class TwoSweeps(LoopKernel):
    """A time loop around two sibling sweeps that do not fuse (the second reads its row's
    neighbours): the host launches two kernels per iteration."""

    def kernel(self, a, b, steps, n):
        for t in range(steps):
            for i in range(n):
                b[i] = a[i] * 0.5 + 1.0
            for i in range(1, n - 1):
                a[i] = b[i - 1] + b[i + 1]


#: Host-loop iterations timed (the difference of two runs: the fixed cost of a call cancels).
HOST_STEPS = (100, 1100)


def host_loop_cost(rounds: int) -> dict[str, float]:
    """Seconds per iteration of ``TwoSweeps``' host loop on 16 elements (the kernels do almost
    nothing: the launches are the cost), for OpenCL and emulated CUDA, each with its compiled
    host loop and with the loop in Python (the compiled one switched off): the best of
    ``rounds`` of each, from the difference of two runs of ``HOST_STEPS``."""
    from asp_core.backends import opencl
    from specializers.loopnest import device_variants

    def per_iteration(backend: str) -> float:
        kernel = TwoSweeps(backend=backend, strict=True)
        a, b = np.ones(16), np.zeros(16)
        kernel.kernel(a, b, HOST_STEPS[0], 16)   # built, its first use paid
        best = {steps: float("inf") for steps in HOST_STEPS}
        for _ in range(rounds):
            for steps in HOST_STEPS:
                a, b = np.ones(16), np.zeros(16)
                t0 = time.perf_counter()
                kernel.kernel(a, b, steps, 16)
                best[steps] = min(best[steps], time.perf_counter() - t0)
        return (best[HOST_STEPS[1]] - best[HOST_STEPS[0]]) / (HOST_STEPS[1] - HOST_STEPS[0])

    costs = {"opencl, compiled host loop": per_iteration("opencl")}
    available = opencl.host_loop_available
    opencl.host_loop_available = lambda: False
    try:
        costs["opencl, loop in Python"] = per_iteration("opencl")
    finally:
        opencl.host_loop_available = available
    costs["cuda-emulated, compiled host loop"] = per_iteration("cuda-emulated")
    compiled = device_variants._CudaLaunches.host_loop
    device_variants._CudaLaunches.host_loop = lambda *args: False
    try:
        costs["cuda-emulated, loop in Python"] = per_iteration("cuda-emulated")
    finally:
        device_variants._CudaLaunches.host_loop = compiled
    return costs


def predicted(cls, inputs, label: str) -> float | None:
    """The cost model's predicted time of variant ``label`` for a call on ``inputs`` (summed
    over the nests), or None where it does not offer it (a device not calibrated)."""
    kernel = cls()
    for _ in range(3):   # past the cold start
        kernel.kernel(*copy.deepcopy(inputs))
    total, found = 0.0, False
    for runner in kernel._asp_current.runners:
        decision = runner.last_decision
        for estimate in decision.estimates if decision is not None else ():
            if estimate.label == label:
                total += estimate.seconds
                found = True
    return total if found else None


def register_report(names: list[str]) -> list[dict]:
    """nvcc -Xptxas -v over the CUDA of every nest of the examples."""
    from specializers.loopnest.codegen.device import device_module
    from specializers.loopnest.typeinfer import infer_types

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            if case.name not in names:
                continue
            cls = getattr(_example(case.name), case.cls)
            kernel = cls(backend="python")
            kernel.kernel(*copy.deepcopy(case.make(case.start * 2)))
            for index, runner in enumerate(kernel._asp_current.runners):
                types, _ = runner.signature(runner.last_inputs)
                module = device_module("cuda", runner.analysis, runner.last_plan,
                                       infer_types(runner.analysis, types), types, case.name)
                src = Path(tmp) / f"{case.name}{index}.cu"
                src.write_text(module.source)
                done = subprocess.run(["nvcc", "-arch=sm_90", "--fmad=false", "-Xptxas", "-v",
                                       "-diag-suppress", "177", "-c", "-o",
                                       str(Path(tmp) / "k.o"), str(src)],
                                      capture_output=True, text=True)
                for name, regs, spill in _ptxas(done.stderr):
                    rows.append({"example": case.name, "nest": index, "kernel": name,
                                 "registers": regs, "spill_bytes": spill,
                                 "occupancy": occupancy(regs)})
    return rows


def _ptxas(text: str) -> list[tuple[str, int, int]]:
    out, current, spill = [], None, 0
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            current = m.group(1)
        m = re.search(r"(\d+) bytes spill stores", line)
        if m:
            spill = int(m.group(1))
        m = re.search(r"Used (\d+) registers", line)
        if m and current:
            out.append((current, int(m.group(1)), spill))
            current, spill = None, 0
    return out


def occupancy(registers: int) -> float:
    """Active warps per SM over the most, at BLOCK threads per block, limited by registers."""
    warps_per_block = BLOCK // 32
    per_warp = -(-registers * 32 // SM90["granularity"]) * SM90["granularity"]
    warps = SM90["registers"] // max(per_warp, 1)
    blocks = min(SM90["blocks"], warps // warps_per_block)
    return min(SM90["warps"], blocks * warps_per_block) / SM90["warps"]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_device",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", nargs="+", choices=list(SIZES), default=list(SIZES))
    parser.add_argument("--out", type=Path, help="write PREFIX.txt")
    args = parser.parse_args(argv)
    from asp_core.backends import opencl

    lines = [f"device: {opencl.device()}", f"load average at start: {_load()}"]
    rows = time_examples(args.only, args.rounds)
    from specializers.loopnest.cost import device_calibrate

    lines.append(f"cost model: opencl {device_calibrate.status('opencl')}")
    lines.append(f"{'example':14} {'n':>8} {'c':>10} {'openmp':>10} {'opencl':>10} "
                 f"{'opencl/openmp':>14} {'opencl first call':>18} {'model':>10} "
                 f"{'model/opencl':>13}")
    ratios, errors = [], []
    for row in rows:
        best = row["best_s"]
        ratio = best["opencl"] / best["openmp"]
        ratios.append(ratio)
        model = row["opencl_predicted_s"]
        if model is not None:
            errors.append(model / best["opencl"])
        lines.append(f"{row['example']:14} {row['n']:>8} {_s(best['c']):>10} "
                     f"{_s(best['openmp']):>10} {_s(best['opencl']):>10} {ratio:>14.2f} "
                     f"{_s(row['opencl_first_s']):>18} "
                     f"{_s(model) if model is not None else '-':>10} "
                     f"{model / best['opencl'] if model is not None else float('nan'):>13.2f}")
    geomean = float(np.exp(np.mean(np.log(ratios)))) if ratios else float("nan")
    lines.append(f"opencl/openmp geomean {geomean:.2f}, fastest OpenCL at "
                 f"{sum(1 for r in rows if min(r['best_s'], key=r['best_s'].get) == 'opencl')}"
                 f" of {len(rows)} examples")
    if errors:
        lines.append(f"model/opencl (predicted over measured): geomean "
                     f"{float(np.exp(np.mean(np.log(errors)))):.2f}, from {min(errors):.2f} to "
                     f"{max(errors):.2f}")
    lines.append("host loop, per iteration of a time loop launching two kernels on 16 "
                 "elements (difference of 100 and 1100 iterations):")
    host = host_loop_cost(args.rounds)
    for label, seconds in host.items():
        lines.append(f"  {label:32} {_s(seconds):>10}")
    lines.append(f"load average at end: {_load()}")
    if shutil.which("nvcc"):
        lines.append("")
        lines.append("nvcc -arch=sm_90 -Xptxas -v (compile time only: no GPU here)")
        lines.append(f"{'example':14} {'nest':>4} {'kernel':32} {'registers':>9} {'spills':>7} "
                     f"{'occupancy@128':>14}")
        for r in register_report(args.only):
            lines.append(f"{r['example']:14} {r['nest']:>4} {r['kernel']:32} "
                         f"{r['registers']:>9} {r['spill_bytes']:>7} {r['occupancy']:>14.2f}")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.with_suffix(".txt").write_text(text + "\n")
    return {"rows": rows, "geomean": geomean, "host_loop_s": host}


if __name__ == "__main__":
    main()
