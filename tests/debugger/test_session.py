"""Session tests: every move and edit on a hand-built timeline (no terminal, no asyncio)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from debugger.commands import COMMANDS, parse_command, parse_literal, parse_set_command
from debugger.formatting import describe_value
from debugger.session import Session, SessionError
from tests.debugger.fake_timeline import sample


@pytest.fixture
def session() -> Session:
    return Session(sample())


def test_session_imports_no_textual() -> None:
    code = (
        "import sys, debugger.session, debugger.opening, debugger.commands, debugger.formatting\n"
        "import debugger.lexer, debugger.watches, debugger.diff, debugger.stops\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_step_forward_and_back_clamp(session: Session) -> None:
    assert session.step == 0
    assert session.step_forward().step == 1
    assert session.step_forward(100).step == 10
    assert session.message == "end of the run"
    assert session.step_back().step == 9
    assert session.step_back(50).step == 0
    assert session.message == "start of the run"


def test_next_steps_over_calls_and_reverse_next_back(session: Session) -> None:
    session.goto(1)
    assert session.next_over().step == 4  # skips steps 2, 3 inside add()
    assert session.reverse_next().step == 1
    session.goto(2)  # inside add: next stays in add, then returns to the caller
    assert session.next_over().step == 3
    assert session.next_over().step == 4


def test_continue_stops_at_debugger_then_end(session: Session) -> None:
    move = session.continue_forward()
    # on the debugger() statement (step 5), not the step after it where its event is
    assert move.step == 5 and "debugger" in move.reason
    assert session.continue_forward().step == 10
    assert session.reverse_continue().step == 5
    assert session.reverse_continue().step == 0


def test_continue_stops_at_breakpoints(session: Session) -> None:
    assert session.toggle_breakpoint(3) == (3, True)
    assert session.breakpoint_lines() == {3}
    move = session.continue_forward()
    assert move.step == 3 and "breakpoint" in move.reason
    session.goto(9)
    assert session.reverse_continue().step == 5  # the debugger() statement comes first
    session.goto(5)
    assert session.reverse_continue().step == 3
    assert session.toggle_breakpoint(3) == (3, False)
    assert session.breakpoints == set()


def test_llm_calls_prev_next(session: Session) -> None:
    assert session.next_llm().step == 5
    assert session.next_llm().step == 5 and session.message == "no later LLM call"
    session.goto(9)
    assert session.prev_llm().step == 5
    assert session.llm_call()["value"] == 4
    assert session.llm_answer_here() is not None


def test_search_and_why(session: Session) -> None:
    assert session.search_next("counter is").step == 9
    assert session.search_next().step == 9
    assert "wrapped" in session.message
    session.goto(10)
    assert session.search_next(backwards=True).step == 9
    with pytest.raises(SessionError, match="nowhere"):
        session.search_next("zebra")
    session.goto(9)
    assert session.why("counter").step == 8
    session.goto(7)
    assert session.why("counter").step == 1
    with pytest.raises(SessionError):
        session.why("nobody")


def test_select_frame(session: Session) -> None:
    session.goto(3)
    assert session.selected_frame().scope == "add"
    assert session.select_frame(0).scope == "main"
    assert session.selected_frame().locals == {"counter": 1}
    session.step_forward()
    assert session.selected_frame().scope == "main" and session.frame is None
    with pytest.raises(SessionError):
        session.select_frame(7)


def test_parse_literal() -> None:
    assert parse_literal("3") == 3
    assert parse_literal("-2.5") == -2.5
    assert parse_literal('[1, "a", true, null, {b: -1}]') == [1, "a", True, None, {"b": -1}]
    assert parse_literal('{"k": [], x: "y"}') == {"k": [], "x": "y"}
    for bad in ("x", "1 + 2", "f()", "[...xs]", "{[k]: 1}", "", "[1,", '-"a"'):
        with pytest.raises(SessionError):
            parse_literal(bad)


def test_parse_set_command() -> None:
    assert parse_set_command(":set x = [1, 2]") == ("x", [], [1, 2])
    assert parse_set_command("set obj.a[0] = 3") == ("obj", ["a", 0], 3)
    assert parse_set_command("globals.limit = 5") == ("globals", ["limit"], 5)
    for bad in (":set", ":set x", ":set = 3", ":set x = y", ":set 3 = 4", ":set x.. = 1"):
        with pytest.raises(SessionError):
            parse_set_command(bad)


def test_edit_refuses_wrong_type_and_unknown_names(session: Session) -> None:
    session.goto(4)
    with pytest.raises(SessionError, match="is a number, not a string"):
        session.set_command(':set counter = "three"')
    with pytest.raises(SessionError, match="no variable `nope`"):
        session.set_command(":set nope = 1")
    with pytest.raises(SessionError):
        session.set_command(":set counter = oops")
    assert session.edits is None


def test_edit_and_restore_forks_a_branch(session: Session) -> None:
    session.goto(4)
    assert session.set_command(":set counter = 7") == "locals.counter"
    assert session.set_command(":set limit = 99") == "globals.limit"
    assert len(session.edits) == 2
    assert session.current_value("locals", "counter") == 7
    branch = session.restore()
    assert branch == 1 and session.branch == 1 and session.step == 4
    assert session.edits is None
    step, edits = session.timeline.family[0].forks[0]
    assert step == 4
    assert edits["locals"] == {"counter": 7} and edits["globals"] == {"limit": 99}
    assert session.state().frames[-1].locals["counter"] == 7
    assert [b.id for b in session.branches()] == [0, 1]
    assert session.diverge(0, 1) == 4
    session.switch_branch(0)
    assert session.state().frames[-1].locals["counter"] == 1
    with pytest.raises(SessionError):
        session.switch_branch(9)


def test_edits_stay_with_their_step_when_moving(session: Session) -> None:
    # a stray key after staging used to drop the edits
    session.goto(4)
    session.set_command(":set counter = 2")
    session.step_forward()
    assert session.staged() is None and session.pending_edits().step == 4
    with pytest.raises(SessionError, match="staged at step 4"):
        session.set_command(":set counter = 3")
    with pytest.raises(SessionError, match="staged at step 4"):
        session.restore()
    session.goto(4)
    assert session.staged().locals == {"counter": 2}


def test_nested_message_and_answer_edits(session: Session) -> None:
    session.goto(5)
    session.set_command(':set messages[1] = "6"')
    session.set_command(":set answer = 6")
    with pytest.raises(SessionError, match="answer is a number"):
        session.set_command(':set answer = "six"')
    with pytest.raises(SessionError, match="no message 9"):
        session.set_command(':set messages[9] = "x"')
    with pytest.raises(SessionError, match="string"):
        session.set_command(":set messages[0] = 3")
    edits = session.edits.as_dict()
    assert edits["messages"] == {1: "6"} and edits["llm_answer"] == 6
    session.goto(4)
    with pytest.raises(SessionError, match="no LLM call"):
        session.set_command(":set answer = 1")


def test_nested_path_edit(session: Session) -> None:
    session.goto(3)
    session.select_frame(1)
    session.edit_variable("args", "a", 5)
    assert session.edits.args == {"a": 5}
    with pytest.raises(SessionError, match="is a number; it has no `x`"):
        session.edit_variable("args", "a", 5, ["x"])


def test_save_checkpoint(session: Session, tmp_path) -> None:
    session.goto(4)
    path = session.save_checkpoint(str(tmp_path / "cp.json"))
    data = json.loads(open(path).read())
    assert data["format"] == "agency-checkpoint" and data["step"] == 4
    with pytest.raises(SessionError, match="does not exist"):
        session.save_checkpoint(str(tmp_path / "no" / "cp.json"))


def test_open_checkpoint_without_loader(session: Session) -> None:
    with pytest.raises(SessionError):
        session.open_checkpoint("cp.json")


def test_describe_value() -> None:
    assert describe_value({"a": [1, 2.0, "x"], "b c": None}) == '{a: [1, 2, "x"], "b c": null}'
    assert describe_value({"$result": "success", "value": 3}) == "success(3)"
    assert describe_value({"$function": "add"}) == "<def add>"
    assert describe_value(list(range(100)), 10).endswith("…")
    assert len(describe_value(list(range(100)), 10)) == 10


def test_parse_command_and_step(session: Session) -> None:
    assert parse_command(":goto 12") == ("goto", "12")
    assert parse_command("g 3") == ("goto", "3")
    assert parse_command(":x = 3") == ("set", "x = 3")
    assert parse_command("   ") is None
    with pytest.raises(SessionError, match="unknown command"):
        parse_command(":frobnicate")
    assert all(usage and about for usage, about in COMMANDS.values())
    session.goto(4)
    assert [session.parse_step(t) for t in ("7", "+2", "-4", "end", "50%", "1_0")] == [
        7,
        6,
        0,
        10,
        5,
        10,
    ]
    for bad in ("x", "11", "-9", ""):
        with pytest.raises(SessionError):
            session.parse_step(bad if bad != "-9" else "-9")


def test_shown_location_and_variables_follow_the_selected_frame(session: Session) -> None:
    session.goto(3)  # inside add(), called from main at line 8
    assert session.shown_location().line == 3
    shown = session.variables()
    assert (shown.scope, shown.args, shown.locals) == ("add", {"a": 1, "b": 2}, {"s": 3})
    session.select_frame(0)
    assert session.shown_location().line == 0  # the fake records no caller line
    session.edit_variable("locals", "counter", 9)
    shown = session.variables()
    assert shown.locals["counter"] == 9 and shown.edited == {("locals", "counter")}
    assert session.staged() is session.edits
    session.goto(10)
    assert session.variables().outcome == {"result": None}


def test_step_out_and_reverse_step_out(session: Session) -> None:
    session.goto(3)  # inside add()
    assert session.step_out().step == 4  # back in main
    assert "returned from add" in session.message
    session.goto(2)
    assert session.reverse_step_out().step == 1  # the call of add
    assert session.step_out().step == session.last  # main never returns to a caller here
    session.goto(session.last)
    assert session.reverse_step_out().step == session.last - 1  # the end has no frame
