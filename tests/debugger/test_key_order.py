"""Keys faster than a person types (a paste into the terminal, `tmux send-keys`, a held key)
are handled in the order they were typed, and the panels' titles keep their counts in a narrow
window."""

from __future__ import annotations

import time

from textual import events
from textual.widgets import Input

from debugger.app import DebuggerApp
from debugger.session import Session
from debugger.widgets.edit_screen import EditScreen
from debugger.widgets.llm_inspector import LLMInspector
from debugger.widgets.messages_panel import MessagesPanel
from debugger.widgets.output_panel import OutputPanel
from tests.debugger.conftest import SIZE, settle


def type_fast(app: DebuggerApp, *keys: str) -> None:
    """Queue every key at once, as a terminal delivers a burst (no waiting between them)."""
    for key in keys:
        app.post_message(events.Key(key, key if len(key) == 1 else None))


async def drain(pilot) -> None:  # noqa: ANN001 - textual.pilot.Pilot
    """Wait until the burst has been handled (each key hops through a few queues)."""
    app = pilot.app
    for _ in range(50):
        await settle(pilot)
        if not app.keys_waiting() and not app._key_ticket:  # noqa: SLF001
            break
    await settle(pilot)


async def test_a_priority_key_waits_for_the_keys_typed_before_it(dice: Session) -> None:
    # `home` is a priority binding (run as the app reads it) and `s` is not (it goes to the
    # focused panel first): `s s s home` ran `home` first and ended three steps in.
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        type_fast(app, "s", "s", "s", "home")
        await drain(pilot)
        assert app.session is not None and app.session.step == app.session.first
        type_fast(app, "home", "s", "s", "g")
        await drain(pilot)
        assert app.session.step == app.session.first + 2
        assert app.command_line.is_open  # `g` came last and opened the prompt
        type_fast(app, "1", "2", "enter")
        await drain(pilot)
        assert app.session.step == 12


async def test_keys_typed_after_e_go_to_the_edit_dialog(dice: Session) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("end", "S")  # the last statement (the end itself takes no edits)
        await settle(pilot)
        type_fast(app, "e", "4", "2")
        await drain(pilot)
        assert isinstance(app.screen, EditScreen)
        field = app.screen.query_one(Input)
        assert field.value == "42"  # typed over the value, which the dialog opens selected
        type_fast(app, "escape", "s", "S")  # the dialog closes; the moves after it are moves
        await drain(pilot)
        assert not isinstance(app.screen, EditScreen)
        assert app.session is not None and app.session.step == app.session.last - 1


async def test_a_burst_still_draws_once(dice: Session) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        before = app.renders
        type_fast(app, *["s"] * 12, "S", "S")
        await drain(pilot)
        assert app.session is not None and app.session.step == 10
        assert app.renders - before <= 3


async def test_panel_titles_keep_their_counts_at_80_columns(dice: Session) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("end")
        await settle(pilot)
        messages = app.query_one(MessagesPanel)
        assert str(messages.border_title).endswith(f"· {len(messages.messages)}")
        lines = len(app.query_one(OutputPanel).lines)
        assert f"{lines} line" in str(app.query_one(OutputPanel).border_title)
        assert "step" in str(app.query_one(LLMInspector).border_title)
        for widget in (messages, app.query_one(OutputPanel), app.query_one(LLMInspector)):
            title = str(widget.border_title)
            assert "…" not in title and len(title) <= widget.outer_size.width - 6
        await pilot.resize_terminal(160, 40)
        await settle(pilot)
        assert str(messages.border_title).startswith("messages · thread ")


async def test_keys_after_enter_in_the_command_line_follow_its_command(dice: Session) -> None:
    # enter's binding posts the line typed, and the command line posts it on as a command:
    # the `s` behind it went into the closing command line, before the goto ran.
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        type_fast(app, "colon", *"goto 7", "enter", "s", "s", "S")
        await drain(pilot)
        assert app.session is not None and app.session.step == 8
        type_fast(app, "g", "3", "enter", "e", "4", "2")
        await drain(pilot)
        assert app.session.step == 3
        assert isinstance(app.screen, EditScreen)
        assert app.screen.query_one(Input).value == "42"


async def test_a_run_that_opens_below_the_fold_shows_its_statement() -> None:
    # The session arrives from the opener's worker, after the first layout: the pane's lines
    # were set and the scroll to line 10 stopped at the bottom of the view before them, so
    # an 80x24 window showed lines 1-8 (no current line) until the first move.
    from debugger.widgets.source_view import SourceView
    from tests.debugger.conftest import PROGRAMS, make_session

    app = DebuggerApp(opener=lambda progress: make_session(PROGRAMS / "below.agency"))
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(100):
            await settle(pilot)
            if app.session is not None:
                break
        view = app.query_one(SourceView)

        def shown() -> bool:
            top = view.scroll_offset.y
            return top < view.current_line <= top + view.scrollable_content_region.height

        # The scroll comes with a refresh after the session: on a loaded machine, some frames
        # later. A view that never scrolls (the bug) still fails, after the deadline.
        deadline = time.monotonic() + 10
        while not shown() and time.monotonic() < deadline:
            await settle(pilot)
        assert view.current_line == 10
        assert shown(), (view.scroll_offset.y, view.scrollable_content_region.height)


async def test_a_key_is_waited_for_while_its_widget_is_there_and_let_go_once_it_is_gone(
    dice: Session,
) -> None:
    # A key stuck on its way up (here: its look up the queues never posted) holds the keys
    # behind it only briefly when its widget went away, and longer while it is still there (a
    # loaded machine may simply be slow to hand it up).
    from textual.widget import Widget

    from debugger import app_keys

    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        start = app.session.step if app.session else 0
        for widget_there in (True, False):
            stuck = Widget()
            await app.screen.mount(stuck)
            app._key_ticket, app._key_target = 1, stuck  # noqa: SLF001
            app._key_since = time.monotonic() - app_keys.KEY_PATIENCE - 0.1  # noqa: SLF001
            type_fast(app, "s")
            await settle(pilot)
            if not widget_there:
                await stuck.remove()
            await app._release_overdue_key()  # noqa: SLF001
            await settle(pilot)  # (not `drain`, which waits while the key is held)
            assert app.keys_waiting() is widget_there
            app._key_since -= app_keys.KEY_LIMIT  # noqa: SLF001
            await app._release_overdue_key()  # noqa: SLF001
            await drain(pilot)
            assert not app.keys_waiting()
        assert app.session is not None and app.session.step == start + 2


async def test_e_right_after_a_goto_edits_the_variable_the_panel_is_about_to_select(
    dice: Session,
) -> None:
    # At the first step no variable is shown; `g 3 enter e` typed at once went to step 3 and
    # said "select a variable": the panel, rebuilt, put its cursor on the first variable only
    # after its next refresh, which came after the `e`.
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("home")
        await settle(pilot)
        assert app.variables.selected is None
        type_fast(app, "g", "3", "enter", "e")
        await drain(pilot)
        assert app.session is not None and app.session.step == 3
        assert isinstance(app.screen, EditScreen)
