"""Command line of the loop-nest specializer: ``python -m specializers.loopnest calibrate``.

``calibrate`` measures this machine's cost-model parameters (``cost.calibrate``; about 15 s,
``--quick`` about 2 s), with a progress bar, prints them as a table and stores them for this
machine in the cache folder, where every later run finds them; then those of each device
backend whose package is installed (``cost.device_calibrate``: OpenCL, CUDA; a few seconds
each), which the cost model offers only once they are measured. ``calibrate --show`` prints
the stored ones (or the defaults in use) and measures nothing.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from asp_core.errors import AspError


def _calibrate(args: argparse.Namespace) -> int:
    from .cost import calibrate
    from .cost.machine import DEFAULTS
    from .cost.summary import summary

    from .cost import device_calibrate

    if args.show:
        record = calibrate.stored_record()
        if record is None:
            print("No calibration stored for this machine: the cost model uses its defaults.\n")
            print(summary(DEFAULTS))
        else:
            print(summary(calibrate.stored()))
        print()
        for backend in device_calibrate.PACKAGES:
            print(f"device {backend}: {device_calibrate.status(backend)}")
        return 0
    from tqdm import tqdm

    mode = "quick" if args.quick else "full"
    with tqdm(total=len(calibrate.STEPS), desc=f"calibrating ({mode})", unit="step",
              file=sys.stderr, leave=False) as bar:
        def progress(done: int, total: int, what: str) -> None:
            bar.update(done - bar.n)
            bar.set_postfix_str(what)

        params = calibrate.measure(quick=args.quick, progress=progress)
    print(summary(params))
    try:
        record = calibrate.store(params)
    except AspError as exc:
        print(f"\nnot stored: {exc}", file=sys.stderr)
        return 1
    print(f"\nstored: {record.describe()}")
    return _calibrate_devices(args.quick)


def _calibrate_devices(quick: bool) -> int:
    """Measure and store each device backend's parameters where it has a device here."""
    from .cost import device_calibrate

    status = 0
    for backend in device_calibrate.PACKAGES:
        if not device_calibrate.importable(backend):
            print(f"device {backend}: {device_calibrate.status(backend)}")
            continue
        print(f"device {backend}: measuring...", file=sys.stderr)
        try:
            device_calibrate.calibrate(backend, quick)
        except AspError as exc:   # no device (BackendUnavailable), a refused build...
            print(f"device {backend}: not calibrated: {exc}")
            continue
        except (OSError, RuntimeError) as exc:
            print(f"device {backend}: the calibration failed: {exc}")
            status = 1
            continue
        print(f"device {backend}: {device_calibrate.status(backend)}")
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m specializers.loopnest",
                                     description="The loop-nest specializer's tools.")
    commands = parser.add_subparsers(dest="command", required=True)
    calibrate = commands.add_parser(
        "calibrate", help="measure this machine's cost-model parameters and store them",
        description="Measure this machine's cost-model parameters (interpreter and compiled "
                    "operation times, call overheads, memory bandwidth, OpenMP costs, compile "
                    "time), print them and store them in the cache folder.")
    calibrate.add_argument("--quick", action="store_true",
                           help="a quick measurement (about 2 s) instead of the full one "
                                "(about 15 s)")
    calibrate.add_argument("--show", action="store_true",
                           help="print the stored parameters (or the defaults in use); "
                                "measure nothing")
    calibrate.set_defaults(run=_calibrate)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
