"""The cost model's CUDA predictions against calls measured on a GPU, computed here without one.

    python -m benchmarks.gpu_model_check [RESULTS] [--scale 4] [--only NAMES]

RESULTS is a ``bench_device --device cuda`` output (default: the H100's,
``benchmarks/results/device-cuda-h100.txt``; its last table is used). For each example, at the
size the GPU ran it, the model prices the CUDA call from this machine's analysis and CPU
model (the kernels the device layout makes now, their work and bytes) with two sets of device
parameters: the GPU's quick calibration as it stood ("calibrated": the lanes and bandwidth its
probes read) and the same with a CUDA GPU's lanes, lane scale and bandwidth from its
attributes (``cost.device.cuda_params``: what ``device_probes`` now takes; the H100's
attributes as NVIDIA documents them). The launch, the call and the copies' bandwidths are the
calibration's (its line in RESULTS). A kernel whose layout or copies changed since the GPU ran
it is priced as it is now, measured as it was then: say so beside a figure (the H100's
results predate ``coverage``, which no longer copies in vadd's, hilbert's and other outputs
overwritten whole, and syr2k's 2-D grids).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import math
import re
from pathlib import Path

from benchmarks.bench_device import SIZES
from benchmarks.selection_worker import CASES, _example
from specializers.loopnest.cost.device import cuda_params, device_cost
from specializers.loopnest.cost.machine import machine

#: The H100 SXM's attributes (NVIDIA's figures; the names are pycuda's).
H100 = {"MULTIPROCESSOR_COUNT": 132, "WARP_SIZE": 32, "COMPUTE_CAPABILITY_MAJOR": 9,
        "CLOCK_RATE": 1_980_000, "MEMORY_CLOCK_RATE": 2_619_000,
        "GLOBAL_MEMORY_BUS_WIDTH": 5120, "L2_CACHE_SIZE": 50 << 20}
RESULTS = Path(__file__).parent / "results" / "device-cuda-h100.txt"
UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def measured(text: str) -> tuple[dict[str, float], str]:
    """(example -> the CUDA call's seconds, the calibration's line) of the last table."""
    table = text[text.rindex("cost model: cuda"):]
    calibration = table.splitlines()[0]
    times = {}
    for line in table.splitlines()[2:]:
        parts = line.split()
        if len(parts) > 7 and parts[0] in SIZES:
            times[parts[0]] = float(parts[6]) * UNITS[parts[7]]
    return times, calibration


def calibrated_params(line: str):
    """The calibration's parameters as its status line states them."""
    number = r"([0-9.e+]+)"
    lanes, scale = re.search(rf"{number} lanes, a lane {number}x", line).groups()
    launch = re.search(rf"launch {number} us", line).group(1)
    bandwidth = re.search(rf"{number} GB/s, copies", line).group(1)
    up, down = re.search(rf"copies {number}/{number} GB/s", line).groups()
    fresh_up, fresh_down = re.search(rf"more: {number}/{number}\)", line).groups()
    derived = cuda_params(H100, "H100")
    return dataclasses.replace(
        derived, lanes=float(lanes), units=float(lanes), lane_scale=float(scale),
        launch_ns=float(launch) * 1e3, bandwidth=float(bandwidth) * 1e9,
        cache_bandwidth=float(bandwidth) * 1e9, upload_bw=float(up) * 1e9,
        download_bw=float(down) * 1e9, upload_fresh_bw=float(fresh_up) * 1e9,
        download_fresh_bw=float(fresh_down) * 1e9, source="the GPU's quick calibration")


def predictions(name: str, n: int, params: dict) -> dict[str, float]:
    """The model's seconds for the CUDA call of example ``name`` at ``n``, per parameter set."""
    case = next(c for c in CASES if c.name == name)
    cls = getattr(_example(name), case.cls)
    kernel = cls(backend="c", strict=True)
    kernel.kernel(*copy.deepcopy(case.make(n)))
    totals = dict.fromkeys(params, 0.0)
    for runner in kernel._asp_current.runners:
        signature = runner.signature(runner.last_inputs)
        found = runner._device_profile_of(signature, runner._profile_of(signature))
        for label, dev in params.items():
            totals[label] += device_cost(found, dev, machine())[0]
    return totals


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_model_check",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="?", type=Path, default=RESULTS)
    parser.add_argument("--scale", type=int, default=4)
    parser.add_argument("--only", nargs="+", choices=list(SIZES), default=list(SIZES))
    args = parser.parse_args(argv)
    times, line = measured(args.results.read_text())
    calibrated = calibrated_params(line)
    derived = cuda_params(H100, "H100")
    attributes = dataclasses.replace(
        calibrated, lanes=derived.lanes, units=derived.units, lane_scale=derived.lane_scale,
        bandwidth=derived.bandwidth, cache_bandwidth=derived.cache_bandwidth)
    params = {"calibrated": calibrated, "attributes": attributes}
    print(f"measured on the GPU: {args.results}")
    print(f"{'example':14} {'n':>8} {'measured':>10} " +
          " ".join(f"{label + '/measured':>22}" for label in params))
    ratios: dict[str, list[float]] = {label: [] for label in params}
    for name in args.only:
        if name not in times:
            continue
        n = SIZES[name] * args.scale
        seconds = predictions(name, n, params)
        row = [f"{name:14} {n:>8} {times[name] * 1e3:>8.2f}ms"]
        for label in params:
            ratio = seconds[label] / times[name]
            ratios[label].append(ratio)
            row.append(f"{seconds[label] * 1e3:>10.2f}ms {ratio:>9.2f}")
        print(" ".join(row), flush=True)
    for label, values in ratios.items():
        if values:
            print(f"{label}: predicted/measured from {min(values):.2f} to {max(values):.2f}, "
                  f"geomean {math.exp(sum(map(math.log, values)) / len(values)):.2f}")


if __name__ == "__main__":
    main()
