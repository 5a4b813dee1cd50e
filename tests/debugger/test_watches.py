"""Watches, watchpoints, `:print`, `:trace`, conditional / hit-count / event breakpoints and
`:diff`, on real recorded runs with lists and objects changed in place, helper calls and a
`restore()`."""

from __future__ import annotations

import pytest

from debugger import watches as W
from debugger.expressions import NotInScope, compile_expression
from debugger.session import Session, SessionError
from tests.debugger.conftest import PROGRAMS, ROOT, make_session

WATCHED = PROGRAMS / "watched.agency"
MUTATIONS = PROGRAMS / "mutations.agency"


@pytest.fixture
def watched() -> Session:
    return make_session(WATCHED, PROGRAMS / "watched.mocks.json")


def brute_changes(watch: W.Watch, session: Session) -> list[int]:
    """Every step that changes the watch, read step by step (what the index must agree with)."""
    t = session.timeline
    return [k for k in range(session.first, session.last + 1) if W._changed_at(watch, t, k, 0)]


# -- expressions -----------------------------------------------------------------------------


def test_expressions_read_values_without_running_anything() -> None:
    scope = {"x": 3, "items": [1, 2, 3], "o": {"a": {"b": [5]}}, "name": "bob", "n": None}
    cases = {
        "x + 1": 4,
        "items.length > 2 && x == 3": True,
        "o.a.b[0] * 2": 10,
        "items.includes(2)": True,
        "`hi ${name}`": "hi bob",
        "x / 2": 1.5,
        "keys(o)": ["a"],
        "name.toUpperCase()": "BOB",
        "o?.z?.q": None,
        "n ?? 'none'": "none",
        "x > 2 ? 'big' : 'small'": "big",
        "items.slice(1).join('-')": "2-3",
    }
    for text, expected in cases.items():
        assert compile_expression(text).evaluate(scope) == expected, text
    with pytest.raises(NotInScope):
        compile_expression("missing + 1").evaluate(scope)
    with pytest.raises(SessionError, match="would run code"):
        compile_expression("helper(1)").evaluate(scope)
    with pytest.raises(SessionError, match="not an expression: expected an expression"):
        compile_expression("x ==")
    with pytest.raises(SessionError, match="cannot read .a of null"):
        compile_expression("n.a").evaluate(scope)


# -- watches and watchpoints -----------------------------------------------------------------

WATCHES = [
    ("items", "main"),
    ("score", "main"),
    ("z", "main"),
    ("rounds", None),
    ("tries", None),
    ("total", "bump"),
    ("list", "bump"),
    ("by * 10 + total", "bump"),
    ("items.length", "main"),
    ("i * 2 > 5", "main"),
    ("rounds", "bump"),  # a global read in a helper: in scope at each call, with no write
    ("rounds + by", "bump"),
]


@pytest.mark.parametrize(("text", "function"), WATCHES)
def test_watch_changes_agree_with_reading_every_step(
    watched: Session, text: str, function: str | None
) -> None:
    watch = W.Watch.parse(text, function)
    expected = brute_changes(watch, watched)
    assert expected, "each watch changes somewhere in this run"
    found = [step for step, _ in W.changes(watch, watched.timeline, watched.first, watched.last)]
    assert found == expected
    for start in range(watched.first, watched.last + 1):
        after = next((k for k in expected if k > start), None)
        before = next((k for k in reversed(expected) if k < start), None)
        t = watched.timeline
        assert W.next_change(watch, t, start, watched.first, watched.last) == after
        assert W.next_change(watch, t, start, watched.first, watched.last, True) == before


@pytest.mark.parametrize(("text", "function"), WATCHES)
def test_going_back_in_windows_agrees_with_reading_every_step(
    watched: Session, text: str, function: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A search back reads a few candidates one by one, then passes forward over windows
    # (a change far back is found sooner that way): here it goes to windows at once.
    monkeypatch.setattr(W, "BACK_STEPS_ALONE", 0)
    watch = W.Watch.parse(text, function)
    expected = brute_changes(watch, watched)
    t = watched.timeline
    for start in range(watched.first, watched.last + 1):
        before = next((k for k in reversed(expected) if k < start), None)
        assert W.next_change(watch, t, start, watched.first, watched.last, True) == before
        until = max(watched.first, start - 7)  # a bound inside the run, as `C` gives one
        inside = before if before is not None and before >= until else None
        assert W.next_change(watch, t, start, watched.first, watched.last, True, None, until) == (
            inside
        )


def test_in_place_changes_and_restore_are_changes(watched: Session) -> None:
    items = W.Watch.parse("items", "main")
    values = [v for _, v in W.changes(items, watched.timeline, watched.first, watched.last)]
    assert values[0] == [1, 2] and values[-1] == [1, 2, 3, 12, 54, 288]  # push() in bump()
    z = W.Watch.parse("z", "main")
    steps = [s for s, _ in W.changes(z, watched.timeline, watched.first, watched.last)]
    restores = [e.step for e in watched.events("restore")]
    assert steps[-1] in restores  # restore(cp, {locals: {z: 7}}) is where z became 7


def test_watchpoints_stop_continue_both_ways(watched: Session) -> None:
    watched.goto(watched.first)
    watched.add_watch("score", stops=True)
    seen = []
    while True:
        move = watched.continue_forward()
        if move.reason.startswith("watchpoint"):
            seen.append(watched.state().frames[-1].locals["score"])
        else:
            break
    assert seen == [0, 3, 15, 69, 357]
    assert watched.step == watched.last
    back = watched.reverse_continue()
    assert back.reason == "watchpoint: score = 357"
    assert watched.reverse_continue().reason == "watchpoint: score = 69"


def test_watch_panel_lines_and_removal(watched: Session) -> None:
    watched.goto(watched.first + 2)
    watched.add_watch("score + 1")
    watched.add_watch("rounds", stops=True)
    assert [line for _, line in watched.watch_lines()] == [
        "score + 1: not in scope",
        "rounds = 0",
    ]
    watched.goto(watched.last - 1)
    assert [line for _, line in watched.watch_lines()] == ["score + 1 = 358", "rounds = 4"]
    assert watched.remove_watch("1") == 1
    assert watched.remove_watch("all") == 1
    with pytest.raises(SessionError, match="no watch"):
        watched.remove_watch("nothing")


def test_print_reads_the_selected_frame(watched: Session) -> None:
    step = next(
        s
        for s in range(watched.last)
        if watched.timeline.state_at(s).frames[-1:]
        and watched.timeline.state_at(s).frames[-1].scope == "bump"
        and "total" in watched.timeline.state_at(s).frames[-1].locals
    )
    watched.goto(step)
    assert watched.print_expression("list.length") == "list.length = 2"
    watched.select_frame(0)  # main, the caller
    assert watched.print_expression("items.length") == "items.length = 2"
    with pytest.raises(SessionError, match="not in scope"):
        watched.print_expression("list")


def test_trace_lists_every_change(watched: Session) -> None:
    watched.goto(watched.last - 1)
    watched.select_frame(len(watched.state().frames) - 1)
    assert [v for _, v in watched.trace("score")] == ["0", "3", "15", "69", "357"]
    with pytest.raises(SessionError, match="not an expression"):
        watched.trace("score +")


def test_trace_reports_how_far_along_the_run_it_is() -> None:
    session = make_session(PROGRAMS / "counting.agency")
    heard: list[tuple[int, int]] = []
    found = session.trace("i % 1000 == 0", progress=lambda done, total: heard.append((done, total)))
    assert [v for _, v in found] == ["true", "false", "true", "false", "true", "false", "true"]
    assert found == session.trace("i % 1000 == 0")  # the same answer without a listener
    assert len(heard) > 10  # heard all along, not only where the value changed
    dones = [done for done, _ in heard]
    assert dones == sorted(dones) and all(0 <= d <= t for d, t in heard)
    assert dones[-1] >= 0.9 * heard[-1][1]


def test_trace_reads_forward_without_whole_states(monkeypatch: pytest.MonkeyPatch) -> None:
    # `:trace` of a value written every iteration read two whole states per write (the step
    # and the one before it, a rebuild from a keyframe each time): 18 s over 400k steps. It
    # now reads a narrow view of the watched names, moving the state forward only.
    session = make_session(PROGRAMS / "counting.agency")
    t = session.timeline
    whole, rebuilt = [0], [0]
    state_at, build = t.state_at, t._build_state

    def count_whole(step: int):  # noqa: ANN202 - the timeline's own signature
        whole[0] += 1
        return state_at(step)

    def count_rebuilds(step: int):  # noqa: ANN202
        if t._cursor is None or step < t._cursor.step:
            rebuilt[0] += 1
        return build(step)

    monkeypatch.setattr(t, "state_at", count_whole)
    monkeypatch.setattr(t, "_build_state", count_rebuilds)
    found = session.trace("i")
    assert [v for _, v in found][:3] == ["0", "1", "2"] and found[-1][1] == "3000"
    assert len(found) == 3001
    assert whole[0] <= 2 and rebuilt[0] <= 2


# -- breakpoints with conditions, hit counts and events ---------------------------------------


def lines_of(session: Session, text: str) -> int:
    return next(n for n, line in enumerate(session.source_text().splitlines(), 1) if text in line)


def test_conditional_and_hit_count_breakpoints(watched: Session) -> None:
    line = lines_of(watched, "rounds = rounds + 1")
    watched.goto(watched.first)
    assert "if i > 2" in watched.break_spec(f"{line} if i > 2")
    watched.continue_forward()
    assert watched.state().frames[-1].locals["i"] == 3
    watched.continue_forward()
    assert watched.state().frames[-1].locals["i"] == 4
    watched.break_spec(str(line))  # a plain toggle clears it, condition and all
    assert watched.breakpoints_described() == []
    watched.break_spec(f"{line} hit 2")
    watched.goto(watched.first)
    watched.continue_forward()
    assert watched.state().frames[-1].locals["i"] == 2
    assert watched.continue_forward().step == watched.last
    with pytest.raises(SessionError, match="usage: :break LINE"):
        watched.break_spec("twelve")
    with pytest.raises(SessionError, match="hit count starts at 1"):
        watched.break_spec(f"{line} hit 0")


def test_event_breakpoints(watched: Session) -> None:
    llm_step = watched.events("llm")[0].step
    watched.goto(watched.first)
    assert watched.break_spec("llm") == "c and C stop on llm"
    move = watched.continue_forward()
    assert move.step == llm_step and move.reason.startswith("break llm")
    watched.break_spec("llm")  # given again: cleared
    watched.goto(watched.first)
    watched.break_spec("answer YES")
    assert watched.continue_forward().step == llm_step
    watched.break_spec("answer YES")
    watched.break_spec("answer maybe")
    watched.goto(watched.first)
    assert watched.continue_forward().step == watched.last
    with pytest.raises(SessionError, match="usage: :break answer TEXT"):
        watched.break_spec("answer")


def test_a_tool_breakpoint_stops_at_the_call_before_the_tool_runs() -> None:
    # `:break tool add` stopped on the step after the tool had returned (where its event is
    # recorded): like gdb and pdb on a function, it stops on entry, in the tool's own frame
    session = make_session(
        ROOT / "examples" / "tools.agency", ROOT / "examples" / "tools.mocks.json"
    )
    (tool,) = session.events("tool")
    assert session.break_spec("tool add") == "c and C stop on tool add"
    session.goto(session.first)
    move = session.continue_forward()
    assert move.reason.startswith("break tool add") and move.step < tool.step
    frame = session.state().frames[-1]
    assert frame.scope == "add" and frame.args == {"a": 4, "b": 5}
    assert session.location().line == 5  # `return a + b`, not run yet
    session.goto(session.last)
    assert session.reverse_continue().step == move.step
    session.break_spec("tool add")
    said = session.break_spec("tool nosuch")
    assert said == "c and C stop on tool nosuch (it has not happened in this run)"
    session.goto(session.first)
    assert session.continue_forward().step == session.last


# -- diff ------------------------------------------------------------------------------------


def test_diff_two_steps(watched: Session) -> None:
    first_score = next(
        s
        for s, _ in W.changes(W.Watch.parse("score", "main"), watched.timeline, 0, watched.last)
        if s > 10
    )
    title, lines = watched.diff(f"{first_score - 1} {first_score}")
    assert title == f"step {first_score - 1} → step {first_score}"
    assert [line.text() for line in lines if line.what == "main.score"] == ["main.score: 0  →  3"]
    _, none = watched.diff(f"{first_score} {first_score}")
    assert none == []
    with pytest.raises(SessionError, match="outside the run"):
        watched.diff("0 99999")


def test_diff_two_branches(calls: Session) -> None:
    calls.goto(7)  # the LLM call
    calls.edit_llm_answer(9)
    calls.restore()
    title, lines = calls.diff("branch 0")
    assert title == f"branch {calls.branch} → branch 0"
    texts = [line.text() for line in lines]
    assert texts[0].startswith("diverge: at step")
    assert "result: 10  →  5" in texts
    assert "output: + counter is 5" in texts
    assert 'message 1: assistant: "9"  →  assistant: "4"' in texts
    with pytest.raises(SessionError, match="no branch 7"):
        calls.diff("branch 7")


def test_a_diff_of_long_texts_shows_where_they_differ() -> None:
    from types import SimpleNamespace

    from debugger.diff import diff_states
    from runtime.record.views import Usage

    prompt = "Summarise these verdicts for the product team in one line: "

    def state(verdicts: str, items: list[int]) -> SimpleNamespace:
        message = SimpleNamespace(role="user", content=prompt + verdicts)
        frame = SimpleNamespace(scope="main", args={}, locals={"items": items})
        return SimpleNamespace(
            status="done",
            result=None,
            frames=[frame],
            globals={},
            output=(),
            threads={"0": (message,)},
            active_thread="0",
            usage=Usage(0, 0, 0.0),
        )

    lines = diff_states(
        state("positive, mixed, positive", [1] * 60 + [2]),
        state("positive, negative, positive", [1] * 60 + [3]),
    )
    texts = {line.what: (line.a, line.b) for line in lines}
    a, b = texts["message 0"]
    assert a != b and "mixed" in a and "negative" in b  # not two equal beginnings
    assert a.startswith("user: …") and a.endswith('positive"')
    a, b = texts["main.items"]
    assert a.endswith("1, 2]") and b.endswith("1, 3]") and a.startswith("…")
    short = diff_states(state("yes", [1]), state("no", [1]))  # short texts are shown whole
    assert [(x.a, x.b) for x in short] == [(f'user: "{prompt}yes"', f'user: "{prompt}no"')]


# -- in the app ------------------------------------------------------------------------------


async def test_the_status_line_counts_event_breakpoints_too(watched: Session) -> None:
    from debugger.app import DebuggerApp
    from debugger.widgets.status_line import StatusLine
    from tests.debugger.conftest import SIZE, settle

    app = DebuggerApp(watched)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        status = app.query_one(StatusLine)
        assert "● " not in str(status.content)
        app.run_command("break llm")  # no line breakpoint, but c stops: say there is one
        await settle(pilot)
        assert "● 1" in str(status.content)
        app.run_command(f"break {lines_of(watched, 'rounds = rounds + 1')}")
        await settle(pilot)
        assert "● 2" in str(status.content)


async def test_watches_in_the_app(watched: Session) -> None:
    from debugger.app import DebuggerApp
    from debugger.widgets.list_screen import ListScreen
    from debugger.widgets.watches_panel import WatchesPanel
    from tests.debugger.conftest import SIZE, settle
    from tests.debugger.test_app import prompt, watch_errors

    app = DebuggerApp(watched)
    async with app.run_test(size=SIZE) as pilot:
        errors = watch_errors(app)
        await settle(pilot)
        panel = app.query_one(WatchesPanel)
        assert not panel.display  # hidden while nothing is watched
        await prompt(pilot, "colon", "watchpoint score")
        assert panel.display and panel.option_count == 1
        await pilot.press("c")
        await settle(pilot)
        assert app.session.message == "watchpoint: score = 0"
        assert "score = 0" in str(panel.get_option_at_index(0).prompt)
        # p opens the command line ready for an expression
        await pilot.press("p")
        assert app.query_one("#command-input").value == "print "
        app.query_one("#command-input").value = "print score + 1"
        await pilot.press("enter")
        await settle(pilot)
        assert any("score + 1 = 1" in str(n.message) for n in app._notifications)
        # :trace lists the changes; enter goes to the highlighted one
        await prompt(pilot, "colon", "trace score")
        assert isinstance(app.screen, ListScreen)
        assert len(app.screen.rows) == 5
        await pilot.press("down", "down", "enter")
        await settle(pilot)
        assert app.session.state().frames[-1].locals["score"] == 15
        await prompt(pilot, "colon", "diff 0")
        assert isinstance(app.screen, ListScreen)
        await pilot.press("escape")
        await prompt(pilot, "colon", "unwatch all")
        assert not panel.display
        assert errors == []


# -- threads and zoom ------------------------------------------------------------------------


async def test_t_shows_each_message_thread_and_z_zooms_a_value(tmp_path) -> None:
    import json

    from debugger.app import DebuggerApp
    from debugger.widgets.messages_panel import MessagesPanel
    from debugger.widgets.value_screen import ValueScreen
    from tests.debugger.conftest import ROOT, SIZE, settle
    from tests.debugger.test_app import select_variable, watch_errors

    mocks = tmp_path / "threads.mocks.json"
    mocks.write_text(json.dumps([{"return": "one"}, {"return": "two"}, {"return": "three"}]))
    session = make_session(ROOT / "tests/programs/threads/basic.agency", mocks)
    session.goto(session.last - 1)
    threads = sorted(session.state().threads)
    assert len(threads) >= 2
    app = DebuggerApp(session)
    async with app.run_test(size=SIZE) as pilot:
        errors = watch_errors(app)
        await settle(pilot)
        panel = app.query_one(MessagesPanel)
        shown = {panel.border_title}
        for _ in threads:
            await pilot.press("t")
            await settle(pilot)
            shown.add(panel.border_title)
        assert len(shown) == len(threads)  # each thread had its turn, then back
        with pytest.raises(SessionError, match="only the active thread"):
            while session.shown_thread() == session.state().active_thread:
                session.cycle_thread()
            session.edit_message(0, "changed")
        select_variable(app, "out")
        await pilot.press("z")
        await settle(pilot)
        assert isinstance(app.screen, ValueScreen)
        assert json.loads(app.screen.text) == session.state().frames[-1].locals["out"]
        await pilot.press("c")  # copied (OSC 52 to the terminal; the app keeps the text)
        assert app.clipboard == app.screen.text
        await pilot.press("s")
        await settle(pilot)
        saved = list(ROOT.glob("basic.step*.out.json"))
        try:
            assert saved and json.loads(saved[0].read_text()) == json.loads(app.screen.text)
        finally:
            for path in saved:
                path.unlink()
        await pilot.press("escape")
        assert errors == []


async def test_a_big_run_store_is_mentioned_once_opened(tmp_path, monkeypatch) -> None:
    from debugger.app import DebuggerApp
    from debugger.opening import record_session
    from runtime.language.program import load_program
    from runtime.record.sqlite_store import SQLiteStore
    from tests.debugger.conftest import SIZE, config, settle

    store = SQLiteStore(tmp_path / "runs.db")
    program = load_program(str(WATCHED))
    session = record_session(program, config(PROGRAMS / "watched.mocks.json"), store=store)
    assert (session.store_bytes() or 0) > 0
    monkeypatch.setenv("AGENCY_STORE_WARN_BYTES", "1")
    app = DebuggerApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        said = [str(n.message) for n in app._notifications]
        assert any("agency prune --max-size" in m for m in said), said
    store.close()


async def test_the_timeline_shows_where_the_tokens_went() -> None:
    from textual.app import App, ComposeResult

    from debugger.widgets.timeline_bar import SPARKS, TimelineBar
    from runtime.record.views import Event

    class Bar(App[None]):
        def compose(self) -> ComposeResult:
            yield TimelineBar(id="timeline")

    app = Bar()
    async with app.run_test(size=(40, 6)) as pilot:
        bar = app.query_one(TimelineBar)
        bar.set_events([Event(5, "llm", "a", {})], 100)  # scripted answers spend nothing
        await pilot.pause()
        assert not bar.has_class("-spends") and len(str(bar.render()).splitlines()) == 2
        spent = [
            Event(10, "llm", "small", {"input_tokens": 10, "output_tokens": 0}),
            Event(90, "llm", "big", {"input_tokens": 900, "output_tokens": 100}),
        ]
        bar.set_events(spent, 100)
        await pilot.pause()
        assert bar.has_class("-spends") and bar.size.height == 3
        strip = str(bar.render()).splitlines()[2]
        assert strip[bar.column_of(90)] == SPARKS[-1]  # the biggest spend is a full bar
        assert strip[bar.column_of(10)] == SPARKS[1]  # a little is still visible
        assert len(strip.replace(" ", "")) == 2  # nothing where nothing was spent


async def test_the_timeline_strip_switches_to_where_the_time_went() -> None:
    from textual.app import App, ComposeResult

    from debugger.widgets.timeline_bar import SPARKS, TimelineBar
    from runtime.record.views import Event

    class Bar(App[None]):
        def compose(self) -> ComposeResult:
            yield TimelineBar(id="timeline")

    app = Bar()
    async with app.run_test(size=(40, 6)) as pilot:
        bar = app.query_one(TimelineBar)
        calls = [  # the call that used the most tokens is not the slow one
            Event(10, "llm", "slow", {"input_tokens": 10, "output_tokens": 0, "latency_ms": 4000}),
            Event(90, "llm", "big", {"input_tokens": 900, "output_tokens": 100, "latency_ms": 250}),
        ]
        bar.set_events(calls, 100)
        await pilot.pause()
        assert bar.strip == "tokens" and "1,010 in all" in str(bar.border_subtitle)
        assert str(bar.render()).splitlines()[2][bar.column_of(90)] == SPARKS[-1]
        assert bar.cycle_strip() == "latency"
        await pilot.pause()
        strip = str(bar.render()).splitlines()[2]
        assert strip[bar.column_of(10)] == SPARKS[-1]  # the slowest call is the full bar
        assert strip[bar.column_of(90)] == SPARKS[1]
        assert "4.2 s in all, slowest call 4.0 s" in str(bar.border_subtitle)
        assert bar.cycle_strip() == "tokens"  # and back
        # a scripted run spent no tokens but took time: only the latency strip shows it
        bar.set_events([Event(5, "llm", "a", {"latency_ms": 3.5})], 100)
        await pilot.pause()
        assert not bar.has_class("-spends") and not bar.border_subtitle
        bar.cycle_strip()
        await pilot.pause()
        assert bar.has_class("-spends") and bar.size.height == 3
        assert "slowest call 3.5 ms" in str(bar.border_subtitle)


async def test_the_strip_key_is_in_help_and_says_what_it_shows(watched: Session) -> None:
    from debugger.app import DebuggerApp
    from tests.debugger.conftest import SIZE, settle

    app = DebuggerApp(watched)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        said = [str(n.message) for n in app._notifications]
        assert "strip: LLM latency per column" in said
        await pilot.press("question_mark")
        await settle(pilot)
        text = str(app.screen.query_one("#help-text").render())
        assert "Timeline strip: tokens / LLM latency" in text
