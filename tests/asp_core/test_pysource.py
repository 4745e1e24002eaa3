"""pysource: the small generated Python functions (a gather of a nest's inputs, the call of a
compiled entry point) are valid Python that does what their items say."""

import numpy as np
import pytest

from asp_core.pysource import returning


def test_a_tuple_and_a_call():
    namespace = {"entry": lambda *a: sum(a)}
    exec(returning("pick", ("L", "G"), ["L['a']", "G['b'] * 2"]), namespace)
    assert namespace["pick"]({"a": 1}, {"b": 3}) == (1, 6)
    exec(returning("call", ("inputs",), ["inputs[0]", "inputs[1]"], "entry"), namespace)
    assert namespace["call"]((2, 5)) == 7
    exec(returning("empty", (), []), namespace)
    assert namespace["empty"]() == ()


@pytest.mark.parametrize("name,params,callee", [("a b", (), ""), ("f", ("x)",), ""),
                                                ("f", ("x",), "g(1)")])
def test_names_must_be_identifiers(name, params, callee):
    with pytest.raises(ValueError):
        returning(name, params, [], callee)


def test_the_gather_and_the_call_of_a_real_nest():
    """A nest reading a local array, an attribute and a global runs compiled through both."""
    from specializers.loopnest import LoopKernel
    from specializers.loopnest.runtime import gather_source

    class Scale(LoopKernel):
        def kernel(self, a, b, n):
            for i in range(n):
                b[i] = a[i] * self.k + OFFSET

    kernel = Scale(backend="c", strict=True)
    kernel.k = 3.0
    a, b = np.arange(5.0), np.zeros(5)
    kernel.kernel(a, b, 5)
    assert np.array_equal(b, 3.0 * a + OFFSET)
    analysis = kernel._asp_current.kernel_class.analysis
    text = gather_source(analysis.nests[0], analysis.source.ctx, "gather_0")
    assert "L['a']" in text and "L['self'].k" in text and "G['OFFSET']" in text
    compile(text, "gather", "exec")


OFFSET = 0.5
