"""`onLLMTimeout` and `onLLMRetry` callbacks see the HTTP layer's own timeouts and retries, and
`llm()`'s `retries`, `timeout` and `backoff` options shape them (a scripted server on
127.0.0.1; nothing leaves the machine)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from runtime.language.program import compile_source
from runtime.record.store import MemoryStore
from runtime.runs.fork import Timeline
from runtime.runs.recording import Recording, record_program
from runtime.runs.runner import RunConfig
from runtime.vm.values import to_plain

from .fake_server import FakeServer, Reply, openai_answer

HOOKS = """
let seen: string[] = []

callback("onLLMRetry") as e {
  seen.push("retry ${e.attempt}/${e.maxRetries} ${e.reason} ${e.delayMs}")
}

callback("onLLMTimeout") as e {
  seen.push("timeout ${e.limitMs} ${e.attempt}")
}
"""


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("AGENCY_", "OPENAI_", "ANTHROPIC_", "OLLAMA_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-1234")


def run(source: str, server: FakeServer) -> tuple[Any, Recording, MemoryStore]:
    store = MemoryStore()
    program = compile_source(HOOKS + source, "prog.agency")
    config = RunConfig(quiet=True, model_spec="openai/test-model", base_url=server.url + "/v1")
    rec = record_program(program, config, store)
    for model in [rec.machine.model, *rec.machine.host.models.values()]:
        close = getattr(model, "close", None)
        if close is not None:
            close()
    return to_plain(rec.machine.result), rec, store


def test_a_server_error_then_an_answer_runs_the_retry_callbacks() -> None:
    source = """
node main() {
  const a = llm("hi", {retries: 3, backoff: {initial: 0, factor: 2, max: 0}})
  return {a: a, seen: seen}
}
"""
    failing = Reply(503, {"error": {"message": "busy"}})
    overloaded = Reply(529, {"error": {"message": "overloaded"}})
    with FakeServer(failing, overloaded, Reply(200, openai_answer("hello"))) as server:
        result, rec, store = run(source, server)
        assert server.count == 3
    assert result == {
        "a": "hello",
        "seen": ["retry 1/3 serverError 0", "retry 2/3 overloaded 0"],
    }
    # the events are recorded with the answer, and stepping back replays without a request
    (call,) = store.llm_calls(rec.run_id)
    events = call.response["completion"]["transport_events"]
    assert [e["hook"] for e in events] == ["onLLMRetry", "onLLMRetry"]
    tl = rec.timeline
    fresh = Timeline(tl.store, tl.run_id, tl.branch, program=tl.program)
    for step in reversed(range(len(tl))):
        tl.state_at(step)
        fresh.state_at(step)
    fresh.export_checkpoint(len(tl) - 1)  # re-executes from the start with the recorded answer
    assert server.count == 3


def test_a_call_over_its_timeout_runs_the_timeout_then_the_retry_callbacks() -> None:
    source = """
node main() {
  const a = llm("hi", {timeout: 200, retries: 1, backoff: {initial: 0}})
  return {a: a, seen: seen}
}
"""
    slow = Reply(200, openai_answer("late"), delay=5.0)
    with FakeServer(slow, Reply(200, openai_answer("in time"))) as server:
        result, _, _ = run(source, server)
        assert server.count == 2
    assert result == {"a": "in time", "seen": ["timeout 200 0", "retry 1/1 timeout 0"]}


def test_when_the_retries_run_out_the_callbacks_run_and_the_call_fails() -> None:
    source = """
def ask() {
  return llm("hi", {retries: 1, backoff: {initial: 0}})
}

node main() {
  const r = ask()
  return {failed: isFailure(r), kept: r.error.includes("kept failing"), seen: seen}
}
"""
    with FakeServer(Reply(500, {"error": {"message": "boom"}})) as server:
        result, _, _ = run(source, server)
        assert server.count == 2  # retries: 1 is two attempts
    assert result == {"failed": True, "kept": True, "seen": ["retry 1/1 serverError 0"]}


def test_retries_zero_makes_one_attempt_and_no_callback() -> None:
    source = """
def ask() {
  return llm("hi", {retries: 0})
}

node main() {
  const r = ask()
  return {failed: isFailure(r), seen: seen}
}
"""
    with FakeServer(Reply(500, {"error": {"message": "boom"}})) as server:
        result, _, _ = run(source, server)
        assert server.count == 1
    assert result == {"failed": True, "seen": []}
