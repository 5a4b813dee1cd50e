"""Packed LLM requests (`requests.py`) on every store: each message stored once per run, a call
referring to them, and every request read back exactly as it was written; on the durable stores
also by a second store object that has nothing cached, and from a database written before
packing (the migration adds the parts table and the `request_form` column)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
from pg_helpers import fresh_schema

from runtime.record import pg_migrations
from runtime.record.pg_store import PostgresStore
from runtime.record.sqlite_store import SQLiteStore
from runtime.record.store import RunMeta, RunStore


def msg(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": text}


def request(messages: list[Any]) -> dict[str, Any]:
    tools = [{"name": "t", "description": "d", "parameters": {"type": "object"}}]
    return {"messages": messages, "tools": tools, "schema": {"n": 1.0}, "params": {"x": 1}}


A = [msg("user", "a0"), msg("assistant", "a1"), msg("user", "a2")]
B = [msg("system", "b0"), msg("user", "b1")]
SENT = [  # (branch, request): interleaved threads, a fork continuing the main line's thread
    (0, request(A[:1])),
    (0, request(B[:1])),
    (0, request(A)),
    (0, request(B + [msg("user", 'ünï "q"')])),
    (1, request(A + [msg("assistant", "fork")])),
    (0, request(A + [msg("assistant", "main")])),
    (1, request([{"role": "tool", "content": "9", "name": "add", "tool_call_id": "c"}])),
    (0, ["not", "an", "llm", "request"]),  # stored whole
]


def record(store: RunStore) -> str:
    run_id = store.create_run(RunMeta(source_path="p.agency", source_sha256=""))
    store.create_branch(run_id, 0, 2)
    for step, (branch, req) in enumerate(SENT):
        store.add_llm_call(run_id, branch, step, provider="p", model="m", request=req, response=1)
    store.flush()
    return run_id


def as_text(values: list[Any]) -> list[str]:
    return [json.dumps(v) for v in values]


def test_packed_requests_read_back_exactly(store: RunStore) -> None:
    run_id = record(store)
    got = [c.request for c in store.llm_calls(run_id)]
    assert as_text(got) == as_text([r for _, r in SENT])
    fork = [c.request for c in store.llm_calls(run_id, 1)]  # the main line up to step 2, then 1's
    assert as_text(fork) == as_text([SENT[0][1], SENT[1][1], SENT[2][1], SENT[4][1], SENT[6][1]])


def test_one_call_read_alone_is_the_same_request(store: RunStore) -> None:
    # `last_llm_call` (what the LLM inspector reads) unpacks one call from its own parts, in
    # a fresh store too, whose packer has seen none of the earlier calls.
    run_id = record(store)
    for branch in (0, 1):
        calls = store.llm_calls(run_id, branch)
        for call in calls:
            alone = store.last_llm_call(run_id, branch, call.step)
            assert alone is not None
            latest = [c for c in calls if c.step == call.step][-1]
            assert as_text([alone.request]) == as_text([latest.request])


def test_one_call_read_alone_from_a_reopened_sqlite_store(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "runs.db") as store:
        run_id = record(store)
        want = [(c.step, c.request) for c in store.llm_calls(run_id, 0)]
    for step in sorted({s for s, _ in want}):
        with SQLiteStore(tmp_path / "runs.db", read_only=True) as store:
            alone = store.last_llm_call(run_id, 0, step)
        assert alone is not None
        latest = [r for s, r in want if s == step][-1]
        assert as_text([alone.request]) == as_text([latest])


def test_a_deleted_run_leaves_nothing_for_a_new_one(store: RunStore) -> None:
    store.delete_run(record(store))
    run_id = record(store)
    assert as_text([c.request for c in store.llm_calls(run_id)]) == as_text([r for _, r in SENT])


def test_a_second_sqlite_store_rebuilds_from_the_file(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "runs.db") as store:
        run_id = record(store)
    with SQLiteStore(tmp_path / "runs.db", read_only=True) as store:
        got = [c.request for c in store.llm_calls(run_id)]
    assert as_text(got) == as_text([r for _, r in SENT])


def test_a_second_postgres_store_rebuilds_from_the_database() -> None:
    with fresh_schema() as url:
        with PostgresStore(url) as store:
            run_id = record(store)
        with PostgresStore(url) as store:
            got = [c.request for c in store.llm_calls(run_id)]
            assert as_text(got) == as_text([r for _, r in SENT])
            with psycopg.connect(url) as conn:
                forms = conn.execute("SELECT request_form FROM llm_calls ORDER BY id").fetchall()
                parts = conn.execute("SELECT count(*) FROM llm_parts").fetchone()
            assert [f[0] for f in forms] == [1] * 7 + [0]
            assert (
                parts is not None and parts[0] == 9 + 2
            )  # 9 messages once each, the tools, the schema


def test_a_postgres_store_written_before_packing_still_reads() -> None:
    whole = request([msg("user", "hi")])
    ts = "2026-01-01T00:00:00.000000Z"
    with fresh_schema() as url:
        with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
            pg_migrations.MIGRATIONS[0](conn)  # schema v1: requests stored whole
            conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '1')")
            conn.execute(
                "INSERT INTO runs (id, source_path, source_sha256, node, args_json, config_json,"
                " status, created_at, updated_at) VALUES ('r1', 'p.agency', '', 'main', '{}',"
                " '{}', 'finished', %s, %s)",
                (ts, ts),
            )
            conn.execute(
                "INSERT INTO branches (run_id, branch, created_at) VALUES ('r1', 0, %s)", (ts,)
            )
            conn.execute(
                "INSERT INTO llm_calls (run_id, branch, step, provider, model, request_json,"
                " response_json, created_at) VALUES ('r1', 0, 3, 'mock', 'mock', %s, '\"ok\"', %s)",
                (json.dumps(whole), ts),
            )
        with PostgresStore(url) as store:  # migrated to the latest schema
            assert [c.request for c in store.llm_calls("r1")] == [whole]
            later = dict(whole, messages=[*whole["messages"], msg("user", "2")])
            store.add_llm_call("r1", 0, 4, provider="p", model="m", request=later, response=None)
            assert [c.request for c in store.llm_calls("r1")] == [whole, later]
        with psycopg.connect(url) as conn:
            forms = conn.execute("SELECT request_form FROM llm_calls ORDER BY id").fetchall()
            version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        assert [f[0] for f in forms] == [0, 1]
        assert version == (str(pg_migrations.latest_version()),)
