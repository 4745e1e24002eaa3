"""Safety of compiled variants (issue 5, point 3), for serial C and OpenMP alike: bad
subscripts raise IndexError with nothing written out of bounds, overlapping arrays give
plain Python's result, strided, empty and zero-trip cases work, and arguments the code
cannot take lead to a stated fallback, never a crash."""

import warnings

import numpy as np
import pytest

from asp_core.errors import SpecializationError
from asp_core.specializer import FallbackWarning

from .generators import load_kernel
from .helpers import identical

BACKENDS = ["c", "openmp"]
HEADER = "import numpy as np\nfrom specializers.loopnest import LoopKernel\n\n\n"


def kernel_class(body: str, params: str):
    lines = "\n".join("        " + line for line in body.strip("\n").splitlines())
    return load_kernel(f"{HEADER}class Kernel(LoopKernel):\n"
                       f"    def kernel(self, {params}):\n{lines}\n")[0]


def same_as_python(Kernel, backend: str, make_args, compare_args=None):
    """Run specialized (strict) and plain on fresh arguments from ``make_args``; assert the
    return values and the arrays afterwards are identical, and return the kernel."""
    got_args, want_args = make_args(), make_args()
    kernel = Kernel(backend=backend, strict=True)
    got = kernel.kernel(*got_args)
    want = Kernel().original_kernel(*want_args)
    pick = compare_args or (lambda args: args)
    assert identical(got, want), (got, want)
    assert identical(tuple(pick(got_args)), tuple(pick(want_args))), (got_args, want_args)
    assert all(n.backend == backend and n.fallback is None for n in kernel.last_call.nests)
    return kernel


# -- subscripts out of range -----------------------------------------------------------------

SHIFT = kernel_class("""
for i in range(n):
    A[i + 2] = B[i] * 2.0
""", "A, B, n")


@pytest.mark.parametrize("backend", BACKENDS)
def test_affine_subscript_out_of_range_raises_where_python_does(backend):
    a, b = np.zeros(8), np.arange(8.0)
    with pytest.raises(IndexError) as info:
        SHIFT(backend=backend, strict=True).kernel(a, b, 8)
    assert "index 8 is out of bounds for axis 0 with size 8" in str(info.value)
    plain = np.zeros(8)
    with pytest.raises(IndexError):
        SHIFT().original_kernel(plain, b, 8)
    assert identical(a, plain) and a[3:].all()  # Python wrote A[2:8] before raising


@pytest.mark.parametrize("backend", BACKENDS)
def test_affine_subscript_too_negative_raises(backend):
    Kernel = kernel_class("""
for i in range(n):
    A[i] = B[i - 9]
""", "A, B, n")
    a = np.zeros(8)
    with pytest.raises(IndexError, match="index -9 is out of bounds"):
        Kernel(backend=backend, strict=True).kernel(a, np.arange(8.0), 8)
    assert not a.any()


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_range_negative_subscripts_run_compiled(backend):
    Kernel = kernel_class("""
for i in range(n):
    A[i - n] = B[-1 - i] + B[i - 3]
""", "A, B, n")
    same_as_python(Kernel, backend, lambda: (np.zeros(8), np.arange(8.0), 8))


GATHER = kernel_class("""
for i in range(n):
    A[IDX[i]] = B[i] + 1.0
""", "A, B, IDX, n")


def guarded(size: int):
    """A view of ``size`` zeros inside a buffer whose other elements are sentinels."""
    buffer = np.full(size + 64, -777.0)
    return buffer, buffer[32:32 + size]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bad", [8, 40, -9, 10**12, -(10**12)])
def test_data_dependent_subscript_out_of_range_raises_after_return_without_stray_writes(
        backend, bad):
    buffer, a = guarded(8)
    idx = np.array([0, 3, bad, 1], dtype=np.int64)
    with pytest.raises(IndexError, match=r"A\[IDX\[i\]\]"):
        GATHER(backend=backend, strict=True).kernel(a, np.arange(4.0), idx, 4)
    assert (buffer[:32] == -777.0).all() and (buffer[40:] == -777.0).all()
    # what was written before the bad index is what Python writes before it raises
    plain_buffer, plain = guarded(8)
    with pytest.raises(IndexError):
        GATHER().original_kernel(plain, np.arange(4.0), idx, 4)
    assert identical(a, plain)


@pytest.mark.parametrize("backend", BACKENDS)
def test_data_dependent_negative_subscript_wraps(backend):
    same_as_python(GATHER, backend, lambda: (np.zeros(8), np.arange(4.0),
                                              np.array([-1, 3, -8, 0]), 4))


# -- overlapping arrays ------------------------------------------------------------------------

RECURRENCE = kernel_class("""
for i in range(1, n):
    A[i] = B[i - 1] + 1.0
""", "A, B, n")


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_same_array_passed_twice_is_analysed_as_one(backend):
    def args():
        x = np.zeros(100_000)
        return x, x, 100_000
    # as one array, A[i] = A[i-1] + 1 is a recurrence: the loop must stay sequential
    kernel = same_as_python(RECURRENCE, backend, args, lambda a: a[:1])
    got = args()
    kernel.kernel(*got)
    assert got[0][-1] == 99_999.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_overlapping_views_give_pythons_result(backend):
    def args():
        x = np.arange(100_003.0)
        return x[3:], x[:-3], 100_000
    same_as_python(RECURRENCE, backend, args, lambda a: (a[0].base,))


@pytest.mark.parametrize("backend", BACKENDS)
def test_interleaved_strided_views(backend):
    Kernel = kernel_class("""
for i in range(n):
    A[i] = B[i] * 2.0 + A[i]
""", "A, B, n")

    def args():
        x = np.arange(40_000.0)
        return x[::2], x[1::2], 20_000  # disjoint elements of one buffer
    same_as_python(Kernel, backend, args, lambda a: (a[0].base,))

    def crossing():
        x = np.arange(40_000.0)
        return x[::2], x[::-2], 20_000  # the same elements in opposite orders
    same_as_python(Kernel, backend, crossing, lambda a: (a[0].base,))


@pytest.mark.parametrize("backend", BACKENDS)
def test_2d_views_of_one_matrix(backend):
    Kernel = kernel_class("""
for i in range(1, n):
    for j in range(m):
        A[i, j] = B[i - 1, j] * 0.5 + 1.0
""", "A, B, n, m")

    def args():
        x = np.arange(300.0 * 200).reshape(300, 200)
        return x, x.T[:200, :300].T, 300, 200
    same_as_python(Kernel, backend, args, lambda a: (a[0],))


def test_overlap_with_a_different_dtype_runs_as_python_with_the_reason():
    x = np.arange(8.0)
    with pytest.raises(SpecializationError, match="different dtypes"):
        RECURRENCE(backend="c", strict=True).kernel(x, x.view(np.int64), 8)
    got_buf = np.arange(8.0)
    want_buf = np.arange(8.0)
    with pytest.warns(FallbackWarning, match="different dtypes"):
        RECURRENCE(backend="c").kernel(got_buf, got_buf.view(np.int64), 8)
    RECURRENCE().original_kernel(want_buf, want_buf.view(np.int64), 8)
    assert identical(got_buf, want_buf)


# -- strides, empty arrays, zero-trip loops -------------------------------------------------

STENCIL = kernel_class("""
for i in range(1, n - 1):
    for j in range(1, m - 1):
        OUT[i, j] = (A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1]) * 0.25
""", "OUT, A, n, m")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", ["sliced", "transposed", "fortran", "reversed", "broadcast"])
def test_non_contiguous_arrays(backend, layout):
    def args():
        base = np.arange(120.0 * 90).reshape(120, 90) % 17
        a = {"sliced": base[::2, 1::3], "transposed": base.T, "fortran": np.asfortranarray(base),
             "reversed": base[::-1, ::-2],
             "broadcast": np.broadcast_to(base[0], base.shape)}[layout]
        out = np.zeros((a.shape[1], a.shape[0])).T
        return out, a, a.shape[0], a.shape[1]
    same_as_python(STENCIL, backend, args)


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_trip_loops_and_empty_arrays(backend):
    same_as_python(STENCIL, backend, lambda: (np.zeros((0, 0)), np.zeros((0, 0)), 0, 0))
    same_as_python(STENCIL, backend, lambda: (np.zeros((2, 5)), np.ones((2, 5)), 2, 5))
    same_as_python(STENCIL, backend, lambda: (np.zeros((5, 0)), np.ones((5, 0)), 5, 0))
    Kernel = kernel_class("""
total = 0.0
for i in range(n):
    for j in range(i, m):
        total += A[i, j]
return total
""", "A, n, m")
    same_as_python(Kernel, backend, lambda: (np.ones((4, 3)), 4, 3))
    same_as_python(Kernel, backend, lambda: (np.ones((0, 3)), 0, 3))
    same_as_python(Kernel, backend, lambda: (np.ones((4, 3)), -2, 3))


# -- arguments compiled code cannot take --------------------------------------------------------

@pytest.mark.parametrize("make, reason", [
    (lambda: ([0.0] * 8, np.arange(8.0)), "not a NumPy array"),
    (lambda: (np.zeros(8, dtype=object), np.arange(8.0)), "dtype object"),
    (lambda: (np.zeros(8, dtype=complex), np.arange(8.0)), "dtype complex128"),
    (lambda: (np.zeros(8), np.arange(8.0).astype("datetime64[s]")), "dtype datetime64"),
    (lambda: (np.zeros((8, 2)), np.arange(8.0)), "2 dimensions"),
])
def test_unsupported_arguments_fall_back_with_the_reason(make, reason):
    with pytest.raises(SpecializationError, match=reason):
        RECURRENCE(backend="c", strict=True).kernel(*make(), 8)
    got, want = make(), make()
    kernel = RECURRENCE(backend="c")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            got_out = ("ok", kernel.kernel(*got, 8))
        except Exception as exc:  # noqa: BLE001 - the fallback raises what Python raises
            got_out = ("error", type(exc))
    try:
        want_out = ("ok", RECURRENCE().original_kernel(*want, 8))
    except Exception as exc:  # noqa: BLE001
        want_out = ("error", type(exc))
    assert got_out == want_out
    assert any(issubclass(w.category, FallbackWarning) and reason in str(w.message)
               for w in caught), [str(w.message) for w in caught]
    if got_out[0] == "ok":
        assert identical(got, want)


def test_read_only_array_raises_what_python_raises():
    a = np.zeros(8)
    a.flags.writeable = False
    with pytest.raises(SpecializationError, match="read-only"):
        RECURRENCE(backend="c", strict=True).kernel(a, np.arange(8.0), 8)
    with pytest.warns(FallbackWarning, match="read-only"), \
            pytest.raises(ValueError, match="read-only"):
        RECURRENCE(backend="c").kernel(a, np.arange(8.0), 8)


def test_a_read_only_input_that_is_never_written_is_fine():
    b = np.arange(8.0)
    b.flags.writeable = False
    same_as_python(RECURRENCE, "c", lambda: (np.zeros(8), b, 8))


# -- an exception part-way: what is left written ---------------------------------------------

STOPS = kernel_class("""
for i in range(n):
    t = (i + 1) // (i - m)
    A[i] = t + 1.0
""", "A, n, m")


def test_serial_c_leaves_exactly_what_python_leaves_when_it_raises():
    got, want = np.full(50_000, -1.0), np.full(50_000, -1.0)
    with pytest.raises(ZeroDivisionError):
        STOPS(backend="c", strict=True).kernel(got, 50_000, 30_000)
    with pytest.raises(ZeroDivisionError):
        STOPS().original_kernel(want, 50_000, 30_000)
    assert identical(got, want)


def test_openmp_never_writes_the_failing_statements_value():
    got = np.full(50_000, -1.0)
    with pytest.raises(ZeroDivisionError):
        STOPS(backend="openmp", strict=True).kernel(got, 50_000, 30_000)
    assert got[30_000] == -1.0
    written = got != -1.0
    # every element written holds the value Python computes for it
    full = np.array([(i + 1) // (i - 30_000) + 1.0 if i != 30_000 else -1.0
                     for i in range(50_000)])
    assert identical(got[written], full[written])


def test_openmp_with_exact_errors_leaves_exactly_what_python_leaves_when_it_raises():
    got, want = np.full(50_000, -1.0), np.full(50_000, -1.0)
    with pytest.raises(ZeroDivisionError):
        STOPS(backend="openmp", strict=True, exact_errors=True).kernel(got, 50_000, 30_000)
    with pytest.raises(ZeroDivisionError):
        STOPS().original_kernel(want, 50_000, 30_000)
    assert identical(got, want)


# -- loop counters and values near the limits of int64 ----------------------------------------

M = 2**63 - 1
LOW = -2**63

STEPPED = kernel_class("""
for i in range(a, b, s):
    A[i - a] = A[i - a] + 1.0
""", "A, a, b, s")

BY_QUARTERS = kernel_class("""
for i in range(a, b, s):
    A[i // q + 2] = A[i // q + 2] + 1.0
""", "A, a, b, s, q")


def int64_edge_ranges():
    """range() arguments whose values come within a few steps of the ends of int64."""
    for k in range(0, 7):
        for s in (1, 2, 3):
            yield (M - k, M, s)
            yield (LOW + k, LOW, -s)
            yield (M, M - k, -s)
            yield (LOW, LOW + k, s)


@pytest.mark.parametrize("backend", BACKENDS + [None])
def test_loops_at_the_ends_of_int64_run_exactly_as_python(backend):
    for a, b, s in int64_edge_ranges():
        got, want = np.zeros(8), np.zeros(8)
        kernel = STEPPED(backend=backend, strict=True)
        kernel.kernel(got, a, b, s)
        STEPPED().original_kernel(want, a, b, s)
        assert identical(got, want), (a, b, s, got, want)
        assert kernel.last_call.nests[0].fallback is None


@pytest.mark.parametrize("backend", BACKENDS + [None])
@pytest.mark.parametrize("a, b, s", [(0, M, 2**62), (LOW, M, 2**62), (M, LOW, -2**62),
                                     (LOW, M, M), (M, LOW, LOW), (-1, M, M)])
def test_huge_steps_across_int64_run_exactly_as_python(backend, a, b, s):
    got, want = np.zeros(4), np.zeros(4)
    BY_QUARTERS(backend=backend, strict=True).kernel(got, a, b, s, 2**62)
    BY_QUARTERS().original_kernel(want, a, b, s, 2**62)
    assert identical(got, want), (got, want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_wide_loop_is_counted_and_a_narrow_one_steps_its_variable(backend):
    from .helpers import compiled_modules

    kernel = STEPPED(backend=backend, strict=True)
    kernel.kernel(np.zeros(8), M - 5, M, 2)
    (module,) = compiled_modules(kernel)
    assert "asp_n_i = asp_trip_count(" in module.source and "const int64_t i = " in module.source
    kernel = STEPPED(backend=backend, strict=True)
    kernel.kernel(np.zeros(8), 0, 8, 2)
    (module,) = compiled_modules(kernel)
    assert "asp_n_i" not in module.source


@pytest.mark.parametrize("args, what", [
    ((2**63, 2**63 + 4, 1), "'a' is 9223372036854775808"),
    ((0, 2**70, 2**68), "'b' is 1180591620717411303424"),
    ((-2**63 - 1, -2**63 + 3, 1), "'a' is -9223372036854775809"),
])
def test_python_ints_beyond_int64_run_as_python_with_the_reason(args, what):
    with pytest.raises(SpecializationError, match=what):
        STEPPED(backend="c", strict=True).kernel(np.zeros(8), *args)
    got, want = np.zeros(8), np.zeros(8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            STEPPED(backend="c").kernel(got, *args)
            outcome = None
        except IndexError as exc:
            outcome = type(exc)
    try:
        STEPPED().original_kernel(want, *args)
        expected = None
    except IndexError as exc:
        expected = type(exc)
    assert outcome is expected and identical(got, want)
    assert any(what in str(w.message) for w in caught)


def test_a_scalar_beyond_int64_read_as_a_float_runs_as_python():
    Kernel = kernel_class("""
for i in range(n):
    A[i] = x * 0.5
""", "A, n, x")
    got, want = np.zeros(4), np.zeros(4)
    with pytest.warns(FallbackWarning, match="'x' is 1180591620717411303424"):
        Kernel(backend="c").kernel(got, 4, 2**70)
    Kernel().original_kernel(want, 4, 2**70)
    assert identical(got, want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_invariant_whose_division_operand_leaves_int64_runs_as_python(backend):
    Kernel = kernel_class("""
for i in range(n):
    A[i + (k * k) // m] = 1.0
""", "A, n, k, m")
    got, want = np.zeros(8), np.zeros(8)
    args = (4, 2**32, 2**62)       # k * k is 2**64: (k * k) // m is 4, but not in int64 steps
    with pytest.warns(FallbackWarning, match=r"'k \* k' is 18446744073709551616"):
        Kernel(backend=backend).kernel(got, *args)
    Kernel().original_kernel(want, *args)
    assert identical(got, want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_subscripts_not_in_affine_form_keep_pythons_meaning(backend):
    """No plain int64 arithmetic where nothing proved the operands' ranges: a division by
    zero raises, and a wrapped sum does not pick a wrong, in-range element."""
    Kernel = kernel_class("""
for i in range(n):
    A[(i + c) % n] += 1.0
    A[i // k] += 2.0
""", "A, n, c, k")
    with pytest.raises(ZeroDivisionError):
        Kernel(backend=backend, strict=True).kernel(np.zeros(4), 3, 0, 0)
    with pytest.raises(OverflowError, match="64-bit"):  # documented: Python ints are int64
        Kernel(backend=backend, strict=True).kernel(np.zeros(4), 3, M - 1, 1)
    same_as_python(Kernel, backend, lambda: (np.zeros(4), 3, M - 3, 1))


def test_a_zero_step_falls_back_under_every_choice_of_backend():
    from asp_core.specializer import clear_warnings

    for backend in BACKENDS + [None]:
        clear_warnings()  # each backend's runner warns once per cause
        with pytest.warns(FallbackWarning, match="step is zero"), \
                pytest.raises(ValueError, match="must not be zero"):
            STEPPED(backend=backend).kernel(np.zeros(8), 0, 4, 0)


# -- bool subscripts ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS + [None])
@pytest.mark.parametrize("subscript", ["IDX[i]", "IDX[i] and True", "i > 2", "True"])
def test_bool_subscripts_are_masks_in_numpy_and_run_as_python(backend, subscript):
    Kernel = kernel_class(f"""
for i in range(n):
    A[{subscript}] = A[{subscript}] + B[i]
""", "A, B, IDX, n")
    make = lambda: (np.zeros(4), np.arange(1.0, 5.0), np.array([True, False, True, True]), 4)
    with pytest.raises(SpecializationError, match="bool subscript as a mask"):
        Kernel(backend=backend, strict=True).kernel(*make())
    got, want = make(), make()
    with pytest.warns(FallbackWarning, match="mask"):
        Kernel(backend=backend).kernel(*got)
    Kernel().original_kernel(*want)
    assert identical(got, want)
