"""Streamed model calls are recorded like the others: the real OpenAI and Anthropic SDKs against
fake servers on 127.0.0.1 stream chat completions, responses and messages (`stream=True`,
`messages.stream`); the answer their events make (usage included) is recorded, the agent is
checkpointed after every tool roundtrip, and a replay streams the recorded answers back with no
server at all."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from runtime import CheckpointManager, record_agent, side_effect
from tests.agents.fake_anthropic import FakeAnthropic
from tests.agents.fake_openai import FakeOpenAI

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

from runtime.agents.adapters.anthropic import wrap_anthropic  # noqa: E402
from runtime.agents.adapters.openai import wrap_openai  # noqa: E402

performed: list[str] = []


@side_effect
def send_email(to: str) -> str:
    performed.append(to)
    return f"sent to {to}"


@side_effect
def roll(n: int) -> int:
    performed.append(f"roll {n}")
    return n + 3


def nowhere() -> str:
    """A URL nobody listens at: a replay that called the model would fail."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def recorded_then_replayed(
    agent: Callable[[Any, str], list[Any]], url: str
) -> tuple[CheckpointManager, list[Any]]:
    """Run `agent(manager, url)` recorded, then replayed against no server; the two give the
    same conversation and the replay performs no effect."""
    performed.clear()
    m = CheckpointManager(agent="streamer")
    with record_agent(m, run_id="s1", agent="streamer"):
        live = agent(m, url)
    done = list(performed)
    with record_agent(m, run_id="s1", agent="streamer", replay=True):
        again = agent(m, nowhere())
    assert performed == done, "a replay performed an effect"
    assert json.loads(json.dumps(again, default=str)) == json.loads(json.dumps(live, default=str))
    return m, live


# -- OpenAI chat completions -------------------------------------------------------------------


def chat_turn(messages: list[dict[str, Any]], chunks: list[Any]) -> bool:
    """Join a streamed answer's chunks as an agent does, add it to `messages`, run the tools it
    calls; True when it called none (the agent is done)."""
    text, calls = "", {}
    for chunk in chunks:
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for call in choice.delta.tool_calls or ():
                slot = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                slot["id"] = call.id or slot["id"]
                slot["name"] += call.function.name or ""
                slot["arguments"] += call.function.arguments or ""
    if not calls:
        messages.append({"role": "assistant", "content": text})
        return True
    functions = [{"name": c["name"], "arguments": c["arguments"]} for c in calls.values()]
    messages.append(
        {
            "role": "assistant",
            "tool_calls": [
                {"id": c["id"], "type": "function", "function": fn}
                for c, fn in zip(calls.values(), functions, strict=True)
            ],
        }
    )
    for c in calls.values():
        result = send_email(**json.loads(c["arguments"]))
        messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})
    return False


def chat_stream_agent(_: CheckpointManager, url: str) -> list[Any]:
    client = wrap_openai(
        openai.OpenAI(base_url=url.rstrip("/") + "/v1", api_key="k", max_retries=0)
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Mail them."}]
    while True:
        stream = client.chat.completions.create(
            model="fake-model",
            messages=messages,
            stream=True,
            stream_options={"include_usage": True},
        )
        if chat_turn(messages, list(stream)):
            return messages


def test_a_streamed_chat_completion_loop_is_recorded_and_replayed() -> None:
    with FakeOpenAI(emails=2) as fake:
        m, messages = recorded_then_replayed(chat_stream_agent, fake.url.removesuffix("/v1"))
        assert len(fake.requests) == 3 and all(r["stream"] for r in fake.requests)
    assert messages[-1] == {"role": "assistant", "content": "Sent 2 emails."}
    assert performed == ["person1@example.com", "person2@example.com"]
    cps = m.list("s1")
    assert [c.message_count for c in cps] == [3, 5, 6]  # two roundtrips, then the answer
    assert cps[-1].messages == messages
    assert cps[-1].token_usage == {
        "prompt_tokens": 90,
        "completion_tokens": 15,
        "total_tokens": 105,
    }
    calls = m.store.llm_calls(cps[0].run_id)
    assert len(calls) == 3
    first = calls[0].response  # the assembled answer, as a call without stream=True gives it
    assert first["choices"][0]["message"]["tool_calls"][0]["function"] == {
        "name": "send_email",
        "arguments": '{"to": "person1@example.com"}',
    }
    assert first["choices"][0]["finish_reason"] == "tool_calls"
    assert calls[0].input_tokens == 10 and calls[0].output_tokens == 5


def test_an_async_streamed_chat_completion_is_recorded() -> None:
    async def agent(url: str) -> list[Any]:
        client = wrap_openai(openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0))
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Mail them."}]
        while True:
            stream = await client.chat.completions.create(
                model="fake", messages=messages, stream=True
            )
            if chat_turn(messages, [chunk async for chunk in stream]):
                await client.close()
                return messages

    async_mailer_recorded_and_replayed(agent)


def async_mailer_recorded_and_replayed(agent: Callable[[str], Awaitable[list[Any]]]) -> None:
    """Run an async agent that mails one person recorded, then replayed against no server."""
    m = CheckpointManager()
    performed.clear()
    with FakeOpenAI(emails=1) as fake, record_agent(m, run_id="as1"):
        messages = asyncio.run(agent(fake.url))
    assert messages[-1]["content"] == "Sent 1 emails." and performed == ["person1@example.com"]
    assert [c.message_count for c in m.list("as1")] == [3, 4]
    with record_agent(m, run_id="as1", replay=True):
        assert asyncio.run(agent(nowhere() + "/v1")) == messages
    assert performed == ["person1@example.com"]


# -- OpenAI responses ----------------------------------------------------------------------------


def responses_stream_agent(_: CheckpointManager, url: str) -> list[Any]:
    client = wrap_openai(
        openai.OpenAI(base_url=url.rstrip("/") + "/v1", api_key="k", max_retries=0)
    )
    items: list[Any] = [{"role": "user", "content": "Mail them."}]
    while True:
        output: list[Any] = []
        text = ""
        for event in client.responses.create(model="fake-model", input=items, stream=True):
            if event.type == "response.output_text.delta":
                text += event.delta
            elif event.type == "response.completed":
                output = [o.model_dump(exclude_none=True) for o in event.response.output]
        items += output
        calls = [o for o in output if o["type"] == "function_call"]
        if not calls:
            assert text == output[0]["content"][0]["text"]
            return items
        for call in calls:
            result = send_email(**json.loads(call["arguments"]))
            items.append(
                {"type": "function_call_output", "call_id": call["call_id"], "output": result}
            )


def test_a_streamed_responses_loop_is_recorded_and_replayed() -> None:
    with FakeOpenAI(emails=2) as fake:
        m, items = recorded_then_replayed(responses_stream_agent, fake.url.removesuffix("/v1"))
        assert len(fake.requests) == 3
    assert items[-1]["content"][0]["text"] == "Sent 2 emails."
    cps = m.list("s1")
    assert [c.message_count for c in cps] == [3, 5, 6]
    calls = m.store.llm_calls(cps[0].run_id)
    assert [c.response["output"][0]["type"] for c in calls] == ["function_call"] * 2 + ["message"]
    assert cps[-1].token_usage["input_tokens"] == 10 + 30 + 50


# -- Anthropic messages ------------------------------------------------------------------------


def anthropic_agent(streaming: str) -> Callable[[CheckpointManager, str], list[Any]]:
    def agent(_: CheckpointManager, url: str) -> list[Any]:
        client = wrap_anthropic(anthropic.Anthropic(base_url=url, api_key="k", max_retries=0))
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Roll twice."}]
        while True:
            ask = {"model": "fake-claude", "max_tokens": 100, "messages": messages}
            if streaming == "stream":
                with client.messages.stream(**ask) as stream:
                    text = "".join(stream.text_stream)
                    content = [
                        b.model_dump(exclude_none=True) for b in stream.get_final_message().content
                    ]
            else:
                events = list(client.messages.create(**ask, stream=True))
                text = "".join(
                    e.delta.text
                    for e in events
                    if e.type == "content_block_delta" and e.delta.type == "text_delta"
                )
                content = [b for b in client_final(events)]
            assert text == "".join(b["text"] for b in content if b["type"] == "text")
            if add_claude_answer(messages, content):
                return messages

    return agent


def add_claude_answer(messages: list[Any], content: list[dict[str, Any]]) -> bool:
    """Add an Anthropic answer's content to `messages` and the results of the `roll` tools it
    uses; True when it uses none (the agent is done)."""
    messages.append({"role": "assistant", "content": content})
    uses = [b for b in content if b["type"] == "tool_use"]
    if uses:
        results = [
            {"type": "tool_result", "tool_use_id": b["id"], "content": str(roll(**b["input"]))}
            for b in uses
        ]
        messages.append({"role": "user", "content": results})
    return not uses


def client_final(events: list[Any]) -> list[dict[str, Any]]:
    """The content blocks raw stream events make (as an agent reading them joins them)."""
    blocks: dict[int, dict[str, Any]] = {}
    inputs: dict[int, str] = {}
    for e in events:
        if e.type == "content_block_start":
            blocks[e.index] = e.content_block.model_dump(exclude_none=True)
        elif e.type == "content_block_delta" and e.delta.type == "text_delta":
            blocks[e.index]["text"] += e.delta.text
        elif e.type == "content_block_delta" and e.delta.type == "input_json_delta":
            inputs[e.index] = inputs.get(e.index, "") + e.delta.partial_json
    for i, text in inputs.items():
        blocks[i]["input"] = json.loads(text)
    return [blocks[i] for i in sorted(blocks)]


@pytest.mark.parametrize("streaming", ["stream", "create"])
def test_a_streamed_anthropic_loop_is_recorded_and_replayed(streaming: str) -> None:
    with FakeAnthropic(rolls=2) as fake:
        m, messages = recorded_then_replayed(anthropic_agent(streaming), fake.url)
        assert len(fake.requests) == 3 and all(r.get("stream") for r in fake.requests)
    assert messages[-1]["content"] == [{"type": "text", "text": "Rolled 2 times."}]
    assert performed == ["roll 1", "roll 2"]
    cps = m.list("s1")
    assert [c.message_count for c in cps] == [3, 5, 6]
    assert cps[-1].token_usage == {"input_tokens": 10 + 30 + 50, "output_tokens": 15}
    calls = m.store.llm_calls(cps[0].run_id)
    use = calls[0].response["content"][1]
    assert use == {"type": "tool_use", "id": "tu_1", "name": "roll", "input": {"n": 1}}
    assert calls[0].response["stop_reason"] == "tool_use"
    assert (calls[0].input_tokens, calls[0].output_tokens) == (10, 5)


def test_an_async_anthropic_stream_is_recorded_and_replayed() -> None:
    async def agent(url: str) -> list[Any]:
        client = wrap_anthropic(anthropic.AsyncAnthropic(base_url=url, api_key="k", max_retries=0))
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Roll once."}]
        while True:
            ask = {"model": "fake-claude", "max_tokens": 100, "messages": messages}
            async with client.messages.stream(**ask) as stream:
                text = "".join([t async for t in stream.text_stream])
                final = await stream.get_final_message()
            content = [b.model_dump(exclude_none=True) for b in final.content]
            assert text == "".join(b["text"] for b in content if b["type"] == "text")
            if add_claude_answer(messages, content):
                await client.close()
                return messages

    m = CheckpointManager()
    performed.clear()
    with FakeAnthropic(rolls=1) as fake, record_agent(m, run_id="aa1"):
        messages = asyncio.run(agent(fake.url))
    assert messages[-1]["content"] == [{"type": "text", "text": "Rolled 1 times."}]
    assert [c.message_count for c in m.list("aa1")] == [3, 4] and performed == ["roll 1"]
    calls = m.store.llm_calls(m.list("aa1")[0].run_id)
    assert calls[0].response["content"][1]["input"] == {"n": 1}
    with record_agent(m, run_id="aa1", replay=True):
        assert asyncio.run(agent(nowhere())) == messages
    assert performed == ["roll 1"]
