"""cli: the ``asp`` command line. Help on every command; ``cache info|clear|prune`` on a cache
of the test's own; ``explain`` on a small kernel file; ``calibrate`` as
``python -m specializers.loopnest calibrate``; ``bench`` and ``report``'s user errors and the
line they say outside a clone (their run: tests/benchmarks/test_suite.py); user errors as one
line, never a traceback."""

import dataclasses
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from asp_core import cache, cli

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = (["calibrate"], ["explain"], ["cache"], ["cache", "info"], ["cache", "clear"],
            ["cache", "prune"], ["bench"], ["report"])

KERNELS = '''
import numpy as np
from specializers.loopnest import LoopKernel


class Saxpy(LoopKernel):
    def kernel(self, a, x, y):
        for i in range(len(x)):
            y[i] = a * x[i] + y[i]


class Broken(LoopKernel):
    def kernel(self, x):
        for i in range(len(x) + 1):
            x[i] = 1.0


class Scaled(LoopKernel):
    def __init__(self, factor, **options):
        super().__init__(**options)
        self.factor = factor

    def kernel(self, x):
        for i in range(len(x)):
            x[i] = x[i] * self.factor


def make_inputs(n=8, a=2.0):
    return a, np.arange(n, dtype=np.float64), np.ones(n)


def small_inputs():
    return {"a": 1.0, "x": np.ones(3), "y": np.zeros(3)}


def not_a_tuple():
    return 3


NOT_A_KERNEL = int
'''


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """``ASP_CACHE_DIR`` set to a folder of this test, nothing of it remembered."""
    root = tmp_path / "cache"
    monkeypatch.setenv("ASP_CACHE_DIR", str(root))
    monkeypatch.delenv("ASP_CACHE_MAX_BYTES", raising=False)
    cache.clear_memo()
    yield cache.DiskCache(root)
    cache.clear_memo()


def _asp(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(cli.cli, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    return result.output


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help(command):
    text = _asp(*command, "--help")
    assert text.startswith(f"Usage: asp {' '.join(command)}") and "Options:" in text


def test_top_level_help_names_the_commands():
    text = _asp("--help")
    for command in ("calibrate", "explain", "cache", "bench", "report"):
        assert f"  {command} " in text
    assert "Usage: asp [OPTIONS] COMMAND" in text and cli.VERSION in _asp("--version")


def test_python_m_asp_core_runs_the_command_line():
    proc = subprocess.run([sys.executable, "-m", "asp_core", "--help"], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "python -m asp_core" in proc.stdout and "explain" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "asp_core", "cache", "frobnicate"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 2 and "No such command" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_installed_console_script():
    script = shutil.which("asp", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the asp console script is not installed (pip install -e .)")
    proc = subprocess.run([script, "cache", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and "Usage: asp cache" in proc.stdout, proc.stderr


def test_main_returns_the_exit_status(capsys):
    assert cli.main(["--help"]) == 0
    assert cli.main(["no-such-command"]) == 2
    assert "No such command" in capsys.readouterr().err


# -- cache -----------------------------------------------------------------------------------------

def _fill(disk: cache.DiskCache) -> list[str]:
    """Entries of several kinds, the first used long ago."""
    def library(variant):
        def build(folder):
            (folder / "nest.c").write_text(f"/* {variant} variant of K.kernel\n"
                                           f" * variant: {variant}\n */\n")
            (folder / "nest.so").write_bytes(b"\x7fELF" + b"\0" * 2000)
        return build

    builds = {"1" * 64: library("c"), "2" * 64: library("openmp"),
              "3" * 64: lambda f: (f / "template.py").write_text("# compiled"),
              "4" * 64: lambda f: (f / "version.txt").write_text("gcc 12")}
    for key, build in builds.items():
        disk.entry(key, build)
    old = time.time() - 40 * 86400
    os.utime(disk.root / "locks" / f"{'1' * 64}.lock", (old, old))
    cache.clear_memo()
    return list(builds)


def test_cache_info_on_a_missing_and_an_empty_cache(own_cache):
    text = _asp("cache", "info")
    assert f"cache folder: {own_cache.root} (ASP_CACHE_DIR)" in text
    assert "1.0 GiB (the default" in text and "does not exist yet" in text
    assert not own_cache.root.exists()  # looking made nothing
    own_cache.get("0" * 64)  # makes the folders
    assert "entries:      0, 0 B" in _asp("cache", "info")


def test_cache_info_by_kind_and_last_use(own_cache, monkeypatch):
    _fill(own_cache)
    (own_cache.root / "calibration").mkdir()
    (own_cache.root / "calibration" / "m.json").write_text("{}")
    monkeypatch.setenv("ASP_CACHE_MAX_BYTES", "2G")
    text = _asp("cache", "info")
    total = sum(e.size for e in own_cache.entries())
    assert f"entries:      4, {cli._size(total)}" in text
    assert "2.0 GiB (ASP_CACHE_MAX_BYTES)" in text
    for kind in ("c variant", "openmp variant", "compiled Mako template", "compiler version"):
        assert f"  {kind} " in text
    assert "within an hour                                3" in text
    assert "longer ago                                    1" in text
    assert "calibration" in text


def test_cache_clear_removes_entries_and_keeps_the_calibration(own_cache):
    _fill(own_cache)
    own_cache.keep_failed("5" * 64, "m.c", "int x")
    (own_cache.root / "calibration").mkdir()
    text = _asp("cache", "clear")
    assert "removed 4 entries" in text and "1 failed sources" in text
    assert own_cache.entries() == [] and (own_cache.root / "calibration").is_dir()
    assert list((own_cache.root / "failed").iterdir()) == []
    assert "removed 0 entries" in _asp("cache", "clear")


def test_cache_prune_keeps_the_most_recently_used(own_cache):
    keys = _fill(own_cache)
    for age, key in zip((400, 300, 200), keys[1:]):
        past = time.time() - age
        os.utime(own_cache.root / "locks" / f"{key}.lock", (past, past))
    sizes = {e.key: e.size for e in own_cache.entries()}
    keep = sizes[keys[2]] + sizes[keys[3]]
    text = _asp("cache", "--cache-dir", str(own_cache.root), "prune", "--max-size", str(keep))
    assert "removed 2 entries" in text and "least recently used first" in text
    assert sorted(e.key for e in own_cache.entries()) == keys[2:]


def test_cache_prune_defaults_to_the_cap_and_reports_what_it_keeps(own_cache, monkeypatch):
    _fill(own_cache)
    monkeypatch.setenv("ASP_CACHE_MAX_BYTES", "1K")
    text = _asp("cache", "prune")
    assert "removed 1 entries" in text and "kept 3 entries in use or used in the last 60 s" in text
    monkeypatch.setenv("ASP_CACHE_MAX_BYTES", "0")
    assert "give --max-size" in _asp("cache", "prune", code=2)


def test_cache_user_errors_are_one_line(own_cache, tmp_path):
    assert "not a size: 'huge'" in _asp("cache", "prune", "--max-size", "huge", code=2)
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    text = _asp("cache", "--cache-dir", str(shared), "prune", "--max-size", "0", code=1)
    assert text.startswith("Error: refusing cache path") and "writable by group or others" in text


# -- explain ---------------------------------------------------------------------------------------

@pytest.fixture
def kernels(tmp_path, monkeypatch):
    """A kernel file; what importing it adds to ``sys.path`` and ``sys.modules`` goes after."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    path = tmp_path / "tiny_kernels.py"
    path.write_text(KERNELS)
    yield path
    for name in set(sys.modules) - before:
        if name.startswith(("tiny_kernels", "broken_file", "_asp_explain_")):
            del sys.modules[name]


def test_explain_twice_and_a_second_file_of_the_same_name(kernels, own_cache, tmp_path):
    other = tmp_path / "other" / kernels.name
    other.parent.mkdir()
    other.write_text(KERNELS.replace("class Saxpy", "class Saxpy2"))
    for target in (f"{kernels}:Saxpy", f"{kernels}:Saxpy", f"{other}:Saxpy2"):
        assert "ran on python" in _asp("explain", target, "--backend", "python", "--strict")
    assert sys.modules["tiny_kernels"].__file__ == str(kernels)


def test_explain_with_the_files_make_inputs(kernels, own_cache):
    text = _asp("explain", f"{kernels}:Saxpy", "--size", "5", "a=3.0", "--backend", "python",
                "--strict")
    assert text.startswith("kernel Saxpy.kernel (") and str(kernels) in text
    assert "nest 0 at line" in text and "ran on python" in text
    assert "y[i] = a * x[i] + y[i]" in text


def test_explain_compiled(kernels, own_cache):
    text = _asp("explain", f"{kernels}:Saxpy", "--backend", "c", "--strict")
    assert "ran on c" in text


def test_explain_with_the_kernels_own_arguments(kernels, own_cache):
    text = _asp("explain", f"{kernels}:Saxpy", "--no-inputs", "2.0", "[1.0, 2.0]",
                "y=[0.5, 0.5]", "--backend", "python", "--strict")
    assert "ran on python" in text
    text = _asp("explain", f"{kernels}:Saxpy", "--inputs", "small_inputs", "--backend",
                "python", "--strict")
    assert "ran on python" in text
    text = _asp("explain", f"{kernels}:Scaled", "--init", "factor=2.5", "--no-inputs",
                "[1.0, 2.0]", "--backend", "python", "--strict")
    assert "kernel Scaled.kernel" in text


@pytest.mark.parametrize("args, code, message", [
    (["{k}:Nope"], 2, "has no class Nope; its LoopKernel classes: Broken, Saxpy, Scaled"),
    (["{k}:NOT_A_KERNEL"], 2, "NOT_A_KERNEL of {k} is not a LoopKernel subclass"),
    (["{k}"], 2, "is not FILE:CLASS"),
    (["missing.py:Saxpy"], 2, "no such file: missing.py"),
    (["{k}:Saxpy", "n=oops"], 2, "'oops' is not a Python literal"),
    (["{k}:Saxpy", "--sise", "3"], 2, "no such option: --sise"),
    (["{k}:Saxpy", "--inputs", "nothing"], 2, "has no function nothing"),
    (["{k}:Saxpy", "--no-inputs", "--size", "3"], 2, "--size needs an inputs function"),
    (["{k}:Saxpy", "--init", "3"], 2, "Invalid value for --init: give NAME=VALUE"),
    (["{k}:Saxpy", "--inputs", "not_a_tuple"], 1, "not_a_tuple() returned a int"),
    (["{k}:Saxpy", "--backend", "fortran"], 1, "making Saxpy() raised ValueError: unknown "
                                               "backend 'fortran'"),
    (["{k}:Scaled"], 1, "making Scaled() raised TypeError"),
    (["{k}:Broken", "--no-inputs", "[1.0]", "--backend", "python"], 1,
     "running Broken.kernel raised IndexError"),
])
def test_explain_user_errors_are_one_line(kernels, own_cache, args, code, message):
    text = _asp("explain", *[a.format(k=kernels) for a in args], code=code)
    assert message.format(k=kernels) in " ".join(text.split())


def test_explain_points_at_the_users_line(kernels, own_cache):
    text = _asp("explain", f"{kernels}:Saxpy", "n=-1", code=1)
    assert "calling make_inputs() raised ValueError" in text and f"({kernels}:" in text
    broken = kernels.parent / "broken_file.py"
    broken.write_text("x = (\n")
    assert "raised SyntaxError" in _asp("explain", f"{broken}:K", code=1)


def test_explain_a_module_of_a_package():
    text = _asp("explain", str(ROOT / "examples" / "gemm.py") + ":Gemm", "-n", "4",
                "--backend", "python", "--strict")
    assert "kernel Gemm.kernel" in text and "ran on python" in text


# -- calibrate -------------------------------------------------------------------------------------

@pytest.fixture
def no_calibration(tmp_path, monkeypatch):
    from specializers.loopnest.cost import machine

    monkeypatch.setenv("ASP_CACHE_DIR", str(tmp_path / "cache"))
    machine.clear_cache()
    yield
    machine.clear_cache()


def test_calibrate_show(no_calibration):
    text = _asp("calibrate", "--show")
    assert "No calibration stored for this machine" in text and "device opencl:" in text


def test_python_m_loopnest_calibrate_still_works(no_calibration, capsys):
    from specializers.loopnest import __main__ as loopnest_cli

    assert loopnest_cli.main(["calibrate", "--show"]) == 0
    assert "No calibration stored" in capsys.readouterr().out
    assert loopnest_cli.main(["--help"]) == 0
    assert "Usage: python -m specializers.loopnest" in capsys.readouterr().out
    assert loopnest_cli.main(["calibrate", "--slow"]) == 2


def test_calibrate_measures_and_stores(no_calibration, monkeypatch):
    from specializers.loopnest.cost import calibrate, device_calibrate
    from specializers.loopnest.cost.machine import DEFAULTS

    calls = []

    def measure(quick=False, progress=None):
        calls.append(quick)
        return dataclasses.replace(DEFAULTS, py_iteration_ns=42.0, source="fake calibration")

    monkeypatch.setattr(calibrate, "measure", measure)
    monkeypatch.setattr(device_calibrate, "PACKAGES", {})  # no device measured
    text = _asp("calibrate", "--quick")
    assert calls == [True] and "42.0 ns" in text and "stored:" in text
    assert "fake calibration" in _asp("calibrate", "--show")


# -- bench and report (their run: tests/benchmarks/test_suite.py) --------------------------------

@pytest.mark.parametrize("args, code, message", [
    (["bench", "--only", "vadd,nosuch"], 2, "no example nosuch; the examples: vadd, saxpy"),
    (["bench", "--sizes", "16,big"], 2, "give whole numbers"),
    (["bench", "--sizes", "0"], 2, "sizes are at least 1"),
    (["report", "{tmp}/none"], 1, "no bench result in {tmp}/none: bench.json is missing"),
    (["report", "{tmp}"], 1, "{tmp}/bench.json is not an asp bench result"),
], ids=["unknown example", "bad size", "zero size", "no result", "not a result"])
def test_bench_and_report_user_errors_are_one_line(tmp_path, args, code, message):
    (tmp_path / "bench.json").write_text('{"format": "something else"}')
    text = _asp(*(a.format(tmp=tmp_path) for a in args), code=code)
    assert message.format(tmp=tmp_path) in " ".join(text.split())


def test_bench_outside_a_clone_says_so_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "__file__", str(tmp_path / "site-packages" / "asp_core" / "cli.py"))
    monkeypatch.chdir(tmp_path)
    for command in (["bench", "--quick"], ["report", str(tmp_path)]):
        text = _asp(*command, code=1)
        assert text.startswith(f"Error: asp {command[0]} needs a clone of the asp-sejits "
                               "repository") and len(text.strip().splitlines()) == 1
