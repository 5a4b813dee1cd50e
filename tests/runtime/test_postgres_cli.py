"""The commands over recorded runs on a PostgreSQL store: run, runs, show, export, resume,
prune --keep-failed and copy, with `--db URL` or `AGENCY_DB`; claims from many processes at
once; and a password in the URL never stored or shown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner, Result
from pg_helpers import fresh_schema

from debugger.cli import cli
from runtime.record.pg_store import PostgresStore
from runtime.record.sqlite_store import SQLiteStore
from runtime.record.store import RunMeta

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
WAIT = 'node main() {\n  const ok = interrupt("go on?")\n  print("went on")\n}\n'


def agency(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert "Traceback" not in result.output
    return result


@pytest.fixture
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENCY_DB", raising=False)
    with fresh_schema() as fresh:
        yield fresh


def test_commands_work_on_postgres(url: str, tmp_path: Path) -> None:
    mocks = str(EXAMPLES / "dice.mocks.json")
    ran = agency("run", str(EXAMPLES / "dice.agency"), "--mock", mocks, "--db", url)
    assert ran.exit_code == 0, ran.output
    listed = json.loads(agency("runs", "--db", url, "--json").output)
    assert [r["status"] for r in listed] == ["finished"]
    run_id = listed[0]["id"]
    shown = agency("show", f"{run_id}:3", "--db", url)
    assert shown.exit_code == 0 and f"run {run_id}" in shown.output
    exported = agency("export", run_id, "-o", "cp.json", "--db", url)
    assert exported.exit_code == 0 and json.loads((tmp_path / "cp.json").read_text())
    copied = agency("copy", "--from", url, "--to", "laptop.db")
    assert copied.exit_code == 0 and "copied 1 run" in copied.output
    with SQLiteStore(tmp_path / "laptop.db") as laptop, PostgresStore(url) as team:
        assert laptop.batches(run_id, 0, 0, 100) == team.batches(run_id, 0, 0, 100)
    again = agency("copy", "--from", "laptop.db", "--to", url)
    assert again.exit_code == 0 and "1 already there" in again.output


def test_resume_through_agency_db(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENCY_DB", url)
    (tmp_path / "wait.agency").write_text(WAIT)
    waiting = agency("run", "wait.agency", "--model", "sim")
    assert waiting.exit_code == 3, waiting.output  # stopped at the interrupt
    resumed = agency("resume", "--last", "--approve", "--model", "sim")
    assert resumed.exit_code == 0, resumed.output
    assert "went on" in resumed.output
    assert json.loads(agency("runs", "--json").output)[0]["status"] == "finished"


def test_prune_keeps_failed_runs_in_one_go(url: str) -> None:
    old = datetime.now(UTC) - timedelta(days=30)
    with PostgresStore(url) as store:
        ids = {}
        for status in ("finished", "failed", "interrupted"):
            run_id = store.create_run(RunMeta(source_path="a.agency", source_sha256="0" * 64))
            run = store.get_run(run_id)
            assert run is not None
            store.put_run(run.replace(status=status, created_at=old, updated_at=old))
            ids[status] = run_id
        fresh = store.create_run(RunMeta(source_path="a.agency", source_sha256="0" * 64))
    pruned = agency("prune", "--older-than", "7d", "--keep-failed", "--db", url)
    assert pruned.exit_code == 0 and "deleted 2 runs" in pruned.output
    with PostgresStore(url) as store:
        assert {r.id for r in store.list_runs()} == {ids["failed"], fresh}


CLAIMER = textwrap.dedent(
    """
    import os, sys
    from runtime.record.pg_store import PostgresStore
    with PostgresStore(sys.argv[1]) as store:
        sys.stdin.readline()  # all start together
        holder = store.claim_run(sys.argv[2], {"pid": os.getpid(), "host": "h", "started": 1})
        print("won" if holder is None else "lost", flush=True)
    """
)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_exactly_one_of_many_processes_claims_a_run(url: str, n: int) -> None:
    with PostgresStore(url) as store:
        run_id = store.create_run(RunMeta(source_path="a.agency", source_sha256="0" * 64))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIMER, url, run_id],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        for _ in range(n)
    ]
    outs = [p.communicate(b"go\n")[0].decode().strip() for p in procs]
    assert sorted(outs) == ["lost"] * (n - 1) + ["won"]


def test_a_password_in_the_url_is_never_stored_or_shown(url: str) -> None:
    secret = "hunter2-" + os.urandom(4).hex()
    with_password = url.replace("agency@", f"agency:{secret}@", 1)
    mocks = str(EXAMPLES / "dice.mocks.json")
    ran = agency("run", str(EXAMPLES / "dice.agency"), "--mock", mocks, "--db", with_password)
    assert ran.exit_code == 0 and secret not in ran.output
    bad = agency("runs", "--db", with_password.replace("127.0.0.1", "127.0.0.1:1", 1))
    assert bad.exit_code != 0 and secret not in bad.output
    with PostgresStore(url) as store:
        conn_url = store.url
    with psycopg.connect(conn_url) as conn:
        for table in ("runs", "branches", "events", "llm_calls", "effects", "meta"):
            rows = conn.execute(f"SELECT t::text FROM {table} t").fetchall()
            assert not any(secret in row[0] for row in rows), table
        blobs = conn.execute("SELECT blob FROM step_batches UNION ALL SELECT blob FROM keyframes")
        assert not any(secret.encode() in bytes(row[0]) for row in blobs)


def test_debugger_trace_opens_a_run_from_postgres(url: str) -> None:
    from debugger.debug_command import build_app
    from debugger.opening import trace_session

    mocks = str(EXAMPLES / "dice.mocks.json")
    assert agency("run", str(EXAMPLES / "dice.agency"), "--mock", mocks, "--db", url).exit_code == 0
    assert build_app(None, trace=url) is not None
    with PostgresStore(url) as store:
        run = store.latest_run()
        assert run is not None
        session = trace_session(store, run.id)
        assert session.length == run.step_count


def test_runs_marks_a_dead_recording_interrupted(url: str) -> None:
    import socket

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    )
    with PostgresStore(url) as store:
        run_id = store.create_run(RunMeta(source_path="a.agency", source_sha256="0" * 64))
        process = {"pid": int(dead.stdout), "host": socket.gethostname(), "started": 1.0}
        store.update_run(run_id, meta={"process": process})
    listed = json.loads(agency("runs", "--db", url, "--json").output)
    assert [(r["id"], r["status"]) for r in listed] == [(run_id, "interrupted")]
