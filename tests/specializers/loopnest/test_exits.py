"""``break``, ``continue``, ``return`` and ``while`` in a nest (``ifconvert``,
``analysis.graph.exit_edges``, ``lastvalues``): compiled with Python's meaning on every backend,
the loop a break ends sequential, the loops around it (and a loop with only ``continue``) still
parallel where the analysis proves it."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asp_core.errors import SpecializationError
from specializers.loopnest import LoopKernel

from .generators import TYPED_HEADER, TYPED_RETURN, fvalue, index, typed_statements
from .helpers import assert_same_as_python, check_generated
from .test_device import ON_GPU, needs_opencl

BACKENDS = ["python-reversed", "python-shuffled", "c", "openmp",
            pytest.param("opencl", marks=needs_opencl), "cuda-emulated", ON_GPU]


class Search(LoopKernel):
    """The search loop of real code: the first element over a threshold, per row."""

    def kernel(self, a, out, t):
        for r in range(a.shape[0]):
            found = -1
            for i in range(a.shape[1]):
                if a[r, i] > t:
                    found = i
                    break
            out[r] = found


class Skip(LoopKernel):
    """``continue``: the loop stays parallel."""

    def kernel(self, a, b):
        for i in range(a.shape[0]):
            if a[i] < 0:
                continue
            b[i] = a[i] * 2.0
            if a[i] > 1.0:
                continue
            b[i] += 1.0


class Until(LoopKernel):
    """A ``while`` loop per row, with a compound test."""

    def kernel(self, a, out):
        for r in range(a.shape[0]):
            k = 0
            s = 0.0
            while k < a.shape[1] and s < 3.0:
                s += a[r, k]
                k += 1
            out[r] = k + s


class Converge(LoopKernel):
    """A time loop around parallel loops that stops when converged (OpenMP: every thread
    walks the time loop inside one parallel region and leaves it together)."""

    def kernel(self, A, B, tol, steps):
        n = A.shape[0]
        done = -1
        d = 0.0
        for t in range(steps):
            done = t
            for i in range(1, n - 1):
                B[i] = (A[i - 1] + A[i + 1]) / 2
            d = 0.0
            for i in range(1, n - 1):
                d = max(d, abs(B[i] - A[i]))
            for i in range(1, n - 1):
                A[i] = B[i]
            if d < tol:
                break
        return done, d


class BeforeTheEnd(LoopKernel):
    """The range reaches past the array; the break stops the loop before it would: no
    IndexError may be raised up front (``safety.corner_index_error``)."""

    def kernel(self, A, n):
        for i in range(n + 5):
            A[i] = 1.0 + i
            if i == n - 1:
                break


class Columns(LoopKernel):
    """A break in a loop whose interchange would suit the caches: it must keep its place."""

    def kernel(self, a, out, t):
        for r in range(a.shape[1]):
            for i in range(a.shape[0]):
                out[r] = i
                if a[i, r] > t:
                    break


class Branches(LoopKernel):
    """Exits in both branches, in an else, nested ifs and a while inside a for inside a
    while."""

    def kernel(self, a, out):
        n = a.shape[0]
        for r in range(n):
            j = 0
            acc = 0.0
            while j < n:
                j += 1
                if a[r, j - 1] > 0.5:
                    if a[r, j - 1] > 0.9:
                        break
                    acc += 1.0
                    continue
                else:
                    acc -= a[r, j - 1]
                    if acc < -2.0:
                        break
                for c in range(n):
                    if a[c, r] < 0.1:
                        break
                    acc += 0.01
            out[r] = acc + j


def _search(seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((40, 64)), np.zeros(40, dtype=np.int64), 0.97


class TopLevelWhile(LoopKernel):
    """A ``while`` over an array at the method's top level is a nest of its own."""

    def kernel(self, x, t):
        k = 0
        while k < x.shape[0] and x[k] < t:
            k += 1
        return k


class WhileAroundSweeps(LoopKernel):
    """A ``while`` with ``for`` loops inside runs as Python around them: each sweep is a nest
    (with a call outside the subset in the while, the sweeps still compile)."""

    def kernel(self, a, tol):
        err = 1.0
        sweeps = 0
        while err > tol:
            err = 0.0
            for i in range(1, a.shape[0] - 1):
                new = 0.5 * (a[i - 1] + a[i + 1])
                err = max(err, abs(new - a[i]))
                a[i] = new
            sweeps += 1
            str(sweeps)
        return sweeps


CASES = {
    "search": (Search, _search),
    "skip": (Skip, lambda: (np.random.default_rng(1).normal(size=300), np.zeros(300))),
    "until": (Until, lambda: (np.random.default_rng(2).random((50, 12)), np.zeros(50))),
    "converge": (Converge, lambda: (np.r_[1.0, np.zeros(3000), 1.0], np.r_[1.0, np.zeros(3000), 1.0],
                                    2e-3, 400)),
    "before the end": (BeforeTheEnd, lambda: (np.zeros(10), 10)),
    "columns": (Columns, lambda: (np.random.default_rng(3).random((70, 50)),
                                  np.zeros(50, dtype=np.int64), 0.95)),
    "branches": (Branches, lambda: (np.random.default_rng(4).random((9, 9)), np.zeros(9))),
    "top-level while": (TopLevelWhile, lambda: (np.arange(100.0), 50.5)),
    "top-level while to the end": (TopLevelWhile, lambda: (np.arange(10.0), 50.5)),
    "while around sweeps": (WhileAroundSweeps, lambda: (np.r_[np.zeros(30), 1.0], 1e-3)),
}


def test_a_top_level_while_is_a_nest_and_one_around_loops_is_not():
    kernel = TopLevelWhile(backend="c", strict=True)
    kernel.kernel(np.arange(10.0), 5.0)
    assert [n.backend for n in kernel.last_call.nests] == ["c"]
    kernel = WhileAroundSweeps(backend="c", strict=True)
    kernel.kernel(np.r_[np.zeros(5), 1.0], 0.1)
    assert [n.backend for n in kernel.last_call.nests] == ["c"]  # the sweep


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_exits_have_pythons_meaning(case, backend):
    Kernel, make = CASES[case]
    call = assert_same_as_python(Kernel(backend=backend, strict=True), *make())
    assert all(n.backend == backend and n.fallback is None for n in call.nests)


def _schedule(kernel, *args) -> str:
    return str(kernel.explain(*args)).split("  schedule:")[1]


def test_the_loop_a_break_ends_is_sequential_the_loops_around_it_parallel():
    text = _schedule(Search(backend="c"), *_search())
    assert "for r  [parallel" in text and "for i  [sequential" in text
    assert "ends loop i" in str(Search(backend="c").explain(*_search()))


def test_a_loop_with_continue_only_stays_parallel():
    assert "for i  [parallel" in _schedule(Skip(backend="c"), *CASES["skip"][1]())


def test_a_break_keeps_its_loop_where_an_interchange_would_move_it():
    text = _schedule(Columns(backend="c"), *CASES["columns"][1]())
    assert text.index("for r") < text.index("for i")


def test_the_time_loop_with_a_break_runs_its_parallel_loops_in_parallel():
    text = _schedule(Converge(backend="openmp"), *CASES["converge"][1]())
    assert "for t  [sequential" in text and text.count("[parallel") == 3


class LoopVariableAfter(LoopKernel):
    """The variables of a loop a break ends, and of loops inside it, read after the nest:
    their last values come from the run (``lastvalues``), not from the bounds."""

    def kernel(self, a, t):
        i = j = -1
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                a[i, j] += 1.0
            if a[i, 0] > t:
                break
        return i, j


class Find(LoopKernel):
    """``return`` from inside a nest: every loop around it ends, the kernel returns."""

    def kernel(self, a, t):
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                if a[i, j] > t:
                    return i * 1000 + j
        return -1


class Clear(LoopKernel):
    """A bare ``return`` inside a nest, in a while loop."""

    def kernel(self, a):
        for r in range(a.shape[0]):
            c = 0
            while c < a.shape[1]:
                if a[r, c] < 0:
                    return
                a[r, c] = 0.0
                c += 1
        a[0, 0] = 7.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_last_values_and_returns_have_pythons_meaning(backend):
    rng = np.random.default_rng(5)
    for a, t in ((rng.random((30, 8)), 2.9), (rng.random((30, 8)), 9.0), (np.zeros((0, 3)), 0.0)):
        assert_same_as_python(LoopVariableAfter(backend=backend, strict=True), a, t)
    for t in (0.999, 2.0):
        assert_same_as_python(Find(backend=backend, strict=True), rng.random((40, 30)), t)
    for a in (rng.random((5, 6)), rng.random((5, 6)) - 0.1):
        assert_same_as_python(Clear(backend=backend, strict=True), a)


# -- the class: generated kernels with exits ------------------------------------------------

@st.composite
def exit_block(draw, loop_vars, indent, depth) -> list[str]:
    """Statements of a loop body (``generators.typed_statements``) with exits among them:
    ``break``/``continue`` under conditions or bare, a branch ending in one, nested loops
    (``for`` or ``while``) with exits of their own."""
    lines: list[str] = []
    f = lambda: draw(fvalue(loop_vars, ["s0"]))  # noqa: E731
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 7))
        if kind <= 2:
            lines += draw(typed_statements(loop_vars, ["s0"], indent, depth))
        elif kind == 3:
            lines += [f"{indent}if {f()} > {f()}:", f"{indent}    {draw(_exit())}"]
        elif kind == 4:
            lines += [f"{indent}if {f()} > {f()}:"]
            lines += draw(typed_statements(loop_vars, ["s0"], indent + "    ", depth))
            lines += [f"{indent}    {draw(_exit())}", f"{indent}else:"]
            lines += draw(typed_statements(loop_vars, ["s0"], indent + "    ", depth))
            if draw(st.booleans()):
                lines += [f"{indent}    {draw(_exit())}"]
        elif kind == 5 and depth < 3:
            lines += draw(exit_loop(loop_vars, indent, depth + 1))
        elif kind == 6 and draw(st.integers(0, 3)) == 0:
            lines.append(f"{indent}{draw(_exit())}")   # the rest of the body never runs
        else:
            lines.append(f"{indent}B[{draw(index(loop_vars))}] = {f()}")
    return lines


@st.composite
def _exit(draw) -> str:
    return draw(st.sampled_from(["break", "continue", "return s0 + 1.0"]))


@st.composite
def exit_loop(draw, loop_vars, indent, depth) -> list[str]:
    var = "ijk"[depth - 1]
    if depth > 1 and draw(st.integers(0, 2)) == 0:   # (a nest is a for loop)   # a while loop counting in variables of its own
        counter, position = f"w{depth}", f"q{depth}"
        lines = [f"{indent}{counter} = 0",
                 f"{indent}while {counter} < n and {draw(fvalue(loop_vars, ['s0']))} < 4.0:",
                 f"{indent}    {counter} += 1",     # first: a continue cannot skip it
                 f"{indent}    {position} = {counter} - 1"]
        return lines + draw(exit_block(loop_vars + [position], indent + "    ", depth))
    ranges = ["range(n)", "range(1, n)", "range(n - 1, -1, -1)", "range(0, n, 2)"]
    if loop_vars:
        ranges.append(f"range({loop_vars[-1]}, n)")
    header = f"{indent}for {var} in {draw(st.sampled_from(ranges))}:"
    return [header] + draw(exit_block(loop_vars + [var], indent + "    ", depth))


@st.composite
def exit_kernels(draw) -> str:
    lines = list(TYPED_HEADER)
    for _ in range(draw(st.integers(1, 2))):
        lines += draw(exit_loop([], "        ", 1))
        lines.append("        s0 = s0 * 0.5")
    lines.append(TYPED_RETURN)
    return "\n".join(lines) + "\n"


RESULTS = {"compiled": 0, "refused": 0}


def _check(source: str, backend: str) -> None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_generated(source, backend)
    except SpecializationError as exc:
        # the one stated refusal of the typed subset a generated kernel can meet
        assert "max" in str(exc) or "min" in str(exc), (str(exc), source)
        RESULTS["refused"] += 1
        return
    RESULTS["compiled"] += 1


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=True)
@given(exit_kernels(), st.sampled_from(["python-reversed", "python-shuffled", "c", "openmp"]))
def test_generated_exits(source, backend):
    _check(source, backend)


@pytest.mark.parametrize("backend", [pytest.param("opencl", marks=needs_opencl),
                                     "cuda-emulated", ON_GPU])
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=True)
@given(source=exit_kernels())
def test_generated_exits_on_devices(source, backend):
    _check(source, backend)


def test_generated_exits_compile():
    """(After the generated tests: how many of their kernels compiled, reported.)"""
    total = sum(RESULTS.values())
    if total == 0:
        pytest.skip("the generated tests did not run first")
    print(f"\ngenerated kernels with break/continue/while: {RESULTS['compiled']} of {total} "
          f"compiled, {RESULTS['refused']} refused (mixed-type max/min)")
    assert RESULTS["compiled"] >= 0.9 * total
