"""Tests of the contract types: Completion records, MISSING, the ChatModel protocol."""

from __future__ import annotations

import copy
import json
import pickle

from runtime.llm import MISSING, ChatModel, Completion, MockModel, SimModel, ToolCall, Usage
from runtime.llm.base import redact, redact_json


def test_completion_round_trips_through_json() -> None:
    full = Completion(
        text="",
        tool_calls=(ToolCall("c1", "add", {"a": 1}),),
        value={"x": [1, None]},
        usage=Usage(3, 4, 0.5),
        model="m",
        provider="openai",
        latency_ms=12.5,
        raw={"id": "r"},
    )
    for c in (full, Completion("hi"), Completion("null", value=None)):
        data = json.loads(json.dumps(c.to_json()))
        assert Completion.from_json(data) == c
    assert "value" not in Completion("hi").to_json()


def test_missing_is_a_falsy_singleton() -> None:
    assert not MISSING and repr(MISSING) == "MISSING"
    assert copy.deepcopy(MISSING) is MISSING and pickle.loads(pickle.dumps(MISSING)) is MISSING
    assert Completion("x").value is MISSING


def test_models_satisfy_the_protocol() -> None:
    assert isinstance(SimModel(), ChatModel) and isinstance(MockModel([]), ChatModel)


def test_redact() -> None:
    assert redact("key=abcd1234!", ["abcd1234"]) == "key=***!"
    assert redact("short ab", ["ab", ""]) == "short ab"
    assert redact_json({"abcd1234": ["x abcd1234"]}, ["abcd1234"]) == {"***": ["x ***"]}
