"""Tests of AnthropicModel against a scripted local server (no network)."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.llm.anthropic import RESPONSE_TOOL, AnthropicModel, to_anthropic_messages
from runtime.llm.base import MISSING, LLMError, ToolSpec
from runtime.llm.schema import wrap_schema

from .fake_server import FakeServer, Reply

KEY = "sk-ant-test-SECRET-987654321"
ADD = ToolSpec(
    "add",
    "Adds two numbers.",
    {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
)
CONVERSATION = [
    {"role": "system", "content": "Be terse."},
    {"role": "user", "content": "What is 2+2?"},
]
NUMBER = wrap_schema({"type": "number"})


def answer(*blocks: dict[str, Any], model: str = "claude-sonnet-4-5-20250929") -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": list(blocks),
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 2000, "output_tokens": 100},
    }


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def tool_use(id: str, name: str, args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": args}


def model(server: FakeServer, **kw: Any) -> AnthropicModel:
    options: dict[str, Any] = {"api_key": KEY, "max_retries": 2, "sleep": lambda s: None, "env": {}}
    options.update(kw)
    return AnthropicModel("claude-sonnet-4-5", server.url, **options)


def test_plain_text() -> None:
    with FakeServer(Reply(200, answer(text("Four.")))) as server:
        c = model(server).complete(CONVERSATION, [], None, {"temperature": 0, "maxTokens": 64})
    assert c.text == "Four." and c.tool_calls == () and c.value is MISSING
    assert c.provider == "anthropic" and c.model == "claude-sonnet-4-5-20250929"
    assert (c.usage.input_tokens, c.usage.output_tokens) == (2000, 100)
    assert c.usage.cost == pytest.approx((2000 * 3 + 100 * 15) / 1e6)
    request = server.requests[0]
    assert request.path == "/v1/messages"
    assert (
        request.headers["x-api-key"] == KEY and request.headers["anthropic-version"] == "2023-06-01"
    )
    assert request.body == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "temperature": 0,
        "system": "Be terse.",
        "messages": [{"role": "user", "content": [text("What is 2+2?")]}],
    }


def test_tool_round_then_text() -> None:
    with FakeServer(
        Reply(200, answer(text("Let me add."), tool_use("toolu_1", "add", {"a": 2, "b": 2}))),
        Reply(200, answer(text("It is 4."))),
    ) as server:
        m = model(server)
        first = m.complete(CONVERSATION, [ADD], None, {})
        assert first.text == "Let me add."
        assert [(c.id, c.name, c.args) for c in first.tool_calls] == [
            ("toolu_1", "add", {"a": 2, "b": 2})
        ]
        history = [
            *CONVERSATION,
            first.message(),
            {"role": "tool", "tool_call_id": "toolu_1", "name": "add", "content": "4"},
        ]
        second = m.complete(history, [ADD], None, {})
    assert second.text == "It is 4."
    assert server.requests[0].body["tools"] == [
        {"name": "add", "description": "Adds two numbers.", "input_schema": ADD.parameters}
    ]
    assert server.requests[0].body["max_tokens"] == 4096
    assert server.requests[1].body["messages"][1:] == [
        {
            "role": "assistant",
            "content": [text("Let me add."), tool_use("toolu_1", "add", {"a": 2, "b": 2})],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "4"}],
        },
    ]


def test_structured_output_through_a_forced_tool() -> None:
    with FakeServer(
        Reply(200, answer(tool_use("toolu_9", RESPONSE_TOOL, {"response": 4})))
    ) as server:
        c = model(server).complete(CONVERSATION, [], NUMBER, {})
    assert c.value == 4 and c.text == '{"response": 4}' and c.tool_calls == ()
    body = server.requests[0].body
    assert body["tool_choice"] == {"type": "tool", "name": RESPONSE_TOOL}
    assert body["tools"][0]["input_schema"] == NUMBER


def test_structured_output_with_tools_asks_in_the_system_prompt() -> None:
    with FakeServer(Reply(200, answer(text('```json\n{"response": 4}\n```')))) as server:
        c = model(server).complete(CONVERSATION, [ADD], NUMBER, {})
    assert c.value == 4
    body = server.requests[0].body
    assert "tool_choice" not in body
    assert body["system"].startswith("Be terse.\n\nReply with JSON only")


def test_falls_back_to_prompting_when_forced_tools_are_refused() -> None:
    with FakeServer(
        Reply(
            400,
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "tool_choice is not supported",
                },
            },
        ),
        Reply(200, answer(text("4"))),
    ) as server:
        m = model(server)
        c = m.complete(CONVERSATION, [], NUMBER, {})
    assert c.value == 4 and m.forced_tool_supported is False
    retry = server.requests[1].body
    assert "tools" not in retry and "Reply with JSON only" in retry["system"]


def test_429_then_success() -> None:
    with FakeServer(
        Reply(429, {"type": "error", "error": {"message": "rate"}}), Reply(200, answer(text("ok")))
    ) as server:
        assert model(server).complete(CONVERSATION, [], None, {}).text == "ok"
    assert len(server.requests) == 2


def test_overloaded_until_retries_run_out() -> None:
    with FakeServer(
        Reply(
            529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        )
    ) as server:
        with pytest.raises(
            LLMError, match=r"anthropic: .* kept failing \(529 .*Overloaded\) after 3 attempts"
        ):
            model(server).complete(CONVERSATION, [], None, {})
    assert len(server.requests) == 3


def test_timeout() -> None:
    with FakeServer(Reply(200, answer(text("late")), delay=5)) as server:
        with pytest.raises(LLMError, match="anthropic: timeout"):
            model(server, timeout=0.05, max_retries=0).complete(CONVERSATION, [], None, {})


def test_body_that_is_not_json() -> None:
    with FakeServer(Reply(200, "not json")) as server:
        with pytest.raises(LLMError, match="anthropic: .* not a JSON object: not json"):
            model(server).complete(CONVERSATION, [], None, {})


def test_error_object_in_a_200() -> None:
    body = {"type": "error", "error": {"type": "api_error", "message": "oops"}}
    with FakeServer(Reply(200, body)) as server:
        with pytest.raises(LLMError, match="api_error: oops"):
            model(server).complete(CONVERSATION, [], None, {})


def test_401_names_the_key() -> None:
    body = {
        "type": "error",
        "error": {"type": "authentication_error", "message": f"invalid x-api-key {KEY}"},
    }
    with FakeServer(Reply(401, body)) as server:
        with pytest.raises(LLMError) as info:
            model(server).complete(CONVERSATION, [], None, {})
    assert "rejected the API key (401)" in str(info.value) and "check ANTHROPIC_API_KEY" in str(
        info.value
    )
    assert KEY not in str(info.value)


def test_no_key_and_base_urls() -> None:
    with pytest.raises(LLMError, match="anthropic: no API key .* set ANTHROPIC_API_KEY"):
        AnthropicModel("claude-sonnet-4-5", env={})
    m = AnthropicModel("c", env={"ANTHROPIC_BASE_URL": "http://localhost:9/v1"})
    assert m.base_url == "http://localhost:9/v1" and m._path == "/messages"


def test_message_conversion_merges_turns() -> None:
    system, wire = to_anthropic_messages(
        [
            {"role": "system", "content": "A"},
            {"role": "user", "content": "q"},
            {"role": "system", "content": "B"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "t1", "name": "f", "args": {}},
                    {"id": "t2", "name": "g", "args": {"x": 1}},
                ],
            },
            {"role": "tool", "tool_call_id": "t1", "name": "f", "content": "1"},
            {"role": "tool", "tool_call_id": "t2", "name": "g", "content": "2"},
        ]
    )
    assert system == "A\n\nB"
    assert [m["role"] for m in wire] == ["user", "assistant", "user"]
    assert [b["tool_use_id"] for b in wire[2]["content"]] == ["t1", "t2"]
