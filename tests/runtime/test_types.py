"""`conforms(value, type, aliases)`: the run-time type test behind type patterns."""

from __future__ import annotations

import pytest

from runtime.errors import AgencyRuntimeError
from runtime.language.syntax import parse
from runtime.language.syntax.ast import TypeAlias, TypeExpr
from runtime.vm.types import conforms
from runtime.vm.values import JSArray, JSObject, Result

ALIASES_SOURCE = """
type Point = { x: number, y: number }
type Level = "low" | "high"
type Tree = { value: number, children: Tree[] }
type Named = { name: string, nick?: string }
"""


def aliases() -> dict[str, TypeExpr]:
    out = {}
    for item in parse(ALIASES_SOURCE).items:
        assert isinstance(item, TypeAlias)
        out[item.name] = item.type
    return out


def type_of(source: str) -> TypeExpr:
    (alias,) = parse(f"type T = {source}").items
    assert isinstance(alias, TypeAlias)
    return alias.type


def obj(**kv: object) -> JSObject:
    return JSObject(kv)


@pytest.mark.parametrize(
    ("value", "type_", "expected"),
    [
        ("a", "string", True),
        (1, "string", False),
        (1, "number", True),
        (1.5, "number", True),
        (True, "number", False),
        (False, "boolean", True),
        (None, "null", True),
        (0, "null", False),
        (JSArray(), "any", True),
        (obj(a=1), "object", True),
        (JSArray(), "object", False),
        (JSArray([1, 2]), "number[]", True),
        (JSArray([1, "2"]), "number[]", False),
        (JSArray([JSArray([1])]), "number[][]", True),
        ("low", "Level", True),
        ("mid", "Level", False),
        (3, '"a" | 3', True),
        (obj(x=1, y=2, z=3), "Point", True),
        (obj(x=1), "Point", False),
        (obj(name="a"), "Named", True),
        (obj(name="a", nick=None), "Named", True),
        (obj(name="a", nick=3), "Named", False),
        (obj(value=1, children=JSArray([obj(value=2, children=JSArray())])), "Tree", True),
        (obj(value=1, children=JSArray([obj(value="x", children=JSArray())])), "Tree", False),
        (Result(True, 1), "Result<number, string>", True),
        (obj(a=1, b=2), "Record<string, number>", True),
        (obj(a="1"), "Record<string, number>", False),
        (JSArray([1, "a"]), "(number | string)[]", True),
    ],
)
def test_conforms(value: object, type_: str, expected: bool) -> None:
    assert conforms(value, type_of(type_), aliases()) is expected


def test_unknown_and_unsupported_types_are_errors() -> None:
    with pytest.raises(AgencyRuntimeError, match="unknown type `Mystery`"):
        conforms(1, type_of("Mystery"), {})
    with pytest.raises(AgencyRuntimeError, match="Partial"):
        conforms(obj(), type_of("Partial<Point>"), aliases())
