"""`r` with nothing staged (restore from this step and re-run it, unchanged) on a stored run:
it asks, then shows the new branch; where a restore cannot run it says why at once, before
asking (it asked first, then failed in a toast that was easy to miss: "no new branch").

Cases: a finished run opened with --trace (a new branch, shown); a run another process is still
recording (refused: one process continues a run at a time); a run whose program changed since
it was recorded (refused: the past can be viewed, not re-executed)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from debugger.app import DebuggerApp
from debugger.opening import trace_session
from debugger.widgets.confirm_screen import ConfirmScreen
from debugger.widgets.status_line import StatusLine
from debugger.widgets.timeline_bar import TimelineBar
from runtime.record.sqlite_store import SQLiteStore
from tests.cli_helpers import agency
from tests.debugger.conftest import CALLS, CALLS_MOCKS, SIZE, settle
from tests.debugger.test_app import watch_errors


@pytest.fixture
def stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A finished run of calls.agency (mock answers) in its own store, recorded where the test
    then works (so the program is found by the path the run holds)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "calls.agency").write_text(CALLS.read_text())
    (tmp_path / "calls.mocks.json").write_text(CALLS_MOCKS.read_text())
    db = tmp_path / "runs.db"
    result = agency("run", "calls.agency", "--mock", "calls.mocks.json", "--db", str(db))
    assert result.exit_code == 0, result.output
    return db


async def test_r_with_nothing_staged_makes_a_branch_and_shows_it(stored: Path) -> None:
    app = DebuggerApp(trace_session(SQLiteStore(stored)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        s = app.session
        assert s is not None
        app.run_command("goto 3")
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
        assert s.branch == 1 and [b.id for b in s.branches()] == [0, 1]
        assert s.step == 3 and s.fork_step() == 3
        assert "branch 1" in str(app.query_one(StatusLine).content)
        assert app.query_one(TimelineBar)._fork_step == 3  # the scrubber marks the fork
        assert any("branch 1 runs from step 3" in n.message for n in app._notifications)
        # and again from the new branch: a third one
        await pilot.press("r")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert s.branch == 2 and len(s.branches()) == 3


async def test_r_on_a_run_another_process_records_says_why_at_once(
    recording: tuple[subprocess.Popen[str], Path],
) -> None:
    _proc, db = recording
    app = DebuggerApp(trace_session(SQLiteStore(db, read_only=True)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        seen = watch_errors(app)
        await pilot.press("r")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert any("still being recorded by another process" in e for e in seen), seen
        assert app.session is not None and len(app.session.branches()) == 1


async def test_r_on_a_run_whose_program_changed_says_why_at_once(
    stored: Path, tmp_path: Path
) -> None:
    source = tmp_path / "calls.agency"
    source.write_text(source.read_text().replace("Pick a number", "Pick another number"))
    app = DebuggerApp(trace_session(SQLiteStore(stored)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        seen = watch_errors(app)
        await pilot.press("r")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert any("changed since run" in e for e in seen), seen
        assert app.session is not None and len(app.session.branches()) == 1


async def test_r_at_the_end_of_a_run_says_nothing_runs_after_it(stored: Path) -> None:
    # The end step follows the last statement: a restore from it asked "steps 20..20 run
    # again, live" and made a branch that was the old one again.
    app = DebuggerApp(trace_session(SQLiteStore(stored)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        seen = watch_errors(app)
        await pilot.press("end", "r")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert any("is the end of the run: nothing runs after it" in e for e in seen), seen
        assert app.session is not None and len(app.session.branches()) == 1
        await pilot.press("S", "r")  # from the last statement it runs
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
