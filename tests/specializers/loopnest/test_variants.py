"""variants: compiled variants are cached on disk (keyed by the generated source, hence the
DAST, schedule, signature, subscript modes, and by the flags and toolchain) and a second
process reuses them without compiling; error records become the Python exceptions."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from specializers.loopnest.codegen.c import CModule, ErrorSite
from specializers.loopnest.variants import BeyondInt64, python_error

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import asp_core.backends.c as c_backend
    compiled = []
    real = c_backend.run_compiler
    def counting(command, source_path, what):
        compiled.append(what)
        return real(command, source_path, what)
    c_backend.run_compiler = counting
    from examples.gemver import Gemver, make_inputs
    from examples.jacobi import Jacobi, make_inputs as jacobi_inputs
    for backend in ("c", "openmp"):
        Gemver(backend=backend, strict=True).kernel(*make_inputs(40))
        Jacobi(backend=backend, strict=True).kernel(*jacobi_inputs(20))
    print(len(compiled))
""")


def run_script(cache: Path, **env) -> int:
    environ = dict(os.environ, ASP_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT), **env)
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=environ, capture_output=True,
                          text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


def test_a_second_process_reuses_the_variants_without_compiling(tmp_path):
    cache = tmp_path / "cache"
    first = run_script(cache)
    assert first >= 4  # every nest of two kernels, in C and in OpenMP
    assert run_script(cache) == 0
    # other flags are another key: built again
    assert run_script(cache, ASP_CFLAGS="-O2") == first


def test_error_records_become_python_exceptions():
    class Err:
        def __init__(self, code, where=0, value=0, extent=0):
            self.code, self.where, self.value, self.extent = code, where, value, extent

    module = CModule("", "", "f", "k", (), (), (ErrorSite("A", "A[IDX[i]]", 0, 7),), False)
    error = python_error(Err(1, 0, 12, 10), module)
    assert isinstance(error, IndexError)
    assert str(error) == ("index 12 is out of bounds for axis 0 with size 10: A[IDX[i]] "
                          "(line 7)")
    expected = {2: ZeroDivisionError, 3: ValueError, 4: OverflowError, 5: BeyondInt64,
                6: TypeError, 7: ValueError, 8: OverflowError, 9: OverflowError}
    for code, kind in expected.items():
        assert type(python_error(Err(code), module)) is kind, code
    assert "64-bit" in str(python_error(Err(5), module))
    assert "complex" in str(python_error(Err(6), module))
    assert "out of bounds for int8" in str(python_error(Err(9, 0, 300), module))
