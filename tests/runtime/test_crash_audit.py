"""Crash audit (DESIGN.md §7): the holes a random-kill driver found around `run`, `resume` and
`prune`, each pinned down deterministically.

- A run killed before its first step reached the store (during store creation or the first
  step) could not be resumed ("recorded no steps").
- Resume forgot the server a run was recorded against (`--base-url`): the rest of the run went
  to the provider's default endpoint, and a model that could not be made (no API key) was
  silently replaced by the simulated one.
- `agency prune` deleted a run being recorded at that moment, and the live process then failed.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from runtime.errors import AgencyError
from runtime.language.program import load_program
from runtime.record.sqlite_store import SQLiteStore
from runtime.runs.journal import StoreJournal
from runtime.runs.processes import mark_running
from runtime.runs.recording import record_program, start_run
from runtime.runs.resume import resume_run
from runtime.runs.runner import RunConfig, decision_from, new_machine
from runtime.vm.values import to_plain
from runtime.vm.writelog import HALTED

REPO = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for key in ("AGENCY_MODEL", "AGENCY_LLM_MOCKS", "AGENCY_DB", "OPENAI_BASE_URL"):
        env.pop(key, None)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


AGENCY = [sys.executable, "-c", "from debugger.cli import main; main()"]


def agency(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AGENCY, *args],
        cwd=cwd,
        env=_env(**env),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# ----------------------------------------------------------------------------------------------
# Killed before the first step was stored

FIRST_STEP = """\
node main() {
  write("first.txt", "first") with approve
  const a = llm("hello")
  write("second.txt", "got ${a}") with approve
  return a
}
"""


@pytest.mark.parametrize("steps", [0, 3])
def test_a_run_killed_before_its_first_step_was_stored_resumes(tmp_path: Path, steps: int) -> None:
    path = tmp_path / "p.agency"
    path.write_text(FIRST_STEP)
    program = load_program(path)
    with SQLiteStore(tmp_path / "runs.db") as store:
        machine = new_machine(program, RunConfig(model_spec="sim", root=str(tmp_path), quiet=True))
        rec = start_run(program, machine, store, {"provider": "sim", "model": "sim", "spec": "sim"})
        mark_running(store, rec.run_id, tmp_path, program)
        machine.host.journal = StoreJournal(store, rec.run_id)
        if steps:
            machine.step(steps)  # the first write happened; its step never reached the store
            store.flush()
            store.truncate_after(rec.run_id, 0, -1)  # the group holding it was not committed
            assert (tmp_path / "first.txt").exists()
        machine.wlog = None  # the process is gone
        meta = dict(store.get_run(rec.run_id).meta)
        meta["process"] = dict(meta["process"], pid=_dead_pid())
        store.update_run(rec.run_id, meta=meta)
        assert store.step_count(rec.run_id) == 0
        before = (tmp_path / "first.txt").stat().st_ino if steps else None

        m = resume_run(store, store.get_run(rec.run_id), quiet=True)

        assert m.status == HALTED, m.error
        (tmp_path / "ref").mkdir()
        reference = record_program(
            program, RunConfig(model_spec="sim", root=str(tmp_path / "ref"), quiet=True)
        )
        assert to_plain(m.result) == to_plain(reference.machine.result)
        assert (tmp_path / "second.txt").read_text() == f"got {to_plain(m.result)}"
        if before is not None:
            assert (tmp_path / "first.txt").stat().st_ino == before  # not written again
        writes = [e.kind for e in store.effects(rec.run_id)]
        assert writes == ["write", "write"]
        assert store.get_run(rec.run_id).status == "finished"


# ----------------------------------------------------------------------------------------------
# Resume goes on with the recorded server


class _Echo(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint answering every prompt with `echo: PROMPT`."""

    seen: list[str] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        prompt = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        self.seen.append(prompt)
        data = json.dumps(
            {
                "id": "x",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": f"echo: {prompt}"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def echo_server() -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []
    handler = type("Echo", (_Echo,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()


TWO_CALLS = """\
node main() {
  const a = llm("one")
  const ok = interrupt("go on?")
  const b = llm("two")
  return [a, b]
}
"""


def test_resume_goes_on_with_the_recorded_base_url(
    tmp_path: Path, echo_server: tuple[str, list[str]]
) -> None:
    url, seen = echo_server
    (tmp_path / "p.agency").write_text(TWO_CALLS)
    model = ["--model", "openai/echo", "--base-url", url]
    proc = agency(tmp_path, "run", "p.agency", *model, "--db", "runs.db", OPENAI_API_KEY="k")
    assert proc.returncode == 3, proc.stderr
    assert seen == ["one"]
    proc = agency(
        tmp_path, "resume", "--last", "--approve", "--db", "runs.db", "--json", OPENAI_API_KEY="k"
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == ["echo: one", "echo: two"]
    assert seen == ["one", "two"]


def test_resume_refuses_a_model_it_cannot_make_rather_than_simulating_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "p.agency"
    path.write_text(TWO_CALLS)
    program = load_program(path)
    with SQLiteStore(tmp_path / "runs.db") as store:
        rec = record_program(program, RunConfig(model_spec="sim", quiet=True), store)
        assert rec.machine.status == "interrupted"
        config = {
            "provider": "openai",
            "model": "gpt-4o-mini",
            "spec": "openai/gpt-4o-mini",
            "base_url_host": "api.openai.com",
        }
        store.update_run(rec.run_id, config=config)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
        with pytest.raises(AgencyError, match="OPENAI_API_KEY"):
            resume_run(store, store.get_run(rec.run_id), decision=decision_from("approve"))
        assert store.get_run(rec.run_id).status == "interrupted"
        assert store.llm_calls(rec.run_id, 0)[-1].provider == "sim"  # nothing more recorded


def test_resume_refuses_another_server_than_the_recorded_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run recorded before base URLs were kept: only the host is known; going on with the
    default endpoint is another server, refused without --force."""
    path = tmp_path / "p.agency"
    path.write_text(TWO_CALLS)
    program = load_program(path)
    with SQLiteStore(tmp_path / "runs.db") as store:
        rec = record_program(program, RunConfig(model_spec="sim", quiet=True), store)
        config = {
            "provider": "openai",
            "model": "m",
            "spec": "openai/m",
            "base_url_host": "127.0.0.1:9",
        }
        store.update_run(rec.run_id, config=config)
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
        with pytest.raises(AgencyError, match=r"base URL host \"127.0.0.1:9\" then"):
            resume_run(store, store.get_run(rec.run_id), decision=decision_from("approve"))


# ----------------------------------------------------------------------------------------------
# prune while a run is being recorded

SLOW = """\
node main() {
  let acc = 0
  for (i in range(400000)) {
    acc = (acc * 31 + i) % 1000003
  }
  write("done.txt", "acc ${acc}") with approve
  return acc
}
"""


def test_prune_keeps_a_run_that_is_being_recorded(tmp_path: Path) -> None:
    (tmp_path / "p.agency").write_text(SLOW)
    (tmp_path / "old.agency").write_text("node main() {\n  return 1\n}\n")
    assert agency(tmp_path, "run", "old.agency", "--db", "runs.db").returncode == 0
    live = subprocess.Popen(
        [*AGENCY, "run", "p.agency", "--db", "runs.db", "--json"],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with sqlite3.connect(tmp_path / "runs.db", timeout=5) as conn:
                rows = conn.execute(
                    "SELECT step_count FROM runs WHERE status = 'running'"
                ).fetchall()
            if rows and rows[0][0] > 0:
                break
            time.sleep(0.02)
        assert live.poll() is None, "the run ended before prune could race it"
        proc = agency(tmp_path, "prune", "--older-than", "0s", "--db", "runs.db")
        assert proc.returncode == 0, proc.stderr
        # the old, finished one; not the live one, and it says so
        assert proc.stdout.strip() == "deleted 1 run (1 being recorded, never deleted)"
        out, err = live.communicate(timeout=60)
    finally:
        if live.poll() is None:
            live.send_signal(signal.SIGKILL)
            live.wait()
    assert live.returncode == 0, err
    assert (tmp_path / "done.txt").exists()
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        assert conn.execute("SELECT status FROM runs").fetchall() == [("finished",)]
