"""The one-line prompt (`:`, `/`, `g`, `w`, ctrl+o) as a person uses it: Tab completes what
is typed and never leaves the prompt open behind a focus that moved elsewhere; up and down
bring back what was typed before; moving focus away closes the prompt."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input

from debugger.app import DebuggerApp
from debugger.session import Session
from tests.debugger.conftest import SIZE, settle


def typed(app: DebuggerApp) -> str:
    return app.query_one("#command-input", Input).value


async def test_tab_completes_a_checkpoint_file_name(
    dice: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dice.source_text()  # read it before the working directory moves
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dice.step4.checkpoint.json").write_text("{}")
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+o", "d", "i", "tab")
        await settle(pilot)
        assert app.command_line.is_open
        assert isinstance(app.focused, Input)
        assert typed(app) == "dice.step4.checkpoint.json"


async def test_tab_completes_to_the_common_part_and_lists_the_choices(
    dice: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dice.source_text()
    monkeypatch.chdir(tmp_path)
    for name in ("cp.step1.json", "cp.step2.json"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "cps").mkdir()
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+o", "c", "p", ".", "tab")
        await settle(pilot)
        assert typed(app) == "cp.step"
        await pilot.press("tab")  # nothing more in common: the choices are shown
        await settle(pilot)
        shown = " ".join(str(n.message) for n in app._notifications)  # noqa: SLF001
        assert "cp.step1.json" in shown and "cp.step2.json" in shown
        await pilot.press("escape", "ctrl+o", "c", "p", "s", "tab")
        await settle(pilot)
        assert typed(app) == "cps/"  # a folder: go on typing inside it


async def test_tab_completes_the_file_of_open_and_write_commands(
    dice: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dice.source_text()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "saved.checkpoint.json").write_text("{}")
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("colon", "o", "p", "e", "n", "space", "s", "a", "tab")
        assert typed(app) == "open saved.checkpoint.json"


async def test_tab_completes_a_command_name(dice: Session) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("colon", "w", "a", "t", "c", "h", "p", "tab")
        await settle(pilot)
        assert typed(app) == "watchpoint "
        assert app.command_line.is_open and isinstance(app.focused, Input)


async def test_tab_with_nothing_to_complete_keeps_the_prompt(dice: Session) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("g", "1", "tab")
        await settle(pilot)
        assert app.command_line.is_open and isinstance(app.focused, Input)
        assert typed(app) == "1"
        await pilot.press("enter")
        await settle(pilot)
        assert app.session.step == 1


async def test_moving_focus_away_closes_the_prompt(dice: Session) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("colon", "b", "r")
        await settle(pilot)
        await pilot.click("#stack")
        await settle(pilot)
        assert not app.command_line.is_open
        assert app.focused is app.stack  # where the person clicked, not where focus was before
        await pilot.press("s")  # keys are the app's again
        await settle(pilot)
        assert app.session.step == 1


async def test_up_and_down_bring_back_earlier_lines(dice: Session) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for text in ("print 1 + 1", "print 2 + 2"):
            await pilot.press("colon")
            app.query_one("#command-input", Input).value = text
            await pilot.press("enter")
            await settle(pilot)
        await pilot.press("colon", "x", "up")
        assert typed(app) == "print 2 + 2"
        await pilot.press("up", "up")  # the oldest stays
        assert typed(app) == "print 1 + 1"
        await pilot.press("down")
        assert typed(app) == "print 2 + 2"
        await pilot.press("down")  # past the newest: what was being typed
        assert typed(app) == "x"
        await pilot.press("escape", "slash", "up")  # each prompt has its own history
        assert typed(app) == ""


async def test_a_name_typed_after_w_replaces_the_offered_one(
    dice: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `w` offers `dice.stepN.checkpoint.json`; typing a name of one's own appended to it
    # (`dice.step0.checkpoint.jsonmine.json` was saved).
    dice.source_text()
    monkeypatch.chdir(tmp_path)
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("w", *"mine.json", "enter")
        await settle(pilot)
        assert (tmp_path / "mine.json").is_file()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.json"]
        await pilot.press("w", "enter")  # Enter alone takes the offered name
        await settle(pilot)
        assert (tmp_path / "dice.step0.checkpoint.json").is_file()
        await pilot.press("w", "end", "left", "x", "enter")  # a cursor key keeps it to edit
        await settle(pilot)
        assert (tmp_path / "dice.step0.checkpoint.jsoxn").is_file()
