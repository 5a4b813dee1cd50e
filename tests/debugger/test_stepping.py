"""Pilot tests of moving through calls: step out (`o`) and reverse step out (`O`)."""

from __future__ import annotations

from debugger.app import DebuggerApp
from debugger.session import Session
from debugger.widgets.source_view import SourceView
from tests.debugger.conftest import SIZE, settle


async def test_step_out_and_back_to_the_call(calls: Session) -> None:
    app = DebuggerApp(calls)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.run_command("goto 5")  # inside add()
        await settle(pilot)
        assert app.session.selected_frame().scope == "add"
        await pilot.press("o")
        await settle(pilot)
        assert app.session.step == 6 and app.session.selected_frame().scope == "main"
        assert app.query_one(SourceView).current_line == 12
        app.run_command("goto 5")
        await pilot.press("O")
        await settle(pilot)
        assert app.session.step == 3 and app.query_one(SourceView).current_line == 11
        bindings = {b.action: b for b in app.BINDINGS if hasattr(b, "action")}
        assert bindings["step_out"].key == "o" and bindings["reverse_step_out"].key == "O"
