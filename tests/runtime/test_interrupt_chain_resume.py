"""An interrupt that its handler chain sends to a person survives the process: `agency run`
exits 3 while the prelude's chain walk is paused, and `agency resume` in another process
applies the answer with the chain's rules (a bare approve gives true, a rejection ends the def
with a failure, a resolve gives its value) without asking the handlers again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_lifecycle import _ok, _run_id, _status, agency

CHAIN = """\
shared asked = 0

def ask() {
  const v = interrupt("go on?")
  return ["answered", v]
}

def gate() {
  return interrupt("gate?")
  return "past the gate"
}

node main() {
  let r = null
  let g = null
  handle {
    handle {
      r = ask()
      g = gate()
    } with (i) {
      asked++
      return approve("inner")
    }
  } with (i) {
    asked++
    if (i.message == "gate?") {
      return approve()
    }
    return propagate()
  }
  if (isFailure(r)) {
    return [r.error, g, asked]
  }
  return [r, g, asked]
}
"""


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        (["--approve"], [["answered", True], "past the gate", 4]),
        (["--resolve", '"yes"'], [["answered", "yes"], "past the gate", 4]),
        (["--reject"], ["interrupt rejected", "past the gate", 4]),
    ],
)
def test_a_propagated_interrupt_resumes_in_another_process(
    tmp_path: Path, how: list[str], expected: list[object]
) -> None:
    (tmp_path / "chain.agency").write_text(CHAIN)
    proc = agency(tmp_path, "run", "chain.agency", "--db", "runs.db")
    assert proc.returncode == 3, proc.stderr
    assert "go on?" in proc.stderr
    run_id = _run_id(proc.stderr)
    assert _status(tmp_path, run_id) == "interrupted"
    out = _ok(agency(tmp_path, "resume", run_id, *how, "--db", "runs.db", "--json"))
    assert json.loads(out.splitlines()[-1]) == expected
    assert _status(tmp_path, run_id) == "finished"
