"""Tests of type_to_schema, validate and parse_structured."""

from __future__ import annotations

import pytest

from runtime.language.syntax.ast import (
    TArray,
    TField,
    TGeneric,
    TLiteral,
    TName,
    TObject,
    TUnion,
    TypeExpr,
)
from runtime.llm.base import LLMError
from runtime.llm.schema import (
    describe,
    parse_structured,
    structured_value,
    tool_parameters,
    type_to_schema,
    unwrap_schema,
    validate,
    wrap_schema,
)

S, N, B = TName("string"), TName("number"), TName("boolean")


# -- type_to_schema -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("t", "expected"),
    [
        (S, {"type": "string"}),
        (N, {"type": "number"}),
        (B, {"type": "boolean"}),
        (TName("any"), {}),
        (TName("null"), {"type": "null"}),
        (TLiteral("yes"), {"type": "string", "enum": ["yes"]}),
        (TLiteral(3.0), {"type": "number", "enum": [3]}),
        (TLiteral(2.5), {"type": "number", "enum": [2.5]}),
        (TLiteral(True), {"type": "boolean", "enum": [True]}),
        (TLiteral(None), {"type": "null"}),
        (TArray(S), {"type": "array", "items": {"type": "string"}}),
        (TGeneric("Array", (N,)), {"type": "array", "items": {"type": "number"}}),
        (
            TGeneric("Record", (S, N)),
            {"type": "object", "additionalProperties": {"type": "number"}},
        ),
    ],
)
def test_simple_types(t: object, expected: dict[str, object]) -> None:
    assert type_to_schema(t, {}) == expected  # type: ignore[arg-type]


def test_object_with_optional_field() -> None:
    t = TObject((TField("name", S), TField("age", N, optional=True)))
    assert type_to_schema(t) == {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "number"}},
        "required": ["name"],
    }


def test_union_of_string_literals_is_an_enum() -> None:
    t = TUnion((TLiteral("happy"), TLiteral("sad"), TLiteral("happy")))
    assert type_to_schema(t) == {"type": "string", "enum": ["happy", "sad"]}


def test_union_of_mixed_literals_and_null() -> None:
    t = TUnion((TLiteral("a"), TLiteral(1), TName("null")))
    assert type_to_schema(t) == {"type": ["string", "number", "null"], "enum": ["a", 1, None]}


def test_union_of_types_is_any_of_flattened() -> None:
    t = TUnion((S, TUnion((N, TArray(S))), S))
    assert type_to_schema(t) == {
        "anyOf": [
            {"type": "string"},
            {"type": "number"},
            {"type": "array", "items": {"type": "string"}},
        ]
    }


def test_result_generic() -> None:
    schema = type_to_schema(TGeneric("Result", (N, S)))
    assert validate({"success": True, "value": 3}, schema) is None
    assert validate({"success": False, "error": "no"}, schema) is None
    assert validate({"success": True, "error": "no"}, schema) is not None


def test_aliases_resolve_and_nest() -> None:
    aliases: dict[str, TypeExpr] = {
        "Mood": TUnion((TLiteral("happy"), TLiteral("sad"))),
        "Entry": TObject((TField("mood", TName("Mood")),)),
    }
    assert type_to_schema(TArray(TName("Entry")), aliases) == {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"mood": {"type": "string", "enum": ["happy", "sad"]}},
            "required": ["mood"],
        },
    }


def test_unknown_name_and_recursive_alias_are_errors() -> None:
    with pytest.raises(LLMError, match="unknown type `Foo`"):
        type_to_schema(TName("Foo"), {})
    aliases = {"Tree": TObject((TField("kids", TArray(TName("Tree"))),))}
    with pytest.raises(LLMError, match="Tree -> Tree"):
        type_to_schema(TName("Tree"), aliases)
    with pytest.raises(LLMError, match="unsupported generic"):
        type_to_schema(TGeneric("Map", (S, N)))


def test_the_same_alias_twice_is_not_recursion() -> None:
    aliases = {"P": TObject((TField("x", N),))}
    t = TObject((TField("a", TName("P")), TField("b", TName("P"))))
    assert type_to_schema(t, aliases)["properties"]["b"]["required"] == ["x"]


def test_tool_parameters() -> None:
    schema = tool_parameters([("a", N, False), ("b", None, True)])
    assert schema == {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {}},
        "required": ["a"],
    }


def test_wrap_and_unwrap() -> None:
    inner = {"type": "number"}
    assert unwrap_schema(wrap_schema(inner)) == inner
    assert unwrap_schema({"type": "object", "properties": {"x": {}}, "required": ["x"]}) is None


# -- validate -----------------------------------------------------------------------------


def test_validate_reasons() -> None:
    person = type_to_schema(
        TObject((TField("name", S), TField("tags", TArray(S)), TField("age", N, optional=True)))
    )
    assert validate({"name": "Ada", "tags": []}, person) is None
    assert validate({"name": "Ada", "tags": [], "extra": 1}, person) is None
    assert validate({"tags": []}, person) == "missing field `name`"
    assert (
        validate({"name": "Ada", "tags": ["a", 2]}, person) == "at tags[1]: expected string, got 2"
    )
    assert (
        validate({"name": "Ada", "tags": [], "age": "3"}, person)
        == 'at age: expected number, got "3"'
    )
    assert validate([1], person) == "expected {name: string, tags: string[], age?: number}, got [1]"


def test_validate_json_equality_rules() -> None:
    assert validate(True, {"type": "number"}) is not None
    assert validate(1, {"type": "boolean"}) is not None
    assert validate(1, {"enum": [True]}) is not None
    assert validate(1.0, {"enum": [1]}) is None
    assert validate(3, {"type": "integer"}) is None
    assert validate(3.5, {"type": "integer"}) is not None
    assert validate(float("nan"), {"type": "number"}) is not None
    assert (
        validate({"k": 1}, {"type": "object", "additionalProperties": False})
        == "unexpected field `k`"
    )
    assert validate([], {"type": "array", "minItems": 1}) is not None


def test_validate_any_of_points_into_the_branch_of_the_right_shape() -> None:
    schema = {
        "anyOf": [{"type": "string"}, {"type": "object", "properties": {"x": {"type": "number"}}}]
    }
    assert validate({"x": "no"}, schema) == 'at x: expected number, got "no"'
    assert validate(3, schema) == "expected string | {x?: number}, got 3"


def test_describe() -> None:
    assert (
        describe({"type": "array", "items": {"type": "string", "enum": ["a", "b"]}})
        == '("a" | "b")[]'
    )
    assert describe({}) == "any"
    assert (
        describe({"type": "object", "additionalProperties": {"type": "number"}})
        == "Record<string, number>"
    )


# -- parse_structured ---------------------------------------------------------------------

NUMBER = wrap_schema({"type": "number"})
MOOD = wrap_schema(
    {
        "type": "object",
        "properties": {"mood": {"type": "string", "enum": ["happy", "sad"]}},
        "required": ["mood"],
    }
)


@pytest.mark.parametrize(
    "reply",
    [
        '{"response": 5}',
        "5",
        '```json\n{"response": 5}\n```',
        "```\n5\n```",
        'Sure! Here it is: {"response": 5}',
        '  {"response": 5}  \n',
    ],
)
def test_parse_number_in_every_dress(reply: str) -> None:
    assert parse_structured(reply, NUMBER) == 5


def test_parse_object_wrapped_and_bare() -> None:
    assert parse_structured('{"response": {"mood": "sad"}}', MOOD) == {"mood": "sad"}
    assert parse_structured('{"mood": "happy"}', MOOD) == {"mood": "happy"}


def test_parse_a_field_named_response_inside_the_inner_type() -> None:
    inner = {
        "type": "object",
        "properties": {"response": {"type": "string"}},
        "required": ["response"],
    }
    assert parse_structured('{"response": {"response": "hi"}}', wrap_schema(inner)) == {
        "response": "hi"
    }


def test_parse_mismatch_names_type_and_reply() -> None:
    with pytest.raises(LLMError) as info:
        parse_structured('{"response": {"mood": "angry"}}', MOOD)
    assert str(info.value) == (
        'expected {mood: "happy" | "sad"} but the model replied: {"response": {"mood": "angry"}} '
        '(at mood: expected "happy" | "sad", got "angry")'
    )
    with pytest.raises(LLMError, match="expected number but the model replied: six"):
        parse_structured("six", NUMBER)
    with pytest.raises(LLMError, match=r"replied: \(nothing\)"):
        parse_structured("", NUMBER)


def test_parse_string_type_accepts_prose_and_scalars() -> None:
    schema = wrap_schema({"type": "string"})
    assert parse_structured("Hello there", schema) == "Hello there"
    assert parse_structured('"Hello"', schema) == "Hello"
    assert parse_structured("42", schema) == "42"
    assert parse_structured("```\nplain words\n```", schema) == "plain words"
    with pytest.raises(LLMError):
        parse_structured('{"response": 3}', schema)


def test_parse_literal_union_without_quotes() -> None:
    schema = wrap_schema({"type": "string", "enum": ["yes", "no"]})
    assert parse_structured("no", schema) == "no"
    with pytest.raises(LLMError, match='expected "yes" \\| "no"'):
        parse_structured("maybe", schema)


def test_parse_without_wrapper_and_long_reply_is_truncated() -> None:
    assert parse_structured("[1, 2]", {"type": "array", "items": {"type": "number"}}) == [1, 2]
    with pytest.raises(LLMError) as info:
        parse_structured("x" * 1000, NUMBER)
    assert len(str(info.value)) < 400


def test_structured_value_unwraps_and_checks() -> None:
    assert structured_value({"response": 2}, NUMBER) == 2
    assert structured_value(2, NUMBER) == 2
    with pytest.raises(LLMError, match='expected number but the model replied: "two"'):
        structured_value("two", NUMBER)


def test_generic_alias_without_arguments_takes_its_defaults() -> None:
    # type Pair<A, B = A[]> = {first: A, rest: B}; type Box<T = string> = {item: T}
    aliases: dict[str, TypeExpr] = {
        "Pair": TObject((TField("first", TName("A")), TField("rest", TName("B")))),
        "Box": TObject((TField("item", TName("T")),)),
    }
    params = {"Pair": ("A", "B"), "Box": ("T",)}
    defaults = {"Pair": (None, TArray(TName("A"))), "Box": (S,)}

    def schema(t: TypeExpr) -> object:
        return type_to_schema(t, aliases, params, defaults)

    assert schema(TName("Box"))["properties"] == {"item": {"type": "string"}}  # type: ignore[index]
    assert schema(TGeneric("Box", (N,)))["properties"] == {"item": {"type": "number"}}  # type: ignore[index]
    pair = schema(TGeneric("Pair", (B,)))
    assert pair["properties"]["rest"] == {"type": "array", "items": {"type": "boolean"}}  # type: ignore[index]
    assert schema(TName("Pair"))["properties"]["first"] == {}  # type: ignore[index]
