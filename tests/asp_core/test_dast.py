"""dast: frozen nodes with children, replace, walk and a canonical dump."""

from dataclasses import FrozenInstanceError, dataclass

import pytest

from asp_core.dast import Node
from asp_core.errors import SourceLocation


@dataclass(frozen=True)
class Num(Node):
    value: float


@dataclass(frozen=True)
class Add(Node):
    left: Node
    right: Node


@dataclass(frozen=True)
class Block(Node):
    name: str
    items: tuple = ()


def sample():
    return Block("b", (Add(Num(1.0), Num(2.0), loc=SourceLocation("f.py", 3, 4)), Num(0.5)))


def test_frozen_and_compared_by_value_ignoring_location():
    a, b = sample(), sample()
    assert a == b and hash(a) == hash(b)
    assert Num(1.0, loc=SourceLocation("x", 1)) == Num(1.0)
    with pytest.raises(FrozenInstanceError):
        a.name = "c"


def test_children_and_walk():
    b = sample()
    assert [type(c).__name__ for c in b.children()] == ["Add", "Num"]
    assert [type(n).__name__ for n in b.walk()] == ["Block", "Add", "Num", "Num", "Num"]


def test_replace_returns_a_new_node():
    b = sample()
    c = b.replace(name="c")
    assert c.name == "c" and b.name == "b" and c.items is b.items


def test_dump_is_canonical_and_excludes_locations():
    text = sample().dump(indent=None)
    assert text == ("Block(name='b', items=(Add(left=Num(value=1.0), right=Num(value=2.0)), "
                    "Num(value=0.5)))")
    assert "f.py" not in text
    assert Block("x", (Num(1.0),)).dump(None) == "Block(name='x', items=(Num(value=1.0),))"
    assert "\n" in Block("long", tuple(Num(float(i)) for i in range(30))).dump()


def test_dump_refuses_non_data_fields():
    with pytest.raises(TypeError, match="data only"):
        Block("x", (object(),)).dump()
