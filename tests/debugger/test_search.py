"""Pilot tests of searching the timeline: `/`, the next and previous match keys."""

from __future__ import annotations

from debugger.app import DebuggerApp
from debugger.session import Session
from tests.debugger.conftest import SIZE, settle


async def test_shift_f3_goes_back_to_the_previous_match(dice: Session) -> None:
    # / counter Enter, F3, shift+F3 under tmux/xterm: stayed on match 2 (the terminal sends
    # shift+F3 as ESC[1;2R, which Textual reads as F15)
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"counter", "enter")
        await settle(pilot)
        first = dice.step
        for key in ("shift+f3", "f15"):
            await pilot.press("f3")
            await settle(pilot)
            assert dice.step > first
            await pilot.press(key)
            await settle(pilot)
            assert dice.step == first, key


async def test_previous_and_next_match_on_keys_every_terminal_sends(dice: Session) -> None:
    # previous match was only shift+F3, which tmux and xterm do not deliver as such
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"counter", "enter")
        await settle(pilot)
        hits = dice.search("counter")
        assert dice.step == hits[0]
        await pilot.press("full_stop")
        await settle(pilot)
        assert dice.step == hits[1]
        await pilot.press("comma")
        await settle(pilot)
        assert dice.step == hits[0]
        await pilot.press("comma")  # wraps to the last
        await settle(pilot)
        assert dice.step == hits[-1]
        keys = {b.action: b.key for b in app.BINDINGS if hasattr(b, "action")}
        assert "comma" in keys["search_previous"].split(",")


def test_search_finds_the_calls_of_a_function(tmp_path) -> None:  # noqa: ANN001
    # `/square` is how a person looks for where a function ran: it wrote no variable of
    # that name and printed nothing, yet "`square` is nowhere in this run" was wrong.
    from debugger.opening import record_session
    from runtime.language.program import load_program
    from runtime.runs.runner import RunConfig

    source = tmp_path / "calls_of.agency"
    source.write_text(
        "def square(x: number): number {\n"
        "  return x * x\n"
        "}\n"
        "node main() {\n"
        "  let a = 1\n"
        "  a = square(3)\n"
        "  a = square(a)\n"
        "  return a\n"
        "}\n"
    )
    session = record_session(load_program(str(source)), RunConfig(quiet=True))
    entries = [
        k
        for k in range(session.length)
        if (loc := session.timeline.location_at(k)) is not None and loc.scope == "square"
    ]
    hits = session.search("square")
    assert entries and all(k in hits for k in entries)
    move = session.search_next("SQUARE")
    assert session.step == entries[0] and "match 1 of" in move.reason
