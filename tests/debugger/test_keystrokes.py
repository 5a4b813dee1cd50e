"""A person's keystrokes, at random: every key the app binds, the keys of its dialogs, text and
Escape/Enter in any order, must leave the app running and answering (no traceback, no stuck
worker). Quitting keys are left out: they end the test."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from textual.command import CommandList

from debugger.app import DebuggerApp
from debugger.session import Session
from tests.debugger.conftest import PROGRAMS, SIZE, make_session, settle

KEYS = [
    "s", "S", "right", "left", "n", "N", "o", "O", "c", "C", "left_square_bracket",
    "right_square_bracket", "g", "b", "e", "r", "w", "B", "slash", "full_stop", "comma", "y",
    "p", "z", "t", "T", "home", "end", "colon", "question_mark", "escape", "enter", "tab",
    "up", "down", "1", "2", "x", "space", "backspace", "ctrl+o", "f3",
]  # fmt: skip


@pytest.mark.parametrize("seed", [1, 2])
async def test_random_keys_never_break_the_app(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session: Session = make_session(PROGRAMS / "watched.agency", PROGRAMS / "watched.mocks.json")
    session.add_watch("score", stops=True)
    session.source_text()  # read now: the keys may save files, which go to a scratch folder
    monkeypatch.chdir(tmp_path)
    rng = random.Random(seed)
    app = DebuggerApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for n in range(90):
            await pilot.press(rng.choice(KEYS))
            if n % 15 == 14:
                await settle(pilot)
        for _ in range(4):  # close whatever is open
            await pilot.press("escape")
        await settle(pilot)
        assert app.is_running
        assert 0 <= app.session.step <= app.session.last


async def test_page_keys_in_the_palette_before_its_list_is_drawn(dice: Session) -> None:
    # Textual's option lists index their lines by what was laid out: page up/down pressed in
    # the command palette the moment it opens (or in a list squeezed to no height) was a
    # KeyError that ended the app.
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for key in ("pageup", "pagedown"):
            await pilot.press("ctrl+p", "n", key, key)
            await settle(pilot)
            await pilot.press("escape", "escape")
            await settle(pilot)
        assert app.is_running


@pytest.mark.parametrize("size", [(20, 6), (40, 10), (8, 3)])
async def test_page_keys_in_panels_of_a_tiny_window(dice: Session, size: tuple[int, int]) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for _ in range(6):  # through every panel that takes focus
            await pilot.press("tab", "pageup", "pagedown", "home", "end", "up", "down")
            await settle(pilot)
        assert app.is_running


async def test_the_palette_under_a_screen_a_worker_opened(dice: Session) -> None:
    # A worker's answer (`:trace`'s list, `p`'s value) can land on top of the open command
    # palette; ctrl+p there opened a second palette with the same id: DuplicateIds, app gone.
    from debugger.widgets.list_screen import ListScreen

    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await settle(pilot)
        app.push_screen(ListScreen("found", [(1, "step 1")]))
        await settle(pilot)
        await pilot.press("ctrl+p")
        await settle(pilot)
        assert app.is_running
        for _ in range(4):
            await pilot.press("escape")
            await settle(pilot)
        assert app.is_running and len(app.screen_stack) == 1


async def test_the_palette_closed_as_soon_as_it_opens(dice: Session) -> None:
    # The palette gathers its commands in a worker started when it mounts; closed before that
    # worker ran, it found no list to fill (NoMatches) and the app ended.
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for keys in (("ctrl+p", "escape"), ("ctrl+p", "x", "escape"), ("ctrl+p", "escape") * 3):
            await pilot.press(*keys)
        await settle(pilot)
        # What a fast Escape (or Backspace, then Escape) gets to: a gathering that runs once
        # the palette's list is gone.
        app.action_command_palette()
        await settle(pilot)
        palette = app.screen
        await palette.query_one(CommandList).remove()
        palette._gather_commands("")  # noqa: SLF001 - what Textual calls on mount and input
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert app.is_running and len(app.screen_stack) == 1


TINY_KEYS = [
    "question_mark", "escape", "p", "x", "enter", "g", "9", "9", "enter", "ctrl+p", "enter",
    "escape", "B", "escape", "colon", "x", "enter", "z", "escape", "right", "left",
]  # fmt: skip


@pytest.mark.parametrize("size", [(1, 1), (3, 2), (6, 20), (2, 40)])
async def test_dialogs_and_notices_in_a_window_a_few_cells_wide(
    dice: Session, size: tuple[int, int]
) -> None:
    # A list measured its options at its width less their padding: 0 or less here, and text
    # wrapped at width 0 raised ValueError (rich's chop_cells), which ended the app.
    app = DebuggerApp(dice)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for key in TINY_KEYS:
            await pilot.press(key)
            await settle(pilot)
            assert app.is_running, key
