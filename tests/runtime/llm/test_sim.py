"""Tests of the simulated model: determinism and schema-valid answers."""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.language.syntax.ast import TArray, TField, TGeneric, TLiteral, TName, TObject, TUnion
from runtime.llm.schema import parse_structured, type_to_schema, validate, wrap_schema
from runtime.llm.sim import SimModel, generate

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "Roll a die"}]


def test_plain_answers_are_marked_and_deterministic() -> None:
    a = SimModel(seed=1).complete(MESSAGES, [], None, {})
    b = SimModel(seed=1).complete(MESSAGES, [], None, {})
    assert a == b
    assert a.text.startswith("[sim] ") and "Roll a die" in a.text
    assert a.provider == "sim" and a.usage.cost == 0.0 and not a.tool_calls


def test_answers_depend_on_seed_request_and_call_number() -> None:
    schema = wrap_schema({"type": "number"})
    model = SimModel(seed=0)
    first = [model.complete(MESSAGES, [], schema, {}).value for _ in range(12)]
    again = SimModel(seed=0)
    assert [again.complete(MESSAGES, [], schema, {}).value for _ in range(12)] == first
    assert len(set(first)) > 1  # asked again after a restore, a fresh answer (like a real model)
    resumed = SimModel(seed=0)
    resumed.position = 5  # a snapshot keeps the position: a rebuilt run goes on the same way
    assert resumed.complete(MESSAGES, [], schema, {}).value == first[5]
    seen = {SimModel(seed=s).complete(MESSAGES, [], schema, {}).value for s in range(30)} | {
        model.complete([{"role": "user", "content": f"q{i}"}], [], schema, {}).value
        for i in range(30)
    }
    assert len(seen) > 3 and all(1 <= v <= 10 for v in seen)


def test_structured_answer_text_parses_to_value() -> None:
    schema = wrap_schema({"type": "string", "enum": ["heads", "tails"]})
    c = SimModel().complete(MESSAGES, [], schema, {})
    assert c.value in ("heads", "tails")
    assert json.loads(c.text) == {"response": c.value}
    assert parse_structured(c.text, schema) == c.value


def test_never_calls_tools() -> None:
    from runtime.llm.base import ToolSpec

    tool = ToolSpec("add", "adds", {"type": "object", "properties": {}, "required": []})
    assert SimModel().complete(MESSAGES, [tool], None, {}).tool_calls == ()


def test_announce() -> None:
    assert SimModel.announce() == (
        "agency: using the simulated model (sim); set AGENCY_MODEL or pass --model to use a real one"
    )


# -- property tests -----------------------------------------------------------------------

names = st.sampled_from(["a", "b", "name", "response", "x_1"])
literals = st.one_of(
    st.text(max_size=5), st.integers(-5, 5), st.booleans(), st.none(), st.sampled_from([1.5, 2.0])
)
leaf_types = st.one_of(
    st.sampled_from([TName(n) for n in ("string", "number", "boolean", "any", "null", "Alias")]),
    literals.map(TLiteral),
)


def _compound(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    field = st.builds(TField, names, inner, st.booleans())
    return st.one_of(
        inner.map(TArray),
        st.lists(field, max_size=4, unique_by=lambda f: f.name).map(lambda fs: TObject(tuple(fs))),
        st.lists(inner, min_size=1, max_size=4).map(lambda os: TUnion(tuple(os))),
        st.tuples(inner, inner).map(lambda ab: TGeneric("Result", ab)),
        inner.map(lambda v: TGeneric("Record", (TName("string"), v))),
        inner.map(lambda v: TGeneric("Array", (v,))),
    )


types = st.recursive(leaf_types, _compound, max_leaves=12)
ALIASES = {"Alias": TObject((TField("k", TUnion((TLiteral("p"), TLiteral("q")))),))}


@settings(max_examples=150, deadline=None, database=None)
@given(types, st.integers(0, 2**32))
def test_sim_answers_are_valid_for_any_type(t: Any, seed: int) -> None:
    schema = wrap_schema(type_to_schema(t, ALIASES))
    c = SimModel(seed=seed).complete(MESSAGES, [], schema, {})
    assert validate(c.value, schema["properties"]["response"]) is None
    assert validate(json.loads(c.text), schema) is None
    assert parse_structured(c.text, schema) == c.value


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text()),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(names, inner, max_size=3)),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None, database=None)
@given(types, json_values)
def test_validate_never_crashes_and_agrees_with_parse(t: Any, value: Any) -> None:
    schema = wrap_schema(type_to_schema(t, ALIASES))
    reason = validate({"response": value}, schema)
    assert reason is None or isinstance(reason, str)
    if reason is None:
        assert parse_structured(json.dumps({"response": value}), schema) == value


def test_generate_handles_hand_written_schemas() -> None:
    rng = random.Random(0)
    for schema in (
        {"type": "integer"},
        {"type": ["string", "null"]},
        {"const": 3},
        {"oneOf": [{"type": "boolean"}]},
        {"allOf": [{"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]}]},
        {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 5},
    ):
        assert validate(generate(schema, rng), schema) is None
