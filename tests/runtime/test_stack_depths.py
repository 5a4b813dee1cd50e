"""`runtime.language.stack_depths`: the frame shapes found in the bytecode are the ones the
machine has. Every function of every conformance program is walked; a sample of programs runs,
and at every step each frame's operand stack, handlers, threads and traps are among the shapes
its pc has, and a caller waits on the function the code names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runtime.language import bytecode as B
from runtime.language.program import load_program
from runtime.language.stack_depths import frame_shapes, stack_depths, static_callee
from runtime.runs.runner import RunConfig, decision_from, drive, new_machine
from runtime.runs.stopping import Stopper

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = sorted((ROOT / "tests" / "programs").rglob("*.agency"))
# Handlers, traps (`try`, `catch`), MATCH with binders and validators, blocks, forks, hooks.
SAMPLE = [
    p
    for p in PROGRAMS
    if p.parent.name
    in ("blocks", "callbacks", "concurrency", "match_guards", "results", "threads", "validation")
] + sorted((ROOT / "examples").glob("*.agency"))


def _load(path: Path) -> Any:
    try:
        return load_program(str(path))
    except Exception:  # noqa: BLE001 - a program the conformance tests expect to fail
        return None


def test_every_compiled_function_has_a_shape_at_every_reachable_pc() -> None:
    walked = 0
    seen: set[tuple[Any, ...]] = set()  # the prelude's functions come with every program
    for path in PROGRAMS:
        program = _load(path)
        if program is None:
            continue
        for code in [*program.functions.values(), program.module]:
            same = (code.file, code.name, tuple(code.ops), repr(code.args))
            if same in seen:
                continue  # frame_shapes reads nothing but the code
            seen.add(same)
            shapes = frame_shapes(code)
            assert len(shapes) == len(code.ops)
            assert shapes[0] == {(0, 0, 0, ())}
            walked += 1
    assert walked > 1000


def test_a_match_and_a_trap_take_their_own_edges() -> None:
    code = B.Code("f", "def", "f.agency", [])
    ops = [
        (B.LOAD_LOCAL, "x"),
        (B.MATCH, (None, ("a", "b"))),
        (B.JUMP_IF_FALSE, 7),
        (B.STORE_LOCAL, "a"),
        (B.STORE_LOCAL, "b"),
        (B.TRAP_PUSH, (9, True)),
        (B.TRAP_POP, None),
        (B.CONST, None),  # 7: the mismatch, with nothing pushed
        (B.RETURN, None),
        (B.RETURN, None),  # 9: the failure the trap pushed
    ]
    code.ops[:] = [op for op, _ in ops]
    code.args[:] = [arg for _, arg in ops]
    depths = stack_depths(code)
    assert depths[2] == {1, 3}  # False alone, or the two binders and True
    assert depths[3] == {2} and depths[7] == {0} and depths[9] == {1}
    assert frame_shapes(code)[6] == {(0, 0, 0, ((9, 0, True),))}


@pytest.mark.parametrize("path", SAMPLE, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_running_frames_have_the_shapes_found(path: Path) -> None:
    program = _load(path)
    if program is None:
        pytest.skip("does not compile (an error case)")
    found: dict[str, list[frozenset[Any]]] = {}
    checked = 0

    def shapes_of(code: Any) -> list[frozenset[Any]]:
        if code.name not in found:
            found[code.name] = frame_shapes(code)
        return found[code.name]

    def check(m: Any, kind: str) -> None:
        nonlocal checked
        frames = m.frames
        for i, f in enumerate(frames):
            top = i == len(frames) - 1
            shapes = shapes_of(f.code)
            traps = tuple((t[0], t[1], bool(t[2])) for t in f.traps)
            shape = (len(f.stack) + (0 if top else 1), len(f.handlers), len(f.threads), traps)
            assert shape in shapes[f.pc], (f.code.name, f.pc, shape, kind)
            if not top:
                name = static_callee(f.code, f.pc - 1)
                above = frames[i + 1].code
                if name in program.functions and name != above.name:
                    assert above.name == "__hooked_call", (f.code.name, f.pc, name, above.name)
            checked += 1

    m = new_machine(program, RunConfig(quiet=True))
    m.on_step = check
    drive(m, lambda pending: decision_from("approve"), Stopper(3000))
    if checked == 0:
        pytest.skip("stops before its first step (it needs arguments)")
