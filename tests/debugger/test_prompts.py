"""Pilot tests of the prompts (`:`, `g`, `/` and the edit dialog): what is typed into them goes
into them, never to the key bindings, however fast it arrives."""

from __future__ import annotations

from textual import events
from textual.widgets import Input

from debugger.app import DebuggerApp
from debugger.session import Session
from tests.debugger.conftest import SIZE, screen_text, settle

KEY_NAMES = {":": "colon", "/": "slash", " ": "space", "\r": "enter", "+": "plus"}


def burst(app: DebuggerApp, text: str) -> None:
    """Queue `text` as key events all at once, as a paste or a fast typist delivers them
    (Pilot's `press` waits for the app to go idle after each key, which hides the race)."""
    for ch in text:
        app.post_message(events.Key(KEY_NAMES.get(ch, ch), ch))


async def test_the_command_line_shows_what_is_typed(dice: Session) -> None:
    # g then 12: the focused input drew its tall border in the one-row prompt, hiding the text
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("g", "1", "2")
        await settle(pilot)
        field = app.query_one("#command-input", Input)
        assert field.has_focus and field.styles.border_top[0] in ("", "none")
        assert "go to step: 12" in screen_text(app)


async def test_a_command_typed_in_one_burst_runs_as_a_command(calls: Session) -> None:
    # `:break 6` pasted: the b toggled a breakpoint and the r restored (a new branch); the
    # prompt's focus came after the keys queued behind `:`
    app = DebuggerApp(calls)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        burst(app, ":break 4\r")
        await settle(pilot)
        assert app.session.breakpoint_lines() == {4}
        assert len(app.session.branches()) == 1
        assert app.session.step == 0
        assert not app.command_line.is_open


async def test_go_to_and_search_typed_in_one_burst(dice: Session) -> None:
    # g end / counter: e opened the edit dialog, n and c moved, o opened a file prompt
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        burst(app, "gend\r")
        await settle(pilot)
        assert app.screen is app.screen_stack[0]  # no dialog opened
        assert app.session.step == app.session.last
        burst(app, "/counter\r")
        await settle(pilot)
        assert app.session.last_search == "counter"
        assert app.session.step == app.session.search("counter")[0]  # wrapped from the end
        assert len(app.session.branches()) == 1
