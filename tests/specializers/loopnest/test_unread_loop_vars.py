"""Loop variables and scalars nothing reads after their nest are not handed back to the kernel.

A nest used to take every loop variable's value on entry (its last value is the one Python
leaves where the loop runs no iteration) and hand it back. Sequential nests sharing ``i`` then
met it unbound or bound as the nest before had run compiled (which hands back only what is
read afterwards) or as the original code: two call signatures for the same call, so variants
built twice and the cost model's choice restarted (gemver on 4 x 4 ran its nests as the
original code for thousands of warm calls, serial C built but for the other signature). A loop
variable or a scalar the nest writes is now an input and an output of its nest only where the
nest reads it on entry or the kernel may read it after the nest: loaded outside it (not in the
body of a loop that rebinds it), deleted, declared global or nonlocal, or any name where the
kernel reads its frame (``locals()``, ``eval`` ...). Those last three were not counted as
reads before, and compiled nests handed back the value on entry: ``del i``, ``eval('j')`` or
``locals()`` after a compiled nest failed or saw a stale value.

The class is tested by generated kernels (sequential nests sharing loop variables, with each
way of reading them afterwards, on empty and non-empty ranges) against the original code.
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from specializers.loopnest import pipeline
from specializers.loopnest.checking import load_source

GEMVER_LIKE = '''
from specializers.loopnest import LoopKernel

class Kernel(LoopKernel):
    def kernel(self, A, x, n):
        for i in range(n):
            for j in range(n):
                A[i, j] = A[i, j] + x[j]
        for i in range(n):
            for j in range(n):
                x[i] = x[i] + A[j, i]
        for i in range(n):
            x[i] = x[i] * 0.5
{after}
'''


def nest_names(after: str):
    Kernel = load_source(GEMVER_LIKE.format(after=after))
    analysis = pipeline.analyse_kernel(Kernel.kernel.__wrapped__)
    return [(nest.names.inputs, nest.names.outputs) for nest in analysis.nests]


def test_loop_variables_read_by_no_one_are_neither_inputs_nor_outputs():
    for inputs, outputs in nest_names(""):
        assert "i" not in inputs and "j" not in inputs and outputs == ()


@pytest.mark.parametrize("after, kept", [
    ("        return i", {"i"}),
    ("        return i + j", {"i", "j"}),
    ("        del j", {"j"}),
    ("        y = locals()", {"i", "j"}),
    ("        return eval('x')", {"i", "j"}),
    ("        f = lambda: i\n        return f()", {"i"}),
    ("        import sys\n        return sys._getframe().f_locals", {"i", "j"}),
])
def test_a_loop_variable_read_after_the_nests_is_handed_back(after, kept):
    """Read, deleted, or reachable through the frame: every nest binding it hands it back
    (the analysis does not follow the flow: the nests after may run no iteration)."""
    for inputs, outputs in nest_names(after):
        assert set(outputs) <= set(inputs)
    assert [set(outputs) for _, outputs in nest_names(after)] == \
        [kept, kept, kept - {"j"}]


def test_a_nest_has_one_signature_whatever_the_nest_before_left_in_its_loop_variables():
    """What the nest before leaves in ``i`` and ``j`` (nothing where it ran compiled, its last
    values where it ran as the original code) does not change the next nest's signature."""
    Kernel = load_source(GEMVER_LIKE.format(after=""))
    kernel = Kernel(backend="c", strict=True)
    A, x = np.ones((3, 3)), np.ones(3)
    kernel.kernel(A, x, 3)
    state = next(iter(kernel._asp_states.values()))
    for runner in state.runners[1:]:
        frames = [{"A": A, "x": x, "n": 3}, {"A": A, "x": x, "n": 3, "i": 2, "j": 2}]
        signatures = {runner.signature(runner._gather(frame)) for frame in frames}
        assert len(signatures) == 1, signatures


OUTER_WHILE = '''
from specializers.loopnest import LoopKernel

class Kernel(LoopKernel):
    def kernel(self, A, B, n, steps):
        it = 0
        while it < steps:
            for i in range(n):
                t = A[i] * 0.5
                B[i] = t + 1.0
            it += 1
{after}
'''


@pytest.mark.parametrize("after, outputs", [("", ()), ("        return t", ("t",))])
def test_a_scalar_the_nest_writes_first_is_an_input_only_where_it_is_read_after(after, outputs):
    """Inside a Python loop, a nest meets its own scalar ``t`` bound from the round before
    (where it ran as the original code): not read after, ``t`` is no input to split on."""
    Kernel = load_source(OUTER_WHILE.format(after=after))
    (nest,) = pipeline.analyse_kernel(Kernel.kernel.__wrapped__).nests
    assert nest.names.outputs == outputs
    assert nest.names.inputs == ("A", "B", "n") + outputs


# -- generated: sequential nests sharing loop variables, each way of reading them after ---------

PROLOGUES = ["", "        i = 7\n", "        j = -3\n        i = 2.5\n", "        t = 'text'\n"]
EPILOGUES = [
    "        return 0",
    "        return i",
    "        return (i, j)",
    "        del i\n        return 1",
    "        A[0, 0] = j\n        return 2",
    "        return sorted(k for k in locals() if len(k) == 1)",
    "        return eval('j')",
    "        f = lambda: i\n        return f()",
    "        return t",
    "        del t\n        return 3",
    "        return vars().get('t')",
    "        import inspect\n        return inspect.currentframe().f_locals.get('j')",
]
NEST_FORMS = [
    "        for {v} in range(n):\n            x[{v}] = x[{v}] + 1.0\n",
    "        for {v} in range(n):\n            for {w} in range(m):\n"
    "                A[{v}, {w}] = A[{v}, {w}] * 0.5 + x[{w}]\n",
    "        for {v} in range(m):\n            for {w} in range({v}):\n"
    "                A[{w}, {v}] = A[{w}, {v}] + 1.0\n",
    "        for {v} in range(n):\n            t = x[{v}] * 2.0\n            x[{v}] = t - 1.0\n",
]


def generated_kernels(count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        nests = []
        for _ in range(rng.randint(2, 3)):
            v, w = rng.sample(["i", "j"], 2)
            nests.append(rng.choice(NEST_FORMS).format(v=v, w=w))
        out.append("from specializers.loopnest import LoopKernel\n\n"
                   "class Kernel(LoopKernel):\n    def kernel(self, A, x, n, m):\n"
                   + rng.choice(PROLOGUES) + "".join(nests) + rng.choice(EPILOGUES) + "\n")
    return out


def outcome(call, n: int, m: int):
    A, x = np.arange(25.0).reshape(5, 5), np.linspace(0.0, 1.0, 5)
    try:
        result = call(A, x, n, m)
    except (NameError, UnboundLocalError) as exc:   # (UnboundLocalError is a NameError)
        result = type(exc).__name__
    return result, A, x


@pytest.mark.parametrize("source", generated_kernels(32))
def test_generated_nests_sharing_loop_variables_match_the_original_code(source):
    Kernel = load_source(source)
    for (n, m), backend in itertools.product([(0, 0), (0, 3), (4, 0), (3, 5)], ["c", None]):
        want = outcome(Kernel().original_kernel, n, m)
        kernel = Kernel(backend=backend, strict=True) if backend else Kernel()
        for _ in range(3):   # (the default's later calls: the cost model's own choices)
            got = outcome(kernel.kernel, n, m)
            assert got[0] == want[0], (source, n, m, backend)
            np.testing.assert_array_equal(got[1], want[1])
            np.testing.assert_array_equal(got[2], want[2])
