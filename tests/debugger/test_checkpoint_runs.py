"""Runs that begin at a checkpoint (issue 12, defect 2): the debugger opens exactly at the
checkpoint's step with its state; `--checkpoint FILE` alone finds the source; and every state
rebuilt for export, fork or resume equals what `state_at` shows, for every step of such a run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from debugger.debug_command import checkpoint_source
from debugger.opening import checkpoint_session
from runtime.errors import AgencyError
from runtime.language.program import load_program
from runtime.llm.registry import resolve_model
from runtime.runs.recording import at_checkpoint_step, record_machine, record_program
from runtime.runs.runner import RunConfig
from runtime.vm.builtins import World
from runtime.vm.rebuild import rebuild
from tests.debugger.conftest import PROGRAMS, ROOT, config

CARRY = PROGRAMS / "carry.agency"


def _program() -> object:
    return load_program(str(CARRY.relative_to(ROOT)))


def _carry_checkpoint(tmp_path: Path, step: int) -> tuple[object, Path, object]:
    """A run of carry.agency with start = 7, and its step `step` exported to a file."""
    program = _program()
    rec = record_program(program, RunConfig(args=[7], model_spec="sim", quiet=True))
    path = tmp_path / f"carry.step{step}.json"
    path.write_text(json.dumps(rec.timeline.export_checkpoint(step)), encoding="utf-8")
    return program, path, rec.timeline


def test_a_checkpoint_opens_at_its_own_step_with_its_state(tmp_path: Path) -> None:
    program, path, original = _carry_checkpoint(tmp_path, 3)
    session = checkpoint_session(program, str(path), config(None))
    assert session.first == 3 and session.step == 3
    assert session.state().frames == original.state_at(3).frames
    assert session.parse_step("3") == 3  # `g 3` is inside the run


def test_every_step_of_a_run_begun_at_a_checkpoint_exports_what_state_at_shows(
    tmp_path: Path,
) -> None:
    program, path, _ = _carry_checkpoint(tmp_path, 3)
    tl = checkpoint_session(program, str(path), config(None)).timeline
    checked = 0
    for k in range(3, len(tl)):
        if tl.kind_at(k) == "end":
            continue
        data = tl.export_checkpoint(k)
        assert at_checkpoint_step(data)
        machine = rebuild(program, data, model=resolve_model("sim"), world=World(quiet=True))
        again = record_machine(machine, at_step=True).timeline
        assert again.state_at(k).replace(branch=tl.branch) == tl.state_at(k), f"step {k}"
        checked += 1
    assert checked >= 5
    # start = 7 carried over: the export is not re-run from the program's start
    assert tl.export_checkpoint(4)["stack"][-1]["args"]["n"] == 7


def test_a_fork_of_a_run_begun_at_a_checkpoint_starts_from_it(tmp_path: Path) -> None:
    program, path, _ = _carry_checkpoint(tmp_path, 3)
    tl = checkpoint_session(program, str(path), config(None)).timeline
    branch = tl.fork(4, {})
    assert branch.state_at(len(branch) - 1).result == 14


def test_checkpoint_alone_finds_its_source_or_says_which(tmp_path: Path) -> None:
    _, path, _ = _carry_checkpoint(tmp_path, 3)
    assert Path(checkpoint_source(str(path))).resolve() == CARRY.resolve()
    data = json.loads(path.read_text(encoding="utf-8"))
    data["source"]["path"] = "gone/nowhere.agency"
    moved = tmp_path / "moved.json"
    moved.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(AgencyError, match="nowhere.agency"):
        checkpoint_source(str(moved))


def test_stepping_back_past_a_checkpoints_step_says_the_record_begins_there(
    tmp_path: Path,
) -> None:
    # S at the checkpoint's step said "start of the run", beside "step 3/…"
    program, path, _ = _carry_checkpoint(tmp_path, 3)
    session = checkpoint_session(program, str(path), config(None))
    assert session.first == 3
    for move in (session.step_back, session.reverse_next, session.reverse_step_out):
        move()
        assert session.step == 3
        assert session.message.startswith("start of the record")
        assert "checkpoint at step 3" in session.message
    session.reverse_continue()
    assert session.step == 3 and "checkpoint at step 3" in session.message
