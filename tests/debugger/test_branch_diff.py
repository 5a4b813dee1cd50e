"""`:diff branch N` when two branches end the same: the edit that started the branch is still
a difference a person wants to see, and "the ends agree" is said, not left to be guessed."""

from __future__ import annotations

from pathlib import Path

from debugger.opening import record_session
from runtime.language.program import load_program
from runtime.runs.runner import RunConfig

# a retry loop whose restore overwrites what was edited: both branches end alike
PROGRAM = """\
node main() {
  let total = 0
  const cp = checkpoint()
  total = total + 1
  if (total < 100) {
    restore(cp, {locals: {total: 500}, maxRestores: 1})
  }
  return total
}
"""


def test_a_branch_that_ends_alike_still_shows_its_edit(tmp_path: Path) -> None:
    source = tmp_path / "same_end.agency"
    source.write_text(PROGRAM)
    session = record_session(load_program(str(source)), RunConfig(quiet=True))
    step = next(k for k in range(session.length) if session.timeline.location_at(k).line == 4)
    session.goto(step)
    session.edit_variable("locals", "total", 7)
    session.restore()
    _, lines = session.diff("branch 0")
    texts = [line.text() for line in lines]
    assert texts[0] == f"diverge: at step {step}"
    assert "main.total: 7  →  0" in texts  # the edit, at the step the branch began
    assert any(t.startswith("at the end: nothing differs") for t in texts)
