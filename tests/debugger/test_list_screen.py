"""Lists over the app (`:breaks`, `:diff`, `:trace`) say what Enter does and do it: a list whose
lines name no step closes on Enter instead of swallowing it (and the keys after it)."""

from __future__ import annotations

from debugger.app import DebuggerApp
from debugger.session import Session
from debugger.widgets.list_screen import ListScreen
from tests.debugger.conftest import SIZE, screen_text, settle


async def test_a_list_of_breakpoints_closes_on_enter(dice: Session) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.run_command("break 5")
        app.run_command("breaks")
        await settle(pilot)
        assert isinstance(app.screen, ListScreen)
        text = screen_text(app)
        assert "enter goes to the step" not in text  # no line here names a step
        assert "line 5" in text
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, ListScreen)
        await pilot.press("s")  # the app's keys work again
        await settle(pilot)
        assert app.session.step == 1


async def test_a_list_of_steps_still_goes_to_one(dice: Session) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.run_command("trace counter")
        await settle(pilot)
        assert isinstance(app.screen, ListScreen)
        assert "enter goes to the step" in screen_text(app)
        await pilot.press("down", "enter")
        await settle(pilot)
        assert not isinstance(app.screen, ListScreen)
        assert app.session.step > 0


async def test_a_trace_of_a_name_the_run_never_has_says_so(dice: Session) -> None:
    # `:trace countr` (a typo) opened "0 changes (nothing)", which reads as "never changed"
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.run_command("trace countr")
        await settle(pilot)
        assert not isinstance(app.screen, ListScreen)
        said = " ".join(str(n.message) for n in app._notifications)
        assert "countr" in said and "never" in said
