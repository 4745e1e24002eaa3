"""rewrite: nests become hook calls with the original code as fallback; the rest is untouched."""

import traceback

import pytest

from asp_core.frontend import function_ast
from specializers.loopnest.frontend import kernel_source
from specializers.loopnest.rewrite import NO_VALUE, RUN_ORIGINAL, rewrite_kernel

FACTOR = 10


def make(func, outputs, hooks):
    src = kernel_source(func)
    return rewrite_kernel(src.fa, src.nests, outputs, hooks)


def test_hook_results_are_written_back_and_unbound_stays_unbound():
    def kernel(self, n):
        before = 1
        for i in range(n):
            s = i
        return before, s, i

    seen = []

    def hook(local_values):
        seen.append(dict(local_values))
        return (42, 7)

    f = make(kernel, [("s", "i")], [hook])
    assert f(None, 3) == (1, 42, 7)
    assert seen[0]["before"] == 1 and seen[0]["n"] == 3
    g = make(kernel, [("s", "i")], [lambda L: (NO_VALUE, NO_VALUE)])
    with pytest.raises(UnboundLocalError):
        g(None, 3)


def test_fallback_runs_the_original_loop_with_its_line_numbers():
    def kernel(self, n):
        total = 0
        for i in range(n):
            total += FACTOR // (i - 2)
        return total

    f = make(kernel, [("total", "i")], [lambda L: RUN_ORIGINAL])
    with pytest.raises(ZeroDivisionError) as info:
        f(None, 5)
    frame = traceback.extract_tb(info.tb)[-1]
    assert frame.filename == __file__
    assert frame.lineno == kernel.__code__.co_firstlineno + 3
    assert f(None, 2) == kernel(None, 2)


def test_closures_globals_and_super_survive():
    offset = 5

    class Base:
        def kernel(self, n):
            return n

    class Child(Base):
        def kernel(self, n):
            acc = super().kernel(n)
            for i in range(n):
                acc += offset + FACTOR
            return acc

    fa = function_ast(Child.kernel)
    src = kernel_source(Child.kernel)
    f = rewrite_kernel(fa, src.nests, [("acc", "i")], [lambda L: RUN_ORIGINAL])
    assert f(Child(), 3) == Child().kernel(3) == 3 + 3 * 15
