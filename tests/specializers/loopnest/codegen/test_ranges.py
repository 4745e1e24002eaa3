"""codegen.ranges: interval arithmetic on Python-int expressions under loop range classes,
checked against brute force; and the checks compiled code drops (or keeps) because of it."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specializers.loopnest import dast as d
from specializers.loopnest.codegen.ranges import (INT64_MAX, INT64_MIN, SMALL, UNKNOWN,
                                                   excludes_zero, fits, int_range)

from ..generators import load_kernel
from ..helpers import compiled_modules, identical


def expressions(depth=3):
    leaf = st.one_of(st.sampled_from([d.Var("i"), d.Var("j")]),
                     st.integers(-6, 6).map(d.Const))
    if depth == 0:
        return leaf
    sub = expressions(depth - 1)
    return st.one_of(leaf, st.builds(d.BinOp, st.sampled_from(["+", "-", "*", "//", "%"]),
                                     sub, sub),
                     st.builds(d.UnaryOp, st.just("-"), sub))


def evaluate(expr, env):
    if isinstance(expr, d.Const):
        return expr.value
    if isinstance(expr, d.Var):
        return env[expr.name]
    if isinstance(expr, d.UnaryOp):
        value = evaluate(expr.operand, env)
        return None if value is None else -value
    a, b = evaluate(expr.left, env), evaluate(expr.right, env)
    return {"+": a + b, "-": a - b, "*": a * b,
            "//": a // b if b else None, "%": a % b if b else None}[expr.op] \
        if a is not None and b is not None else None


@settings(max_examples=400, deadline=None)
@given(expressions(), st.tuples(st.integers(-5, 5), st.integers(0, 4)),
       st.tuples(st.integers(-5, 5), st.integers(0, 4)))
def test_intervals_contain_every_value(expr, i_range, j_range):
    i_lo, i_hi = i_range[0], i_range[0] + i_range[1]
    j_lo, j_hi = j_range[0], j_range[0] + j_range[1]
    low, high = int_range(expr, {"i": (i_lo, i_hi), "j": (j_lo, j_hi)})
    for i, j in itertools.product(range(i_lo, i_hi + 1), range(j_lo, j_hi + 1)):
        value = evaluate(expr, {"i": i, "j": j})
        if value is not None:
            assert low <= value <= high, (expr, i, j, value, (low, high))


def test_classes_and_predicates():
    small = {"i": (0, SMALL), "j": (0, SMALL)}
    i, j = d.Var("i"), d.Var("j")
    assert fits(int_range(d.BinOp("*", i, j), small))
    assert not fits(int_range(d.BinOp("*", d.BinOp("*", i, j), i), small))
    assert excludes_zero(int_range(d.BinOp("+", d.BinOp("+", i, j), d.Const(1)), small))
    assert not excludes_zero(int_range(d.BinOp("-", i, d.Const(1)), small))
    assert int_range(d.Var("n"), small) == UNKNOWN == (INT64_MIN, INT64_MAX)


def source(expr):
    return ("import numpy as np\nfrom specializers.loopnest import LoopKernel\n\n\n"
            "class Kernel(LoopKernel):\n"
            "    def kernel(self, H, n, k):\n"
            "        for i in range(n):\n"
            "            for j in range(n):\n"
            f"                H[i, j] = {expr}\n")


def c_body(expr, n=6, k=3):
    Kernel, _ = load_kernel(source(expr))
    kernel = Kernel(backend="c", strict=True)
    got = np.zeros((n, n))
    kernel.kernel(got, n, k)
    want = np.zeros((n, n))
    Kernel().original_kernel(want, n, k)
    assert identical(got, want)
    text = compiled_modules(kernel)[0].source
    return text[text.index("asp_nest_"):]


def test_checks_dropped_where_proven():
    body = c_body("1.0 / (i + j + 1)")
    assert "asp_add_py" not in body and "asp_truediv_py" not in body
    assert "asp_err->code" not in body  # no error path left: the loop can vectorize
    body = c_body("(i * j - 7) // (j + 1) + (i % 3)")
    assert "_py" not in body


@pytest.mark.parametrize("expr, kept", [
    ("1.0 / (i - 2)", "asp_truediv_py"),      # i - 2 is 0 once
    ("(i + k) * 2", "asp_add_py"),            # k is any int
    ("i * j * i * j * 1.0", "asp_mul_py"),     # beyond int64 for loops near 2**31
    ("(i - 3) // (j - 2) * 1.0", "asp_floordiv_py_i64"),
])
def test_checks_kept_where_not(expr, kept):
    assert kept in c_body(expr, n=2)  # (a call that does not raise; the class is the same)


def test_a_call_outside_the_range_class_gets_a_checked_variant():
    Kernel, _ = load_kernel(
        "import numpy as np\nfrom specializers.loopnest import LoopKernel\n\n\n"
        "class Kernel(LoopKernel):\n"
        "    def kernel(self, H, base, n):\n"
        "        for i in range(base, base + n):\n"
        "            H[i - base] = i * 4 * 0.5\n")
    kernel = Kernel(backend="c", strict=True)
    small = np.zeros(4)
    kernel.kernel(small, 10, 4)
    assert small.tolist() == [20.0, 22.0, 24.0, 26.0]
    def body(module):
        return module.source[module.source.index("asp_nest_"):]
    assert "asp_mul_py" not in body(compiled_modules(kernel)[0])
    with pytest.raises(OverflowError, match="64-bit"):  # i * 4 leaves int64: never wraps
        kernel.kernel(np.zeros(4), 2**62, 4)
    assert any("asp_mul_py" in body(m) for m in compiled_modules(kernel))
