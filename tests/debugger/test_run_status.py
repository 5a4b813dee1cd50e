"""The status line says what the run is (finished, failed, interrupted, running) wherever the
cursor stands: a finished run opened at step 0 is "finished", not "running" (the state at a
step that is not the last always says "running": that is where the program was, not what the
run is)."""

from __future__ import annotations

from pathlib import Path

import pytest

from debugger.debug_command import build_app
from debugger.opening import record_session, trace_session
from runtime.language.program import compile_source
from runtime.record.sqlite_store import SQLiteStore
from runtime.runs.recording import record_program
from runtime.runs.runner import RunConfig
from runtime.runs.stopping import Stopper
from tests.debugger.conftest import SIZE, screen_text, settle

COUNTS = """\
node main() {
  let total = 0
  for (i in range(4)) {
    total = total + i
  }
  return total
}
"""

FAILS = """\
node main() {
  let parts = [1, 2]
  let n = parts.length
  throw("no more parts after ${n}")
}
"""


def _record(db: Path, source: str, stopper: Stopper | None = None) -> str:
    program = compile_source(source, "prog.agency")
    store = SQLiteStore(db)
    try:
        rec = record_program(program, RunConfig(quiet=True), store=store, stopper=stopper)
        return rec.run_id
    finally:
        store.close()


@pytest.mark.parametrize(
    ("source", "stopper", "status"),
    [(COUNTS, None, "finished"), (FAILS, None, "failed"), (COUNTS, 5, "interrupted")],
    ids=["finished", "failed", "stopped"],
)
def test_a_stored_run_shows_its_status_at_every_step(
    tmp_path: Path, source: str, stopper: int | None, status: str
) -> None:
    db = tmp_path / "runs.db"
    run_id = _record(db, source, Stopper(stopper) if stopper else None)
    store = SQLiteStore(db)
    try:
        session = trace_session(store, run_id)
        assert session.length > 3
        for step in range(session.first, session.last + 1):
            session.goto(step)
            assert session.run_status() == status, step
        session.goto(session.first)
        assert session.state().status == "running"  # the program, at the cursor, still ran
    finally:
        store.close()


def test_a_live_session_shows_its_status_at_the_first_step() -> None:
    session = record_session(compile_source(COUNTS, "prog.agency"), RunConfig(quiet=True))
    session.goto(session.first)
    assert session.run_status() == "finished"
    stopped = record_session(
        compile_source(COUNTS, "prog.agency"), RunConfig(quiet=True), stopper=Stopper(4)
    )
    stopped.goto(stopped.first)
    assert stopped.run_status() == "interrupted"


async def test_the_status_line_says_finished_at_step_0(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id = _record(db, COUNTS)
    app = build_app(None, trace=str(db), run_id=run_id)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.session is not None and app.session.step == 0  # a run opens at its start
        text = screen_text(app)
        assert "run finished" in text and "running" not in text, text


def test_a_stopped_run_going_on_reads_running_until_it_stops_again(tmp_path: Path) -> None:
    # The recording kept the stopper of its earlier stop until the continuation ended, so the
    # status line said "interrupted" all the while the run went on.
    from debugger.session import Session

    long_count = COUNTS.replace("range(4)", "range(3000)")  # recorded in more than one batch
    program = compile_source(long_count, "prog.agency")
    store = SQLiteStore(tmp_path / "runs.db")
    rec = record_program(program, RunConfig(quiet=True), store=store, stopper=Stopper(3))
    session = Session(rec.timeline, recording=rec)
    assert session.run_status() == "interrupted"
    seen: list[str] = []
    rec.continue_run(progress=lambda _step: seen.append(session.run_status()), stopper=Stopper())
    assert seen and set(seen) == {"running"}, seen
    assert session.run_status() == "finished"
    store.close()
