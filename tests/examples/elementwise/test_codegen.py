"""examples.elementwise.codegen: DAST -> C through the example's own template."""

import math

from asp_core.frontend import function_ast
from examples.elementwise import codegen
from examples.elementwise.lowering import lower


def f(x, y):
    t = x // y
    return math.exp(t) + max(x, y) % 2.0


def test_template_renders_readable_c(tmp_path):
    src = codegen.c_source(lower(function_ast(f)), "entry", "header text")
    assert src.startswith("/* header text */")
    assert "const double v_t = asp_floordiv(p_x, p_y);" in src
    assert "asp_check1(exp(v_t), v_t, 1, err)" in src and "asp_mod(asp_max(p_x, p_y), 2.0)" in src
    assert "int entry(int64_t n, double *restrict out, const double *restrict a_x" in src
    assert codegen.cdef(lower(function_ast(f)), "entry") == \
        "int entry(int64_t n, void *out, void *x, void *y);"


def test_constants():
    printer = codegen.CExpression()
    from examples.elementwise import dast as d
    assert printer.visit(d.Const(math.inf)) == "INFINITY"
    assert printer.visit(d.Const(-math.inf)) == "(-INFINITY)"
    assert printer.visit(d.Const(math.nan)) == "NAN"
    assert printer.visit(d.Const(0.1)) == "0.1"
