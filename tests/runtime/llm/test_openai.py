"""Tests of OpenAIModel against a scripted local server (no network)."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.llm.base import MISSING, LLMError, ToolSpec
from runtime.llm.openai import OpenAIModel, strict_schema, to_openai_messages
from runtime.llm.schema import parse_structured, wrap_schema

from .fake_server import FakeServer, Reply

KEY = "sk-test-SECRET-0123456789"
ADD = ToolSpec(
    "add",
    "Adds two numbers.",
    {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
)
USER = [{"role": "user", "content": "What is 2+2?"}]
NUMBER = wrap_schema({"type": "number"})


def answer(
    content: str | None = "4", tool_calls: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 500},
    }


def model(server: FakeServer, **kw: Any) -> OpenAIModel:
    options: dict[str, Any] = {"api_key": KEY, "max_retries": 2, "sleep": lambda s: None, "env": {}}
    options.update(kw)
    return OpenAIModel("gpt-4o-mini", server.url + "/v1", **options)


def test_plain_text() -> None:
    with FakeServer(Reply(200, answer("4"))) as server:
        c = model(server).complete(USER, [], None, {"temperature": 0.2, "maxTokens": 50})
    assert c.text == "4" and c.tool_calls == () and c.value is MISSING
    assert c.provider == "openai" and c.model == "gpt-4o-mini-2024-07-18"
    assert (c.usage.input_tokens, c.usage.output_tokens) == (1000, 500)
    assert c.usage.cost == pytest.approx((1000 * 0.15 + 500 * 0.60) / 1e6)
    assert c.latency_ms > 0 and c.raw is not None and c.raw["id"] == "chatcmpl-1"
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "What is 2+2?"}],
        "temperature": 0.2,
        "max_tokens": 50,
    }


def test_tool_round_then_text() -> None:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "add", "arguments": '{"a": 2, "b": 2}'},
    }
    with FakeServer(Reply(200, answer(None, [call])), Reply(200, answer("It is 4."))) as server:
        m = model(server)
        first = m.complete(USER, [ADD], None, {})
        assert first.text == "" and [(c.id, c.name, c.args) for c in first.tool_calls] == [
            ("call_1", "add", {"a": 2, "b": 2})
        ]
        history = [
            *USER,
            first.message(),
            {"role": "tool", "tool_call_id": "call_1", "name": "add", "content": "4"},
        ]
        second = m.complete(history, [ADD], None, {})
    assert second.text == "It is 4." and second.tool_calls == ()
    assert server.requests[0].body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Adds two numbers.",
                "parameters": ADD.parameters,
            },
        }
    ]
    assert server.requests[1].body["messages"][1:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 2, "b": 2}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "4"},
    ]


def test_structured_output_uses_response_format() -> None:
    with FakeServer(Reply(200, answer('{"response": 4}'))) as server:
        c = model(server).complete(USER, [], NUMBER, {})
    assert c.value == 4 and parse_structured(c.text, NUMBER) == 4
    rf = server.requests[0].body["response_format"]
    assert rf == {
        "type": "json_schema",
        "json_schema": {
            "name": "response",
            "schema": {**NUMBER, "additionalProperties": False},
            "strict": True,
        },
    }


def test_structured_output_mismatch_leaves_value_missing() -> None:
    with FakeServer(Reply(200, answer("four"))) as server:
        c = model(server).complete(USER, [], NUMBER, {})
    assert c.value is MISSING and c.text == "four"
    with pytest.raises(LLMError, match="expected number but the model replied: four"):
        parse_structured(c.text, NUMBER)


def test_falls_back_to_prompting_when_response_format_is_refused() -> None:
    refused = Reply(400, {"error": {"message": "Unrecognized request argument: response_format"}})
    with FakeServer(
        refused, Reply(200, answer('```json\n{"response": 4}\n```')), Reply(200, answer("5"))
    ) as server:
        m = model(server)
        first = m.complete([{"role": "system", "content": "Be terse."}, *USER], [], NUMBER, {})
        second = m.complete(USER, [], NUMBER, {})
    assert (first.value, second.value) == (4, 5)
    assert len(server.requests) == 3
    retry = server.requests[1].body
    assert "response_format" not in retry
    system = retry["messages"][0]
    assert system["role"] == "system" and system["content"].startswith(
        "Be terse.\n\nReply with JSON only"
    )
    # Remembered: the next request goes straight to prompting, with a new system message.
    later = server.requests[2].body
    assert "response_format" not in later and later["messages"][0]["role"] == "system"
    assert m.json_schema_supported is False


def test_other_400_is_not_a_fallback() -> None:
    with FakeServer(Reply(400, {"error": {"message": "temperature is out of range"}})) as server:
        with pytest.raises(
            LLMError, match=r"refused the request \(400\) \(temperature is out of range\)"
        ):
            model(server).complete(USER, [], NUMBER, {})
        assert len(server.requests) == 1


def test_429_then_success_honours_retry_after() -> None:
    slept: list[float] = []
    with FakeServer(
        Reply(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "2"}),
        Reply(200, answer("ok")),
    ) as server:
        c = model(server, sleep=slept.append).complete(USER, [], None, {})
    assert c.text == "ok" and len(server.requests) == 2 and slept == [2.0]


def test_500_until_retries_run_out() -> None:
    slept: list[float] = []
    with FakeServer(Reply(500, {"error": {"message": "boom"}})) as server:
        with pytest.raises(LLMError) as info:
            model(server, sleep=slept.append, backoff=0.25).complete(USER, [], None, {})
    assert len(server.requests) == 3 and slept == [0.25, 0.5]
    message = str(info.value)
    assert (
        message.startswith("openai: 127.0.0.1:")
        and "kept failing (500 Internal Server Error: boom)" in message
    )
    assert "after 3 attempts" in message and info.value.status == 500


def test_timeout() -> None:
    with FakeServer(Reply(200, answer("late"), delay=5)) as server:
        with pytest.raises(LLMError, match=r"openai: timeout: .* within 0\.05s \(2 attempts\)"):
            model(server, timeout=0.05, max_retries=1).complete(USER, [], None, {})


def test_connection_refused() -> None:
    with FakeServer() as server:
        url = server.url
    m = OpenAIModel("x", url, max_retries=1, sleep=lambda s: None, env={})
    with pytest.raises(
        LLMError, match="cannot connect to 127.0.0.1:.* after 2 attempts; check that the server"
    ):
        m.complete(USER, [], None, {})


@pytest.mark.parametrize("body", ["<html>gateway</html>", "[1, 2]", ""])
def test_body_that_is_not_json(body: str) -> None:
    with FakeServer(Reply(200, body)) as server:
        with pytest.raises(LLMError, match="with a body that is not a JSON object"):
            model(server).complete(USER, [], None, {})


def test_answer_without_choices() -> None:
    with FakeServer(Reply(200, {"object": "list"})) as server:
        with pytest.raises(LLMError, match="has no choices"):
            model(server).complete(USER, [], None, {})


def test_401_names_the_key() -> None:
    body = {"error": {"message": f"Incorrect API key provided: {KEY}."}}
    with FakeServer(Reply(401, body)) as server:
        with pytest.raises(LLMError) as info:
            model(server).complete(USER, [], None, {})
    assert "rejected the API key (401)" in str(info.value) and "check OPENAI_API_KEY" in str(
        info.value
    )
    assert KEY not in str(info.value) and "***" in str(info.value)


def test_404_names_the_model() -> None:
    with FakeServer(
        Reply(404, {"error": {"message": "The model `gpt-9` does not exist"}})
    ) as server:
        with pytest.raises(
            LLMError,
            match=r"404 Not Found \(The model `gpt-9` does not exist\); check the model name",
        ):
            model(server).complete(USER, [], None, {"model": "openai/gpt-9"})
        assert server.requests[0].body["model"] == "gpt-9"


def test_bad_tool_arguments() -> None:
    call = {"id": "c", "type": "function", "function": {"name": "add", "arguments": "{a: 1"}}
    with FakeServer(Reply(200, answer(None, [call]))) as server:
        with pytest.raises(LLMError, match="called `add` with arguments that are not JSON"):
            model(server).complete(USER, [ADD], None, {})


def test_no_key_for_openai() -> None:
    with pytest.raises(LLMError, match="set OPENAI_API_KEY or pass --base-url for a local server"):
        OpenAIModel("gpt-4o-mini", env={})
    assert (
        OpenAIModel("gpt-4o-mini", env={"OPENAI_API_KEY": KEY}).base_url
        == "https://api.openai.com/v1"
    )
    assert (
        OpenAIModel("m", env={"OPENAI_BASE_URL": "http://localhost:8000/v1/"}).base_url
        == "http://localhost:8000/v1"
    )


def test_ollama_needs_no_key_and_is_free() -> None:
    with FakeServer(Reply(200, answer("hi"))) as server:
        m = OpenAIModel("llama3", server.url + "/v1", label="ollama", env={"OPENAI_API_KEY": KEY})
        c = m.complete(USER, [], None, {})
    assert "authorization" not in server.requests[0].headers
    assert c.usage.cost == 0.0
    assert OpenAIModel("llama3", label="ollama", env={}).base_url == "http://localhost:11434/v1"
    assert (
        OpenAIModel("l", label="ollama", env={"OLLAMA_HOST": "10.0.0.2:9999"}).base_url
        == "http://10.0.0.2:9999/v1"
    )


def test_unknown_model_has_no_cost() -> None:
    with FakeServer(Reply(200, {**answer("x"), "model": "my-local-model"})) as server:
        c = model(server).complete(USER, [], None, {"model": "my-local-model"})
    assert c.usage.cost is None


def test_strict_schema_only_when_every_field_is_required() -> None:
    closed = strict_schema(
        wrap_schema({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})
    )
    assert closed is not None and closed["properties"]["response"]["additionalProperties"] is False
    assert (
        strict_schema(wrap_schema({"type": "object", "properties": {"a": {}}, "required": []}))
        is None
    )
    assert strict_schema(wrap_schema({})) is None
    assert strict_schema(wrap_schema({"anyOf": [{"type": "string"}, {"type": "null"}]})) is not None


def test_messages_with_structured_content_become_json_text() -> None:
    assert to_openai_messages([{"role": "user", "content": {"a": 1}}]) == [
        {"role": "user", "content": '{"a": 1}'}
    ]
    with pytest.raises(LLMError, match="role 'robot'"):
        to_openai_messages([{"role": "robot", "content": ""}])
