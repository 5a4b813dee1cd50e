"""Provides `wrap_openai`: an OpenAI client (or any with `chat.completions.create`) whose chat
completions, inside `record_agent`, checkpoint the agent after every tool roundtrip and are
recorded (a resumed or replayed agent gets the recorded answer back), and so do its responses
(`client.responses.create(input=[...])`); `AsyncOpenAI` clients too.
Streaming calls and calls outside a recording go straight to the client."""

from __future__ import annotations

import inspect
from typing import Any

from runtime.agents.adapters import Delegate, as_dict, wrap
from runtime.agents.record import current_recording

try:  # the SDK's own answer types when it is installed
    from openai.types.chat import ChatCompletion as _Completion
    from openai.types.responses import Response as _Response
except ImportError:  # pragma: no cover - the extra is not installed
    _Completion = None  # type: ignore[assignment,misc,unused-ignore]
    _Response = None  # type: ignore[assignment,misc,unused-ignore]

__all__ = ["items_roundtrip_done", "roundtrip_done", "wrap_openai"]


def wrap_openai(client: Any) -> Any:
    """`client` with its chat completions recorded (see the module docstring)."""
    return _Client(client)


class _Client(Delegate):
    def __init__(self, client: Any) -> None:
        super().__init__(client)
        if getattr(getattr(client, "chat", None), "completions", None) is not None:
            self.chat = _Chat(client.chat)
        if getattr(client, "responses", None) is not None:
            self.responses = _Responses(client.responses)


class _Chat(Delegate):
    def __init__(self, chat: Any) -> None:
        super().__init__(chat)
        self.completions = _Completions(chat.completions)


class _Completions(Delegate):
    def create(self, **kwargs: Any) -> Any:
        rec = current_recording()
        if rec is None or kwargs.get("stream"):
            return self._inner.create(**kwargs)
        if inspect.iscoroutinefunction(self._inner.create):
            return self._acreate(rec, kwargs)
        messages = _before(rec, kwargs)
        data, live = rec.model_call(
            provider="openai",
            request=kwargs,
            call=lambda: self._inner.create(**kwargs),
            encode=as_dict,
            usage=_usage,
        )
        return _after(rec, messages, data, live)

    async def _acreate(self, rec: Any, kwargs: dict[str, Any]) -> Any:
        messages = _before(rec, kwargs)
        data, live = await rec.amodel_call(
            provider="openai",
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
    choices = data.get("choices") or [{}]
    message = dict(choices[0].get("message") or {})
    rec.final = None if message.get("tool_calls") else [*messages, message]
    if live is not None:
        return live
    return _Completion.model_validate(data) if _Completion is not None else wrap(data)


class _Responses(Delegate):
    """The responses API: the conversation is `input`, a list of items, tool calls are
    `function_call` items answered by `function_call_output` items."""

    def create(self, **kwargs: Any) -> Any:
        rec = current_recording()
        items = kwargs.get("input")
        if rec is None or kwargs.get("stream") or not isinstance(items, list):
            return self._inner.create(**kwargs)
        if inspect.iscoroutinefunction(self._inner.create):
            return self._acreate(rec, kwargs)
        items = _items_before(rec, kwargs)
        data, live = rec.model_call(
            provider="openai",
            request=kwargs,
            call=lambda: self._inner.create(**kwargs),
            encode=as_dict,
            usage=_usage,
        )
        return _items_after(rec, items, data, live)

    async def _acreate(self, rec: Any, kwargs: dict[str, Any]) -> Any:
        items = _items_before(rec, kwargs)
        data, live = await rec.amodel_call(
            provider="openai",
            request=kwargs,
            call=lambda: self._inner.create(**kwargs),
            encode=as_dict,
            usage=_usage,
        )
        return _items_after(rec, items, data, live)


def _items_before(rec: Any, kwargs: dict[str, Any]) -> list[Any]:
    items = list(kwargs.get("input") or ())
    if items_roundtrip_done(items):
        rec.checkpoint(items)
    return items


def _items_after(rec: Any, items: list[Any], data: dict[str, Any], live: Any) -> Any:
    output = list(data.get("output") or [])
    calls = any(isinstance(o, dict) and o.get("type") == "function_call" for o in output)
    rec.final = None if calls else [*items, *output]
    if live is not None:
        return live
    return _Response.model_validate(data) if _Response is not None else wrap(data)


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
