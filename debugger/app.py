"""Provides `DebuggerApp`, the time-travel debugger's Textual app.

The app composes the panels and wires them: a key (or a widget's message) asks the `Session` to
move or change something, then the new state is pushed down to the panels. Drawing is
collapsed: a burst of keys moves the cursor once per key but renders once, after the burst.
Long work (recording, restoring, scanning a big run, searching) runs in a thread worker with a
progress line; the UI keeps answering and Escape cancels a scan.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.command import CommandPalette
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.timer import Timer
from textual.widgets import Input
from textual.worker import Worker, WorkerState, get_current_worker

from debugger.app_commands import Commands
from debugger.app_editing import EditingKeys
from debugger.app_keys import OrderedKeys
from debugger.commands import COMMANDS
from debugger.errors import internal_error_line
from debugger.session import END_OF_RUN, Move, Session, SessionError
from debugger.widgets.call_stack import CallStack
from debugger.widgets.command_line import CommandLine
from debugger.widgets.help_screen import HelpScreen
from debugger.widgets.input_screen import InputScreen
from debugger.widgets.key_footer import KeyFooter
from debugger.widgets.llm_inspector import LLMInspector
from debugger.widgets.messages_panel import MessagesPanel
from debugger.widgets.option_lists import DebuggerPalette, guard_paging
from debugger.widgets.output_panel import OutputPanel
from debugger.widgets.source_view import SourceView
from debugger.widgets.status_line import StatusLine
from debugger.widgets.timeline_bar import TimelineBar
from debugger.widgets.value_screen import ValueScreen
from debugger.widgets.variables_panel import VariablesPanel
from debugger.widgets.watches_panel import WatchesPanel
from debugger.widgets.work_progress import WorkProgress
from runtime.errors import EXIT_TERMINATED
from runtime.runs.stopping import Stopper
from runtime.vm.builtins_input import LineReader, set_line_reader

guard_paging()

Opener = Callable[[Callable[[int], None]], Session]
"""Builds the session (records the program, opens a stored run...) in a worker; gets a
progress callback taking the step reached."""

STORE_WARN_BYTES = 2 * 2**30  # a run store this big is worth a word (AGENCY_STORE_WARN_BYTES)
SYNC_SCAN_SECONDS = 0.02  # a scan that takes longer moves to a worker with a progress line
SYNC_SEARCH_STEPS = 50_000  # searching a longer run goes to a worker
MARK_CONDITION_READS = 2048  # breakpoint conditions read for the marks (the rest marked ○)
FOLLOW_SECONDS = 0.5  # how often a run another process is recording is looked at again


# Actions of priority bindings: they give way to a text field or a dialog that has focus.
PRIORITY_ACTIONS = frozenset(
    {
        "first_step",
        "last_step",
        "goto",
        "search",
        "command",
        "print",
        "write_checkpoint",
        "open_checkpoint",
    }
)


class DebuggerApp(Commands, EditingKeys, OrderedKeys, App[None]):
    """`agency debugger`: scrub through a recorded run, inspect it, change the past."""

    class RunLooked(Message):
        """A look at a run another process is recording (its length and status), read by a
        worker thread for `session`; `error` when the store could not be read."""

        def __init__(self, session: Session, look: Any, error: Exception | None) -> None:
            super().__init__()
            self.session = session
            self.look = look
            self.error = error

    CSS_PATH = "app.tcss"
    TITLE = "agency debugger"
    # A short terminal gives the source the rows (app.tcss): at 40x10 the messages, output and
    # LLM panels and the timeline's border took them all and not one source line showed.
    VERTICAL_BREAKPOINTS = [(0, "-very-short"), (12, "-short"), (17, "-tall")]
    ENABLE_COMMAND_PALETTE = True

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("right,s", "step_forward", "Step", key_display="s/→", id="step"),
        Binding("left,S", "step_back", "Back", key_display="S/←", id="step_back"),
        Binding("n", "next", "Next", id="next"),
        Binding("N", "reverse_next", "Reverse next", show=False, id="reverse_next"),
        Binding("o", "step_out", "Step out", show=False, id="step_out"),
        Binding("O", "reverse_step_out", "Reverse step out", show=False, id="reverse_step_out"),
        Binding("c", "continue", "Continue", id="continue"),
        Binding("C", "reverse_continue", "Reverse continue", show=False, id="reverse_continue"),
        Binding(
            "left_square_bracket",
            "prev_llm",
            "Previous LLM call",
            key_display="[",
            show=False,
            id="prev_llm",
        ),
        Binding(
            "right_square_bracket",
            "next_llm",
            "Next LLM call",
            key_display="]",
            show=False,
            id="next_llm",
        ),
        # Keys that open a prompt are priority bindings: they are then handled as the app reads
        # them, so the keys behind them (a paste, fast typing) already go to the prompt's field
        # and never reach a binding. `check_action` lets a focused text field have them.
        Binding("g", "goto", "Go to", priority=True, id="goto"),
        Binding("b", "toggle_breakpoint", "Breakpoint", id="breakpoint"),
        Binding("e", "edit", "Edit", id="edit"),
        Binding("r", "restore", "Restore here", id="restore"),
        Binding(
            "w",
            "write_checkpoint",
            "Save checkpoint",
            show=False,
            priority=True,
            id="write_checkpoint",
        ),
        Binding("B", "branches", "Branches", show=False, id="branches"),
        Binding("slash", "search", "Search", key_display="/", priority=True, id="search"),
        # `.` and `,` (as pudb's search) because every terminal sends them; shift+F3 does not
        # reach the app under tmux or xterm, which send it as F15 or not at all.
        Binding(
            "full_stop,f3",
            "search_next",
            "Next match",
            key_display="./f3",
            show=False,
            id="search_next",
        ),
        Binding(
            "comma,shift+f3,f15",
            "search_previous",
            "Previous match",
            key_display=",/shift+f3",
            show=False,
            id="search_previous",
        ),
        Binding("y", "why", "Why this value?", show=False, id="why"),
        Binding("z", "zoom", "Zoom a value (or the LLM call) full-screen", show=False, id="zoom"),
        Binding("m", "cycle_strip", "Timeline strip: tokens / LLM latency", show=False, id="strip"),
        Binding("t", "next_thread", "Next message thread", show=False, id="next_thread"),
        Binding("T", "prev_thread", "Previous message thread", show=False, id="prev_thread"),
        Binding("p", "print", "Print an expression", show=False, priority=True, id="print"),
        Binding(
            "colon",
            "command",
            "Command line",
            key_display=":",
            show=False,
            priority=True,
            id="command",
        ),
        # Priority, so a focused list does not take them; `check_action` lets a text field have them.
        Binding("home", "first_step", "First step", show=False, priority=True, id="first_step"),
        Binding("end", "last_step", "Last step", show=False, priority=True, id="last_step"),
        Binding(
            "ctrl+o",
            "open_checkpoint",
            "Open checkpoint file",
            show=False,
            priority=True,
            id="open_checkpoint",
        ),
        Binding("escape", "cancel_work", "Cancel long work", show=False, id="cancel_work"),
        Binding("question_mark", "help", "Help", key_display="?", id="help"),
        Binding("q", "quit", "Quit", id="quit"),
        # Ctrl-C quits too (Textual only hints at `q`): a run being recorded stops at its next
        # step and is saved as interrupted.
        Binding("ctrl+c", "quit", "Quit", show=False, id="quit_ctrl_c"),
    ]

    def __init__(
        self,
        session: Session | None = None,
        *,
        opener: Opener | None = None,
        opening: str = "recording the run",
        stopper: Stopper | None = None,
    ) -> None:
        super().__init__()
        if session is None and opener is None:
            raise ValueError("DebuggerApp needs a session or an opener")
        self.session: Session | None = session
        self._opener = opener
        self._opening = opening
        self._render_pending = False
        self._exit_requested = False
        self._busy: str | None = None
        self._cancellable = False
        self._runs = False  # the busy work runs the program (recording, restoring)
        self._progress: tuple[int, int] | None = None
        self._progress_toward = 0  # the step long work re-executes up to, when known
        self._events_key: tuple[Any, ...] = ()
        self._marks_key: tuple[Any, ...] = ()  # what the scrubber's breakpoint marks show
        self.renders = 0  # how many times the panels were updated (tests and the benchmark)
        self._focus_before: Any = None
        self._edit_stage: Callable[[str], str] | None = None  # what the open edit dialog stages
        # Stops the run being recorded or re-run (opening, restore, an answered interrupt) at
        # its next step: Esc, q and Ctrl-C use it.
        self._stopper: Stopper | None = stopper
        self._follow_timer: Timer | None = None  # looks again at a run being recorded elsewhere
        self._looking = False  # a look at that run is being read (by a worker thread)
        self._sigterm_listened = False  # SIGTERM quits the app (`_listen_for_sigterm`)
        self._sigterm_heard = False
        self._reader_before: LineReader | None = None  # who answered input() before the app

    # -- layout ------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Horizontal(id="top"):
            yield SourceView(id="source")
            with Vertical(id="side"):
                yield VariablesPanel(id="variables")
                yield WatchesPanel(id="watches")
                yield CallStack(id="stack")
        yield TimelineBar(id="timeline")
        with Horizontal(id="bottom"):
            yield MessagesPanel(id="messages")
            yield OutputPanel(id="output")
            yield LLMInspector(id="llm")
        yield WorkProgress(id="work")
        yield CommandLine(commands=COMMANDS, id="command")
        yield StatusLine(id="status")
        yield KeyFooter(keep=("help", "quit"))

    def on_mount(self) -> None:
        self.source_view = self.query_one(SourceView)
        self.variables = self.query_one(VariablesPanel)
        self.stack = self.query_one(CallStack)
        self.watches = self.query_one(WatchesPanel)
        self.watches.border_title = "watches"
        self.timeline_bar = self.query_one(TimelineBar)
        self.messages = self.query_one(MessagesPanel)
        self.output = self.query_one(OutputPanel)
        self.llm = self.query_one(LLMInspector)
        self.work_line = self.query_one(WorkProgress)
        self.command_line = self.query_one(CommandLine)
        self.status = self.query_one(StatusLine)
        self.source_view.border_title = "source"
        self.stack.border_title = "call stack"
        self.timeline_bar.border_title = "timeline"
        self.messages.border_title = "messages"
        self.output.border_title = "output"
        self.llm.border_title = "LLM call"
        self.variables.focus()
        self.set_interval(0.1, self._show_progress)
        self.set_interval(0.1, self._release_overdue_key)
        self.screen.screen_layout_refresh_signal.subscribe(self, self._lift_toasts)
        self._listen_for_sigterm()
        # The program's input() cannot read the terminal while the app owns it: it asks here.
        self._reader_before = set_line_reader(self._ask_line)
        if self.session is not None:
            self._attached()
        else:
            self._open()

    def on_unmount(self) -> None:
        set_line_reader(self._reader_before)
        self._stop_following()
        self._stop_listening_for_sigterm()

    def _ask_line(self, prompt: str) -> str | None:
        """The line the program's `input(prompt)` asks for, from a dialog. A worker thread runs
        the program and waits here for the answer; when the app quits or the run is cancelled
        meanwhile, the input ends (None)."""
        if threading.current_thread() is threading.main_thread():
            return None  # the event loop's own thread cannot wait for a dialog it draws
        answered = threading.Event()
        answer: list[str | None] = [None]

        def got(text: str | None) -> None:
            answer[0] = text
            answered.set()

        dialog = InputScreen(prompt)
        self._from_thread(self.push_screen, dialog, got)
        while not answered.wait(0.1):
            stopper = self._stopper
            cancelled = stopper is not None and stopper.cancelled
            if self._exit_requested or cancelled or not self.is_running:
                self._from_thread(self._drop_dialog, dialog)  # the run no longer asks
                return None
        return answer[0]

    def _drop_dialog(self, dialog: ModalScreen[Any]) -> None:
        if dialog.is_current:
            dialog.dismiss(None)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if isinstance(self.screen, ModalScreen):
            # Under a dialog only its own keys work (Textual stops the key there), so the
            # footer must not offer the app's: it showed s Step, c Continue, q Quit, which did
            # nothing. The dialog says its keys.
            return False
        if action in PRIORITY_ACTIONS:
            return not isinstance(self.focused, Input)
        return True

    # -- opening -----------------------------------------------------------------------------------

    def _open(self) -> None:
        self._begin(self._opening, cancellable=self._stopper is not None, runs=True)
        self._open_worker()

    @work(thread=True, exclusive=True, group="work", exit_on_error=False)
    def _open_worker(self) -> None:
        assert self._opener is not None
        try:
            session = self._opener(self._step_progress)
        except Exception as exc:  # noqa: BLE001 - any failure is shown, never a traceback
            self._from_thread(self._open_failed, f"{exc}")
            return
        self._from_thread(self._opened, session)

    def _from_thread(self, fn: Callable[..., Any], *args: Any) -> None:
        """`call_from_thread`, unless the app has already quit (a worker ending after `q`)."""
        if self._exit_requested:
            return
        try:
            self.call_from_thread(fn, *args)
        except RuntimeError:  # the app closed while the worker finished
            pass

    def _opened(self, session: Session) -> None:
        self._end()
        self.session = session
        self._attached()

    def _open_failed(self, message: str) -> None:
        self._end()
        self.exit(return_code=1, message=f"agency: {message}")

    def _attached(self) -> None:
        assert self.session is not None
        self.title = f"agency debugger · {self.session.source_path}"
        self._warn_store_size()
        self._refresh_view()
        if self.session.following() and self._follow_timer is None:
            self._follow_timer = self.set_interval(FOLLOW_SECONDS, self._follow_run)

    def _follow_run(self) -> None:
        """A run another process is recording: every FOLLOW_SECONDS, look at its length and
        status again (two small reads: with PostgreSQL, round trips to the server), in a
        worker thread so the keys never wait on them, one look at a time; the answer comes
        back as `RunLooked`. Skipped while long work runs."""
        s = self.session
        if s is None or self._busy is not None or self._looking:
            return
        self._looking = True
        self._look_worker(s)

    @work(thread=True, exclusive=True, group="follow", exit_on_error=False)
    def _look_worker(self, session: Session) -> None:
        look: Any = None
        error: Exception | None = None
        try:
            look = session.follow_look()
        except Exception as exc:  # noqa: BLE001 - a store that cannot be read now: said once
            error = exc
        if not get_current_worker().is_cancelled and not self._exit_requested:
            with contextlib.suppress(RuntimeError):  # the app closed as the look came back
                self.post_message(self.RunLooked(session, look, error))

    def on_debugger_app_run_looked(self, message: DebuggerApp.RunLooked) -> None:
        """Apply a look (on the event loop: no store read here) and redraw when the run grew
        or its status changed; stop following once it has ended."""
        self._looking = False
        s = self.session
        if s is None or s is not message.session or self._follow_timer is None:
            return  # another session opened, or following stopped, meanwhile
        if message.error is not None:
            self._stop_following()
            self._fail(f"stopped following the run: {message.error}")
            return
        if self._busy is not None:
            return  # long work began meanwhile: looked at again after it
        try:
            changed = s.follow(message.look)
        except Exception as exc:  # noqa: BLE001 - a timeline without a separate look reads
            self._stop_following()
            self._fail(f"stopped following the run: {exc}")
            return
        if changed:
            self._refresh_view()
        if not s.following():
            self._stop_following()
            status = getattr(getattr(s.timeline, "run", None), "status", "over")
            self.notify(f"the run is {status}: {s.length:,} steps")

    def _stop_following(self) -> None:
        if self._follow_timer is not None:
            self._follow_timer.stop()
            self._follow_timer = None
        self.workers.cancel_group(self, "follow")
        self._looking = False

    def _warn_store_size(self) -> None:
        """Every recorded session adds to the run store: say so once it is big, with the way
        to bound it."""
        size = self.session.store_bytes() if self.session is not None else None
        try:
            limit = int(os.environ.get("AGENCY_STORE_WARN_BYTES", STORE_WARN_BYTES))
        except ValueError:
            limit = STORE_WARN_BYTES
        if size is not None and size >= limit:
            self.notify(
                f"the run store is {size / 2**30:.1f} GiB: `agency prune --max-size 1GB` (or "
                "--keep N, --older-than 7d) deletes the oldest runs",
                severity="warning",
                timeout=10,
            )

    # -- drawing -----------------------------------------------------------------------------------

    def _refresh_view(self) -> None:
        """Draw the session's state after the keys already queued have moved the cursor."""
        if not self._render_pending:
            self._render_pending = True
            self.call_later(self._render_now)

    def _render_now(self) -> None:
        self._render_pending = False
        if self.keys_waiting():
            self.after_keys(self._refresh_view)  # more keys of a burst: draw after them
            return
        s = self.session
        if s is None:
            return
        self.renders += 1
        state = s.state()
        key = (s.timeline.run_id, s.branch, s.length)
        if key != self._events_key:
            self._events_key = key
            self.timeline_bar.set_events(s.events(), s.length, s.fork_step(), s.branch_forks())
        self._mark_breakpoints(s)
        self.timeline_bar.step = state.step

        loc = s.shown_location()
        path = loc.file if loc is not None else s.source_path
        self.source_view.set_source(path, s.source_text(path))
        if self.source_view.location != loc:
            self.source_view.location = loc
        breakpoints = frozenset(s.breakpoint_lines(path))
        if breakpoints != self.source_view.breakpoints:
            self.source_view.breakpoints = breakpoints

        edits = s.staged()
        pending = s.pending_edits()
        shown = s.variables()
        self.variables.show(
            shown.scope,
            shown.args,
            shown.locals,
            shown.globals,
            s.changed_names(),
            shown.edited,
            shown.outcome,
        )
        self.stack.show(state.frames, s.frame_index())
        self.watches.show([(w.stops, line) for w, line in s.watch_lines()])
        self.messages.show(
            s.shown_thread(),
            state.threads.get(s.shown_thread(), ()),
            edits.messages if edits is not None and s.shown_thread() == state.active_thread else {},
        )
        self.output.show(state.output)
        self.llm.show(
            s.llm_call(),
            state.step,
            edits.llm_answer if edits is not None and edits.has_llm_answer else None,
        )
        self.status.show(
            state,
            s.length,
            s.message,
            len(pending) if pending is not None else 0,
            s.waiting_interrupt(),
            len(s.breakpoints) + len(s.event_breaks),  # line and event breakpoints
            s.run_status(),
            pending.step if pending is not None and pending.step != state.step else None,
            s.max_steps,
        )

    def _lift_toasts(self, screen: Screen[Any]) -> None:
        """After each layout of the main screen, lift the notifications above the rows under
        the panels (work line, prompt, status line, footer): the status line may take up to
        four rows, and a toast at a fixed height covered the reason it gave for the last move."""
        tops = [
            w.region.y
            for w in (self.work_line, self.command_line, self.status)
            if w.is_attached and w.display and w.region.height
        ]
        if not tops:
            return
        below = max(screen.size.height - min(tops), 2)
        for rack in screen.query("#textual-toastrack"):
            if rack.styles.margin.bottom != below:
                rack.styles.margin = (0, 0, below, 0)

    def _mark_breakpoints(self, s: Session) -> None:
        """Show on the scrubber where the breakpoints stop, when they (or the run) changed.
        A long run's steps per line come from its write index, which the first `c` or `C`
        with breakpoints builds (as `/` and `y` do); setting one never makes the user wait."""
        key = (
            s.timeline.run_id,
            s.branch,
            s.length,
            s.indexed(),
            frozenset(s.breakpoints),
            tuple(sorted((k, v.describe()) for k, v in s.conditions.items())),
            tuple(s.event_breaks),
        )
        if key == self._marks_key or self._busy is not None:
            return  # unchanged, or a recording still growing: marked when it is done
        self._marks_key = key
        marks = s.breakpoint_marks(SYNC_SEARCH_STEPS, MARK_CONDITION_READS)
        self.timeline_bar.set_breakpoints(*(marks or ([], [])))

    # -- busy work ---------------------------------------------------------------------------------

    def _begin(self, label: str, cancellable: bool = False, runs: bool = False) -> None:
        """Show long work under way; `runs` when it runs the program (Esc stops the run at its
        next step rather than cancelling the worker)."""
        self._busy = label
        self._cancellable = cancellable
        self._runs = runs
        self._progress = None
        self._progress_toward = 0
        self.work_line.start(label, cancellable)

    def _end(self) -> None:
        self._busy = None
        self._cancellable = False
        self._runs = False
        self._progress = None
        self.work_line.stop()

    def _step_progress(self, step: int) -> None:
        """Progress from the runtime (any thread): the step it reached. Below
        `_progress_toward` (a restore re-executes up to its fork step, then runs on live)
        that step is the end of the bar; past it the run's length is unknown."""
        toward = self._progress_toward
        self._progress = (step, toward) if step < toward else (step, 0)

    def _scan_progress(self, done: int, total: int) -> None:
        self._progress = (done, total)

    def _show_progress(self) -> None:
        if self._busy is not None and self._progress is not None:
            self.work_line.advance(*self._progress)

    @property
    def _live(self) -> Session:
        """The session, for a key acting on it (after `_can_act`, so it is open)."""
        assert self.session is not None
        return self.session

    def _can_act(self) -> bool:
        """True when the session may be used; otherwise say why not."""
        if self.session is None:
            self.notify("the run is still opening", severity="warning")
            return False
        if self._busy is not None:
            hint = "esc cancels it" if self._cancellable else "wait for it to finish"
            self.notify(f"busy: {self._busy} ({hint})", severity="warning")
            return False
        return True

    def _fail(self, error: SessionError | str) -> None:
        self.notify(str(error), title="nothing changed", severity="error", timeout=6)

    # -- moving ------------------------------------------------------------------------------------

    def _move(self, fn: Callable[[], object]) -> None:
        if not self._can_act():
            return
        try:
            fn()
        except SessionError as exc:
            self._fail(exc)
            self._live.message = ""  # the last move's reason is stale
        self._refresh_view()

    def action_step_forward(self) -> None:
        self._move(lambda: self._live.step_forward())

    def action_step_back(self) -> None:
        self._move(lambda: self._live.step_back())

    def action_first_step(self) -> None:
        self._move(lambda: self._live.goto(self._live.first, self._live.start_reason))

    def action_last_step(self) -> None:
        self._move(lambda: self._live.goto(self._live.last, END_OF_RUN))

    def action_next_llm(self) -> None:
        self._move(lambda: self._live.next_llm())

    def action_prev_llm(self) -> None:
        self._move(lambda: self._live.prev_llm())

    def action_next(self) -> None:
        self._scan("next", lambda c, p: self._live.next_over(c))

    def action_reverse_next(self) -> None:
        self._scan("reverse next", lambda c, p: self._live.reverse_next(c))

    def action_step_out(self) -> None:
        self._scan("step out", lambda c, p: self._live.step_out(c))

    def action_reverse_step_out(self) -> None:
        self._scan("reverse step out", lambda c, p: self._live.reverse_step_out(c))

    def action_continue(self) -> None:
        self._scan("continue", lambda c, p: self._live.continue_forward(c, p))

    def action_reverse_continue(self) -> None:
        self._scan("reverse continue", lambda c, p: self._live.reverse_continue(c, p))

    def _scan(self, label: str, fn: Callable[[Any, Any], Move]) -> None:
        """Run a scan here when it is quick; otherwise in a worker with progress."""
        if not self._can_act():
            return
        deadline = time.monotonic() + SYNC_SCAN_SECONDS
        move = fn(lambda: time.monotonic() > deadline, None)
        if move.reason != "cancelled":
            self._refresh_view()
            return
        self._begin(label, cancellable=True)
        self._scan_worker(fn)

    @work(thread=True, exclusive=True, group="work", exit_on_error=False)
    def _scan_worker(self, fn: Callable[[Any, Any], Move]) -> None:
        worker = get_current_worker()
        s = self._live
        if s.breakpoints and not s.indexed():
            # the write index lists each line's steps: the scan visits those, not every step
            # (and the scrubber can then mark where the breakpoints stop)
            s.build_index(self._scan_progress, lambda: worker.is_cancelled)
        move = fn(lambda: worker.is_cancelled, self._scan_progress)
        self._from_thread(self._scan_done, move)

    def _scan_done(self, move: Move) -> None:
        self._end()
        if move.reason == "cancelled":
            self.notify("cancelled")
        self._refresh_view()

    def action_cancel_work(self, key: str = "esc") -> None:
        """Stop the long work under way; `key` is what the person pressed (said in the reason)."""
        if self.command_line.is_open:
            self.command_line.action_cancel()
            return
        if self._busy is None:
            return
        if not self._cancellable:
            self.notify(f"{self._busy} cannot be cancelled", severity="warning")
            return
        if self._runs and self._stopper is not None and not self._stopper.cancelled:
            # A run being recorded stops at its next step; what it did so far opens.
            self._stopper.cancel(f"{self._busy}: cancelled ({key})")
            return
        self.workers.cancel_group(self, "work")

    async def action_quit(self) -> None:
        """Quit at once: a run still being recorded stops at its next step and is saved as
        interrupted (resumable) as the process ends."""
        self._quit("stopped: the debugger quit")

    def _quit(self, why: str, return_code: int = 0) -> None:
        self._exit_requested = True
        if self._stopper is not None:
            self._stopper.cancel(why)
        self.workers.cancel_group(self, "work")
        self._stop_following()
        self.exit(return_code=return_code)

    def _listen_for_sigterm(self) -> None:
        """SIGTERM (a supervisor, `kill PID`) quits as `q` does, so a run being recorded is
        saved as interrupted at its next step and the terminal is given back, with exit
        status 143; a second one ends the process at once. Only when SIGTERM has its default
        action (a program embedding the app keeps its own handler)."""
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
            return
        try:
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, self._terminated)
        except (NotImplementedError, RuntimeError, ValueError):
            return
        self._sigterm_heard = False
        self._sigterm_listened = True

    def _stop_listening_for_sigterm(self) -> None:
        if self._sigterm_listened:
            self._sigterm_listened = False
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                asyncio.get_running_loop().remove_signal_handler(signal.SIGTERM)

    def _terminated(self) -> None:
        if self._sigterm_heard:  # the second: now, whatever is in flight
            self._stop_listening_for_sigterm()
            os.kill(os.getpid(), signal.SIGTERM)
            return
        self._sigterm_heard = True
        self._quit("stopped by SIGTERM", EXIT_TERMINATED)

    # -- widgets asking --------------------------------------------------------------------------

    def on_timeline_bar_step_selected(self, message: TimelineBar.StepSelected) -> None:
        self._move(lambda: self._live.goto(message.step))

    def on_source_view_breakpoint_toggled(self, message: SourceView.BreakpointToggled) -> None:
        if self.session is not None:
            self._toggle_breakpoint(message.line, message.path)

    def on_call_stack_frame_selected(self, message: CallStack.FrameSelected) -> None:
        self._move(lambda: self._live.select_frame(message.index))

    def _prompt(self, mode: str, text: str = "", *, selected: bool = False) -> None:
        """Open the command line; focus returns where it was when it closes."""
        self._focus_before = self.focused
        self.command_line.open(mode, text, selected=selected)

    def _unprompt(self) -> None:
        before = self._focus_before
        (before if before is not None and before.is_attached else self.variables).focus()

    def on_command_line_submitted(self, message: CommandLine.Submitted) -> None:
        self._unprompt()
        handler = {
            "command": self.run_command,
            "search": self.cmd_search,
            "goto": self.cmd_goto,
            "write": self.cmd_write,
            "open": self.cmd_open,
        }[message.mode]
        handler(message.text)

    def on_command_line_cancelled(self, message: CommandLine.Cancelled) -> None:
        if message.refocus:
            self._unprompt()

    # -- breakpoints, frames -------------------------------------------------------------------

    def action_toggle_breakpoint(self) -> None:
        if not self._can_act():
            return
        loc = self._live.shown_location()
        if loc is None:
            self._fail("no current line here; use :break LINE")
            return
        self._toggle_breakpoint(loc.line, loc.file)

    def _toggle_breakpoint(self, line: int, path: str) -> None:
        assert self.session is not None
        try:
            at, on = self.session.toggle_breakpoint(line, path)
        except SessionError as exc:
            self._fail(exc)
            return
        self._breakpoint_toggled(line, at, on)

    def _breakpoint_toggled(self, line: int, at: int, on: bool) -> None:
        moved = f" (line {line} has no statement)" if at != line else ""
        self.notify(f"breakpoint {'set' if on else 'cleared'} at line {at}{moved}")
        self._refresh_view()

    # -- prompts ---------------------------------------------------------------------------------

    def action_goto(self) -> None:
        if self._can_act():
            self._prompt("goto")

    def action_search(self) -> None:
        if self._can_act():
            self._prompt("search", "")

    def action_command(self) -> None:
        if self._can_act():
            self._prompt("command")

    def action_print(self) -> None:
        if self._can_act():
            self._prompt("command", "print ")

    def action_write_checkpoint(self) -> None:
        if self._can_act():
            assert self.session is not None
            stem = Path(self.session.source_path).stem or "run"
            # Offered selected: typing a name replaces it (it was appended to, saving
            # `dice.step4.checkpoint.jsonmine.json`); Enter takes it, an arrow key edits it.
            default = f"{stem}.step{self.session.step}.checkpoint.json"
            self._prompt("write", default, selected=True)

    def action_open_checkpoint(self) -> None:
        if self._can_act():
            self._prompt("open")

    def action_help(self) -> None:
        keys = [
            (b.key_display or self.get_key_display(b), b.description)
            for b in _bindings(self.BINDINGS)
        ]
        commands = [(f":{usage}", about) for usage, about in COMMANDS.values()]
        self.push_screen(HelpScreen(keys, commands))

    def action_search_next(self) -> None:
        self.cmd_search("")

    def action_search_previous(self) -> None:
        if self._can_act():
            self._search(None, backwards=True)

    # -- why -------------------------------------------------------------------------------------

    def _no_variable_selected(self) -> str:
        # "select a variable first" at a step that has none sent people looking for one
        if not self.variables.has_variables:
            return "no variables at this step: step on (s) to where one is set"
        return "select a variable in the variables panel first"

    def action_why(self) -> None:
        if not self._can_act():
            return
        ref = self.variables.selected
        if ref is None:
            self._fail(self._no_variable_selected())
            return
        self._indexed(lambda: self._live.why(ref.name, ref.kind))

    def action_next_thread(self) -> None:
        self._thread(1)

    def action_prev_thread(self) -> None:
        self._thread(-1)

    def _thread(self, delta: int) -> None:
        if not self._can_act():
            return
        try:
            thread = self._live.cycle_thread(delta)
        except SessionError as exc:
            self._fail(exc)
            return
        active = self._live.state().active_thread
        self.notify(f"messages of thread {thread}" + (" (active)" if thread == active else ""))
        self._refresh_view()

    def action_cycle_strip(self) -> None:
        """Switch the timeline's strip between the tokens and the time the LLM calls took."""
        measure = self.timeline_bar.cycle_strip()
        if not self.timeline_bar.has_class("-spends"):
            self.notify(f"strip: {measure} (this run's LLM calls spent none)")
            return
        self.notify(f"strip: {'LLM latency' if measure == 'latency' else measure} per column")

    def action_zoom(self) -> None:
        """The selected variable (or a part of it) full-screen, to read, copy or save."""
        if not self._can_act():
            return
        s = self.session
        assert s is not None
        if isinstance(self.focused, LLMInspector):  # the whole request, which the panel cuts
            call = s.llm_call()
            if call is None:
                self._fail("there is no LLM call at or before this step")
                return
            at = call.get("step", s.step)
            save_as = f"{Path(s.source_path).stem or 'run'}.step{at}.llm.json"
            self.push_screen(ValueScreen(f"LLM call at step {at}", call, save_as))
            return
        ref = self.variables.selected
        if ref is None:
            self._fail(self._no_variable_selected())
            return
        value = ref.value
        if ref.kind in ("args", "locals", "globals") and not ref.path:
            try:
                value = s.current_value(ref.kind, ref.name)
            except (SessionError, KeyError):
                pass
        save_as = f"{Path(s.source_path).stem or 'value'}.step{s.step}.{ref.name}.json"
        self.push_screen(ValueScreen(f"{ref.label} at step {s.step}", value, save_as))

    def _indexed(self, fn: Callable[[], object]) -> None:
        """Run `fn` (a move that needs the run's write index) now when the index is built or
        the run is short; else build the index first in a worker, with progress and Esc."""
        s = self.session
        assert s is not None
        if s.indexed() or s.length <= SYNC_SEARCH_STEPS:
            self._move(fn)
            return
        self._begin("indexing the run", cancellable=True)
        self._index_worker(fn)

    @work(thread=True, exclusive=True, group="work", exit_on_error=False)
    def _index_worker(self, fn: Callable[[], object]) -> None:
        assert self.session is not None
        worker = get_current_worker()
        done = self.session.build_index(self._scan_progress, lambda: worker.is_cancelled)
        self._from_thread(self._index_done, fn if done else None)

    def _index_done(self, fn: Callable[[], object] | None) -> None:
        self._end()
        if fn is None:
            self.notify("cancelled")
            return
        self._move(fn)

    # -- long work ending ------------------------------------------------------------------------

    def _work_done(self, message: str) -> None:
        self._end()
        self.notify(message)
        self._refresh_view()

    def _work_failed(self, error: SessionError | str) -> None:
        self._end()
        self._fail(error)
        self._refresh_view()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # Long work runs with exit_on_error=False: an exception no layer foresaw (a bug, a
        # file nested past the recursion limit) ends the work, said in one line with its crash
        # file, and the debugger stays open on what it showed.
        worker = event.worker
        if event.state is not WorkerState.ERROR or worker.group != "work":
            return
        error = worker.error
        if error is None:
            return
        self._work_failed(internal_error_line(error))

    # -- the command palette ---------------------------------------------------------------------

    def action_command_palette(self) -> None:
        # Textual asks only whether the palette is the top screen; a worker's answer (`:trace`'s
        # list, a printed value) may have landed on top of it, and a second palette with the
        # same id ended the app (DuplicateIds).
        if any(isinstance(screen, CommandPalette) for screen in self.screen_stack):
            if not isinstance(self.screen, CommandPalette):
                self.notify("the command palette is open under this dialog: esc closes the dialog")
            return
        if self.use_command_palette:
            self.push_screen(DebuggerPalette(id="--command-palette"))

    def get_system_commands(self, screen: Screen[Any]) -> Any:
        for command in super().get_system_commands(screen):
            if command.title == "Keys":
                # Textual's key panel lists the panels' own bindings as they are declared:
                # "← Scroll Left" in the call stack, where ← steps back, and ctrl+c as copy,
                # where it quits. The palette's "Keys" opens the app's own help instead.
                yield SystemCommand("Keys", "every key and command (also ?)", self.action_help)
                continue
            yield command
        for binding in _bindings(self.BINDINGS):
            if binding.show or binding.action in ("quit", "cancel_work"):
                continue
            key = binding.key_display or self.get_key_display(binding)
            yield SystemCommand(
                binding.description,
                f"key {key}",
                partial(self.run_action, binding.action),
            )
        if self.session is not None and self.session.waiting_interrupt() is not None:
            yield SystemCommand(
                "Approve the interrupt", "and run on", partial(self._answer, "approve", "")
            )
            yield SystemCommand(
                "Reject the interrupt", "and run on", partial(self._answer, "reject", "")
            )
        yield SystemCommand("Discard staged edits", ":discard", partial(self.cmd_discard, ""))


def _bindings(bindings: list[BindingType]) -> list[Binding]:
    return [b for b in bindings if isinstance(b, Binding)]
