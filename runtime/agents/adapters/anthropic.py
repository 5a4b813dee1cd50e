"""Provides `wrap_anthropic`: an Anthropic client (or any with `messages.create`) whose calls,
inside `record_agent`, checkpoint the agent after every tool roundtrip (the `tool_result`
blocks for every `tool_use` of the previous answer are in) and are recorded; `AsyncAnthropic`
clients too.

Streamed calls, `messages.create(stream=True)` and `messages.stream(...)`, are recorded as the
message their events make once the stream has been read to the end (for `messages.stream`: by
`get_final_message()`, `until_done()` or leaving its `with` block); replayed, they give the
events of the recorded message again (`messages.stream` then gives a stream with `text_stream`,
`get_final_message()`, `get_final_text()` and `until_done()`). Calls outside a recording go
straight to the client. The loop itself is `loop.Endpoint`'s."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

from runtime.agents.adapters import Delegate, as_dict
from runtime.agents.adapters.loop import Api, Endpoint, ReplayStream, is_async, typed
from runtime.agents.record import current_recording

try:  # the SDK's own types when it is installed
    from anthropic.types import Message as _Message
    from anthropic.types import RawMessageStreamEvent as _Event
except ImportError:  # pragma: no cover - the extra is not installed
    _Message = _Event = None  # type: ignore[assignment,misc,unused-ignore]

__all__ = ["roundtrip_done", "wrap_anthropic"]


def wrap_anthropic(client: Any) -> Any:
    """`client` with its messages calls recorded (see the module docstring)."""
    return _Client(client)


class _Client(Delegate):
    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.messages = _Messages(client.messages, MessagesApi())


class MessagesApi(Api):
    """Messages: the conversation is `messages`; tool calls are an answer's `tool_use` blocks,
    answered by `tool_result` blocks in the next user message."""

    provider = "anthropic"

    def roundtrip_done(self, conversation: list[Any]) -> bool:
        return roundtrip_done(conversation)

    def final(self, conversation: list[Any], answer: dict[str, Any]) -> list[Any] | None:
        content = list(answer.get("content") or [])
        uses_tools = any(isinstance(b, dict) and b.get("type") == "tool_use" for b in content)
        return None if uses_tools else [*conversation, {"role": "assistant", "content": content}]

    def answer(self, data: dict[str, Any]) -> Any:
        return typed(_Message, data)

    def assemble(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        """The message a stream's raw events make (text and tool input joined)."""
        message: dict[str, Any] = {"role": "assistant", "content": [], "usage": {}}
        blocks: dict[int, dict[str, Any]] = {}
        inputs: dict[int, str] = {}
        for event in events:
            kind, at = event.get("type"), int(event.get("index") or 0)
            if kind == "message_start":
                message = {**dict(event.get("message") or {}), "content": []}
            elif kind == "content_block_start":
                blocks[at] = dict(event.get("content_block") or {})
                if blocks[at].get("type") == "tool_use":
                    inputs[at] = ""
            elif kind == "content_block_delta":
                _add_delta(blocks.setdefault(at, {}), inputs, at, event.get("delta") or {})
            elif kind == "message_delta":
                message.update(event.get("delta") or {})
                usage = dict(message.get("usage") or {})
                usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
                message["usage"] = usage
        for at, text in inputs.items():
            blocks[at]["input"] = json.loads(text) if text else blocks[at].get("input") or {}
        message["content"] = [blocks[at] for at in sorted(blocks)]
        return message

    def events(self, answer: dict[str, Any]) -> list[Any]:
        """The raw events of a stream giving `answer`: each block whole in one delta."""
        usage = dict(answer.get("usage") or {})
        start = {**answer, "content": [], "stop_reason": None, "stop_sequence": None}
        out: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
        for at, block in enumerate(answer.get("content") or ()):
            kind = block.get("type")
            if kind == "text":
                first, delta = {**block, "text": ""}, {"type": "text_delta", "text": block["text"]}
            elif kind == "tool_use":
                first = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            else:
                first, delta = block, None
            out.append({"type": "content_block_start", "index": at, "content_block": first})
            if delta is not None:
                out.append({"type": "content_block_delta", "index": at, "delta": delta})
            out.append({"type": "content_block_stop", "index": at})
        stop = {"stop_reason": answer.get("stop_reason"), "stop_sequence": None}
        out.append(
            {
                "type": "message_delta",
                "delta": stop,
                "usage": {"output_tokens": usage.get("output_tokens", 0)},
            }
        )
        out.append({"type": "message_stop"})
        return [typed(_Event, e) for e in out]


def _add_delta(
    block: dict[str, Any], inputs: dict[int, str], at: int, delta: dict[str, Any]
) -> None:
    kind = delta.get("type")
    if kind == "text_delta":
        block["text"] = block.get("text", "") + delta.get("text", "")
    elif kind == "input_json_delta":
        inputs[at] = inputs.get(at, "") + delta.get("partial_json", "")
    elif kind == "thinking_delta":
        block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
    elif kind == "signature_delta":
        block["signature"] = delta.get("signature", "")


class _Messages(Endpoint):
    """`messages.create` (the loop's) and `messages.stream`."""

    def stream(self, **kwargs: Any) -> Any:
        rec = current_recording()
        if rec is None or "output_format" in kwargs:
            return self._inner.stream(**kwargs)
        sync = not is_async(self._inner.create)
        conversation = self._before(rec, kwargs)
        request = {**kwargs, "stream": True}
        where, plain, data = rec.lookup(request, self._api.usage)
        if data is not None:
            rec.final = self._api.final(conversation, data)
            return (_Replayed if sync else _AReplayed)(data, self._api.events(data))

        def done(message: Any) -> None:
            data = rec.keep(where, plain, self._api.provider, request, message, self._api.usage)
            rec.final = self._api.final(conversation, data)

        return _Live(self._inner.stream(**kwargs), done)


class _Live:
    """The SDK's stream manager (sync or async), its stream recorded once read to the end."""

    def __init__(self, manager: Any, done: Any) -> None:
        self._manager = manager
        self._done = done
        self._stream: _LiveStream | None = None

    def __enter__(self) -> _LiveStream:
        self._stream = _LiveStream(self._manager.__enter__(), self._done)
        return self._stream

    def __exit__(self, *exc: Any) -> Any:
        if self._stream is not None and exc[0] is None:
            self._stream.record()
        return self._manager.__exit__(*exc)

    async def __aenter__(self) -> _ALiveStream:
        self._stream = _ALiveStream(await self._manager.__aenter__(), self._done)
        return self._stream

    async def __aexit__(self, *exc: Any) -> Any:
        if self._stream is not None and exc[0] is None:
            self._stream.record()
        return await self._manager.__aexit__(*exc)


class _LiveStream(Delegate):
    def __init__(self, inner: Any, done: Any) -> None:
        super().__init__(inner)
        self._done = done

    def record(self) -> None:
        """Record the message once the stream has ended (it has a stop reason)."""
        try:
            message = self._inner.current_message_snapshot
        except AssertionError:  # nothing read yet
            return
        if self._done is not None and getattr(message, "stop_reason", None) is not None:
            done, self._done = self._done, None
            done(as_dict(message))

    def __iter__(self) -> Iterator[Any]:
        yield from self._inner
        self.record()

    def get_final_message(self) -> Any:
        message = self._inner.get_final_message()
        self.record()
        return message

    def get_final_text(self) -> str:
        text = self._inner.get_final_text()
        self.record()
        return str(text)

    def until_done(self) -> None:
        self._inner.until_done()
        self.record()


class _ALiveStream(_LiveStream):
    async def __aiter__(self) -> AsyncIterator[Any]:
        async for event in self._inner:
            yield event
        self.record()

    async def get_final_message(self) -> Any:
        message = await self._inner.get_final_message()
        self.record()
        return message

    async def get_final_text(self) -> str:  # type: ignore[override]
        text = await self._inner.get_final_text()
        self.record()
        return str(text)

    async def until_done(self) -> None:  # type: ignore[override]
        await self._inner.until_done()
        self.record()


class _Replayed:
    """A recorded message given back as `messages.stream` gives one (context manager and
    stream in one)."""

    def __init__(self, data: dict[str, Any], events: list[Any]) -> None:
        self._data = data
        self._events = ReplayStream(events)
        self.text_stream: Any = self._texts()

    def _texts(self) -> Iterator[str]:
        for event in self._events:
            text = _text_of(event)
            if text is not None:
                yield text

    def __enter__(self) -> _Replayed:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._events)

    def close(self) -> None:
        self._events.close()

    def until_done(self) -> None:
        self.close()

    @property
    def current_message_snapshot(self) -> Any:
        return typed(_Message, self._data)

    def get_final_message(self) -> Any:
        return self.current_message_snapshot

    def get_final_text(self) -> str:
        content = self._data.get("content") or ()
        return "".join(b.get("text", "") for b in content if b.get("type") == "text")


class _AReplayed(_Replayed):
    """`_Replayed` for an async client: `async with`, `async for`, awaited methods."""

    def __init__(self, data: dict[str, Any], events: list[Any]) -> None:
        super().__init__(data, events)
        self.text_stream = self._atexts()

    async def _atexts(self) -> AsyncIterator[str]:
        async for event in self._events:
            text = _text_of(event)
            if text is not None:
                yield text

    async def __aenter__(self) -> _AReplayed:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()

    def __aiter__(self) -> ReplayStream:
        return self._events

    async def until_done(self) -> None:  # type: ignore[override]
        self.close()

    async def get_final_message(self) -> Any:
        return self.current_message_snapshot

    async def get_final_text(self) -> str:  # type: ignore[override]
        return super().get_final_text()


def _text_of(event: Any) -> str | None:
    """The text a raw stream event adds, None for other events."""
    delta = getattr(event, "delta", None)
    if getattr(event, "type", "") != "content_block_delta" or delta is None:
        return None
    return delta.text if getattr(delta, "type", "") == "text_delta" else None


def _blocks(message: Any, kind: str) -> list[dict[str, Any]]:
    content = as_dict(message).get("content")
    if not isinstance(content, list):
        return []
    return [as_dict(b) for b in content if as_dict(b).get("type") == kind]


def roundtrip_done(messages: list[Any]) -> bool:
    """Whether the last message holds the results of every `tool_use` of the answer before it."""
    if len(messages) < 2 or as_dict(messages[-1]).get("role") != "user":
        return False
    answered = {b.get("tool_use_id") for b in _blocks(messages[-1], "tool_result")}
    uses = {b.get("id") for b in _blocks(messages[-2], "tool_use")}
    return bool(uses) and uses <= answered
