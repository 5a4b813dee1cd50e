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

A stream left before its end (closed, its `with` block or loop left, an error while reading) is
recorded as what it received, marked cut (`CUT`: the events as received and why it stopped). A
resumed agent does not take a cut answer for the model's: it asks again. A replayed one is given
the events the recorded agent received, and `ReplayMissing` if it reads further.

The SDKs' helpers (`chat.completions.stream`/`parse`, `responses.stream`/`parse`, Anthropic's
`messages.stream`/`parse` with `output_format`) are the SDK's own code run over the endpoint
(`Helper`): the model call each makes comes back through the recorded `create`, or through
`_post` for those that post themselves, so parsing and stream events are the SDK's.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from runtime.agents.adapters import Delegate, as_dict, given, wrap
from runtime.agents.record import CUT, Recording, ReplayMissing, current_recording

try:  # the SDKs are pydantic models: their union types are read with a TypeAdapter
    from pydantic import TypeAdapter
except ImportError:  # pragma: no cover - no SDK installed either
    TypeAdapter = None  # type: ignore[assignment,misc,unused-ignore]

__all__ = ["Api", "Endpoint", "RecordingStream", "ReplayStream", "is_async", "typed"]

Done = Callable[[list[dict[str, Any]], str | None], None]  # (events, why it was cut or None)


class Api:
    """How one API's tool loop looks. Subclasses say it for chat completions, responses and
    Anthropic's messages."""

    provider = ""
    field = "messages"  # the request's conversation
    event_type: Any = None  # the SDK's type of a stream event, when it is installed

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

    def replay(self, answer: dict[str, Any], aio: bool) -> ReplayStream:
        """A recorded answer as a stream again (`aio`: for an async client); a cut one gives
        the events it had received."""
        kind = AsyncReplayStream if aio else ReplayStream
        cut = answer.get(CUT)
        if isinstance(cut, dict):
            events = [typed(self.event_type, e) for e in cut.get("events") or ()]
            return kind(events, cut=str(cut.get("reason") or "cut"))
        return kind(self.events(answer))


class Endpoint(Delegate):
    """An SDK resource (`client.chat.completions`, `client.responses`, `client.messages`)
    whose `create` is recorded inside `record_agent` (see the module docstring)."""

    def __init__(self, inner: Any, api: Api) -> None:
        super().__init__(inner)
        self._api = api

    def create(self, **kwargs: Any) -> Any:
        rec = current_recording()
        kwargs = given(kwargs)
        if rec is None or not self._api.applies(kwargs):
            return self._inner.create(**kwargs)
        return self._ask(rec, kwargs, lambda: self._inner.create(**kwargs), self._inner.create)

    def stream(self, **kwargs: Any) -> Any:
        """The SDK's `stream` helper, its model call recorded (see the module docstring)."""
        return self._helper("stream", kwargs)

    def parse(self, **kwargs: Any) -> Any:
        """The SDK's `parse` helper, its model call recorded (see the module docstring)."""
        return self._helper("parse", kwargs)

    def _helper(self, name: str, kwargs: dict[str, Any]) -> Any:
        method = getattr(type(self._inner), name, None)
        if current_recording() is None or method is None:
            return getattr(self._inner, name)(**kwargs)
        return method(Helper(self, kwargs), **kwargs)

    def record_post(self, asked: dict[str, Any], path: str, kw: dict[str, Any]) -> Any:
        """A helper's own POST of `kw["body"]` (the request `asked` of the helper), recorded as
        `create` records a call: the SDK's parser (`post_parser`) is applied to the answer,
        live or recorded, so the record holds the answer the API gave."""
        rec = current_recording()
        body = kw.get("body")
        if rec is None or not isinstance(body, dict) or not self._api.applies(body):
            return self._inner._post(path, **kw)
        request = given({**body, self._api.field: asked.get(self._api.field, ())})
        options = dict(kw.get("options") or {})
        parser = options.pop("post_parser", None)
        raw = {**kw, "options": options}
        return self._ask(
            rec, request, lambda: self._inner._post(path, **raw), self._inner._post, parser
        )

    def _ask(
        self,
        rec: Recording,
        request: dict[str, Any],
        send: Callable[[], Any],
        method: Any,
        parser: Any = None,
    ) -> Any:
        """The answer to `request`: recorded, or `send()` (the SDK's `method`, awaited when it
        is async) and recorded; through `parser` when the SDK's helper has one."""
        if is_async(method):
            return self._aask(rec, request, send, parser)
        conversation = self._before(rec, request)
        if request.get("stream"):
            replayed, done = self._streamed(rec, conversation, request)
            return replayed or RecordingStream(send(), done)
        data, live = rec.model_call(**self._call(request, send))
        return _parsed(parser, self._after(rec, conversation, data, live))

    async def _aask(
        self, rec: Recording, request: dict[str, Any], send: Callable[[], Any], parser: Any
    ) -> Any:
        conversation = self._before(rec, request)
        if request.get("stream"):
            replayed, done = self._streamed(rec, conversation, request)
            return replayed or RecordingStream(await send(), done)
        data, live = await rec.amodel_call(**self._call(request, send))
        return _parsed(parser, self._after(rec, conversation, data, live))

    def _call(self, request: dict[str, Any], send: Callable[[], Any]) -> dict[str, Any]:
        """How `Recording.model_call` makes (or finds) this call."""
        return {
            "provider": self._api.provider,
            "request": request,
            "call": send,
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
            if CUT not in data:
                rec.final = self._api.final(conversation, data)
            return self._api.replay(data, is_async(self._inner.create)), lambda *_: None

        def done(events: list[dict[str, Any]], cut: str | None) -> None:
            answer = self._api.assemble(events)
            if cut is not None:  # what was received, not the model's answer
                answer[CUT] = {"reason": cut, "events": events}
            data = rec.keep(where, plain, self._api.provider, kwargs, answer, self._api.usage)
            if cut is None:
                rec.final = self._api.final(conversation, data)

        return None, done


class Helper(Delegate):
    """What an SDK helper (`stream`, `parse`) is run with as its resource: the endpoint, whose
    `create` records the call; a helper that posts itself comes back through `_post`."""

    def __init__(self, endpoint: Endpoint, asked: dict[str, Any]) -> None:
        super().__init__(endpoint)
        self._asked = asked

    def _post(self, path: str, **kw: Any) -> Any:
        return self._inner.record_post(self._asked, path, kw)


def _parsed(parser: Any, answer: Any) -> Any:
    """`answer` through the SDK helper's parser (a parse call's, e.g. to `ParsedMessage`)."""
    return parser(answer) if callable(parser) else answer


class RecordingStream(Delegate):
    """A live SDK stream (sync or async) read through: each event is kept as data, and once the
    stream ends `done(events, None)` records the answer they make. Left before its end (closed,
    its `with` or loop left, an error while reading), `done(events, why)` records what it had
    received, marked cut."""

    def __init__(self, inner: Any, done: Done) -> None:
        super().__init__(inner)
        self._done: Done | None = done
        self._events: list[dict[str, Any]] = []

    def _end(self, cut: str | None = None) -> None:
        done, self._done = self._done, None
        if done is not None:
            done(self._events, cut)

    def _cut(self, exc: BaseException | None = None) -> None:
        if exc is None or isinstance(exc, GeneratorExit):
            self._end("closed before its end")
        else:
            self._end(f"stopped by {type(exc).__name__}" + (f": {exc}" if str(exc) else ""))

    def _take(self, event: Any) -> Any:
        self._events.append(as_dict(event))
        return event

    def __iter__(self) -> Iterator[Any]:
        try:
            for event in self._inner:
                yield self._take(event)
        except BaseException as exc:
            self._cut(exc)
            raise
        self._end()

    def __next__(self) -> Any:
        try:
            event = next(self._inner)
        except StopIteration:
            self._end()
            raise
        except BaseException as exc:
            self._cut(exc)
            raise
        return self._take(event)

    async def __aiter__(self) -> AsyncIterator[Any]:
        try:
            async for event in self._inner:
                yield self._take(event)
        except BaseException as exc:
            self._cut(exc)
            raise
        self._end()

    async def __anext__(self) -> Any:
        try:
            event = await self._inner.__anext__()
        except StopAsyncIteration:
            self._end()
            raise
        except BaseException as exc:
            self._cut(exc)
            raise
        return self._take(event)

    @property
    def response(self) -> Any:
        """The HTTP response, whose closing (an SDK helper's `close()`) cuts the stream first."""
        return _Closing(self._inner.response, self._cut)

    def close(self) -> Any:
        self._cut()
        return self._inner.close()

    def __enter__(self) -> RecordingStream:
        self._inner.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        self._cut(exc[1])
        return self._inner.__exit__(*exc)

    async def __aenter__(self) -> RecordingStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        self._cut(exc[1])
        return await self._inner.__aexit__(*exc)


class _Closing(Delegate):
    """An HTTP response whose `close`/`aclose` first calls `before()`."""

    def __init__(self, inner: Any, before: Callable[[], None]) -> None:
        super().__init__(inner)
        self._before = before

    def close(self) -> Any:
        self._before()
        return self._inner.close()

    async def aclose(self) -> None:
        self._before()
        await self._inner.aclose()


class ReplayStream:
    """A recorded answer given back as a stream (sync or async): its events, made from it. A
    cut stream's (`cut` says why it stopped) raises `ReplayMissing` when read past them."""

    def __init__(self, events: list[Any], cut: str | None = None) -> None:
        self._events = events
        self._at = 0
        self._cut = cut

    def __iter__(self) -> ReplayStream:
        return self

    def __next__(self) -> Any:
        if self._at >= len(self._events):
            if self._cut is not None and self._at == len(self._events):
                raise ReplayMissing(
                    f"replay: the recorded stream of this call was {self._cut} after "
                    f"{len(self._events)} events; nothing after them was received"
                )
            raise StopIteration
        self._at += 1
        return self._events[self._at - 1]

    @property
    def response(self) -> ReplayStream:
        """What an SDK helper closes (`response.close()`): the stream itself."""
        return self

    def __aiter__(self) -> ReplayStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return self.__next__()
        except StopIteration:
            raise StopAsyncIteration from None

    def _stop(self) -> None:
        self._at = len(self._events) + 1

    def close(self) -> None:
        self._stop()

    async def aclose(self) -> None:
        self._stop()

    def __enter__(self) -> ReplayStream:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop()

    async def __aenter__(self) -> ReplayStream:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self._stop()


class AsyncReplayStream(ReplayStream):
    """`ReplayStream` for an async client, whose stream's `close()` is awaited."""

    async def close(self) -> None:  # type: ignore[override]
        self._stop()


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
