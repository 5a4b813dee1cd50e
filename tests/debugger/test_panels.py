"""Pilot tests of what the panels and the status line show, each a key sequence that once showed
the wrong thing (found by driving the debugger by hand under tmux)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len

from debugger.app import DebuggerApp
from debugger.session import Session
from debugger.widgets.call_stack import NO_FRAMES
from debugger.widgets.output_panel import OutputPanel, wrap_words
from debugger.widgets.source_view import SourceView
from debugger.widgets.status_line import StatusLine
from tests.debugger.conftest import PROGRAMS, SIZE, make_session, screen_text, settle


async def test_output_follows_to_the_end_after_a_jump() -> None:
    # End from step 0 of a run that printed 200 lines showed lines 0..8, not the last ones
    app = DebuggerApp(make_session(PROGRAMS / "printer.agency"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("end")
        await settle(pilot)
        output = app.query_one(OutputPanel)
        assert len(output.lines) == 200
        assert "line 199" in screen_text(app)
        await pilot.press("home", "end")
        await settle(pilot)
        assert "line 199" in screen_text(app)


async def test_answering_an_interrupt_says_where_the_run_went(interrupted: Session) -> None:
    # c, then :approve: the status line kept "— end of the run" at step 2 of 5
    app = DebuggerApp(interrupted)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        app.run_command("approve")
        await settle(pilot)
        status = str(app.query_one(StatusLine).content)
        assert "end of the run" not in status
        assert f"the run went on to step {app.session.last}" in status


async def test_a_narrow_terminal_keeps_the_interrupt_hint_and_dialogs_fit(
    interrupted: Session,
) -> None:
    # 80x24: the status line cut off "(:approve / :reject)"; help and branches overflowed
    app = DebuggerApp(interrupted)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("end")
        await settle(pilot)
        status_row = screen_text(app).splitlines()[-1 - app.status.size.height]  # its first row
        assert "interrupted" in status_row and ":approve / :reject" in status_row
        assert app.query_one("#source").size.height >= 8  # the source keeps some room
        for key in ("question_mark", "B"):
            await pilot.press(key)
            await settle(pilot)
            box = app.screen.children[0]
            assert box.outer_size.width <= 80, key
            await pilot.press("escape")
            await settle(pilot)


async def test_the_work_line_offers_esc_only_for_work_that_stops(dice: Session) -> None:
    # a restore (or recording, or a search) said "(esc cancels)" and esc then refused
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app._begin("restoring from step 0")
        assert "esc" not in str(app.work_line.query_one("#work-label").content)
        await pilot.press("s")
        assert "esc cancels" not in list(app._notifications)[-1].message
        app._end()
        app._begin("continue", cancellable=True)
        assert "esc cancels" in str(app.work_line.query_one("#work-label").content)
        app._end()


async def test_why_on_the_runs_result_is_not_a_local_of_that_name(dice: Session) -> None:
    # end, y: the cursor was on the run's `result` and y jumped to the write of local `result`
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("end")
        await settle(pilot)
        assert app.variables.selected is not None and app.variables.selected.kind == "run"
        await pilot.press("y")
        await settle(pilot)
        assert app.session.step == app.session.last
        assert any("not a variable" in n.message for n in app._notifications)


async def test_the_end_step_keeps_the_last_frames_locals(dice: Session) -> None:
    # end: the variables panel showed only the run's result, the locals were gone
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("end")
        await settle(pilot)
        shown = app.session.variables()
        assert shown.outcome is not None and shown.scope == "main"
        assert shown.locals["counter"] == 1 and shown.locals["result"] == 5
        text = screen_text(app)
        assert "▼ run" in text and "counter = 1" in text and "result = 5" in text


async def test_a_run_paused_on_an_interrupt_is_not_running(interrupted: Session) -> None:
    # end of a run waiting on an interrupt: the status said "running"
    app = DebuggerApp(interrupted)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("end")
        await settle(pilot)
        status = str(app.query_one(StatusLine).content)
        assert "interrupted" in status and "running" not in status
        await pilot.press("home")
        await settle(pilot)
        status = str(app.query_one(StatusLine).content)  # what the run is, at any step
        assert "run interrupted" in status and "running" not in status


async def test_a_failed_go_to_clears_the_last_moves_reason(dice: Session) -> None:
    # end, then g 999: "— end of the run" stayed beside the error, as if the go-to had moved
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("end")
        await settle(pilot)
        assert "end of the run" in str(app.query_one(StatusLine).content)
        app.run_command("goto 999")
        await settle(pilot)
        assert "end of the run" not in str(app.query_one(StatusLine).content)
        assert any("outside the run" in n.message for n in app._notifications)


async def test_a_long_status_line_drops_the_step_budget_before_the_cost() -> None:
    from textual.app import App, ComposeResult

    from runtime.record.views import StateView, Usage

    class Line(App[None]):
        def compose(self) -> ComposeResult:
            yield StatusLine(id="status")

    app = Line()
    async with app.run_test(size=(120, 3)) as pilot:
        line = app.query_one(StatusLine)
        state = StateView(9, 1, None, (), {}, {}, "0", (), Usage(91, 18, 0.0123))
        reason = "restored from step 9: branch 1 (again)"
        line.show(state, 20, reason, max_steps=1_000_000)  # 122 cells: one too many
        await pilot.pause()
        assert line.content.cell_length > line.content_size.width
        shown = str(line.render())
        assert "cost $0.0123" in shown and reason in shown and "max 1,000,000" not in shown
        line.show(state, 20, reason + " " + "x" * 40, max_steps=1_000_000)  # far too long
        await pilot.pause()
        shown = str(line.render())
        assert "cost" not in shown and reason in shown  # then the figures go too
        line.show(state, 20, "ok", max_steps=1_000_000)  # it fits: all of it
        await pilot.pause()
        assert "max 1,000,000" in str(line.render()) and "cost" in str(line.render())


WIDE = PROGRAMS / "wide.agency"


async def test_a_statement_past_the_right_edge_of_the_source_is_scrolled_into_view() -> None:
    # Line 3 holds nine statements, the last far past an 80-column terminal's source panel:
    # stepping to it shows it (and the line numbers still), stepping on to a short line
    # scrolls back.
    app = DebuggerApp(make_session(WIDE))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        source = app.query_one(SourceView)
        for _ in range(8):
            await pilot.press("s")
            await settle(pilot)
        assert app.session.shown_location().line == 3
        assert app.session.shown_location().col > 80
        text = screen_text(app)
        assert "let far = a + b" in text
        assert "    3 ▶" in text  # the gutter stays when the code moves across
        assert source.scroll_offset.x > 0
        await pilot.press("s")
        await settle(pilot)
        assert app.session.shown_location().line == 4
        assert source.scroll_offset.x == 0
        assert "print(" in screen_text(app)


async def test_a_printed_line_wider_than_the_output_panel_wraps() -> None:
    # The output panel takes no focus and shows no horizontal scrollbar: a line cut at its
    # edge could not be read. It wraps, and after a resize it wraps again at the new width.
    app = DebuggerApp(make_session(WIDE))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("end")
        await settle(pilot)
        output = app.query_one(OutputPanel)
        assert output.lines[-1] == "short"
        shown = _panel_text(app, output)
        assert shown[-1] == "short"  # the last line stays in view under the wrapped one
        # wrapped between words, none cut (rows are shown without their trailing spaces)
        assert all(row.split() for row in shown[:-1])
        assert " ".join(shown[:-1]).endswith("日本語 and then its end is here")
        rows = output.virtual_size.height
        await pilot.resize_terminal(160, 40)
        await settle(pilot)
        assert output.virtual_size.height < rows
        assert " ".join(_panel_text(app, output)).endswith("its end is here short")


@given(
    st.text(alphabet=st.sampled_from(["a", "b", " ", "é", "日", "😀"]), max_size=60),
    st.integers(1, 12),
)
def test_wrapped_rows_are_the_line_in_order_none_wider_than_the_panel(
    line: str, width: int
) -> None:
    rows = wrap_words(line, width)
    assert "".join(rows) == line
    assert all(cell_len(row) <= width or len(row) == 1 for row in rows)  # (or one wide char)
    assert all(rows[:-1])  # no empty row but the only one of an empty line


def _panel_text(app: DebuggerApp, panel: OutputPanel) -> list[str]:
    """The rows a panel shows, as a person reads them (trailing blanks and its scrollbar off)."""
    region = panel.scrollable_content_region
    rows = screen_text(app).split("\n")[region.y : region.bottom]
    shown = [_cells(row, region.x, region.right).rstrip("▁▂▃▄▅▆▇█ ") for row in rows]
    return [row for row in shown if row]


def _cells(row: str, start: int, end: int) -> str:
    """The characters of `row` in its cells `start` to `end` (a wide character takes two)."""
    out, at = [], 0
    for ch in row:
        if start <= at < end:
            out.append(ch)
        at += cell_len(ch)
    return "".join(out)


async def test_a_notification_stays_clear_of_a_status_line_of_several_rows(dice: Session) -> None:
    # Toasts sat two rows up, fixed: over the first rows of a status line that wrapped (the
    # reason for the last move, a cancelled run's resume command) while they showed.
    app = DebuggerApp(dice)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        dice.message = "a reason long enough to wrap the status line onto more rows " * 2
        app._refresh_view()
        await settle(pilot)
        status = app.query_one(StatusLine)
        assert status.region.height >= 3
        app.notify("something to say")
        await settle(pilot)
        await pilot.pause(0.3)  # the toast slides in
        toasts = list(app.screen.query("Toast"))
        assert toasts
        assert all(t.region.bottom <= status.region.y for t in toasts), (
            [t.region for t in toasts],
            status.region,
        )
        dice.message = ""
        app._refresh_view()
        await settle(pilot)
        assert status.region.height == 1
        app.notify("something else")
        await settle(pilot)
        await pilot.pause(0.3)
        assert all(t.region.bottom <= status.region.y for t in app.screen.query("Toast"))


async def test_the_call_stack_says_so_when_the_program_has_ended(dice: Session) -> None:
    # end of a finished run: the call stack panel was blank, as if it had failed to draw
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("end")
        await settle(pilot)
        assert not app.session.state().frames
        assert NO_FRAMES in screen_text(app)
        await pilot.press("S")
        await settle(pilot)
        text = screen_text(app)
        assert NO_FRAMES not in text and "#0 main" in text


async def test_a_short_terminal_keeps_the_source_in_view(dice: Session) -> None:
    # 40x10: the messages, output and LLM panels and the timeline's border took every row
    # and not one line of the source showed; they give way to it below 17 rows.
    app = DebuggerApp(dice)
    async with app.run_test(size=(40, 10)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        rows = screen_text(app).splitlines()
        current = next((row for row in rows if "3 ▶" in row), None)
        assert current is not None, rows
        assert "? Help" in rows[-1] and any("step 1/" in row for row in rows)
        for size, shown in (((80, 14), False), ((80, 24), True), ((40, 10), False)):
            await pilot.resize_terminal(*size)
            await settle(pilot)
            text = screen_text(app)
            assert "3 ▶" in text and "? Help" in text, size
            assert ("nothing printed yet" in text) is shown, size


async def test_the_call_stack_title_counts_the_frames() -> None:
    # 300 frames of a recursion looked like the dozen the panel had room for
    session = make_session(PROGRAMS / "deep.agency")
    app = DebuggerApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.run_command("goto 50%")
        await settle(pilot)
        frames = len(app.session.state().frames)
        assert frames > 100
        assert app.stack.border_title == f"call stack · {frames} frames"
        await pilot.resize_terminal(60, 24)  # narrower: the count stays
        await settle(pilot)
        assert str(frames) in str(app.stack.border_title)


async def test_an_opened_long_list_says_how_many_items_it_leaves_out() -> None:
    # xs = range(1200) opened to items 0..499 and nothing said there were 700 more
    from debugger.widgets.variables_panel import MAX_CHILDREN

    app = DebuggerApp(make_session(PROGRAMS / "long_list.agency"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.run_command("goto 2")
        await settle(pilot)
        tree = app.variables
        for _ in range(6):
            if tree.selected is not None and tree.selected.name == "xs":
                break
            await pilot.press("down")
        await pilot.press("space")
        await settle(pilot)
        node = tree.cursor_node
        assert node is not None and len(node.children) == MAX_CHILDREN + 1
        assert str(node.children[-1].label).startswith(f"… {1200 - MAX_CHILDREN:,} more")
        assert node.children[-1].data is None  # not a value: e, y and z say to pick one


async def test_y_and_z_at_a_step_without_variables_say_there_are_none(dice: Session) -> None:
    # step 0 of dice has no variable yet: "select a variable ... first" sent people looking
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not app.variables.has_variables
        for key in ("y", "z"):
            await pilot.press(key)
            await settle(pilot)
        said = [str(n.message) for n in app._notifications]  # noqa: SLF001
        assert sum("no variables at this step" in m for m in said) == 2, said
        await pilot.press("s", "s")
        await settle(pilot)
        assert app.variables.has_variables


def test_a_long_prompt_shows_its_first_and_last_messages_each_cut_short() -> None:
    # A 400-call conversation's prompt was drawn whole at every call: ~0.6 s a keypress
    from debugger.widgets.llm_inspector import FIRST, LAST, MAX_CHARS, describe_call

    messages = [{"role": "user", "content": f"message {i}"} for i in range(100)]
    messages[-1]["content"] = "long " + "x" * (3 * MAX_CHARS)
    call = {"step": 7, "request": {"messages": messages}, "response": {"text": "ok"}}
    text = describe_call(call, 7).plain
    shown = [f"message {i}\n" in text for i in range(100)]
    assert shown[:FIRST] == [True] * FIRST and not any(shown[FIRST : 100 - LAST])
    assert all(shown[100 - LAST : 99])
    assert f"… {100 - FIRST - LAST} more messages" in text
    assert "long " + "x" * (MAX_CHARS - 5) + "…\n" in text
    short = describe_call({**call, "request": {"messages": messages[:5]}}, 7).plain
    assert "more messages" not in short and all(f"message {i}\n" in short for i in range(4))


async def test_the_messages_panel_shows_a_thread_again_with_its_edits_as_they_are() -> None:
    # Options are kept from one thread shown to the next (a thread that grew by a call costs
    # its new messages); an edit staged or dropped still changes what its message shows.
    from textual.app import App, ComposeResult

    from debugger.widgets.messages_panel import MessagesPanel
    from runtime.record.views import Message

    thread = tuple(Message("user" if i % 2 else "assistant", f"text {i}") for i in range(6))

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield MessagesPanel()

    def texts(panel: MessagesPanel) -> list[str]:
        return [str(panel.get_option_at_index(i).prompt) for i in range(panel.option_count)]

    async with Host().run_test(size=(80, 20)) as pilot:
        panel = pilot.app.query_one(MessagesPanel)
        panel.show("0", thread[:4], {})
        first = panel.get_option_at_index(0)
        panel.show("0", thread, {})
        assert panel.get_option_at_index(0) is first  # made once
        assert [t.split()[-1] for t in texts(panel)] == [str(i) for i in range(6)]
        panel.show("0", thread, {2: "changed"})
        assert "✎" in texts(panel)[2] and texts(panel)[2].endswith("changed")
        panel.show("0", thread[:3], {})
        assert texts(panel)[2].endswith("text 2") and "✎" not in texts(panel)[2]
        panel.show("0", thread, {1: "staged as it grew"})  # grown, and an earlier one edited
        assert len(texts(panel)) == 6 and texts(panel)[1].endswith("staged as it grew")
        panel.show("0", thread[:2], {})
        panel.show("0", thread, {})
        assert [t.split()[-1] for t in texts(panel)] == [str(i) for i in range(6)]


async def test_a_thread_cut_back_draws_as_the_same_thread_shown_afresh() -> None:
    # A step back past a call cuts the options shown (keeping what Textual measured of the
    # others) rather than setting them anew: through threads growing and shrinking by turns,
    # the panel must draw just as it does once given the same options from scratch.
    import random

    from textual.app import App, ComposeResult
    from textual.geometry import Region

    from debugger.widgets.messages_panel import MessagesPanel
    from runtime.record.views import Message

    rng = random.Random(5)
    thread = tuple(
        Message(
            rng.choice(["user", "assistant", "tool"]), " ".join(["word"] * rng.randrange(1, 40))
        )
        for _ in range(40)
    )

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield MessagesPanel()

    async def drawn(panel: MessagesPanel) -> tuple[object, ...]:
        pages = []
        for y in (0, panel.max_scroll_y):  # its top and its end
            panel.scroll_to(y=y, animate=False, immediate=True)
            await pilot.pause()
            pages.append([s.text for s in panel.render_lines(Region(0, 0, *panel.size))])
        return (panel.virtual_size, panel.highlighted, pages)

    async with Host().run_test(size=(60, 20)) as pilot:
        panel = pilot.app.query_one(MessagesPanel)
        # Growing and shrinking by turns, to lengths past the panel's height and within it.
        lengths = [rng.randrange(1, len(thread) + 1) for _ in range(8)]
        cuts = 0
        for n in [x for pair in zip(sorted(lengths), sorted(lengths)[::-1]) for x in pair]:
            before = list(panel.options)
            panel.show("0", thread[:n], {})
            cuts += 0 < n < len(before) and list(panel.options) == before[:n]
            await pilot.pause()
            got = await drawn(panel)
            assert panel.option_count == n
            panel.set_options(list(panel.options))  # Textual's own way: every option measured
            panel.highlighted = got[1]
            await pilot.pause()
            assert got == await drawn(panel), n
        assert cuts >= 4  # (the sequence did step back past calls)


async def test_z_on_the_llm_panel_shows_the_whole_call() -> None:
    # The panel cuts a long prompt short; z with it focused shows the call whole, to read or save
    from debugger.widgets.llm_inspector import LLMInspector
    from debugger.widgets.value_screen import ValueScreen
    from tests.debugger.conftest import ROOT

    tools = make_session(ROOT / "examples" / "tools.agency", ROOT / "examples" / "tools.mocks.json")
    app = DebuggerApp(tools)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one(LLMInspector).focus()
        await pilot.press("z")
        await settle(pilot)
        assert not isinstance(app.screen, ValueScreen)  # no call yet at step 0
        await pilot.press("]")
        await settle(pilot)
        app.query_one(LLMInspector).focus()
        await pilot.press("z")
        await settle(pilot)
        assert isinstance(app.screen, ValueScreen)
        assert "LLM call at step" in screen_text(app) and '"messages"' in app.screen.text
        assert app.screen.save_as.endswith(".llm.json")
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, ValueScreen)
