"""A fuzz test of the classes of input that broke the specializer before (issue 9): generated
kernels that mix wrapped negative subscripts (every instance negative, constants from either
end, ``idx[i] - n``) with their positive spellings, loops whose values sit at the ends of int64
(or past them), odd dtypes (int8 to uint32, float32, float16, long double), arrays passed
twice or as overlapping views, and non-contiguous layouts. The default choice, ``c`` and
``openmp`` must each give exactly what ``original_kernel()`` gives: the same return value, the
same exception, the same arrays bit for bit; a kernel a variant cannot take may only run as
Python with one of the stated reasons."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from .generators import load_kernel
from .helpers import identical

N = 5
M = 2**63 - 1
#: Where the loop over ``u`` starts: ordinary, near either end of int64, or past them.
EDGES = [0, 7, M - N, -M - 1, 2**62, M - 2, -M + 1]
DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
          np.float32, np.float64, np.float16, np.longdouble]
#: The reasons a variant may give for leaving a kernel to Python here, and nothing else.
STATED = re.compile(r"cannot be compiled|beyond the 64 bits|beyond the 64-bit|"
                    r"a Python int beyond")
COUNT = {"c": 0, "openmp": 0, None: 0}
COMPILED = {"c": 0, "openmp": 0, None: 0}


@st.composite
def subscript(draw, variables: list[str]) -> str:
    """A subscript whose values lie in [-N, N): Python wraps the negative ones."""
    v = draw(st.sampled_from(variables))
    c = draw(st.integers(0, N - 1))
    return draw(st.sampled_from([
        "{v}", "{v} - n", "n - 1 - {v}", "-1 - {v}", "{c}", "{c} - n", "-1", "n - 1",
        "({v} + 1) % n", "idx[{v}]", "idx[{v}] - n", "{v} - {c}" if c <= 0 else "{v}",
    ])).format(v=v, c=c)


@st.composite
def statement(draw, variables: list[str], indent: str) -> str:
    s = lambda: draw(subscript(variables))  # noqa: E731
    return indent + draw(st.sampled_from([
        "A[{0}, {1}] = A[{2}, {3}] + C[{4}, {5}]",
        "A[{0}, {1}] = C[{2}, {3}] * 2 - B[{4}]",
        "C[{0}, {1}] = max(A[{2}, {3}], B[{4}])",
        "B[{0}] += A[{1}, {2}]",
        "A[{0}, {1}] = A[{0}, {1}] // 3 + 1",
        "B[{0}] = min(B[{1}], C[{2}, {3}]) + 1",
    ])).format(*(s() for _ in range(6)))


@st.composite
def hostile_kernels(draw) -> str:
    outer = draw(st.sampled_from([
        "range(E, E + n)", "range(E + n - 1, E - 1, -1)", "range(E, E + n, 2)",
        "range(E + 1, E + n)",
    ]))
    lines = ["import numpy as np", "from specializers.loopnest import LoopKernel", "", "",
             "class Kernel(LoopKernel):", "    def kernel(self, A, B, C, idx, n, E):",
             f"        for u in {outer}:"]
    w = "(u - E)"  # in [0, n): an affine subscript whose parts sit near the ends of int64
    inner = draw(st.sampled_from(["range(n)", f"range({w} + 1)", f"range(n - 1, {w} - 1, -1)",
                                  None]))
    if inner is None:
        lines += [draw(statement([w], "            ")) for _ in range(draw(st.integers(1, 3)))]
    else:
        lines.append(f"            for i in {inner}:")
        lines += [draw(statement([w, "i"], "                "))
                  for _ in range(draw(st.integers(1, 3)))]
    lines.append("        return u")
    return "\n".join(lines) + "\n"


@st.composite
def arguments(draw):
    """A factory of fresh arguments (the same values each time)."""
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    layout = draw(st.sampled_from(["C", "F", "reversed", "C is A", "C is A.T", "B in A"]))
    edge = draw(st.sampled_from(EDGES))
    seed = draw(st.integers(0, 2**16))

    def make():
        rng = np.random.default_rng(seed)
        low = 0 if dtype.kind == "u" else -3
        if dtype.kind == "f":
            values = rng.normal(size=(N + 1, N))
        else:
            values = rng.integers(low, 4, size=(N + 1, N))
        base = values.astype(dtype)
        A = base[:N]
        if layout == "F":
            A = np.asfortranarray(A)
        elif layout == "reversed":
            A = base[N::-1][:N]
        B = base[N].copy() if layout != "B in A" else A[2]
        C = {"C is A": A, "C is A.T": A.T}.get(layout, (values[:N] * 2).astype(dtype))
        idx = rng.integers(-N, N, size=N)
        return A, B, C, idx, N, edge

    return make


def outcome(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            return ("ok", call())
        except (ArithmeticError, LookupError, ValueError, TypeError) as exc:
            return ("error", type(exc))


def check(source: str, make, backend: str | None) -> None:
    Kernel, _ = load_kernel(source)
    want_args = make()
    want = outcome(lambda: Kernel().original_kernel(*want_args))
    got_args = make()
    kernel = Kernel(backend=backend, exact_errors=True)  # (OpenMP too leaves Python's state)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = outcome(lambda: kernel.kernel(*got_args))
    assert got == want, (got, want, source)
    assert identical(got_args, want_args), (got_args, want_args, source)
    for nest in kernel.last_call.nests:
        if nest.ran and nest.fallback is not None:
            assert STATED.search(nest.fallback), (nest.fallback, source)
    if all(nest.backend in ("c", "openmp") for nest in kernel.last_call.nests if nest.ran):
        COMPILED[backend] += 1
    for w in caught:
        if "running plain Python" in str(w.message):
            assert STATED.search(str(w.message)), (str(w.message), source)
    COUNT[backend] += 1


@pytest.mark.parametrize("backend", ["c", "openmp", None], ids=["c", "openmp", "default"])
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=hostile_kernels(), make=arguments())
def test_hostile_kernels_match_the_original(backend, source, make):
    check(source, make, backend)


def test_enough_of_them_ran_compiled():
    """The fuzz is not all fallbacks: most examples run compiled on each backend."""
    for backend in ("c", "openmp"):
        if COUNT[backend] < 120:
            test_hostile_kernels_match_the_original(backend)
        assert COMPILED[backend] >= 40, (COMPILED, COUNT)
    print("hostile fuzz, examples run compiled / run:", COMPILED, COUNT)


def test_the_generator_reaches_each_class_of_input():
    assert "- n]" in find(hostile_kernels(), lambda s: "- n]" in s and "E + n - 1" in s)
    make = find(arguments(), lambda m: m()[5] == -M - 1 and m()[0].dtype == np.float16)
    A, B, C, idx, n, edge = make()
    assert edge == -M - 1 and A.dtype == np.float16
    make = find(arguments(), lambda m: (lambda a: a[2] is a[0] and a[0].dtype == np.uint8)(m()))
    args = make()
    assert args[2] is args[0]
