"""examples.elementwise.dast: the example's nodes are plain frozen DAST nodes."""

from examples.elementwise import dast as d


def test_nodes_compare_by_value_and_dump():
    f = d.Function("f", ("x",), (d.Let("t", d.Param("x")),), d.BinOp("+", d.Local("t"), d.Const(1)))
    assert f == d.Function("f", ("x",), (d.Let("t", d.Param("x")),),
                           d.BinOp("+", d.Local("t"), d.Const(1)))
    assert "BinOp(op='+', left=Local(name='t'), right=Const(value=1))" in f.dump(None)
    assert [type(n).__name__ for n in f.walk()] == ["Function", "Let", "Param", "BinOp", "Local",
                                                    "Const"]
