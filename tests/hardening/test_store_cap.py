"""Issue 11, item 5: the run-store size cap holds for every command that records steps, not only
`agency run`: `agency resume`, a run answered or restored in the debugger, a debugger recording.
Each stops at a step boundary with the run saved as interrupted, and resumable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from debugger.debug_command import build_app
from debugger.opening import record_session, trace_session
from runtime.errors import AgencyError
from runtime.language.program import load_program
from runtime.record.sqlite_store import SQLiteStore
from runtime.runs.recording import record_program
from runtime.runs.runner import RunConfig, decision_from
from runtime.runs.stopping import Stopper, store_size

AGENCY = [sys.executable, "-c", "from debugger.cli import main; main()"]

LOOP = "node main() {\n  let i = 0\n  while (true) {\n    i = i + 1\n  }\n}\n"
ASK_THEN_LOOP = (
    'node main() {\n  const a = interrupt("go on?")\n  let i = 0\n'
    "  while (true) {\n    i = i + 1\n  }\n}\n"
)


def agency(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AGENCY_")}
    environ.update(env)
    return subprocess.run(
        [*AGENCY, *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def _program(tmp_path: Path, text: str) -> object:
    path = tmp_path / "p.agency"
    path.write_text(text)
    return load_program(str(path))


def _status(db: Path) -> tuple[str, int]:
    with SQLiteStore(db, read_only=True) as store:
        run = store.latest_run()
        assert run is not None
        return run.status, store.step_count(run.id, 0)


def test_resume_stops_at_the_store_size_cap_and_stays_resumable(tmp_path: Path) -> None:
    (tmp_path / "loop.agency").write_text(LOOP)
    first = agency(tmp_path, "run", "loop.agency", "--max-store-size", "1M")
    assert first.returncode == 130, first.stderr
    db = tmp_path / ".agency" / "runs.db"
    status, steps = _status(db)
    assert status == "interrupted"

    again = agency(tmp_path, "resume", "--last", "--max-store-size", "2M")
    assert again.returncode == 130, again.stderr
    assert "the run store" in again.stderr and "over the 2.0 MiB allowed" in again.stderr
    assert "agency resume" in again.stderr and "Traceback" not in again.stderr
    status, more = _status(db)
    assert status == "interrupted" and more > steps
    assert store_size(db) < 6 << 20

    env = agency(tmp_path, "resume", "--last", AGENCY_MAX_STORE_SIZE="3M")
    assert env.returncode == 130 and "AGENCY_MAX_STORE_SIZE" in env.stderr, env.stderr
    status, most = _status(db)
    assert status == "interrupted" and most > more

    bad = agency(tmp_path, "resume", "--last", "--max-store-size", "lots")
    assert bad.returncode == 2 and "expected a size such as 500M" in bad.stderr
    assert _status(db) == (status, most)  # refused before anything ran


def test_a_debugger_recording_stops_at_the_cap(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    store = SQLiteStore(db)
    session = record_session(
        _program(tmp_path, LOOP), RunConfig(quiet=True), store, stopper=Stopper(None, 1 << 20)
    )
    assert "the run store" in session.message and "over the 1.0 MiB allowed" in session.message
    assert session.max_store_bytes == 1 << 20
    assert store.latest_run().status == "interrupted"  # type: ignore[union-attr]
    store.close()


def test_a_restore_in_the_debugger_stops_at_the_cap(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    store = SQLiteStore(db)
    rec = record_program(
        _program(tmp_path, LOOP), RunConfig(quiet=True), store, stopper=Stopper(300)
    )
    store.flush()
    session = trace_session(store, rec.run_id)
    session.goto(100)
    cap = store_size(db) + (1 << 20)
    stopper = Stopper(None, cap)
    branch = session.restore(stopper=stopper)
    assert branch != 0 and stopper.stopped()
    assert "the run store" in session.message and "allowed (--max-store-size" in session.message
    assert session.last > 300  # it ran on past the recorded steps, then stopped cleanly
    store.close()


def test_answering_an_interrupt_in_the_debugger_runs_on_under_the_cap(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    store = SQLiteStore(db)
    rec = record_program(_program(tmp_path, ASK_THEN_LOOP), RunConfig(quiet=True), store)
    assert rec.machine.status == "interrupted"
    stopper = Stopper(None, store_size(db) + (1 << 20))
    rec.continue_run(decision_from("approve"), stopper=stopper)
    assert stopper.stopped() and "the run store" in stopper.reason()
    run = store.get_run(rec.run_id)
    assert run is not None and run.status == "interrupted" and "run store" in (run.error or "")
    store.close()


def test_the_debugger_command_takes_the_cap(tmp_path: Path) -> None:
    (tmp_path / "p.agency").write_text(LOOP)
    with pytest.raises(AgencyError, match="expected a size such as 500M"):
        build_app(str(tmp_path / "p.agency"), config=RunConfig(), max_store_size="lots")
    app = build_app(
        str(tmp_path / "p.agency"),
        config=RunConfig(quiet=True),
        db=str(tmp_path / "r.db"),
        max_store_size="3M",
    )
    assert app._stopper is not None and app._stopper.max_store_bytes == 3 << 20
    help_text = agency(tmp_path, "debugger", "--help").stdout
    assert "--max-store-size" in help_text
    assert "--max-store-size" in agency(tmp_path, "resume", "--help").stdout


def test_on_postgres_the_cap_bounds_what_a_run_writes(tmp_path: Path) -> None:
    """A team's database grows by every writer at once and is bounded by `agency prune`, so
    there the cap counts what this command hands the store: it trips, resumably, whatever the
    database already holds."""
    from runtime.record.pg_store import PostgresStore
    from tests.runtime.pg_helpers import fresh_schema

    (tmp_path / "loop.agency").write_text(LOOP)
    with fresh_schema() as url:
        first = agency(tmp_path, "run", "loop.agency", "--db", url, "--max-store-size", "1M")
        assert first.returncode == 130, first.stderr
        assert "this run has written" in first.stderr and "over the 1.0 MiB allowed" in first.stderr
        assert "Traceback" not in first.stderr and "agency resume" in first.stderr
        with PostgresStore(url, read_only=True) as store:
            run = store.latest_run()
            assert run is not None and run.status == "interrupted"
            steps = store.step_count(run.id, 0)
        again = agency(tmp_path, "resume", "--last", "--db", url, AGENCY_MAX_STORE_SIZE="1M")
        assert again.returncode == 130 and "AGENCY_MAX_STORE_SIZE" in again.stderr, again.stderr
        with PostgresStore(url, read_only=True) as store:
            run = store.latest_run()
            assert run is not None and run.status == "interrupted"
            assert store.step_count(run.id, 0) > steps  # it ran on, under a cap of its own
