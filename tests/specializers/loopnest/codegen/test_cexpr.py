"""codegen.cexpr: C names for Python names that cannot clash with what the generated code
and its headers declare, and exact float literals. (What each operation means is tested
against plain Python in ``test_semantics``.)"""

import math

import numpy as np
import pytest

from specializers.loopnest.codegen.cexpr import c_float, c_identifier

from ..generators import load_kernel
from ..helpers import identical


@pytest.mark.parametrize("name, ident", [
    ("x", "x"), ("N", "N"), ("self.n", "self__n"), ("__asp_p3", "asp_pred3"),
    ("int", "int_"), ("exp", "exp_"), ("sqrtf", "sqrtf_"), ("log", "log_"), ("isnan", "isnan_"),
    ("size_t", "size_t_"), ("INT64_MAX", "INT64_MAX_"), ("NAN", "NAN_"), ("A_n0", "A_n0_"),
    ("B_s12", "B_s12_"), ("asp_err", "asp_err_"), ("omp_lock", "omp_lock_"), ("_x", "_x_"),
    ("restrict", "restrict_"), ("memset", "memset_"),
])
def test_identifiers(name, ident):
    assert c_identifier(name) == ident


def test_float_literals_are_exact():
    for value in (0.1, 1e308, 5e-324, -2.5, 1 / 3):
        assert float(c_float(value)) == value
    assert c_float(math.nan) == "NAN" and c_float(-math.inf) == "(-INFINITY)"
    assert c_float(0.5, single=True) == "0.5f"


def test_a_kernel_with_names_c_already_uses_compiles():
    source = ("import math\nimport numpy as np\nfrom specializers.loopnest import LoopKernel\n\n\n"
              "class Kernel(LoopKernel):\n"
              "    def kernel(self, A, A_n0, exp, NAN, int64_t):\n"
              "        for log in range(A.shape[0]):\n"
              "            sqrt = math.sqrt(A[log]) + exp\n"
              "            A[log] = math.exp(sqrt) + A_n0 + NAN * int64_t\n")
    Kernel, _ = load_kernel(source)
    for backend in ("c", "openmp"):
        got, want = np.arange(5.0), np.arange(5.0)
        Kernel(backend=backend, strict=True).kernel(got, 2.0, 0.5, 3, 4)
        Kernel().original_kernel(want, 2.0, 0.5, 3, 4)
        assert identical(got, want)
