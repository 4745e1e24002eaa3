"""examples.elementwise: the specializer against its plain-Python oracle (strict mode)."""

import hashlib
import importlib.util
import math
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asp_core.errors import SpecializationError
from asp_core.specializer import FallbackWarning
from examples.elementwise import ElementwiseMap, main, polar_radius_and_wave

SPECIAL = np.array([0.0, -0.0, 1.5, -1.5, 3.0, -7.25, 1e300, -1e-300, np.inf, -np.inf, np.nan, 2.0])


def both(func, *arrays):
    fast = ElementwiseMap(func, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns on x/0 in the oracle
        got = fast(*arrays)
        want = ElementwiseMap(func, backend="python")(*arrays)
    assert fast.last_call.backend == "c"
    return got, want


def pairs():
    x, y = np.meshgrid(SPECIAL, SPECIAL)
    return x.ravel(), y.ravel()


@pytest.mark.parametrize("func", [
    lambda x, y: x // y,
    lambda x, y: x % y,
    lambda x, y: x / y,
    lambda x, y: max(x, y) - min(y, x),
    lambda x, y: (x if x < y else y) + (1.0 if x == y or x != x else 0.0),
    lambda x, y: -x ** 2 + abs(y),
], ids=["floordiv", "mod", "truediv", "minmax", "compare", "pow-abs"])
def test_python_meaning_on_special_values(func):
    got, want = both(func, *pairs())
    np.testing.assert_array_equal(got, want)


def test_math_errors_raise_like_python():
    with pytest.raises(ValueError, match="math domain error"):
        ElementwiseMap(lambda x: math.sqrt(x), strict=True)(np.array([1.0, -1.0]))
    with pytest.raises(OverflowError):
        ElementwiseMap(lambda x: math.exp(x), strict=True)(np.array([1000.0]))
    with pytest.raises(ValueError):
        ElementwiseMap(lambda x: math.log(x), backend="python")(np.array([0.0]))
    with pytest.raises(ValueError):
        ElementwiseMap(lambda x: math.log(x), strict=True)(np.array([0.0]))


def test_shapes_are_kept_and_inputs_converted():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]
    got, want = both(lambda a: a / 3, x)
    assert got.shape == (3, 2) and got.dtype == np.float64
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="one shape"):
        ElementwiseMap(lambda a, b: a + b)(np.zeros(2), np.zeros(3))


def test_unsupported_function_runs_python_with_a_warning_naming_the_line():
    def loop(x):
        s = x
        while s > 1:
            s = s / 2
        return s

    spec = ElementwiseMap(loop)
    with pytest.warns(FallbackWarning, match=r"test_specializer.py:\d+:\d+: unsupported"):
        result = spec(np.array([8.0, 3.0]))
    assert result.tolist() == [1.0, 0.75] and spec.last_call.backend == "python"
    with pytest.raises(SpecializationError, match="unsupported statement While"):
        ElementwiseMap(loop, strict=True)(np.array([1.0]))


def test_arity_mismatch_is_reported():
    with pytest.raises(SpecializationError, match="takes 2 arguments"):
        ElementwiseMap(lambda a, b: a + b, strict=True)(np.zeros(2))


_ops = st.sampled_from(["+", "-", "*", "/", "//", "%"])


@st.composite
def expressions(draw, depth=0):
    if depth >= 3 or draw(st.booleans()):
        return draw(st.sampled_from(["x", "y", "2.5", "-1.0", "3"]))
    kind = draw(st.integers(0, 3))
    a, b = draw(expressions(depth + 1)), draw(expressions(depth + 1))
    if kind == 0:
        return f"({a} {draw(_ops)} {b})"
    if kind == 1:
        return f"max({a}, {b})"
    if kind == 2:
        return f"({a} if {a} < {b} else {b})"
    return f"abs({a})"


_GENERATED = Path(tempfile.mkdtemp(prefix="asp-generated-"))


def load_generated(expr: str):
    """A function whose body is ``expr``, written to a real file so its source can be read."""
    name = "gen_" + hashlib.sha256(expr.encode()).hexdigest()[:16]
    path = _GENERATED / f"{name}.py"
    path.write_text(f"import math\n\ndef f(x, y):\n    return {expr}\n")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


@settings(max_examples=60, deadline=None)
@given(expressions(), st.lists(st.floats(-1e6, 1e6, allow_subnormal=False), min_size=1, max_size=8))
def test_generated_expressions_agree_with_python(expr, values):
    func = load_generated(expr)
    x = np.array(values)
    y = np.array(values[::-1])
    fast = ElementwiseMap(func, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # x/0 in the NumPy-scalar oracle
        try:
            want = ElementwiseMap(func, backend="python")(x, y)
        except ZeroDivisionError:
            # Python raised on constants (2.5 % 0): the specializer must not invent a value.
            with pytest.raises(SpecializationError, match="ZeroDivisionError"):
                fast(x, y)
            return
        got = fast(x, y)
    np.testing.assert_array_equal(got, want)


def test_main_reports_identical_results(capsys):
    report = main(n=20_000)
    assert report["backend"] == "c" and report["identical"]
    assert "ran on c" in capsys.readouterr().out


def test_example_function_is_specialized():
    x = np.linspace(-3, 3, 101)
    got, want = both(polar_radius_and_wave, x, x[::-1].copy())
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("expr", ["-1.0 / (2.5 - 2.5)", "-1.0 % (2.5 % 2.5)",
                                  "+2 // (3 - 3)", "-(1.0) / 0.0 + x"])
def test_a_signed_constant_divided_by_zero_raises_as_python_does(expr):
    """Found by the generated expressions: a constant with a sign was not folded, so the
    division by a constant zero ran in C (giving -inf) where Python raises."""
    func = load_generated(expr)
    with pytest.raises(ZeroDivisionError):
        func(1.0, 2.0)
    with pytest.raises(SpecializationError, match="ZeroDivisionError"):
        ElementwiseMap(func, strict=True)(np.ones(3), np.ones(3))
