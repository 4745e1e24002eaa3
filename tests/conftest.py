"""Test-wide settings: a private cache folder per test session, no stray environment settings."""

import os

import pytest

from asp_core import cache, specializer


@pytest.fixture(scope="session", autouse=True)
def _session_cache(tmp_path_factory):
    """Compiled variants go to a fresh cache (or ASP_TEST_CACHE_DIR, to reuse builds locally)."""
    root = os.environ.get("ASP_TEST_CACHE_DIR") or str(tmp_path_factory.mktemp("asp-cache"))
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
#: kernels that ran as Python: shown without ``-s``, in the terminal summary.
SUMMARY: list[str] = []


def report(line: str) -> None:
    """Show ``line`` in the run's terminal summary."""
    SUMMARY.append(line)


def pytest_terminal_summary(terminalreporter):
    if SUMMARY:
        terminalreporter.section("reported by the tests")
        for line in SUMMARY:
            terminalreporter.write_line(line)
