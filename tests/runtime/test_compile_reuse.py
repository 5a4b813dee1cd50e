"""Programs compiled only to be run are compiled once per process (a resume, a replay, a fork
and a child's `compile` each read their program again), and what a checkpoint's validation
derives from a program is worked out once: yet an edit to the program or to a file it imports
is always compiled afresh, and a caller that reads the instructions as compiled gets its own."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

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


# -- the prelude, compiled once for programs that see it alike ---------------------------------

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _as_compiled(program: object) -> list[tuple[object, ...]]:
    """Every function of `program` in order, as the machine and the recorder read it."""
    return [
        (
            name,
            code.kind,
            code.file,
            code.params,
            code.ops,
            [_nan_free(arg) for arg in code.args],
            code.locations,
            code.step_pcs,
            code.markers,
            code.finalize,
            code.span,
        )
        for name, code in [("<module>", program.module), *program.functions.items()]  # type: ignore[attr-defined]
    ]


def _nan_free(value: object) -> object:
    """`value` with NaN (a constant `NaN`, unequal to itself) spelled as text."""
    if isinstance(value, float) and value != value:
        return "NaN"
    if isinstance(value, tuple):
        return tuple(_nan_free(v) for v in value)
    return value


def _compiled_or_error(path: Path) -> object:
    from runtime.errors import AgencyError

    try:
        return _as_compiled(load_program(path))
    except AgencyError as exc:
        return str(exc)


def test_the_prelude_compiled_for_other_programs_is_what_this_one_would_compile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every program of the suite and the examples, compiled one after the other (each given the
    # kept prelude of whichever program saw its names alike), then the first three of each such
    # view and every seventh program again with nothing kept: the same code.
    from runtime.language import program_compiler

    kept = program_compiler._PRELUDE  # noqa: SLF001
    keys: list[object] = []
    find = kept.find

    def finding(unit: object, prelude: object) -> object:
        found = find(unit, prelude)  # type: ignore[arg-type]
        keys.append(kept.key(program_compiler._view(unit)) if kept.names else None)  # type: ignore[arg-type]  # noqa: SLF001
        return found

    monkeypatch.setattr(kept, "find", finding)
    paths = sorted(PROGRAMS.rglob("*.agency")) + sorted(EXAMPLES.rglob("*.agency"))
    assert len(paths) > 300
    warm = []
    for path in paths:
        keys.clear()
        warm.append((path, _compiled_or_error(path), tuple(keys)))
    views = Counter(view for _, _, view in warm)
    assert views.most_common(1)[0][1] > len(paths) // 2  # most programs share one
    seen: Counter[object] = Counter()
    for i, (path, was, view) in enumerate(warm):
        seen[view] += 1
        if seen[view] <= 3 or i % 7 == 0:
            kept.made.clear()
            assert _compiled_or_error(path) == was, path


def test_a_global_named_as_a_prelude_variable_gets_the_prelude_of_its_own(tmp_path: Path) -> None:
    # A prelude function's undeclared assignment to a name the program declares at module level
    # compiles differently; such a program is kept apart from the others.
    from runtime.language import program_compiler

    kept = program_compiler._PRELUDE  # noqa: SLF001
    plain = compile_source("node main() {\n  return 1\n}\n", str(tmp_path / "a.agency"))
    compile_source("node main() {\n  return 2\n}\n", str(tmp_path / "a.agency"))
    assert kept.names is not None  # looked for at the second program
    names = sorted(kept.names & {"seen", "out", "result", "acc", "i", "total"})
    assert names
    source = "".join(f"let {n} = 0\n" for n in names) + "node main() {\n  return 1\n}\n"
    shadowed = compile_source(source, str(tmp_path / "b.agency"))
    assert len(kept.made) >= 2
    kept.made.clear()
    assert _as_compiled(compile_source(source, str(tmp_path / "b.agency"))) == _as_compiled(
        shadowed
    )
    assert plain.functions.keys() <= shadowed.functions.keys()


def test_the_prelude_is_looked_through_only_once_a_second_program_is_compiled(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Most `agency` commands compile one program: finding the prelude's names (as long as
    # compiling it) waits for a second, which then gets the first one's prelude.
    from runtime.language import program_compiler

    fresh = program_compiler._CompiledPrelude()  # noqa: SLF001
    monkeypatch.setattr(program_compiler, "_PRELUDE", fresh)
    first = compile_source("node main() {\n  return 1\n}\n", str(tmp_path / "a.agency"))
    assert fresh.names is None and fresh.waiting is not None and not fresh.made
    found = []
    find = fresh.find
    monkeypatch.setattr(fresh, "find", lambda *a: found.append(find(*a)) or found[-1])
    second = compile_source("node main() {\n  return 2\n}\n", str(tmp_path / "b.agency"))
    assert fresh.names and fresh.waiting is None and len(fresh.made) == 1
    assert found[0] is not None  # the first program's prelude, copied
    prelude = [name for name, code in first.functions.items() if code.kind == "prelude"]
    assert [_as_compiled_code(second.functions[n]) for n in prelude] == [
        _as_compiled_code(first.functions[n]) for n in prelude
    ]
    assert all(second.functions[n] is not first.functions[n] for n in prelude)


def _as_compiled_code(code: object) -> tuple[object, ...]:
    return (code.ops, [_nan_free(a) for a in code.args], code.locations)  # type: ignore[attr-defined]


def test_a_kept_prelude_function_copies_whole(tmp_path: Path) -> None:
    # Every field the compiler sets comes through the copy (a field added to `Code` and left
    # out of `_copy` would be lost for every program but the first).
    from runtime.language import program_compiler

    for n in range(2):
        compile_source(f"node main() {{\n  return {n}\n}}\n", str(tmp_path / "a.agency"))
    made = program_compiler._PRELUDE.made  # noqa: SLF001
    assert made
    for codes, _handlers, _blocks in made.values():
        for code in codes.values():
            twin = program_compiler._copy(code)  # noqa: SLF001
            assert twin == code and twin.ops is not code.ops and twin.args is not code.args
