"""Programs compiled only to be run are compiled once per process (a resume, a replay, a fork
and a child's `compile` each read their program again), and what a checkpoint's validation
derives from a program is worked out once: yet an edit to the program or to a file it imports
is always compiled afresh, and a caller that reads the instructions as compiled gets its own."""

from __future__ import annotations

from pathlib import Path

from runtime.language.program import compile_source, load_program
from runtime.vm.builtins import World
from runtime.vm.checkpoint_reading import _outer_assigned
from runtime.vm.checkpoints import snapshot
from runtime.vm.machine import Machine
from runtime.vm.rebuild import rebuild
from runtime.vm.writelog import HALTED

MAIN = 'import { twice } from "./lib.agency"\n\nnode main() {\n  return twice(21)\n}\n'
LIB = "export def twice(x: number): number {\n  return x * 2\n}\n"


def _write(root: Path, lib: str = LIB) -> Path:
    (root / "lib.agency").write_text(lib)
    (root / "main.agency").write_text(MAIN)
    return root / "main.agency"


def test_the_same_files_give_the_same_program_to_run(tmp_path: Path) -> None:
    path = _write(tmp_path)
    first = load_program(path, reuse=True)
    assert load_program(path, reuse=True) is first
    assert load_program(path) is not first  # not only to run: compiled anew
    assert compile_source(MAIN, str(path)) is not first


def test_an_edited_import_or_another_path_is_compiled_again(tmp_path: Path) -> None:
    path = _write(tmp_path)
    first = load_program(path, reuse=True)
    _write(tmp_path, LIB.replace("x * 2", "x + x"))
    edited = load_program(path, reuse=True)
    assert edited is not first and edited.sha256 != first.sha256
    other = tmp_path / "copy"
    other.mkdir()
    moved = load_program(_write(other, LIB.replace("x * 2", "x + x")), reuse=True)
    assert moved is not edited  # the same texts elsewhere: its functions name other files
    assert moved.sha256 == edited.sha256


def test_a_reused_program_runs_like_a_fresh_one(tmp_path: Path) -> None:
    path = _write(tmp_path)
    results = []
    for program in (load_program(path, reuse=True), load_program(path, reuse=True)):
        m = Machine(program, "main", world=World(root=tmp_path, quiet=True))
        m.run()
        assert m.status == HALTED
        results.append(m.result)
    assert results == [42, 42]


SOURCE = """
def each(xs: any[], f: any) {
  for (x in xs) {
    f(x)
  }
}

node main() {
  let total = 0
  each([1, 2, 3, 4]) as x {
    total = total + x
  }
  return total
}
"""


def test_what_validation_derives_is_kept_on_the_program(tmp_path: Path) -> None:
    program = compile_source(SOURCE, "outer.agency")
    assert "total" in _outer_assigned(program)
    assert _outer_assigned(program) is _outer_assigned(program)
    m = Machine(program, "main", world=World(root=tmp_path, quiet=True))
    while len(m.frames) < 3:  # inside the block, below `each` and `main`
        m.step(1)
    data = snapshot(m)
    again = rebuild(program, data, world=World(root=tmp_path, quiet=True))
    assert program.functions["main"].frame_shapes is not None  # worked out by the first read
    again.run()
    m.run()
    assert again.result == m.result == 10
