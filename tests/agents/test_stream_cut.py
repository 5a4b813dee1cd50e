"""A stream left before its end is recorded as what it received, marked cut: a resumed agent asks
the model again rather than take the cut answer for the model's (and no side-effecting tool runs
twice), a replay gives the events that were received and no more. The real SDKs against fake
servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from runtime import CheckpointManager, record_agent
from runtime.agents.record import CUT, ReplayMissing, current_recording
from tests.agents.fake_anthropic import FakeAnthropic
from tests.agents.fake_openai import FakeOpenAI
from tests.agents.test_stream_helpers import add_chat_answer, add_response, openai_client
from tests.agents.test_streaming import add_claude_answer, chat_turn, nowhere, performed

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

from runtime.agents.adapters.anthropic import wrap_anthropic  # noqa: E402
from runtime.agents.adapters.openai import wrap_openai  # noqa: E402


class Crash(Exception):
    """The agent's process dying while it reads a stream."""


def tap(events: Iterable[Any], crash: bool) -> Iterator[Any]:
    """`events`, or the first two of them and then a `Crash`."""
    for n, event in enumerate(events):
        if crash and n == 2:
            raise Crash("killed while reading")
        yield event


def agent(flavour: str, url: str, crash_at: int | None = None) -> list[Any]:
    """A tool loop reading each answer as a stream in one of the SDKs' ways, from the recorded
    run's last checkpoint; its model call number `crash_at` (from 1) crashes two events into
    its stream."""
    asked = 0
    rec = current_recording()
    resumed = list(rec.messages) if rec is not None else []

    def crash() -> bool:
        nonlocal asked
        asked += 1
        return asked == crash_at

    if flavour == "anthropic":
        client = wrap_anthropic(anthropic.Anthropic(base_url=url, api_key="k", max_retries=0))
        messages: list[Any] = resumed or [{"role": "user", "content": "Roll twice."}]
        while True:
            ask = {"model": "fake-claude", "max_tokens": 100, "messages": messages}
            with client.messages.stream(**ask) as stream:
                for _ in tap(stream, crash()):
                    pass
                content = [
                    b.model_dump(exclude_none=True) for b in stream.get_final_message().content
                ]
            if add_claude_answer(messages, content):
                return messages
    client = openai_client(url)
    if flavour == "responses.stream":
        items: list[Any] = resumed or [{"role": "user", "content": "Mail them."}]
        while True:
            with client.responses.stream(model="fake-model", input=items) as stream:
                for _ in tap(stream, crash()):
                    pass
                output = stream.get_final_response().output
            if add_response(items, output):
                return items
    messages = resumed or [{"role": "user", "content": "Mail them."}]
    while True:
        if flavour == "chat":
            chunks = client.chat.completions.create(
                model="fake-model", messages=messages, stream=True
            )
            if chat_turn(messages, list(tap(chunks, crash()))):
                return messages
            continue
        with client.chat.completions.stream(model="fake-model", messages=messages) as stream:
            for _ in tap(stream, crash()):
                pass
            message = stream.get_final_completion().choices[0].message
        if add_chat_answer(messages, message):
            return messages


FLAVOURS = ["chat", "chat.stream", "responses.stream", "anthropic"]


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_stream_cut_by_a_crash_is_asked_again_on_resume(flavour: str) -> None:
    fake = FakeAnthropic(rolls=2) if flavour == "anthropic" else FakeOpenAI(emails=2)
    url = fake.url.removesuffix("/v1")
    m = CheckpointManager(agent="cutter")
    performed.clear()
    with fake:
        with pytest.raises(Crash), record_agent(m, run_id="c1"):
            agent(flavour, url, crash_at=2)  # the second roundtrip's answer is cut
        assert len(fake.requests) == 2 and len(performed) == 1
        run = m.find_run("c1")
        assert run is not None and run.status == "failed"
        cut = m.store.llm_calls(run.id)[-1].response[CUT]
        assert cut["reason"] == "closed before its end" and len(cut["events"]) >= 2
        with record_agent(m, run_id="c1"):  # resumed: asks again, the cut answer is not reused
            messages = agent(flavour, url)
        assert len(fake.requests) == 4  # the cut call again, then the final answer
    assert len(performed) == 2  # the tool of roundtrip 1 ran once, in the crashed process
    assert [c.message_count for c in m.list("c1")] == [3, 5, 6]
    assert m.list("c1")[-1].messages == messages
    with record_agent(m, run_id="c1", replay=True):  # the cut answer was asked again: skipped
        assert json.dumps(agent(flavour, nowhere()), default=str) == json.dumps(
            messages, default=str
        )
    assert len(performed) == 2


def partial_reader(url: str, read: int | None) -> list[Any]:
    """An agent that takes the first `read` chunks of a streamed answer (all with None) and
    leaves the stream."""
    client = openai_client(url)
    messages: list[Any] = [{"role": "user", "content": "Say it."}]
    text = ""
    with client.chat.completions.create(
        model="fake-model", messages=messages, stream=True
    ) as chunks:
        for n, chunk in enumerate(chunks):
            if n == read:
                break
            text += "".join(c.delta.content or "" for c in chunk.choices)
    return [*messages, {"role": "assistant", "content": text}]


def test_a_stream_left_early_replays_what_was_received_and_no_more() -> None:
    m = CheckpointManager()
    with FakeOpenAI(emails=0) as fake, record_agent(m, run_id="p1"):
        live = partial_reader(fake.url.removesuffix("/v1"), read=3)
    assert live[-1]["content"] == "Sent 0 e"  # the first 3 chunks: the role, then 4 characters each
    run = m.find_run("p1")
    assert run is not None and run.status == "finished"
    call = m.store.llm_calls(run.id)[0]
    assert call.response[CUT]["reason"] == "closed before its end"
    assert len(call.response[CUT]["events"]) == 4  # read ahead of the break by one
    assert m.list("p1") == []  # a cut answer is no final answer: nothing to checkpoint
    with record_agent(m, run_id="p1", replay=True):
        assert partial_reader(nowhere(), read=3) == live
    with pytest.raises(ReplayMissing, match="closed before its end after 4 events"):
        with record_agent(m, run_id="p1", replay=True):
            partial_reader(nowhere(), read=None)


def test_an_async_stream_left_early_is_recorded_cut() -> None:
    async def reader(url: str, read: int) -> str:
        client = wrap_openai(openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0))
        text = ""
        ask = {"model": "fake-model", "messages": [{"role": "user", "content": "Say it."}]}
        async with await client.chat.completions.create(**ask, stream=True) as chunks:
            n = 0
            async for chunk in chunks:
                if n == read:
                    break
                text += "".join(c.delta.content or "" for c in chunk.choices)
                n += 1
        await client.close()
        return text

    m = CheckpointManager()
    with FakeOpenAI(emails=0) as fake, record_agent(m, run_id="ap1"):
        assert asyncio.run(reader(fake.url, read=2)) == "Sent"
    run = m.find_run("ap1")
    assert run is not None
    cut = m.store.llm_calls(run.id)[0].response[CUT]
    assert cut["reason"] == "closed before its end" and len(cut["events"]) == 3
    with record_agent(m, run_id="ap1", replay=True):
        assert asyncio.run(reader(nowhere() + "/v1", read=2)) == "Sent"
