"""Checking tools for the analysis: random affine nests and a brute-force dependence oracle
(used by the tests and the dependence benchmark), and a loader for generated kernel source."""

from __future__ import annotations

import hashlib
import importlib.util
import tempfile
from pathlib import Path

_DIR: Path | None = None


def load_source(source: str, name: str = "Kernel"):
    """Write ``source`` to a file (so the specializer can read it back), import it, return
    the object called ``name``."""
    global _DIR
    if _DIR is None:
        _DIR = Path(tempfile.mkdtemp(prefix="asp-generated-"))
    module_name = "asp_gen_" + hashlib.sha256(source.encode()).hexdigest()[:20]
    path = _DIR / f"{module_name}.py"
    if not path.exists():
        path.write_text(source)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)
