"""The footer keeps `? Help` and `q Quit` in sight at every width (at 80 columns they fell off
the right edge); narrower screens leave out the verbs furthest down the bindings instead, and
a wider screen shows them again."""

from __future__ import annotations

import pytest

from debugger.app import DebuggerApp
from debugger.session import Session
from tests.debugger.conftest import screen_text, settle


def footer_row(app: DebuggerApp) -> str:
    return screen_text(app).splitlines()[-1]


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (160, 45)])
async def test_help_and_quit_show_at_every_width(dice: Session, size: tuple[int, int]) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        row = footer_row(app)
        assert "? Help" in row and "q Quit" in row and "^p palette" in row, row
        assert "s/→ Step" in row, row  # the first verbs stay too
        if size[0] >= 160:
            assert "r Restore here" in row and "/ Search" in row, row


async def test_narrowing_drops_verbs_from_the_end_and_widening_brings_them_back(
    dice: Session,
) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        wide = footer_row(app)
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        narrow = footer_row(app)
        assert "? Help" in narrow and "q Quit" in narrow, narrow
        assert "/ Search" not in narrow and "r Restore here" not in narrow, narrow
        # what is shown is the start of the wide footer's list, then help and quit
        shown = narrow.split("? Help")[0].strip()
        assert wide.startswith(shown), (wide, narrow)
        await pilot.resize_terminal(160, 45)
        await settle(pilot)
        assert footer_row(app) == wide


@pytest.mark.parametrize("opens", [("B",), ("question_mark",), ("r",), ("e",)])
async def test_under_a_dialog_the_footer_offers_none_of_the_keys_it_blocks(
    dice: Session, opens: tuple[str, ...]
) -> None:
    # Under the branches list (or help, a confirmation, an edit) the footer still showed
    # s Step, n Next, c Continue, b Breakpoint, q Quit: pressed there, they did nothing.
    app = DebuggerApp(dice)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("s", "s", *opens)
        await settle(pilot)
        assert app.screen is not app.screen_stack[0]  # the dialog is up
        row = footer_row(app)
        for shown in ("Step", "Next", "Continue", "Breakpoint", "Quit"):
            assert shown not in row, row
        await pilot.press("s")  # as it said: nothing under the dialog
        await settle(pilot)
        assert app.session.step == 2
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is app.screen_stack[0]
        assert "s/→ Step" in footer_row(app) and "q Quit" in footer_row(app)


async def test_a_command_picked_in_the_palette_still_runs(dice: Session) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p", *"last step", "enter")
        await settle(pilot)
        assert app.session.step == app.session.last


async def test_moving_focus_keeps_the_footer_and_a_prompt_changes_it(dice: Session) -> None:
    # Textual composed the footer again at every focus change (some 25 keys mounted and
    # styled anew): tab took a third of a second and the keys after it waited for it
    from textual.widgets._footer import FooterKey

    app = DebuggerApp(dice)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        keys = list(app.query(FooterKey))
        for _ in range(4):
            await pilot.press("tab")
            await settle(pilot)
        assert list(app.query(FooterKey)) == keys  # the same widgets: not composed again
        await pilot.press("colon")
        await settle(pilot)
        assert "esc Cancel" in footer_row(app)  # the prompt's own keys still show
        await pilot.press("escape")
        await settle(pilot)
        row = footer_row(app)
        assert "? Help" in row and "s/→ Step" in row and "esc Cancel" not in row
