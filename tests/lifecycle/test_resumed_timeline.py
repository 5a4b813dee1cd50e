"""A resumed run's timeline reads back the same whichever way a reader walks it.

A resumed run is recorded by a new recorder, over a machine rebuilt by re-execution: its
containers get other ids than the stopped process gave them. The recorder keyframes the step it
resumed from and marks the next one as a replaced state (`R_RESET`). A reader that reached that
step on the stopped process's deltas (stepping forward in the debugger, `:trace`, a test walking
every step) used to go on with the new process's deltas against the old ids: it raised
`DamagedRecord` (a splice into an object) or, worse, showed another container's contents.
Found by the kill-anywhere harness (a `fork` program killed after its 7th model answer).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from runtime.language.program import load_program
from runtime.record.sqlite_store import SQLiteStore
from runtime.runs.fork import Timeline
from runtime.runs.journal import StoreJournal
from runtime.runs.processes import mark_running
from runtime.runs.recording import record_program, start_run
from runtime.runs.resume import resume_run
from runtime.runs.runner import RunConfig, new_machine
from runtime.vm.writelog import HALTED

# Containers made and dropped before the ones that live on: the stopped process has given out
# more ids than the resumed one's keyframe does, so the same id names another container.
PROGRAM = """\
node main() {
  for (i in range(4)) {
    let scratch = {k: [i, i]}
  }
  let xs = []
  let ob = {n: 0, seen: []}
  for (i in range(12)) {
    xs.push(i * 2)
    ob.n = i
    ob.seen.push("s${i}")
  }
  return [xs, ob]
}
"""


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _config(root: Path) -> RunConfig:
    return RunConfig(model_spec="sim", root=str(root), quiet=True)


def _stop_and_resume(tmp_path: Path, steps: int) -> tuple[SQLiteStore, str]:
    """Record PROGRAM for `steps` steps (all stored), let its process 'die', resume it."""
    (tmp_path / "p.agency").write_text(PROGRAM)
    return _stop_and_resume_program(tmp_path, steps)


def _stop_and_resume_program(tmp_path: Path, steps: int) -> tuple[SQLiteStore, str]:
    """Record p.agency for `steps` steps (all stored), let its process 'die', resume it."""
    store, run_id = _record_and_die(tmp_path, steps)
    m = resume_run(store, store.get_run(run_id), quiet=True)
    assert m.status == HALTED, m.error
    return store, run_id


def _record_and_die(tmp_path: Path, steps: int) -> tuple[SQLiteStore, str]:
    """Record p.agency for `steps` steps, all stored, and leave the run as a process killed
    then would (its row names a process that is gone)."""
    program = load_program(tmp_path / "p.agency")
    store = SQLiteStore(tmp_path / "runs.db")
    machine = new_machine(program, _config(tmp_path))
    rec = start_run(program, machine, store, {"provider": "sim", "model": "sim", "spec": "sim"})
    mark_running(store, rec.run_id, tmp_path, program)
    machine.host.journal = StoreJournal(store, rec.run_id)
    machine.step(steps)
    rec.recorder.flush_chunk(machine)
    store.flush()
    machine.wlog = None  # the process is gone
    meta = dict(store.get_run(rec.run_id).meta)
    meta["process"] = dict(meta["process"], pid=_dead_pid())
    store.update_run(rec.run_id, meta=meta)
    return store, rec.run_id


@pytest.mark.parametrize("steps", [20, 31, 44])
def test_every_step_of_a_resumed_run_reads_the_same_walked_or_jumped_to(
    tmp_path: Path, steps: int
) -> None:
    store, run_id = _stop_and_resume(tmp_path, steps)
    (tmp_path / "ref").mkdir()
    reference = record_program(load_program(tmp_path / "p.agency"), _config(tmp_path / "ref"))
    with store:
        ref_tl = reference.timeline
        walked = Timeline(store, run_id, 0)
        assert len(walked) == len(ref_tl)
        for k in range(len(walked)):  # forward, one step at a time (the debugger's `s`)
            want = ref_tl.state_at(k)
            assert walked.state_at(k) == want, f"walking: step {k}"
            assert Timeline(store, run_id, 0).state_at(k) == want, f"jumping: step {k}"
        backwards = Timeline(store, run_id, 0)
        for k in reversed(range(len(backwards))):
            assert backwards.state_at(k) == ref_tl.state_at(k), f"backwards: step {k}"


# Where each variable was last (and next) written must not depend on where the run stopped:
# a list pushed to before the stop keeps its history after the resume, although the resumed
# process gave it another id (and the old id names another container there).
WRITES = """\
node main() {
  for (i in range(4)) {
    let scratch = {k: [i, i]}
  }
  let xs = []
  let ob = {n: 0, seen: []}
  let kept = [1, [2, 3]]
  for (i in range(12)) {
    xs.push(i * 2)
    ob.n = i
    ob.seen.push("s${i}")
  }
  kept[1].push(4)
  let tail = 0
  for (j in range(6)) {
    tail = tail + j
  }
  return [xs, ob, kept, tail]
}
"""


def _writers(tl: Timeline) -> dict[tuple[int, str], tuple[int | None, int | None]]:
    """(step, variable) -> (last write, next write) at every step, for every visible variable."""
    out = {}
    for k in range(len(tl)):
        frames = tl.state_at(k).frames
        for name in {*frames[-1].locals, *frames[-1].args} if frames else ():
            out[k, name] = (tl.last_write(name, k), tl.next_write(name, k))
    return out


@pytest.mark.parametrize("stops", [(20,), (44,), (60,), (20, 30), (31, 9, 12)])
def test_last_and_next_write_across_resumes_are_the_uninterrupted_runs(
    tmp_path: Path, stops: tuple[int, ...]
) -> None:
    from runtime.runs.stopping import Stopper

    (tmp_path / "p.agency").write_text(WRITES)
    (tmp_path / "ref").mkdir()
    reference = record_program(load_program(tmp_path / "p.agency"), _config(tmp_path / "ref"))
    want = _writers(reference.timeline)
    assert any(name == "xs" and last is not None for (_, name), (last, _) in want.items())

    store, run_id = _record_and_die(tmp_path, stops[0])
    for more in stops[1:]:  # resumed, and stopped again (a step budget): one more recorder
        m = resume_run(store, store.get_run(run_id), quiet=True, stopper=Stopper(more))
        assert m.status != HALTED
    m = resume_run(store, store.get_run(run_id), quiet=True)
    assert m.status == HALTED, m.error
    with store:
        assert _writers(Timeline(store, run_id, 0)) == want


def test_the_debuggers_y_on_a_resumed_run_goes_to_the_push_before_the_stop(
    tmp_path: Path,
) -> None:
    from debugger.opening import trace_session

    (tmp_path / "p.agency").write_text(WRITES)
    store, run_id = _stop_and_resume_program(tmp_path, 66)  # in the `tail` loop
    with store:
        session = trace_session(store, run_id)
        lines = [session.timeline.location_at(k).line for k in range(session.length)]
        pushes = [k for k, line in enumerate(lines) if line == 9]
        session.goto(lines.index(18))  # `return [xs, ob, kept, tail]`
        # `xs.push` is written in the step after the one standing on it
        assert session.why("xs", "locals").step == pushes[-1] + 1 < 66
        session.goto(lines.index(18))
        assert session.why("kept", "locals").step == lines.index(13) + 1  # kept[1].push(4)
