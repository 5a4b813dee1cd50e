"""Provides the contract between the interpreter and every language model: `ChatModel`.

A model takes a conversation (plain message dicts), the tools on offer and an optional JSON
schema for structured output, and returns one `Completion`. Providers (mock, sim, openai,
anthropic, replay) differ only behind `ChatModel.complete`; everything they return is plain,
immutable data that the recorder can store and a replay can serve back.

Messages are dicts::

    {"role": "system" | "user" | "assistant" | "tool", "content": str}
    # an assistant turn that called tools also has
    "tool_calls": [{"id": str, "name": str, "args": dict}]
    # a tool result also has
    "tool_call_id": str, "name": str
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, runtime_checkable

from runtime.errors import LLMError as LLMError  # raised by every provider; defined with the others

Message = dict[str, Any]

# The time.monotonic() instant by which the request in progress must end, or None: a time guard
# around the llm() call is about to run out. A model that can stop early (the scripted queue's
# `delayMs`) answers a `Completion` with `cancelled` set at that instant instead of waiting on.
DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("DEADLINE", default=None)


@dataclass(slots=True)
class CallTransport:
    """One `llm()` call's own transport options and what its HTTP retries did.

    `retries`, `timeout` (seconds per attempt; 0 for none) and the backoff (`initial` and `max`
    in seconds, `factor`) override the provider's when set, as the `retries`, `timeout` and
    `backoff` options of `llm()` ask. `events` collects, in order, each attempt that timed out
    (`{"hook": "onLLMTimeout", "data": {limitMs, attempt}}`) and each retry about to wait
    (`{"hook": "onLLMRetry", "data": {attempt, maxRetries, delayMs, reason, detail}}`), for the
    program's callbacks."""

    retries: int | None = None
    timeout: float | None = None
    initial: float | None = None
    factor: float | None = None
    max: float | None = None
    events: list[dict[str, Any]] = field(default_factory=list)


# The transport options and event list of the llm() call in progress (None outside one).
TRANSPORT: contextvars.ContextVar[CallTransport | None] = contextvars.ContextVar(
    "TRANSPORT", default=None
)


class DeadlinePassed(LLMError):
    """The request in progress was given up at its DEADLINE (a remote provider's request is
    cut short there); the interpreter treats it as a cancelled answer."""


class _Missing:
    """The type of `MISSING`: "no value", distinct from a `null` the model may answer."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A `def` offered to the model as a tool."""

    name: str
    description: str
    parameters: dict[str, Any]  # {"type": "object", "properties": {...}, "required": [...]}


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model asked for; `args` are the named arguments."""

    id: str
    name: str
    args: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """The message-dict form: `{"id", "name", "args"}`."""
        return {"id": self.id, "name": self.name, "args": self.args}


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens spent by one request and what they cost."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None  # USD; None when the price is unknown


@dataclass(frozen=True, slots=True)
class Completion:
    """One answer from a model.

    `value`, when present (not `MISSING`), is the final structured value for the request's
    `response_schema`, already unwrapped from `{"response": ...}`; the interpreter uses it
    instead of parsing `text`. Mock and sim answers always carry it; the HTTP providers set it
    when the reply parsed and matched the schema, and leave it `MISSING` otherwise, so that
    `schema.parse_structured(text, schema)` raises the error that names the reply.
    """

    text: str  # the assistant message content ("" when only tool calls)
    tool_calls: tuple[ToolCall, ...] = ()
    value: Any = MISSING
    usage: Usage = field(default_factory=Usage)
    model: str = ""  # e.g. "gpt-4o-mini"
    provider: str = ""  # "openai" | "anthropic" | "mock" | "sim" | "replay"
    latency_ms: float = 0.0
    raw: dict[str, Any] | None = None  # provider response body; secrets never included
    cancelled: bool = False  # stopped at its DEADLINE: no answer (the request is made again)
    # the timeouts and retries before this answer (`CallTransport.events`), kept so a replay
    # runs the same onLLMTimeout / onLLMRetry callbacks
    transport_events: tuple[dict[str, Any], ...] = ()

    def message(self) -> Message:
        """The assistant message to append to the thread for this answer."""
        msg: Message = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            msg["tool_calls"] = [c.to_json() for c in self.tool_calls]
        return msg

    def to_json(self) -> dict[str, Any]:
        """A plain-JSON record of this answer (for the run store and replay)."""
        out: dict[str, Any] = {
            "text": self.text,
            "tool_calls": [c.to_json() for c in self.tool_calls],
            "usage": {
                "input_tokens": self.usage.input_tokens,
                "output_tokens": self.usage.output_tokens,
                "cost": self.usage.cost,
            },
            "model": self.model,
            "provider": self.provider,
            "latency_ms": self.latency_ms,
            "raw": self.raw,
        }
        if self.value is not MISSING:
            out["value"] = self.value
        if self.cancelled:
            out["cancelled"] = True
        if self.transport_events:
            out["transport_events"] = list(self.transport_events)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Completion:
        """The inverse of `to_json`."""
        usage = data.get("usage") or {}
        return cls(
            text=str(data.get("text", "")),
            tool_calls=tuple(
                ToolCall(str(c["id"]), str(c["name"]), dict(c.get("args") or {}))
                for c in data.get("tool_calls") or ()
            ),
            value=data["value"] if "value" in data else MISSING,
            usage=Usage(
                int(usage.get("input_tokens", 0)),
                int(usage.get("output_tokens", 0)),
                usage.get("cost"),
            ),
            model=str(data.get("model", "")),
            provider=str(data.get("provider", "")),
            latency_ms=float(data.get("latency_ms", 0.0)),
            raw=data.get("raw"),
            cancelled=bool(data.get("cancelled", False)),
            transport_events=tuple(
                e for e in data.get("transport_events") or () if isinstance(e, dict)
            ),
        )


@runtime_checkable
class ChatModel(Protocol):
    """What the interpreter calls for every `llm()` request (and every tool round)."""

    provider: str  # "openai" | "anthropic" | "mock" | "sim" | "replay"
    model: str  # the model name without the provider, e.g. "gpt-4o-mini"

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        response_schema: dict[str, Any] | None,
        params: dict[str, Any],
    ) -> Completion:
        """Answer the conversation `messages`.

        `tools` may be called (the answer then has `tool_calls`); `response_schema` asks for
        JSON matching it; `params` may hold `model`, `temperature`, `maxTokens`. Raises
        `LLMError` with a message that names the provider and the fix.
        """
        ...


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret replaced by `***` (for error messages and recorded bodies)."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def redact_json(value: Any, secrets: Iterable[str]) -> Any:
    """A copy of a JSON value with every secret in its strings replaced by `***`."""
    keys = [s for s in secrets if s and len(s) >= 4]
    if not keys:
        return value

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return redact(v, keys)
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {redact(str(k), keys): walk(x) for k, x in v.items()}
        return v

    return walk(value)


def last_user_text(messages: list[Message]) -> str:
    """The content of the last user message ("" when there is none)."""
    for msg in reversed(messages):
        if msg.get("role") == "user":
            return content_text(msg.get("content"))
    return ""


def content_text(content: Any) -> str:
    """A message's content as text: strings as they are, anything else as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False)


def content_parts(content: Any) -> list[dict[str, Any]] | None:
    """A multimodal message's parts (`{type: "text", text}`, `{type: "image" | "file", source}`,
    as std::thread's attachments make them), or None for a plain content."""
    if not isinstance(content, list) or not content:
        return None
    if not all(isinstance(p, dict) and isinstance(p.get("type"), str) for p in content):
        return None
    return content


def data_uri(source: dict[str, Any]) -> str:
    """An attachment source as a URL a provider fetches or decodes (URL or data: URI)."""
    if source.get("kind") == "url":
        return str(source.get("url", ""))
    return f"data:{source.get('mimeType', 'application/octet-stream')};base64,{source.get('base64', '')}"
