"""version: one version string, used by packaging and mixed into every cache key."""

import re
from pathlib import Path

from asp_core import __version__
from asp_core import cache, version


def test_setup_reads_the_same_version():
    setup = (Path(__file__).resolve().parents[2] / "setup.py").read_text()
    assert "asp_core\", \"version.py\"" in setup
    assert re.fullmatch(r"\d+\.\d+\.\d+", version.VERSION) and __version__ == version.VERSION


def test_version_changes_every_key(monkeypatch):
    before = cache.stable_key("same", 1)
    monkeypatch.setattr(cache, "VERSION", "999.0.0")
    assert cache.stable_key("same", 1) != before
