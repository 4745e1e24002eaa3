"""Command line of the loop-nest specializer: ``python -m specializers.loopnest calibrate``.

``calibrate`` measures this machine's cost-model parameters (``cost.calibrate``; about 15 s,
``--quick`` about 2 s), with a progress bar, prints them as a table and stores them for this
machine in the cache folder, where every later run finds them; then those of each device
backend whose package is installed (``cost.device_calibrate``: OpenCL, CUDA; a few seconds
each), which the cost model offers only once they are measured. ``calibrate --show`` prints
the stored ones (or the defaults in use) and measures nothing.

The command line itself is the ``asp calibrate`` command of ``asp_core.cli`` (click), which
runs ``run_calibration`` here.
"""

from __future__ import annotations

import sys
from typing import Sequence

from asp_core.errors import AspError


def run_calibration(quick: bool = False, show: bool = False) -> int:
    """Measure, print and store the parameters (``show``: print the stored ones); returns the
    exit status."""
    from .cost import calibrate
    from .cost.machine import DEFAULTS
    from .cost.summary import summary

    from .cost import device_calibrate

    if show:
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

    mode = "quick" if quick else "full"
    with tqdm(total=len(calibrate.STEPS), desc=f"calibrating ({mode})", unit="step",
              file=sys.stderr, leave=False) as bar:
        def progress(done: int, total: int, what: str) -> None:
            bar.update(done - bar.n)
            bar.set_postfix_str(what)

        params = calibrate.measure(quick=quick, progress=progress)
    print(summary(params))
    try:
        record = calibrate.store(params)
    except AspError as exc:
        print(f"\nnot stored: {exc}", file=sys.stderr)
        return 1
    print(f"\nstored: {record.describe()}")
    return _calibrate_devices(quick)


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
    from asp_core import cli

    tools = cli.Group("loopnest", commands=[cli.calibrate],
                      help="The loop-nest specializer's tools (also: asp calibrate).",
                      context_settings={"help_option_names": ["-h", "--help"]})
    return cli.run(tools, argv, prog_name="python -m specializers.loopnest")


if __name__ == "__main__":
    sys.exit(main())
