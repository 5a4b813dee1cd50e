"""Pilot tests of searching the timeline: `/`, the next and previous match keys."""

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


async def test_previous_and_next_match_on_keys_every_terminal_sends(dice: Session) -> None:
    # previous match was only shift+F3, which tmux and xterm do not deliver as such
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"counter", "enter")
        await settle(pilot)
        hits = dice.search("counter")
        assert dice.step == hits[0]
        await pilot.press("full_stop")
        await settle(pilot)
        assert dice.step == hits[1]
        await pilot.press("comma")
        await settle(pilot)
        assert dice.step == hits[0]
        await pilot.press("comma")  # wraps to the last
        await settle(pilot)
        assert dice.step == hits[-1]
        keys = {b.action: b.key for b in app.BINDINGS if hasattr(b, "action")}
        assert "comma" in keys["search_previous"].split(",")
