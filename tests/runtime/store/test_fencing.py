"""Fenced claims (issue 15): a process whose claim on a run was taken over (it was cut off from
the database for longer than its lease) has its later writes refused in the write transaction,
so nothing it still had queued lands after the new owner's claim. Leases on PostgreSQL are
measured by the server's clock, so a machine whose clock is off agrees on when one ends. On
SQLite and PostgreSQL (`AGENCY_TEST_POSTGRES`): two store objects are two processes."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pg_helpers import fresh_schema

from runtime.record.contract import RunTakenOver
from runtime.record.sqlite_store import SQLiteStore
from runtime.record.store import LEASE_LEFT, RunStore, StoreError
from runtime.record.stores import open_run_store
from runtime.runs.processes import claim_run, lease_expired
from tests.cli_helpers import AGENCY

from .helpers import FakeClock, meta

ROOT = Path(__file__).resolve().parents[3]
A = {"pid": 4242, "host": "machine-a", "started": 1.0}
B = {"pid": 4343, "host": "machine-b", "started": 2.0}

Opener = Callable[..., RunStore]


@pytest.fixture(params=["sqlite", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Opens one more store on the same database (another process's view of it)."""
    if request.param == "sqlite":
        yield lambda **kw: SQLiteStore(tmp_path / "runs.db", **kw)
        return
    from runtime.record.pg_store import PostgresStore

    with fresh_schema() as url:
        yield lambda **kw: PostgresStore(url, **kw)


def test_writes_after_a_takeover_are_refused(opener: Opener) -> None:
    clock = FakeClock()
    with opener(clock=clock) as a, opener(clock=clock) as b:
        run_id = a.create_run(meta())
        assert a.claim_run(run_id, A, lease=30) is None
        a.append_batch(run_id, 0, 0, 9, b"before")
        a.flush()
        clock.advance(seconds=31)  # A was cut off: its lease ended
        assert b.claim_run(run_id, B, lease_expired, lease=30) is None
        # A comes back and goes on writing what it was doing.
        a.append_batch(run_id, 0, 10, 19, b"after")
        a.update_run(run_id, status="finished")
        with pytest.raises(RunTakenOver, match=f"run {run_id} was taken over.*machine-b"):
            a.flush()
        assert [x.first_step for x in b.batches(run_id, 0, 0, 100)] == [0]
        assert b.step_count(run_id, 0) == 10
        record = b.get_run(run_id)
        assert record is not None and record.status == "running"
        assert not a.renew_lease(run_id, A, 30)  # told, not raised at: the heartbeat stops
        with pytest.raises(StoreError, match="taken over"):  # still fenced until released
            a.append_batch(run_id, 0, 10, 19, b"again")
            a.flush()
        a.release_run(run_id, A)
        assert b.run_owner(run_id) == B  # the old owner's release leaves B's claim alone
        b.append_batch(run_id, 0, 10, 19, b"mine")
        b.flush()
        assert b.step_count(run_id, 0) == 20
        assert a.get_run(run_id) is not None  # released: A's store reads (and writes) again
        other = a.create_run(meta())
        a.update_run(other, status="finished")
        a.flush()


def test_the_owner_writes_while_it_holds_its_claim(opener: Opener) -> None:
    clock = FakeClock()
    with opener(clock=clock) as a, opener(clock=clock) as b:
        run_id = a.create_run(meta())
        assert a.claim_run(run_id, A, lease=30) is None
        for i in range(5):
            clock.advance(seconds=20)
            assert a.renew_lease(run_id, A, 30)
            a.append_batch(run_id, 0, i * 10, i * 10 + 9, b"x")
            holder = b.claim_run(run_id, B, lease_expired, lease=30)
            assert holder is not None and holder["host"] == "machine-a"
        a.flush()
        a.release_run(run_id, A)
        assert b.step_count(run_id, 0) == 50
        assert b.claim_run(run_id, B, lease_expired, lease=30) is None


def test_a_run_deleted_under_its_owner_refuses_its_writes(opener: Opener) -> None:
    with opener() as a, opener() as b:
        run_id = a.create_run(meta())
        assert a.claim_run(run_id, A, lease=30) is None
        b.delete_run(run_id)
        a.append_batch(run_id, 0, 0, 9, b"x")
        with pytest.raises(RunTakenOver, match="no process holds it now"):
            a.flush()


def test_postgres_leases_follow_the_server_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Machine B's clock is an hour ahead: by it, A's fresh lease ended long ago; by the
    server's, it has 30 s left, and B is refused."""
    from runtime.record import pg_store

    with fresh_schema() as url:
        with pg_store.PostgresStore(url) as a:
            run_id = a.create_run(meta())
            assert a.claim_run(run_id, A, lease=30) is None
            ahead = datetime.now(UTC) + timedelta(hours=1)
            monkeypatch.setattr(pg_store, "utcnow", lambda: ahead)
            with pg_store.PostgresStore(url) as b:
                holder = b.claim_run(run_id, B, lease_expired, lease=30)
                assert holder is not None and holder["host"] == "machine-a"
                assert 25 < holder[LEASE_LEFT] <= 30
                owner = b.run_owner(run_id, lease=True)
                assert owner is not None and 25 < owner[LEASE_LEFT] <= 30
                assert b.prune(timedelta(minutes=30)) == 0  # a held run is never pruned


# -- a real `agency run`, stopped past its lease, taken over, then let go on ----------------------

LOOP = """node main() {
  let i = 0
  while (i < 50000000) {
    i = i + 1
  }
  return i
}
"""


def _sqlite_locked(path: Path) -> bool:
    """Whether another process holds `path`'s write lock (a write transaction under way)."""
    conn = sqlite3.connect(path, timeout=0)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.rollback()
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        conn.close()


def _until(what: str, check: Callable[[], bool], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_recording_cut_off_past_its_lease_is_fenced(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "loop.agency").write_text(LOOP)
    with contextlib.ExitStack() as stack:
        location = (
            stack.enter_context(fresh_schema()) if kind == "postgres" else str(tmp_path / "runs.db")
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENCY_")}
        env.update(AGENCY_HOST_ID="machine-a", AGENCY_LEASE_SECONDS="1", PYTHONPATH=str(ROOT))
        child = subprocess.Popen(
            [*AGENCY, "run", "loop.agency", "--db", location],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert child.stderr is not None
            line = child.stderr.readline()
            assert "recording run" in line, line + child.stderr.read()
            store = stack.enter_context(open_run_store(location))
            run = store.latest_run()
            assert run is not None
            _until("steps recorded", lambda: store.step_count(run.id) > 0)
            child.send_signal(signal.SIGSTOP)  # cut off: no writes, no heartbeat
            if kind == "sqlite":
                # A process suspended inside a SQLite write transaction holds the file's lock
                # for everyone until it dies, and nothing can take that from it: this case is
                # a suspension between transactions. (On PostgreSQL the takeover ends a
                # suspended holder's session, so there it may land anywhere.)
                while _sqlite_locked(Path(location)):
                    steps = store.step_count(run.id)
                    child.send_signal(signal.SIGCONT)
                    _until("more steps", lambda n=steps: store.step_count(run.id) > n)
                    child.send_signal(signal.SIGSTOP)

            def lease_ended() -> bool:
                owner = store.run_owner(run.id, lease=True)
                return owner is not None and owner.get(LEASE_LEFT, 1) <= 0

            _until("the lease to end", lease_ended)
            monkeypatch.setenv("AGENCY_HOST_ID", "machine-b")
            claim = claim_run(store, run.id, doing="resume")
            assert claim.taken_from is not None and claim.taken_from["pid"] == child.pid
            at_takeover = store.step_count(run.id)
            child.send_signal(signal.SIGCONT)
            _, err = child.communicate(timeout=120)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        assert child.returncode == 75, err
        assert "Traceback" not in err and "taken over" in err, err
        assert store.step_count(run.id) == at_takeover  # nothing it queued landed afterwards
        after = store.get_run(run.id)
        assert after is not None and after.status == "running"  # the new owner's to finish
        assert store.run_owner(run.id) == claim.owner
        claim.release()
