"""Test-wide settings: a private cache folder per test session, no stray environment settings."""

import os

import pytest

from asp_core import cache, specializer


@pytest.fixture(scope="session", autouse=True)
def _session_cache(tmp_path_factory):
    """Compiled variants go to a fresh cache (or ASP_TEST_CACHE_DIR, to reuse builds locally)."""
    root = os.environ.get("ASP_TEST_CACHE_DIR") or _shared_cache(tmp_path_factory)
    saved = {k: os.environ.get(k) for k in ("ASP_CACHE_DIR", "ASP_BACKEND", "ASP_DISABLE_JIT",
                                            "ASP_DUMP_DIR", "ASP_CALIBRATE")}
    os.environ["ASP_CACHE_DIR"] = root
    os.environ["ASP_CALIBRATE"] = "0"  # no test starts a background calibration by accident
    for k in ("ASP_BACKEND", "ASP_DISABLE_JIT", "ASP_DUMP_DIR"):
        os.environ.pop(k, None)
    yield root
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _shared_cache(tmp_path_factory) -> str:
    """A fresh cache folder for the run: one for all the workers of a parallel run
    (pytest-xdist: ``run.py test``), which build each variant once between them (the disk
    cache is safe across processes)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = tmp_path_factory.getbasetemp().parent / "asp-cache"
        root.mkdir(exist_ok=True)
        return str(root)
    return str(tmp_path_factory.mktemp("asp-cache"))


def pytest_collection_modifyitems(session, config, items):
    """The files marked ``slow`` (their tests take minutes) first, the rest in their order: a
    parallel run's workers take whole files in this order (``run.py``: ``--dist loadfile
    --no-loadscope-reorder``), so the longest start first and the short ones fill in around
    them. (pytest-xdist's own order, most tests first, started the files of one or two
    generated-kernel tests of three minutes each last: a 20-minute run where the workers'
    sum was 35 minutes of tests.)"""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)   # (a stable sort)


@pytest.fixture(autouse=True)
def _fresh_warnings():
    """Each test sees every fallback warning once, whatever ran before it."""
    specializer.clear_warnings()
    yield


@pytest.fixture
def private_cache(tmp_path):
    """A DiskCache in a folder of its own."""
    return cache.DiskCache(tmp_path / "cache")


#: Lines tests ask to show at the end of the run (``report``), such as the generator's rate of
#: kernels that ran as Python: shown without ``-s``, in the terminal summary. A test's lines
#: travel in its report (``user_properties``), so that a parallel run's workers send them to the
#: process that prints the summary.
SUMMARY: list[str] = []
_PENDING: list[str] = []
_PROPERTY = "asp-summary"


def report(line: str) -> None:
    """Show ``line`` in the run's terminal summary."""
    _PENDING.append(line)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if _PENDING:
        outcome.get_result().user_properties.extend((_PROPERTY, line) for line in _PENDING)
        _PENDING.clear()


def pytest_runtest_logreport(report):
    SUMMARY.extend(value for name, value in report.user_properties if name == _PROPERTY)


def pytest_terminal_summary(terminalreporter):
    if SUMMARY:
        terminalreporter.section("reported by the tests")
        for line in SUMMARY:
            terminalreporter.write_line(line)
