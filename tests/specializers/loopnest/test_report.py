"""report: last_call records and the explain() text."""

import numpy as np

from specializers.loopnest import LoopKernel
from specializers.loopnest.report import Report


class K(LoopKernel):
    def kernel(self, A, n):
        s = 0.0
        for i in range(n):
            for j in range(n):
                s += A[i, j] * self.w
        for i in range(n):
            x, y = i, i  # noqa: F841
        return s


def test_records_and_explain():
    k = K(backend="python")
    k.w = 2.0
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = k.explain(np.ones((2, 2)), 2)
    assert isinstance(report, Report)
    text = str(report)
    assert "nest 0 at line" in text and "ran on python" in text
    assert "s in loop j: reduction (+)" in text and "reads  A[i, j]" in text
    assert "tuple assignment" in text and "not specialized" in text
    call = k.last_call
    assert call.nests[0].scalars == {"s": "reduction"}
    assert call.nests[1].parallel_loops == () and call.nests[1].statements == ()


def test_records_are_made_once_per_schedule_and_stay_apart():
    """The statements' text and the scalars are made once per schedule (reading ``last_call``
    printed them every time), and each record holds its own scalars."""
    k = K(backend="c", strict=False)
    k.w = 2.0
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        k.kernel(np.ones((3, 3)), 3)
    first, second = k.last_call, k.last_call
    assert first == second and first.nests[0].statements is second.nests[0].statements
    first.nests[0].scalars["s"] = "changed"
    assert k.last_call.nests[0].scalars == {"s": "reduction"}
