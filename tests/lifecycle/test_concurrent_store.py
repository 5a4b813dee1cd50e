"""Several `agency run` processes recording into one run store at once (created by whichever
comes first), one of them killed and resumed meanwhile, while `agency runs` and `agency show`
run in a loop and this process reads the live runs' timelines.

Afterwards every run is finished with its right result, its steps are all there (batches
contiguous from step 0, as many as an uninterrupted run of the same arguments has), every step
reads back, and nobody saw "database is locked" or a traceback.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from runtime.record.sqlite_store import SQLiteStore
from runtime.runs.fork import Timeline
from tests.lifecycle.harness import AGENCY, agency, agency_env, repeated_lines

PROGRAM = """\
node main(n: number, tag: string) {
  let total = 0
  let answers = []
  for (i in range(n)) {
    total = total + i
    if (i % 1000 == 0) {
      answers.push(llm("question ${i}"))
      write("log-${tag}.txt", "at ${i}\\n", mode: "append") with approve
    }
  }
  return [total, answers.length]
}
"""
SIZES = [6000, 7000, 8000]  # one writer each; a fourth runs SIZES[0] and is killed once
BAD = ("database is locked", "Traceback", "busy")
# What a reader may be told while the first writer creates the store, or before a run just
# started has flushed its first steps: nothing to show *yet*, never an error about the store.
NOT_YET = (
    "no run store here yet",
    "no runs in this store yet",
    "is running and has not recorded a step yet",
)


def _expected(n: int) -> str:
    return json.dumps([sum(range(n)), len(range(0, n, 1000))], separators=(",", ":"))


class Readers:
    """`agency runs` / `agency show last` in a loop, and timelines read in this process."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.stop = threading.Event()
        self.commands: list[tuple[str, int, str]] = []
        self.reads = 0
        self.errors: list[str] = []
        self.threads = [
            threading.Thread(target=self._commands, daemon=True),
            threading.Thread(target=self._timelines, daemon=True),
        ]
        for t in self.threads:
            t.start()

    def _commands(self) -> None:
        while not self.stop.is_set():
            for args in (["runs", "--json"], ["show", "last", "--json"]):
                proc = agency(self.work, *args, "--db", "runs.db")
                self.commands.append((args[0], proc.returncode, proc.stderr))

    def _timelines(self) -> None:
        db = self.work / "runs.db"
        while not self.stop.is_set():
            if not db.exists():
                time.sleep(0.01)
                continue
            try:
                with SQLiteStore(db, read_only=True) as store:
                    for run in store.list_runs(10):
                        tl = Timeline(store, run.id, 0)
                        n = len(tl)
                        for k in {0, n // 2, n - 1}:
                            if 0 <= k < n:
                                tl.state_at(k)
                                self.reads += 1
            except Exception as exc:  # noqa: BLE001 - every failure is the finding
                if "no run store yet" in str(exc) or "no such file" in str(exc):
                    continue  # the first writer is still creating the store
                self.errors.append(f"{type(exc).__name__}: {exc}")

    def finish(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(120)


def _check_run(store: Any, run: Any, steps_of: dict[int, int]) -> None:
    n = int(run.args["args"][0])
    assert run.status == "finished", (run.id, run.status, run.error)
    assert json.dumps(run.result, separators=(",", ":")) == _expected(n)
    tl = Timeline(store, run.id, 0)
    assert len(tl) == run.step_count
    next_step = 0
    for batch in store.batches(run.id, 0, 0, run.step_count):
        assert batch.first_step == next_step, f"{run.id}: steps {next_step}.. are missing"
        next_step = batch.last_step + 1
    assert next_step == run.step_count
    assert steps_of.setdefault(n, run.step_count) == run.step_count, "a run lost steps"
    for k in range(0, len(tl), 97):
        tl.location_at(k)
        tl.state_at(k)
    assert tl.state_at(len(tl) - 1).status == "finished"


def test_writers_share_one_store_with_readers_and_a_resume(tmp_path: Path) -> None:
    work = tmp_path
    (work / "prog.agency").write_text(PROGRAM)
    readers = Readers(work)
    writers = [
        subprocess.Popen(
            [
                *AGENCY,
                "run",
                "prog.agency",
                "--db",
                "runs.db",
                "--json",
                "--args",
                f'[{n}, "w{n}"]',
            ],
            cwd=work,
            env=agency_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in SIZES
    ]
    victim = subprocess.Popen(
        [*AGENCY, "run", "prog.agency", "--db", "runs.db", "--args", f'[{SIZES[0]}, "victim"]'],
        cwd=work,
        env=agency_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        log = work / "log-victim.txt"
        deadline = time.monotonic() + 120
        while victim.poll() is None and time.monotonic() < deadline:
            if log.exists() and len(log.read_text().splitlines()) >= 3:
                victim.send_signal(signal.SIGKILL)  # a third of the way in
                break
            time.sleep(0.001)
        _, stderr = victim.communicate(timeout=120)
        assert victim.returncode == -signal.SIGKILL, stderr
        with contextlib.closing(
            sqlite3.connect(f"file:{work / 'runs.db'}?mode=ro", uri=True, timeout=10)
        ) as c:
            (victim_id,) = c.execute(
                "SELECT id FROM runs WHERE args_json LIKE '%victim%'"
            ).fetchone()
        resumed = agency(work, "resume", victim_id, "--db", "runs.db", "--json")
        outputs = [w.communicate(timeout=120) for w in writers]
    finally:
        for w in writers:
            if w.poll() is None:
                w.kill()
        readers.finish()

    for w, (_, stderr) in zip(writers, outputs, strict=True):
        assert w.returncode == 0, stderr
        assert not any(b in stderr for b in BAD), stderr
    assert resumed.returncode == 0, resumed.stderr
    assert not any(b in resumed.stderr for b in BAD), resumed.stderr
    assert resumed.stdout.strip().splitlines()[-1] == _expected(SIZES[0])
    for name, code, stderr in readers.commands:
        assert not any(b in stderr for b in BAD), f"agency {name}: {stderr}"
        assert code == 0 or any(yet in stderr for yet in NOT_YET), f"agency {name}: {stderr}"
    assert not readers.errors, sorted(set(readers.errors))
    assert readers.reads and any(code == 0 for _, code, _ in readers.commands)

    steps_of: dict[int, int] = {}
    with SQLiteStore(work / "runs.db", read_only=True) as store:
        runs = store.list_runs(10)
        assert len(runs) == len(SIZES) + 1
        for run in runs:
            _check_run(store, run, steps_of)
    for n in SIZES:
        lines = (work / f"log-w{n}.txt").read_text()
        assert lines.splitlines() == [f"at {i}" for i in range(0, n, 1000)]
    want = "".join(f"at {i}\n" for i in range(0, SIZES[0], 1000)).encode()
    # The append in doubt when the victim died is checked on resume, not repeated.
    assert repeated_lines((work / "log-victim.txt").read_bytes(), want, "the victim's log") == 0
