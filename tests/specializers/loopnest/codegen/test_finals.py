"""finals: the last value Python leaves in each loop variable, from the bounds alone."""

from specializers.loopnest.codegen.finals import UNCHANGED, computable, finals_function
from specializers.loopnest.pipeline import analyse_kernel


def nest_of(func):
    return analyse_kernel(func).nests[0]


def python_finals(n, m):
    """What plain Python leaves in i and j for the triangular nest below."""
    i = j = UNCHANGED
    for i in range(n):
        for j in range(i, m):
            pass
    return i, j


def test_triangular_inner_loop_takes_its_value_from_the_last_outer_iteration_it_ran():
    def k(self, A, n, m):
        for i in range(n):
            for j in range(i, m):
                A[i] = j

    analysis = nest_of(k)
    nest = analysis.nest
    assert computable(nest, ("i", "j"))
    finals = finals_function(nest, analysis.names.inputs, ("i", "j"))
    for n in range(0, 6):
        for m in range(0, 6):
            values = {"A": None, "n": n, "m": m}
            got = finals(*(values.get(name) for name in analysis.names.inputs))
            assert got == python_finals(n, m), (n, m)


def test_negative_steps():
    def k(self, A, n):
        for i in range(n - 1, -1, -2):
            A[i] = 0

    analysis = nest_of(k)
    finals = finals_function(analysis.nest, analysis.names.inputs, ("i",))
    for n in range(0, 7):
        want = list(range(n - 1, -1, -2))
        values = {"A": None, "n": n}
        got = finals(*(values.get(name) for name in analysis.names.inputs))
        assert got == ((want[-1],) if want else (UNCHANGED,)), n


def test_a_loop_under_an_if_or_sharing_its_name_is_not_computable():
    def under_if(self, A, n):
        for i in range(n):
            if A[i] > 0:
                for j in range(n):
                    A[j] += 1

    def siblings(self, A, n):
        for i in range(n):
            for j in range(n):
                A[j] += 1
            for j in range(i):
                A[j] -= 1

    assert not computable(nest_of(under_if).nest, ("j",))
    assert computable(nest_of(under_if).nest, ("i",))
    assert not computable(nest_of(siblings).nest, ("j",))
