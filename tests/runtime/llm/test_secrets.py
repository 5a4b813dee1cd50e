"""A fake API key must never appear in anything the LLM layer produces."""

from __future__ import annotations

import json
import logging
import traceback
from typing import Any

import pytest

from runtime.llm import config_of, resolve_model
from runtime.llm.base import LLMError

from .fake_server import FakeServer, Reply

OPENAI_KEY = "sk-FAKE-openai-4f1d2c3b"
ANTHROPIC_KEY = "sk-ant-FAKE-anthropic-9e8d7c"
SECRETS = (OPENAI_KEY, ANTHROPIC_KEY)
USER = [{"role": "user", "content": "hello"}]


def scenarios(key: str) -> list[Reply]:
    """Replies that echo the key back, in every place a careless client would copy it from."""
    echo = {"error": {"message": f"bad key {key}", "key": key}}
    return [
        Reply(401, echo),
        Reply(500, echo),
        Reply(500, echo),
        Reply(200, f"<html>{key}</html>"),
        Reply(
            200,
            {
                "model": "gpt-4o-mini",
                "echo": key,
                "choices": [{"message": {"role": "assistant", "content": f"key {key}"}}],
                "content": [{"type": "text", "text": f"key {key}"}],
                "usage": {},
            },
        ),
    ]


@pytest.mark.parametrize("spec", ["openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5"])
def test_no_secret_leaks(spec: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    key = OPENAI_KEY if spec.startswith("openai") else ANTHROPIC_KEY
    produced: list[Any] = []
    with FakeServer(*scenarios(key)) as server:
        env = {
            "OPENAI_API_KEY": OPENAI_KEY,
            "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
            "AGENCY_LLM_RETRIES": "1",
        }
        model = resolve_model(spec, base_url=server.url + "/v1", env=env)
        model._endpoint.retry = type(model._endpoint.retry)(max_retries=1, sleep=lambda s: None)  # type: ignore[attr-defined]
        produced += [repr(model), str(model), config_of(model)]
        for _ in range(3):  # 401, then 500 twice (retries exhausted), then not JSON
            with pytest.raises(LLMError) as info:
                model.complete(USER, [], None, {})
            exc = info.value
            produced += [str(exc), repr(exc), exc.detail, "".join(traceback.format_exception(exc))]
        completion = model.complete(USER, [], None, {})
        produced += [repr(completion), json.dumps(completion.to_json()), completion.raw]
        # The request really carried the key (so the test would notice a leak).
        assert key in json.dumps(server.requests[0].headers)
    assert "retry 1 of 1" in caplog.text  # the retry was logged, and the log is checked
    assert completion.raw is not None and "***" in json.dumps(completion.raw)
    produced.append(caplog.text)
    blob = json.dumps(produced, default=repr)
    for secret in SECRETS:
        assert secret not in blob


def test_errors_of_unreachable_servers_carry_no_secret() -> None:
    with FakeServer() as server:
        url = server.url
    model = resolve_model(
        "openai/gpt-4o", base_url=url, env={"OPENAI_API_KEY": OPENAI_KEY, "AGENCY_LLM_RETRIES": "0"}
    )
    with pytest.raises(LLMError) as info:
        model.complete(USER, [], None, {})
    assert OPENAI_KEY not in "".join(traceback.format_exception(info.value))
