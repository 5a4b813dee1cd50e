"""A recording killed with SIGKILL leaves a store that opens and holds a clean prefix."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from runtime.record.sqlite_store import SQLiteStore

BATCH = 64  # steps per batch

# The child records as fast as it can; every blob says which steps it holds and carries a hash
# of itself, so a torn batch would show.
CHILD = textwrap.dedent(
    """
    import hashlib, os, sys
    from runtime.record.sqlite_store import SQLiteStore
    from runtime.record.store import RunMeta

    store = SQLiteStore(sys.argv[1])
    run_id = store.create_run(RunMeta(source_path="loop.agency", source_sha256="0" * 64))
    print(run_id, flush=True)
    step = 0
    while True:
        body = b"%d-%d:" % (step, step + BATCH - 1) + os.urandom(30 * BATCH)
        store.append_batch(run_id, 0, step, step + BATCH - 1, body + hashlib.sha256(body).digest())
        if step % (BATCH * 16) == 0:
            store.put_keyframe(run_id, 0, step, b"kf%d" % step)
        step += BATCH
        if step == BATCH * 200:
            store.flush()
            print("committed", flush=True)
    """
).replace("BATCH", str(BATCH))


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_kill_9_leaves_a_consistent_prefix(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": str(root)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    assert child.stdout is not None
    run_id = child.stdout.readline().decode().strip()
    committed = child.stdout.readline().decode().strip()
    if committed != "committed":
        child.kill()
        pytest.fail(f"child failed: {child.stderr.read().decode() if child.stderr else ''}")
    time.sleep(0.3)  # let it get well into further commits
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert child.returncode == -signal.SIGKILL

    with SQLiteStore(path) as store:
        count = store.step_count(run_id)
        assert count >= BATCH * 200  # everything flushed before the kill is there
        batches = store.batches(run_id, 0, 0, count)
        assert [b.first_step for b in batches] == list(range(0, count, BATCH))
        for batch in batches:
            body, digest = batch.blob[:-32], batch.blob[-32:]
            assert hashlib.sha256(body).digest() == digest
            assert body.startswith(b"%d-%d:" % (batch.first_step, batch.last_step))
        keyframe = store.keyframe_at_or_before(run_id, 0, count)
        assert keyframe is not None and keyframe.blob == b"kf%d" % keyframe.step
        run = store.get_run(run_id)
        assert run is not None and run.step_count == count and run.status == "running"
        # The store goes on: a resumed recording appends after the last whole batch.
        store.append_batch(run_id, 0, count, count + 9, b"resumed")
        assert store.step_count(run_id) == count + 10


def test_exit_without_close_commits_what_was_queued(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    root = Path(__file__).resolve().parents[3]
    script = textwrap.dedent(
        """
        import sys
        from runtime.record.sqlite_store import SQLiteStore
        from runtime.record.store import RunMeta

        store = SQLiteStore(sys.argv[1])
        run_id = store.create_run(RunMeta(source_path="a.agency", source_sha256="0" * 64))
        store.append_batch(run_id, 0, 0, 9, b"queued, never flushed")
        print(run_id)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(root)},
        check=True,
    )
    run_id = done.stdout.decode().strip()
    with SQLiteStore(path) as store:
        assert store.step_count(run_id) == 10
