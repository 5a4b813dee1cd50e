"""SIGTERM stops every command that executes a program the way Ctrl-C does, not only `agency
run` and `agency resume` (tests/lifecycle/test_sigterm.py): `run --no-record`, `replay`,
`replay --then-live` and `test` stop at the next step boundary (or between tests), say so on
stderr with no traceback, and exit 143; a second SIGTERM, or a first whose step boundary does
not come within the grace, still ends the process.

Each test waits for a signal from the process (a printed line, a request at the local model
server), never a fixed time."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
from pathlib import Path

from runtime.record.stores import open_run_store
from tests.lifecycle.harness import LLMServer, agency
from tests.lifecycle.signals import (
    LOOP,
    ask_and_hold,
    signal_and_wait_until_heard,
    start,
    terminate,
)


def _read_until(proc: subprocess.Popen[str], wanted: str) -> None:
    """Read the process's stdout until a line `wanted` (it has printed its way there)."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    while line and line.rstrip("\n") != wanted:
        line = proc.stdout.readline()
    assert line, f"the process ended before printing {wanted!r}: {proc.communicate()}"


def _run_status(work: Path) -> str:
    with sqlite3.connect(f"file:{work / 'runs.db'}?mode=ro", uri=True, timeout=10) as conn:
        return str(conn.execute("SELECT status FROM runs").fetchone()[0])


def test_run_no_record_stops_at_a_step_boundary_on_sigterm(tmp_path: Path) -> None:
    (tmp_path / "prog.agency").write_text(LOOP)
    proc = start(tmp_path, "run", "prog.agency", "--no-record", "--json")
    _read_until(proc, "ready")
    out, err = terminate(proc)
    stopped = re.search(r"stopped at step (\d+) \(SIGTERM\)", err)
    assert stopped and int(stopped.group(1)) > 0, err
    assert "not recorded" in err and "agency resume" not in err, err
    assert out == "", out  # no result: the run did not end
    assert not (tmp_path / "done.txt").exists()
    assert not (tmp_path / ".agency").exists()  # nothing was recorded


def test_run_no_record_with_a_request_in_flight_ends_after_the_grace(tmp_path: Path) -> None:
    server = LLMServer()
    try:
        proc = ask_and_hold(tmp_path, server, ("--no-record",), AGENCY_STOP_GRACE="0.5")
        _, err = terminate(proc)  # the request is never answered
        assert "SIGTERM" in err and "not recorded" in err, err
    finally:
        server.release()
        server.close()


def test_run_no_record_ends_at_once_on_a_second_sigterm(tmp_path: Path) -> None:
    server = LLMServer()
    try:
        proc = ask_and_hold(tmp_path, server, ("--no-record",), AGENCY_STOP_GRACE="3600")
        signal_and_wait_until_heard(proc)  # the first one was heard
        _, err = terminate(proc)
        assert "not recorded" in err, err
    finally:
        server.release()
        server.close()


def test_replay_stops_on_sigterm(tmp_path: Path) -> None:
    (tmp_path / "prog.agency").write_text(LOOP.replace("3000000", "100000"))
    first = agency(tmp_path, "run", "prog.agency", "--db", "runs.db")
    assert first.returncode == 0, first.stderr
    proc = start(tmp_path, "replay", "--last", "--db", "runs.db")
    _read_until(proc, "ready")  # replays print what the run printed
    _, err = terminate(proc)
    assert re.search(r"replay of run \w+ stopped at step \d+ \(SIGTERM\)", err), err
    assert _run_status(tmp_path) == "finished"  # a replay changes nothing


def test_replay_then_live_stops_on_sigterm_once_live(tmp_path: Path) -> None:
    source = tmp_path / "prog.agency"
    source.write_text(LOOP.replace("3000000", "5"))
    first = agency(tmp_path, "run", "prog.agency", "--db", "runs.db")
    assert first.returncode == 0, first.stderr
    (tmp_path / "done.txt").unlink()  # the recorded run wrote it; the live part must not
    # The edited program diverges at the new statement and goes on live into a long loop.
    source.write_text(LOOP.replace("let n = 0\n", 'let n = 0\n  print("live")\n'))
    proc = start(tmp_path, "replay", "--last", "--db", "runs.db", "--then-live")
    _read_until(proc, "live")
    _, err = terminate(proc)
    assert re.search(r"stopped at step \d+ \(SIGTERM\)", err), err
    assert "diverged at step" in err and "live" in err, err
    assert not (tmp_path / "done.txt").exists()
    assert _run_status(tmp_path) == "finished"
    # The claim a live replay takes on the run was given back.
    with open_run_store(tmp_path / "runs.db", read_only=True) as store:
        run = store.latest_run()
        assert run is not None and store.run_owner(run.id) is None


def test_agency_test_stops_on_sigterm_with_its_summary(tmp_path: Path) -> None:
    (tmp_path / "quick.agency").write_text("node main() {\n  return 1\n}\n")
    (tmp_path / "quick.test.json").write_text(
        json.dumps({"tests": [{"nodeName": "main", "input": "", "expectedOutput": "1"}]})
    )
    (tmp_path / "slow.agency").write_text(LOOP.replace("3000000", "100000000"))
    (tmp_path / "slow.test.json").write_text(
        json.dumps({"tests": [{"nodeName": "main", "input": "", "expectedOutput": "1"}]})
    )
    proc = start(tmp_path, "test", "quick.test.json", "slow.test.json")
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("PASS"), (line, proc.communicate())
    out, err = terminate(proc)
    assert "1 passed, 0 failed" in out, out
    assert "stopped (SIGTERM)" in err, err
