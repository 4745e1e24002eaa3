"""What a compiled call that may meet a Python int beyond 64 bits copies first, and that the
arrays are still exactly Python's when it does (``rollback.saved_on_overflow``).

Under the default choice such a call runs again as the original code from the arrays as they
were before it. A variant that stops in source order (serial C of the source order) copies only
the arrays the nest both reads and writes: an array it only writes is written again, instance
for instance, by the original code. Any other variant, and any call whose arguments share
memory, copies every array the nest writes. Tested over the class: each checked operation,
its first value beyond 64 bits at generated iterations, a later Python error (a division by
zero) before, at or after it, arguments that alias, on serial C and OpenMP; the arrays and the
exception are compared with the original code's, and the copies taken are counted.
"""

import copy
import random
import re
import warnings

import numpy as np
import pytest

from asp_core.specializer import clear_warnings
from specializers.loopnest import rollback
from specializers.loopnest.checking import load_source
from specializers.loopnest.kernel import _COLD

from .test_beyond_int64 import CASES, compiled_pays  # noqa: F401  (a fixture)

TEMPLATE = """
from specializers.loopnest import LoopKernel

class Kernel(LoopKernel):
    def kernel(self, acc, out, w, x, m, n, d):
        for i in range(n):
            out[i] = x[i] * 3.0
            acc[i] = acc[i] + x[i]
            out[i] = {expr} * 0.5
            w[i] = 1.0 / (i - d)
            acc[i] = acc[i] * 2.0
"""

#: The written arrays (acc, out, w) and the one of them the nest also reads (acc).
WRITTEN, READ_AND_WRITTEN = 3, 1


def _expr(name: str) -> str:
    return re.fullmatch(r"acc\[i\] \+= (.*) \* 0\.5", CASES[name][0]).group(1)


def generated(count: int, seed: int = 11):
    """(case, label, alias, n, at, d) over the class."""
    rng = random.Random(seed)
    for index in range(count):
        name = list(CASES)[index % len(CASES)]
        label = ("c", "openmp@2")[index // len(CASES) % 2]
        alias = rng.choice(["none", "none", "out-is-x", "w-is-acc"])
        n = rng.choice([1, 3, 9, 200])
        smallest = CASES[name][1]
        at = max(smallest, rng.choice(sorted({0, n // 2, n - 1})))
        n = max(n, at + 1)
        # where plain Python raises (never: -1): before, at or after the first big int; an
        # OpenMP variant's own errors leave the arrays as its contract says, not as Python's,
        # so its cases raise none
        d = -1 if label != "c" else rng.choice([-1, max(0, at - 1), at, n - 1])
        yield name, label, alias, n, at, d


def arguments(name: str, alias: str, n: int, at: int, d: int) -> list:
    make_m = CASES[name][2]
    x = np.arange(1.0, n + 1.0)
    x[:at] = 0.0
    m = 0 if make_m is None else make_m(at)
    acc, out, w = np.ones(n), np.full(n, 7.0), np.full(n, 5.0)
    if alias == "out-is-x":
        out = x
    elif alias == "w-is-acc":
        w = acc
    return [acc, out, w, x, m, n, d]


def outcome(run, args):
    try:
        run(*args)
    except ZeroDivisionError as exc:
        return type(exc).__name__
    return None


CASE_LIST = list(generated(42))


@pytest.mark.parametrize("name,label,alias,n,at,d", CASE_LIST,
                         ids=[f"{c[0]}-{c[1]}-{c[2]}-n{c[3]}-at{c[4]}-d{c[5]}"
                              for c in CASE_LIST])
def test_a_rerun_after_a_big_int_leaves_pythons_arrays(name, label, alias, n, at, d,
                                                       compiled_pays, monkeypatch):
    Kernel = load_source(TEMPLATE.format(expr=_expr(name)))
    _COLD.pop(Kernel.kernel._asp_original_function, None)
    want = copy.deepcopy(arguments(name, alias, n, at, d))
    want_error = outcome(Kernel().original_kernel, want)
    clear_warnings()
    kernel = Kernel()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quiet = arguments(name, alias, n, at, -1)
        quiet[3][:], quiet[4] = 0.0, 0   # (no big int: the call that makes the runner)
        outcome(kernel.kernel, quiet)
        runner = kernel._asp_current.runners[0]
        runner.selector.pin(label)
        runner._end_fast()
        copied = []
        real = rollback._copies
        monkeypatch.setattr(rollback, "_copies",
                            lambda inputs, written: copied.append(len(written)) or
                            real(inputs, written))
        for _ in range(3):   # (the first may wait for the pinned variant's build)
            copied.clear()
            got = copy.deepcopy(arguments(name, alias, n, at, d))
            assert outcome(kernel.kernel, got) == want_error
            for mine, theirs in zip(got[:4], want[:4]):
                np.testing.assert_array_equal(mine, theirs)
    if d == -1:   # the compiled call met the big int and ran again as the original code
        ran = kernel.last_call.nests[0]
        assert ran.backend == "python" and "64-bit" in (ran.fallback or ""), ran
    expected = READ_AND_WRITTEN if label == "c" and alias == "none" else WRITTEN
    assert copied and copied[0] == expected, copied


TEMPLATE_2D = """
from specializers.loopnest import LoopKernel

class Kernel(LoopKernel):
    def kernel(self, acc, out, x, m, n):
        for j in range(n):
            for i in range(n):
                acc[i, j] = acc[i, j] + x[i, j]
                out[i, j] = {expr} * 0.5
                acc[i, j] = acc[i, j] * 2.0
"""


@pytest.mark.parametrize("name", ["add", "mul", "int-of-float"])
@pytest.mark.parametrize("label", ["c", "openmp@2"])
@pytest.mark.parametrize("n,at", [(6, (0, 0)), (6, (3, 2)), (40, (39, 17))])
def test_a_nest_its_schedule_reorders_leaves_pythons_arrays_after_a_big_int(
        name, label, n, at, compiled_pays):
    """A column-order nest the schedule may interchange (then it does not stop in source
    order: every written array is copied), with its first big int at generated places."""
    expr = {"add": "(i * n + j + m)", "mul": "((i * n + j) * m)",
            "int-of-float": "int(x[i, j] * 1e30)"}[name]   # (big from the flat index ``at``)
    Kernel = load_source(TEMPLATE_2D.format(expr=expr))
    _COLD.pop(Kernel.kernel._asp_original_function, None)
    flat = at[0] * n + at[1]
    make_m = CASES[name][2]
    x = np.arange(1.0, n * n + 1.0).reshape(n, n)
    x.flat[:flat] = 0.0
    m = 0 if make_m is None else make_m(max(flat, CASES[name][1]))

    def arguments():
        return [np.ones((n, n)), np.full((n, n), 7.0), x.copy(), m, n]

    want = arguments()
    Kernel().original_kernel(*want)
    clear_warnings()
    kernel = Kernel()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quiet = arguments()
        quiet[2][:], quiet[3] = 0.0, 0
        kernel.kernel(*quiet)
        runner = kernel._asp_current.runners[0]
        runner.selector.pin(label)
        runner._end_fast()
        for _ in range(3):
            got = arguments()
            kernel.kernel(*got)
            for mine, theirs in zip(got[:3], want[:3]):
                np.testing.assert_array_equal(mine, theirs)
