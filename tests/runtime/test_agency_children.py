"""Child programs (std::agency's run): a parent paused on its child's question is data. Its
snapshot goes through JSON and is rebuilt where nothing of the child is in memory (the compile
memo emptied), answered, and finishes as a straight run does; a finished child is not run
again when the parent re-executes from its snapshot."""

from __future__ import annotations

import json
from pathlib import Path

from runtime.language import program as program_module
from runtime.language.program import compile_source
from runtime.vm import builtins_agency
from runtime.vm.builtins import World
from runtime.vm.checkpoints import snapshot
from runtime.vm.frames import Decision
from runtime.vm.machine import Machine
from runtime.vm.rebuild import rebuild
from runtime.vm.values import Result, to_plain
from runtime.vm.writelog import HALTED, INTERRUPTED

PARENT = '''
import { runCode } from "std::agency"

const CHILD = """
node main() {
  write("child-ran.txt", "x") with approve
  const first = interrupt("first?", {effect: "my::first"})
  const second = interrupt("second?", {effect: "my::second"})
  return [first, second]
}
"""

node main() {
  handle {
    return runCode(CHILD).value
  } with (e) {
    if (e.effect == "std::run") { return approve() }
  }
}
'''


def _machine(tmp_path: Path) -> Machine:
    program = compile_source(PARENT, str(tmp_path / "parent.agency"))
    return Machine(program, "main", world=World(root=tmp_path, quiet=True))


def test_a_parent_waiting_on_its_child_survives_json_and_a_fresh_process(tmp_path: Path) -> None:
    m = _machine(tmp_path)
    m.run()
    assert m.status == INTERRUPTED
    assert m.pending["effect"] == "my::first"
    assert m.pending["message"] == "first?"

    data = json.loads(json.dumps(snapshot(m)))
    builtins_agency._compiled.clear()  # a fresh process: only the snapshot knows the child
    program_module._TO_RUN.clear()
    (tmp_path / "child-ran.txt").unlink()  # the child's write happened before the snapshot
    again = rebuild(m.program, data, world=World(root=tmp_path, quiet=True))
    for answer in ("one", "two"):
        again.answer_interrupt(Decision("approve", answer))
        again.run()
    assert again.status == HALTED
    assert to_plain(again.result) == ["one", "two"]
    # The child's first segment (which wrote the file) was journaled: it did not run again.
    assert not (tmp_path / "child-ran.txt").exists()


def test_a_child_question_rejected_by_the_person_fails_the_childs_node(tmp_path: Path) -> None:
    m = _machine(tmp_path)
    m.run()
    m.answer_interrupt(Decision("reject", "no"))
    m.run()
    assert m.status == HALTED
    # The rejection reached the child: its node returned the failure, which is its value.
    assert to_plain(m.result) == to_plain(Result(False, error="no"))
