"""Provides `wrap_anthropic`: an Anthropic client (or any with `messages.create`) whose calls,
inside `record_agent`, checkpoint the agent after every tool roundtrip (the `tool_result`
blocks for every `tool_use` of the previous answer are in) and are recorded; `AsyncAnthropic`
clients too.

Streamed calls, `messages.create(stream=True)` and `messages.stream(...)`, are recorded as the
message their events make once the stream has been read to the end (for `messages.stream`: by
`get_final_message()`, `until_done()`, or reading it whole); replayed, they give the events of
the recorded message again. `messages.stream(output_format=...)` and `messages.parse(...)` are
the SDK's own helpers over the recorded call, so a replayed answer is parsed again into the
`output_format` type. Calls outside a recording go straight to the client. The loop itself is
`loop.Endpoint`'s."""

from __future__ import annotations

import json
from typing import Any

from runtime.agents.adapters import Delegate, as_dict
from runtime.agents.adapters.loop import Api, Endpoint, typed

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
        self.messages = Endpoint(client.messages, MessagesApi())


class MessagesApi(Api):
    """Messages: the conversation is `messages`; tool calls are an answer's `tool_use` blocks,
    answered by `tool_result` blocks in the next user message."""

    provider = "anthropic"
    event_type = _Event

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
