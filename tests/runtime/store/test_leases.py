"""Run ownership leases (issue 15): a claim carries a lease its owner renews; a process on
another host (simulated by `AGENCY_HOST_ID`) takes a run over once the lease has ended, is
refused while it is live, and of N processes taking over at once exactly one wins. On memory,
SQLite and PostgreSQL (`AGENCY_TEST_POSTGRES`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pg_helpers import fresh_schema

from runtime.errors import AgencyError
from runtime.record.sqlite_store import SQLiteStore
from runtime.record.store import LEASE_LEFT, MemoryStore, RunStore
from runtime.runs import processes
from runtime.runs.processes import RunBusy, claim_run, lease_expired, process_meta
from tests.cli_helpers import agency

from .helpers import FakeClock, meta

REPO = Path(__file__).resolve().parents[3]
A = {"pid": 4242, "host": "machine-a", "started": 1.0}
B = {"pid": 4343, "host": "machine-b", "started": 2.0}


def test_a_live_lease_is_kept_and_an_expired_one_taken_over(
    store: RunStore, clock: FakeClock
) -> None:
    run_id = store.create_run(meta())
    assert store.claim_run(run_id, A, lease=30) is None
    holder = store.claim_run(run_id, B, lease_expired, lease=30)
    assert holder is not None and holder["host"] == "machine-a"
    assert holder[LEASE_LEFT] == pytest.approx(30)
    assert store.run_owner(run_id) == A  # the owner as claimed, without its lease
    clock.advance(seconds=25)
    assert store.renew_lease(run_id, A, 30)  # the heartbeat: 30 s from now again
    clock.advance(seconds=25)
    holder = store.claim_run(run_id, B, lease_expired, lease=30)
    assert holder is not None and holder[LEASE_LEFT] == pytest.approx(5)
    clock.advance(seconds=5)  # A stopped renewing: its lease ends
    assert store.claim_run(run_id, B, lease_expired, lease=30) is None
    assert store.run_owner(run_id) == B
    assert not store.renew_lease(run_id, A, 30)  # A is told it lost the run
    store.release_run(run_id, A)  # and its release leaves B's claim alone
    assert store.run_owner(run_id) == B
    holder = store.claim_run(run_id, A, lease_expired)
    assert holder is not None and holder[LEASE_LEFT] == pytest.approx(30)


def test_a_claim_without_a_lease_is_never_expired(store: RunStore, clock: FakeClock) -> None:
    run_id = store.create_run(meta())
    assert store.claim_run(run_id, A) is None
    clock.advance(days=30)
    holder = store.claim_run(run_id, B, lease_expired, lease=30)
    assert holder == A  # no lease_left: only --force takes it
    assert not store.renew_lease(run_id, B, 30)


def test_another_host_is_refused_naming_it_and_the_time_left(
    store: RunStore, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENCY_HOST_ID", "machine-b")
    run_id = store.create_run(meta())
    assert store.claim_run(run_id, A, lease=30) is None
    clock.advance(seconds=12)
    with pytest.raises(RunBusy) as busy:
        claim_run(store, run_id, doing="resume")
    text = str(busy.value)
    assert "pid 4242 on machine-a" in text and "the lease expires in 18s" in text, text
    assert "--force" in text
    clock.advance(seconds=18)
    with claim_run(store, run_id, doing="resume") as claim:  # expired: taken over, no --force
        assert claim.taken_from is not None and claim.taken_from["host"] == "machine-a"
        assert store.run_owner(run_id) == process_meta()
        assert process_meta()["host"] == "machine-b"
    assert store.run_owner(run_id) is None


class CountingStore:
    """A store whose lease renewals are counted."""

    def __init__(self, inner: RunStore) -> None:
        self.inner = inner
        self.renewals = 0
        self.renewed = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def renew_lease(self, run_id: str, owner: dict[str, Any], lease: float) -> bool:
        held = self.inner.renew_lease(run_id, owner, lease)
        self.renewals += 1
        if self.renewals >= 3:
            self.renewed.set()
        return held


def test_the_owner_renews_its_lease_until_it_releases(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENCY_LEASE_SECONDS", "0.3")
    store = CountingStore(MemoryStore())
    run_id = store.create_run(meta())
    with claim_run(store, run_id):  # type: ignore[arg-type]
        assert store.renewed.wait(30)  # a beat every 0.1 s
        holder = store.claim_run(run_id, A, lease_expired)
        assert holder is not None and 0 < holder[LEASE_LEFT] <= 0.3
    beats = store.renewals
    assert store.run_owner(run_id) is None
    assert store.claim_run(run_id, A, lease=30) is None
    assert not store.inner.renew_lease(run_id, process_meta(), 30)
    assert store.renewals <= beats + 1  # the heartbeat stopped with the claim


def test_a_bad_lease_setting_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in ("0", "-3", "soon"):
        monkeypatch.setenv("AGENCY_LEASE_SECONDS", bad)
        with pytest.raises(AgencyError, match="AGENCY_LEASE_SECONDS must be"):
            processes.lease_seconds()


# -- N processes of other hosts take over one expired claim at once ------------------------------

TAKER = """
import sys
sys.path.insert(0, sys.argv[3])
from runtime.record.stores import open_run_store
from runtime.runs.processes import RunBusy, claim_run
store = open_run_store(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
try:
    claim = claim_run(store, sys.argv[2], doing="resume")
except RunBusy as exc:
    print("busy", exc, flush=True)
else:
    print("won", claim.taken_from["host"], flush=True)
sys.stdin.readline()  # hold the claim until every process has tried
store.close()
"""


def _expired_claim(location: str) -> str:
    """A run whose claim, by a process on machine-a, had a lease that ended an hour ago."""
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    if location.startswith("postgresql://"):
        from runtime.record.pg_store import PostgresStore

        old: RunStore = PostgresStore(location, clock=lambda: an_hour_ago)
    else:
        old = SQLiteStore(Path(location), clock=lambda: an_hour_ago)
    with old:
        run_id = old.create_run(meta())
        assert old.claim_run(run_id, A, lease=30) is None
    return run_id


def _take_over_at_once(location: str, n: int) -> None:
    run_id = _expired_claim(location)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENCY_")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", TAKER, location, run_id, str(REPO)],
            env={**env, "AGENCY_HOST_ID": f"machine-b{i}"},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(n)
    ]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        for p in procs:  # go, all at once
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        results = []
        for p in procs:
            assert p.stdout is not None
            results.append(p.stdout.readline().strip())
    finally:
        outs = [p.communicate("\n", timeout=120) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0 and "Traceback" not in err, err
    winners = [r for r in results if r.startswith("won")]
    assert winners == ["won machine-a"], results  # it took the expired claim over
    winner = f"machine-b{results.index(winners[0])}"
    for r in results:
        if not r.startswith("won"):
            # refused: the winner is alive on another host, with a live lease
            assert r.startswith("busy") and f"on {winner}" in r and "expires in" in r, r


@pytest.mark.parametrize("n", [2, 4, 8])
def test_n_hosts_take_over_an_expired_claim_sqlite(tmp_path: Path, n: int) -> None:
    _take_over_at_once(str(tmp_path / "runs.db"), n)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_n_hosts_take_over_an_expired_claim_postgres(n: int) -> None:
    with fresh_schema() as url:
        _take_over_at_once(url, n)


def test_prune_spares_a_live_lease_and_not_an_expired_one(
    store: RunStore, clock: FakeClock
) -> None:
    live, dead = store.create_run(meta()), store.create_run(meta())
    for run_id in (live, dead):
        store.update_run(run_id, status="interrupted")
    assert store.claim_run(live, A, lease=30) is None
    assert store.claim_run(dead, B, lease=30) is None
    clock.advance(days=10)
    assert store.renew_lease(live, A, 30)  # A still runs; B died ten days ago
    assert store.prune(timedelta(days=5)) == 1
    assert [r.id for r in store.list_runs()] == [live]


def test_runs_shows_a_run_whose_remote_owner_lost_its_lease_as_stale(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    with SQLiteStore(path, clock=lambda: an_hour_ago) as old:
        dead = old.create_run(meta())
        old.update_run(dead, meta={"process": A})
        assert old.claim_run(dead, A, lease=30) is None
    with SQLiteStore(path) as now:
        live = now.create_run(meta())
        now.update_run(live, meta={"process": B})
        assert now.claim_run(live, B, lease=30) is None
    result = agency("runs", "--db", str(path), "--json")
    assert result.exit_code == 0, result.output
    rows = {row["id"]: row for row in json.loads(result.output)}
    assert rows[dead]["status"] == "running"  # as stored: resume takes it over
    assert "the lease of pid 4242 on machine-a" in rows[dead]["stale"], rows[dead]
    assert "stale" not in rows[live]
    table = agency("runs", "--db", str(path)).output
    assert f"run {dead} is stale: the lease of pid 4242" in table, table
    assert f"`agency resume {dead}` continues it" in table and f"run {live} is" not in table
