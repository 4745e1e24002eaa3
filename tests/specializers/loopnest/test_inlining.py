"""Calls of the user's own functions in a nest (``inlining``): inlined where Python's meaning
survives, refused with the reason where it may not; every backend against the original."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asp_core.errors import SpecializationError
from specializers.loopnest import LoopKernel

from .generators import load_kernel
from .helpers import assert_same_as_python, check_generated, within_ulps
from .test_device import ON_GPU, needs_opencl

PAIR = 3


def match(b1, b2):
    """Watson-Crick pair (A-U: 0 + 3, C-G: 1 + 2)."""
    return b1 + b2 == PAIR


square = lambda v: v * v  # noqa: E731


def length(a, i):
    return math.sqrt(a[i] * a[i] + 1.0)


class Nussinov(LoopKernel):
    """A DP kernel's shape: a module-level predicate called in the loop."""

    def kernel(self, seq, out):
        n = seq.shape[0]
        for i in range(n):
            for j in range(n):
                out[i, j] = 1 if match(seq[i], seq[j]) else 0


class Nested(LoopKernel):
    def kernel(self, x, y):
        def twice(v):
            return 2.0 * v
        half = lambda v: v * 0.5  # noqa: E731
        for i in range(x.shape[0]):
            y[i] = twice(x[i]) + half(square(x[i])) + length(x, i)


class Reduce(LoopKernel):
    def kernel(self, x):
        s = 0.0
        for i in range(x.shape[0]):
            s += square(x[i] - 0.5)
        return s


class Roots(LoopKernel):
    def kernel(self, x, y):
        def root(v):
            return math.sqrt(v) + 1.0
        for i in range(x.shape[0]):
            y[i] = root(x[i])


class WithStatic(LoopKernel):
    """Static methods, called through self and through the class."""

    @staticmethod
    def match(b1, b2):
        return b1 + b2 == PAIR

    @staticmethod
    def weight(x):
        return math.sqrt(abs(x)) * 2.0

    def kernel(self, seq, out):
        n = seq.shape[0]
        for i in range(n):
            for j in range(n):
                out[i, j] = self.weight(i - j) if self.match(seq[i], seq[j]) else \
                    WithStatic.weight(0.25)


def clamp(x, lo, hi):
    """A helper of several statements: early returns."""
    if x < lo:
        return lo
    elif x > hi:
        return hi
    return x


def logistic(x, k):
    z = k * x
    if z > 30.0:
        return 1.0
    e = math.exp(-z)
    e += 0.0
    return 1.0 / (1.0 + e)


class Statements(LoopKernel):
    def kernel(self, x, y):
        def ramp(v):
            w = v - 0.25
            if w < 0:
                w = 0.0
            return w * 2.0
        for i in range(x.shape[0]):
            y[i] = clamp(x[i], 0.2, 0.8) + logistic(x[i], 4.0) + ramp(x[i])


def ratio(a, b, c):
    """``a / b`` raises where ``b`` is 0, on every path: computed where it is used (after the
    test, which may raise too), so the nest counts as out of Python's order."""
    q = a / b
    if math.sqrt(c) > 1.0:
        return q + 1.0
    return q


class Ratios(LoopKernel):
    def kernel(self, s, d, c, y):
        for i in range(c.shape[0]):
            y[i] = ratio(s, i - d, c[i])   # (a Python float over an int: 0 raises)


def dead_division(x, k):
    y = 1.0 / k   # never read: Python raises at k == 0 all the same
    return x


def branchy(x, k):
    if x > 0.5:
        r = x / k   # never read on its path: raises at k == 0 where x > 0.5
        return 1.0
    return x


class Unread(LoopKernel):
    def kernel(self, x, y, d):
        for i in range(x.shape[0]):
            y[i] = dead_division(x[i], i - d + 10) + branchy(float(x[i]), i - d)


class Overriding(WithStatic):
    @staticmethod
    def match(b1, b2):
        return b1 == b2


class PlainMethod(LoopKernel):
    def twice(self, v):
        return 2.0 * v

    def kernel(self, x):
        for i in range(x.shape[0]):
            x[i] = self.twice(x[i])


BACKENDS = ["python", "c", "openmp", pytest.param("opencl", marks=needs_opencl),
            "cuda-emulated", ON_GPU]


@pytest.mark.parametrize("backend", BACKENDS)
def test_static_methods_are_inlined(backend):
    seq = np.random.default_rng(2).integers(0, 4, size=30)
    call = assert_same_as_python(WithStatic(backend=backend, strict=True), seq, np.zeros((30, 30)))
    assert call.nests[0].backend == backend and call.nests[0].fallback is None


def test_a_subclass_binding_the_static_method_otherwise_runs_as_python():
    seq = np.random.default_rng(3).integers(0, 4, size=12)
    with pytest.warns(match="'match' of Overriding is not the static method the nest inlined"):
        call = assert_same_as_python(Overriding(backend="c"), seq, np.zeros((12, 12)))
    assert call.nests[0].backend == "python"
    with pytest.raises(SpecializationError, match="'match' of Overriding"):
        Overriding(backend="c", strict=True).kernel(seq, np.zeros((12, 12)))
    assert_same_as_python(WithStatic(backend="c", strict=True), seq, np.zeros((12, 12)))


def test_a_method_that_is_not_static_is_not_inlined():
    with pytest.raises(SpecializationError, match="self.twice"):
        PlainMethod(backend="c", strict=True).kernel(np.ones(3))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_dp_kernel_calling_a_predicate_compiles(backend):
    seq = np.random.default_rng(0).integers(0, 4, size=40)
    call = assert_same_as_python(Nussinov(backend=backend, strict=True), seq,
                                 np.zeros((40, 40), dtype=np.int64))
    assert call.nests[0].backend == backend and call.nests[0].fallback is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_nested_defs_lambdas_and_module_functions_are_inlined(backend):
    x = np.random.default_rng(1).normal(size=50)
    assert_same_as_python(Nested(backend=backend, strict=True), x, np.zeros(50))
    got = Reduce(backend=backend, strict=True).kernel(x)
    assert got == pytest.approx(Reduce().original_kernel(x), rel=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_helpers_of_several_statements_are_inlined(backend):
    """Exact on the host's math library; on a GPU's within 2 ulps: logistic's math.exp there
    may differ from the C library's in the last bit (CUDA's exp: 1 ulp at most, by its
    documentation; seen on an H100), and 1 / (1 + e) carries that into the sum."""
    x = np.linspace(-1.0, 1.5, 26)
    if backend == "cuda":
        want = np.zeros(26)
        Statements().original_kernel(x, want)
        kernel = Statements(backend=backend, strict=True)
        got = np.zeros(26)
        kernel.kernel(x, got)
        assert within_ulps(got, want, 2), (got - want)
        assert kernel.last_call.nests[0].backend == backend
        return
    call = assert_same_as_python(Statements(backend=backend, strict=True), x, np.zeros(26))
    assert call.nests[0].backend == backend


@pytest.mark.parametrize("backend", ["c", "openmp"])
def test_a_helpers_local_value_computed_where_it_is_used_keeps_pythons_errors(backend):
    c = np.array([4.0, 0.0, 9.0, 0.25, 1.0, 16.0])
    kernel = Ratios(backend=backend, strict=True)
    call = assert_same_as_python(kernel, 3.0, -1, c, np.zeros(6))
    assert call.nests[0].backend == backend
    negative = np.array([1.0, -1.0, -1.0, 0.0, 0.0, 0.0])
    # the division alone raises; the square root alone; both, at the same i (the division
    # first in Python, the test first in the compiled expression)
    for d, c_bad, error in [(2, c, ZeroDivisionError), (-5, negative, ValueError),
                            (1, negative, ZeroDivisionError)]:
        y, expected = np.zeros(6), np.zeros(6)
        with pytest.raises(error):
            kernel.kernel(3.0, d, c_bad, y)
        with pytest.raises(error):
            Ratios().original_kernel(3.0, d, c_bad, expected)
        assert np.array_equal(y, expected)


@pytest.mark.parametrize("backend", ["c", "openmp", pytest.param("opencl", marks=needs_opencl)])
def test_a_helpers_local_value_a_path_does_not_read_still_raises_where_python_does(backend):
    x = np.array([0.9, 0.1, 0.8, 0.3, 0.7, 0.2, 0.6, 0.4, 0.95, 0.05, 0.55, 0.15])
    kernel = Unread(backend=backend, strict=True)
    for d in (1, 3, 5, 30):   # x[d] <= 0.5 (or no i == d): r is never computed at k == 0
        call = assert_same_as_python(kernel, x, np.zeros(12), d)
        assert call.nests[0].backend == backend
    for d in (0, 2, 10):   # x[d] > 0.5 (r = x / 0 at i == d), or y = 1.0 / 0 at i == d - 10
        y, expected = np.zeros(12), np.zeros(12)
        with pytest.raises(ZeroDivisionError):
            kernel.kernel(x, y, d)
        with pytest.raises(ZeroDivisionError):
            Unread().original_kernel(x, expected, d)
        assert np.array_equal(y, expected)


def test_a_global_the_helper_reads_is_read_at_each_call(monkeypatch):
    seq = np.array([0, 1, 2, 3])
    kernel = Nussinov(backend="c", strict=True)
    assert_same_as_python(kernel, seq, np.zeros((4, 4), dtype=np.int64))
    monkeypatch.setattr(__import__(__name__, fromlist=["PAIR"]), "PAIR", 4)
    out = np.zeros((4, 4), dtype=np.int64)
    kernel.kernel(seq, out)
    assert out.sum() == 3 and out[1, 3] == 1   # 1 + 3 and 2 + 2 now pair, 0 + 3 no more


@pytest.mark.parametrize("backend", ["c", "openmp"])
def test_an_error_in_the_helper_is_pythons(backend):
    x = np.array([1.0, 2.0, -3.0, 4.0])
    y = np.zeros(4)
    with pytest.raises(ValueError, match="math domain error"):
        Roots(backend=backend, strict=True, exact_errors=True).kernel(x, y)
    assert np.array_equal(y, [2.0, math.sqrt(2.0) + 1.0, 0.0, 0.0])   # as Python leaves it
    with pytest.raises(ValueError, match="math domain error"):
        Roots().original_kernel(x, np.zeros(4))


HELPERS = """

def countdown(n):
    return countdown(n - 1) if n > 0 else 0


def with_default(x, k=2.0):
    return x * k


def looping(x):
    t = 0.0
    for k in range(3):
        t += x
    return t


def maybe_unbound(x):
    if x > 2.0:
        y = x
    return y


def no_return_below(x):
    if x > 0.0:
        return x


def scaled(x):
    return x * PAIR
"""

def flipped(p, q):
    return math.sqrt(q) - p


class Flipped(LoopKernel):
    """The helper uses its parameters in the other order: inlined, its errors Python's."""

    def kernel(self, x, y):
        for i in range(x.shape[0] - 1):
            y[i] = flipped(x[i], x[i + 1])


@pytest.mark.parametrize("backend", ["c", "openmp"])
def test_a_helper_out_of_pythons_order_raises_pythons_error(backend):
    x = np.array([1.0, 4.0, 9.0, -1.0, 16.0])
    kernel = Flipped(backend=backend, strict=True)
    y, expected = np.zeros(5), np.zeros(5)
    with pytest.raises(ValueError, match="math domain error"):
        kernel.kernel(x, y)
    with pytest.raises(ValueError, match="math domain error"):
        Flipped().original_kernel(x, expected)
    assert np.array_equal(y, expected)
    good = np.abs(x)
    call = assert_same_as_python(kernel, good, np.zeros(5))
    assert call.nests[0].backend == backend


def pick(a, b):
    return a if a > 0 else b


def first(a, b):
    return a


class Unused(LoopKernel):
    """Arguments the helper uses under a condition, or not at all: evaluated first (Python
    evaluates them, and ``x[i + 1]`` raises IndexError at the last ``i``)."""

    def kernel(self, x, y, m):
        for i in range(m):
            y[i] = pick(x[i] - 0.5, x[i + 1]) + first(x[i], x[i + 1])


@pytest.mark.parametrize("backend", ["c", "openmp", pytest.param("opencl", marks=needs_opencl)])
def test_arguments_used_conditionally_or_not_at_all_still_raise(backend):
    x = np.random.default_rng(4).random(8)
    kernel = Unused(backend=backend, strict=True)
    call = assert_same_as_python(kernel, x, np.zeros(8), 7)   # x[i + 1] in range
    assert call.nests[0].backend == backend
    y, expected = np.zeros(8), np.zeros(8)
    with pytest.raises(IndexError):
        kernel.kernel(x, y, 8)
    with pytest.raises(IndexError):
        Unused().original_kernel(x, expected, 8)
    assert np.array_equal(y, expected)


REFUSED = {
    "recursion": ("x[i] = countdown(2)", "is recursive"),
    "default": ("y[i] = with_default(x[i])", "default"),
    "loop": ("y[i] = looping(x[i])", "may only assign local names, branch with if/else"),
    "unbound": ("y[i] = maybe_unbound(x[i])", "'y' may be read before it is assigned"),
    "no return": ("y[i] = no_return_below(x[i])", "ends without 'return <expression>'"),
    "lambda called in place": ("y[i] = (lambda a: a)(x[i])", "not a known pure function"),
    "module": ("y[i] = json.loads(x[i])", "not a known pure function"),
    "another module's global": ("y[i] = imported_scaled(x[i])", "a global of its module"),
}


def imported_scaled(x):
    return x * PAIR


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_cannot_be_inlined_runs_as_python_with_the_reason(case):
    statement, reason = REFUSED[case]
    source = (f"import json\nfrom {__name__} import imported_scaled\n"
              "from specializers.loopnest import LoopKernel\n" + HELPERS +
              "\n\nclass Kernel(LoopKernel):\n"
              "    def kernel(self, x, y):\n        for i in range(x.shape[0] - 1):\n"
              f"            {statement}\n")
    Kernel, path = load_kernel(source)
    with pytest.raises(SpecializationError) as error:
        Kernel(backend="c", strict=True).kernel(np.arange(1.0, 6.0), np.zeros(5))
    # the location: the construct's own file (this one, for the helper of this module)
    where = __file__ if case == "another module's global" else str(path)
    assert reason in str(error.value) and error.value.location.file == where


def test_another_modules_function_without_globals_is_inlined():
    source = (f"from {__name__} import square, length\n"
              "from specializers.loopnest import LoopKernel\n\n\nclass Kernel(LoopKernel):\n"
              "    def kernel(self, x, y):\n        for i in range(x.shape[0]):\n"
              "            y[i] = square(x[i]) + length(x, i)\n")
    Kernel, _ = load_kernel(source)
    x = np.random.default_rng(3).normal(size=20)
    call = assert_same_as_python(Kernel(backend="c", strict=True), x, np.zeros(20))
    assert call.nests[0].backend == "c"


def test_a_helper_bound_twice_or_after_the_nest_is_refused():
    source = ("from specializers.loopnest import LoopKernel\n\n\nclass Kernel(LoopKernel):\n"
              "    def kernel(self, x):\n        f = lambda v: v + 1.0\n"
              "        if x[0] > 0:\n            f = lambda v: v - 1.0\n"
              "        for i in range(x.shape[0]):\n            x[i] = f(x[i])\n")
    Kernel, _ = load_kernel(source)
    with pytest.raises(SpecializationError, match="bound more than once"):
        Kernel(backend="c", strict=True).kernel(np.ones(3))
    x = np.ones(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Kernel().kernel(x)   # the default: the original code, with the reason
    assert np.array_equal(x, np.zeros(3)) and any("bound more than once" in str(w.message)
                                                  for w in caught)


# -- generated helpers: every one inlined runs as the original does ----------------------------

ARGUMENTS = ["A[i, j]", "B[i]", "C[i, j]", "alpha", "i", "j", "B[idx[j]]", "F[j]",
             "A[i, j] / B[j]", "C[i, j] // 2", "B[(i + 3) % n]", "A[j, i] * alpha",
             "B[i + j]", "alpha / (i - 2)"]   # (the last two raise: IndexError, ZeroDivision)
BODIES = ["{0} + {1}", "{0} * {1} - {0}", "{0} / ({1} + 0.5)", "max({0}, {1}) + {2}",
          "math.sqrt(abs({0})) * {1}", "{0} if {1} > 0 else {2}", "{1} - {0}",
          "({0} > {1}) and ({2} < 0.5)", "{0} ** 2 + {1} // 3", "min({0}, {1}, {2})",
          "-{0} + abs({1} - {2})", "{0} * 2.0", "{2} / {0}"]


@st.composite
def helper_kernels(draw) -> str:
    body = draw(st.sampled_from(BODIES))
    params = ["p", "q", "r"][:1 + max(int(c) for c in body if c.isdigit())]
    expression = body.format(*params)
    args = [draw(st.sampled_from(ARGUMENTS)) for _ in params]
    style = draw(st.sampled_from(["module", "lambda", "nested", "nested lambda", "statements"]))
    signature = ", ".join(params)
    lines = ["import math", "import numpy as np", "from specializers.loopnest import LoopKernel",
             ""]
    if style == "module":
        lines += [f"def helper({signature}):", f"    return {expression}", ""]
    elif style == "statements":   # a body of several statements, paths through if/else
        lines += [f"def helper({signature}):"] + [
            "    " + line for line in draw(statement_bodies(params, expression))] + [""]
    elif style == "lambda":
        lines += [f"helper = lambda {signature}: {expression}", ""]
    lines += ["", "class Kernel(LoopKernel):",
              "    def kernel(self, A, B, C, F, idx, n, alpha):", "        s0 = 0.0"]
    if style == "nested":
        lines += [f"        def helper({signature}):", f"            return {expression}"]
    elif style == "nested lambda":
        lines += [f"        helper = lambda {signature}: {expression}"]
    call = f"helper({', '.join(args)})"
    target = draw(st.sampled_from(["A[i, j] = {}", "s0 += {}", "B[i] = B[i] + {}"]))
    lines += ["        for i in range(n):", "            for j in range(n):",
              f"                {target.format(call)}", "        return s0"]
    return "\n".join(lines) + "\n"


@st.composite
def statement_bodies(draw, params: list[str], expression: str) -> list[str]:
    """A helper's body of several statements around ``expression``: local values (some may
    raise), reassigned, read or left unread on some paths, ``if``/``elif``/``else`` with
    early returns or assignments."""
    names = list(params)

    def value() -> str:
        body = draw(st.sampled_from(BODIES))
        return body.format(*[draw(st.sampled_from(names)) for _ in range(3)])

    lines = [f"t = {expression}"]
    names.append("t")
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["assign", "augment", "if-return", "if-else", "if-elif"]))
        test = f"{draw(st.sampled_from(names))} > {draw(st.sampled_from(['0', '0.5', '1']))}"
        if kind == "assign":
            target = draw(st.sampled_from(["u", "t"]))
            lines.append(f"{target} = {value()}")
            if target not in names:
                names.append(target)
        elif kind == "augment":
            lines.append(f"t {draw(st.sampled_from(['+=', '-=', '*=']))} {value()}")
        elif kind == "if-return":
            lines += [f"if {test}:", f"    return {value()}"]
        elif kind == "if-else":
            lines += [f"if {test}:", f"    t = {value()}", "else:", f"    t = {value()}"]
        else:
            lines += [f"if {test}:", f"    return {value()}", f"elif {test.replace('>', '<')}:",
                      "    pass", "else:", f"    t = t + {value()}"]
    lines.append(f"return {value()}")
    return lines


RESULTS = {"inlined": 0, "refused": 0, "other": 0}


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=True)
@given(helper_kernels(), st.sampled_from(["c", "openmp"]))
def test_generated_helpers(source, backend):
    try:
        check_generated(source, backend)
    except SpecializationError as exc:   # refused, with its reason: the helper, or another
        RESULTS["refused" if "cannot be inlined" in str(exc) else "other"] += 1
        return
    RESULTS["inlined"] += 1


@pytest.mark.parametrize("backend", [pytest.param("opencl", marks=needs_opencl),
                                     "cuda-emulated", ON_GPU])
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=True)
@given(source=helper_kernels())
def test_generated_helpers_on_devices(source, backend):
    try:
        check_generated(source, backend)
    except SpecializationError as exc:   # refused: by the inlining check, as on the CPU
        if "cannot be inlined" in str(exc):
            with pytest.raises(SpecializationError, match="cannot be inlined"):
                check_generated(source, "c")


def test_most_generated_helpers_are_inlined():
    """(After the generated test: the share of its kernels inlined, reported.)"""
    total = sum(RESULTS.values())
    if total == 0:
        pytest.skip("the generated test did not run first")
    print(f"\ngenerated helpers: {RESULTS['inlined']} of {total} inlined and compiled, "
          f"{RESULTS['refused']} refused by the inlining check (with its reason), "
          f"{RESULTS['other']} by the rest of the subset (mixed-type max/min and such)")
    assert RESULTS["inlined"] >= 0.6 * total
