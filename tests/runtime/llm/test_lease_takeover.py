"""Issue 15: `agency resume` on machine B of a run whose owner on machine A died (kill -9), with
no `--force`. The machines are two host ids (`AGENCY_HOST_ID`) on this one: B cannot check A's
pid, so it goes by A's lease (`AGENCY_LEASE_SECONDS`): refused, naming machine-a and the time
left, while the lease is live; taken over by exactly one of N resumes once it has expired."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_helpers import fresh_schema

from runtime.record.stores import open_run_store
from runtime.runs.processes import lease_expired

from .fake_server import FakeServer, Reply, openai_answer
from .test_run_ownership import KILLED, check_one_continued, env, model_args, wait_until

LEASE = "2"  # seconds: machine A's lease, renewed every 2/3 s while it runs


def spawn(cwd: Path, db: str, host: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "debugger", *args, "--db", db],
        cwd=cwd,
        env={**env(), "AGENCY_HOST_ID": host, "AGENCY_LEASE_SECONDS": LEASE},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def the_run(db: str) -> tuple[str, str]:
    with open_run_store(db) as store:
        runs = store.list_runs()
        assert len(runs) == 1
        return runs[0].id, runs[0].status


def owner_lease_expired(db: str, run_id: str) -> bool:
    probe = {"pid": 0, "host": "probe", "started": 0.0}
    with open_run_store(db) as store:
        holder = store.claim_run(run_id, probe, lambda holder: False)  # look, never take
    return holder is not None and lease_expired(holder)


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "postgres":
        with fresh_schema() as url:
            yield url
    else:
        yield str(tmp_path / "runs.db")


@pytest.mark.parametrize("n", [2, 4])
def test_machine_b_takes_over_once_machine_a_lease_expired(tmp_path: Path, db: str, n: int) -> None:
    (tmp_path / "p.agency").write_text(KILLED)
    (tmp_path / "log.txt").write_text("")
    with FakeServer(
        Reply(body=openai_answer("never"), delay=120), Reply(body=openai_answer("hello"), delay=0.5)
    ) as server:
        first = spawn(tmp_path, db, "machine-a", "run", "p.agency", *model_args(server))
        wait_until(lambda: server.count == 1)  # it is waiting for the model
        run_id, _ = the_run(db)
        # Live: machine B is refused, told who holds the run and for how long.
        busy = spawn(tmp_path, db, "machine-b", "resume", run_id)
        out, err = busy.communicate(timeout=60)
        assert busy.returncode == 75, (out, err)
        assert f"pid {first.pid} on machine-a" in err and "the lease expires in" in err, err
        first.send_signal(signal.SIGKILL)  # machine A dies
        first.communicate(timeout=30)
        assert the_run(db)[1] == "running"  # as the killed process left it
        wait_until(lambda: owner_lease_expired(db, run_id))
        procs = [spawn(tmp_path, db, f"machine-b{i}", "resume", run_id) for i in range(n)]
        check_one_continued(procs)  # without --force
        assert server.count == 2  # the killed request, and one more
    assert (tmp_path / "log.txt").read_text() == "ab"
    assert the_run(db)[1] == "finished"
