"""Tests of the scripted mock model and load_mocks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runtime.llm.base import MISSING, Completion, LLMError, ToolCall
from runtime.llm.mock import MockModel, load_mocks
from runtime.llm.schema import wrap_schema

USER = [{"role": "user", "content": "hi"}]


def ask(model: MockModel, schema: dict[str, Any] | None = None) -> Completion:
    return model.complete(USER, [], schema, {})


def test_answers_in_order_then_exhausted() -> None:
    model = MockModel([{"return": 2}, {"return": "five"}, {"return": {"a": [1]}}])
    first, second, third = ask(model), ask(model), ask(model)
    assert (first.text, first.value) == ("2", 2)
    assert (second.text, second.value) == ("five", "five")
    assert (third.text, third.value) == ('{"a": [1]}', {"a": [1]})
    assert first.provider == "mock" and first.usage.cost == 0.0
    with pytest.raises(LLMError, match="exhausted after 3 answers; add more entries"):
        ask(model)


def test_null_is_a_value_not_missing() -> None:
    c = ask(MockModel([{"return": None}]))
    assert c.value is None and c.value is not MISSING and c.text == "null"


def test_tool_call_entries() -> None:
    model = MockModel(
        [
            {"toolCall": {"name": "add", "args": {"a": 4}}},
            {"toolCalls": [{"name": "a", "args": {}}, {"name": "b", "id": "x1"}]},
            {"return": "done"},
        ]
    )
    one = ask(model)
    assert one.text == "" and one.value is MISSING
    assert one.tool_calls == (ToolCall("mock_0_0", "add", {"a": 4}),)
    assert one.message() == {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "mock_0_0", "name": "add", "args": {"a": 4}}],
    }
    two = ask(model)
    assert [(c.id, c.name, c.args) for c in two.tool_calls] == [
        ("mock_1_0", "a", {}),
        ("x1", "b", {}),
    ]
    assert ask(model).text == "done"


def test_position_is_settable_for_checkpoints() -> None:
    model = MockModel([{"return": 1}, {"return": 2}, {"return": 3}])
    ask(model)
    saved = model.position
    assert saved == 1 and model.remaining == 2
    rebuilt = MockModel(model.entries)
    rebuilt.position = saved
    assert ask(rebuilt).value == 2


def test_wrapped_mock_value_is_unwrapped_for_a_typed_request() -> None:
    model = MockModel([{"return": {"response": 7}}, {"return": {"response": 7}}])
    assert ask(model, wrap_schema({"type": "number"})).value == 7
    assert ask(model).value == {"response": 7}


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([3], "mock entry 1 is 3"),
        ([{"return": 1, "toolCall": {"name": "x"}}], "mock entry 1 has keys"),
        ([{"toolCall": {"args": {}}}], "a tool call must be"),
        ([{"toolCalls": []}], "non-empty list"),
    ],
)
def test_bad_entries(entries: list[object], message: str) -> None:
    with pytest.raises(LLMError, match=message):
        MockModel(entries)


def test_load_mocks_from_text_file_and_suite(tmp_path: Path) -> None:
    entries = [{"return": 1}]
    assert load_mocks(json.dumps(entries)) == entries
    path = tmp_path / "m.json"
    path.write_text(json.dumps(entries))
    assert load_mocks(str(path)) == entries
    assert load_mocks(path) == entries
    assert load_mocks(json.dumps({"llmMocks": entries})) == entries


def test_load_mocks_errors(tmp_path: Path) -> None:
    with pytest.raises(LLMError, match="cannot read the mock file"):
        load_mocks(str(tmp_path / "missing.json"))
    with pytest.raises(LLMError, match="not valid JSON: .* line 1 column"):
        load_mocks("[1,")
    with pytest.raises(LLMError, match="must be a JSON list"):
        load_mocks('{"a": 1}')
    with pytest.raises(LLMError, match="mock entry 2"):
        load_mocks('[{"return": 1}, {"nope": 2}]')
