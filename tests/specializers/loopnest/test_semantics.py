"""Python's meaning in compiled code: each operation, on special values, for the dtypes the
compiled variants take (float32, float64, int8 ... int64, uint8, bool, Python and NumPy
scalars), must give exactly what plain Python gives: the same values bit for bit (nan where
nan), the same result dtype, or the same exception.

One documented exception: NumPy computes its transcendental ufuncs (``np.exp``, ``np.log``,
``np.sin`` ...) with its own SIMD code, chosen by the CPU it runs on, which is not correctly
rounded; compiled code calls the C library. Those results may differ by a few units in the
last place (``NUMPY_ULPS``); ``math.*``, arithmetic, ``np.sqrt`` and the rounding functions
are exact."""


import math
import warnings

import numpy as np
import pytest

from asp_core.errors import SpecializationError
from specializers.loopnest.variants import BeyondInt64

from .generators import load_kernel
from .helpers import identical, within_ulps
from .test_device import ON_GPU, needs_opencl

FLOATS = [0.0, -0.0, 1.5, -1.5, 7.0, -7.0, 0.1, 1e308, -1e-310, np.inf, -np.inf, np.nan]
INTS = [0, 1, -1, 7, -7, 3, 100, -100]


def values(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        with np.errstate(over="ignore"):  # 1e308 is inf in float32, as intended
            return np.array(FLOATS, dtype=dtype)
    if dtype.kind == "b":
        return np.array([True, False] * 6)
    info = np.iinfo(dtype)
    return np.array([v for v in INTS + [int(info.min), int(info.max)]
                     if info.min <= v <= info.max][:12], dtype=dtype)


def kernel_source(expr: str, extra: str = "") -> str:
    return ("import math\nimport numpy as np\nfrom specializers.loopnest import LoopKernel\n\n\n"
            "class Kernel(LoopKernel):\n"
            "    def kernel(self, OUT, X, Y, k):\n"
            "        for i in range(X.shape[0]):\n"
            "            for j in range(Y.shape[0]):\n"
            f"                OUT[i, j] = {expr}\n{extra}")


def run(expr: str, x, y, out_dtype, k=3, backend="c"):
    Kernel, _ = load_kernel(kernel_source(expr))
    results = []
    for runner in (lambda K, *a: K(backend="python").original_kernel(*a),
                   lambda K, *a: K(backend=backend, strict=True).kernel(*a)):
        out = np.zeros((len(x), len(y)), dtype=out_dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            try:
                runner(Kernel, out, x.copy(), y.copy(), k)
                results.append(("ok", out))
            except (ArithmeticError, ValueError, TypeError) as exc:
                results.append(("error", type(exc)))
    return results


CASES = [
    # (expression, x dtype, y dtype, output dtype)
    ("X[i] // Y[j]", "float64", "float64", "float64"),
    ("X[i] % Y[j]", "float64", "float64", "float64"),
    ("X[i] // Y[j]", "float32", "float32", "float32"),
    ("X[i] % Y[j]", "float32", "float64", "float64"),
    ("X[i] / Y[j]", "float64", "float32", "float64"),
    ("X[i] ** Y[j]", "float64", "float64", "float64"),
    ("X[i] // Y[j]", "int64", "int64", "int64"),
    ("X[i] % Y[j]", "int64", "int64", "int64"),
    ("X[i] // Y[j]", "int32", "int8", "int32"),
    ("X[i] % Y[j]", "int8", "int8", "int8"),
    ("X[i] / Y[j]", "int64", "int64", "float64"),
    ("X[i] * Y[j] + X[i]", "int8", "int8", "int8"),
    ("X[i] * Y[j] - 7", "uint8", "uint8", "uint8"),
    ("X[i] + 200", "int8", "int8", "int8"),          # a literal a narrow int cannot hold
    ("X[i] - 128", "int8", "int8", "int8"),
    ("X[i] * 0 + 300", "int8", "int8", "int16"),
    ("X[i] + 100 - Y[j]", "int8", "int8", "int8"),
    ("X[i] + 70000", "int16", "int32", "int32"),
    ("Y[j] - 255", "uint8", "uint8", "int16"),
    ("X[i] ** 3", "int16", "int16", "int16"),
    ("-X[i] + abs(Y[j])", "int32", "int32", "int32"),
    ("abs(X[i]) - abs(Y[j])", "float32", "float32", "float32"),
    ("max(X[i], Y[j]) - min(Y[j], X[i])", "float64", "float64", "float64"),
    ("max(X[i], Y[j])", "int64", "int64", "int64"),
    ("X[i] * 2.5 + Y[j] * k", "float32", "float32", "float32"),
    ("X[i] * 0.1 + k", "float32", "int64", "float64"),
    ("X[i] + i * k", "int8", "int8", "int8"),
    ("(X[i] > Y[j]) or (X[i] == Y[j])", "float64", "float64", "bool"),
    ("X[i] < Y[j] < 1.0", "float32", "float64", "bool"),
    ("X[i] if X[i] > Y[j] else Y[j]", "float64", "float64", "float64"),
    ("math.sqrt(abs(X[i])) + math.exp(-abs(Y[j]))", "float64", "float64", "float64"),
    ("math.sqrt(X[i])", "float64", "float64", "float64"),
    ("math.log(X[i] * Y[j])", "float64", "float64", "float64"),
    ("math.exp(X[i])", "float64", "float64", "float64"),
    ("np.sqrt(X[i]) + np.floor(Y[j])", "float32", "float32", "float32"),
    ("np.maximum(X[i], Y[j]) - np.fmin(X[i], Y[j])", "float64", "float64", "float64"),
    ("np.sqrt(X[i]) * np.abs(Y[j])", "float64", "float32", "float64"),
    ("X[i]", "float64", "float64", "int64"),
    ("X[i] * Y[j]", "int64", "int64", "int8"),
    ("int(X[i]) + Y[j]", "float64", "int64", "int64"),
    ("float(X[i]) / 3", "int32", "int32", "float32"),
    ("X[i] and Y[j]", "bool", "bool", "bool"),
    ("not X[i]", "float64", "float64", "bool"),
    ("math.floor(X[i]) + math.ceil(Y[j])", "float64", "float64", "float64"),
    ("i // (j - 3) + i % (j - 2)", "int64", "int64", "int64"),
    ("(i - 3) / (j - 3)", "int64", "int64", "float64"),
    ("(i - 5.0) ** (j - 6.5)", "int64", "int64", "float64"),
    ("X[i] ** 0.5", "float64", "float64", "float64"),
]


# NumPy's own SIMD transcendental functions are within 1 ulp (float64) and 3 ulp (float32)
# of the correctly rounded result, the C library's within 1: their difference is bounded.
NUMPY_ULPS = {"float64": 2, "float32": 4}
NUMPY_TRANSCENDENTAL = [
    # one function of an exactly computed argument each, so that no later rounding or
    # cancellation magnifies the difference
    ("np.log(X[i] * Y[j])", "float32", "float32", "float32"),
    ("np.exp(X[i] - Y[j])", "float64", "float64", "float64"),
    ("np.exp(X[i] + Y[j])", "float32", "float32", "float32"),
    ("np.sin(X[i] + Y[j])", "float32", "float32", "float32"),
    ("np.tanh(X[i] * Y[j])", "float64", "float64", "float64"),
    ("np.log1p(abs(X[i] + Y[j]))", "float64", "float64", "float64"),
    ("np.arctan(X[i] / Y[j])", "float32", "float32", "float32"),
]


def case_ids(cases):
    return [f"{c[0]}|{c[1]},{c[2]}->{c[3]}" for c in cases]


#: On a device, the math library's transcendental functions (``pow`` behind a float ``**``,
#: ``exp``, ``log``) may differ from the C library's in the last bit (PoCL's ``pow`` does, by
#: one ulp, for some float64 arguments here); everything else is exact there too.
DEVICE_TRANSCENDENTAL = ("**", "math.exp", "math.log")


@pytest.mark.parametrize("backend", ["c", pytest.param("opencl", marks=needs_opencl),
                                     "cuda-emulated", ON_GPU])
@pytest.mark.parametrize("expr, xt, yt, ot", CASES, ids=case_ids(CASES))
def test_operation_matches_python(expr, xt, yt, ot, backend):
    x, y = values(xt), values(yt)
    (plain_kind, plain), (fast_kind, fast) = run(expr, x, y, ot, backend=backend)
    assert fast_kind == plain_kind, (plain, fast)
    if fast is BeyondInt64 and plain is OverflowError:
        return  # a Python int past 64 bits, which Python stores nowhere either (test_beyond_int64)
    if fast_kind == "ok" and backend != "c" and np.dtype(ot).kind == "f" and \
            any(name in expr for name in DEVICE_TRANSCENDENTAL):
        assert plain.dtype == fast.dtype and within_ulps(fast, plain, 1), (plain, fast)
        return
    assert identical(fast, plain), (plain, fast)


@pytest.mark.parametrize("expr, xt, yt, ot", NUMPY_TRANSCENDENTAL, ids=case_ids(NUMPY_TRANSCENDENTAL))
def test_numpy_transcendental_within_a_few_ulps(expr, xt, yt, ot):
    x, y = values(xt), values(yt)
    (plain_kind, plain), (fast_kind, fast) = run(expr, x, y, ot)
    assert plain_kind == fast_kind == "ok"
    assert plain.dtype == fast.dtype
    assert within_ulps(fast, plain, NUMPY_ULPS[ot]), (plain, fast)


def test_negative_subscripts_wrap_as_in_python():
    src = ("import numpy as np\nfrom specializers.loopnest import LoopKernel\n\n\n"
           "class Kernel(LoopKernel):\n"
           "    def kernel(self, A, B, n):\n"
           "        for i in range(n):\n"
           "            A[-1 - i] = B[i - 2] + B[-n + i]\n")
    Kernel, _ = load_kernel(src)
    for backend in ("c", "openmp"):
        a1, a2 = np.zeros(6), np.zeros(6)
        b = np.arange(6.0)
        Kernel(backend=backend, strict=True).kernel(a1, b, 6)
        Kernel().original_kernel(a2, b, 6)
        assert identical(a1, a2)


def test_python_int_overflow_raises_instead_of_wrapping():
    src = ("from specializers.loopnest import LoopKernel\n\n\n"
           "class Kernel(LoopKernel):\n"
           "    def kernel(self, A, n, big):\n"
           "        total = 0\n"
           "        for i in range(n):\n"
           "            total += big * i\n"
           "            A[i] = i\n"
           "        return total\n")
    Kernel, _ = load_kernel(src)
    assert Kernel(backend="c", strict=True).kernel(np.zeros(3), 3, 2**40) == 3 * 2**40
    with pytest.raises(OverflowError, match="64-bit"):
        Kernel(backend="c", strict=True).kernel(np.zeros(3), 3, 2**62)
    assert Kernel().original_kernel(np.zeros(3), 3, 2**62) == 3 * 2**62  # Python: a big int


def test_numpy_integers_wrap_as_numpy_does():
    src = ("import numpy as np\nfrom specializers.loopnest import LoopKernel\n\n\n"
           "class Kernel(LoopKernel):\n"
           "    def kernel(self, A, n):\n"
           "        for i in range(n):\n"
           "            A[i] = A[i] * A[i] + A[i]\n")
    Kernel, _ = load_kernel(src)
    a = np.array([100, -100, 2**31 - 1, 12345678], dtype=np.int32)
    got, want = a.copy(), a.copy()
    Kernel(backend="c", strict=True).kernel(got, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        Kernel().original_kernel(want, 4)
    assert identical(got, want)


def test_scalar_types_left_as_python_leaves_them():
    src = ("import numpy as np\nfrom specializers.loopnest import LoopKernel\n\n\n"
           "class Kernel(LoopKernel):\n"
           "    def kernel(self, A, F, n):\n"
           "        s = 0.0\n        f = 0.0\n        c = 0\n"
           "        for i in range(n):\n"
           "            s += A[i]\n"
           "            f += F[i]\n"
           "            c += 1\n"
           "        return s, f, c\n")
    Kernel, _ = load_kernel(src)
    a, f32 = np.arange(5.0), np.arange(5, dtype=np.float32) / 3
    got = Kernel(backend="c", strict=True).kernel(a, f32, 5)
    want = Kernel().original_kernel(a, f32, 5)
    assert identical(got, want)  # np.float64, np.float32 (NEP 50) and int
    assert type(got[1]) is np.float32 and type(got[2]) is int
    zero = Kernel(backend="c", strict=True).kernel(a, f32, 0)  # no iteration: untouched
    assert identical(zero, (0.0, 0.0, 0))


def test_value_dependent_types_fall_back_with_the_reason():
    src = ("from specializers.loopnest import LoopKernel\n\n\n"
           "class Kernel(LoopKernel):\n"
           "    def kernel(self, A, n):\n"
           "        for i in range(n):\n"
           "            A[i] = max(i, 2.5) * 2\n")
    Kernel, _ = load_kernel(src)
    with pytest.raises(SpecializationError, match="depending on the values"):
        Kernel(backend="c", strict=True).kernel(np.zeros(3), 3)
    got = np.zeros(3)
    with pytest.warns(UserWarning, match="depending on the values"):
        Kernel(backend="c").kernel(got, 3)
    want = np.zeros(3)
    Kernel().original_kernel(want, 3)
    assert identical(got, want)
