"""scalars: private, lastprivate, reduction (also under if) and carried, per loop."""

from specializers.loopnest.pipeline import analyse_kernel


def classes(func):
    info = analyse_kernel(func).nests[0].scalars
    loops = {l.lid: l.var for l in analyse_kernel(func).nests[0].access.loops}
    return {(c.name, loops[c.lid]): (c.kind, c.op, c.lastprivate) for c in info.classes}, info


def test_temporary_private_reduction_inner_and_lastprivate():
    def k(self, A, B, n, m):
        for i in range(n):
            s = 0.0
            for j in range(m):
                t = A[i, j] * 2
                s += t
            B[i] = s

    c, info = classes(k)
    assert c[("t", "j")] == ("private", None, False)
    assert c[("t", "i")] == ("private", None, False)
    assert c[("s", "j")] == ("reduction", "+", False)
    assert c[("s", "i")] == ("private", None, False)
    assert info.overall("s") == "reduction" and info.live_out == ()


def test_reduction_operators_and_under_if():
    def k(self, A, n):
        total, prod, hi, lo, neg = 0.0, 1.0, -1e9, 1e9, 0
        for i in range(n):
            if A[i] > 0:
                total += A[i]
            prod = prod * A[i]
            hi = max(hi, A[i])
            lo = min(A[i], lo)
            neg -= 1
            neg += 2
        return total, prod, hi, lo, neg

    c, info = classes(k)
    assert c[("total", "i")][:2] == ("reduction", "+")
    assert c[("prod", "i")][:2] == ("reduction", "*")
    assert c[("hi", "i")][:2] == ("reduction", "max")
    assert c[("lo", "i")][:2] == ("reduction", "min")
    assert c[("neg", "i")][:2] == ("reduction", "+")
    assert set(info.live_out) == {"total", "prod", "hi", "lo", "neg"}


def test_carried_and_lastprivate():
    def k(self, A, n):
        prev = 0.0
        for i in range(n):
            A[i] = A[i] + prev   # reads prev written by the previous iteration
            prev = A[i]
            last = A[i] * 2      # written in every iteration, read after the loop
            if A[i] > 1:
                maybe = A[i]     # written only sometimes, read after the loop
        return last, maybe

    c, _ = classes(k)
    assert c[("prev", "i")][0] == "carried"
    assert c[("last", "i")] == ("private", None, True)
    assert c[("maybe", "i")][0] == "carried"


def test_mixed_reduction_is_carried():
    def k(self, A, n):
        s = 0.0
        for i in range(n):
            s += A[i]
            A[i] = s             # a prefix sum: s is read, not only reduced
        return s

    c, _ = classes(k)
    assert c[("s", "i")][0] == "carried"


def test_predicated_definition_covers_reads_under_the_same_predicate():
    def k(self, A, B, n):
        for i in range(n):
            if A[i] > 0:
                t = A[i]
                B[i] = t * t

    c, _ = classes(k)
    assert c[("t", "i")][0] == "private"


def test_definition_covers_reads_in_a_nested_branch_but_not_the_other_way():
    def k(self, A, B, n):
        for i in range(n):
            if A[i] > 0:
                t = A[i] * 2
                if t > 1:
                    B[i] = t          # runs only where the outer branch ran: t is written
            if A[i] < 0:
                if B[i] > 0:
                    u = B[i]
                B[i] = u              # the outer branch alone does not write u

    c, _ = classes(k)
    assert c[("t", "i")][0] == "private"
    assert c[("u", "i")][0] == "carried"


def test_a_nest_runs_when_a_temporary_it_writes_first_is_unbound():
    """The kernel never binds t before the nest: the nest must not need its value (it writes t
    before every read, the read being in a branch nested in the writing one)."""
    import numpy as np

    from specializers.loopnest import LoopKernel

    class K(LoopKernel):
        def kernel(self, A, B, n):
            for i in range(n):
                if A[i] > 0:
                    t = A[i] % 3.0
                    if t > 1:
                        B[i] += t
                else:
                    t = 1.0

    A = np.linspace(-2, 5, 40)
    for backend in ("python", "c", "openmp"):
        B, want = np.zeros(40), np.zeros(40)
        K(backend=backend, strict=True).kernel(A, B, 40)
        K(backend="python").original_kernel(A, want, 40)
        assert np.array_equal(B, want), backend
