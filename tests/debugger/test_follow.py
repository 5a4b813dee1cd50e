"""`agency debugger --trace RUNS.db --run ID` on a run another process is still recording follows
it: the step count, the scrubber and the status grow with the run until it ends, and the
debugger answers keys meanwhile. (It showed the steps that existed when it opened, and no more.)

The recording process is real: `agency run` of a program that waits for a line on its stdin
between rounds, printing `waiting N` first. The test feeds it lines and waits for what it
prints, and for the app's state, never for a fixed time."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from debugger.app import DebuggerApp
from debugger.opening import trace_session
from debugger.widgets.status_line import StatusLine
from debugger.widgets.timeline_bar import TimelineBar
from runtime.record.sqlite_store import SQLiteStore
from tests.debugger.conftest import SIZE, answer, expect_line, settle

DEADLINE = 60.0  # seconds a condition may take on a loaded machine before the test fails


async def until(pilot, holds: Callable[[], bool]) -> None:  # noqa: ANN001 - textual Pilot
    """Let the app run until `holds()` is true (fails after DEADLINE seconds)."""
    end = time.monotonic() + DEADLINE
    while not holds():
        assert time.monotonic() < end, "the debugger never showed the run's progress"
        await pilot.pause(0.05)


async def test_the_debugger_follows_a_run_being_recorded(
    recording: tuple[subprocess.Popen[str], Path],
) -> None:
    proc, db = recording
    store = SQLiteStore(db, read_only=True)
    app = DebuggerApp(trace_session(store))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        s = app.session
        assert s is not None and s.following()
        opened = s.length
        assert opened >= 1

        answer(proc, "a")
        expect_line(proc, "waiting 1")
        await until(pilot, lambda: s.length > opened)
        grown = s.length
        bar = app.query_one(TimelineBar)
        status = str(app.query_one(StatusLine).content)
        assert f"/{grown - 1}" in status and "running" in status
        assert bar.length == grown  # the scrubber spans the new steps

        # usable meanwhile: keys move the cursor through what is recorded so far
        await pilot.press("end")
        await settle(pilot)
        assert s.step == s.last == grown - 1

        answer(proc, "b")
        answer(proc, "c")
        assert proc.wait(timeout=DEADLINE) == 0
        await until(pilot, lambda: not s.following())
        final = SQLiteStore(db, read_only=True).step_count(s.timeline.run_id)
        assert s.length == final > grown
        assert app._follow_timer is None  # it stops looking once the run has ended
        await pilot.press("end")
        await settle(pilot)
        assert "finished" in str(app.query_one(StatusLine).content)
        assert s.state().output[-1] == "waiting 2"


async def test_a_finished_run_is_not_followed(
    recording: tuple[subprocess.Popen[str], Path],
) -> None:
    proc, db = recording
    for line in ("a", "b", "c"):
        answer(proc, line)
    assert proc.wait(timeout=DEADLINE) == 0
    app = DebuggerApp(trace_session(SQLiteStore(db, read_only=True)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.session is not None and not app.session.following()
        assert app._follow_timer is None
