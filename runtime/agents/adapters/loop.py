"""Provides what the SDK adapters share: `Endpoint`, one recorded `create` (sync or async,
streamed or not) over an `Api`, which says how one API's tool loop looks (where the
conversation is, when a tool roundtrip is complete, what a final answer adds, how a stream's
events make an answer and an answer makes events again).

Inside `record_agent` a call first checkpoints the agent when the conversation it sends ends a
tool roundtrip; then its answer comes from the record when this roundtrip already asked the same
(a resumed or replayed agent), else from the SDK, and is recorded. A streamed answer is recorded
once its stream has been read to the end, as the answer the stream assembled (the same data a
call without `stream=True` gives, usage included when the stream carries it); a recorded answer
asked for as a stream is given back as a stream of events made from it.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from runtime.agents.adapters import Delegate, as_dict, wrap
from runtime.agents.record import Recording, current_recording

try:  # the SDKs are pydantic models: their union types are read with a TypeAdapter
    from pydantic import TypeAdapter
except ImportError:  # pragma: no cover - no SDK installed either
    TypeAdapter = None  # type: ignore[assignment,misc,unused-ignore]

__all__ = ["Api", "Endpoint", "RecordingStream", "ReplayStream", "is_async", "typed"]

Done = Callable[[list[dict[str, Any]]], None]


class Api:
    """How one API's tool loop looks. Subclasses say it for chat completions, responses and
    Anthropic's messages."""

    provider = ""
    field = "messages"  # the request's conversation

    def applies(self, request: dict[str, Any]) -> bool:
        """Whether a call with `request` is one of the loop's (else it goes straight through)."""
        return isinstance(request.get(self.field, []), list | tuple)

    def roundtrip_done(self, conversation: list[Any]) -> bool:
        """Whether `conversation` ends with the results of every tool call of its last answer."""
        raise NotImplementedError

    def final(self, conversation: list[Any], answer: dict[str, Any]) -> list[Any] | None:
        """`conversation` with `answer` added when the answer calls no tool (the agent is done
        unless it asks again), else None."""
        raise NotImplementedError

    def usage(self, answer: dict[str, Any]) -> dict[str, Any]:
        return dict(answer.get("usage") or {})

    def answer(self, data: dict[str, Any]) -> Any:
        """A recorded answer as the SDK's own object (attribute access without the SDK)."""
        return wrap(data)

    def assemble(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        """The answer a stream's events (as data) make."""
        raise NotImplementedError

    def events(self, answer: dict[str, Any]) -> list[Any]:
        """A recorded answer as the events of a stream giving it (the SDK's objects)."""
        raise NotImplementedError


class Endpoint(Delegate):
    """An SDK resource (`client.chat.completions`, `client.responses`, `client.messages`)
    whose `create` is recorded inside `record_agent` (see the module docstring)."""

    def __init__(self, inner: Any, api: Api) -> None:
        super().__init__(inner)
        self._api = api

    def create(self, **kwargs: Any) -> Any:
        rec = current_recording()
        if rec is None or not self._api.applies(kwargs):
            return self._inner.create(**kwargs)
        if is_async(self._inner.create):
            return self._acreate(rec, kwargs)
        conversation = self._before(rec, kwargs)
        if kwargs.get("stream"):
            replayed, done = self._streamed(rec, conversation, kwargs)
            return replayed or RecordingStream(self._inner.create(**kwargs), done)
        data, live = rec.model_call(**self._call(kwargs))
        return self._after(rec, conversation, data, live)

    async def _acreate(self, rec: Recording, kwargs: dict[str, Any]) -> Any:
        conversation = self._before(rec, kwargs)
        if kwargs.get("stream"):
            replayed, done = self._streamed(rec, conversation, kwargs)
            return replayed or RecordingStream(await self._inner.create(**kwargs), done)
        data, live = await rec.amodel_call(**self._call(kwargs))
        return self._after(rec, conversation, data, live)

    def _call(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """How `Recording.model_call` makes (or finds) this call."""
        return {
            "provider": self._api.provider,
            "request": kwargs,
            "call": lambda: self._inner.create(**kwargs),
            "encode": as_dict,
            "usage": self._api.usage,
        }

    def _before(self, rec: Recording, kwargs: dict[str, Any]) -> list[Any]:
        """The conversation sent, checkpointed first when it ends a tool roundtrip."""
        conversation = list(kwargs.get(self._api.field) or ())
        if self._api.roundtrip_done(conversation):
            rec.checkpoint(conversation)
        return conversation

    def _after(self, rec: Recording, conversation: list[Any], data: Any, live: Any) -> Any:
        rec.final = self._api.final(conversation, data)
        return live if live is not None else self._api.answer(data)

    def _streamed(
        self, rec: Recording, conversation: list[Any], kwargs: dict[str, Any]
    ) -> tuple[ReplayStream | None, Done]:
        """(the recorded answer as a stream, or None: ask live) and what records a live
        stream's answer once its events are all read."""
        where, plain, data = rec.lookup(kwargs, self._api.usage)
        if data is not None:
            rec.final = self._api.final(conversation, data)
            return ReplayStream(self._api.events(data)), lambda _: None

        def done(events: list[dict[str, Any]]) -> None:
            answer = self._api.assemble(events)
            data = rec.keep(where, plain, self._api.provider, kwargs, answer, self._api.usage)
            rec.final = self._api.final(conversation, data)

        return None, done


class RecordingStream(Delegate):
    """A live SDK stream (sync or async) read through: each event is kept as data, and once the
    stream ends `done(events)` records the answer they make. A stream closed before its end
    records nothing (the call is made again when the agent is resumed)."""

    def __init__(self, inner: Any, done: Done) -> None:
        super().__init__(inner)
        self._done: Done | None = done
        self._events: list[dict[str, Any]] = []

    def _end(self) -> None:
        done, self._done = self._done, None
        if done is not None:
            done(self._events)

    def __iter__(self) -> Iterator[Any]:
        for event in self._inner:
            self._events.append(as_dict(event))
            yield event
        self._end()

    def __next__(self) -> Any:
        try:
            event = next(self._inner)
        except StopIteration:
            self._end()
            raise
        self._events.append(as_dict(event))
        return event

    async def __aiter__(self) -> AsyncIterator[Any]:
        async for event in self._inner:
            self._events.append(as_dict(event))
            yield event
        self._end()

    async def __anext__(self) -> Any:
        try:
            event = await self._inner.__anext__()
        except StopAsyncIteration:
            self._end()
            raise
        self._events.append(as_dict(event))
        return event

    def __enter__(self) -> RecordingStream:
        self._inner.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._inner.__exit__(*exc)

    async def __aenter__(self) -> RecordingStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)


class ReplayStream:
    """A recorded answer given back as a stream (sync or async): its events, made from it."""

    def __init__(self, events: list[Any]) -> None:
        self._events = events
        self._at = 0

    def __iter__(self) -> ReplayStream:
        return self

    def __next__(self) -> Any:
        if self._at >= len(self._events):
            raise StopIteration
        self._at += 1
        return self._events[self._at - 1]

    def __aiter__(self) -> ReplayStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return self.__next__()
        except StopIteration:
            raise StopAsyncIteration from None

    def close(self) -> None:
        self._at = len(self._events)

    async def aclose(self) -> None:
        self.close()

    def __enter__(self) -> ReplayStream:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    async def __aenter__(self) -> ReplayStream:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()


def is_async(method: Any) -> bool:
    """Whether an SDK method is a coroutine function (the SDKs wrap theirs in decorators that
    hide it: look through them)."""
    return inspect.iscoroutinefunction(inspect.unwrap(method))


def typed(kind: Any, data: dict[str, Any]) -> Any:
    """`data` as the SDK type `kind` (a pydantic model, or a union a `TypeAdapter` reads), or
    with attribute access when the SDK is missing or does not take it."""
    if kind is None:
        return wrap(data)
    try:
        validate = getattr(kind, "model_validate", None)
        if validate is not None:
            return validate(data)
        if TypeAdapter is not None:
            return TypeAdapter(kind).validate_python(data)
        return wrap(data)
    except Exception:  # noqa: BLE001 - an SDK version whose types want other fields
        return wrap(data)
