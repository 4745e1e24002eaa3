"""kernel: the public contract of LoopKernel (ARCHITECTURE.md) with the plain-Python executor.

Every kernel runs with strict=True (a silent fallback cannot pass) and is compared, exactly,
with the method run as written (the oracle).
"""

import logging
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from asp_core.errors import SpecializationError
from asp_core.specializer import FallbackWarning
from specializers.loopnest import LoopKernel
from specializers.loopnest.kernel import _COLD

from .helpers import assert_same_as_python, identical, run_both

rng = np.random.default_rng(7)


class Gemm(LoopKernel):
    def kernel(self, alpha, C, A, B):
        for k in range(A.shape[1]):
            for i in range(A.shape[0]):
                for j in range(B.shape[1]):
                    C[i, j] = C[i, j] + alpha * A[i, k] * B[k, j]


def test_contract_example_from_architecture():
    A, B, C = rng.random((4, 3)), rng.random((3, 5)), rng.random((4, 5))
    g = Gemm(backend="python", strict=True)
    call = assert_same_as_python(g, 1.0, C, A, B)
    nest = call.nests[0]
    assert nest.backend == "python" and nest.fallback is None and nest.ran
    assert isinstance(nest.parallel_loops, tuple)
    (st,) = nest.statements
    assert st.line == Gemm.kernel.__wrapped__.__code__.co_firstlineno + 4
    # k carries the accumulation into C; i and j are parallel (moved outward by interchange)
    assert st.sequential == ("k",) and st.parallel == ("i", "j") and st.reductions == ()
    assert nest.parallel_loops == ("i", "j")
    report = g.explain(1.0, C, A, B)
    assert "nest 0" in str(report) and "C[i, j] = C[i, j] + alpha * A[i, k] * B[k, j]" in str(report)


class Several(LoopKernel):
    """Several nests, Python in between, scalars read after nests, and a return."""

    def kernel(self, A, B, n):
        total = 0.0
        for i in range(n):
            total += A[i]
        mean = total / n
        for i in range(n):
            B[i] = A[i] - mean
        scale, j = 2, None
        if n > 3:
            for j in range(1, n, 2):
                B[j] *= scale
        return mean, total, i, j


def test_several_nests_with_python_between_and_return():
    k = Several(backend="python", strict=True)
    call = assert_same_as_python(k, rng.random(8), np.zeros(8), 8)
    assert [n.ran for n in call.nests] == [True, True, True]
    call = assert_same_as_python(k, rng.random(3), np.zeros(3), 3)
    assert [n.ran for n in call.nests] == [True, True, False]  # the third is behind `if n > 3`


class LoopVariablesLeftBound(LoopKernel):
    def kernel(self, A, n, m):
        j = -1
        for i in range(n):
            for j in range(i, m):
                A[i] += j
        return i, j


def test_scalars_and_loop_variables_as_python_leaves_them():
    k = LoopVariablesLeftBound(backend="python", strict=True)
    assert_same_as_python(k, np.zeros(5), 5, 3)  # the inner loop is empty for i >= 3
    with pytest.raises(UnboundLocalError):
        k.kernel(np.zeros(1), 0, 3)  # zero trips: i is never bound, as in Python
    with pytest.raises(UnboundLocalError):
        k.original_kernel(np.zeros(1), 0, 3)


class WithInit(LoopKernel):
    def __init__(self, factor, n, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor
        self.N = n

    def kernel(self, A, B):
        for i in range(self.N):
            for j in range(A.shape[1]):
                B[i, j] = A[i][j] * self.factor + len(A)


def test_subclass_init_and_self_attributes():
    k = WithInit(3.5, 4, backend="python", strict=True)
    assert_same_as_python(k, rng.random((4, 6)), np.zeros((4, 6)))


class Subset(LoopKernel):
    """A little of everything the supported subset allows."""

    def kernel(self, A, B, C, idx, n, step, lo):
        acc = 0
        best = -math.inf
        for i in range(n - 1, -1, -1):                  # negative step
            for j in range(lo, n, step):                 # run-time step
                t = A[i, j] * 2.0 - B[j][i] / (1 + abs(A[i, j]))
                if t > 0.5 and not (i == j):
                    C[i, j] = math.sqrt(t) + np.exp(-t)
                elif t < -0.5 or j % 3 == 0:
                    C[i, j] = min(t, -1.0) if i > 2 else max(t, 0.25, float(j))
                else:
                    C[i, j] = int(t * 10) // 3 + (i ** 2) % 5
                acc += i * j
                best = max(best, C[i, j])
            C[idx[i], i] += 1.0                          # non-affine subscript
        for i in range(n):
            for j in range(i * 0, i + 1):                # triangular
                C[n * 0 + i, j] -= A[j, i] * (i < j < n)
        return acc, best


def test_supported_subset_matches_python():
    n = 7
    args = (rng.normal(size=(n, n)), rng.normal(size=(n, n)), np.zeros((n, n)),
            rng.integers(0, n, n), n, 2, 1)
    call = assert_same_as_python(Subset(backend="python", strict=True), *args)
    assert all(nest.fallback is None for nest in call.nests)


class Unsupported(LoopKernel):
    def kernel(self, A, n):
        for i in range(n):
            A[i] = i
        for i in range(n):
            x, y = A[i], 2.0  # noqa: F841
            A[i] = A[i] / 2
        return A.sum()


def test_unsupported_nest_runs_as_python_with_a_warning_naming_the_line():
    line = Unsupported.kernel.__wrapped__.__code__.co_firstlineno + 4
    k = Unsupported(backend="python")
    with pytest.warns(FallbackWarning, match=rf"tuple assignment.*|line {line}") as caught:
        got, want = run_both(k, np.zeros(6), 6)
    assert identical(got, want)
    text = " ".join(str(w.message) for w in caught)
    assert f":{line}:" in text and "tuple assignment" in text
    nests = k.last_call.nests
    assert nests[0].fallback is None and nests[0].backend == "python"
    assert "tuple assignment" in nests[1].fallback and nests[1].backend == "python"


def test_unsupported_nest_in_strict_mode_raises():
    with pytest.raises(SpecializationError, match="tuple assignment") as info:
        Unsupported(backend="python", strict=True).kernel(np.zeros(3), 3)
    assert info.value.line == Unsupported.kernel.__wrapped__.__code__.co_firstlineno + 4


def test_a_warning_points_at_the_users_call_once_per_call_site_by_default():
    k = Unsupported(backend="python")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(3):
            k.kernel(np.zeros(3), 3)   # one call site
    fallbacks = [w for w in caught if issubclass(w.category, FallbackWarning)]
    assert len(fallbacks) == 1 and fallbacks[0].filename == __file__
    assert fallbacks[0].lineno == sys._getframe().f_code.co_firstlineno + 5
    message = str(fallbacks[0].message)
    where = f"{__file__}:{Unsupported.kernel.__wrapped__.__code__.co_firstlineno + 4}"
    assert message.count(where) == 1   # the construct's own file:line:col, once
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")   # every call
        for _ in range(3):
            k.kernel(np.zeros(3), 3)
    assert len([w for w in caught if issubclass(w.category, FallbackWarning)]) == 3


def test_a_strict_error_says_where_once():
    with pytest.raises(SpecializationError) as info:
        Unsupported(backend="python", strict=True).kernel(np.zeros(3), 3)
    assert str(info.value).count(str(info.value.location)) == 1


def test_fallbacks_are_logged_at_debug_only(caplog):
    with caplog.at_level(logging.DEBUG, logger="asp"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            Unsupported(backend="python").kernel(np.zeros(3), 3)
    records = [r for r in caplog.records if "tuple assignment" in r.getMessage()]
    assert records and all(r.levelno == logging.DEBUG for r in records)


class Listy(LoopKernel):
    def kernel(self, A, B):
        for i in range(len(B)):
            B[i] = A[i] * 2


def test_arguments_of_the_wrong_kind_fall_back_with_the_reason():
    k = Listy(backend="python")
    with pytest.warns(FallbackWarning, match="not a NumPy array"):
        got, want = run_both(k, [1, 2, 3], np.zeros(3))
    assert identical(got, want)
    with pytest.raises(SpecializationError, match="dtype object"):
        Listy(backend="python", strict=True).kernel(np.array([1, "a"], dtype=object), np.zeros(2))
    with pytest.raises(SpecializationError, match="2 dimensions but is indexed with 1"):
        Listy(backend="python", strict=True).kernel(np.zeros((2, 2)), np.zeros(2))


def test_environment_backend_and_disable(monkeypatch):
    monkeypatch.setenv("ASP_BACKEND", "python")
    k = Gemm(strict=True)
    A, B, C = rng.random((2, 2)), rng.random((2, 2)), rng.random((2, 2))
    assert_same_as_python(k, 1.0, C, A, B)
    assert k.last_call.nests[0].backend == "python"
    monkeypatch.setenv("ASP_DISABLE_JIT", "1")
    k = Gemm(strict=True)
    assert_same_as_python(k, 1.0, C, A, B)
    assert k.last_call.nests[0].fallback == "disabled by ASP_DISABLE_JIT"


@pytest.mark.parametrize("strict", [False, True])
def test_disable_jit_runs_even_an_unsupported_nest_as_python_without_a_word(monkeypatch, strict):
    # ASP_DISABLE_JIT=1 runs every nest as the original code: a nest outside the subset is no
    # error under strict, and warns nothing (the user asked for plain Python).
    monkeypatch.setenv("ASP_DISABLE_JIT", "1")
    _COLD.pop(Unsupported.kernel._asp_original_function, None)   # analysed at the first call
    k = Unsupported(strict=strict)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got, want = run_both(k, np.zeros(6), 6)
    assert identical(got, want)
    assert [n.fallback for n in k.last_call.nests] == ["disabled by ASP_DISABLE_JIT"] * 2


def test_explain_does_not_touch_the_arguments():
    C = np.zeros((2, 2))
    report = Gemm(backend="python").explain(1.0, C, np.ones((2, 2)), np.ones((2, 2)))
    assert not C.any()
    assert "ran on python" in repr(report) and report._repr_markdown_().startswith("```")


def test_last_call_before_any_call_and_kernel_metadata():
    k = Gemm()
    assert k.last_call is None
    assert Gemm.kernel.__name__ == "kernel" and "alpha" in str(Gemm.kernel.__wrapped__.__code__.co_varnames)


def test_instances_do_not_share_settings():
    A, B, C = rng.random((2, 2)), rng.random((2, 2)), rng.random((2, 2))
    strict = Gemm(backend="python", strict=True)
    other = Gemm(backend="python")
    strict.kernel(1.0, C.copy(), A, B)
    other.kernel(1.0, C.copy(), A, B)
    assert strict.last_call.nests[0].backend == other.last_call.nests[0].backend == "python"


class SuperUser(Gemm):
    def kernel(self, alpha, C, A, B):
        super().kernel(alpha, C, A, B)
        for i in range(C.shape[0]):
            C[i, 0] = 0.0


def test_kernels_calling_super_and_inheritance():
    A, B, C = rng.random((3, 3)), rng.random((3, 3)), rng.random((3, 3))
    assert_same_as_python(SuperUser(backend="python", strict=True), 1.0, C, A, B)


def test_a_kernel_whose_source_is_unavailable_runs_as_python_with_the_reason(tmp_path):
    """Defined through ``exec`` (as at the interactive prompt or with ``python -c``): no
    source to read. Calls run the original code with a warning saying why, whatever their
    size and backend; strict raises; explain() says so; never an internal error."""
    import subprocess
    import sys

    script = (
        "import warnings, numpy as np\n"
        "from specializers.loopnest import LoopKernel\n"
        "from asp_core.errors import SpecializationError\n"
        "src = '''\n"
        "class K(LoopKernel):\n"
        "    def kernel(self, a, n):\n"
        "        for i in range(n):\n"
        "            a[i] = a[i] * 2.0\n"
        "'''\n"
        "exec(src)\n"
        "a = np.ones(10)\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    K().kernel(a, 10)\n"
        "    K(backend='c').kernel(a, 10)\n"
        "    K().kernel(np.ones(10**6), 10**6)\n"
        "assert (a == 4.0).all(), a\n"
        "messages = [str(w.message) for w in caught]\n"
        "assert messages and all('source of K.kernel is not available' in m for m in messages)\n"
        "try:\n"
        "    K(backend='c', strict=True).kernel(a, 10)\n"
        "    raise AssertionError('strict did not raise')\n"
        "except SpecializationError as exc:\n"
        "    assert 'not available' in str(exc)\n"
        "assert 'not available' in str(K().explain(a, 10))\n"
        "import os\n"
        "os.environ['ASP_DISABLE_JIT'] = '1'   # plain Python asked for: strict has nothing to say\n"
        "K(backend='c', strict=True).kernel(a, 10)\n"
        "assert (a == 8.0).all(), a\n"
        "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=str(Path(__file__).resolve().parents[3]))
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_a_kernel_defined_in_a_notebook_cell_specializes():
    """IPython keeps each cell's source in ``linecache`` under the cell's name: a kernel
    defined there is read from it, and runs compiled."""
    import linecache

    name = "<ipython-input-7-asp-test>"
    source = ("import numpy as np\n"
              "from specializers.loopnest import LoopKernel\n"
              "class Cell(LoopKernel):\n"
              "    def kernel(self, a, n):\n"
              "        for i in range(n):\n"
              "            a[i] = a[i] + i\n")
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    namespace: dict = {}
    exec(compile(source, name, "exec"), namespace)
    a = np.zeros(8)
    kernel = namespace["Cell"](backend="c", strict=True)
    kernel.kernel(a, 8)
    assert np.array_equal(a, np.arange(8.0)) and kernel.last_call.nests[0].backend == "c"
