"""dast: loop-nest nodes are frozen, comparable, dumpable; statements() and loops() in order."""

from specializers.loopnest import dast as d


def test_helpers_in_source_order():
    inner = d.Loop("j", d.Const(0), d.Var("n"), d.Const(1),
                   (d.Assign(d.Var("s"), d.Const(1), 1),), 1)
    outer = d.Loop("i", d.Const(0), d.Var("n"), d.Const(1),
                   (d.Assign(d.Var("t"), d.Const(0), 0), inner, d.Assign(d.Var("u"), d.Const(2), 2)), 0)
    assert [s.sid for s in d.statements(outer)] == [0, 1, 2]
    assert [l.var for l in d.loops(outer)] == ["i", "j"]
    assert outer == outer.replace() and "Loop(var='i'" in outer.dump(None)
    assert d.Nest(0, outer).loop is outer
