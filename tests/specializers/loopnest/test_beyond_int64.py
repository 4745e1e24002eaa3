"""Python ints beyond 64 bits in compiled code (``variants.BeyondInt64``).

Compiled code holds Python ints in 64 bits and checks every operation that could leave them
(``+ - * // ** abs`` of Python ints, ``int()`` of a float). Where plain Python goes on with a
larger int (and, say, stores its half as a float), a compiled call cannot follow it: under the
default choice the call runs again as the original code, from the arrays as they were before
it, with a ``FallbackWarning`` naming the nest's line; a forced backend or ``strict=True``
raises ``BeyondInt64`` (an ``OverflowError``) instead. Tested over the class: every operation
that checks, in serial C and OpenMP, with the first value beyond 64 bits at generated
iterations (first, inside, last) of generated lengths, in nests that also write before and
after that iteration (so that a rerun from half-written arrays would show).
"""

import copy
import dataclasses
import random
import warnings

import numpy as np
import pytest

from asp_core.specializer import FallbackWarning, clear_warnings
from specializers.loopnest.checking import load_source
from specializers.loopnest.cost import estimates, machine as machine_module
from specializers.loopnest.cost.machine import DEFAULTS
from specializers.loopnest.kernel import _COLD
from specializers.loopnest.variants import BeyondInt64

INT64_MAX = 2**63 - 1

# Each case: a statement whose Python-int value first leaves int64 at iteration ``at`` (the
# argument ``m`` is made from ``at``, which must be at least the case's smallest), or, for
# ``int()`` of a float, where ``x[i]`` first is not 0.
INT64_MIN = -2**63
CASES = {
    "add": ("acc[i] += (i + m) * 0.5", 1, lambda at: INT64_MAX - at + 1),
    "sub": ("acc[i] += (m - i) * 0.5", 1, lambda at: INT64_MIN + at - 1),
    "mul": ("acc[i] += (i * m) * 0.5", 2, lambda at: INT64_MAX // at + 1),
    "pow": ("acc[i] += ((i + m) ** 2) * 0.5", 0, lambda at: 3037000500 - at),
    "abs": ("acc[i] += abs(m - i) * 0.5", 0, lambda at: INT64_MIN + at),
    "floordiv": ("acc[i] += ((m - i) // -1) * 0.5", 0, lambda at: INT64_MIN + at),
    "int-of-float": ("acc[i] += int(x[i] * 1e30) * 0.5", 0, None),
}

TEMPLATE = """
from specializers.loopnest import LoopKernel

class Kernel(LoopKernel):
    def kernel(self, acc, x, m, n):
        for i in range(n):
            acc[i] = acc[i] + x[i]
        for i in range(n):
            {statement}
            acc[i] = acc[i] * 2.0
"""


@pytest.fixture
def compiled_pays(monkeypatch):
    """The default choice steered to compiled code: plain Python made slow, compiling free."""
    slow = {k: v * 1e4 for k, v in DEFAULTS.py_op_ns.items()}
    chosen = dataclasses.replace(DEFAULTS, py_op_ns=slow, compile_base_s=0.0,
                                 compile_per_line_s=0.0, compile_openmp_s=0.0)
    monkeypatch.setattr(machine_module, "machine", lambda: chosen)
    monkeypatch.setattr(estimates, "machine", lambda: chosen)


def generated(count: int, seed: int = 5):
    """(case, backend, n, at, arguments) over the class, at random lengths and positions."""
    rng = random.Random(seed)
    for index in range(count):
        name = list(CASES)[index % len(CASES)]
        backend = ("c", "openmp")[index // len(CASES) % 2]
        n = rng.choice([1, 2, 7, 64, 1000])
        statement, smallest, make_m = CASES[name]
        at = max(smallest, rng.choice(sorted({0, n // 2, n - 1})))
        n = max(n, at + 1)
        x = np.arange(float(n))
        x[:at] = 0.0
        m = 0 if make_m is None else make_m(at)
        assert INT64_MIN <= m <= INT64_MAX
        yield name, backend, n, at, statement, (np.ones(n), x, m, n)


def kernel_class(statement: str):
    cls = load_source(TEMPLATE.format(statement=statement))
    _COLD.pop(cls.kernel._asp_original_function, None)  # analysed from the first call
    return cls


CASE_LIST = list(generated(28))


@pytest.mark.parametrize("name,backend,n,at,statement,args", CASE_LIST,
                         ids=[f"{c[0]}-{c[1]}-n{c[2]}-at{c[3]}" for c in CASE_LIST])
def test_default_choice_reruns_as_python(name, backend, n, at, statement, args, compiled_pays):
    Kernel = kernel_class(statement)
    want = copy.deepcopy(args)
    Kernel().original_kernel(*want)   # plain Python carries the larger int
    clear_warnings()
    kernel = Kernel()
    for _ in range(3):  # the first call may run the original code while C builds
        got = copy.deepcopy(args)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kernel.kernel(*got)
        np.testing.assert_array_equal(got[0], want[0])
    ran = [nest for nest in kernel.last_call.nests if nest.backend is not None]
    assert ran[-1].backend == "python" and "64-bit" in ran[-1].fallback, kernel.last_call


@pytest.mark.parametrize("name,backend,n,at,statement,args", CASE_LIST[:14],
                         ids=[f"{c[0]}-{c[1]}-n{c[2]}-at{c[3]}" for c in CASE_LIST[:14]])
@pytest.mark.parametrize("how", ["forced", "strict"])
def test_forced_or_strict_raises(name, backend, n, at, statement, args, how, compiled_pays):
    Kernel = kernel_class(statement)
    kernel = Kernel(backend=backend, strict=True) if how == "forced" else Kernel(strict=True)
    got = copy.deepcopy(args)
    with pytest.raises(BeyondInt64, match="64-bit range"):
        for _ in range(3):
            kernel.kernel(*got)
    assert issubclass(BeyondInt64, OverflowError)


def test_the_warning_names_the_line(compiled_pays):
    Kernel = kernel_class(CASES["mul"][0])
    clear_warnings()
    kernel = Kernel()
    with pytest.warns(FallbackWarning, match=r"line 8\).*64-bit range"):
        for _ in range(3):
            kernel.kernel(np.ones(8), np.arange(8.0), 2**62, 8)
