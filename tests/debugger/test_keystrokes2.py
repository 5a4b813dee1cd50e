"""More Pilot tests from driving the debugger by hand under tmux (a second pass)."""

from __future__ import annotations

from debugger.app import DebuggerApp
from debugger.session import Session
from tests.debugger.conftest import SIZE, settle


async def test_shift_f3_goes_back_to_the_previous_match(dice: Session) -> None:
    # / counter Enter, F3, shift+F3 under tmux/xterm: stayed on match 2 (the terminal sends
    # shift+F3 as ESC[1;2R, which Textual reads as F15)
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"counter", "enter")
        await settle(pilot)
        first = dice.step
        for key in ("shift+f3", "f15"):
            await pilot.press("f3")
            await settle(pilot)
            assert dice.step > first
            await pilot.press(key)
            await settle(pilot)
            assert dice.step == first, key
