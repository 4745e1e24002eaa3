"""examples.elementwise.lowering: Python AST -> element-wise DAST, or UnsupportedConstruct."""

import inspect
import math

import pytest

from asp_core.errors import UnsupportedConstruct
from asp_core.frontend import function_ast
from examples.elementwise import dast as d
from examples.elementwise.lowering import lower

LIMIT = 2


def accepted(x, y):
    t = x * LIMIT - y
    return math.sqrt(abs(t)) if t > 0 and not y < 0 else max(t, -y) ** 2


def uses_loop(x):
    s = 0.0
    for i in range(3):
        s += x
    return s


def calls_unknown(x):
    return print(x)


def test_lowering_builds_the_dast():
    f = lower(function_ast(accepted))
    assert f.params == ("x", "y") and [let.name for let in f.lets] == ["t"]
    assert f.lets[0].value == d.BinOp("-", d.BinOp("*", d.Param("x"), d.Const(2)), d.Param("y"))
    assert isinstance(f.result, d.IfExp) and isinstance(f.result.test, d.BoolOp)
    assert f.lets[0].loc.line == inspect.getsourcelines(accepted)[1] + 1


def test_lambda():
    f = lower(function_ast(lambda a: -a + math.pi))
    assert f.result == d.BinOp("+", d.UnaryOp("-", d.Param("a")), d.Const(math.pi))


@pytest.mark.parametrize("func, construct, offset", [
    (uses_loop, "For", 2),
    (calls_unknown, "call of print", 1),
])
def test_unsupported_constructs_name_their_line(func, construct, offset):
    with pytest.raises(UnsupportedConstruct) as info:
        lower(function_ast(func))
    assert construct in str(info.value)
    assert info.value.line == inspect.getsourcelines(func)[1] + offset
    assert info.value.file == __file__


def test_and_or_must_combine_truth_values():
    with pytest.raises(UnsupportedConstruct, match="and/or"):
        lower(function_ast(lambda a, b: a and b))


def test_reassignment_and_missing_return():
    def twice(x):
        t = x
        t = t + 1
        return t

    def no_return(x):
        t = x  # noqa: F841

    with pytest.raises(UnsupportedConstruct, match="assigned twice"):
        lower(function_ast(twice))
    with pytest.raises(UnsupportedConstruct, match="return"):
        lower(function_ast(no_return))


def test_constants_fold_with_python_meaning():
    assert lower(function_ast(lambda a: a + 7 // 2)).result == d.BinOp("+", d.Param("a"), d.Const(3))
    with pytest.raises(UnsupportedConstruct, match="ZeroDivisionError"):
        lower(function_ast(lambda a: a + 2.5 % (3 - 3)))
