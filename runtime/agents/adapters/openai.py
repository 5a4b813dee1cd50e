"""Provides `wrap_openai`: an OpenAI client (or any with `chat.completions.create`) whose chat
completions, inside `record_agent`, checkpoint the agent after every tool roundtrip and are
recorded (a resumed or replayed agent gets the recorded answer back), and so do its responses
(`client.responses.create(input=[...])`); `AsyncOpenAI` clients too.

Streamed calls (`stream=True`) are recorded as the answer their chunks (chat) or events
(responses) make once the stream is read to the end; a chat stream carries usage only when
asked for it (`stream_options={"include_usage": True}`). Replayed, a streamed call gives a
stream of chunks or events made from the recorded answer. The SDK's helpers,
`chat.completions.stream`/`parse` and `responses.stream`/`parse`, run over the recorded call, so
a replayed answer is parsed again into the `response_format`/`text_format` type. Calls outside
a recording go straight to the client. The loop itself is `loop.Endpoint`'s."""

from __future__ import annotations

from typing import Any

from runtime.agents.adapters import Delegate, as_dict
from runtime.agents.adapters.loop import Api, Endpoint, typed

try:  # the SDK's own types when it is installed
    from openai.types.chat import ChatCompletion as _Completion
    from openai.types.chat import ChatCompletionChunk as _Chunk
    from openai.types.responses import Response as _Response
    from openai.types.responses import ResponseStreamEvent as _Event
except ImportError:  # pragma: no cover - the extra is not installed
    _Completion = _Chunk = _Response = _Event = None  # type: ignore[assignment,misc,unused-ignore]

__all__ = ["items_roundtrip_done", "roundtrip_done", "wrap_openai"]


def wrap_openai(client: Any) -> Any:
    """`client` with its chat completions and responses recorded (see the module docstring)."""
    return _Client(client)


class _Client(Delegate):
    def __init__(self, client: Any) -> None:
        super().__init__(client)
        if getattr(getattr(client, "chat", None), "completions", None) is not None:
            self.chat = _Chat(client.chat)
        if getattr(client, "responses", None) is not None:
            self.responses = Endpoint(client.responses, ResponsesApi())


class _Chat(Delegate):
    def __init__(self, chat: Any) -> None:
        super().__init__(chat)
        self.completions = Endpoint(chat.completions, ChatApi())


class ChatApi(Api):
    """Chat completions: the conversation is `messages`; tool calls are an assistant message's
    `tool_calls`, answered by `tool` messages."""

    provider = "openai"
    event_type = _Chunk

    def roundtrip_done(self, conversation: list[Any]) -> bool:
        return roundtrip_done(conversation)

    def final(self, conversation: list[Any], answer: dict[str, Any]) -> list[Any] | None:
        message = dict((answer.get("choices") or [{}])[0].get("message") or {})
        return None if message.get("tool_calls") else [*conversation, message]

    def answer(self, data: dict[str, Any]) -> Any:
        return typed(_Completion, data)

    def assemble(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        """A chat completion from its chunks (the first choice's deltas, joined)."""
        first = events[0] if events else {}
        message: dict[str, Any] = {"role": "assistant"}
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        finish, usage = None, None
        for chunk in events:
            usage = chunk.get("usage") or usage
            for choice in chunk.get("choices") or ():
                if choice.get("index", 0) != 0:
                    continue
                delta = choice.get("delta") or {}
                text.append(delta.get("content") or "")
                for call in delta.get("tool_calls") or ():
                    _add_call_delta(calls, call)
                finish = choice.get("finish_reason") or finish
        message["content"] = "".join(text) if any(text) or not calls else None
        if calls:
            message["tool_calls"] = [calls[i] for i in sorted(calls)]
        out: dict[str, Any] = {
            "id": first.get("id", ""),
            "object": "chat.completion",
            "created": first.get("created", 0),
            "model": first.get("model", ""),
            "choices": [{"index": 0, "message": message, "finish_reason": finish or "stop"}],
        }
        if usage:
            out["usage"] = usage
        return out

    def events(self, answer: dict[str, Any]) -> list[Any]:
        """The chunks of a stream giving `answer`: the message in one delta, then the finish
        reason, then the usage when it was recorded."""
        choice = (answer.get("choices") or [{}])[0]
        message = dict(choice.get("message") or {})
        delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
        if message.get("tool_calls"):
            delta["tool_calls"] = [
                {"index": i, **call} for i, call in enumerate(message["tool_calls"])
            ]
        head = {
            "id": answer.get("id", ""),
            "object": "chat.completion.chunk",
            "created": answer.get("created", 0),
            "model": answer.get("model", ""),
        }
        chunks = [
            {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {
                **head,
                "choices": [
                    {"index": 0, "delta": {}, "finish_reason": choice.get("finish_reason")}
                ],
            },
        ]
        if answer.get("usage"):
            chunks.append({**head, "choices": [], "usage": answer["usage"]})
        return [typed(_Chunk, c) for c in chunks]


def _add_call_delta(calls: dict[int, dict[str, Any]], delta: dict[str, Any]) -> None:
    """Add one streamed piece of a tool call (its id, name, a piece of its arguments)."""
    call = calls.setdefault(
        int(delta.get("index") or 0),
        {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
    )
    call["id"] = delta.get("id") or call["id"]
    fn = delta.get("function") or {}
    call["function"]["name"] += fn.get("name") or ""
    call["function"]["arguments"] += fn.get("arguments") or ""


class ResponsesApi(Api):
    """The responses API: the conversation is `input`, a list of items; tool calls are
    `function_call` items answered by `function_call_output` items."""

    provider = "openai"
    field = "input"
    event_type = _Event

    def applies(self, request: dict[str, Any]) -> bool:
        return isinstance(request.get("input"), list)

    def roundtrip_done(self, conversation: list[Any]) -> bool:
        return items_roundtrip_done(conversation)

    def final(self, conversation: list[Any], answer: dict[str, Any]) -> list[Any] | None:
        output = list(answer.get("output") or [])
        calls = any(isinstance(o, dict) and o.get("type") == "function_call" for o in output)
        return None if calls else [*conversation, *output]

    def answer(self, data: dict[str, Any]) -> Any:
        return typed(_Response, data)

    def assemble(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        """The response a stream's last event (`response.completed`, or how it ended) holds."""
        for event in reversed(events):
            if isinstance(event.get("response"), dict):
                return dict(event["response"])
        return {"output": []}

    def events(self, answer: dict[str, Any]) -> list[Any]:
        """The events of a stream giving `answer`: created, each output item added (its text
        as one delta) and done, completed."""
        started = {**answer, "status": "in_progress", "output": []}
        out: list[dict[str, Any]] = [{"type": "response.created", "response": started}]
        for i, item in enumerate(answer.get("output") or ()):
            out.append({"type": "response.output_item.added", "output_index": i, "item": item})
            for j, part in enumerate(item.get("content") or ()):
                if isinstance(part, dict) and part.get("type") == "output_text":
                    out.append(
                        {
                            "type": "response.output_text.delta",
                            "item_id": item.get("id", ""),
                            "output_index": i,
                            "content_index": j,
                            "delta": part.get("text", ""),
                            "logprobs": [],
                        }
                    )
            out.append({"type": "response.output_item.done", "output_index": i, "item": item})
        out.append({"type": "response.completed", "response": answer})
        return [typed(_Event, {**e, "sequence_number": n}) for n, e in enumerate(out)]


def items_roundtrip_done(items: list[Any]) -> bool:
    """Whether `items` end with a `function_call_output` for every `function_call` of the
    answer before them (the responses API's tool roundtrip)."""
    i = len(items) - 1
    answered = set()
    while i >= 0 and as_dict(items[i]).get("type") == "function_call_output":
        answered.add(as_dict(items[i]).get("call_id"))
        i -= 1
    calls = set()
    while i >= 0 and as_dict(items[i]).get("type") == "function_call":
        calls.add(as_dict(items[i]).get("call_id"))
        i -= 1
    return bool(calls) and calls <= answered


def roundtrip_done(messages: list[Any]) -> bool:
    """Whether `messages` end with the results of every tool call of the last assistant
    message: a tool roundtrip is complete, the state is worth a checkpoint."""
    i = len(messages) - 1
    answered = set()
    while i >= 0 and as_dict(messages[i]).get("role") == "tool":
        answered.add(as_dict(messages[i]).get("tool_call_id"))
        i -= 1
    if i < 0 or not answered:
        return False
    calls = {c.get("id") for c in as_dict(messages[i]).get("tool_calls") or ()}
    return bool(calls) and calls <= answered
