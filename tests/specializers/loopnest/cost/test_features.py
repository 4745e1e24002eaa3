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



def test_operations_on_python_scalars_are_counted_apart_where_told():
    aug = features(0)[0]
    (nest,) = analyse_kernel(kernel).nests[:1]
    told = statement_features(nest.statements[0], weak=lambda expr: True)
    assert told["arith_py"] == aug["arith"] and told["arith"] == 0
    assert statement_features(nest.statements[0], weak=lambda expr: False) == aug


def test_the_call_types_tell_python_scalars_from_numpy_ones():
    import numpy as np

    from specializers.loopnest import LoopKernel

    class Mixed(LoopKernel):
        def kernel(self, A, x, y):
            for i in range(A.shape[0]):
                t = x * y + 1.0        # Python floats: two operations at the interpreter's speed
                A[i] = A[i] * t        # a NumPy scalar times a Python float: NumPy's

    k = Mixed(backend="python", strict=True)
    k.kernel(np.ones(8), 2.0, 3.0)
    runner = k._asp_current.runners[0]
    profile = runner.estimator.profile(runner.signature(runner.last_inputs))
    first, second = (s.features for s in profile.statements)
    assert (first["arith_py"], first["arith"]) == (2, 0)
    assert (second["arith_py"], second["arith"]) == (0, 1)


def chains(self, w, A, x, idx, n, s, t):
    for i in range(n):
        for j in range(n):
            w[i] = w[i] + A[i, j] * x[j]           # 1: the add waits for the last one
            s = s * 0.5 + A[i, j]                  # 2: (s * 0.5) + ...
            t = max(t, A[i, j])                    # 0: through a call (a cycle or two)
            w[idx[j]] += 1.0                       # 1: the same element, written as read
            x[j] = A[i, j] + w[i]                  # 0: x[j] is not read
            A[i, j] = A[i, j - 1] * 2.0            # 0: another element (not counted)
            w[i] = x[j] * (x[j] - (w[i] + 1.0))    # 3: * over - over +
            A[i, int(w[i])] = 1.0 + A[i, int(w[i])]   # 1: read as the element written
            s = -s if A[i, j] > 0.5 else s         # 0: through a selection


def test_recurrence_ops_count_the_operations_from_the_targets_read_to_its_write():
    from specializers.loopnest.cost.features import recurrence_ops

    nest = analyse_kernel(chains).nests[0]
    assert [recurrence_ops(st) for st in nest.statements] == [1, 2, 0, 1, 0, 0, 3, 1, 0]
