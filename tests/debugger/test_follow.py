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


async def test_end_on_a_run_still_recorded_is_not_called_its_end_once_it_grows(
    recording: tuple[subprocess.Popen[str], Path],
) -> None:
    # End on a followed run said "end of the run", and still did once the run had grown past
    # the cursor (and finished): the status line named the wrong place.
    proc, db = recording
    app = DebuggerApp(trace_session(SQLiteStore(db, read_only=True)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        s = app.session
        assert s is not None and s.following()
        await pilot.press("end")
        await settle(pilot)
        assert s.message == "the last step recorded so far (the run goes on)"
        at = s.step
        answer(proc, "a")
        expect_line(proc, "waiting 1")
        await until(pilot, lambda: s.length > at + 1)
        await settle(pilot)
        status = str(app.query_one(StatusLine).content)
        assert "end of the run" not in status and "so far" not in status
        assert "the run went on past this step" in status
        answer(proc, "b")
        answer(proc, "c")
        assert proc.wait(timeout=DEADLINE) == 0
        await until(pilot, lambda: not s.following())
        await pilot.press("end")
        await settle(pilot)
        assert s.message == "end of the run"  # now it is


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


# -- the look is read off the event loop ------------------------------------------------------


class HeldReads:
    """Wraps a store's `step_count` (the follow timer's first read): notes which thread reads,
    and, while `hold` is clear, keeps the read waiting, as a database far away would."""

    def __init__(self, store: SQLiteStore) -> None:
        import threading

        self.threads: list[str] = []
        self.workers: list[object] = []
        self.waiting = threading.Event()
        self.hold = threading.Event()
        self.hold.set()
        read = store.step_count

        def step_count(*args: object, **kwargs: object) -> int:
            from textual.worker import NoActiveWorker, get_current_worker

            self.threads.append(threading.current_thread().name)
            try:
                self.workers.append(get_current_worker())
            except NoActiveWorker:
                pass
            if not self.hold.is_set():
                self.waiting.set()
                self.hold.wait(DEADLINE)
            return read(*args, **kwargs)  # type: ignore[arg-type]

        store.step_count = step_count  # type: ignore[method-assign]


def _running_run(tmp_path: Path) -> tuple[Path, str]:
    """A recorded run whose row says `running`, held by this (live) process."""
    from runtime.language.program import load_program
    from runtime.runs.processes import mark_running
    from runtime.runs.recording import record_program
    from runtime.runs.runner import RunConfig

    (tmp_path / "p.agency").write_text(
        "node main() {\n  let n = 0\n  for (i in range(20)) {\n    n = n + i\n  }\n"
        '  print("n=${n}")\n  return n\n}\n'
    )
    db = tmp_path / "runs.db"
    with SQLiteStore(db) as store:
        rec = record_program(
            load_program(tmp_path / "p.agency"), RunConfig(quiet=True, root=str(tmp_path)), store
        )
        mark_running(store, rec.run_id)
        store.update_run(rec.run_id, status="running")
    return db, rec.run_id


async def test_the_follow_look_waits_in_a_worker_and_keys_go_on_meanwhile(
    tmp_path: Path,
) -> None:
    import threading

    db, run_id = _running_run(tmp_path)
    store = SQLiteStore(db, read_only=True)
    reads = HeldReads(store)
    app = DebuggerApp(trace_session(store, run_id))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        s = app.session
        assert s is not None and s.following()
        reads.threads.clear()  # (opening the run read its length here, before the app ran)
        reads.hold.clear()  # the next look hangs on the store
        await until(pilot, reads.waiting.is_set)
        # The app answers keys while the look waits.
        await pilot.press("home")
        await pilot.pause()
        assert s.step == 0
        await pilot.press("end")
        await pilot.pause()
        assert s.step == s.last
        await pilot.press("left")
        await pilot.pause()
        assert s.step == s.last - 1
        # The run ends meanwhile; once the read comes back, the app sees it and stops looking.
        with SQLiteStore(db) as writer:
            writer.update_run(run_id, status="finished")
        reads.hold.set()
        await until(pilot, lambda: not s.following())
        assert app._follow_timer is None
    main = threading.main_thread().name
    assert reads.threads and main not in reads.threads  # never read on the event loop


async def test_quitting_stops_a_look_in_flight(tmp_path: Path) -> None:
    db, run_id = _running_run(tmp_path)
    store = SQLiteStore(db, read_only=True)
    reads = HeldReads(store)
    app = DebuggerApp(trace_session(store, run_id))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            reads.hold.clear()
            await until(pilot, reads.waiting.is_set)
            await pilot.press("q")
        looked = reads.workers[-1]
        assert getattr(looked, "is_cancelled", False)  # the worker was told to stop
    finally:
        reads.hold.set()  # its read returns; it posts nothing to the app that has gone
