"""visitors: one NodeVisitor/NodeTransformer for Python ast and DAST; inputs never modified."""

import ast
from dataclasses import dataclass

from asp_core.dast import Node
from asp_core.visitors import NodeTransformer, NodeVisitor, copy_location, iter_child_nodes


@dataclass(frozen=True)
class Leaf(Node):
    value: int


@dataclass(frozen=True)
class Pair(Node):
    left: Node
    right: Node


@dataclass(frozen=True)
class Seq(Node):
    items: tuple


class CountLeaves(NodeVisitor):
    def __init__(self):
        self.total = 0

    def visit_Leaf(self, node):
        self.total += node.value


class DoubleLeaves(NodeTransformer):
    def visit_Leaf(self, node):
        return node.replace(value=node.value * 2)


class DropZeros(NodeTransformer):
    def visit_Leaf(self, node):
        if node.value == 0:
            return None
        if node.value == 9:
            return [Leaf(4), Leaf(5)]
        return node


def test_visitor_on_dast():
    v = CountLeaves()
    v.visit(Pair(Leaf(1), Seq((Leaf(2), Leaf(3)))))
    assert v.total == 6


def test_transformer_on_dast_shares_unchanged_parts():
    tree = Pair(Leaf(1), Seq((Leaf(2),)))
    out = DoubleLeaves().visit(tree)
    assert out == Pair(Leaf(2), Seq((Leaf(4),)))
    assert tree == Pair(Leaf(1), Seq((Leaf(2),)))  # untouched
    keep = Seq(())
    assert DoubleLeaves().visit(keep) is keep


def test_transformer_drops_and_splices_in_sequences():
    out = DropZeros().visit(Seq((Leaf(0), Leaf(1), Leaf(9))))
    assert out == Seq((Leaf(1), Leaf(4), Leaf(5)))


class RenameX(NodeTransformer):
    def visit_Name(self, node):
        if node.id == "x":
            return copy_location(ast.Name(id="y", ctx=node.ctx), node)
        return node


def test_python_ast_is_copied_not_mutated():
    tree = ast.parse("z = x + 1")
    before = ast.dump(tree, include_attributes=True)
    out = RenameX().visit(tree)
    assert ast.unparse(out) == "z = y + 1"
    assert ast.dump(tree, include_attributes=True) == before
    assert out.body[0].value.left.lineno == 1


def test_visitor_on_python_ast():
    class Names(NodeVisitor):
        def __init__(self):
            self.names = []

        def visit_Name(self, node):
            self.names.append(node.id)

    v = Names()
    v.visit(ast.parse("a = b + c[d]"))
    assert v.names == ["a", "b", "c", "d"]
    assert len(list(iter_child_nodes(ast.parse("a = 1").body[0]))) == 2
