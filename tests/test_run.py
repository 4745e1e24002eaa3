"""run.py and .ci/run: the README's two commands, and CI calling the same test command."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def quick_start_commands():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.strip()]


def test_readme_quick_start_has_exactly_two_commands_main_first():
    assert quick_start_commands() == ["python3 run.py main", "python3 run.py test"]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "exec python3 run.py test" in ci
    assert (ROOT / ".ci" / "run").stat().st_mode & 0o111


def test_run_py_without_a_job_prints_usage():
    proc = subprocess.run([sys.executable, str(ROOT / "run.py")], capture_output=True, text=True)
    assert proc.returncode != 0 and "python3 run.py main" in proc.stderr


def test_the_test_command_runs_a_worker_per_core_unless_told_otherwise(monkeypatch):
    sys.path.insert(0, str(ROOT))
    try:
        import run
    finally:
        sys.path.remove(str(ROOT))
    monkeypatch.setattr(run, "cores", lambda: 2)
    whole_files = ["-n", "2", "--dist", "loadfile", "--no-loadscope-reorder"]
    assert run.parallel([]) == whole_files
    assert run.parallel(["-x", "tests/test_run.py"]) == whole_files
    for chosen in (["-n", "3"], ["-n3"], ["--numprocesses=3"], ["-p", "no:xdist"]):
        assert run.parallel(chosen) == []
    monkeypatch.setattr(run, "cores", lambda: 64)
    assert run.parallel([])[1] == str(run.MAX_WORKERS)
    monkeypatch.setattr(run, "cores", lambda: 1)
    assert run.parallel([]) == []
    assert 1 <= run.cores()


def test_the_files_marked_slow_are_collected_first():
    """The workers take whole files in the collection's order (``--no-loadscope-reorder``):
    a file marked ``slow`` comes before the others, whatever its name."""
    loopnest = "tests/specializers/loopnest"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         f"{loopnest}/test_settled.py", f"{loopnest}/test_tiling.py"],
        cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    files = [line.split("::")[0] for line in proc.stdout.splitlines() if "::" in line]
    assert files and files[0].endswith("test_tiling.py") and files[-1].endswith("test_settled.py")
    first_settled = files.index(f"{loopnest}/test_settled.py")
    assert all(f.endswith("test_tiling.py") for f in files[:first_settled])
