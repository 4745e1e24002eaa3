"""lowering: Python AST of a top-level loop -> DAST, or UnsupportedConstruct naming a line."""

import inspect
import math

import numpy as np
import pytest

from asp_core.errors import UnsupportedConstruct
from specializers.loopnest import dast as d
from specializers.loopnest.frontend import kernel_source
from specializers.loopnest.lowering import lower_nest

THRESHOLD = 3


def lower(func, index=0):
    src = kernel_source(func)
    return lower_nest(src.ctx, src.nests[index], index)


def first_statement(func):
    return d.statements(lower(func).loop)[0]


def test_range_forms():
    def k(self, A, n, m, s):
        for i in range(n):
            for j in range(1, m):
                for q in range(m, 0, -s):
                    A[i, j, q] = 0

    nest = lower(k)
    i, j, q = d.loops(nest.loop)
    assert (i.start, i.stop, i.step) == (d.Const(0), d.Var("n"), d.Const(1))
    assert (j.start, j.stop, j.step) == (d.Const(1), d.Var("m"), d.Const(1))
    assert q.step == d.UnaryOp("-", d.Var("s")) and [l.lid for l in (i, j, q)] == [0, 1, 2]


def test_both_subscript_spellings_are_one_element():
    def k(self, A, B):
        for i in range(3):
            for j in range(3):
                A[i][j] = B[i, j] + B[(i, j)]

    st = first_statement(k)
    ref = d.ArrayRef("B", (d.Var("i"), d.Var("j")))
    assert st.target == d.ArrayRef("A", (d.Var("i"), d.Var("j")))
    assert st.value == d.BinOp("+", ref, ref)


def test_augmented_assignment_keeps_the_operator_and_full_value():
    def k(self, A, n):
        s = 0
        for i in range(n):
            s -= A[i]

    st = first_statement(k)
    assert st.aug == "-" and st.target == d.Var("s")
    assert st.value == d.BinOp("-", d.Var("s"), d.ArrayRef("A", (d.Var("i"),)))


def test_shapes_len_self_attributes_and_constants():
    def k(self, A, n):
        for i in range(A.shape[0]):
            A[i] = len(A) + self.scale * math.pi + np.e + THRESHOLD + A.shape[-1]

    value = first_statement(k).value
    names = {type(n).__name__ for n in value.walk()}
    assert d.Shape("A", 0) in list(value.walk()) and d.Shape("A", -1) in list(value.walk())
    assert d.Var("self.scale") in list(value.walk()) and d.Var("THRESHOLD") in list(value.walk())
    assert d.Const(math.pi) in list(value.walk()) and "Call" not in names


def test_calls_resolve_by_object_not_by_spelling():
    from math import sqrt as root

    def k(self, A, n):
        for i in range(n):
            A[i] = root(A[i]) + np.sqrt(A[i]) + abs(min(A[i], 1.0, 2.0))

    calls = [n.func for n in first_statement(k).value.walk() if isinstance(n, d.Call)]
    assert calls == ["math.sqrt", "numpy.sqrt", "abs", "min"]


def test_comparison_chains_and_conditions():
    def k(self, A, n):
        for i in range(n):
            if 0 < A[i] <= 1:
                A[i] = 1 if A[i] else 0

    nest = lower(k)
    branch = nest.loop.body[0]
    assert isinstance(branch, d.If) and isinstance(branch.test, d.BoolOp)
    assert [c.op for c in branch.test.values] == ["<", "<="]
    ifexp = branch.body[0].value
    assert ifexp.test == d.Call("bool", (d.ArrayRef("A", (d.Var("i"),)),))


def _line(func, offset):
    return inspect.getsourcelines(func)[1] + offset


def k_while(self, A, n):
    for i in range(n):
        while A[i] > 0:
            A[i] -= 1
        else:
            n = 1


def k_try(self, A, n):
    for i in range(n):
        try:
            A[i] = 1
        except ValueError:
            pass


def k_call(self, A, n):
    for i in range(n):
        print(A[i])


def k_unknown(self, A, n):
    for i in range(n):
        A[i] = sorted(A)


def k_slice(self, A, n):
    for i in range(n):
        A[i] = A[1:3]


def k_iter(self, A, n):
    for x in A:
        n = x


def k_tuple(self, A, n):
    for i in range(n):
        a, b = 1, 2


def k_attr(self, A, n):
    for i in range(n):
        self.total = i


def k_string(self, A, n):
    for i in range(n):
        A[i] = "x"


def k_else(self, A, n):
    for i in range(n):
        A[i] = 0
    else:
        n = 1


def k_reuse(self, A, n):
    for i in range(n):
        for i in range(n):
            A[i] = 0


def k_is(self, A, n):
    for i in range(n):
        A[i] = A[i] is None


@pytest.mark.parametrize("func, construct, offset", [
    (k_while, "while-else", 2), (k_try, "try statement", 2), (k_call, "call", 2),
    (k_unknown, "call", 2), (k_slice, "slice", 2), (k_iter, "loop iterator", 1),
    (k_tuple, "tuple assignment", 2), (k_attr, "attribute write", 2),
    (k_string, "constant", 2), (k_else, "for-else", 1), (k_reuse, "loop variable reuse", 2),
    (k_is, "comparison", 2),
])
def test_unsupported_constructs_name_construct_and_line(func, construct, offset):
    with pytest.raises(UnsupportedConstruct) as info:
        lower(func)
    assert info.value.construct.startswith(construct.split()[0])
    assert construct in str(info.value)
    assert info.value.line == _line(func, offset) and info.value.file == __file__


def test_reserved_names():
    def k(self, A, n):
        for i in range(n):
            __asp_x = 1  # noqa: F841

    with pytest.raises(UnsupportedConstruct, match="reserved"):
        lower(k)
