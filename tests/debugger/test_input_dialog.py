"""A program's `input()` under the debugger asks in a dialog. It read the terminal's stdin, which
the full-screen app owns: recording such a program (or restoring from a step before an
`input()`, `r`) waited forever at "recording…" / "restoring…", Esc could not stop it (the run
never reached a step boundary), and no branch came."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.widgets import Input

from debugger.app import DebuggerApp
from debugger.opening import record_session
from debugger.session import Session
from debugger.widgets.confirm_screen import ConfirmScreen
from debugger.widgets.input_screen import InputScreen
from runtime.language.program import load_program
from runtime.runs.runner import RunConfig
from runtime.runs.stopping import Stopper
from runtime.vm import builtins_input
from tests.debugger.conftest import SIZE, settle

ASK = """\
node main() {
  let names = []
  for (round in range(2)) {
    const name = input("name ${round}? ")
    names.push(name)
  }
  print(names)
  return names
}
"""


def app_for(tmp_path: Path) -> DebuggerApp:
    path = tmp_path / "ask.agency"
    path.write_text(ASK)
    stopper = Stopper()

    def opener(progress: Callable[[int], None]):  # noqa: ANN202 - a Session
        return record_session(
            load_program(str(path)), RunConfig(quiet=True), None, progress, stopper
        )

    return DebuggerApp(opener=opener, stopper=stopper)


async def dialog(pilot) -> InputScreen:  # noqa: ANN001 - textual Pilot
    """The input dialog, once the worker running the program has asked for it."""
    for _ in range(400):  # the worker asks from its thread: wait for the screen, not a time
        screen = pilot.app.screen
        if isinstance(screen, InputScreen) and isinstance(pilot.app.focused, Input):
            return screen  # mounted, and its field takes the keys
        await pilot.pause(0.05)
    raise AssertionError(f"no input dialog; screens: {pilot.app.screen_stack}")


async def opened(pilot) -> None:  # noqa: ANN001
    for _ in range(400):
        if pilot.app.session is not None and pilot.app._busy is None:
            await settle(pilot)
            return
        await pilot.pause(0.05)
    raise AssertionError("the run never opened")


async def answer_both(pilot, app: DebuggerApp) -> Session:  # noqa: ANN001
    """Answer the program's two input() dialogs ("a", "b") and wait for the run to open."""
    await dialog(pilot)
    await pilot.press("a", "enter")
    await dialog(pilot)
    await pilot.press("b", "enter")
    await opened(pilot)
    assert app.session is not None
    return app.session


async def test_input_asks_in_a_dialog_while_recording(tmp_path: Path) -> None:
    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await dialog(pilot)
        assert "name 0?" in str(screen.query_one("#input-prompt").content)
        await pilot.press("A", "d", "a", "enter")
        await dialog(pilot)
        await pilot.press("escape")  # the end of input: "" for this one
        await opened(pilot)
        s = app.session
        assert s is not None
        assert s.timeline.state_at(s.last).output[-1] == '["Ada",""]'
    assert builtins_input._line_reader is None  # stdin answers again once the app is gone


async def test_restore_before_an_input_asks_again_and_makes_the_branch(tmp_path: Path) -> None:
    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        s = await answer_both(pilot, app)
        asks = [k for k in range(s.length) if s.timeline.location_at(k).line == 4]
        app.run_command(f"goto {asks[-1]}")  # the second input, unchanged
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await dialog(pilot)
        await pilot.press("c", "enter")
        await opened(pilot)
        assert s.branch == 1 and len(s.branches()) == 2
        assert s.timeline.state_at(s.last).output[-1] == '["a","c"]'


async def test_ctrl_c_in_the_dialog_stops_the_run(tmp_path: Path) -> None:
    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await dialog(pilot)
        await pilot.press("ctrl+c")
        await opened(pilot)
        s = app.session
        assert s is not None
        s.goto(s.last)
        assert s.run_status() == "interrupted"  # stopped early (resumable), at the first input
        assert s.location() is not None and s.location().line == 5
        assert not isinstance(app.screen, InputScreen)
        # the reason names the key that was pressed, not Esc
        said = app.status.content.plain + " ".join(str(n.message) for n in app._notifications)
        assert "ctrl+c" in said and "(esc)" not in said


async def test_a_run_stopped_elsewhere_takes_its_dialog_away(tmp_path: Path) -> None:
    # (the run-store size cap, say): the input no longer waits, and its dialog goes
    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await dialog(pilot)
        assert app._stopper is not None
        app._stopper.cancel("stopped: the run store is full")
        await opened(pilot)
        assert not any(isinstance(screen, InputScreen) for screen in app.screen_stack)


async def test_ctrl_c_in_a_restores_dialog_ends_the_work_and_the_branch_is_interrupted(
    tmp_path: Path,
) -> None:
    # r from a step before an input(), then ctrl+c in its dialog: the work line stayed up
    # ("restoring from step …") until the next key, and the stopped branch said "running".
    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        s = await answer_both(pilot, app)
        app.run_command("goto 0")
        await settle(pilot)
        await pilot.press("r", "y")
        await dialog(pilot)
        await pilot.press("ctrl+c")
        await opened(pilot)
        assert s.branch == 1
        assert not app.work_line.busy and not app.work_line.display
        assert s.run_status() == "interrupted"
        assert "running" not in app.status.content.plain
