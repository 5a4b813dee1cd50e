"""Pilot tests of changing the past: the edit dialog, staged edits and `r` (restore from here)."""

from __future__ import annotations

from textual.widgets import Label

from debugger.app import DebuggerApp
from debugger.session import Session
from debugger.widgets.confirm_screen import ConfirmScreen
from debugger.widgets.edit_screen import EditScreen
from debugger.widgets.status_line import StatusLine
from tests.debugger.conftest import SIZE, settle
from tests.debugger.test_app import errors, select_variable


async def edit(pilot, name: str, text: str) -> None:  # noqa: ANN001
    """Select variable `name`, press e, type `text` over the value, press enter."""
    select_variable(pilot.app, name)
    await pilot.press("e")
    await settle(pilot)
    assert isinstance(pilot.app.screen, EditScreen)
    pilot.app.screen.query_one("Input").value = text
    await pilot.press("enter")
    await settle(pilot)


async def test_an_untyped_variable_takes_a_value_of_another_type(calls: Session) -> None:
    # `let counter = 1`: "three" and null were refused ("is a number, not a string")
    app = DebuggerApp(calls)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.run_command("goto 8")
        await settle(pilot)
        await edit(pilot, "counter", '"three"')
        assert not isinstance(app.screen, EditScreen)
        assert app.session.edits.locals == {"counter": "three"}
        await edit(pilot, "counter", "null")
        assert app.session.edits.locals == {"counter": None}
        assert errors(app) == []


async def test_a_refused_edit_keeps_the_dialog_open_with_the_text(calls: Session) -> None:
    # `const answer: number`, typed "ten": the dialog closed and the text was lost
    app = DebuggerApp(calls)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.run_command("goto 8")
        await settle(pilot)
        await edit(pilot, "answer", '"ten"')
        dialog = app.screen
        assert isinstance(dialog, EditScreen)
        assert dialog.query_one("Input").value == '"ten"'
        error = dialog.query_one("#edit-error", Label)
        assert error.display and "is a number, not a string" in str(error.content)
        assert app.session.edits is None
        dialog.query_one("Input").value = "10"  # fixed in place
        await pilot.pause()
        assert not error.display  # the reason was about "ten", no longer on screen
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, EditScreen)
        assert app.session.edits.locals == {"answer": 10}
        assert app.session.branch == 0 and len(app.session.branches()) == 1


async def test_a_stray_key_after_staging_keeps_the_edits(calls: Session) -> None:
    # :set answer = 10, then s: the edit was dropped (only a line in the status said so)
    app = DebuggerApp(calls)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.run_command("goto 8")
        app.run_command("set answer = 10")
        await pilot.press("s")
        await settle(pilot)
        assert "1 staged at step 8" in str(app.query_one(StatusLine).content)
        await pilot.press("r")  # here, r says where the edits are instead of running
        await settle(pilot)
        assert len(app.session.branches()) == 1
        assert any("staged at step 8" in e for e in errors(app))
        await pilot.press("S", "r")
        await settle(pilot)
        assert app.session.branch == 1 and app.session.pending_edits() is None


async def test_restore_with_nothing_staged_asks_and_says_what_reruns(calls: Session) -> None:
    # r with nothing staged forked and re-ran at once (paid calls with a real model)
    app = DebuggerApp(calls)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.run_command("goto 2")
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert "1 LLM call made again" in str(app.screen.query_one("#confirm-details").content)
        await pilot.press("n")
        await settle(pilot)
        assert len(app.session.branches()) == 1
        await pilot.press("r")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert app.session.branch == 1


async def test_e_with_nothing_to_edit_says_how_to_get_to_something(dice: Session) -> None:
    # "select … the LLM call" left a person looking for how: tab is how
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("tab")  # the call stack: no variable selected, not a message
        await pilot.press("e")
        await settle(pilot)
        said = " ".join(str(n.message) for n in app._notifications)
        assert "tab moves between them" in said


async def test_nothing_is_staged_at_the_end_of_the_run(calls: Session) -> None:
    # at the end step an edit was staged ("press r to restore from step 12") and then r
    # refused: nothing runs after the end. Now e says so before the dialog, and :set too.
    app = DebuggerApp(calls)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("end")
        await settle(pilot)
        for focus in (app.variables, app.messages, app.llm):
            focus.focus()
            await pilot.press("e")
            await settle(pilot)
            assert not isinstance(app.screen, EditScreen)
        app.run_command("set counter = 7")
        await settle(pilot)
        assert app.session.pending_edits() is None
        said = errors(app)
        assert said and all("end of the run" in e and "edit there" in e for e in said), said
        app.variables.focus()
        await pilot.press("S", "e")  # the last statement: edits stage there as before
        await settle(pilot)
        assert isinstance(app.screen, EditScreen)


async def test_a_restores_re_execution_shows_how_far_it_has_to_go(calls: Session) -> None:
    # restoring from step 200000 of a long run said "step 99,999 --%": the re-execution up
    # to the fork step has a known end
    app = DebuggerApp(calls)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.run_command("goto 8")
        await settle(pilot)
        seen = []
        real = app.session.restore

        def restore(progress=None, stopper=None):  # noqa: ANN001, ANN202
            for step in (3, 8, 10):  # before the fork, at it, live past it
                progress(step)
                seen.append(app._progress)  # noqa: SLF001
            return real(progress, stopper)

        app.session.restore = restore  # type: ignore[method-assign]
        await pilot.press("r", "y")  # nothing staged: r asks first
        await settle(pilot)
        assert seen == [(3, 8), (8, 0), (10, 0)]
        assert app.session.branch == 1
