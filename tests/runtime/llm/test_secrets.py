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


# -- a whole recorded run -----------------------------------------------------------------------

RUN_OPENAI_KEY = "sk-test-SECRET-123"
RUN_ANTHROPIC_KEY = "sk-ant-test-SECRET-456"
CHECKPOINT_PROGRAM = '''def add(a: number, b: number): number {
  """Adds two numbers."""
  return a + b
}

node main() {
  const cp = checkpoint()
  saveToDisk(getCheckpoint(cp), "before.json")
  const r: number = llm("What is 4+5? use the tool", {tools: [add]})
  const again = checkpoint()
  saveToDisk(getCheckpoint(again), "after.json")
  print("answer", r)
  return r
}
'''


def run_replies(spec: str, key: str) -> list[Reply]:
    """A rate limit echoing the key, a tool call, then the answer, each with the key in it."""
    from .fake_server import (
        anthropic_answer,
        anthropic_text,
        anthropic_tool_use,
        openai_answer,
        openai_tool_call,
    )

    limited = Reply(429, {"error": {"message": f"slow down {key}"}}, headers={"Retry-After": "0"})
    if spec.startswith("openai"):
        call = openai_tool_call("call_1", "add", {"a": 4, "b": 5})
        first, last = openai_answer(f"using {key}", [call]), openai_answer('{"response": 9}')
    else:
        first = anthropic_answer(
            anthropic_text(f"using {key}"), anthropic_tool_use("call_1", "add", {"a": 4, "b": 5})
        )
        last = anthropic_answer(anthropic_text('{"response": 9}'))
    first["echo"] = key
    last["echo"] = {"key": key}
    return [limited, Reply(200, first), Reply(200, last)]


def leaks(paths: list[Any], texts: list[str], secrets: tuple[str, ...]) -> list[str]:
    """Where any secret appears: files by raw bytes, texts as they are."""
    found = []
    for path in paths:
        data = path.read_bytes()
        found += [f"{path.name}: {s}" for s in secrets if s.encode() in data]
    for i, text in enumerate(texts):
        found += [f"text {i}: {s}" for s in secrets if s in text]
    return found


@pytest.mark.parametrize("spec", ["openai/test-model", "anthropic/claude-sonnet-4-5"])
def test_a_recorded_run_stores_no_secret(
    spec: str,
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    from runtime.language.program import compile_source
    from runtime.record.sqlite_store import SQLiteStore
    from runtime.runs.recording import record_program
    from runtime.runs.runner import RunConfig
    from runtime.vm.writelog import HALTED

    caplog.set_level(logging.DEBUG)
    for name in (
        "AGENCY_MODEL",
        "AGENCY_LLM_MOCKS",
        "AGENCY_PRICES",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", RUN_OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", RUN_ANTHROPIC_KEY)
    key = RUN_OPENAI_KEY if spec.startswith("openai") else RUN_ANTHROPIC_KEY
    secrets = (RUN_OPENAI_KEY, RUN_ANTHROPIC_KEY)
    program = compile_source(CHECKPOINT_PROGRAM, str(tmp_path / "prog.agency"))
    db = tmp_path / "runs.db"
    store = SQLiteStore(db)
    with FakeServer(*run_replies(spec, key)) as server:
        base_url = server.url + ("/v1" if spec.startswith("openai") else "")
        config = RunConfig(model_spec=spec, base_url=base_url, root=str(tmp_path))
        rec = record_program(program, config, store)
        rec.machine.model.close()
        assert rec.machine.status == HALTED, rec.machine.error
        assert server.count == 3
        sent = json.dumps(server.requests[0].headers)
        assert key in sent  # the key was really in play
        tl = rec.timeline
        exported = tl.export_checkpoint(len(tl) - 1)
    (tmp_path / "exported.json").write_text(json.dumps(exported))
    calls = store.llm_calls(rec.run_id)
    assert len(calls) == 2
    assert "***" in json.dumps(calls[0].response)  # the echoed key, redacted
    store.flush()
    files = [db, tmp_path / "before.json", tmp_path / "after.json", tmp_path / "exported.json"]
    wal = tmp_path / "runs.db-wal"
    live = files + ([wal] if wal.exists() else [])
    out, err = capfd.readouterr()
    assert out == "answer 9\n"
    problems = leaks(live, [out, err, caplog.text], secrets)
    store.close()
    problems += leaks(files + ([wal] if wal.exists() else []), [], secrets)
    assert problems == []
    assert "retry 1 of" in caplog.text  # the refusal was logged, and the log was checked


def test_agency_run_stores_and_prints_no_secret(tmp_path: Any) -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[3]
    (tmp_path / "prog.agency").write_text(CHECKPOINT_PROGRAM)
    db = tmp_path / "runs.db"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AGENCY_", "OPENAI_", "ANTHROPIC_", "OLLAMA_"))
    }
    env.update(
        PYTHONPATH=str(repo), OPENAI_API_KEY=RUN_OPENAI_KEY, ANTHROPIC_API_KEY=RUN_ANTHROPIC_KEY
    )
    with FakeServer(*run_replies("openai", RUN_OPENAI_KEY)) as server:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "debugger",
                "run",
                "prog.agency",
                "--model",
                "openai/test-model",
                "--base-url",
                server.url + "/v1",
                "--db",
                str(db),
                "--json",
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        assert server.count == 3
        exported = tmp_path / "exported.json"
        show = subprocess.run(
            [
                sys.executable,
                "-m",
                "debugger",
                "export",
                "--db",
                str(db),
                "-o",
                str(exported),
                proc.stderr.split("recording run ")[1].split()[0],
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert show.returncode == 0, show.stderr
        assert server.count == 3  # exporting re-executes from the record
    files = [db, tmp_path / "before.json", tmp_path / "after.json", exported]
    files += [p for p in tmp_path.iterdir() if p.name.startswith("runs.db-")]
    texts = [proc.stdout, proc.stderr, show.stdout, show.stderr]
    assert leaks(files, texts, (RUN_OPENAI_KEY, RUN_ANTHROPIC_KEY)) == []
