"""cost.features: operation counts per statement instance."""

from specializers.loopnest.cost.features import statement_features
from specializers.loopnest.pipeline import analyse_kernel


def kernel(self, A, B, n, s):
    for i in range(n):
        A[i] += B[i] * 2.0
        if B[i] > 0.5:
            A[i - 1] = math.exp(B[i]) + max(A[i], 1.0)
        s += float(A[i]) // 3.0
    for i in range(n):
        for j in range(n):
            B[i * n + j] = A[i, j] ** 2


import math  # noqa: E402


def features(index: int):
    nest = analyse_kernel(kernel).nests[index]
    return [statement_features(st) for st in nest.statements]


def test_counts_by_kind():
    aug, predicate, guarded, reduction = features(0)
    assert (aug["load"], aug["store"], aug["arith"]) == (2, 1, 2)   # A[i] = A[i] + B[i]*2.0
    assert predicate["cmp"] == 1 and predicate["load"] == 1
    assert guarded["math"] == 1 and guarded["math_cheap"] == 1 and guarded["index"] == 1
    assert guarded.math_calls == ("math.exp",) and guarded["scalar"] >= 1  # its predicate
    assert reduction["conv"] == 1 and reduction["div"] == 1 and reduction["store"] == 0


def test_subscripts_and_index_arithmetic():
    (stmt,) = features(1)
    assert stmt["subscript"] == 1                 # A[i, j]: one subscript beyond the first
    assert stmt["index"] == 2 and stmt["pow"] == 1  # i * n + j
