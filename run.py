#!/usr/bin/env python3
"""The project's two commands; each does all its own set-up on a fresh machine.

    python3 run.py main    # the main job: the examples, specialized, with what ran and how fast
    python3 run.py test    # the test suite (what CI runs, through .ci/run), a process per core

Set-up: a virtual environment in .venv (created if missing), with the project installed in
editable mode and its test extra (and the opencl extra where it installs); it is reinstalled when setup.py or pyproject.toml change.
Needs only Python 3.11+ and a C compiler (gcc). Extra arguments go to the job (pytest, or the
examples runner: e.g. ``python3 run.py main --help``).
"""

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PY = VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
STAMP = VENV / ".asp-installed"
EXTRAS = "test"
#: Extras installed when they can be (a wheel for this platform, a reachable index): without
#: them their tests skip, saying why.
OPTIONAL = "opencl"
#: The most test processes (each compiles; more would mostly wait for the disk and memory).
MAX_WORKERS = 4


def say(text):
    print(f"[run.py] {text}", flush=True)


def setup_digest():
    h = hashlib.sha256((EXTRAS + OPTIONAL).encode())
    # (with the C sources setup.py builds: an editable install builds them once, in place)
    for name in ("setup.py", "pyproject.toml", "specializers/loopnest/_coldgate.c"):
        h.update((ROOT / name).read_bytes())
    return h.hexdigest()


def ensure_environment():
    if sys.version_info < (3, 11):
        sys.exit(f"Python 3.11 or newer is needed (this is {sys.version.split()[0]})")
    if not PY.exists():
        say(f"creating a virtual environment in {VENV}")
        try:
            venv.create(VENV, with_pip=True)
        except Exception as exc:  # e.g. Debian without python3-venv: no ensurepip
            say(f"venv with pip failed ({exc}); creating it without pip and using this pip")
            venv.create(VENV, with_pip=False, clear=True)
    digest = setup_digest()
    if STAMP.exists() and STAMP.read_text() == digest:
        return
    say(f"installing the project and its [{EXTRAS}] extra into {VENV} (once)")
    has_pip = subprocess.run([str(PY), "-m", "pip", "--version"], capture_output=True).returncode == 0
    pip = [str(PY), "-m", "pip"] if has_pip else [sys.executable, "-m", "pip", "--python", str(PY)]
    subprocess.run(pip + ["install", "--quiet", "--upgrade", "pip"], check=False)
    subprocess.run(pip + ["install", "--quiet", "-e", f".[{EXTRAS}]"], cwd=ROOT, check=True)
    if subprocess.run(pip + ["install", "--quiet", "-e", f".[{EXTRAS},{OPTIONAL}]"],
                      cwd=ROOT).returncode != 0:
        say(f"the [{OPTIONAL}] extra could not be installed; its tests will skip")
    STAMP.write_text(digest)


def cores():
    """The cores this process may run on: its affinity mask, within a cgroup's CPU quota."""
    count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()
        if quota != "max":
            count = min(count, int(quota) // int(period))
    except (OSError, ValueError):
        pass
    return max(1, count or 1)


def parallel(args):
    """pytest-xdist's options for the test suite: a worker per core (at most MAX_WORKERS), each
    taking whole files (a file's tests share what they measured: ``--dist loadfile``) in the
    order the collection leaves them (the longest first: ``tests/conftest.py``); none
    with one core, or where the arguments choose (``-n``, ``-p no:xdist``)."""
    if any(a in ("-n", "--numprocesses", "no:xdist") or a.startswith(("-n", "--numprocesses="))
           for a in args):
        return []
    workers = min(cores(), MAX_WORKERS)
    return ["-n", str(workers), "--dist", "loadfile", "--no-loadscope-reorder"] \
        if workers > 1 else []


def main(argv):
    if not argv or argv[0] not in ("main", "test"):
        sys.exit(__doc__)
    ensure_environment()
    job, rest = argv[0], argv[1:]
    if job == "main":
        command = [str(PY), "-m", "examples", *rest]
    else:
        command = [str(PY), "-m", "pytest", *parallel(rest), *rest]
    say(" ".join(command[1:]))
    return subprocess.run(command, cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
