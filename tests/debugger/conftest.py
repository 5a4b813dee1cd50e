"""Shared fixtures of the debugger tests: real recorded runs of small programs (mock LLM)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from debugger.opening import record_session
from debugger.session import Session
from runtime.language.program import load_program
from runtime.llm.mock import load_mocks
from runtime.runs.runner import RunConfig

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).resolve().parent / "programs"
DICE = ROOT / "examples" / "dice.agency"
DICE_MOCKS = ROOT / "examples" / "dice.mocks.json"
CALLS = PROGRAMS / "calls.agency"
CALLS_MOCKS = PROGRAMS / "calls.mocks.json"
INTERRUPT = PROGRAMS / "interrupt.agency"
SIZE = (120, 36)


def config(mocks: Path | None) -> RunConfig:
    return RunConfig(mocks=load_mocks(str(mocks)) if mocks else [], quiet=True)


def make_session(path: Path, mocks: Path | None = None) -> Session:
    """A session over a fresh recording of `path` (relative path, as a user would type it), made
    from the repository whatever the caller's directory: a module-scoped fixture runs before the
    per-test `_in_repo` chdir, in the suite's scratch directory."""
    before = os.getcwd()
    os.chdir(ROOT)
    try:
        program = load_program(str(path.relative_to(ROOT)))
        return record_session(program, config(mocks))
    finally:
        os.chdir(before)


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests run where a user would (the repository), recording into a throwaway run store."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("AGENCY_DB", str(tmp_path / "runs.db"))


@pytest.fixture
def dice() -> Session:
    return make_session(DICE, DICE_MOCKS)


@pytest.fixture
def calls() -> Session:
    return make_session(CALLS, CALLS_MOCKS)


@pytest.fixture
def interrupted() -> Session:
    return make_session(INTERRUPT)


async def settle(pilot) -> None:  # noqa: ANN001 - textual.pilot.Pilot
    """Wait for the app to draw what the last key did, and for workers (restores, scans)."""
    await pilot.pause()
    if any(not worker.is_finished for worker in pilot.app.workers):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


def screen_text(app) -> str:  # noqa: ANN001 - DebuggerApp (conftest imports no app)
    """The screen as plain text, one line per row (what a person sees, without colours)."""
    strips = app.screen._compositor.render_strips()  # noqa: SLF001
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)
