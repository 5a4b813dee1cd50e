"""A program that never ends can always be stopped (issue 12, defect 1): a step budget
(`--max-steps`) that leaves the run resumable, Esc while the debugger records, `q` and Ctrl-C
that end the app at once with the run saved as interrupted."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time

import pytest
from click.testing import CliRunner

from debugger.app import DebuggerApp
from debugger.cli import cli
from debugger.debug_command import DEFAULT_MAX_STEPS, build_app
from debugger.opening import record_session
from debugger.widgets.status_line import StatusLine
from runtime.language.program import load_program
from runtime.record.sqlite_store import SQLiteStore
from runtime.record.store import MemoryStore
from runtime.runs.recording import record_program
from runtime.runs.stopping import Stopper
from tests.debugger.conftest import PROGRAMS, ROOT, SIZE, config, settle

FOREVER = PROGRAMS / "forever.agency"


def _forever() -> object:
    return load_program(str(FOREVER.relative_to(ROOT)))


def test_a_step_budget_stops_the_recording_and_leaves_it_interrupted() -> None:
    store = MemoryStore()
    rec = record_program(_forever(), config(None), store=store, stopper=Stopper(500))
    assert len(rec.timeline) == 500
    run = store.get_run(rec.run_id)
    assert run is not None and run.status == "interrupted"
    assert "500 steps" in (run.error or "")
    assert rec.timeline.state_at(499).frames[-1].locals["i"] > 100


def test_a_cancel_from_another_thread_stops_the_recording_at_a_step() -> None:
    stopper = Stopper()
    threading.Timer(0.3, stopper.cancel, args=("cancelled (esc)",)).start()
    started = time.monotonic()
    rec = record_program(_forever(), config(None), store=MemoryStore(), stopper=stopper)
    assert time.monotonic() - started < 5
    assert stopper.stopped() and stopper.reason() == "cancelled (esc)"
    assert rec.store.get_run(rec.run_id).status == "interrupted"  # type: ignore[union-attr]


def test_the_debugger_session_says_why_and_shows_the_budget() -> None:
    session = record_session(_forever(), config(None), stopper=Stopper(300))
    assert session.length == 300 and session.max_steps == 300
    assert "stopped after 300 steps" in session.message
    session.goto(session.last)
    assert session.run_status() == "interrupted"


def test_agency_run_max_steps(tmp_path) -> None:  # noqa: ANN001
    db = tmp_path / "runs.db"
    result = CliRunner().invoke(cli, ["run", str(FOREVER), "--max-steps", "200", "--db", str(db)])
    assert result.exit_code == 130, result.output
    assert "stopped after 200 steps (--max-steps)" in result.output
    assert "agency resume" in result.output
    store = SQLiteStore(str(db))
    run = store.latest_run()
    assert run is not None and run.status == "interrupted"
    assert store.step_count(run.id, 0) == 200
    store.close()
    result = CliRunner().invoke(cli, ["run", str(FOREVER), "--max-steps", "50", "--no-record"])
    assert result.exit_code == 130 and "not recorded" in result.output


async def test_esc_stops_the_recording_and_opens_what_was_recorded(tmp_path) -> None:  # noqa: ANN001
    app = build_app(str(FOREVER), config=config(None), db=str(tmp_path / "r.db"))
    async with app.run_test(size=SIZE) as pilot:
        while app.session is None and app._progress is None:
            await pilot.pause(0.05)  # recording has begun
        assert app.work_line.busy and app.work_line.cancellable
        await pilot.press("escape")
        while app.session is None:
            await pilot.pause(0.05)
        await settle(pilot)
        s = app.session
        assert 0 < s.length < DEFAULT_MAX_STEPS
        assert "cancelled (esc)" in s.message
        status = str(app.query_one(StatusLine).content)
        assert f"(max {DEFAULT_MAX_STEPS:,})" in status


async def test_esc_after_the_recording_cancels_the_work_under_way(tmp_path) -> None:  # noqa: ANN001
    """Once the run is recorded, Esc cancels a trace or a scan, not the finished recording's
    stopper (which used to swallow the first Esc, leaving the trace running)."""
    counting = PROGRAMS / "counting.agency"
    app = build_app(str(counting), config=config(None), db=str(tmp_path / "r.db"))
    async with app.run_test(size=SIZE) as pilot:
        while app.session is None:
            await pilot.pause(0.05)
        await settle(pilot)
        stopper = app._stopper
        assert stopper is not None and not stopper.cancelled
        app.run_command("trace i % 1000 == 0")
        assert app.work_line.busy and app.work_line.cancellable
        await pilot.press("escape")
        await settle(pilot)
        assert not stopper.cancelled  # the recording it belonged to was over
        assert not app.work_line.busy


@pytest.mark.parametrize("key", ["q", "ctrl+c"])
async def test_quit_while_recording_ends_at_once_and_saves_the_run(tmp_path, key: str) -> None:  # noqa: ANN001
    db = tmp_path / "r.db"
    app = build_app(str(FOREVER), config=config(None), db=str(db))
    async with app.run_test(size=SIZE) as pilot:
        while app._progress is None:
            await pilot.pause(0.05)
        started = time.monotonic()
        await pilot.press(key)
        await pilot.pause()
    assert app._stopper is not None and app._stopper.cancelled
    deadline = time.monotonic() + 5
    store = SQLiteStore(str(db))
    run = store.latest_run()
    while (run is None or run.status != "interrupted") and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        run = store.latest_run()
    assert run is not None and run.status == "interrupted", run
    # about 0.1 s on an idle machine (the tmux check drives the real process); generous here,
    # where the app's shutdown shares two cores with other tests
    assert time.monotonic() - started < 5
    store.close()


def test_build_app_default_budget() -> None:
    app = build_app(str(FOREVER), config=config(None), record=False)
    assert isinstance(app, DebuggerApp) and app._stopper is not None
    assert app._stopper.max_steps == DEFAULT_MAX_STEPS


def test_a_run_stopped_by_its_budget_resumes_to_its_end(tmp_path) -> None:  # noqa: ANN001
    source = tmp_path / "count.agency"
    source.write_text(
        'node main() {\n  let i = 0\n  while (i < 100) {\n    i++\n  }\n  print("done", i)\n}\n',
        encoding="utf-8",
    )
    db = str(tmp_path / "runs.db")
    stopped = CliRunner().invoke(cli, ["run", str(source), "--max-steps", "50", "--db", db])
    assert stopped.exit_code == 130 and "done" not in stopped.output
    store = SQLiteStore(db)
    run = store.latest_run()
    store.close()
    assert run is not None
    resumed = CliRunner().invoke(cli, ["resume", run.id, "--db", db])
    assert resumed.exit_code == 0, resumed.output
    assert "done 100" in resumed.output


def test_a_ctrl_c_after_the_command_is_done_exits_quietly(tmp_path) -> None:  # noqa: ANN001
    # A second Ctrl-C that comes a moment late, while Python shuts down, used to print a
    # KeyboardInterrupt traceback from `threading`'s shutdown (seen in the kill sweep).
    code = (
        "import os, signal, sys, time\n"
        "sys.argv = ['agency', 'runs', '--db', 'runs.db']\n"
        "from debugger.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('done', flush=True)\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "time.sleep(5)\n"
        "print('not stopped')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and "not stopped" not in done.stdout
    assert "done" in done.stdout
