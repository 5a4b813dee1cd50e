"""Provides `wrap_anthropic`: an Anthropic client (or any with `messages.create`) whose calls,
inside `record_agent`, checkpoint the agent after every tool roundtrip (the `tool_result`
blocks for every `tool_use` of the previous answer are in) and are recorded; `AsyncAnthropic`
clients too. Streaming calls and calls outside a recording go straight to the client."""

from __future__ import annotations

import inspect
from typing import Any

from runtime.agents.adapters import Delegate, as_dict, wrap
from runtime.agents.record import current_recording

try:  # the SDK's own answer type when it is installed
    from anthropic.types import Message as _Message
except ImportError:  # pragma: no cover - the extra is not installed
    _Message = None  # type: ignore[assignment,misc,unused-ignore]

__all__ = ["roundtrip_done", "wrap_anthropic"]


def wrap_anthropic(client: Any) -> Any:
    """`client` with its messages calls recorded (see the module docstring)."""
    return _Client(client)


class _Client(Delegate):
    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.messages = _Messages(client.messages)


class _Messages(Delegate):
    def create(self, **kwargs: Any) -> Any:
        rec = current_recording()
        if rec is None or kwargs.get("stream"):
            return self._inner.create(**kwargs)
        if inspect.iscoroutinefunction(self._inner.create):
            return self._acreate(rec, kwargs)
        messages = _before(rec, kwargs)
        data, live = rec.model_call(
            provider="anthropic",
            request=kwargs,
            call=lambda: self._inner.create(**kwargs),
            encode=as_dict,
            usage=_usage,
        )
        return _after(rec, messages, data, live)

    async def _acreate(self, rec: Any, kwargs: dict[str, Any]) -> Any:
        messages = _before(rec, kwargs)
        data, live = await rec.amodel_call(
            provider="anthropic",
            request=kwargs,
            call=lambda: self._inner.create(**kwargs),
            encode=as_dict,
            usage=_usage,
        )
        return _after(rec, messages, data, live)


def _before(rec: Any, kwargs: dict[str, Any]) -> list[Any]:
    messages = list(kwargs.get("messages") or ())
    if roundtrip_done(messages):
        rec.checkpoint(messages)
    return messages


def _usage(data: dict[str, Any]) -> dict[str, Any]:
    return dict(data.get("usage") or {})


def _after(rec: Any, messages: list[Any], data: dict[str, Any], live: Any) -> Any:
    content = list(data.get("content") or [])
    uses_tools = any(isinstance(b, dict) and b.get("type") == "tool_use" for b in content)
    rec.final = None if uses_tools else [*messages, {"role": "assistant", "content": content}]
    if live is not None:
        return live
    return _Message.model_validate(data) if _Message is not None else wrap(data)


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
