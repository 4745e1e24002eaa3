"""typeinfer: NumPy's own promotion rules (NEP 50 weak Python scalars), result types read off
NumPy, scalar types by fixpoint, and the value-dependent types compiled code refuses."""

import numpy as np
import pytest

from asp_core.errors import UnsupportedArgument
from asp_core.signature import signature_of
from specializers.loopnest import LoopKernel
from specializers.loopnest.pipeline import analyse_kernel
from specializers.loopnest.rewrite import NO_VALUE
from specializers.loopnest.typeinfer import (BOOL, FLOAT, INT, Ty, binop_type, call_type,
                                             infer_types, type_of_value)

F32, F64 = Ty(np.dtype(np.float32)), Ty(np.dtype(np.float64))
I8, I32, I64 = Ty(np.dtype(np.int8)), Ty(np.dtype(np.int32)), Ty(np.dtype(np.int64))
U8 = Ty(np.dtype(np.uint8))


@pytest.mark.parametrize("op, a, b, want", [
    ("*", F32, FLOAT, F32),      # a Python float takes the array's precision
    ("+", F32, F64, F64),
    ("+", I8, INT, I8),          # a Python int too
    ("+", I64, F32, F64),
    ("+", I32, F32, F64),
    ("/", I8, I8, F64),
    ("/", INT, INT, FLOAT),      # Python: int / int is a float
    ("//", INT, INT, INT),
    ("*", INT, FLOAT, FLOAT),
    ("-", U8, I8, Ty(np.dtype(np.int16))),
    ("**", F32, INT, F32),
    ("+", BOOL, I8, I8),
])
def test_binary_operations_follow_numpy(op, a, b, want):
    assert binop_type(op, a, b) == want


def test_calls():
    assert call_type("math.sqrt", (F32,)) == FLOAT         # math returns Python floats
    assert call_type("numpy.sqrt", (F32,)) == F32
    assert call_type("numpy.sqrt", (INT,)) == F64
    assert call_type("abs", (I8,)) == I8
    assert call_type("max", (F32, F32)) == F32


def test_values():
    assert type_of_value(3) == INT and type_of_value(2.5) == FLOAT and type_of_value(True) == BOOL
    assert type_of_value(np.float32(1)) == F32
    with pytest.raises(UnsupportedArgument):
        type_of_value(1j)


def infer(kernel, *args, **local_values):
    """The types of the kernel's first nest, for the arguments and the locals it reads."""
    analysis = analyse_kernel(kernel).nests[0]
    inputs = dict(zip(kernel.__code__.co_varnames[1:], args), **local_values)
    values = [inputs.get(name, NO_VALUE) for name in analysis.names.inputs]  # NO_VALUE: unbound
    return infer_types(analysis, signature_of(values))


def test_scalar_types_by_fixpoint():
    def k(self, A, F, n):
        s = 0.0
        f = 0.0
        c = 0
        for i in range(n):
            s += A[i]
            f += F[i]
            c += 1
        return s, f, c
    info = infer(k, np.zeros(3), np.zeros(3, np.float32), 3, s=0.0, f=0.0, c=0)
    assert info.variables["s"] == F64 and info.variables["c"] == INT
    assert info.variables["f"] == F32  # 0.0 becomes float32 at the first +=, exactly
    assert info.result_types["f"] == F32


def test_value_dependent_types_are_refused():
    def k(self, A, n):
        for i in range(n):
            A[i] = max(i, 2.5)
    with pytest.raises(UnsupportedArgument, match="depending on the values"):
        infer(k, np.zeros(3), 3)

    def power(self, A, n, e):
        for i in range(n):
            A[i] = i ** e   # an int for e >= 0, a float below
    with pytest.raises(UnsupportedArgument):
        infer(power, np.zeros(3), 3, 2)


def test_complex_arrays_are_refused():
    def k(self, A, n):
        for i in range(n):
            A[i] = A[i] * 2
    with pytest.raises(UnsupportedArgument):
        infer(k, np.zeros(3, complex), 3)


@pytest.mark.parametrize("dtype", [np.float16, np.longdouble])
@pytest.mark.parametrize("where", ["array", "scalar"])
def test_half_and_long_double_run_as_python_with_the_reason(dtype, where):
    import warnings

    from asp_core.errors import SpecializationError
    from asp_core.specializer import FallbackWarning
    from specializers.loopnest import LoopKernel

    class Scale(LoopKernel):
        def kernel(self, A, B, x, n):
            for i in range(n):
                A[i] = B[i] * x

    def make():
        if where == "array":
            return np.zeros(4, dtype), np.arange(4).astype(dtype), 2.0, 4
        return np.zeros(4), np.arange(4.0), dtype(2.5), 4

    name = np.dtype(dtype).name
    for backend in ("c", "openmp", None):
        with pytest.raises(SpecializationError, match=f"dtype {name} cannot be compiled"):
            Scale(backend=backend, strict=True).kernel(*make())
        got, want = make(), make()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            Scale(backend=backend).kernel(*got)
        Scale().original_kernel(*want)
        assert (got[0] == want[0]).all() and got[0].dtype == want[0].dtype
        assert any(issubclass(w.category, FallbackWarning) for w in caught) or backend != "c"
    got, want = make(), make()
    Scale(backend="python", strict=True).kernel(*got)
    Scale().original_kernel(*want)
    assert (got[0] == want[0]).all()


def test_a_half_float_made_in_the_kernel_runs_as_python():
    from asp_core.errors import SpecializationError
    from specializers.loopnest import LoopKernel

    class Half(LoopKernel):
        def kernel(self, A, n):
            for i in range(n):
                A[i] = np.float16(A[i]) * 2

    with pytest.raises(SpecializationError, match="np.float16"):  # stated, not a KeyError
        Half(backend="c", strict=True).kernel(np.arange(4.0), 4)


class _Accumulate(LoopKernel):
    """The accumulator of real code: an int zero that becomes a float at the first addition,
    per row and over a whole array; Python's result for zero iterations (the int) too."""

    def kernel(self, x, out):
        for r in range(x.shape[0]):
            s = 0
            for i in range(x.shape[1]):
                s = s + x[r, i] * 0.5
            out[r] = s
        total = 0
        for i in range(x.shape[1]):
            total = total + x.shape[0] * 0.5
        return total


@pytest.mark.parametrize("backend", ["python-reversed", "c", "openmp"])
@pytest.mark.parametrize("shape", [(4, 5), (4, 0), (0, 3)])
def test_an_int_accumulator_that_becomes_a_float_compiles(backend, shape):
    x = np.arange(float(shape[0] * shape[1])).reshape(shape)
    kernel = _Accumulate(backend=backend, strict=True)
    got = kernel.kernel(x, np.zeros(shape[0]))
    want = _Accumulate().original_kernel(x, np.zeros(shape[0]))
    assert got == want and type(got) is type(want)
    assert all(nest.backend == backend for nest in kernel.last_call.nests if nest.ran)
