"""Where `c` and `n` stop (issue 12, defects 7 and 8): on the `debugger()` statement itself, not
the one after; and `n` stops at a breakpoint inside the function it steps over, as gdb and pdb."""

from __future__ import annotations

from debugger.session import Session
from tests.debugger.conftest import CALLS, CALLS_MOCKS, make_session


def test_continue_stops_on_the_debugger_statement() -> None:
    s = make_session(CALLS, CALLS_MOCKS)
    move = s.continue_forward()
    assert s.location().line == 13, move  # debugger("after llm")
    assert "debugger" in move.reason
    s.goto(s.last)
    s.reverse_continue()
    assert s.location().line == 13


def test_next_stops_at_a_breakpoint_inside_the_call() -> None:
    s: Session = make_session(CALLS, CALLS_MOCKS)
    while s.location().line != 11:  # let total = add(counter, 2)
        s.step_forward()
    s.toggle_breakpoint(5)  # `return s` inside add()
    move = s.next_over()
    assert s.location().line == 5 and "breakpoint" in move.reason
    s.toggle_breakpoint(5)
    s.goto(next(k for k in range(s.length) if s.timeline.location_at(k).line == 11))
    s.next_over()
    assert s.location().line == 12  # without it, over the call
