"""A time guard's deadline (llm.base.DEADLINE) cuts a model request short: the scripted
model's delayed answer and a remote provider's HTTP request both give up there."""

from __future__ import annotations

import time

import httpx
import pytest

from runtime.llm import Completion, MockModel
from runtime.llm.base import DEADLINE, DeadlinePassed
from runtime.llm.http import JsonEndpoint, RetryPolicy


def _endpoint(handler: object) -> JsonEndpoint:
    return JsonEndpoint(
        provider="openai",
        base_url="http://model.test/v1",
        headers={},
        timeout=30.0,
        retry=RetryPolicy(max_retries=2, base_delay=0.0, sleep=lambda s: None),
        transport=httpx.MockTransport(handler),  # type: ignore[arg-type]
    )


def test_a_passed_deadline_sends_nothing() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={})

    token = DEADLINE.set(time.monotonic() - 1)
    try:
        with pytest.raises(DeadlinePassed, match="time guard"):
            _endpoint(handler).post("/chat/completions", {})
    finally:
        DEADLINE.reset(token)
    assert sent == []


def test_a_request_times_out_at_the_deadline_and_is_not_retried() -> None:
    timeouts: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        timeouts.append(request.extensions["timeout"]["read"])
        raise httpx.ReadTimeout("slow", request=request)

    token = DEADLINE.set(time.monotonic() + 5)
    try:
        with pytest.raises(DeadlinePassed):
            _endpoint(handler).post("/chat/completions", {})
    finally:
        DEADLINE.reset(token)
    assert len(timeouts) == 1 and timeouts[0] <= 5  # the deadline, not the endpoint's 30 s


def test_without_a_deadline_a_timeout_is_retried_as_before() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        raise httpx.ReadTimeout("slow", request=request)

    with pytest.raises(Exception, match="timeout") as info:
        _endpoint(handler).post("/chat/completions", {})
    assert not isinstance(info.value, DeadlinePassed)
    assert len(calls) == 3


def test_the_scripted_model_cancels_a_delayed_answer_at_the_deadline() -> None:
    model = MockModel([{"return": "late", "delayMs": 5000}, {"return": "soon", "delayMs": 1}])
    token = DEADLINE.set(time.monotonic() + 0.05)
    try:
        started = time.monotonic()
        cut = model.complete([], [], None, {})
        assert time.monotonic() - started < 2
    finally:
        DEADLINE.reset(token)
    assert cut.cancelled and cut.text == "" and model.position == 1
    answer = model.complete([], [], None, {})
    assert not answer.cancelled and answer.text == "soon"


def test_a_cancelled_completion_round_trips() -> None:
    c = Completion(text="", provider="mock", cancelled=True)
    assert Completion.from_json(c.to_json()).cancelled
    assert "cancelled" not in Completion(text="x").to_json()


def test_a_bad_delay_is_refused() -> None:
    with pytest.raises(Exception, match="delayMs"):
        MockModel([{"return": "x", "delayMs": -3}])
