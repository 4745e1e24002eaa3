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
    assert third.required == () and third.names.outputs == ("s", "i")
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
