"""Resuming re-executes the record up to where the run stopped, which takes seconds on a long
run: `resume_run` reports how far it has got (the `agency resume` command shows it as a bar on
a terminal), then says it is done."""

from __future__ import annotations

from pathlib import Path

from runtime.language.program import load_program
from runtime.record.sqlite_store import SQLiteStore
from runtime.runs.recording import record_program
from runtime.runs.resume import resume_run
from runtime.runs.runner import RunConfig
from runtime.runs.stopping import Stopper
from runtime.vm.writelog import HALTED

LOOP = """node main() {
  let total = 0
  for (i in range(20000)) {
    total = total + i
  }
  return total
}
"""


def test_resume_reports_its_re_execution_then_closes_the_report(tmp_path: Path) -> None:
    source = tmp_path / "loop.agency"
    source.write_text(LOOP, encoding="utf-8")
    program = load_program(source)
    config = RunConfig(model_spec="sim", root=str(tmp_path), quiet=True)
    with SQLiteStore(tmp_path / "runs.db") as store:
        rec = record_program(program, config, store, stopper=Stopper(max_steps=30_000))
        run = store.get_run(rec.run_id)
        assert run.status == "interrupted"
        stopped_at = rec.machine.step_index
        heard: list[tuple[int, int]] = []

        m = resume_run(store, run, quiet=True, progress=lambda s, t: heard.append((s, t)))

        assert m.status == HALTED and m.result == sum(range(20000))
        assert heard[-1] == (-1, -1)
        told = heard[:-1]
        assert len(told) >= 2, heard  # a report every 10,000 steps re-executed
        assert all(total == stopped_at for _, total in told)
        steps = [s for s, _ in told]
        assert steps == sorted(steps) and steps[-1] == stopped_at
