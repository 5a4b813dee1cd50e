"""Pilot tests: drive every feature of the debugger with keys and clicks, assert on state."""

from __future__ import annotations

import json
from typing import Any

from textual import events

from debugger.app import DebuggerApp
from debugger.session import Session
from debugger.widgets.branch_screen import BranchScreen
from debugger.widgets.call_stack import CallStack
from debugger.widgets.edit_screen import EditScreen
from debugger.widgets.help_screen import HelpScreen
from debugger.widgets.llm_inspector import LLMInspector
from debugger.widgets.messages_panel import MessagesPanel
from debugger.widgets.output_panel import OutputPanel
from debugger.widgets.source_view import SourceView
from debugger.widgets.status_line import StatusLine
from debugger.widgets.variables_panel import VariablesPanel
from tests.debugger.conftest import ROOT, SIZE, make_session, screen_text, settle


def errors(app: DebuggerApp) -> list[str]:
    return [n.message for n in app._notifications if n.severity == "error"]


def watch_errors(app: DebuggerApp) -> list[str]:
    """Every error the app reports from now on. Notifications expire after a few seconds, which
    a slow (loaded) machine can exceed within one test, so count them as they are posted."""
    seen: list[str] = []
    notify = app.notify

    def recording(message: str, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("severity") == "error":
            seen.append(str(message))
        notify(message, *args, **kwargs)

    app.notify = recording  # type: ignore[method-assign]
    return seen


def select_variable(app: DebuggerApp, name: str) -> None:
    tree = app.query_one(VariablesPanel)
    for line in range(tree.last_line + 1):
        node = tree.get_node_at_line(line)
        if (
            node is not None
            and node.data is not None
            and node.data.name == name
            and not node.data.path
        ):
            tree.cursor_line = line
            return
    raise AssertionError(f"no variable {name} on screen")


async def type_text(pilot, text: str) -> None:  # noqa: ANN001
    await pilot.press(*[c if c != " " else "space" for c in text])


async def prompt(pilot, key: str, text: str) -> None:  # noqa: ANN001
    """Open the command line with `key`, fill it in (typing is slow under Pilot), press enter."""
    await pilot.press(key)
    pilot.app.query_one("#command-input").value = text
    await pilot.press("enter")
    await settle(pilot)


async def test_opens_at_step_zero_and_steps_both_ways(dice: Session) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.session.step == 0
        assert app.query_one(SourceView).current_line == 2
        await pilot.press("s", "right", "s")
        assert app.session.step == 3
        await pilot.press("S", "left")
        assert app.session.step == 1
        await pilot.press("left", "left")
        assert app.session.step == 0
        await pilot.press("end")
        await settle(pilot)
        assert app.session.step == len(dice.timeline) - 1
        status = str(app.query_one(StatusLine).content)
        assert f"step {app.session.step}/{app.session.step}" in status and "finished" in status
        assert app.query_one(OutputPanel).lines[-1] == "Good roll: 5 after 1 rolls"


async def test_key_repeats_collapse_into_one_redraw(dice: Session) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        before = app.renders
        for _ in range(10):
            app.post_message(events.Key("s", "s"))
        await settle(pilot)
        assert app.session.step == 10
        assert app.renders - before < 10


async def test_next_and_reverse_next_step_over_calls(calls: Session) -> None:
    app = DebuggerApp(calls)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.run_command("goto 3")  # let total = add(counter, 2)
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        assert app.session.step == 6 and app.query_one(SourceView).current_line == 12
        await pilot.press("N")
        await settle(pilot)
        assert app.session.step == 3
        await pilot.press("s")  # into add()
        await settle(pilot)
        assert app.session.selected_frame().scope == "add"


async def test_continue_to_debugger_statement_breakpoints_and_ends(calls: Session) -> None:
    app = DebuggerApp(calls)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        assert app.session.step == 8 and "after llm" in app.session.message  # on debugger()
        await pilot.press("c")
        await settle(pilot)
        assert app.session.step == len(calls.timeline) - 1
        await pilot.press("C")
        await settle(pilot)
        assert app.session.step == 8
        await pilot.press("C")
        await settle(pilot)
        assert app.session.step == 0
        app.run_command("break 4")
        await settle(pilot)
        assert app.query_one(SourceView).breakpoints == frozenset({4})
        await pilot.press("c")
        await settle(pilot)
        assert app.session.step == 4 and "breakpoint" in app.session.message
        # b toggles the breakpoint on the current line
        await pilot.press("b")
        await settle(pilot)
        assert app.session.breakpoints == set()


async def test_breakpoint_by_clicking_the_gutter(calls: Session) -> None:
    app = DebuggerApp(calls)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        # the source pane has a border: line 4 is row 4, the gutter starts at column 1
        await pilot.click(SourceView, offset=(2, 4))
        await settle(pilot)
        assert app.session.breakpoint_lines() == {4}
        assert 4 in app.query_one(SourceView).breakpoints


async def test_llm_calls_previous_and_next(dice: Session) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("]")
        await settle(pilot)
        assert app.session.step == 3
        await pilot.press("]", "]")
        await settle(pilot)
        assert app.session.step == 17
        await pilot.press("[")
        await settle(pilot)
        assert app.session.step == 10
        inspector = str(app.query_one(LLMInspector)._body.content)
        assert "Generate a random integer" in inspector and "value 1" in inspector


async def test_go_to_step_with_g(dice: Session) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await type_text(pilot, "12")
        await pilot.press("enter")
        await settle(pilot)
        assert app.session.step == 12
        await prompt(pilot, "g", "nope")
        assert app.session.step == 12 and any("not a step" in e for e in errors(app))
        await prompt(pilot, "g", "999")
        assert app.session.step == 12 and any("outside the run" in e for e in errors(app))


async def test_search_the_timeline(dice: Session) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await prompt(pilot, "/", "Bad roll")
        first = app.session.step
        assert app.query_one(OutputPanel).lines[-1] == "Bad roll, rolling back..."
        await pilot.press("f3")
        await settle(pilot)
        assert app.session.step > first
        await prompt(pilot, "/", "zebra")
        assert any("zebra" in e for e in errors(app))


async def test_why_jumps_to_the_last_write(dice: Session) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.run_command("goto 19")
        await settle(pilot)
        select_variable(app, "result")
        await pilot.press("y")
        await settle(pilot)
        assert app.session.step == 18
        assert app.session.state().frames[-1].locals["result"] == 5


async def test_edit_a_local_and_restore_from_here_makes_a_branch(calls: Session) -> None:
    app = DebuggerApp(calls)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.run_command("goto 8")  # answer = 4, counter = 1
        await settle(pilot)
        select_variable(app, "answer")
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, EditScreen)
        app.screen.query_one("Input").value = "10"
        await pilot.press("enter")
        await settle(pilot)
        assert app.session.edits.locals == {"answer": 10}
        assert "staged" in str(app.query_one(StatusLine).content)
        await pilot.press("r")
        await settle(pilot)
        assert app.session.branch == 1
        assert [b.id for b in app.session.branches()] == [0, 1]
        await pilot.press("end")
        await settle(pilot)
        assert app.query_one(OutputPanel).lines == ["counter is 11"]
        # the old branch stays: switch back with the branch list
        await pilot.press("B")
        await settle(pilot)
        assert isinstance(app.screen, BranchScreen)
        await pilot.press("home", "enter")
        await settle(pilot)
        assert app.session.branch == 0
        await pilot.press("end")
        await settle(pilot)
        assert app.query_one(OutputPanel).lines == ["counter is 5"]


async def test_set_command_line(calls: Session) -> None:
    app = DebuggerApp(calls)
    reported = watch_errors(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.run_command("goto 8")
        await settle(pilot)
        await pilot.press("colon")
        await type_text(pilot, "set x =")  # typed, as a person would
        await pilot.press("enter")
        await settle(pilot)
        for bad in ("set counter =", "set counter = oops", "set = 3", "set nobody = 1"):
            await prompt(pilot, "colon", bad)
            assert app.session.edits is None, bad
        assert len(reported) == 5
        await prompt(pilot, "colon", 'set items[1].name = "y"')
        assert app.session.edits.locals == {"items": [1, {"name": "y"}]}
        app.run_command("set limit = 3")
        await settle(pilot)
        assert app.session.edits.globals == {"limit": 3}
        app.run_command("discard")
        await settle(pilot)
        assert app.session.edits is None


async def test_select_a_frame_in_the_call_stack(calls: Session) -> None:
    app = DebuggerApp(calls)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.run_command("goto 5")  # inside add()
        await settle(pilot)
        assert app.query_one(VariablesPanel).border_title == "variables · add"
        stack = app.query_one(CallStack)
        stack.focus()
        await pilot.press("down", "enter")  # #1 main
        await settle(pilot)
        assert app.session.selected_frame().scope == "main"
        assert app.query_one(VariablesPanel).border_title == "variables · main"
        assert app.query_one(SourceView).current_line == 11  # the pending call in main


async def test_edit_an_llm_answer_and_a_message(calls: Session) -> None:
    app = DebuggerApp(calls)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("]")
        await settle(pilot)
        assert app.session.step == 7
        app.query_one(LLMInspector).focus()
        await pilot.press("e")
        await settle(pilot)
        app.screen.query_one("Input").value = "9"
        await pilot.press("enter")
        await settle(pilot)
        messages = app.query_one(MessagesPanel)
        messages.focus()
        messages.highlighted = 0
        await pilot.press("e")
        await settle(pilot)
        assert app.screen.query_one("Input").value == "Pick a number"
        app.screen.query_one("Input").value = "Pick a big number"
        await pilot.press("enter")
        await settle(pilot)
        assert app.session.edits.as_dict()["llm_answer"] == 9
        assert app.session.edits.messages == {0: "Pick a big number"}
        await pilot.press("r")
        await settle(pilot)
        assert app.session.branch == 1
        await pilot.press("end")
        await settle(pilot)
        assert app.query_one(OutputPanel).lines == ["counter is 10"]


async def test_an_answer_that_asked_for_a_tool_edited_is_what_the_branch_goes_on_with() -> None:
    # examples/tools.agency: the model asks for `add`, then says 9. Answering 12 in place of
    # the tool call makes a branch where add never runs and the program prints 12 (the edit
    # was staged, and the branch went on through the tool round as if nothing was changed).
    tools = make_session(ROOT / "examples" / "tools.agency", ROOT / "examples" / "tools.mocks.json")
    app = DebuggerApp(tools)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("]")
        await settle(pilot)
        app.query_one(LLMInspector).focus()
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, EditScreen)
        assert "it asked for add" in screen_text(app)
        app.screen.query_one("Input").value = "12"
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        assert app.session.branch == 1
        await pilot.press("end")
        await settle(pilot)
        assert app.query_one(OutputPanel).lines == ["the model says 12"]
        assert app.session.variables().outcome["result"] == 12


async def test_write_a_checkpoint_and_open_it(calls: Session, tmp_path) -> None:
    app = DebuggerApp(calls)
    target = tmp_path / "cp.json"
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.run_command("goto 8")
        await settle(pilot)
        await pilot.press("w")
        field = app.query_one("#command-input")
        assert field.value.endswith(".step8.checkpoint.json")
        field.value = str(target)
        await pilot.press("enter")
        await settle(pilot)
        data = json.loads(target.read_text())
        assert data["format"] == "agency-checkpoint" and data["step"] == 8
        # a missing checkpoint file: a message, nothing changes
        run_id = app.session.timeline.run_id
        app.run_command(f"open {tmp_path / 'missing.json'}")
        await settle(pilot)
        assert any("no such checkpoint file" in e for e in errors(app))
        assert app.session.timeline.run_id == run_id
        # the saved one opens as a new run continued from it
        app.run_command(f"open {target}")
        await settle(pilot)
        assert app.session.timeline.run_id != run_id
        assert app.session.step == app.session.first >= 8  # steps go on from the checkpoint
        await pilot.press("end")
        await settle(pilot)
        assert app.query_one(OutputPanel).lines == ["counter is 5"]


async def test_opening_hostile_checkpoint_files_leaves_the_app_as_it_was(
    calls: Session, tmp_path
) -> None:
    # A file nested past the recursion limit ended the app from its worker; a directory was
    # called "no such checkpoint file".
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    half = tmp_path / "half.json"
    half.write_text('{"format": "agency-checkpoint", "version": 1, "stack": [')
    app = DebuggerApp(calls)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        seen = watch_errors(app)
        run_id = app.session.timeline.run_id
        for path, needle in (
            (deep, "nested too deeply"),
            (half, "truncated checkpoint JSON"),
            (tmp_path, "Is a directory"),
        ):
            app.run_command(f"open {path}")
            await settle(pilot)
            assert app.is_running
            assert any(needle in e for e in seen), seen
            assert app.session.timeline.run_id == run_id


async def test_a_bug_in_long_work_is_one_line_and_the_app_stays(
    calls: Session, monkeypatch: Any
) -> None:
    # Whatever a worker raises that no layer foresaw ends that work, not the debugger.
    import threading

    trace = calls.trace

    def broken(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is threading.main_thread():
            return trace(*args, **kwargs)  # the command is checked at once, in the app
        raise ZeroDivisionError("boom")  # the scan, in a worker

    monkeypatch.setattr(calls, "trace", broken)
    app = DebuggerApp(calls)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        seen = watch_errors(app)
        await pilot.press("right", "right")
        app.run_command("trace x")
        await settle(pilot)
        assert app.is_running
        assert any("internal error: ZeroDivisionError: boom" in e for e in seen), seen
        assert any("agency-crash-" in e for e in seen), seen
        await pilot.press("right")  # still answering
        await settle(pilot)
        assert app.session.step == 3


async def test_timeline_click_and_drag(dice: Session) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        bar = app.timeline_bar
        width = bar.content_size.width
        await pilot.click("#timeline", offset=(2 + width - 1, 2))
        await settle(pilot)
        assert app.session.step == len(dice.timeline) - 1
        await pilot.click("#timeline", offset=(2 + width // 2, 2))
        await settle(pilot)
        assert 8 <= app.session.step <= 12


async def test_interrupt_is_answered_and_the_run_goes_on(interrupted: Session) -> None:
    app = DebuggerApp(interrupted)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        assert app.session.step == 2 and "interrupt" in app.session.message
        assert "waiting on interrupt: Pay?" in str(app.query_one(StatusLine).content)
        app.run_command("resolve nope")
        await settle(pilot)
        assert any("only literal values" in e for e in errors(app))
        app.run_command("resolve 7")
        await settle(pilot)
        await pilot.press("end")
        await settle(pilot)
        assert app.session.state().status == "finished"
        assert app.query_one(OutputPanel).lines == ["paid 7"]


async def test_help_lists_every_binding(dice: Session) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-text").content)
        for binding in DebuggerApp.BINDINGS:
            assert binding.description in text
        assert ":set NAME = VALUE" in text
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, HelpScreen)


async def test_every_binding_has_a_description_and_an_id() -> None:
    ids = [b.id for b in DebuggerApp.BINDINGS]
    assert all(b.description for b in DebuggerApp.BINDINGS)
    assert all(ids) and len(set(ids)) == len(ids)


async def test_palette_offers_the_hidden_verbs(dice: Session) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for binding in DebuggerApp.BINDINGS:
            if not binding.show and binding.action not in ("cancel_work",):
                assert binding.description in titles


async def test_unknown_command_and_busy_guard(dice: Session) -> None:
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.run_command("frobnicate")
        await settle(pilot)
        assert any("unknown command" in e for e in errors(app))
        app._begin("pretend work")
        await pilot.press("s")
        await settle(pilot)
        assert app.session.step == 0
        app._end()


async def test_long_scans_run_in_a_worker_with_progress(calls: Session, monkeypatch) -> None:
    import debugger.app as app_module

    monkeypatch.setattr(app_module, "SYNC_SCAN_SECONDS", -1.0)  # every scan is "long"
    app = DebuggerApp(calls)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("c")
        assert app.work_line.busy or app.session.step == 8  # visible while it runs
        await settle(pilot)
        assert app.session.step == 8 and not app.work_line.busy
        await pilot.press("N")
        await settle(pilot)
        assert app.session.step == 6  # over the LLM call (step 7 is inside its prelude frame)


async def test_expandable_values_and_changed_marks(calls: Session) -> None:
    app = DebuggerApp(calls)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.run_command("goto 3")  # `items` was just written
        await settle(pilot)
        tree = app.query_one(VariablesPanel)
        select_variable(app, "items")
        node = tree.cursor_node
        assert "●" in str(node.label)  # written by the step that led here
        await pilot.press("space")
        await settle(pilot)
        children = [child.data for child in node.children]
        assert [c.path for c in children] == [(0,), (1,)]
        assert children[1].value == {"name": "x"}
        app.run_command("goto 6")  # back in main after add(): the tree is rebuilt
        await settle(pilot)
        select_variable(app, "items")  # and keeps the object open
        assert tree.cursor_node.is_expanded
        assert "●" not in str(tree.cursor_node.label)


async def test_themes_and_no_color(dice: Session, monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("right_square_bracket")
        await settle(pilot)
        plain = app.export_screenshot()
        for theme in ("textual-light", "nord", "gruvbox"):
            app.theme = theme
            await settle(pilot)
            assert app.export_screenshot()
        assert app.session.step == 3 and app.no_color and "<svg" in plain


async def test_the_timeline_marks_where_a_branch_left_this_one(dice: Session) -> None:
    # after a restore and a switch back to branch 0, its timeline showed no sign of branch 1
    app = DebuggerApp(dice)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.run_command("goto 4")
        app.run_command("set result = 6")
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        assert app.session.branch == 1
        app.run_command("branch 0")
        await settle(pilot)
        assert app.session.branch == 0
        bar = app.timeline_bar
        glyph, _ = bar._marker_row()[bar.column_of(4)]  # noqa: SLF001
        assert glyph == "⎇"
