"""Provides `Commands`, what the app does for each `:` command line (`run_command` and the
`cmd_<name>` handlers the `debugger.commands.COMMANDS` table names): moving, breakpoints,
edits and restores, checkpoints, interrupts, and the reading commands (`:print`, `:trace`,
`:watch`, `:watchpoint`, `:unwatch`, `:breaks`, `:diff`).

A part of `DebuggerApp` (its methods take the app as `self`); the session does the work, these
show it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from textual import work
from textual.worker import get_current_worker

from debugger.app_parts import AppCore
from debugger.commands import parse_command
from debugger.errors import SessionError
from debugger.widgets.list_screen import ListScreen
from runtime.runs.stopping import Stopper


class AppForCommands(AppCore, Protocol):
    """What `Commands` needs from the rest of `DebuggerApp`."""

    def _indexed(self, fn: Callable[[], object]) -> None: ...
    def _stage(self, edit: Callable[[str], str], text: str) -> None: ...
    def action_restore(self) -> None: ...
    def action_help(self) -> None: ...


if TYPE_CHECKING:
    from textual.app import App

    class _App(App[None], AppForCommands):
        """Textual's app plus the rest of `DebuggerApp`, as the part sees it."""

else:
    _App = object


class Commands(_App):
    """The `:` command handlers of `DebuggerApp`."""

    # Kept by the app, written here too (declared here so the types are the app's).
    _stopper: Stopper | None
    _events_key: tuple[Any, ...]

    # -- the command line ----------------------------------------------------------------------

    def run_command(self, text: str) -> None:
        """Run one `:` command line (also the entry point for scripts and tests)."""
        try:
            parsed = parse_command(text)
        except SessionError as exc:
            self._fail(exc)
            return
        if parsed is not None:
            name, rest = parsed
            getattr(self, f"cmd_{name}")(rest)

    def cmd_set(self, rest: str) -> None:
        if not self._can_act():
            return
        self._stage(self._live.set_command, rest)

    def cmd_goto(self, rest: str) -> None:
        if not self._can_act():
            return
        s = self.session
        assert s is not None
        try:
            target = s.parse_step(rest)
        except SessionError as exc:
            self._fail(exc)
            s.message = ""  # the reason the last move gave no longer describes the screen
            self._refresh_view()
            return
        self._move(lambda: s.goto(target, f"went to step {target}"))

    def cmd_break(self, rest: str) -> None:
        if not self._can_act():
            return
        try:
            said = self._live.break_spec(rest)
        except SessionError as exc:
            self._fail(exc)
            return
        self.notify(said)
        self._refresh_view()

    def cmd_restore(self, rest: str) -> None:
        self.action_restore()

    def cmd_discard(self, rest: str) -> None:
        if self._can_act():
            count = self._live.discard_edits()
            self.notify(f"{count} staged edit{'s' if count != 1 else ''} dropped")
            self._refresh_view()

    def cmd_write(self, rest: str) -> None:
        if not self._can_act():
            return
        try:
            path = self._live.save_checkpoint(rest.strip())
        except SessionError as exc:
            self._fail(exc)
            return
        except Exception as exc:  # noqa: BLE001 - the runtime failing to rebuild the step
            self._fail(f"cannot save step {self._live.step}: {exc}")
            return
        self.notify(f"saved step {self._live.step} to {path}")

    def cmd_open(self, rest: str) -> None:
        if not self._can_act():
            return
        path = rest.strip()
        if not path:
            self._fail("give the checkpoint file to open")
            return
        if not Path(path).exists():
            self._fail(f"{path}: no such checkpoint file")
            return
        self._begin(f"opening {path}")
        self._open_checkpoint_worker(path)

    @work(thread=True, exclusive=True, group="work", exit_on_error=False)
    def _open_checkpoint_worker(self, path: str) -> None:
        try:
            self._live.open_checkpoint(path, self._step_progress)
        except SessionError as exc:
            self._from_thread(self._work_failed, exc)
            return
        self._from_thread(self._work_done, f"opened {path}")

    def cmd_branch(self, rest: str) -> None:
        if not self._can_act():
            return
        try:
            branch = int(rest)
        except ValueError:
            self._fail(f"not a branch id: `{rest}`")
            return
        self._move(lambda: self._live.switch_branch(branch))
        self._events_key = ()

    def cmd_search(self, rest: str) -> None:
        if self._can_act():
            self._search(rest or None, backwards=False)

    def _search(self, text: str | None, backwards: bool) -> None:
        s = self.session
        assert s is not None
        self._indexed(lambda: s.search_next(text, backwards))

    def cmd_why(self, rest: str) -> None:
        name = rest.strip()
        self._move(lambda: self._live.why(name))

    def cmd_frame(self, rest: str) -> None:
        self._move(lambda: self._live.frame_command(rest))

    def cmd_approve(self, rest: str) -> None:
        self._answer("approve", rest)

    def cmd_reject(self, rest: str) -> None:
        self._answer("reject", rest)

    def cmd_resolve(self, rest: str) -> None:
        self._answer("resolve", rest)

    def _answer(self, action: str, rest: str) -> None:
        if not self._can_act():
            return
        try:
            value = self._live.interrupt_answer(action, rest)
        except SessionError as exc:
            self._fail(exc)
            return
        self._stopper = Stopper(self._live.max_steps, self._live.max_store_bytes)
        self._begin(f"{action} and run on", cancellable=True, runs=True)
        self._answer_worker(action, value, self._stopper)

    @work(thread=True, exclusive=True, group="work", exit_on_error=False)
    def _answer_worker(self, action: str, value: Any, stopper: Stopper) -> None:
        try:
            self._live.answer_interrupt(action, value, self._step_progress, stopper)
        except SessionError as exc:
            self._from_thread(self._work_failed, exc)
            return
        self._from_thread(self._work_done, f"interrupt answered ({action}); the run went on")

    def cmd_help(self, rest: str) -> None:
        self.action_help()

    def cmd_quit(self, rest: str) -> None:
        self.exit()

    # -- reading the record ------------------------------------------------------------------------

    def cmd_print(self, rest: str) -> None:
        if not self._can_act():
            return
        try:
            answer = self._live.print_expression(rest)
        except SessionError as exc:
            self._fail(exc)
            return
        self.notify(answer, title=f"at step {self._live.step}", timeout=10)

    def cmd_watch(self, rest: str, stops: bool = False) -> None:
        if not self._can_act():
            return
        try:
            watch = self._live.add_watch(rest, stops)
        except SessionError as exc:
            self._fail(exc)
            return
        where = f" in {watch.function}" if watch.function else ""
        kind = "watchpoint (c and C stop where it changes)" if stops else "watching"
        self.notify(f"{kind}: {watch.text}{where}")
        self._refresh_view()

    def cmd_watchpoint(self, rest: str) -> None:
        self.cmd_watch(rest, stops=True)

    def cmd_unwatch(self, rest: str) -> None:
        if not self._can_act():
            return
        try:
            gone = self._live.remove_watch(rest)
        except SessionError as exc:
            self._fail(exc)
            return
        self.notify(f"{gone} watch{'es' if gone != 1 else ''} removed")
        self._refresh_view()

    def cmd_breaks(self, rest: str) -> None:
        if not self._can_act():
            return
        rows = [(None, line) for line in self._live.breakpoints_described()]
        if not rows:
            self.notify("no breakpoints: b toggles one on the current line, :break LINE [if …]")
            return
        self.push_screen(ListScreen("Breakpoints", rows))

    def cmd_diff(self, rest: str) -> None:
        if not self._can_act():
            return
        try:
            title, lines = self._live.diff(rest)
        except SessionError as exc:
            self._fail(exc)
            return
        if not lines:
            self.notify(f"{title}: nothing differs")
            return
        rows = [(line.step, line.text()) for line in lines]
        self.push_screen(ListScreen(f"Diff {title}", rows), self._went_to)

    def cmd_trace(self, rest: str) -> None:
        if not self._can_act():
            return
        try:
            self._live.trace(rest, cancelled=lambda: True)  # parse it now: errors at once
        except SessionError as exc:
            self._fail(exc)
            return
        self._begin(f"tracing {rest.strip()}", cancellable=True)
        self._trace_worker(rest)

    @work(thread=True, exclusive=True, group="work", exit_on_error=False)
    def _trace_worker(self, text: str) -> None:
        worker = get_current_worker()
        try:
            found = self._live.trace(text, lambda: worker.is_cancelled, self._scan_progress)
        except SessionError as exc:
            self._from_thread(self._work_failed, exc)
            return
        self._from_thread(self._traced, text, found, worker.is_cancelled)

    def _traced(self, text: str, found: list[tuple[int, str]], cancelled: bool) -> None:
        self._end()
        if cancelled:
            self.notify("cancelled")
            return
        if not found:  # not even a first value: no step can read it (a misspelt name?)
            self._fail(
                f"`{text.strip()}` never has a value in this run (no step can read it): a misspelt name?"
            )
            return
        title = f"trace {text.strip()}: {len(found)} change{'s' if len(found) != 1 else ''}"
        self.push_screen(ListScreen(title, found), self._went_to)

    def _went_to(self, step: int | None) -> None:
        if step is not None and self.session is not None:
            self._move(lambda: self._live.goto(step, f"step {step}"))
