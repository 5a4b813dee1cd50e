"""The syntax tree's `Node` classes behave as the frozen, slotted dataclasses they replaced
(runtime/language/syntax/nodes.py): fields in order with defaults, equality and a hash that
leave the span out, a repr without it, no assignment, copies, pickling and `replace`."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from runtime.language.syntax import ast as A
from runtime.language.syntax import parse
from runtime.language.syntax.nodes import replace

HERE = A.Span(3, 5, 3, 9)


def test_fields_in_order_with_defaults_and_keywords() -> None:
    field = A.TField("age", A.TName("number"))
    assert (field.name, field.optional, field.span) == ("age", False, A.NO_SPAN)
    assert A.TField(name="age", type=A.TName("number"), optional=True, span=HERE).span == HERE
    assert A.TField._fields == ("name", "type", "optional", "span")
    with pytest.raises(TypeError):
        A.TField("age")  # type: ignore[call-arg]


def test_equality_and_hash_leave_the_span_out_but_not_other_fields() -> None:
    a, b = A.TName("x", HERE), A.TName("x")
    assert a == b and hash(a) == hash(b)
    assert A.TName("x") != A.TName("y")
    assert A.TName("x") != A.TLiteral("x")  # another class is never equal
    assert len({a, b, A.TName("y")}) == 2
    # Program's path is left out of equality too, as its dataclass field was
    assert A.Program((), "a.agency") == A.Program((), "b.agency")


def test_repr_shows_the_fields_but_not_the_span() -> None:
    assert repr(A.TField("a", A.TName("string"), span=HERE)) == (
        "TField(name='a', type=TName(name='string'), optional=False)"
    )
    assert "path='p.agency'" in repr(A.Program((), "p.agency"))


def test_nodes_are_frozen_and_slotted() -> None:
    node = A.TName("x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.name = "y"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del node.name  # type: ignore[misc]
    assert not hasattr(node, "__dict__")


def test_copies_pickles_and_replace_keep_every_field() -> None:
    tree = parse('node main() {\n  let x: number = 1 + 2\n  print("${x}")\n}\n', "p.agency")
    for again in (copy.copy(tree), copy.deepcopy(tree), pickle.loads(pickle.dumps(tree))):
        assert again == tree
        assert again.path == "p.agency"
        assert again.items[0].span == tree.items[0].span
    moved = replace(tree.items[0], span=HERE)
    assert moved == tree.items[0] and moved.span == HERE and type(moved) is type(tree.items[0])


def test_match_patterns_use_the_fields_in_order() -> None:
    match A.TField("a", A.TName("string")):
        case A.TField(name, A.TName(type_name)):
            assert (name, type_name) == ("a", "string")
        case _:
            pytest.fail("the positional pattern did not match")
