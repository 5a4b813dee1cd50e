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
    path = tmp_path / "p.agency"
    path.write_text(PROGRAM)
    program = load_program(path)
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
    m = resume_run(store, store.get_run(rec.run_id), quiet=True)
    assert m.status == HALTED, m.error
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
