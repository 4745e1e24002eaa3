"""cost.calibrate: a real quick measurement gives sane numbers; the record is stored per machine
and read back by ``machine()``; the first use calibrates in the background unless
ASP_CALIBRATE=0; a corrupt or foreign record is ignored and measured again, never a crash."""

import dataclasses
import json
import threading

import pytest

from asp_core import calibration
from asp_core.errors import CacheError
from specializers.loopnest import __main__ as cli
from specializers.loopnest.cost import (calibrate, device_calibrate, machine, native_probes,
                                        python_probes)
from specializers.loopnest.cost.features import KINDS, PY_KINDS
from specializers.loopnest.cost.machine import DEFAULTS, MachineParams
from specializers.loopnest.cost.summary import summary

FAKE = dataclasses.replace(DEFAULTS, py_iteration_ns=42.0, source="fake calibration")


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """A cache folder of its own, background calibration allowed, nothing remembered."""
    monkeypatch.setenv("ASP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ASP_CALIBRATE", "1")
    calibrate.BACKGROUND.clear()
    machine.clear_cache()
    yield tmp_path / "cache"
    calibrate.BACKGROUND.clear()
    machine.clear_cache()


@pytest.fixture
def fake_measure(monkeypatch):
    """``measure`` replaced by one that returns FAKE once ``release`` is set."""
    release = threading.Event()
    calls = []

    def measure(quick=False, progress=None):
        calls.append(quick)
        assert release.wait(30)
        return FAKE

    monkeypatch.setattr(calibrate, "measure", measure)
    return release, calls


# -- a real measurement ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def quick():
    return calibrate.measure(quick=True)


def test_quick_measurement_is_sane(quick):
    quick.validate()
    assert quick.source.startswith("quick calibration")
    assert set(quick.py_op_ns) == set(KINDS) | set(PY_KINDS) and set(quick.c_op_ns) == set(KINDS)
    for kind in ("load", "store", "arith", "div", "pow", "cmp", "math", "math_cheap", "conv"):
        assert quick.py_op_ns[kind] > quick.c_op_ns[kind], kind
    assert 1 < quick.py_iteration_ns < 1000 and 0 < quick.c_iteration_ns < quick.py_iteration_ns
    assert 0 < quick.py_op_ns["load"] < 10_000 and quick.py_subscript_ns >= 0
    assert quick.vector_speedup >= 1
    assert 0 < quick.c_call_ns < 1e6 and 0 <= quick.py_call_ns < 1e6


def test_quick_measurement_of_memory_and_openmp_is_sane(quick):
    from asp_core.platform import cpu_cores, query_platform

    assert 1 in quick.bandwidth and cpu_cores() in quick.bandwidth
    for value in list(quick.bandwidth.values()) + [quick.cache_bandwidth]:
        assert 1e8 < value < 1e13
    assert quick.cache_bytes >= 2**16
    if query_platform().openmp:
        assert min(quick.omp_fork_ns) == 2 and set(quick.omp_barrier_ns) == set(quick.omp_fork_ns)
        assert all(0 < v < 1e8 for v in quick.omp_fork_ns.values())
        assert all(0 <= v < 1e8 for v in quick.omp_barrier_ns.values())
        assert set(quick.omp_combine_ns) == set(quick.omp_fork_ns)
        assert all(0 < v < 1e8 for v in quick.omp_combine_ns.values())
    assert 0 <= quick.compile_base_s < 30 and 0 <= quick.compile_per_line_s < 1
    assert quick.compile_base_s + 100 * quick.compile_per_line_s > 0


def test_openmps_extra_compile_is_measured():
    """(A full calibration measures it; a quick one keeps the default.)"""
    from asp_core.platform import query_platform
    from specializers.loopnest.cost import overhead_probes

    if not query_platform().openmp:
        pytest.skip("no OpenMP with this compiler: nothing to measure")
    measured = overhead_probes.measure_compile(True, openmp=True)
    assert 0 <= measured["compile_openmp_s"] < 30


def test_the_first_build_of_a_process_is_measured_in_a_new_one():
    from specializers.loopnest.cost import first_use

    seconds = first_use.measure("c", runs=1)
    assert seconds is not None and 0 <= seconds < 30


def test_the_timed_first_build_finds_the_compiler_probe_made_by_an_earlier_process():
    """As a process after a machine's first has it: the compiler probe in the cache, and
    nothing of it loaded (made in the timed process, it imported cffi's parser before the
    first build, which then measured 20 ms of its 55)."""
    from specializers.loopnest.cost import first_use

    script = ("import os, sys\n"
              "from pathlib import Path\n"
              "cache = Path(os.environ['ASP_CACHE_DIR'])\n"
              "print(float(any(cache.iterdir()) and 'cffi' not in sys.modules))\n")
    assert first_use.best_in_new_processes(script, runs=1, private_cache=True,
                                           prepare=first_use.PROBE_SCRIPT) == 1.0


def test_compile_time_line_fit():
    from specializers.loopnest.cost.overhead_probes import fit_line

    assert fit_line({40: 0.1, 120: 0.18}) == pytest.approx(
        {"compile_base_s": 0.06, "compile_per_line_s": 0.001})
    assert fit_line({40: 0.2, 120: 0.1}) == pytest.approx(          # slower small: flat
        {"compile_base_s": 0.15, "compile_per_line_s": 0.0})
    assert fit_line({40: 0.02, 120: 0.5}) == pytest.approx(         # through the origin
        {"compile_base_s": 0.0, "compile_per_line_s": (40 * 0.02 + 120 * 0.5) / (40**2 + 120**2)})


def test_quick_measurement_round_trips_through_the_store(isolated, quick):
    record = calibrate.store(quick)
    found = calibrate.stored()
    assert found is not None and found.source == record.describe()
    assert dataclasses.replace(found, source=quick.source) == quick


# -- the differences the probes take -------------------------------------------------------------

def test_interpreter_parameters_are_differences_of_probes():
    t = {name: 10.0 for name in python_probes.STATEMENTS}
    t.update(empty=10.0, const=14.0, copy=15.0, index_var=15.0, load=50.0, load2=80.0,
             index2=92.0, store=40.0, store2=70.0, add=46.0, mul=48.0, exp=60.0, log=80.0,
             add_py=24.0, mul_py=26.0, cmp_py=25.0, **{"not": 18.0})
    got = python_probes.derive(t)
    assert got["py_iteration_ns"] == 10.0 and got["py_statement_ns"] == 3.0
    ops = got["py_op_ns"]
    assert ops["scalar"] == 1.0 and ops["load"] == 35.0 and ops["store"] == 25.0
    assert ops["index"] == 12.0 and ops["arith"] == 31.0 and ops["logic"] == 3.0
    assert got["py_subscript_ns"] == 29.0
    assert ops["math"] == 55.0 and ops["arith_py"] == 9.0 and ops["cmp_py"] == 9.0
    # below zero, or near it: noise; an operation the interpreter runs keeps a quarter of its
    # documented default (Python arithmetic on NumPy scalars once measured 0 ns, a test run
    # beside the quick calibration)
    floor = python_probes.NOISE_FLOOR
    assert ops["div"] == floor * DEFAULTS.py_op_ns["div"]
    assert ops["div_py"] == floor * DEFAULTS.py_op_ns["div_py"]
    assert all(ops[kind] >= floor * DEFAULTS.py_op_ns[kind] for kind in ops)


def test_compiled_parameters_are_differences_of_kernels():
    t = {name: 1.0 for name, _ in native_probes.KERNELS + native_probes.VECTOR_KERNELS}
    t.update(iteration=0.25, store=0.5, copy=0.75, add=1.0, poly=2.35, div=2.0, cmp=1.2,
             logic=1.6, exp=5.75, log=7.75, poly_vector=0.4, chain=1.5)
    got = native_probes.derive_ops(t)
    ops = got["c_op_ns"]
    assert got["c_iteration_ns"] == 0.25 and ops["store"] == 0.25 and ops["load"] == 0.25
    assert ops["arith"] == pytest.approx(0.2) and ops["div"] == pytest.approx(1.2)
    assert ops["cmp"] == pytest.approx(0.4) and ops["math"] == pytest.approx(6.0)
    assert ops["scalar"] == 0.0 and got["vector_speedup"] == pytest.approx(2.35 / 0.4)
    assert got["c_chain_ns"] == pytest.approx(1.25)   # the chained add beyond the iteration


def test_cache_size_from_sysfs(tmp_path):
    def index(n, level, kind, size):
        folder = tmp_path / f"index{n}"
        folder.mkdir()
        (folder / "level").write_text(f"{level}\n")
        (folder / "type").write_text(f"{kind}\n")
        (folder / "size").write_text(f"{size}\n")

    assert native_probes.cache_bytes(tmp_path) == native_probes.DEFAULT_CACHE_BYTES
    index(0, 1, "Data", "32K")
    index(1, 2, "Unified", "1024K")
    assert native_probes.cache_bytes(tmp_path) == 2**20
    index(2, 3, "Unified", "32M")
    assert native_probes.cache_bytes(tmp_path) == 32 * 2**20
    (tmp_path / "index2" / "size").write_text("garbage")
    assert native_probes.cache_bytes(tmp_path) == 2**20


def test_thread_counts():
    assert native_probes.thread_counts(1, True) == [1]
    assert native_probes.thread_counts(6, True) == [1, 2, 4, 6]
    assert native_probes.thread_counts(12, False) == [1, 2, 3, 4, 5, 6, 7, 8, 12]


# -- stored records --------------------------------------------------------------------------------

def test_parse_refuses_malformed_parameters():
    good = DEFAULTS.to_json()
    assert calibrate.parse(good) == DEFAULTS
    for change in ({"bandwidth": [1, 2]}, {"py_op_ns": {"load": 1.0}}, {"py_call_ns": "slow"},
                   {"c_call_ns": -1.0}, {"unknown": 1}, {"omp_fork_ns": {"two": 1.0}}):
        with pytest.raises(ValueError):
            calibrate.parse({**good, **change})


def test_store_is_read_by_machine(isolated):
    assert machine.machine() is DEFAULTS
    record = calibrate.store(FAKE)
    found = machine.machine()
    assert found.py_iteration_ns == 42.0 and found.source == record.describe()
    assert calibrate.status().startswith("calibrated on ")


@pytest.mark.parametrize("damage", [
    lambda path: path.write_text('{"format": 1, "name": "loopnest-acm", "params": {'),
    lambda path: path.write_text(path.read_text()[:200]),
    lambda path: path.write_text(path.read_text().replace('"py_op_ns": {', '"py_op_ns": {"x": 1,')),
    lambda path: path.write_text(json.dumps({**json.loads(path.read_text()),
                                             "machine": {"key": "0" * 64, "cpu": "other"}})),
], ids=["corrupt", "truncated", "unknown-kind", "foreign"])
def test_damaged_record_is_ignored_and_redone(isolated, fake_measure, damage):
    release, calls = fake_measure
    path = calibrate.store(dataclasses.replace(FAKE, py_iteration_ns=7.0)).path
    damage(path)
    machine.clear_cache()
    assert calibrate.stored() is None and machine.machine() is DEFAULTS
    release.set()
    calibrate.ensure(background=True)
    calibrate.BACKGROUND.join(30)
    assert calls == [True]
    assert machine.machine().py_iteration_ns == 42.0     # measured again, stored, read


# -- the first use ---------------------------------------------------------------------------------

def test_nothing_happens_with_calibrate_off(isolated, fake_measure, monkeypatch):
    monkeypatch.setenv("ASP_CALIBRATE", "0")
    release, calls = fake_measure
    release.set()
    assert calibrate.ensure(background=True) == "defaults (ASP_CALIBRATE=0)"
    assert calibrate.BACKGROUND.thread is None and calls == []
    assert calibrate.stored() is None and machine.machine() is DEFAULTS


def test_background_calibration_stores_and_machine_reads_it(isolated, fake_measure):
    release, calls = fake_measure
    assert machine.machine() is DEFAULTS
    assert calibrate.ensure(background=True) == "defaults (calibrating in the background)"
    assert calibrate.ensure(background=True) == "defaults (calibrating in the background)"
    release.set()
    calibrate.BACKGROUND.join(30)
    assert calls == [True]                                # one quick calibration, once
    assert machine.machine().py_iteration_ns == 42.0      # its cache was cleared
    assert calibrate.status().startswith("calibrated on ")
    assert calibrate.ensure(background=True).startswith("calibrated on ")
    assert calls == [True]


def test_an_asked_for_calibration_starts_no_background_one(isolated, monkeypatch):
    """``calibrate --quick`` ran kernels in its probes, whose cost model found no record and
    started a quick calibration beside it: both measured on the same cores at once, and the
    background one, ending last, replaced the asked-for record (a lent GPU machine's, this
    VM's). Now none starts while an asked-for one measures, host or device."""
    seen, started = [], []

    def measure(quick=False, progress=None):
        seen.append((calibrate.ensure(background=True),
                     device_calibrate.params("opencl"), calibrate.BACKGROUND.thread))
        return FAKE

    monkeypatch.setattr(calibrate, "measure", measure)
    monkeypatch.setattr(device_calibrate, "importable", lambda backend: backend == "opencl")
    monkeypatch.setattr(device_calibrate, "_STARTED", set())
    device_calibrate.clear_cache()
    try:
        params, record = calibrate.calibrate(quick=True)
        assert seen == [("defaults (calibrating now)", None, None)]
        assert device_calibrate._STARTED == set()             # nor a device's
        assert calibrate.stored().py_iteration_ns == 42.0 and not calibrate.EXPLICIT.running
        # what was read meanwhile is read again: a device not calibrated starts its own now
        monkeypatch.setattr(device_calibrate, "_start_background", started.append)
        assert device_calibrate.params("opencl") is None and started == ["opencl"]
    finally:
        device_calibrate.clear_cache()


def test_a_background_calibration_keeps_a_record_stored_meanwhile(isolated, fake_measure):
    """A first use's quick calibration that ends after ``calibrate`` (another process, or a
    full one) stored a record leaves that record in place."""
    release, calls = fake_measure
    assert calibrate.ensure(background=True) == "defaults (calibrating in the background)"
    asked = calibrate.store(dataclasses.replace(FAKE, py_iteration_ns=7.0,
                                                source="full calibration"))
    release.set()
    calibrate.BACKGROUND.join(30)
    assert calls == [True]
    assert calibrate.stored_record().created == asked.created
    assert calibrate.stored().py_iteration_ns == 7.0 and machine.machine().py_iteration_ns == 7.0


def test_calibration_in_the_foreground(isolated, fake_measure):
    release, calls = fake_measure
    release.set()
    assert calibrate.ensure(background=False).startswith("calibrated on ")
    assert calls == [True] and calibrate.stored().py_iteration_ns == 42.0


def test_failed_background_calibration_keeps_defaults(isolated, monkeypatch):
    def measure(quick=False, progress=None):
        raise CacheError("the cache folder is gone")

    monkeypatch.setattr(calibrate, "measure", measure)
    calibrate.ensure(background=True)
    calibrate.BACKGROUND.join(30)
    assert "failed: CacheError: the cache folder is gone" in calibrate.status()
    assert machine.machine() is DEFAULTS
    calibrate.BACKGROUND.clear()
    assert "failed: CacheError" in calibrate.ensure(background=False)   # nor in the foreground


def test_unusable_cache_folder_is_defaults_not_a_crash(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("ASP_CACHE_DIR", str(blocker))
    machine.clear_cache()
    try:
        assert calibrate.stored() is None and machine.machine() is DEFAULTS
    finally:
        machine.clear_cache()


# -- the command line ------------------------------------------------------------------------------

def test_summary_names_every_parameter_with_its_unit():
    text = summary(DEFAULTS)
    for kind in (*KINDS, *PY_KINDS):
        assert f"  {kind} " in text
    assert "GB/s" in text and "MiB" in text and " ns" in text and " us" in text
    assert "threads" in text and "ms" in text and DEFAULTS.source in text


def test_command_measures_prints_and_stores(isolated, fake_measure, capsys):
    release, calls = fake_measure
    release.set()
    assert cli.main(["calibrate", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "42.0 ns" in out and "stored: loopnest-acm calibrated on" in out
    assert calls == [True] and calibrate.stored().py_iteration_ns == 42.0
    assert cli.main(["calibrate", "--show"]) == 0
    assert "42.0 ns" in capsys.readouterr().out


def test_command_shows_defaults_without_a_calibration(isolated, capsys):
    assert cli.main(["calibrate", "--show"]) == 0
    out = capsys.readouterr().out
    assert "No calibration stored" in out and DEFAULTS.source in out


def test_record_lives_in_the_calibration_folder(isolated):
    record = calibrate.store(FAKE)
    assert record.path.parent == calibration.folder(isolated)
    assert isinstance(calibrate.stored(), MachineParams)


def test_a_full_calibration_takes_the_median_of_its_rounds_per_value():
    """One round disturbed (a load slowing one kernel and not another moves a difference by a
    factor) does not move the values of three."""
    quiet = {"c_op_ns": {"div": 0.85, "math": 4.1}, "c_iteration_ns": 0.32, "c_chain_ns": 0.6}
    other = {"c_op_ns": {"div": 0.84, "math": 4.2}, "c_iteration_ns": 0.33, "c_chain_ns": 0.62}
    disturbed = {"c_op_ns": {"div": 0.16, "math": 7.0}, "c_iteration_ns": 0.9, "c_chain_ns": 0.0}
    got = native_probes.median_of([quiet, disturbed, other])
    assert got == {"c_op_ns": {"div": 0.84, "math": 4.2}, "c_iteration_ns": 0.33,
                   "c_chain_ns": 0.6}
