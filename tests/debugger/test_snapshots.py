"""SVG snapshot tests of the main screens (update with `pytest --snapshot-update`)."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import Input

from debugger.app import DebuggerApp
from debugger.session import Session
from runtime.record.timeline import Timeline
from tests.debugger.conftest import (
    CALLS,
    CALLS_MOCKS,
    DICE,
    DICE_MOCKS,
    SIZE,
    make_session,
    settle,
)
from tests.debugger.test_app import select_variable


def steady(session: Session) -> Session:
    """Latency and the run id vary from run to run; pin them so screenshots compare (the
    `_pinned_latency` fixture pins it on every timeline, a restore's new branch included)."""
    return session


@pytest.fixture(autouse=True)
def _pinned_latency(monkeypatch: pytest.MonkeyPatch) -> None:
    real = Timeline.llm_call_at

    def llm_call_at(self: Timeline, step: int) -> dict[str, Any] | None:
        call = real(self, step)
        return None if call is None else {**call, "latency_ms": 12.0}

    monkeypatch.setattr(Timeline, "llm_call_at", llm_call_at)


async def quiet(pilot) -> None:  # noqa: ANN001
    await settle(pilot)
    pilot.app.clear_notifications()
    for field in pilot.app.screen.query(Input):
        field.cursor_blink = False
    await pilot.pause()


def test_main_screen_at_an_llm_call(snap_compare) -> None:  # noqa: ANN001
    app = DebuggerApp(steady(make_session(DICE, DICE_MOCKS)))

    async def run_before(pilot) -> None:  # noqa: ANN001
        await settle(pilot)
        await pilot.press("right_square_bracket", "right_square_bracket", "s")
        app.run_command("break 6")
        await quiet(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_call_stack_inside_a_def(snap_compare) -> None:  # noqa: ANN001
    app = DebuggerApp(steady(make_session(CALLS, CALLS_MOCKS)))

    async def run_before(pilot) -> None:  # noqa: ANN001
        await settle(pilot)
        app.run_command("goto 5")
        await quiet(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_edit_dialog(snap_compare) -> None:  # noqa: ANN001
    app = DebuggerApp(steady(make_session(CALLS, CALLS_MOCKS)))

    async def run_before(pilot) -> None:  # noqa: ANN001
        await settle(pilot)
        app.run_command("goto 8")
        await settle(pilot)
        select_variable(app, "answer")
        await pilot.press("e")
        await quiet(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_branches_after_a_restore(snap_compare) -> None:  # noqa: ANN001
    app = DebuggerApp(steady(make_session(CALLS, CALLS_MOCKS)))

    async def run_before(pilot) -> None:  # noqa: ANN001
        await settle(pilot)
        app.run_command("goto 8")
        app.run_command("set answer = 10")
        await pilot.press("r")
        await quiet(pilot)
        await pilot.press("B")
        await quiet(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_help_screen(snap_compare) -> None:  # noqa: ANN001
    app = DebuggerApp(steady(make_session(DICE, DICE_MOCKS)))

    async def run_before(pilot) -> None:  # noqa: ANN001
        await settle(pilot)
        await pilot.press("question_mark")
        await quiet(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
