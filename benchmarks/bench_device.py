"""The device variants on this machine: OpenCL (here PoCL on the CPU) or CUDA (on a machine
with a GPU) against serial C and OpenMP, side by side in one run, and nvcc's register report
for the generated CUDA.

    python -m benchmarks.bench_device [--device opencl|cuda] [--scale K] [--rounds 3]
                                      [--only NAMES] [--out PREFIX] [--no-registers]

Per example, at one mid-to-large size, every variant is called in turn in each round (warm:
built and called once before), a burst of calls per turn; the best call of all rounds is
reported, and the ratios to OpenMP. Then the cost of one iteration of a host-driven time
loop (two launches), on OpenCL and under the CUDA emulation, each with its compiled host loop
and with the loop in Python. The first call of the device variant (its build by the
device compiler, counted) is reported apart, and so is the cost model's prediction for the
device variant's call (the sum over the nests of its estimate, from this machine's device
calibration, ``cost.device_calibrate``) over the time measured. ``--scale`` multiplies each
example's ``n`` (a GPU needs larger problems than the CPU's to pay its copies). The second table compiles the CUDA of each nest
with nvcc for sm_90 (``-Xptxas -v``) and reports registers per thread, spills, and the
occupancy those registers allow at the launches' 128 threads per block (CUDA's rules for
sm_90: 65536 registers and 64 warps per SM, registers allocated 256 per warp): a compile-time
figure, measured without a GPU.

The machine is shared: the load average is printed at the start and the end.
"""

from __future__ import annotations

import argparse
import copy
import math
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
HOSTS = ("c", "openmp")
BURST_S = 0.2
#: sm_90: registers and warps per SM, the most blocks per SM, and the allocation granularity.
SM90 = {"registers": 65536, "warps": 64, "blocks": 32, "granularity": 256}
BLOCK = 128


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def time_examples(names: list[str], rounds: int, device: str = "opencl",
                  scale: int = 1) -> list[dict]:
    variants = HOSTS + (device,)
    rows = []
    for case in CASES:
        if case.name not in names:
            continue
        cls = getattr(_example(case.name), case.cls)
        n = SIZES[case.name] * scale
        inputs = case.make(n)
        kernels, first = {}, {}
        for variant in variants:
            kernel = cls(backend=variant, strict=True)
            work = copy.deepcopy(inputs)
            t0 = time.perf_counter()
            kernel.kernel(*work)
            first[variant] = time.perf_counter() - t0
            kernels[variant] = kernel
        best = {v: float("inf") for v in variants}
        for r in range(rounds):
            for variant in variants[r % len(variants):] + variants[:r % len(variants)]:
                work = copy.deepcopy(inputs)
                start = time.perf_counter()
                while True:
                    t0 = time.perf_counter()
                    kernels[variant].kernel(*work)
                    best[variant] = min(best[variant], time.perf_counter() - t0)
                    if time.perf_counter() - start > BURST_S:
                        break
        model = predicted(cls, inputs, variants)
        rows.append({"example": case.name, "n": n, "best_s": best,
                     "device_first_s": first[device], "device_predicted_s": model.get(device),
                     "model_pick": min(model, key=model.get) if model else None})
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


def host_loop_cost(rounds: int, device: str = "opencl") -> dict[str, float]:
    """Seconds per iteration of ``TwoSweeps``' host loop on 16 elements (the kernels do almost
    nothing: the launches are the cost), for ``device`` (OpenCL; or CUDA on a GPU) and emulated
    CUDA, each with its compiled host loop and with the loop in Python (the compiled one
    switched off): the best of ``rounds`` of each, from the difference of two runs of
    ``HOST_STEPS``."""
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

    def without(owner, name: str, backend: str) -> float:
        """``per_iteration`` with ``owner.name`` (the compiled loop's availability) false."""
        compiled = getattr(owner, name)
        setattr(owner, name, lambda *args: False)
        try:
            return per_iteration(backend)
        finally:
            setattr(owner, name, compiled)

    costs = {}
    for backend in (device, "cuda-emulated"):
        costs[f"{backend}, compiled host loop"] = per_iteration(backend)
        costs[f"{backend}, loop in Python"] = (
            without(opencl, "host_loop_available", backend) if backend == "opencl" else
            without(device_variants._CudaLaunches, "host_loop", backend))
    return costs


def predicted(cls, inputs, labels: tuple[str, ...]) -> dict[str, float]:
    """The cost model's predicted time of each variant of ``labels`` for a call on ``inputs``
    (summed over the nests), where it offers it for every nest (not a device it has not
    calibrated)."""
    kernel = cls()
    for _ in range(3):   # past the cold start
        kernel.kernel(*copy.deepcopy(inputs))
    totals: dict[str, float] = {}
    counts: dict[str, int] = {}
    runners = kernel._asp_current.runners
    for runner in runners:
        decision = runner.last_decision
        best: dict[str, float] = {}   # per variant, the model's best (OpenMP: of its teams)
        for estimate in decision.estimates if decision is not None else ():
            label = estimate.label.partition("@")[0]   # (openmp@16: OpenMP on 16 threads)
            if label in labels:
                best[label] = min(best.get(label, math.inf), estimate.seconds)
        for label, seconds in best.items():
            totals[label] = totals.get(label, 0.0) + seconds
            counts[label] = counts.get(label, 0) + 1
    return {label: s for label, s in totals.items() if counts[label] == len(runners)}


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


def _device_name(device: str) -> str:
    if device == "opencl":
        from asp_core.backends import opencl

        return str(opencl.device())
    from asp_core.backends import cuda

    cuda.cuda_context()
    import pycuda.driver as drv

    return f"{drv.Device(0).name()} ({cuda.device_architecture()}, " \
        f"{cuda.device_memory() / 2**30:.0f} GiB), CUDA driver {drv.get_driver_version()}"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_device",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["opencl", "cuda"], default="opencl")
    parser.add_argument("--scale", type=int, default=1, help="multiply each example's n")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", nargs="+", choices=list(SIZES), default=list(SIZES))
    parser.add_argument("--out", type=Path, help="write PREFIX.txt")
    parser.add_argument("--no-registers", action="store_true",
                        help="leave out nvcc's register report")
    args = parser.parse_args(argv)
    device = args.device

    lines = [f"device: {_device_name(device)}", f"host: {os.cpu_count()} CPUs",
             f"load average at start: {_load()}"]
    from specializers.loopnest.cost import device_calibrate

    if device_calibrate.stored_record(device) is None:
        # (else the model offers no device until the background calibration it starts ends,
        # and the first examples' model column stays empty: seen on an H100)
        print(f"no calibration of the {device} device here: a quick one first", flush=True)
        device_calibrate.calibrate(device, quick=True)
    rows = time_examples(args.only, args.rounds, device, args.scale)

    lines.append(f"cost model: {device} {device_calibrate.status(device)}")
    lines.append(f"{'example':14} {'n':>8} {'c':>10} {'openmp':>10} {device:>10} "
                 f"{device + '/openmp':>14} {device + ' first call':>18} {'model':>10} "
                 f"{'model/' + device:>13} {'fastest':>8} {'model picks':>12}")
    ratios, errors = [], []
    for row in rows:
        best = row["best_s"]
        ratio = best[device] / best["openmp"]
        ratios.append(ratio)
        model = row["device_predicted_s"]
        if model is not None:
            errors.append(model / best[device])
        lines.append(f"{row['example']:14} {row['n']:>8} {_s(best['c']):>10} "
                     f"{_s(best['openmp']):>10} {_s(best[device]):>10} {ratio:>14.2f} "
                     f"{_s(row['device_first_s']):>18} "
                     f"{_s(model) if model is not None else '-':>10} "
                     f"{model / best[device] if model is not None else float('nan'):>13.2f} "
                     f"{min(best, key=best.get):>8} {row['model_pick'] or '-':>12}")
    geomean = float(np.exp(np.mean(np.log(ratios)))) if ratios else float("nan")
    lines.append(f"{device}/openmp geomean {geomean:.2f}, fastest {device} at "
                 f"{sum(1 for r in rows if min(r['best_s'], key=r['best_s'].get) == device)}"
                 f" of {len(rows)} examples")
    lines.append(f"the model's fastest (of these three, warm) is the measured fastest at "
                 f"{sum(1 for r in rows if r['model_pick'] == min(r['best_s'], key=r['best_s'].get))}"
                 f" of {len(rows)} examples")
    if errors:
        lines.append(f"model/{device} (predicted over measured): geomean "
                     f"{float(np.exp(np.mean(np.log(errors)))):.2f}, from {min(errors):.2f} to "
                     f"{max(errors):.2f}")
    lines.append("host loop, per iteration of a time loop launching two kernels on 16 "
                 "elements (difference of 100 and 1100 iterations):")
    host = host_loop_cost(args.rounds, device)
    for label, seconds in host.items():
        lines.append(f"  {label:32} {_s(seconds):>10}")
    lines.append(f"load average at end: {_load()}")
    if shutil.which("nvcc") and not args.no_registers:
        lines.append("")
        lines.append("nvcc -arch=sm_90 -Xptxas -v (compile time, no GPU needed)")
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
