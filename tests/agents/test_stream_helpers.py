"""The SDKs' helpers are recorded like `create`: OpenAI's `chat.completions.stream`/`parse` and
`responses.stream`/`parse`, Anthropic's `messages.stream`/`parse` with `output_format`, the
real SDKs against fake servers on 127.0.0.1. A replay runs the SDK's own helper over the
recorded answer, so its events and parsed values come back with no server at all."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import BaseModel

from runtime import CheckpointManager, record_agent
from tests.agents.fake_anthropic import FakeAnthropic
from tests.agents.fake_openai import FakeOpenAI
from tests.agents.test_streaming import (
    add_claude_answer,
    async_mailer_recorded_and_replayed,
    nowhere,
    performed,
    recorded_then_replayed,
    send_email,
)

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

from runtime.agents.adapters.anthropic import wrap_anthropic  # noqa: E402
from runtime.agents.adapters.openai import wrap_openai  # noqa: E402


class Sent(BaseModel):
    sent: int


class Rolls(BaseModel):
    rolls: int


def openai_client(url: str) -> Any:
    return wrap_openai(openai.OpenAI(base_url=url.rstrip("/") + "/v1", api_key="k", max_retries=0))


def add_chat_answer(messages: list[dict[str, Any]], message: Any) -> bool:
    """Add a chat answer to `messages` and run the tools it calls; True when it called none."""
    calls = [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.function.name, "arguments": c.function.arguments},
        }
        for c in message.tool_calls or ()
    ]
    if not calls:
        messages.append({"role": "assistant", "content": message.content})
        return True
    messages.append({"role": "assistant", "tool_calls": calls})
    for c in calls:
        result = send_email(**json.loads(c["function"]["arguments"]))
        messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})
    return False


# -- OpenAI chat completions ---------------------------------------------------------------------


def chat_helper_agent(parsed: list[Any]) -> Any:
    """An agent on `chat.completions.stream(...)` asking for `Sent` at the end; what the helper
    parsed goes into `parsed`."""

    def agent(_: CheckpointManager, url: str) -> list[Any]:
        client = openai_client(url)
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Mail them."}]
        while True:
            with client.chat.completions.stream(
                model="fake-model", messages=messages, response_format=Sent
            ) as stream:
                text = "".join(e.delta for e in stream if e.type == "content.delta")
                message = stream.get_final_completion().choices[0].message
            assert text == (message.content or "")
            if add_chat_answer(messages, message):
                parsed.append(message.parsed)
                return messages

    return agent


def test_the_chat_stream_helper_is_recorded_and_replayed_parsed() -> None:
    parsed: list[Any] = []
    with FakeOpenAI(emails=2) as fake:
        m, messages = recorded_then_replayed(
            chat_helper_agent(parsed), fake.url.removesuffix("/v1")
        )
        assert len(fake.requests) == 3 and all(r["stream"] for r in fake.requests)
        assert all(r["response_format"]["type"] == "json_schema" for r in fake.requests)
    assert parsed == [Sent(sent=2), Sent(sent=2)]  # live, then replayed: the helper parsed both
    assert performed == ["person1@example.com", "person2@example.com"]
    cps = m.list("s1")
    assert [c.message_count for c in cps] == [3, 5, 6]
    calls = m.store.llm_calls(cps[0].run_id)
    assert (
        calls[0].response["choices"][0]["message"]["tool_calls"][0]["function"]["name"]
        == "send_email"
    )
    assert calls[0].request["response_format"]["json_schema"]["name"] == "Sent"


def test_chat_parse_is_recorded_and_replayed_parsed() -> None:
    def agent(_: CheckpointManager, url: str) -> list[Any]:
        client = openai_client(url)
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Mail them."}]
        while True:
            completion = client.chat.completions.parse(
                model="fake-model", messages=messages, response_format=Sent
            )
            message = completion.choices[0].message
            if add_chat_answer(messages, message):
                assert message.parsed == Sent(sent=1)
                return messages

    with FakeOpenAI(emails=1) as fake:
        m, messages = recorded_then_replayed(agent, fake.url.removesuffix("/v1"))
        assert len(fake.requests) == 2
    assert [c.message_count for c in m.list("s1")] == [3, 4]
    answer = m.store.llm_calls(m.list("s1")[0].run_id)[-1].response
    assert "parsed" not in answer["choices"][0]["message"]  # the API's answer, not the parse


def test_an_async_chat_stream_helper_is_recorded_and_replayed() -> None:
    async def agent(url: str) -> list[Any]:
        client = wrap_openai(openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0))
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Mail them."}]
        while True:
            async with client.chat.completions.stream(model="fake", messages=messages) as stream:
                message = (await stream.get_final_completion()).choices[0].message
            if add_chat_answer(messages, message):
                await client.close()
                return messages

    async_mailer_recorded_and_replayed(agent)


# -- OpenAI responses ----------------------------------------------------------------------------


def add_response(items: list[Any], output: list[Any]) -> bool:
    """Add a response's output items and run the tools they call; True when they call none."""
    out = [o.model_dump(exclude_none=True) for o in output]
    for o in out:
        o.pop("parsed_arguments", None)
        for part in o.get("content") or ():
            part.pop("parsed", None)
    items += out
    calls = [o for o in out if o["type"] == "function_call"]
    for call in calls:
        result = send_email(**json.loads(call["arguments"]))
        items.append({"type": "function_call_output", "call_id": call["call_id"], "output": result})
    return not calls


@pytest.mark.parametrize("helper", ["stream", "parse"])
def test_the_responses_helpers_are_recorded_and_replayed_parsed(helper: str) -> None:
    parsed: list[Any] = []

    def agent(_: CheckpointManager, url: str) -> list[Any]:
        client = openai_client(url)
        items: list[Any] = [{"role": "user", "content": "Mail them."}]
        while True:
            ask = {"model": "fake-model", "input": items, "text_format": Sent}
            if helper == "stream":
                with client.responses.stream(**ask) as stream:
                    text = "".join(
                        e.delta for e in stream if e.type == "response.output_text.delta"
                    )
                    response = stream.get_final_response()
                assert text == response.output_text
            else:
                response = client.responses.parse(**ask)
            if add_response(items, response.output):
                parsed.append(response.output_parsed)
                return items

    with FakeOpenAI(emails=2) as fake:
        m, items = recorded_then_replayed(agent, fake.url.removesuffix("/v1"))
        assert len(fake.requests) == 3
        assert all(r["text"]["format"]["type"] == "json_schema" for r in fake.requests)
    assert parsed == [Sent(sent=2), Sent(sent=2)]
    assert [c.message_count for c in m.list("s1")] == [3, 5, 6]
    assert performed == ["person1@example.com", "person2@example.com"]


# -- Anthropic messages --------------------------------------------------------------------------


@pytest.mark.parametrize("helper", ["stream", "parse"])
def test_anthropic_output_format_helpers_are_recorded_and_replayed(helper: str) -> None:
    parsed: list[Any] = []

    def agent(_: CheckpointManager, url: str) -> list[Any]:
        client = wrap_anthropic(anthropic.Anthropic(base_url=url, api_key="k", max_retries=0))
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Roll twice."}]
        while True:
            ask = {
                "model": "fake-claude",
                "max_tokens": 100,
                "messages": messages,
                "output_format": Rolls,
            }
            if helper == "stream":
                with client.messages.stream(**ask) as stream:
                    text = "".join(stream.text_stream)
                    message = stream.get_final_message()
                assert text == "".join(b.text for b in message.content if b.type == "text")
            else:
                message = client.messages.parse(**ask)
            content = [b.model_dump(exclude_none=True) for b in message.content]
            for b in content:
                b.pop("parsed_output", None)
            if add_claude_answer(messages, content):
                parsed.append(message.parsed_output)
                return messages

    with FakeAnthropic(rolls=2) as fake:
        m, messages = recorded_then_replayed(agent, fake.url)
        assert len(fake.requests) == 3
        assert all(r["output_config"]["format"]["type"] == "json_schema" for r in fake.requests)
    assert parsed == [Rolls(rolls=2), Rolls(rolls=2)]
    assert performed == ["roll 1", "roll 2"]
    cps = m.list("s1")
    assert [c.message_count for c in cps] == [3, 5, 6]
    assert cps[-1].token_usage == {"input_tokens": 10 + 30 + 50, "output_tokens": 15}


def test_async_anthropic_parse_and_output_format_stream_are_recorded_and_replayed() -> None:
    async def agent(url: str) -> list[Any]:
        client = wrap_anthropic(anthropic.AsyncAnthropic(base_url=url, api_key="k", max_retries=0))
        ask = {"model": "fake-claude", "max_tokens": 100, "output_format": Rolls}
        asked = [{"role": "user", "content": "Roll none."}]
        parsed = await client.messages.parse(**ask, messages=asked)
        async with client.messages.stream(**ask, messages=asked) as stream:
            streamed = await stream.get_final_message()
        await client.close()
        return [parsed.parsed_output, streamed.parsed_output]

    m = CheckpointManager()
    with FakeAnthropic(rolls=0) as fake, record_agent(m, run_id="ap1"):
        assert asyncio.run(agent(fake.url)) == [Rolls(rolls=0), Rolls(rolls=0)]
        assert [bool(r.get("stream")) for r in fake.requests] == [False, True]
    with record_agent(m, run_id="ap1", replay=True):
        assert asyncio.run(agent(nowhere())) == [Rolls(rolls=0), Rolls(rolls=0)]
