"""The variables a step changed (the debugger's ● marker) are the same at every step of a
resumed or forked run as in the uninterrupted one, however the reader reached the step.

The step a resume (or a fork) took over from is keyframed by the new recorder, whose
containers have other ids, while that step's own writes were recorded by the process before
it, in the old ids. Jumping to that step (`g`, a click on the scrubber, stepping back from
after the seam) built its state from the new keyframe and looked the old ids up in it: a list
pushed to there was not marked changed, or another variable was."""

from __future__ import annotations

from pathlib import Path

import pytest

from debugger.opening import trace_session
from runtime.language.program import load_program
from runtime.runs.fork import Timeline
from runtime.runs.recording import record_program
from runtime.runs.resume import resume_run
from runtime.runs.stopping import Stopper
from tests.lifecycle.test_resumed_timeline import (
    PROGRAM,
    _config,
    _record_and_die,
    _stop_and_resume,
)


def _reference(tmp_path: Path) -> list[set[str]]:
    (tmp_path / "ref").mkdir(exist_ok=True)
    ref = record_program(load_program(tmp_path / "p.agency"), _config(tmp_path / "ref")).timeline
    return [ref.changed_names(k) for k in range(len(ref))]


@pytest.mark.parametrize("steps", [20, 29, 30, 31, 33, 44, 45])
def test_changed_names_at_the_seam_are_the_uninterrupted_runs(tmp_path: Path, steps: int) -> None:
    store, run_id = _stop_and_resume(tmp_path, steps)
    want = _reference(tmp_path)
    with store:
        assert len(Timeline(store, run_id, 0)) == len(want)
        for k in range(len(want)):  # jumped to: a fresh reader at each step
            assert Timeline(store, run_id, 0).changed_names(k) == want[k], f"jumping: step {k}"
        walked = Timeline(store, run_id, 0)
        for k in range(len(want)):
            assert walked.changed_names(k) == want[k], f"walking: step {k}"
        backwards = Timeline(store, run_id, 0)
        for k in reversed(range(len(want))):
            assert backwards.changed_names(k) == want[k], f"backwards: step {k}"


def test_the_debugger_marks_the_push_at_the_step_the_resume_began_from(tmp_path: Path) -> None:
    store, run_id = _stop_and_resume(tmp_path, 31)  # step 30 pushes to ob.seen
    want = _reference(tmp_path)
    assert want[30] == {"ob"}
    with store:
        session = trace_session(store, run_id)
        session.goto(session.last)
        session.goto(30)  # scrubbed back across the seam
        assert session.changed_names() == {"ob"}
        session.goto(31)
        session.goto(30)
        assert session.changed_names() == {"ob"}


def test_changed_names_at_a_fork_step_are_the_parents(tmp_path: Path) -> None:
    (tmp_path / "p.agency").write_text(PROGRAM)
    (tmp_path / "ref").mkdir()
    rec = record_program(load_program(tmp_path / "p.agency"), _config(tmp_path / "ref"))
    parent = rec.timeline
    session = trace_session(rec.store, rec.run_id)
    pushes = [k for k in range(len(parent)) if parent.changed_names(k) == {"ob"}]
    for fork_at in pushes[2:5]:
        session.switch_branch(0)
        session.goto(fork_at)
        branch = session.restore()
        assert branch != 0 and session.branch == branch
        fresh = Timeline(rec.store, rec.run_id, branch)
        assert fresh.changed_names(fork_at) == parent.changed_names(fork_at), fork_at
        assert fresh.changed_names(fork_at + 1) == parent.changed_names(fork_at + 1), fork_at


def test_changed_names_at_the_last_step_of_a_resume_that_recorded_nothing(
    tmp_path: Path,
) -> None:
    """A resume stopped before its first step leaves its keyframe on the last stored step,
    with no step of its own after it to say a new recorder began there."""
    (tmp_path / "p.agency").write_text(PROGRAM)
    want = _reference(tmp_path)
    store, run_id = _record_and_die(tmp_path, 31)  # step 30 pushes to ob.seen
    resume_run(store, store.get_run(run_id), quiet=True, stopper=Stopper(0))
    with store:
        tl = Timeline(store, run_id, 0)
        assert len(tl) == 31 and store.keyframe_at_or_before(run_id, 0, 30).step == 30
        assert want[30] == {"ob"}
        assert Timeline(store, run_id, 0).changed_names(30) == want[30]
