"""PostgreSQL store under crashes: a recording process killed with SIGKILL, and the server
itself killed with SIGKILL mid-run and restarted. Neither loses a step the recorder had
committed (or, for the server, handed over), and every run stays readable."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_helpers import Cluster, fresh_schema

from runtime.record.pg_store import PostgresStore

BATCH = 64  # steps per batch
ROOT = Path(__file__).resolve().parents[3]

# The child records as fast as it can and says, after each flush, how far it is committed. Every
# blob says which steps it holds and carries a hash of itself, so a torn batch would show. It
# stops (flushing and closing the store) when its standard input closes.
CHILD = textwrap.dedent(
    """
    import hashlib, os, select, sys
    from runtime.record.pg_store import PostgresStore
    from runtime.record.store import RunMeta

    store = PostgresStore(sys.argv[1])
    run_id = store.create_run(RunMeta(source_path="loop.agency", source_sha256="0" * 64))
    print(run_id, flush=True)
    step = 0
    while True:
        body = b"%d-%d:" % (step, step + BATCH - 1) + os.urandom(30 * BATCH)
        store.append_batch(run_id, 0, step, step + BATCH - 1, body + hashlib.sha256(body).digest())
        if step % (BATCH * 16) == 0:
            store.put_keyframe(run_id, 0, step, b"kf%d" % step)
        step += BATCH
        if step % (BATCH * 100) == 0:
            store.flush()
            print("committed", step, flush=True)
            if select.select([sys.stdin], [], [], 0)[0] and not sys.stdin.read(1):
                break
    store.close()
    print("closed", step, flush=True)
    """
).replace("BATCH", str(BATCH))


def start_child(url: str) -> tuple[subprocess.Popen[bytes], str]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert child.stdout is not None
    return child, child.stdout.readline().decode().strip()


def committed(child: subprocess.Popen[bytes]) -> int:
    """Wait for the child's next "committed N" line; N steps are committed."""
    assert child.stdout is not None
    line = child.stdout.readline().decode().split()
    if len(line) != 2 or line[0] != "committed":
        child.kill()
        err = child.stderr.read().decode() if child.stderr else ""
        pytest.fail(f"child failed: {line} {err[-2000:]}")
    return int(line[1])


def check_prefix(store: PostgresStore, run_id: str, at_least: int) -> int:
    count = store.step_count(run_id)
    assert count >= at_least  # everything committed before the crash is there
    batches = store.batches(run_id, 0, 0, count)
    assert [b.first_step for b in batches] == list(range(0, count, BATCH))
    for batch in batches:
        body, digest = batch.blob[:-32], batch.blob[-32:]
        assert hashlib.sha256(body).digest() == digest
        assert body.startswith(b"%d-%d:" % (batch.first_step, batch.last_step))
    keyframe = store.keyframe_at_or_before(run_id, 0, count)
    assert keyframe is not None and keyframe.blob == b"kf%d" % keyframe.step
    run = store.get_run(run_id)
    assert run is not None and run.step_count == count
    return count


@pytest.fixture
def url() -> Iterator[str]:
    with fresh_schema() as fresh:
        yield fresh


def test_kill_9_of_a_writer_loses_no_committed_step(url: str) -> None:
    child, run_id = start_child(url)
    committed(child)
    done = committed(child)  # it is well into further groups now
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert child.returncode == -signal.SIGKILL
    with PostgresStore(url) as store:
        count = check_prefix(store, run_id, done)
        # The store goes on: a resumed recording appends after the last whole batch.
        store.append_batch(run_id, 0, count, count + 9, b"resumed")
        assert store.step_count(run_id) == count + 10


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    try:
        c.start()
        yield c
    finally:
        c.remove()


def test_kill_9_of_the_server_mid_run_loses_no_step(cluster: Cluster) -> None:
    child, run_id = start_child(cluster.url)
    assert child.stdin is not None
    before = committed(child)
    cluster.kill()  # mid-run: the child is recording as fast as it can
    cluster.start()  # crash recovery; the child's writer reconnects and commits its group again
    after = committed(child)
    while after <= before:
        after = committed(child)
    child.stdin.close()  # stop: the child flushes, closes and says how far it got
    assert child.stdout is not None
    lines = child.stdout.read().decode().split("\n")
    assert child.wait() == 0, child.stderr.read().decode() if child.stderr else ""
    closed = [int(line.split()[1]) for line in lines if line.startswith("closed")]
    assert closed, lines
    with PostgresStore(cluster.url) as store:
        # Every step the child recorded is there: none lost across the restart.
        assert check_prefix(store, run_id, closed[0]) == closed[0]
