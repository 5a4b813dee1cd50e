"""A breakpoint on a statement where a time guard's check fires stops once per execution of the
statement. The check is made at the statement boundary (runtime/vm/builtins_guard.py's
`step_poll`): it pushes `__step_guard`, which returns to the statement's start, so the run
crosses that boundary twice for one execution; `c` stopped at both, and `hit N` counted both.

Two clocks drive the check: a clock that moves one millisecond each time it is read (the real
clock's path: the machine looks at the guards every so many steps, wherever that falls) over a
loop whose lines run a known number of times; and the test's fake clock, where `_advanceTime`
moves it and the boundary after that fires the check."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import runtime.vm.builtins as vm_builtins
from debugger.opening import record_session
from debugger.session import Session
from runtime.language.program import compile_source, load_program
from runtime.runs.runner import RunConfig
from runtime.vm.builtins import World
from runtime.vm.machine import Machine
from runtime.vm.writelog import HALTED

ROUNDS = 2000

# Line 6 (the loop's head) runs ROUNDS + 1 times, line 7 ROUNDS times. The guard's budget is
# 3 ms: with the clock moving a millisecond a read, its fourth look fires the check, and the
# machine looks at least every 1,024 steps, so it fires inside the loop (asserted below).
BUSY = f"""\
node main() {{
  let asked = 0
  let i = 0
  handle {{
    const r = guard(time: 3) {{
      while (i < {ROUNDS}) {{
        i = i + 1
      }}
      return i
    }}
    return [r.value, asked]
  }} with (t) {{
    asked = asked + 1
    return approve({{ maxTime: 100000000 }})
  }}
}}
"""

ADVANCE = """\
import test { _advanceTime } from "std::date"

node main() {
  const r = guard(time: 100) {
    _advanceTime(250)
    return "done"
  }
  return r.value ?? r.error.type
}
"""


@pytest.fixture
def ticking(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wall clock moves one millisecond each time it is read."""
    ticks = itertools.count(1_700_000_000_000)
    monkeypatch.setattr(vm_builtins, "_wall_clock_ms", lambda: float(next(ticks)))


def poll_steps(s: Session) -> list[int]:
    return sorted(s._guard_poll_steps())


def breakpoint_stops(s: Session) -> list[int]:
    """Every step `c` stops at for a breakpoint, from the start to the end of the run."""
    s.goto(s.first)
    stops = []
    while s.step < s.last:
        move = s.continue_forward()
        if "breakpoint" in move.reason:
            stops.append(move.step)
    return stops


def busy_session(tmp_path: Path) -> Session:
    path = tmp_path / "busy.agency"
    path.write_text(BUSY)
    return record_session(load_program(str(path)), RunConfig(quiet=True))


def test_a_line_where_the_check_fires_stops_once_per_execution(
    ticking: None, tmp_path: Path
) -> None:
    s = busy_session(tmp_path)
    polls = poll_steps(s)
    assert polls, "the time guard's check never fired at a statement boundary"
    fired_line = s.timeline.location_at(polls[0]).line
    assert fired_line in (6, 7)
    s.toggle_breakpoint(6, s.source_path)
    s.toggle_breakpoint(7, s.source_path)
    stops = breakpoint_stops(s)
    lines = [s.timeline.location_at(k).line for k in stops]
    assert lines.count(6) == ROUNDS + 1
    assert lines.count(7) == ROUNDS
    assert not set(stops) & set(polls)
    marks = s.breakpoint_marks()
    assert marks is not None and marks[0] == stops  # the scrubber marks the same steps


def test_hit_counts_count_executions(ticking: None, tmp_path: Path) -> None:
    s = busy_session(tmp_path)
    line = s.timeline.location_at(poll_steps(s)[0]).line
    runs = ROUNDS + 1 if line == 6 else ROUNDS  # how many times the line's statement runs
    s.break_spec(f"{line} hit {runs}")
    stops = breakpoint_stops(s)
    assert len(stops) == 1
    # its last execution: no later step is at that line
    assert all(s.timeline.location_at(k).line != line for k in range(stops[0] + 1, s.length))


def test_fake_clock_check_in_advance_time_stops_once(tmp_path: Path) -> None:
    path = tmp_path / "advance.agency"
    path.write_text(ADVANCE)
    s = record_session(load_program(str(path)), RunConfig(quiet=True, fake_clock=True))
    polls = poll_steps(s)
    assert len(polls) == 1
    loc = s.timeline.location_at(polls[0])
    s.toggle_breakpoint(loc.line, loc.file)
    stops = breakpoint_stops(s)
    assert len(stops) == 1 and stops[0] > polls[0]
    assert s.timeline.location_at(stops[0]) == loc


def test_the_machine_stops_once_per_execution_too() -> None:
    program = compile_source(BUSY, "busy.agency")
    world = World(quiet=True)
    ticks = itertools.count(1_700_000_000_000)
    world.clock = lambda: float(next(ticks))
    m = Machine(program, "main", world=world)
    m.breakpoints = frozenset({("busy.agency", 6), ("busy.agency", 7)})
    counts = {6: 0, 7: 0}
    while True:
        m.run()
        if m.stopped_by != "breakpoint":
            break
        assert m.location is not None
        counts[m.location.line] += 1
    assert m.status == HALTED
    assert counts == {6: ROUNDS + 1, 7: ROUNDS}
