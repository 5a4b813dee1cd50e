"""Session tests on real recordings (the runtime's Timeline), without a terminal."""

from __future__ import annotations

import pytest

from debugger.opening import checkpoint_session
from debugger.session import Session, SessionError
from runtime.errors import CheckpointFormatError
from runtime.language.program import load_program
from tests.debugger.conftest import CALLS, DICE, ROOT, config


def test_dice_moves_and_restores(dice: Session) -> None:
    assert dice.length == 21 and dice.step == 0
    assert dice.next_llm().step == 3
    assert dice.llm_answer_here()["value"] == 2
    dice.goto(4)
    assert dice.why("result").step == 4
    dice.set_command(":set result = 6")
    dice.restore()
    dice.goto(dice.last)
    assert dice.state().output[-1] == "Good roll: 6 after 1 rolls"
    # stepping back through the old branch never calls a model: the record answers
    dice.switch_branch(0)
    dice.goto(dice.last)
    assert dice.state().output[-1] == "Good roll: 5 after 1 rolls"


def test_a_restore_that_the_runtime_refuses_changes_nothing(calls: Session) -> None:
    calls.goto(5)  # inside add(): main's `answer` does not exist yet
    calls.edits = None
    calls.select_frame(0)
    with pytest.raises(SessionError):
        calls.set_command(":set answer = 1")
    assert calls.branch == 0 and len(calls.branches()) == 1


def test_interrupt_answered_in_the_session(interrupted: Session) -> None:
    assert interrupted.waiting_interrupt()["message"] == "Pay?"
    with pytest.raises(SessionError):
        interrupted.answer_interrupt("resolve_nope")
    interrupted.answer_interrupt("resolve", 7)
    assert interrupted.waiting_interrupt() is None
    interrupted.goto(interrupted.last)
    assert interrupted.state().status == "finished"
    assert interrupted.state().output == ("paid 7",)


def test_checkpoint_session_refuses_another_source(calls: Session, tmp_path) -> None:
    calls.goto(8)
    path = calls.save_checkpoint(str(tmp_path / "cp.json"))
    with pytest.raises(CheckpointFormatError, match="same source"):
        checkpoint_session(load_program(str(DICE.relative_to(ROOT))), path, config(None))
    session = checkpoint_session(load_program(str(CALLS.relative_to(ROOT))), path, config(None))
    assert session.step == session.first >= 8
    session.goto(session.last)
    assert session.state().output == ("counter is 5",)


def test_open_checkpoint_replaces_the_run(calls: Session, tmp_path) -> None:
    calls.goto(8)
    path = calls.save_checkpoint(str(tmp_path / "cp.json"))
    with pytest.raises(SessionError, match="no such checkpoint file"):
        calls.open_checkpoint(str(tmp_path / "missing.json"))
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(SessionError, match="checkpoint JSON"):
        calls.open_checkpoint(str(tmp_path / "broken.json"))
    assert calls.step == 8
    calls.open_checkpoint(path)
    assert calls.step == calls.first and calls.state().frames[-1].locals["answer"] == 4


def test_search_and_breakpoints_on_a_real_run(dice: Session) -> None:
    assert dice.search_next("Bad roll").step == 6
    assert dice.search_next().step == 13
    dice.goto(0)
    assert dice.toggle_breakpoint(9, "examples/dice.agency") == (10, True)  # `}`: moves on
    assert dice.toggle_breakpoint(10, "examples/dice.agency") == (10, False)
    with pytest.raises(SessionError):
        dice.toggle_breakpoint(40, "examples/dice.agency")
    dice.toggle_breakpoint(7, "examples/dice.agency")
    assert dice.continue_forward().step == 6  # step 6 is about to run line 7
    assert dice.continue_forward().step == 13
    assert dice.reverse_continue().step == 6


def test_moving_in_time_never_executes_or_calls_a_model(dice: Session, monkeypatch) -> None:
    from runtime.vm.machine import Machine

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("the program was executed while moving in time")

    monkeypatch.setattr(Machine, "run", forbidden)
    monkeypatch.setattr(Machine, "step", forbidden)
    monkeypatch.setattr(Machine, "_run", forbidden)
    dice.recording.machine.model = None  # any model call would fail
    for step in [*range(dice.last, -1, -1), *range(dice.last + 1)]:
        dice.goto(step)
        dice.state(), dice.variables(), dice.llm_call(), dice.changed_names()
    dice.goto(0)
    assert dice.continue_forward().step == dice.last
    assert dice.reverse_next().step == dice.last - 1  # from the end: the last statement
    assert dice.prev_llm().step == 17 and dice.search_next("Good").step == 20


def test_command_words_are_checked_in_the_terms_a_person_typed(calls: Session) -> None:
    calls.goto(5)  # inside add(): frames #0 add, #1 main
    with pytest.raises(SessionError, match=r"no frame 9 at this step \(frames: 0..1\)"):
        calls.frame_command("9")  # said "no frame -9" before
    assert calls.frame_command("1").scope == "main"
    with pytest.raises(SessionError, match="usage: :break LINE"):
        calls.break_command("")
    with pytest.raises(SessionError, match="outside"):
        calls.break_command("0")
    assert calls.break_command("13") == (13, 13, True)
    with pytest.raises(SessionError, match="no step given"):
        calls.parse_step(" ")
    assert calls.discard_edits() == 0
    calls.set_command("counter = 3")
    assert calls.discard_edits() == 1
    with pytest.raises(SessionError, match="not waiting"):
        calls.interrupt_answer("approve", "")


def test_edit_prompts_start_from_the_staged_text(calls: Session) -> None:
    calls.goto(7)  # the LLM call
    assert calls.answer_prompt().text == "4"
    calls.edit_message(0, "Pick a big number")
    prompt = calls.message_prompt(0)
    assert prompt.text == "Pick a big number" and prompt.title == "Edit message 0 (user)"
    calls.goto(0)
    with pytest.raises(SessionError, match="no LLM call"):
        calls.answer_prompt()


def test_the_steps_where_other_branches_leave_are_known_on_each_branch(calls: Session) -> None:
    # a restore made branch 1 at step 3; back on branch 0 nothing on the timeline said so
    assert calls.branch_forks() == []
    calls.goto(3)
    calls.set_command(":set counter = 7")
    assert calls.restore() == 1
    calls.goto(8)
    calls.set_command(":set total = 0")
    assert calls.restore() == 2  # from branch 1, past where it left branch 0
    calls.switch_branch(0)
    assert calls.branch_forks() == [3]  # branch 2 leaves branch 1 after the shared steps
    calls.switch_branch(1)
    assert calls.branch_forks() == [8]  # its own fork from 0 is its start, not a leaving
    calls.switch_branch(2)
    assert calls.branch_forks() == []
    calls.goto(2)
    calls.set_command(":set counter = 3")
    assert calls.restore() == 3  # from branch 2, within the steps all of them share
    for branch in (0, 1, 2):
        calls.switch_branch(branch)
        assert 2 in calls.branch_forks(), branch
    calls.switch_branch(3)
    assert calls.branch_forks() == []  # the others leave where it has its own steps
