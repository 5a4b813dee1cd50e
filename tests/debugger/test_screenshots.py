"""The README's screenshots render offline: they name system fonts, never web fonts."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

from tests.debugger.conftest import DICE, DICE_MOCKS, SIZE, make_session, settle

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "screenshots"


def make_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("screenshots_make", SHOTS / "make.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_committed_screenshot_names_system_fonts_only() -> None:
    svgs = sorted(SHOTS.glob("*.svg"))
    assert len(svgs) >= 12
    for svg in svgs:
        text = svg.read_text(encoding="utf-8")
        style = text.split("<style>", 1)[1].split("</style>", 1)[0]
        assert "@font-face" not in style and "http" not in style, svg.name
        assert "Fira Code" not in text, svg.name
        assert re.search(r'font-family: [^;]*"DejaVu Sans Mono"[^;]*monospace;', text), svg.name


def test_every_shot_the_script_lists_is_committed() -> None:
    make = make_module()
    for name in make.SHOTS:
        assert (SHOTS / f"{name}.svg").is_file(), name


async def test_the_script_rewrites_rich_web_fonts_to_system_ones() -> None:
    from debugger.app import DebuggerApp

    app = DebuggerApp(make_session(DICE, DICE_MOCKS))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        raw = app.export_screenshot(title="agency debugger")
    assert "@font-face" in raw and "cdnjs" in raw  # what Rich writes
    svg = make_module().offline_fonts(raw)
    assert "@font-face" not in svg and "http" not in svg.split("<style>")[1].split("</style>")[0]
    assert "monospace" in svg and "<text" in svg
