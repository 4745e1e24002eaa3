"""Loops after an exit, generated: a loop that follows an ``if`` that may ``continue`` or
``break`` runs only where the iteration went on, so the value its variable keeps after the nest
depends on data (``lastvalues``: it is kept as the loop runs, not computed from the bounds); a
loop after a ``break`` or ``continue`` that always runs is dead code, dropped, and the loops
are numbered again (``ifconvert.renumber``). Found by the GPU run's generated exits (a ``k``
of 5 where Python kept -1; an internal IndexError for a dropped loop). Every shape, at
thresholds where the later loop never runs, always runs, or runs in some iterations (the last
or not), on every backend, against Python."""

import textwrap

import numpy as np
import pytest

from .generators import load_kernel
from .helpers import assert_same_as_python
from .test_exits import BACKENDS

#: What comes before the later loop in the body of ``for i``: each may leave the iteration
#: where ``a[i] > t``, or where it is not.
EXITS = {
    "continue": "if a[i] > t:\n    continue",
    "break": "if a[i] > t:\n    break",
    "continue in else": "if a[i] > t:\n    b[i] = 1.0\nelse:\n    continue",
    "continue in a nested if": "if a[i] > t - 100.0:\n    if a[i] > t:\n        continue",
    "continue in elif": "if a[i] > t + 100.0:\n    b[i] = 2.0\nelif a[i] > t:\n    continue",
    "continue, then an if": "if a[i] > t:\n    continue\nif a[i] < 0.0:\n    b[i] = 3.0",
    "continue under a loop": "for j in range(n):\n    if a[j] > t:\n        continue\n"
                             "    b[j] += 1.0",
}

#: The later loop: its variable's last value is returned.
LATER = {
    "a loop": "for k in range(n):\n    b[k] += a[i]",
    "a nest": "for k in range(n):\n    for m in range(2):\n        b[k] += m",
    "a loop in an if": "if a[i] >= 0.0:\n    for k in range(i, n):\n        b[k] += 1.0",
}

#: Code that always leaves the iteration, then loops that never run (dropped).
DEAD = {
    "break in both branches": "if a[i] > t:\n    b[i] = 1.0\n    break\nelse:\n    break\n"
                              "for k in range(n):\n    b[k] = -1.0",
    "continue in both branches": "if a[i] > t:\n    continue\nelse:\n    b[i] = 1.0\n"
                                 "    continue\nfor k in range(n):\n    b[k] = -1.0\n"
                                 "    for m in range(n):\n        b[m] = -2.0",
    "a bare continue": "b[i] = 4.0\ncontinue\nfor k in range(n):\n    b[k] = -1.0",
}


def kernel_source(before: str, later: str) -> str:
    body = textwrap.indent(before + "\n" + later, " " * 12)
    return ("from specializers.loopnest import LoopKernel\n\n\n"
            "class Kernel(LoopKernel):\n"
            "    def kernel(self, a, b, t, n):\n"
            "        i = j = k = m = -1\n"
            "        for i in range(n):\n"
            f"{body}\n"
            "        return i, j, k, m\n")


#: Thresholds over a = 0, 1, ..., n - 1 (n = 6): no iteration exits, all do, the last does
#: not, only the last does.
THRESHOLDS = [100.0, -1.0, 4.5, 3.5]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("later", list(LATER))
@pytest.mark.parametrize("exit_", list(EXITS))
def test_the_last_values_of_a_loop_after_an_exit(exit_, later, backend):
    Kernel, _ = load_kernel(kernel_source(EXITS[exit_], LATER[later]))
    kernel = Kernel(backend=backend, strict=True)
    for t in THRESHOLDS:
        for n in (0, 1, 6):
            assert_same_as_python(kernel, np.arange(float(n)), np.zeros(n), t, n)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dead", list(DEAD))
def test_dead_loops_after_an_exit_are_dropped(dead, backend):
    Kernel, _ = load_kernel(kernel_source(DEAD[dead], "for j in range(n):\n    b[j] += 1.0"))
    kernel = Kernel(backend=backend, strict=True)
    for t in THRESHOLDS:
        for n in (0, 1, 6):
            assert_same_as_python(kernel, np.arange(float(n)), np.zeros(n), t, n)
