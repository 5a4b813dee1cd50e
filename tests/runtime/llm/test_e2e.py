"""End to end: .agency programs calling the real OpenAI and Anthropic clients against a scripted
server on 127.0.0.1, through `agency run` in a subprocess and through `record_program`.

Checks the program's result, what was sent over the wire, what the run store recorded (every
call, its tokens and cost, the run's config), that stepping back through the timeline never
calls the model again, and how a rate limit and a failing server end.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from runtime.language.program import compile_source
from runtime.record.sqlite_store import SQLiteStore
from runtime.record.store import MemoryStore, RunStore
from runtime.runs.fork import Timeline
from runtime.runs.recording import Recording, record_program
from runtime.runs.runner import RunConfig
from runtime.vm.values import to_plain
from runtime.vm.writelog import FAILED, HALTED

from .fake_server import (
    FakeServer,
    Reply,
    anthropic_answer,
    anthropic_text,
    anthropic_tool_use,
    openai_answer,
    openai_tool_call,
)

REPO = Path(__file__).resolve().parents[3]
OPENAI_KEY = "sk-test-SECRET-123"
ANTHROPIC_KEY = "sk-ant-test-SECRET-456"

ADD = '''def add(a: number, b: number): number {
  """Adds two numbers."""
  return a + b
}
'''
TOOLS_PROGRAM = (
    ADD
    + """
node main() {
  const r: number = llm("What is 4+5? use the tool", {tools: [add]})
  print("answer", r)
  return r
}
"""
)
# `const r` is on line 7, column 3: where a failed call is reported.
TOOLS_LINE_COL = "7:3"

STRUCTURED_PROGRAM = (
    ADD
    + """
type Answer = {sum: number, words: string}

node main() {
  const r: number = llm("What is 4+5? use the tool", {tools: [add]})
  const a: Answer = llm("Say it in words")
  return a
}
"""
)

ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}
ADD_TOOL = {"name": "add", "description": "Adds two numbers.", "parameters": ADD_SCHEMA}
TOOL_RESULT = {"role": "tool", "tool_call_id": "call_1", "name": "add", "content": "9"}


def openai_tool_replies(model: str = "test-model") -> list[Reply]:
    call = openai_tool_call("call_1", "add", {"a": 4, "b": 5})
    return [
        Reply(200, openai_answer(None, [call], model=model)),
        Reply(200, openai_answer('{"response": 9}', model=model)),
    ]


def anthropic_structured_replies() -> list[Reply]:
    return [
        Reply(200, anthropic_answer(anthropic_tool_use("call_1", "add", {"a": 4, "b": 5}))),
        Reply(200, anthropic_answer(anthropic_text('{"response": 9}'))),
        Reply(
            200,
            anthropic_answer(
                anthropic_tool_use(
                    "toolu_2", "agency_response", {"response": {"sum": 9, "words": "nine"}}
                )
            ),
        ),
    ]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No model, key, base URL or price file from the shell; fake keys for both providers."""
    for name in list(os.environ):
        if name.startswith(("AGENCY_", "OPENAI_", "ANTHROPIC_", "OLLAMA_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    return monkeypatch


def agency(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`agency ARGS` in a subprocess, with only the given model settings in its environment."""
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AGENCY_", "OPENAI_", "ANTHROPIC_", "OLLAMA_"))
    }
    base["PYTHONPATH"] = str(REPO)
    base.update(env)
    return subprocess.run(
        [sys.executable, "-m", "debugger", *args],
        cwd=cwd,
        env=base,
        capture_output=True,
        text=True,
        timeout=60,
    )


def record(source: str, store: RunStore, **config: Any) -> Recording:
    program = compile_source(source, "prog.agency")
    rec = record_program(program, RunConfig(quiet=True, **config), store)
    return rec


def close_models(rec: Recording) -> None:
    for model in [rec.machine.model, *rec.machine.host.models.values()]:
        close = getattr(model, "close", None)
        if close is not None:
            close()


def step_back_through(tl: Timeline, server: FakeServer | list[FakeServer]) -> None:
    """Every step from the last to the first, each LLM call's record and an exported checkpoint:
    none of it may send a request."""
    servers = server if isinstance(server, list) else [server]
    before = [s.count for s in servers]
    n = len(tl)
    assert n > 0
    for step in reversed(range(n)):
        tl.state_at(step)
        tl.llm_call_at(step)
    fresh = Timeline(tl.store, tl.run_id, tl.branch, program=tl.program)
    for step in range(n):
        fresh.state_at(step)
    fresh.export_checkpoint(n - 1)  # re-executes from the start with recorded answers
    assert [s.count for s in servers] == before


def usage_at_end(tl: Timeline) -> tuple[int, int, float]:
    u = tl.state_at(len(tl) - 1).usage
    return u.input_tokens, u.output_tokens, u.cost


# -- OpenAI, tools -----------------------------------------------------------------------------


def check_tool_calls(store: RunStore, run_id: str) -> None:
    calls = store.llm_calls(run_id)
    assert len(calls) == 2
    first, second = calls
    assert first.provider == second.provider
    assert first.request["tools"] == [ADD_TOOL]
    assert first.request["messages"] == [{"role": "user", "content": "What is 4+5? use the tool"}]
    assert first.request["schema"]["properties"]["response"] == {"type": "number"}
    completion = first.response["completion"]
    assert completion["tool_calls"] == [{"id": "call_1", "name": "add", "args": {"a": 4, "b": 5}}]
    assert TOOL_RESULT in second.request["messages"]
    assert second.response["value"] == 9
    assert first.step < second.step  # each tool round is its own step


def test_openai_tools_in_process(clean_env: pytest.MonkeyPatch) -> None:
    store = MemoryStore()
    with FakeServer(*openai_tool_replies(model="gpt-4o-mini-2024-07-18")) as server:
        rec = record(
            TOOLS_PROGRAM, store, model_spec="openai/gpt-4o-mini", base_url=server.url + "/v1"
        )
        close_models(rec)
        assert rec.machine.status == HALTED and rec.machine.result == 9
        assert rec.machine.output == ["answer 9"]
        # On the wire: the tool offered as a function, then its result sent back.
        assert server.count == 2
        sent = [r.body for r in server.requests]
        assert sent[0]["model"] == "gpt-4o-mini"
        assert sent[0]["tools"] == [
            {
                "type": "function",
                "function": {
                    "name": "add",
                    "description": "Adds two numbers.",
                    "parameters": ADD_SCHEMA,
                },
            }
        ]
        assert {"role": "tool", "tool_call_id": "call_1", "content": "9"} in sent[1]["messages"]
        assert server.requests[0].headers["authorization"] == f"Bearer {OPENAI_KEY}"
        check_tool_calls(store, rec.run_id)
        tl = rec.timeline
        step_back_through(tl, server)
    cost = (200 * 0.15 + 20 * 0.60) / 1e6
    assert usage_at_end(tl) == (200, 20, pytest.approx(cost))
    assert rec.machine.usage == {
        "input_tokens": 200,
        "output_tokens": 20,
        "cost": pytest.approx(cost),
    }
    calls = store.llm_calls(rec.run_id)
    assert sum(c.cost for c in calls) == pytest.approx(cost)
    assert [(c.input_tokens, c.output_tokens) for c in calls] == [(100, 10), (100, 10)]
    config = store.get_run(rec.run_id).config  # type: ignore[union-attr]
    host = server.url.removeprefix("http://")
    assert config == {
        "provider": "openai",
        "model": "gpt-4o-mini",
        "spec": "openai/gpt-4o-mini",
        "base_url_host": host,
        "seed": 0,
    }


def test_openai_tools_cli(tmp_path: Path) -> None:
    (tmp_path / "add.agency").write_text(TOOLS_PROGRAM)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"test-model": [1.0, 2.0]}))
    db = tmp_path / "runs.db"
    with FakeServer(*openai_tool_replies()) as server:
        proc = agency(
            tmp_path,
            "run",
            "add.agency",
            "--model",
            "openai/test-model",
            "--base-url",
            server.url + "/v1",
            "--db",
            str(db),
            "--json",
            OPENAI_API_KEY=OPENAI_KEY,
            AGENCY_PRICES=str(prices),
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == "answer 9\n9\n"
        assert server.count == 2
        assert server.requests[0].body["model"] == "test-model"
        with SQLiteStore(db) as store:
            run = store.list_runs()[0]
            assert run.status == "finished" and run.result == 9
            assert run.config == {
                "provider": "openai",
                "model": "test-model",
                "spec": "openai/test-model",
                "base_url_host": server.url.removeprefix("http://"),
                "seed": 0,
            }
            check_tool_calls(store, run.id)
            assert {c.model for c in store.llm_calls(run.id)} == {"test-model"}
            program = compile_source(TOOLS_PROGRAM, str(tmp_path / "add.agency"))
            tl = Timeline(store, run.id, program=program)
            step_back_through(tl, server)
            cost = (200 * 1.0 + 20 * 2.0) / 1e6
            assert usage_at_end(tl) == (200, 20, pytest.approx(cost))
    assert proc.stderr.startswith(f"agency: recording run {run.id}")
    assert "Traceback" not in proc.stderr


# -- Anthropic, tools and a structured answer --------------------------------------------------


def check_structured(store: RunStore, run_id: str, server: FakeServer) -> None:
    sent = [r.body for r in server.requests]
    assert len(sent) == 3
    assert sent[0]["model"] == "claude-sonnet-4-5"
    assert sent[0]["tools"] == [
        {"name": "add", "description": "Adds two numbers.", "input_schema": ADD_SCHEMA}
    ]
    tool_result = sent[1]["messages"][-1]
    assert tool_result["role"] == "user"
    assert tool_result["content"][0]["type"] == "tool_result"
    assert tool_result["content"][0]["tool_use_id"] == "call_1"
    # The typed answer without tools: a forced tool whose input is the answer.
    assert sent[2]["tool_choice"] == {"type": "tool", "name": "agency_response"}
    answer_schema = sent[2]["tools"][0]["input_schema"]["properties"]["response"]
    assert answer_schema["properties"] == {"sum": {"type": "number"}, "words": {"type": "string"}}
    assert server.requests[0].headers["x-api-key"] == ANTHROPIC_KEY
    calls = store.llm_calls(run_id)
    assert len(calls) == 3 and {c.provider for c in calls} == {"anthropic"}
    assert calls[0].request["tools"] == [ADD_TOOL]
    assert TOOL_RESULT in calls[1].request["messages"]
    assert calls[1].response["value"] == 9
    assert calls[2].request["tools"] == []
    assert calls[2].response["value"] == {"sum": 9, "words": "nine"}


ANTHROPIC_COST = (600 * 3.0 + 60 * 15.0) / 1e6


def test_anthropic_structured_in_process(clean_env: pytest.MonkeyPatch) -> None:
    store = MemoryStore()
    with FakeServer(*anthropic_structured_replies()) as server:
        rec = record(
            STRUCTURED_PROGRAM, store, model_spec="anthropic/claude-sonnet-4-5", base_url=server.url
        )
        close_models(rec)
        assert rec.machine.status == HALTED, rec.machine.error
        assert to_plain(rec.machine.result) == {"sum": 9, "words": "nine"}
        check_structured(store, rec.run_id, server)
        tl = rec.timeline
        step_back_through(tl, server)
    assert usage_at_end(tl) == (600, 60, pytest.approx(ANTHROPIC_COST))
    assert tl.state_at(len(tl) - 1).result == {"sum": 9, "words": "nine"}
    config = store.get_run(rec.run_id).config  # type: ignore[union-attr]
    assert config["provider"] == "anthropic" and config["model"] == "claude-sonnet-4-5"


def test_anthropic_structured_cli(tmp_path: Path) -> None:
    (tmp_path / "answer.agency").write_text(STRUCTURED_PROGRAM)
    db = tmp_path / "runs.db"
    with FakeServer(*anthropic_structured_replies()) as server:
        proc = agency(
            tmp_path,
            "run",
            "answer.agency",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--base-url",
            server.url,
            "--db",
            str(db),
            "--json",
            ANTHROPIC_API_KEY=ANTHROPIC_KEY,
        )
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout) == {"sum": 9, "words": "nine"}
        with SQLiteStore(db) as store:
            run = store.list_runs()[0]
            check_structured(store, run.id, server)
            program = compile_source(STRUCTURED_PROGRAM, str(tmp_path / "answer.agency"))
            tl = Timeline(store, run.id, program=program)
            step_back_through(tl, server)
            assert usage_at_end(tl) == (600, 60, pytest.approx(ANTHROPIC_COST))
            assert run.config["base_url_host"] == server.url.removeprefix("http://")


# -- per-call model choice ---------------------------------------------------------------------

ROUTED_PROGRAM = """node main() {
  const a = llm("first")
  const b = llm("second", {model: "anthropic/claude-sonnet-4-5"})
  const c = llm("third", {model: "openai/gpt-4o", temperature: 0.5})
  const d = llm("fourth", model: "anthropic/claude-sonnet-4-5")
  return [a, b, c, d]
}
"""


def test_a_call_can_choose_its_model(clean_env: pytest.MonkeyPatch) -> None:
    store = MemoryStore()
    openai_replies = [
        Reply(200, openai_answer("A")),
        Reply(200, openai_answer("C", model="gpt-4o")),
    ]
    anthropic_replies = [
        Reply(200, anthropic_answer(anthropic_text("B"))),
        Reply(200, anthropic_answer(anthropic_text("D"))),
    ]
    with FakeServer(*openai_replies) as oa, FakeServer(*anthropic_replies) as an:
        clean_env.setenv("ANTHROPIC_BASE_URL", an.url)
        rec = record(ROUTED_PROGRAM, store, model_spec="openai/test-model", base_url=oa.url + "/v1")
        close_models(rec)
        assert rec.machine.status == HALTED, rec.machine.error
        assert to_plain(rec.machine.result) == ["A", "B", "C", "D"]
        assert [r.body["model"] for r in oa.requests] == ["test-model", "gpt-4o"]
        assert oa.requests[1].body["temperature"] == 0.5
        assert [r.body["model"] for r in an.requests] == ["claude-sonnet-4-5"] * 2
        assert an.requests[0].headers["x-api-key"] == ANTHROPIC_KEY
        # One conversation across providers: the Anthropic call sees the OpenAI turn.
        seen = [
            (msg["role"], "".join(b["text"] for b in msg["content"]))
            for msg in an.requests[0].body["messages"]
        ]
        assert seen == [("user", "first"), ("assistant", "A"), ("user", "second")]
        # The other provider's model is made once and kept for the run.
        assert list(rec.machine.host.models) == ["anthropic/claude-sonnet-4-5"]
        step_back_through(rec.timeline, [oa, an])
    calls = store.llm_calls(rec.run_id)
    assert [(c.provider, c.model) for c in calls] == [
        ("openai", "test-model"),
        ("anthropic", "claude-sonnet-4-5-20250929"),
        ("openai", "gpt-4o"),
        ("anthropic", "claude-sonnet-4-5-20250929"),
    ]
    assert calls[2].request["params"] == {"model": "openai/gpt-4o", "temperature": 0.5}
    config = store.get_run(rec.run_id).config  # type: ignore[union-attr]
    assert (config["provider"], config["model"]) == ("openai", "test-model")  # the run's model


def test_scripted_runs_ignore_a_calls_model(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.delenv("ANTHROPIC_API_KEY")  # a real attempt would fail for want of a key
    rec = record(ROUTED_PROGRAM, MemoryStore(), mocks=[{"return": x} for x in ("a", "b", "c", "d")])
    assert rec.machine.status == HALTED, rec.machine.error
    assert to_plain(rec.machine.result) == ["a", "b", "c", "d"]


def test_a_bad_model_option_is_a_located_error(clean_env: pytest.MonkeyPatch) -> None:
    source = 'node main() {\n  const x = llm("hi", {model: "nope/thing"})\n  return x\n}\n'
    with FakeServer(Reply(200, openai_answer("never"))) as server:
        rec = record(source, MemoryStore(), model_spec="openai/test-model", base_url=server.url)
        close_models(rec)
        assert server.count == 0
    m = rec.machine
    assert m.status == FAILED and m.error is not None
    rendered = m.error.render(m.program.source)
    assert rendered.startswith("prog.agency:2:3: error:")
    assert "unknown model provider `nope`" in rendered


# -- token and cost totals survive restore (LANGUAGE.md §6) ------------------------------------

RESTORE_PROGRAM = """node main() {
  let n = 0
  const cp = checkpoint()
  n = n + 1
  const x = llm("roll")
  restore(cp, {maxRestores: 2})
  return n
}
"""


def test_usage_is_not_rolled_back_by_restore(clean_env: pytest.MonkeyPatch) -> None:
    store = MemoryStore()
    replies = [Reply(200, openai_answer(str(i), model="gpt-4o-mini")) for i in range(3)]
    with FakeServer(*replies) as server:
        rec = record(
            RESTORE_PROGRAM, store, model_spec="openai/gpt-4o-mini", base_url=server.url + "/v1"
        )
        close_models(rec)
        assert server.count == 3
        tl = rec.timeline
        step_back_through(tl, server)
    m = rec.machine
    assert m.status == HALTED and m.result == 1  # `n` was rolled back with everything else...
    assert len(m.threads["0"]) == 2  # ...and so was the conversation
    cost = (300 * 0.15 + 30 * 0.60) / 1e6
    assert m.usage == {"input_tokens": 300, "output_tokens": 30, "cost": pytest.approx(cost)}
    assert m.llm_calls == 3
    assert usage_at_end(tl) == (300, 30, pytest.approx(cost))
    totals = [tl.state_at(s).usage.input_tokens for s in range(len(tl))]
    assert totals == sorted(totals) and set(totals) == {0, 100, 200, 300}
    assert len(store.llm_calls(rec.run_id)) == 3


# -- a rate limit, then success; a server that keeps failing -----------------------------------


def test_rate_limited_then_answered_cli(tmp_path: Path) -> None:
    (tmp_path / "add.agency").write_text(TOOLS_PROGRAM)
    db = tmp_path / "runs.db"
    limited = Reply(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "0"})
    with FakeServer(limited, *openai_tool_replies()) as server:
        proc = agency(
            tmp_path,
            "run",
            "add.agency",
            "--model",
            "openai/test-model",
            "--base-url",
            server.url + "/v1",
            "--db",
            str(db),
            OPENAI_API_KEY=OPENAI_KEY,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == "answer 9\n"
        assert server.count == 3  # the refused request was sent again
        assert server.requests[0].body == server.requests[1].body
    with SQLiteStore(db) as store:
        run = store.list_runs()[0]
        assert run.status == "finished"
        check_tool_calls(store, run.id)  # the refusal is not a recorded call


def test_rate_limited_then_answered_in_process(
    clean_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agency.llm")
    limited = Reply(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "0"})
    store = MemoryStore()
    with FakeServer(limited, *openai_tool_replies()) as server:
        rec = record(
            TOOLS_PROGRAM, store, model_spec="openai/test-model", base_url=server.url + "/v1"
        )
        close_models(rec)
        assert server.count == 3
    assert rec.machine.result == 9
    assert "429 Too Many Requests: slow down; retry 1 of 3" in caplog.text
    check_tool_calls(store, rec.run_id)


def test_server_keeps_failing_cli(tmp_path: Path) -> None:
    (tmp_path / "add.agency").write_text(TOOLS_PROGRAM)
    db = tmp_path / "runs.db"
    with FakeServer(Reply(500, {"error": {"message": "boom"}})) as server:
        proc = agency(
            tmp_path,
            "run",
            "add.agency",
            "--model",
            "openai/test-model",
            "--base-url",
            server.url + "/v1",
            "--db",
            str(db),
            OPENAI_API_KEY=OPENAI_KEY,
            AGENCY_LLM_RETRIES="1",
        )
        assert server.count == 2
    host = re.escape(server.url.removeprefix("http://"))
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert re.search(
        rf"^add\.agency:{TOOLS_LINE_COL}: error: openai: {host} kept failing "
        r"\(500 Internal Server Error: boom\) after 2 attempts",
        proc.stderr,
        re.M,
    ), proc.stderr
    assert "Traceback" not in proc.stderr
    with SQLiteStore(db) as store:
        run = store.list_runs()[0]
        assert run.status == "failed" and "kept failing" in (run.error or "")
        assert store.llm_calls(run.id) == []


def test_the_provider_option_places_a_bare_model_name(clean_env: pytest.MonkeyPatch) -> None:
    # `{model: "…", provider: "anthropic"}` as the guide writes it: the model is anthropic's
    source = """node main() {
  const a = llm("first", {model: "my-claude", provider: "anthropic"})
  const b = llm("second")
  return [a, b]
}
"""
    store = MemoryStore()
    with (
        FakeServer(Reply(200, openai_answer("B"))) as oa,
        FakeServer(Reply(200, anthropic_answer(anthropic_text("A")))) as an,
    ):
        clean_env.setenv("ANTHROPIC_BASE_URL", an.url)
        rec = record(source, store, model_spec="openai/test-model", base_url=oa.url + "/v1")
        close_models(rec)
        assert rec.machine.status == HALTED, rec.machine.error
        assert to_plain(rec.machine.result) == ["A", "B"]
        assert [r.body["model"] for r in an.requests] == ["my-claude"]
        assert [r.body["model"] for r in oa.requests] == ["test-model"]
