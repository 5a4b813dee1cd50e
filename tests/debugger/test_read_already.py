"""Editing a value the statement under way has already read changes nothing for that statement
(a restore resumes it part-way, with the value it read): the edit dialog and `:set` say so."""

from __future__ import annotations

from debugger.app import DebuggerApp
from debugger.session import Session
from debugger.widgets.edit_screen import EditScreen
from tests.debugger.conftest import PROGRAMS, SIZE, make_session, settle


def in_double(s: Session) -> int:
    """The first step inside `double` (main waits in `const total = double(a) + b`)."""
    for step in range(s.first, s.last + 1):
        s.goto(step)
        if s.state().frames and s.state().frames[-1].scope == "double":
            return step
    raise AssertionError("double never ran")


def test_a_caller_part_way_through_its_statement_is_warned_about() -> None:
    s = make_session(PROGRAMS / "reads.agency")
    in_double(s)
    main = [f.scope for f in s.state().frames].index("main")
    assert s.already_read("args", "n") is None  # double's first statement has not begun
    s.frame = main
    warning = s.already_read("locals", "a")
    assert warning is not None and "line 9 (main)" in warning and "a already" in warning
    assert s.already_read("locals", "total") is not None  # named in the statement too
    assert s.already_read("locals", "ab") is None  # a name is matched whole


def test_a_statement_about_to_start_has_read_nothing() -> None:
    s = make_session(PROGRAMS / "reads.agency")
    step = in_double(s)
    s.goto(step - 1)  # main at `const total = ...`, before the call
    assert s.state().frames[-1].scope == "main"
    assert s.already_read("locals", "a") is None


async def test_the_edit_dialog_and_set_say_it() -> None:
    s = make_session(PROGRAMS / "reads.agency")
    in_double(s)
    s.frame = [f.scope for f in s.state().frames].index("main")
    app = DebuggerApp(s)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.run_command("set a = 10")
        await settle(pilot)
        notes = [str(n.message) for n in app._notifications]  # noqa: SLF001
        assert any("may have read a already" in n for n in notes)
        app.variables.focus()
        await settle(pilot)
        for _ in range(8):  # select `a` in the variables panel
            ref = app.variables.selected
            if ref is not None and ref.name == "a":
                break
            await pilot.press("down")
            await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, EditScreen)
        assert "may have read a already" in str(app.screen.query_one("#edit-warning").render())
