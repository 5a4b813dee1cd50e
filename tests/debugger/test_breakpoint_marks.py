"""The scrubber marks where breakpoints stop `c` and `C` (line, conditional, hit-count and event
breakpoints), read from the write index's steps per location, so a long run is marked without a
pass over it; and `c` over an indexed run stops where a scan of every step would."""

from __future__ import annotations

import pytest

from debugger.session import Session
from tests.debugger.conftest import PROGRAMS, SIZE, make_session, settle


@pytest.fixture
def watched() -> Session:
    return make_session(PROGRAMS / "watched.agency", PROGRAMS / "watched.mocks.json")


def line_of(session: Session, text: str) -> int:
    return next(n for n, line in enumerate(session.source_text().splitlines(), 1) if text in line)


def steps_at(session: Session, line: int) -> list[int]:
    """Every step at `line`, read one by one (what the index must agree with)."""
    t = session.timeline
    return [k for k in range(session.first, session.last + 1) if t.location_at(k).line == line]


def test_marks_are_where_c_stops(watched: Session) -> None:
    line = line_of(watched, "rounds = rounds + 1")
    every = steps_at(watched, line)
    assert len(every) == 4
    assert watched.breakpoint_marks() == ([], [])
    watched.break_spec(str(line))
    assert watched.breakpoint_marks() == (every, [])
    watched.build_index()
    assert watched.breakpoint_marks() == (every, [])  # the index says the same
    watched.break_spec(str(line))
    watched.break_spec(f"{line} if i > 2")
    held = [k for k in every if watched.timeline.state_at(k).frames[-1].locals["i"] > 2]
    assert len(held) == 2
    assert watched.breakpoint_marks() == (held, [])
    assert watched.breakpoint_marks(budget=0) == (held, [])  # all read already: none again
    watched.break_spec(f"{line} if i > 1")
    assert watched.breakpoint_marks(budget=1) == ([], every[1:])  # one read, the rest unread
    watched.goto(watched.first)
    assert watched.continue_forward().step == every[1]  # c read the condition up to there
    assert watched.breakpoint_marks(budget=0) == ([every[1]], every[2:])
    watched.break_spec(f"{line} if i > 2")
    watched.break_spec(f"{line} hit 3")
    assert watched.breakpoint_marks() == ([every[2]], [])
    watched.break_spec("llm")
    assert watched.breakpoint_marks() == ([every[2], watched.events("llm")[0].step], [])
    # each mark is a step c stops on, in order
    watched.goto(watched.first)
    stops = []
    while (move := watched.continue_forward()).step != watched.last:
        stops.append(move.step)
    assert stops == watched.breakpoint_marks()[0]


def test_c_on_an_indexed_run_stops_where_a_scan_does() -> None:
    plain, indexed = (make_session(PROGRAMS / "counting.agency") for _ in range(2))
    assert indexed.build_index()
    for s in (plain, indexed):
        s.break_spec(f"{line_of(s, 'i++')} if i % 700 == 0")
    for backwards in (False, True):
        got = []
        for s in (plain, indexed):
            s.goto(s.last if backwards else s.first)
            go = s.reverse_continue if backwards else s.continue_forward
            got.append([go().step for _ in range(6)])
        assert got[0] == got[1]
    assert len(set(got[0])) == 6  # five hits (i = 0 too), then the start of the run


def test_a_long_run_without_an_index_is_marked_once_it_is_indexed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    session = make_session(PROGRAMS / "counting.agency")
    assert session.breakpoint_marks(scan_limit=100) == ([], [])  # no breakpoint: nothing to find
    session.break_spec(str(line_of(session, "i++")))
    assert session.breakpoint_marks(scan_limit=100) is None  # a pass over the run: not here
    assert session.build_index()
    hits, unread = session.breakpoint_marks(scan_limit=100) or ([], [])
    assert hits == steps_at(session, line_of(session, "i++")) and unread == []


async def test_the_scrubber_shows_the_marks(
    watched: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    from debugger import app as app_module
    from debugger.app import DebuggerApp
    from debugger.widgets.timeline_bar import MARKERS, TimelineBar, legend

    monkeypatch.setattr(app_module, "SYNC_SEARCH_STEPS", 10)  # this run counts as long
    monkeypatch.setattr(app_module, "SYNC_SCAN_SECONDS", 0)  # ... and c goes to a worker
    app = DebuggerApp(watched)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        bar = app.query_one(TimelineBar)
        glyph = MARKERS["breakpoint"][0]
        assert glyph not in "".join(g for g, _ in bar._marker_row())
        line = line_of(watched, "rounds = rounds + 1")
        app.run_command(f"break {line}")
        await settle(pilot)  # setting it never waits for a pass over a long run
        assert not watched.indexed()
        assert glyph not in "".join(g for g, _ in bar._marker_row())
        await pilot.press("c")  # c builds the write index to visit the line's steps only
        await settle(pilot)
        assert watched.indexed() and watched.location().line == line
        row = "".join(g for g, _ in bar._marker_row())
        columns = {bar.column_of(k) for k in steps_at(watched, line)}
        assert {x for x, g in enumerate(row) if g == glyph} == columns
        assert f"{glyph} breakpoint" in legend().plain  # the help screen's legend says so
        app.run_command(f"break {line}")  # cleared
        await settle(pilot)
        assert glyph not in "".join(g for g, _ in bar._marker_row())
