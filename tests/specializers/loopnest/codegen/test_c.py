"""codegen.c: the serial C module of a plan: readable, deterministic, typed by the call
signature, with a header naming the variant and its cache key; restrict only where no
overlap was found; strides only for non-contiguous arrays; an error stops the nest."""

import re

import numpy as np
import pytest

from ..generators import load_kernel
from ..helpers import compiled_modules

SOURCE = """\
import math
import numpy as np
from specializers.loopnest import LoopKernel


class Kernel(LoopKernel):
    def kernel(self, A, B, C, n, m, alpha):
        total = 0.0
        for i in range(n):
            for j in range(m):
                C[i, j] = alpha * A[i, j] + math.sqrt(abs(B[j]))
                total += C[i, j]
        return total
"""


def module_for(*args, source=SOURCE, backend="c"):
    Kernel, _ = load_kernel(source)
    kernel = Kernel(backend=backend, strict=True)
    kernel.kernel(*args)
    (module,) = compiled_modules(kernel)
    return module


def arrays(dtype=np.float64, n=4, m=5):
    return (np.ones((n, m), dtype), np.ones(m, dtype=dtype), np.zeros((n, m), dtype), n, m, 2.0)


def test_header_names_the_variant_and_its_key():
    module = module_for(*arrays())
    lines = module.source.splitlines()
    assert lines[0].startswith("/* c variant of Kernel.kernel: loop nest 0 (line 9)")
    assert lines[1] == " * variant: c"
    assert lines[2] == f" * key: {module.key}" and re.fullmatch(r"[0-9a-f]{64}", module.key)
    assert module.entry == f"asp_nest_{module.key[:16]}"


def test_generated_code_is_deterministic_and_keyed_by_what_it_depends_on():
    first = module_for(*arrays())
    again = module_for(*arrays())
    assert first.source == again.source and first.key == again.key
    as_float32 = module_for(*arrays(np.float32))
    assert as_float32.key != first.key and "float * restrict A" in as_float32.source
    strided = module_for(np.ones((4, 10))[:, ::2], np.arange(5.0), np.zeros((4, 5)), 4, 5, 2.0)
    assert strided.key != first.key


def test_readable_loops_and_statements():
    source = module_for(*arrays()).source
    body = source[source.index("asp_nest_"):]
    assert "for (int64_t i = asp_lo_i; i < asp_hi_i; i += asp_step_i) {" in body
    assert "for (int64_t j = asp_lo_j; j < asp_hi_j; j += asp_step_j) {" in body
    assert "double asp_v = ((alpha * ASP_AT_A(i, j)) + asp_math1(asp_err, sqrt, " \
        "((double)fabs(ASP_AT_B(j))), 0));" in body  # math.sqrt: ValueError below zero
    assert "ASP_AT_C(i, j) = asp_v;" in body
    assert "total = (total + ASP_AT_C(i, j));" in body
    assert "#define ASP_AT_A(i0, i1) (A[(i0) * A_n1 + (i1)])" in source
    assert "#pragma omp" not in source
    # loops at the right depth, every brace closed
    assert source.count("{") == source.count("}")


@pytest.mark.parametrize("dtype, ctype", [(np.float32, "float"), (np.float64, "double"),
                                          (np.int32, "int32_t"), (np.int64, "int64_t"),
                                          (np.int8, "int8_t"), (np.uint16, "uint16_t"),
                                          (np.bool_, "bool")])
def test_typed_by_the_signature(dtype, ctype):
    src = SOURCE.replace("alpha * A[i, j] + math.sqrt(abs(B[j]))", "A[i, j]")
    src = src.replace("total += C[i, j]", "total = total")
    module = module_for(*arrays(dtype), source=src)
    assert f"{ctype} * restrict A" in module.source
    assert f"{ctype} * restrict C" in module.source


def test_restrict_only_where_arrays_do_not_overlap():
    a = np.ones((4, 5))
    separate = module_for(*arrays()).source
    assert separate.count("* restrict") == 3
    same = module_for(a, np.arange(5.0), a, 4, 5, 2.0).source  # A and C are one array
    assert "double * restrict B" in same
    assert "double * A" in same and "double * C" in same


def test_strides_passed_for_non_contiguous_arrays_only():
    module = module_for(np.ones((4, 10))[:, ::2], np.arange(5.0), np.zeros((4, 5)), 4, 5, 2.0)
    assert "int64_t A_s0" in module.source and "int64_t A_s1" in module.source
    assert "int64_t C_s0" not in module.source and "int64_t B_s0" not in module.source
    assert "(*(double *)((char *)A + (i0) * A_s0 + (i1) * A_s1))" in module.source


def test_checked_subscripts_and_stopping_at_the_first_error():
    src = SOURCE.replace("C[i, j] = alpha * A[i, j] + math.sqrt(abs(B[j]))",
                         "C[i, j] = alpha * A[i, j] + math.sqrt(B[j - 1])")
    module = module_for(*arrays(), source=src)
    body = module.source[module.source.index("asp_nest_"):]
    assert "asp_index_ok(asp_err, 0, (j - 1), &asp_k0, B_n0)" in body
    assert "goto asp_stop;" in body and "\nasp_stop:\n" in module.source
    assert module.error_sites[0].subscript == "B[j - 1]"


def test_cdef_matches_the_entry():
    module = module_for(*arrays())
    assert f" {module.entry}(void * A, int64_t A_n0, int64_t A_n1," in module.cdef
    assert "typedef struct { asp_error err; double v_total; int32_t w_total; }" in module.cdef


TAPS = """\
from specializers.loopnest import LoopKernel


class Kernel(LoopKernel):
    def kernel(self, img, w, out):
        for i in range(out.shape[0]):
            for j in range(out.shape[1]):
                for p in range(3):
                    for q in range(3):
                        out[i, j] += img[i + p, j + q] * w[p, q]
"""


@pytest.mark.parametrize("backend", ["c", "openmp"])
def test_a_few_constant_taps_are_unrolled_inside_the_vectorized_loop(backend):
    """The taps of a 3 x 3 convolution are asked to be unrolled completely (9 iterations,
    ``schedule.allen_kennedy.UNROLLED_TRIPS``), inside the image loop j, and the result is
    the original code's, bit for bit (each element's taps in Python's order)."""
    rng = np.random.default_rng(3)
    img, w = rng.random((40, 37)), rng.random((3, 3))
    module = module_for(img, w, np.zeros((38, 35)), source=TAPS, backend=backend)
    assert module.source.count("#pragma GCC unroll 3") == 2
    assert [note for note in module.jams if "unrolled completely" in note] == [
        "p, q unrolled completely (9 iterations): the loop around them is vectorized over "
        "their body"]   # (what explain() shows)
    Kernel, _ = load_kernel(TAPS)
    ours, expected = np.zeros((38, 35)), np.zeros((38, 35))
    Kernel(backend=backend, strict=True).kernel(img, w, ours)
    Kernel().original_kernel(img, w, expected)
    assert np.array_equal(ours, expected)
