"""A recorded LLM request is stored packed (each message once per run) and rebuilt exactly.

The program talks to the real OpenAI client against a scripted server on 127.0.0.1; each
request the store gives back is sent again, through a fresh client, to a second server, and the
two servers must have received the same bytes. Also: a growing thread costs O(new messages) per
call in the store, and a store written before packing (schema v2) still reads its calls.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pg_helpers import fresh_schema

from runtime.language.program import compile_source
from runtime.llm.base import ToolSpec
from runtime.llm.registry import resolve_model
from runtime.record import migrations
from runtime.record.pg_store import PostgresStore
from runtime.record.sqlite_store import SQLiteStore
from runtime.record.store import MemoryStore, RunMeta, RunStore
from runtime.runs.recording import record_program
from runtime.runs.runner import RunConfig

from .fake_server import FakeServer, Reply, openai_answer, openai_tool_call

PG_SERVER = os.environ.get("AGENCY_TEST_POSTGRES")  # read before `clean_env` clears it

PROGRAM = '''def add(a: number, b: number): number {
  """Adds two numbers."""
  return a + b
}

node main() {
  const r: number = llm("What is 4+5? use the tool", {tools: [add]})
  const s = llm("Now in words, with 'quotes', \\"escapes\\" and ünïcode ✓", {temperature: 0.5})
  let t = ""
  thread {
    t = llm("A fresh thread")
  }
  const u: number = llm("And 4+5 again, please", {tools: [add]})
  return [r, s, t, u]
}
'''


def meta() -> RunMeta:
    return RunMeta(source_path="p.agency", source_sha256="")


def replies() -> list[Reply]:
    call = openai_tool_call("call_1", "add", {"a": 4, "b": 5})
    call2 = openai_tool_call("call_2", "add", {"a": 4, "b": 5})
    return [
        Reply(200, openai_answer(None, [call])),
        Reply(200, openai_answer('{"response": 9}')),
        Reply(200, openai_answer("nine, with ✓")),
        Reply(200, openai_answer("fresh")),
        Reply(200, openai_answer(None, [call2])),
        Reply(200, openai_answer('{"response": 9}')),
    ]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("AGENCY_", "OPENAI_", "ANTHROPIC_", "OLLAMA_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")


def resend(request: dict[str, Any], url: str) -> None:
    """Send a stored request again through a fresh OpenAI client."""
    model = resolve_model("openai/test-model", base_url=url)
    try:
        model.complete(
            request["messages"],
            [ToolSpec(**t) for t in request["tools"]],
            request["schema"],
            request["params"],
        )
    finally:
        model.close()


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
def test_a_stored_request_is_the_one_sent_on_the_wire(
    clean_env: None, tmp_path: Path, kind: str
) -> None:
    if kind == "postgres":
        with fresh_schema(PG_SERVER) as url:
            check_the_wire(PostgresStore(url), lambda: PostgresStore(url))
    elif kind == "sqlite":
        check_the_wire(SQLiteStore(tmp_path / "runs.db"), lambda: SQLiteStore(tmp_path / "runs.db"))
    else:
        check_the_wire(MemoryStore(), None)


def check_the_wire(store: RunStore, reopen: Callable[[], RunStore] | None) -> None:
    program = compile_source(PROGRAM, "prog.agency")
    with FakeServer(*replies()) as server:
        rec = record_program(
            program,
            RunConfig(quiet=True, model_spec="openai/test-model", base_url=server.url),
            store,
        )
        sent = [r.raw for r in server.requests]
    assert rec.machine.error is None, rec.machine.error
    assert len(sent) == 6 and all(sent)
    if reopen is not None:  # a second store object: nothing cached from the recording
        store.close()
        store = reopen()
    calls = store.llm_calls(rec.run_id)
    assert len(calls) == len(sent)
    with FakeServer(*replies()) as again:
        for call in calls:
            resend(call.request, again.url)
        resent = [r.raw for r in again.requests]
    assert resent == sent
    store.close()


def test_a_growing_thread_costs_only_its_new_messages(tmp_path: Path) -> None:
    pad = "p" * 180
    n = 60
    source = f"""node main() {{
  let i = 0
  while (i < {n}) {{
    llm("question " + i + " {pad}")
    i = i + 1
  }}
}}
"""
    mocks = [{"return": f"answer {i} {pad}"} for i in range(n)]
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as store:
        rec = record_program(compile_source(source, "p.agency"), RunConfig(mocks=mocks), store)
        calls = store.llm_calls(rec.run_id)
    assert [len(c.request["messages"]) for c in calls] == [2 * i + 1 for i in range(n)]
    conn = sqlite3.connect(path)
    parts = conn.execute("SELECT count(*), sum(length(json)) FROM llm_parts").fetchone()
    requests = conn.execute(
        "SELECT max(length(request_json)), min(request_form) FROM llm_calls"
    ).fetchone()
    conn.close()
    assert parts[0] == 2 * n - 1 + 2  # each message once, plus the tool list and the schema
    assert parts[1] < 2 * n * 260
    assert requests == (requests[0], 1) and requests[0] < 120  # references, whatever the length


def test_requests_that_are_not_llm_shaped_are_stored_whole(tmp_path: Path) -> None:
    odd: list[Any] = [
        {"messages": "not a list", "tools": [], "schema": None, "params": {}},
        {"tools": [], "messages": [], "schema": None, "params": {}},
        ["a", "list"],
        None,
    ]
    for store in (MemoryStore(), SQLiteStore(tmp_path / "runs.db")):
        run_id = store.create_run(meta())
        for i, request in enumerate(odd):
            store.add_llm_call(
                run_id, 0, i, provider="p", model="m", request=request, response=None
            )
        assert [c.request for c in store.llm_calls(run_id)] == odd
        store.close()


def test_forks_and_interleaved_threads_rebuild_exactly(tmp_path: Path) -> None:
    def msg(role: str, text: str) -> dict[str, Any]:
        return {"role": role, "content": text}

    def request(messages: list[Any]) -> dict[str, Any]:
        tools = [{"name": "t", "description": "d", "parameters": {"type": "object"}}]
        return {"messages": messages, "tools": tools, "schema": {"n": 1.0}, "params": {"x": 1}}

    a = [msg("user", "a0"), msg("assistant", "a1"), msg("user", "a2")]
    b = [msg("system", "b0"), msg("user", "b1")]
    sent = [
        (0, request(a[:1])),
        (0, request(b[:1])),
        (0, request(a)),
        (0, request(b + [msg("user", 'ünï "q"')])),
        (1, request(a + [msg("assistant", "fork")])),  # a branch continues the main line's
        (0, request(a + [msg("assistant", "main")])),
        (1, request([{"role": "tool", "content": "9", "name": "add", "tool_call_id": "c"}])),
    ]
    for store in (MemoryStore(), SQLiteStore(tmp_path / "runs.db")):
        run_id = store.create_run(meta())
        store.create_branch(run_id, 0, 2)
        for step, (branch, req) in enumerate(sent):
            store.add_llm_call(
                run_id, branch, step, provider="p", model="m", request=req, response=1
            )
        got = [c.request for c in store.llm_calls(run_id)]
        assert [json.dumps(g) for g in got] == [json.dumps(r) for _, r in sent]
        store.close()
    with SQLiteStore(tmp_path / "runs.db") as store:  # reopened: rebuilt from the file alone
        got = [c.request for c in store.llm_calls(store.latest_run().id)]  # type: ignore[union-attr]
        assert [json.dumps(g) for g in got] == [json.dumps(r) for _, r in sent]


def test_a_store_written_before_packing_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    old = migrations.MIGRATIONS[:2]  # schema v2: requests stored whole
    request = {
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [],
        "schema": None,
        "params": {},
    }
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    migrations.migrate(conn, path, old)
    conn.execute(
        "INSERT INTO runs (id, source_path, source_sha256, node, args_json, config_json, status,"
        " created_at, updated_at) VALUES ('r1', 'p.agency', '', 'main', '{}', '{}', 'finished',"
        " '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z')"
    )
    conn.execute(
        "INSERT INTO branches (run_id, branch, created_at) VALUES ('r1', 0,"
        " '2026-01-01T00:00:00.000000Z')"
    )
    conn.execute(
        "INSERT INTO llm_calls (run_id, branch, step, provider, model, request_json,"
        " response_json, created_at) VALUES ('r1', 0, 3, 'mock', 'mock', ?, '\"ok\"',"
        " '2026-01-01T00:00:00.000000Z')",
        (json.dumps(request),),
    )
    conn.close()

    with SQLiteStore(path, read_only=True) as store:  # not migrated: read as it is
        assert [c.request for c in store.llm_calls("r1")] == [request]
    with SQLiteStore(path) as store:  # migrated to the latest schema
        assert [c.request for c in store.llm_calls("r1")] == [request]
        later = dict(request, messages=[*request["messages"], {"role": "user", "content": "2"}])
        store.add_llm_call("r1", 0, 4, provider="p", model="m", request=later, response=None)
        assert [c.request for c in store.llm_calls("r1")] == [request, later]
    conn = sqlite3.connect(path)
    assert [r[0] for r in conn.execute("SELECT request_form FROM llm_calls ORDER BY id")] == [0, 1]
    conn.close()
