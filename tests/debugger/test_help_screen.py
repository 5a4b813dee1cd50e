"""The help screen read at the sizes people use: a key or command and what it does never run
together, and a description that wraps goes on under itself, not under the keys' column."""

from __future__ import annotations

import pytest

from debugger.app import DebuggerApp
from debugger.commands import COMMANDS
from debugger.session import Session
from debugger.widgets.help_screen import MOUSE, HelpScreen
from tests.debugger.conftest import settle

HEADINGS = ("Keys", "Commands (type : first)", "Mouse", "Timeline markers")


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
        pairs = [(f":{usage}", about) for usage, about in COMMANDS.values()] + MOUSE
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
