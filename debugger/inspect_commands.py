"""Provides `InspectCommands`, the app's `:` commands that read the record without changing it:
`:print`, `:trace`, `:watch`, `:watchpoint`, `:unwatch`, `:breaks` and `:diff`.

A mixin of `DebuggerApp` (it uses the app's session, notifications and work line); the session
and `debugger.watches` / `debugger.diff` do the work, this only shows it.
"""

from __future__ import annotations

from typing import Any

from textual import work
from textual.worker import get_current_worker

from debugger.errors import SessionError
from debugger.widgets.list_screen import ListScreen


class InspectCommands:
    """`cmd_<name>` handlers for the reading commands (mixed into DebuggerApp)."""

    session: Any

    def cmd_print(self, rest: str) -> None:
        app: Any = self
        if not app._can_act():
            return
        try:
            answer = self.session.print_expression(rest)
        except SessionError as exc:
            app._fail(exc)
            return
        app.notify(answer, title=f"at step {self.session.step}", timeout=10)

    def cmd_watch(self, rest: str, stops: bool = False) -> None:
        app: Any = self
        if not app._can_act():
            return
        try:
            watch = self.session.add_watch(rest, stops)
        except SessionError as exc:
            app._fail(exc)
            return
        where = f" in {watch.function}" if watch.function else ""
        kind = "watchpoint (c and C stop where it changes)" if stops else "watching"
        app.notify(f"{kind}: {watch.text}{where}")
        app._refresh_view()

    def cmd_watchpoint(self, rest: str) -> None:
        self.cmd_watch(rest, stops=True)

    def cmd_unwatch(self, rest: str) -> None:
        app: Any = self
        try:
            gone = self.session.remove_watch(rest)
        except SessionError as exc:
            app._fail(exc)
            return
        app.notify(f"{gone} watch{'es' if gone != 1 else ''} removed")
        app._refresh_view()

    def cmd_breaks(self, rest: str) -> None:
        app: Any = self
        rows = [(None, line) for line in self.session.breakpoints_described()]
        if not rows:
            app.notify("no breakpoints: b toggles one on the current line, :break LINE [if …]")
            return
        app.push_screen(ListScreen("Breakpoints", rows))

    def cmd_diff(self, rest: str) -> None:
        app: Any = self
        if not app._can_act():
            return
        try:
            title, lines = self.session.diff(rest)
        except SessionError as exc:
            app._fail(exc)
            return
        if not lines:
            app.notify(f"{title}: nothing differs")
            return
        rows = [(line.step, line.text()) for line in lines]
        app.push_screen(ListScreen(f"Diff {title}", rows), self._went_to)

    def cmd_trace(self, rest: str) -> None:
        app: Any = self
        if not app._can_act():
            return
        try:
            self.session.trace(rest, cancelled=lambda: True)  # parse it now: errors at once
        except SessionError as exc:
            app._fail(exc)
            return
        app._begin(f"tracing {rest.strip()}", cancellable=True)
        self._trace_worker(rest)

    @work(thread=True, exclusive=True, group="work")
    def _trace_worker(self, text: str) -> None:
        app: Any = self
        worker = get_current_worker()
        try:
            found = self.session.trace(text, cancelled=lambda: worker.is_cancelled)
        except SessionError as exc:
            app._from_thread(app._work_failed, exc)
            return
        app._from_thread(self._traced, text, found, worker.is_cancelled)

    def _traced(self, text: str, found: list[tuple[int, str]], cancelled: bool) -> None:
        app: Any = self
        app._end()
        if cancelled:
            app.notify("cancelled")
            return
        title = f"trace {text.strip()}: {len(found)} change{'s' if len(found) != 1 else ''}"
        app.push_screen(ListScreen(title, found), self._went_to)

    def _went_to(self, step: int | None) -> None:
        app: Any = self
        if step is not None:
            app._move(lambda: self.session.goto(step, f"step {step}"))
