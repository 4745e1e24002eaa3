"""pipeline: the static passes per nest, rejected nests, array ranks, memoization."""

from asp_core.errors import UnsupportedConstruct
from specializers.loopnest import pipeline


def test_accepted_and_rejected_nests():
    def kernel(self, A, B, n):
        for i in range(n):
            A[i] = B[i, 0]
        for i in range(n):
            A[i] = A
        for i in range(n):
            s = A[i]
        return s

    analysis = pipeline.analyse_kernel(kernel)
    first, second, third = analysis.nests
    assert isinstance(first, pipeline.NestAnalysis) and first.ranks == {"A": 1, "B": 2}
    assert isinstance(second, pipeline.RejectedNest)
    assert isinstance(second.error, UnsupportedConstruct)
    assert third.required == () and third.names.outputs == ("s",)   # (nothing reads i after)
    assert pipeline.analyse_kernel(kernel) is analysis


def test_partial_indexing_is_rejected():
    def kernel(self, A, n):
        for i in range(n):
            A[i, 0] = A[i]

    (rejected,) = pipeline.analyse_kernel(kernel).nests
    assert "partial indexing" in str(rejected.error)


def test_required_inputs():
    def kernel(self, A, n):
        for i in range(n):
            s += A[i]  # noqa: F821 - s comes from outside the nest
        return s

    assert pipeline.analyse_kernel(kernel).nests[0].required == ("s",)


def _sum_kernel(terms: int):
    from specializers.loopnest.checking import load_source

    source = ("from specializers.loopnest import LoopKernel\n\n\nclass Kernel(LoopKernel):\n"
              "    def kernel(self, A, n):\n        for i in range(n):\n            A[i] = " +
              " + ".join(f"A[i] * {k}.0" for k in range(terms)) + "\n")
    return load_source(source)


def test_a_nest_deeper_than_the_analyses_take_runs_as_python_with_the_line():
    import numpy as np
    import pytest

    from asp_core.errors import SpecializationError
    from asp_core.specializer import FallbackWarning

    Kernel = _sum_kernel(2000)   # a tree 2000 levels deep: RecursionError in any recursive pass
    with pytest.raises(SpecializationError, match=r":7:\d+: .*2005 levels deep"):
        Kernel(strict=True).kernel(np.ones(4), 4)
    got, want = np.ones(4), np.ones(4)
    with pytest.warns(FallbackWarning, match="levels deep"):
        Kernel().kernel(got, 4)
    Kernel().original_kernel(want, 4)
    assert (got == want).all() and got[0] == sum(range(2000))


def test_long_expressions_up_to_the_limit_compile():
    import numpy as np

    terms = pipeline.MAX_AST_DEPTH - 10
    Kernel = _sum_kernel(terms)
    for backend in ("c", "python"):
        got = np.ones(4)
        kernel = Kernel(backend=backend, strict=True)
        kernel.kernel(got, 4)
        assert got[0] == sum(range(terms)) and kernel.last_call.nests[0].backend == backend
