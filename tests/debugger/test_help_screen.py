"""The help screen read at the sizes people use: a key or command and what it does never run
together, and a description that wraps goes on under itself, not under the keys' column."""

from __future__ import annotations

import pytest

from debugger.app import DebuggerApp
from debugger.commands import COMMANDS
from debugger.session import Session
from debugger.widgets.help_screen import MOUSE, PANELS, HelpScreen
from tests.debugger.conftest import screen_text, settle

HEADINGS = ("Keys", "Commands (type : first)", "Panels", "Mouse", "Timeline markers")


def help_lines(app: DebuggerApp) -> list[str]:
    """Every line of the help text as drawn at the screen's width, scrolled or not."""
    text = app.screen.query_one("#help-text")
    width = text.content_region.width
    return [line.plain for line in text.render().wrap(width)]


@pytest.mark.parametrize("size", [(120, 36), (80, 24)])
async def test_help_columns_stay_apart_and_wrap_under_themselves(
    dice: Session, size: tuple[int, int]
) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        lines = help_lines(app)
        joined = "\n".join(lines)
        pairs = [(f":{usage}", about) for usage, about in COMMANDS.values()] + MOUSE + PANELS
        for usage, about in pairs:
            assert usage.split()[-1] + about.split()[0] not in joined, (usage, about)
        for line in lines:
            if line.strip() and line.strip() not in HEADINGS:
                assert line.startswith("  "), f"a wrapped line runs back to the edge: {line!r}"


@pytest.mark.parametrize("typed", ["help", ":help", "h", "?"])
async def test_the_help_command_opens_the_help_screen(dice: Session, typed: str) -> None:
    # `:help` was an unknown command: the one a person types first at a command line.
    app = DebuggerApp(dice)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        app.run_command(typed)
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        assert ":help" in "\n".join(help_lines(app))


async def test_the_panel_keys_the_help_lists_do_what_it_says(calls: Session) -> None:
    # `?` listed the app's keys and the mouse but not the panels' own: tab between panels,
    # enter on a frame, space on a value were there to find only by trying.
    app = DebuggerApp(calls)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        shown = "\n".join(help_lines(app))
        assert "Panels" in shown
        for keys, _ in PANELS:
            assert keys in shown
        await pilot.press("escape")
        # tab, shift+tab: the panels named, in that order
        order = []
        for _ in range(4):
            order.append(app.focused.id if app.focused else None)
            await pilot.press("tab")
        assert order == ["variables", "stack", "messages", "llm"]
        assert app.focused is app.variables
        await pilot.press("shift+tab")
        assert app.focused is app.llm
        # enter in the call stack shows that frame
        app.run_command("goto 4")  # inside add(), called from main
        await settle(pilot)
        assert [f.scope for f in app.session.state().frames] == ["main", "add"]
        app.stack.focus()
        await pilot.press("down", "enter")
        await settle(pilot)
        assert app.session.frame_index() == 0 and app.variables.border_title == "variables · main"
        # the variables' keys
        await pilot.press("end")
        await settle(pilot)
        app.variables.focus()
        tree = app.variables
        for _ in range(8):
            if tree.selected is not None and tree.selected.name == "items":
                break
            await pilot.press("down")
        items = tree.cursor_node
        assert items is not None and not items.is_expanded
        await pilot.press("space")
        await settle(pilot)
        assert items.is_expanded
        await pilot.press("enter")
        await settle(pilot)
        assert not items.is_expanded
        await pilot.press("shift+space")
        await settle(pilot)
        assert items.is_expanded
        await pilot.press("down", "down")
        await settle(pilot)
        assert tree.selected is not None and tree.selected.label == "items[1]"
        await pilot.press("shift+left")
        assert tree.selected is not None and tree.selected.label == "items"
        await pilot.press("shift+down")
        assert tree.selected is not None and tree.selected.label == "total"
        await pilot.press("shift+up")
        assert tree.selected is not None and tree.selected.label == "items"
        # ↑ ↓ select a message
        app.messages.focus()
        await pilot.press("up")
        first = app.messages.selected
        await pilot.press("down")
        assert first is not None and app.messages.selected == first + 1


async def test_the_help_says_how_to_close_it_at_any_scroll(dice: Session) -> None:
    # nothing on screen said how to leave the help: the footer shows no keys under a dialog
    app = DebuggerApp(dice)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark", "pagedown", "pagedown")
        await settle(pilot)
        assert "esc, q or ? closes" in screen_text(app)
        await pilot.press("q")
        await settle(pilot)
        assert not isinstance(app.screen, HelpScreen) and app.is_running


async def test_the_palettes_keys_command_opens_the_help(dice: Session) -> None:
    # the palette's "Keys" opened Textual's key panel, which listed "← Scroll Left" for the
    # panels (← steps back there) and ctrl+c as "Copy selected text" (it quits)
    app = DebuggerApp(dice)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        keys = [c for c in app.get_system_commands(app.screen) if c.title == "Keys"]
        assert len(keys) == 1
        keys[0].callback()
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
