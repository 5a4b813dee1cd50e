"""SIGTERM (a supervisor, a container stop, `kill PID`) stops a recorded run the way Ctrl-C
does: at the next step boundary, with everything recorded up to there committed, the run saved
as interrupted, one line saying how to resume, exit 143. A stop that cannot come soon (a model
request in flight) or a second SIGTERM still ends the process.

Each test waits for a signal from the process (a printed line, steps in the store, a request
at the local model server), never a fixed time."""

from __future__ import annotations

import re
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from tests.lifecycle.harness import TIMEOUT, LLMServer, agency
from tests.lifecycle.signals import (
    LOOP,
    ask_and_hold,
    signal_and_wait_until_heard,
    start,
    terminate,
)


def _run_row(work: Path) -> tuple[str, str, int, str | None]:
    with sqlite3.connect(f"file:{work / 'runs.db'}?mode=ro", uri=True, timeout=10) as conn:
        row = conn.execute("SELECT id, status, step_count, error FROM runs").fetchone()
    return row[0], row[1], int(row[2] or 0), row[3]


def _wait_for_steps(work: Path, n: int) -> None:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        try:
            if _run_row(work)[2] >= n:
                return
        except (sqlite3.Error, TypeError):
            pass
        time.sleep(0.01)
    raise AssertionError(f"the run never stored {n} steps")


def _stopped_at(err: str) -> int:
    found = re.search(r"stopped at step (\d+)", err)
    assert found, err
    return int(found.group(1))


def test_sigterm_stops_at_a_step_boundary_and_resume_finishes_the_run(tmp_path: Path) -> None:
    (tmp_path / "prog.agency").write_text(LOOP)
    proc = start(tmp_path, "run", "prog.agency", "--db", "runs.db", "--json")
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    _wait_for_steps(tmp_path, 2000)
    _, err = terminate(proc)
    run_id, status, steps, why = _run_row(tmp_path)
    assert status == "interrupted" and why is not None and "SIGTERM" in why
    # One line says how to go on, and every step up to the stop is in the record.
    said = [line for line in err.splitlines() if f"agency resume {run_id}" in line]
    assert len(said) == 1, err
    assert steps == _stopped_at(err) + 1, err
    assert not (tmp_path / "done.txt").exists()

    done = agency(tmp_path, "resume", run_id, "--db", "runs.db", "--json")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "3000000"
    assert f"after step {steps - 1} " in done.stderr
    assert (tmp_path / "done.txt").read_text() == "n=3000000"


def test_a_resume_stops_on_sigterm_too(tmp_path: Path) -> None:
    (tmp_path / "prog.agency").write_text(LOOP)
    first = agency(tmp_path, "run", "prog.agency", "--db", "runs.db", "--max-steps", "50")
    assert first.returncode != 0 and "agency resume" in first.stderr
    run_id = _run_row(tmp_path)[0]
    proc = start(tmp_path, "resume", run_id, "--db", "runs.db")
    _wait_for_steps(tmp_path, 3000)
    _, err = terminate(proc)
    _, status, steps, why = _run_row(tmp_path)
    assert status == "interrupted" and why is not None and "SIGTERM" in why
    assert steps == _stopped_at(err) + 1, err
    assert f"agency resume {run_id}" in err


def _resume_finishes(tmp_path: Path, server: LLMServer, run_id: str) -> None:
    done = agency(
        tmp_path,
        "resume",
        run_id,
        "--db",
        "runs.db",
        "--json",
        "--model",
        "openai/fake-model",
        "--base-url",
        server.url,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("answer «") == 2, done.stdout


def test_sigterm_with_a_request_in_flight_ends_the_process_after_the_grace(
    tmp_path: Path,
) -> None:
    server = LLMServer()
    try:
        proc = ask_and_hold(
            tmp_path, server, ("--db", "runs.db", "--json"), AGENCY_STOP_GRACE="0.5"
        )
        # The request is never answered: the process ends by itself once the grace is over.
        _, err = terminate(proc)
        run_id, status, _, why = _run_row(tmp_path)
        assert status == "interrupted" and why is not None and "SIGTERM" in why
        assert f"agency resume {run_id}" in err
        server.release()
        _resume_finishes(tmp_path, server, run_id)
    finally:
        server.close()


@pytest.mark.parametrize("first", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_a_sigterm_after_a_stop_was_asked_ends_the_process_at_once(
    tmp_path: Path, first: signal.Signals
) -> None:
    # The signal that ends the process decides its status, whichever asked for the stop: a
    # supervisor that sends SIGTERM after a person's Ctrl-C sees 143, as after a SIGTERM.
    server = LLMServer()
    try:
        proc = ask_and_hold(
            tmp_path, server, ("--db", "runs.db", "--json"), AGENCY_STOP_GRACE="3600"
        )
        signal_and_wait_until_heard(proc, first)  # the first one was heard
        terminate(proc)  # the second ends it at once
        run_id, status, _, _ = _run_row(tmp_path)
        assert status == "interrupted"
        server.release()
        _resume_finishes(tmp_path, server, run_id)
    finally:
        server.close()
