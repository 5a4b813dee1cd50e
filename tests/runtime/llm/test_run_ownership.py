"""Issue 11 #2: a run is continued by one process at a time.

N processes resume the same run at once (N = 2, 4, 8; a counting HTTP model on 127.0.0.1):
exactly one continues, the model is asked once, each effect happens once, the losers exit
non-zero naming the owner (never an IntegrityError) and the winner's run ends `finished`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runtime.record.sqlite_store import SQLiteStore
from runtime.record.store import MemoryStore, RunMeta
from runtime.runs.processes import RunBusy, claim_run, process_meta

from .fake_server import FakeServer, Reply, openai_answer

REPO = Path(__file__).resolve().parents[3]
KEY = "sk-test-ownership"

# An interrupt, then a model call and an effect that shows how often it ran.
AFTER_INTERRUPT = """node main() {
  const ok = interrupt("go on?")
  const answer = llm("say hi")
  const logb = read("log.txt") catch "" with approve
  write("log.txt", logb + "b") with approve
  print("done ${answer}")
}
"""
# An effect, then a model call the test holds open until it kills the process.
KILLED = """node main() {
  const loga = read("log.txt") catch "" with approve
  write("log.txt", loga + "a") with approve
  const answer = llm("say hi")
  const logb = read("log.txt") catch "" with approve
  write("log.txt", logb + "b") with approve
  print("done ${answer}")
}
"""


def env() -> dict[str, str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AGENCY_", "OPENAI_", "ANTHROPIC_", "OLLAMA_"))
    }
    base["PYTHONPATH"] = str(REPO)
    base["OPENAI_API_KEY"] = KEY
    return base


def spawn(cwd: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "debugger", *args, "--db", str(cwd / "runs.db")],
        cwd=cwd,
        env=env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def model_args(server: FakeServer) -> list[str]:
    return ["--model", "openai/test-model", "--base-url", server.url + "/v1"]


def wait_until(cond: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def only_run(db: Path) -> tuple[str, str]:
    with SQLiteStore(db) as store:
        runs = store.list_runs()
        assert len(runs) == 1
        return runs[0].id, runs[0].status


def check_one_continued(procs: list[subprocess.Popen[str]]) -> None:
    outs = [p.communicate(timeout=120) for p in procs]
    codes = [p.returncode for p in procs]
    winners = [i for i, c in enumerate(codes) if c == 0]
    assert len(winners) == 1, (codes, outs)
    assert outs[winners[0]][0].strip().endswith("done hello"), outs[winners[0]]
    for i, (out, err) in enumerate(outs):
        assert "Traceback" not in err and "IntegrityError" not in err, err
        if i in winners:
            continue
        assert "done" not in out, out
        # refused while the winner holds the run, or after it finished
        assert "another process owns it" in err or "already finished" in err, err


@pytest.mark.parametrize("n", [2, 4, 8])
def test_n_resumes_of_an_interrupted_run(tmp_path: Path, n: int) -> None:
    (tmp_path / "p.agency").write_text(AFTER_INTERRUPT)
    (tmp_path / "log.txt").write_text("")
    # The answer takes a while, so the resumes overlap.
    with FakeServer(Reply(body=openai_answer("hello"), delay=0.5)) as server:
        first = spawn(tmp_path, "run", "p.agency", *model_args(server))
        first.communicate(timeout=60)
        run_id, status = only_run(tmp_path / "runs.db")
        assert status == "interrupted"
        procs = [spawn(tmp_path, "resume", run_id, "--approve") for _ in range(n)]
        check_one_continued(procs)
        assert server.count == 1  # the model was asked once
    assert (tmp_path / "log.txt").read_text() == "b"  # the effect happened once
    assert only_run(tmp_path / "runs.db")[1] == "finished"


@pytest.mark.parametrize("n", [2, 4, 8])
def test_n_resumes_after_kill_9(tmp_path: Path, n: int) -> None:
    (tmp_path / "p.agency").write_text(KILLED)
    (tmp_path / "log.txt").write_text("")
    with FakeServer(
        Reply(body=openai_answer("never"), delay=120), Reply(body=openai_answer("hello"), delay=0.5)
    ) as server:
        first = spawn(tmp_path, "run", "p.agency", *model_args(server))
        wait_until(lambda: server.count == 1)  # it is waiting for the model
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=30)
        run_id, status = only_run(tmp_path / "runs.db")
        assert status == "running"  # as the killed process left it
        procs = [spawn(tmp_path, "resume", "--last") for _ in range(n)]
        check_one_continued(procs)
        assert server.count == 2  # the killed request, and one more
    assert (tmp_path / "log.txt").read_text() == "ab"
    assert only_run(tmp_path / "runs.db")[1] == "finished"


def test_a_live_recording_cannot_be_resumed(tmp_path: Path) -> None:
    (tmp_path / "p.agency").write_text(KILLED)
    (tmp_path / "log.txt").write_text("")
    with FakeServer(
        Reply(body=openai_answer("slow"), delay=120), Reply(body=openai_answer("x"))
    ) as server:
        first = spawn(tmp_path, "run", "p.agency", *model_args(server))
        try:
            wait_until(lambda: server.count == 1)
            run_id, _ = only_run(tmp_path / "runs.db")
            for args in (["resume", run_id, "--force"], ["replay", run_id, "--then-live"]):
                proc = spawn(tmp_path, *args)
                out, err = proc.communicate(timeout=60)
                assert proc.returncode == 75, (out, err)
                assert f"pid {first.pid} on" in err and "another process owns it" in err, err
        finally:
            first.kill()
            first.communicate(timeout=30)
        assert server.count == 1


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_claims_are_compare_and_set(kind: str, tmp_path: Path) -> None:
    store = MemoryStore() if kind == "memory" else SQLiteStore(tmp_path / "r.db")
    run_id = store.create_run(RunMeta("p.agency", "0" * 64, "main", {}, {}, {}))
    other = {"pid": 1, "host": "elsewhere", "started": 1.0}
    assert store.claim_run(run_id, other) is None
    assert store.run_owner(run_id) == other
    assert store.claim_run(run_id, process_meta()) == other  # held: nothing changes
    with pytest.raises(RunBusy, match="pid 1 on elsewhere"):
        claim_run(store, run_id)
    # a holder whose liveness cannot be told (another host) is taken over only with force
    with claim_run(store, run_id, force=True):
        assert store.run_owner(run_id) == process_meta()
        with claim_run(store, run_id):  # nested in one process
            pass
        assert store.run_owner(run_id) == process_meta()
    assert store.run_owner(run_id) is None
    dead = {"pid": 2**22 + 1, "host": process_meta()["host"], "started": 1.0}
    assert store.claim_run(run_id, dead) is None
    with claim_run(store, run_id):  # a dead process's claim is taken over
        assert store.run_owner(run_id) == process_meta()
    store.close()
