"""Provides `Session`, the pure model of one time-travel debugging session.

A session holds a `Timeline` (a recorded run), a cursor (the step on screen), the selected call
frame, the breakpoints, the edits staged at the cursor and the last search. Every move is a
method that computes a new step from the timeline and moves the cursor there; nothing here
re-executes the program except `restore` (which forks a branch and runs it live) and
`answer_interrupt` (which runs a paused recording on). Stepping back never calls a model.

This module imports no `textual` or `rich`: the TUI (`debugger.app`) asks a session to move and
draws what it says, and the tests drive a session without a terminal.

Values are the plain JSON-like data of `runtime.record.views`. How they are written is
`debugger.formatting`; what a person types (commands, `:set`, literals) is parsed by
`debugger.commands`.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from debugger.commands import parse_literal
from debugger.edits import Editing, EditPrompt, Edits
from debugger.errors import SessionError
from debugger.points import Points
from debugger.run_reading import lowest_where
from debugger.shapes import (
    SCAN_REPORT_EVERY,
    STOP_EVENTS,
    USER_HIDDEN_KINDS,
    Cancelled,
    Move,
    Progress,
    RunProgress,
    TimelineLike,
)
from debugger.stops import EventBreak, LineBreak
from debugger.watches import Watch, next_change
from runtime.agents.storage import AGENT_KIND, status_at
from runtime.errors import AgencyError
from runtime.language.files import read_text
from runtime.record.views import BranchInfo, Event, FrameView, Location, StateView

GUARD_POLL = "guard-poll"  # the effect runtime/vm/builtins_guard.py's `step_poll` records
END_OF_RUN = "end of the run"  # why a move stopped at the last step
END_SO_FAR = "the last step recorded so far (the run goes on)"  # that, on a run still recorded

__all__ = [
    "END_OF_RUN",
    "EditPrompt",
    "Edits",
    "Move",
    "Session",
    "SessionError",
    "TimelineLike",
    "Variables",
]


@dataclass
class Variables:
    """The variables at the cursor, as the variables panel shows them."""

    scope: str
    args: dict[str, Any]
    locals: dict[str, Any]
    globals: dict[str, Any]
    edited: set[tuple[str, str]] = field(default_factory=set)  # (kind, name) staged
    outcome: dict[str, Any] | None = None  # result (or error) of a run that has ended


def _first_step(timeline: Any) -> int:
    """The lowest recorded step (`kind_at` refuses unrecorded ones)."""
    return (
        lowest_where(len(timeline), lambda step: _recorded(timeline, step)) if len(timeline) else 0
    )


def _recorded(timeline: Any, step: int) -> bool:
    try:
        timeline.kind_at(step)
    except IndexError:
        return False
    return True


# -- the session ----------------------------------------------------------------------------------


class ScanCancelled(Exception):
    """A scan's `cancelled()` said stop part-way (the cursor stays where it was)."""


class Session(Points, Editing):
    """A cursor over a timeline plus everything a person sets while debugging.

    `recording` is the live `Recording` when this session ran the program itself (so an
    interrupt can be answered and the run continued); None for a stored run.
    """

    def __init__(
        self,
        timeline: TimelineLike,
        *,
        recording: Any = None,
        source: str | None = None,
        checkpoint_loader: Callable[[str, RunProgress | None], TimelineLike] | None = None,
    ) -> None:
        self.timeline = timeline
        self.recording = recording
        self.breakpoints: set[tuple[str, int]] = set()
        self.conditions: dict[tuple[str, int], LineBreak] = {}  # a breakpoint's if / hit
        self._condition_cache: dict[tuple[Any, ...], dict[int, bool]] = {}
        self.event_breaks: list[EventBreak] = []
        self.watches: list[Watch] = []
        self.thread: str | None = None  # the message thread chosen with `t` (None: the active)
        self._line_hits: dict[tuple[str, int], list[int]] = {}
        self._poll_steps: tuple[Any, frozenset[int]] = (None, frozenset())
        self.frame: int | None = None  # None: the innermost user frame
        self.edits: Edits | None = None
        self.last_search = ""
        self.message = ""  # why the last move stopped where it did
        self.max_steps: int | None = None  # the step budget of the recording, when it had one
        self.max_store_bytes: int | None = None  # the run-store size cap restores run under
        self._sources: dict[str, str] = {}
        self._typed: dict[str, dict[tuple[str, str], bool] | None] = {}
        if source is not None:
            self._sources[timeline.source_path] = source
        self._checkpoint_loader = checkpoint_loader
        self._state: StateView | None = None
        self._events: dict[str | None, list[Event]] = {}
        self._event_steps: dict[str, list[int]] = {}
        self._search_hits: dict[str, list[int]] = {}
        self._llm_calls: dict[int, dict[str, Any] | None] = {}
        self._length = -1
        self._first: int | None = None
        # the state's status at the last step of a branch: (run, branch, step), status
        self._end_status: tuple[tuple[Any, ...], str] = ((), "")
        self.step = self.first

    # -- reading ---------------------------------------------------------------------------------

    @property
    def length(self) -> int:
        """Number of steps of the current branch (a live recording can grow)."""
        n = len(self.timeline)
        if n != self._length:
            self._length = n
            self._events.clear()
            self._event_steps.clear()
            self._search_hits.clear()
            self._llm_calls.clear()
            self._line_hits.clear()
        return n

    @property
    def last(self) -> int:
        return max(self.length - 1, self.first)

    @property
    def first(self) -> int:
        """The first recorded step: 0, except for a run continued from a checkpoint, whose
        steps go on from the checkpoint's step."""
        if self._first is None:
            self._first = _first_step(self.timeline)
        return self._first

    @property
    def start_reason(self) -> str:
        """Why a move stopped at `first`: the start of the run, or, for a run continued from
        a checkpoint, of its record (`S` at a checkpoint's step 2 said "start of the run")."""
        if self.first:
            return f"start of the record: the run goes on from a checkpoint at step {self.first}"
        return "start of the run"

    @property
    def branch(self) -> int:
        return self.timeline.branch

    @property
    def source_path(self) -> str:
        return self.timeline.source_path

    def source_text(self, path: str | None = None) -> str:
        """The source text of `path` (default: the program's file); '' if it cannot be read."""
        path = path or self.source_path
        if path not in self._sources:
            program = getattr(self.timeline, "program", None)
            text = getattr(program, "source", None) if program is not None else None
            if not isinstance(text, str) or getattr(program, "path", None) != path:
                try:
                    text = read_text(path, "source file")  # never waits on a FIFO
                except (OSError, UnicodeDecodeError, AgencyError):
                    text = ""
            self._sources[path] = text
        return self._sources[path]

    def state(self) -> StateView:
        """The state at the cursor."""
        if self._state is None or self._state.step != self.step:
            self._state = self.timeline.state_at(self.step)
        return self._state

    def frame_index(self) -> int:
        """Index (outermost 0) of the selected frame; default the innermost user frame."""
        frames = self.state().frames
        if not frames:
            return 0
        if self.frame is not None and 0 <= self.frame < len(frames):
            return self.frame
        for i in range(len(frames) - 1, -1, -1):
            if frames[i].kind != "prelude":
                return i
        return len(frames) - 1

    def selected_frame(self) -> FrameView | None:
        frames = self.state().frames
        return frames[self.frame_index()] if frames else None

    def location(self) -> Location | None:
        return self.timeline.location_at(self.step)

    def shown_location(self) -> Location | None:
        """Where the source pane points: the current statement, or the pending call's line
        when a caller's frame is selected."""
        state = self.state()
        loc = state.location
        index = self.frame_index()
        if loc is None or not state.frames or index == len(state.frames) - 1:
            return loc
        f = state.frames[index]
        return Location(loc.file, f.scope, "", f.line, f.col, f.line, f.col)

    def staged(self) -> Edits | None:
        """The edits staged at the cursor (None when there are none)."""
        return self.edits if self.edits is not None and self.edits.step == self.step else None

    def variables(self) -> Variables:
        """What the variables panel shows: the selected frame with staged edits applied. At a
        run's end (no frame left) it is the last frame's variables as they were when it ended,
        beside the run's result."""
        state = self.state()
        frame = self.selected_frame()
        if frame is None and state.status in ("finished", "failed") and self.step > self.first:
            before = self.timeline.state_at(self.step - 1).frames
            users = [f for f in before if f.kind not in USER_HIDDEN_KINDS]
            frame = users[-1] if users else (before[-1] if before else None)
        shown = Variables(
            scope=frame.scope if frame is not None else "",
            args=dict(frame.args) if frame is not None else {},
            locals=dict(frame.locals) if frame is not None else {},
            globals=dict(state.globals),
        )
        edits = self.staged()
        if edits is not None:
            for kind in ("args", "locals", "globals"):
                for name, value in getattr(edits, kind).items():
                    getattr(shown, kind)[name] = value
                    shown.edited.add((kind, name))
        if state.status == "finished":
            shown.outcome = {"result": state.result}
        elif state.status == "failed":
            shown.outcome = {"error": state.error}
        return shown

    def run_status(self) -> str:
        """What the run on screen (its current branch) is, wherever the cursor stands:
        "finished", "failed", "interrupted" (stopped early and resumable, or waiting on an
        interrupt) or "running" (being recorded now, here or by another process). The state
        at the cursor says "running" at every step but the last, which is where the program
        was, not what the run is."""
        live = self._live_status()
        if live is not None:
            return live
        if self.following():  # another process is recording it: its row says so, and reading
            return "running"  # each new last step would move the reader away from the cursor
        last = self.last
        key = (self.timeline.run_id, self.branch, last)
        if self._end_status[0] != key:
            self._end_status = (key, self.timeline.state_at(last).status)
        status = self._end_status[1]
        if status != "running":
            return status
        run = getattr(self.timeline, "run", None)
        agent = (getattr(run, "meta", None) or {}).get("kind") == AGENT_KIND
        if not self._live_branch() and not agent:
            # The run's row is its main line's (branch 0); a branch that ends running is a
            # restore stopped early (esc, ctrl+c, a cap) that nothing records now.
            if self.branch != 0 or getattr(run, "status", None) == "interrupted":
                return "interrupted"
        if self.recording is None and run is not None:  # a Python agent's run: how it ended
            status = status_at(run, self.branch, last, last + 1, status)
        return status

    def _live_status(self) -> str | None:
        """The status of the run this session is recording, when the branch on screen is the
        one it records (None otherwise): its machine says, as the record may lag behind."""
        if not self._live_branch():
            return None
        machine = getattr(self.recording, "machine", None)
        status = getattr(machine, "status", None)
        if not isinstance(status, str):
            return None
        if status == "running":
            stopper = getattr(self.recording, "stopper", None)
            if stopper is not None and stopper.stopped():
                return "interrupted"  # stopped early (--max-steps, esc): resumable
        return status

    def following(self) -> bool:
        """Whether this is a stored run that another process is still recording (its row says
        running): worth looking at again now and then (`follow`)."""
        run = getattr(self.timeline, "run", None)
        return (
            self.recording is None
            and hasattr(self.timeline, "follow")
            and getattr(run, "status", None) == "running"
        )

    def follow_look(self) -> Any:
        """What `follow` needs from the store (the run's length and status), read now; safe
        from a worker thread, it changes nothing. None when the run is not followed or its
        timeline cannot be looked at apart (then `follow()` reads itself)."""
        if not self.following():
            return None
        look = getattr(self.timeline, "look", None)
        return look() if look is not None else None

    def follow(self, look: Any = None) -> bool:
        """Look again at a stored run another process is recording: its length and status
        (two small reads, or what `follow_look` read, off the UI thread). True when either
        changed (the view is then out of date); the cursor stays where it is."""
        if not self.following():
            return False
        again: Callable[..., bool] = getattr(self.timeline, "follow")  # noqa: B009 - not in the protocol
        if not (again() if look is None else again(look)):
            return False
        self._state = None
        self.length  # noqa: B018 - resets the caches that depend on it
        if self.message in (END_OF_RUN, END_SO_FAR) and self.step < self.last:
            self.message = "the run went on past this step"  # no longer its end
        return True

    def _live_branch(self) -> bool:
        rec = self.recording
        return (
            rec is not None
            and getattr(rec, "run_id", None) == self.timeline.run_id
            and self.branch == getattr(rec, "branch", 0)
        )

    def fork_step(self) -> int | None:
        """Where the branch on screen left its parent (None for branch 0)."""
        return next((b.fork_step for b in self.branches() if b.id == self.branch), None)

    def branch_forks(self) -> list[int]:
        """The steps of the timeline on screen where another branch leaves it: a branch whose
        parent shows the same steps as this one up to its fork (its parent is this branch, or
        one this branch shares those steps with). On the parent, nothing had marked where a
        restore made a branch."""
        infos = {b.id: b for b in self.branches()}
        lineage = set()  # this branch and those it descends from: their forks are its own
        branch: int | None = self.branch
        while branch is not None and branch in infos and branch not in lineage:
            lineage.add(branch)
            branch = infos[branch].parent
        steps = set()
        for b in infos.values():
            if b.id in lineage or b.parent is None or b.fork_step is None:
                continue
            apart = self.diverge(self.branch, b.parent)  # None: the same steps throughout
            if apart is None or b.fork_step <= apart:
                steps.add(b.fork_step)
        return sorted(steps)

    def changed_targets(self) -> set[str]:
        """Readable targets (`main.x`, `globals.total`, `output`) the current step wrote."""
        return {c.target for c in self.timeline.changes_at(self.step)}

    def changed_names(self) -> set[str]:
        """Variable names written by the current step (the part after the scope)."""
        fast = getattr(self.timeline, "changed_names", None)
        if fast is not None:
            return {n for n in fast(self.step, self.frame_index()) if not n.startswith("__")}
        names = set()
        for target in self.changed_targets():
            head, _, rest = target.partition(".")
            names.add(rest.split(".")[0].split("[")[0] if rest else head)
        return names

    def events(self, kind: str | None = None) -> list[Event]:
        """The timeline's markers (cached until the timeline changes)."""
        self.length  # noqa: B018 - refreshes the caches when a live run has grown
        if kind not in self._events:
            self._events[kind] = sorted(self.timeline.events(kind), key=lambda e: e.step)
        return self._events[kind]

    def event_steps(self, kind: str) -> list[int]:
        self.length  # noqa: B018
        if kind not in self._event_steps:
            self._event_steps[kind] = sorted({e.step for e in self.events(kind)})
        return self._event_steps[kind]

    def llm_step(self) -> int | None:
        """The step of the LLM call nearest at or before the cursor."""
        steps = self.event_steps("llm")
        i = bisect.bisect_right(steps, self.step) - 1
        return steps[i] if i >= 0 else None

    def llm_call(self) -> dict[str, Any] | None:
        """The LLM call nearest at or before the cursor (request, answer, usage), cached."""
        at = self.llm_step()
        if at is None:
            return None
        if at not in self._llm_calls:
            self._llm_calls[at] = self.timeline.llm_call_at(at)
        return self._llm_calls[at]

    def branches(self) -> list[BranchInfo]:
        return self.timeline.branches()

    def diverge(self, a: int, b: int) -> int | None:
        return self.timeline.diverge(a, b)

    def _set_timeline(self, timeline: TimelineLike) -> None:
        """Show `timeline` (another branch, a restored one, an opened checkpoint's run)."""
        self.timeline = timeline
        self._state = None
        self._length = -1
        self._first = None
        self.frame = None
        self.length  # noqa: B018 - resets the caches

    # -- moving ----------------------------------------------------------------------------------

    def goto(self, step: int, reason: str = "") -> Move:
        """Put the cursor on `step` (clamped to the run). Staged edits stay with their step (a
        stray key must not lose them); `restore` and `discard_edits` are the only ways out."""
        step = min(max(int(step), self.first), self.last)
        if step != self.step:
            self.frame = None
        self.step = step
        if reason == END_OF_RUN and self.following():
            reason = END_SO_FAR
        self.message = reason
        return Move(step, reason)

    def step_forward(self, n: int = 1) -> Move:
        target = self.step + n
        return self.goto(target, END_OF_RUN if target >= self.last else "")

    def step_back(self, n: int = 1) -> Move:
        target = self.step - n
        return self.goto(target, self.start_reason if target <= self.first else "")

    def next_over(self, cancelled: Cancelled | None = None) -> Move:
        """Step over calls: the next step in this frame or a caller (`depth <= here`)."""
        depth = self.timeline.depth_at(self.step)
        stops = {step for step, _ in self._stop_steps()}
        for j, at_j in zip(range(self.step + 1, self.last + 1), self._depths(self.step + 1)):
            if at_j <= depth:
                return self.goto(j)
            # inside the call: a breakpoint or `debugger()` there stops `n`, as in gdb and pdb
            try:
                at = bool(self.breakpoints) and self._at_breakpoint(j, cancelled)
            except ScanCancelled:
                return Move(self.step, "cancelled")
            if at:
                return self.goto(j, f"breakpoint at line {self._line(j)}")
            if j in stops:
                return self.goto(j, "debugger() in the call")
            if cancelled is not None and j % SCAN_REPORT_EVERY == 0 and cancelled():
                return Move(self.step, "cancelled")
        return self.goto(self.last, END_OF_RUN)

    def reverse_next(self, cancelled: Cancelled | None = None) -> Move:
        """Step back over calls: the previous step in this frame or a caller."""
        if self.step > self.first and self.timeline.kind_at(self.step) == "end":
            return self.goto(self.step - 1)  # the end has no frame: back to the last statement
        depth = self.timeline.depth_at(self.step)
        back = self._depths(self.step - 1, backward=True)
        for j, at_j in zip(range(self.step - 1, self.first - 1, -1), back):
            if at_j <= depth:
                return self.goto(j)
            if cancelled is not None and j % SCAN_REPORT_EVERY == 0 and cancelled():
                return Move(self.step, "cancelled")
        return self.goto(self.first, self.start_reason)

    def step_out(self, cancelled: Cancelled | None = None) -> Move:
        """Run (in the record) until the current function returns: the first later step in a
        caller (`depth < here`), as gdb's `finish`; the end when it never returns."""
        depth = self.timeline.depth_at(self.step)
        for j, at_j in zip(range(self.step + 1, self.last + 1), self._depths(self.step + 1)):
            if at_j < depth:
                return self.goto(j, f"returned from {self._scope_at(self.step)}")
            if cancelled is not None and j % SCAN_REPORT_EVERY == 0 and cancelled():
                return Move(self.step, "cancelled")
        return self.goto(self.last, END_OF_RUN)

    def reverse_step_out(self, cancelled: Cancelled | None = None) -> Move:
        """Back to where the current function was called: the last earlier step in a caller."""
        if self.step > self.first and self.timeline.kind_at(self.step) == "end":
            return self.goto(self.step - 1)  # the end has no frame: back to the last statement
        depth = self.timeline.depth_at(self.step)
        back = self._depths(self.step - 1, backward=True)
        for j, at_j in zip(range(self.step - 1, self.first - 1, -1), back):
            if at_j < depth:
                return self.goto(j, f"the call of {self._scope_at(self.step)}")
            if cancelled is not None and j % SCAN_REPORT_EVERY == 0 and cancelled():
                return Move(self.step, "cancelled")
        return self.goto(self.first, self.start_reason)

    def _depths(self, step: int, backward: bool = False) -> Iterator[int]:
        """The stack depths from `step` on (or back), a batch at a time where the timeline
        reads them so (`Timeline.depths_from`), else a step at a time."""
        walk = getattr(self.timeline, "depths_from", None)
        if walk is not None:
            yield from walk(step, backward)
            return
        steps = range(step, -1, -1) if backward else range(step, len(self.timeline))
        for j in steps:
            yield self.timeline.depth_at(j)

    def _scope_at(self, step: int) -> str:
        loc = self.timeline.location_at(step)
        return loc.scope if loc is not None and loc.scope else "this frame"

    def _stop_steps(self) -> list[tuple[int, str]]:
        stops = []
        for kind in STOP_EVENTS:
            for ev in self.events(kind):
                step = ev.step
                if kind == "debugger" and step > self.first:
                    # The event belongs to the step after `debugger()` (where its effect shows):
                    # stop on the statement itself, as gdb and pdb do.
                    step -= 1
                stops.append((step, f"{kind}: {ev.summary}" if ev.summary else kind))
        for brk in self.event_breaks:
            for ev in self.events(brk.event_kind):
                if brk.matches(ev.kind, ev.summary, ev.data):
                    step = self._tool_entry(ev) if ev.kind == "tool" else ev.step
                    stops.append((step, f"break {brk.describe()}: {ev.summary}"))
        stops.sort()
        return stops

    def _tool_entry(self, ev: Event) -> int:
        """Where a tool call begins: the first step in the tool's own frame (its first
        statement, before it runs), else the step that called it (the LLM call asking for it,
        or the tool before it in that round). The tool event itself is recorded once the tool
        has returned: stopping there is too late, as gdb and pdb break on entry."""
        before = [e.step for e in self.events() if e.kind in ("llm", "tool") and e.step < ev.step]
        start = max(before, default=self.first)
        name = (ev.data or {}).get("name")
        for step in range(start + 1, ev.step):
            loc = self.timeline.location_at(step)
            if loc is not None and loc.scope == name:
                return step
        return start

    def _at_breakpoint(
        self,
        step: int,
        cancelled: Cancelled | None = None,
        where: tuple[str, int] | None = None,
        polls: frozenset[int] | None = None,
    ) -> bool:
        """Whether `c` or `C` stops at `step` for a line breakpoint; `where` is the step's
        (file, line) and `polls` the run's `_guard_poll_steps()` when the caller has them."""
        if where is None:
            loc = self.timeline.location_at(step)
            if loc is None:
                return False
            where = (loc.file, loc.line)
        if where not in self.breakpoints:
            return False
        if step in (polls if polls is not None else self._guard_poll_steps()):
            return False  # the statement runs from its start after the check: it stops there
        extra = self.conditions.get(where)
        if extra is None:
            return True
        if extra.hit is not None:
            hits = self._hits(where[0], where[1], cancelled)
            if bisect.bisect_right(hits, step) != extra.hit:
                return False
        return self._condition_holds(where[0], where[1], extra, step)

    def _hits(self, file: str, line: int, cancelled: Cancelled | None = None) -> list[int]:
        """The steps of this branch at `file:line`, in order (one pass, cached; raises
        ScanCancelled when `cancelled()` says so part-way)."""
        self.length  # noqa: B018 - a grown recording drops the cache
        key = (file, line)
        if key not in self._line_hits and self._timeline_index() is not None:
            self._line_hits[key] = self._indexed_hits(file, line)
        if key not in self._line_hits:
            hits = []
            for j in range(self.first, self.last + 1):
                if cancelled is not None and j % SCAN_REPORT_EVERY == 0 and cancelled():
                    raise ScanCancelled
                loc = self.timeline.location_at(j)
                if loc is not None and loc.line == line and loc.file == file:
                    hits.append(j)
            self._line_hits[key] = hits
        polls = self._guard_poll_steps()
        if polls:
            self._line_hits[key] = [j for j in self._line_hits[key] if j not in polls]
        return self._line_hits[key]

    def _guard_poll_steps(self) -> frozenset[int]:
        """The steps where a time guard's check fired at the statement boundary: the statement
        had not started; it starts again, at a later step, once the check returns (runtime/vm/
        builtins_guard.py's `step_poll`). Such a step is not an arrival at its line: a
        breakpoint there stops (and a hit count counts) once, where the statement runs."""
        cache_key = (id(self.timeline), self.branch, self.length)
        if self._poll_steps[0] != cache_key:
            steps = set()
            for ev in self.events("effect"):
                data = ev.data or {}
                key = data.get("key")
                if data.get("kind") == GUARD_POLL and isinstance(key, str):
                    step = key.rsplit(":", 2)[-2] if key.count(":") >= 2 else ""
                    if step.isdigit():
                        steps.add(int(step))
            self._poll_steps = (cache_key, frozenset(steps))
        return self._poll_steps[1]

    def continue_forward(
        self, cancelled: Cancelled | None = None, progress: Progress | None = None
    ) -> Move:
        """Run forward (in the record) to a breakpoint, a `debugger()`, interrupt or error
        event, or the end."""
        stops = self._stop_steps()
        i = bisect.bisect_right(stops, (self.step, "\uffff"))
        limit, reason = stops[i] if i < len(stops) else (self.last, END_OF_RUN)
        limit = min(limit, self.last)
        limit, reason = self._watchpoint_before(limit, reason, False, cancelled)
        if cancelled is not None and cancelled():
            return Move(self.step, "cancelled")
        hit = self._scan_breakpoints(range(self.step + 1, limit + 1), cancelled, progress)
        if hit is not None:
            return hit
        return self.goto(limit, reason)

    def reverse_continue(
        self, cancelled: Cancelled | None = None, progress: Progress | None = None
    ) -> Move:
        """Run backward to a breakpoint, a `debugger()`, interrupt or error event, or step 0."""
        stops = self._stop_steps()
        i = bisect.bisect_left(stops, (self.step, "")) - 1
        limit, reason = stops[i] if i >= 0 else (self.first, self.start_reason)
        limit = max(limit, self.first)
        limit, reason = self._watchpoint_before(limit, reason, True, cancelled)
        if cancelled is not None and cancelled():
            return Move(self.step, "cancelled")
        hit = self._scan_breakpoints(range(self.step - 1, limit - 1, -1), cancelled, progress)
        if hit is not None:
            return hit
        return self.goto(limit, reason)

    def _watchpoint_before(
        self, limit: int, reason: str, backwards: bool, cancelled: Cancelled | None
    ) -> tuple[int, str]:
        """The nearest watchpoint change between the cursor and `limit` (and why), else
        `limit` and `reason` as they were."""
        for watch in self.watches:
            if not watch.stops:
                continue
            found = next_change(
                watch, self.timeline, self.step, self.first, self.last, backwards, cancelled, limit
            )
            if found is not None and (found > limit if backwards else found < limit):
                value = watch.describe(self.timeline.state_at(found))
                limit, reason = found, f"watchpoint: {value}"
        return limit, reason

    def _scan_breakpoints(
        self, steps: range, cancelled: Cancelled | None, progress: Progress | None
    ) -> Move | None:
        """The first step of `steps` at a breakpoint (a Move there), else None."""
        if not self.breakpoints:
            return None
        order: Sequence[int] = steps
        lines: Iterator[tuple[int, int, tuple[str, int] | None]]
        if self._timeline_index() is not None:
            found = self._hit_candidates(steps)  # the write index knows each line's steps
            order = list(found)
            lines = ((n, j, where) for n, (j, where) in enumerate(found.items()))
        elif steps.step > 0 and hasattr(self.timeline, "markers_from") and self._located():
            lines = self._arrivals(steps)  # a walk forward reads each batch's markers once
        else:
            lines = ((n, j, None) for n, j in enumerate(order))
        names = {n for c in self.conditions.values() if c.condition for n in c.condition.names}
        reader = getattr(self.timeline, "scope_reader", None)
        if names and reader is not None and steps.step > 0:
            # conditions read along the walk: one state moved forward, not a lookup per step
            self._scope_walk = reader(names)
        polls = self._guard_poll_steps()
        walk = self._scope_walk
        # A condition alone (no hit count) read along a walk is decided here, without the
        # calls `_at_breakpoint` makes for the general case: it is asked at every arrival.
        plain_conditions = {
            where: (extra, self._condition_reads(where[0], where[1], extra))
            for where, extra in self.conditions.items()
            if reader is not None and extra.hit is None and extra.condition is not None
        }
        if walk is None and plain_conditions and reader is not None:
            # backwards: each stretch of arrivals is read forward first, then gone through
            lines = self._read_ahead(lines, plain_conditions, polls, reader(names))
        try:
            for n, j, where in lines:
                quick = plain_conditions.get(where) if where is not None else None
                held = quick[1].get(j) if quick is not None else None
                try:
                    if quick is not None and where in self.breakpoints and j not in polls:
                        if held is None and walk is not None:
                            held = quick[1][j] = quick[0].holds_in(walk(j))
                        at = (
                            bool(held)
                            if held is not None
                            else self._at_breakpoint(j, cancelled, where, polls)
                        )
                    else:
                        at = self._at_breakpoint(j, cancelled, where, polls)
                except ScanCancelled:
                    return Move(self.step, "cancelled")
                if at:
                    return self.goto(j, f"breakpoint at line {self._line(j)}")
                if n % SCAN_REPORT_EVERY == SCAN_REPORT_EVERY - 1:
                    if progress is not None:
                        progress(n, len(order))
                    if cancelled is not None and cancelled():
                        return Move(self.step, "cancelled")
        finally:
            self._scope_walk = None
        return None

    def _read_ahead(
        self,
        lines: Iterator[tuple[int, int, tuple[str, int] | None]],
        conditions: dict[tuple[str, int], tuple[LineBreak, dict[int, bool]]],
        polls: frozenset[int],
        read: Callable[[int], dict[str, Any]],
    ) -> Iterator[tuple[int, int, tuple[str, int] | None]]:
        """`lines` as they come, each stretch of SCAN_REPORT_EVERY of them read first in
        ascending order (a walk backwards gets the forward walk's speed, a stretch at a time):
        the conditions alone there are decided into their reads."""
        stretch: list[tuple[int, int, tuple[str, int] | None]] = []
        for item in lines:
            stretch.append(item)
            if len(stretch) >= SCAN_REPORT_EVERY:
                self._decide(stretch, conditions, polls, read)
                yield from stretch
                stretch = []
        self._decide(stretch, conditions, polls, read)
        yield from stretch

    def _decide(
        self,
        stretch: list[tuple[int, int, tuple[str, int] | None]],
        conditions: dict[tuple[str, int], tuple[LineBreak, dict[int, bool]]],
        polls: frozenset[int],
        read: Callable[[int], dict[str, Any]],
    ) -> None:
        for _n, j, where in sorted(stretch, key=lambda item: item[1]):
            quick = conditions.get(where) if where is not None else None
            if quick is not None and j not in quick[1] and j not in polls:
                quick[1][j] = quick[0].holds_in(read(j))

    def _located(self) -> bool:
        """Whether the timeline lists its step locations (a marker's location id indexes it)."""
        return isinstance(getattr(self.timeline, "locations", None), list | tuple)

    def _arrivals(self, steps: range) -> Iterator[tuple[int, int, tuple[str, int] | None]]:
        """(n, step, (file, line)) for the steps of `steps` (ascending) at a line with a
        breakpoint, n counting every step walked (for progress and Esc), from the step
        markers read batch by batch; every SCAN_REPORT_EVERY steps a (n, step, ("", 0)) that
        matches no breakpoint, so progress and Esc are looked at on a stretch with no stop."""
        if not steps:
            return
        locations: Sequence[Location] = getattr(self.timeline, "locations", ())
        at_break = {
            i: (loc.file, loc.line)
            for i, loc in enumerate(locations)
            if (loc.file, loc.line) in self.breakpoints
        }
        last = steps[-1]
        markers: Iterator[int] = self.timeline.markers_from(steps[0])  # type: ignore[attr-defined]
        for n, marker in enumerate(markers):
            j = steps[0] + n
            if j > last:
                return
            where = at_break.get(marker >> 3)
            if where is not None:
                yield n, j, where
            elif n % SCAN_REPORT_EVERY == SCAN_REPORT_EVERY - 1:
                yield n, j, ("", 0)  # no breakpoint there: only progress and Esc

    def _line(self, step: int) -> int:
        loc = self.timeline.location_at(step)
        return loc.line if loc else 0

    def next_llm(self) -> Move:
        steps = self.event_steps("llm")
        i = bisect.bisect_right(steps, self.step)
        if i >= len(steps):
            self.message = "no later LLM call"
            return Move(self.step, self.message)
        return self.goto(steps[i], f"LLM call {i + 1} of {len(steps)}")

    def prev_llm(self) -> Move:
        steps = self.event_steps("llm")
        i = bisect.bisect_left(steps, self.step) - 1
        if i < 0:
            self.message = "no earlier LLM call"
            return Move(self.step, self.message)
        return self.goto(steps[i], f"LLM call {i + 1} of {len(steps)}")

    def parse_step(self, text: str) -> int:
        """A step typed by a person: `12`, `1_000`, `+10`, `-5`, `50%`, `end`."""
        t = text.strip().lower().replace("_", "").replace(",", "")
        if not t:
            raise SessionError("no step given: a number, +N, -N, N% or end")
        try:
            if t in ("end", "$", "last"):
                target = self.last
            elif t in ("start", "first"):
                target = self.first
            elif t.startswith(("+", "-")):
                target = self.step + int(t)
            elif t.endswith("%"):
                target = self.first + round((self.last - self.first) * float(t[:-1]) / 100)
            else:
                target = int(t)
        except ValueError:
            raise SessionError(f"not a step: `{text}` (a number, +N, -N, N% or end)") from None
        if not self.first <= target <= self.last:
            raise SessionError(f"step {target} is outside the run ({self.first}..{self.last})")
        return target

    def indexed(self) -> bool:
        """Whether last-writer and search answer at once (the timeline's write index is
        built, or the timeline needs none)."""
        indexed = getattr(self.timeline, "indexed", None)
        return indexed is None or bool(indexed())

    def build_index(
        self, progress: Progress | None = None, cancelled: Cancelled | None = None
    ) -> bool:
        """Build the timeline's write index (one pass over the run); False when cancelled."""
        index = getattr(self.timeline, "index", None)
        if index is None:
            return True
        from runtime.record.index import IndexCancelled

        try:
            index(progress, cancelled)
        except IndexCancelled:
            return False
        return True

    def search(self, text: str) -> list[int]:
        """Steps whose output, messages, changed variable names or called functions contain
        `text` (cached)."""
        self.length  # noqa: B018
        if text not in self._search_hits:
            self._search_hits[text] = sorted(set(self.timeline.search(text)))
        return self._search_hits[text]

    def searched(self, text: str) -> bool:
        """True when `search(text)` is cached (so it is instant)."""
        self.length  # noqa: B018
        return text in self._search_hits

    def search_next(self, text: str | None = None, backwards: bool = False) -> Move:
        """The next (or previous) match of `text` (default: the last search) from the cursor."""
        text = self.last_search if text is None else text
        if not text:
            raise SessionError("nothing to search for: type / and some text")
        self.last_search = text
        hits = self.search(text)
        if not hits:
            raise SessionError(f"`{text}` is nowhere in this run")
        wrapped = ""
        if backwards:
            i = bisect.bisect_left(hits, self.step) - 1
            if i < 0:
                i, wrapped = len(hits) - 1, " (wrapped to the last)"
        else:
            i = bisect.bisect_right(hits, self.step)
            if i >= len(hits):
                i, wrapped = 0, " (wrapped to the first)"
        return self.goto(hits[i], f"match {i + 1} of {len(hits)} for `{text}`{wrapped}")

    def why(self, name: str, kind: str | None = None) -> Move:
        """Jump to the step that last wrote variable `name` at or before the cursor (`kind`:
        the panel section it was chosen in; the run's outcome is no variable)."""
        if not name:
            raise SessionError("select a variable first")
        if kind == "run":
            raise SessionError(f"the run's {name} is what the node returned, not a variable")
        scope = "globals" if kind == "globals" else None
        step = self.timeline.last_write(name, self.step, self.frame_index(), scope)
        if step is None:
            raise SessionError(f"`{name}` was not written at or before step {self.step}")
        return self.goto(step, f"`{name}` last written here")

    def store_bytes(self) -> int | None:
        """How big the SQLite run store holding this run is on disk (with its write-ahead log);
        None for a store in memory or a database server."""
        store = getattr(self.timeline, "store", None)
        path = getattr(store, "path", None)
        if path is None:
            return None
        total = 0
        for suffix in ("", "-wal"):
            try:
                total += os.path.getsize(f"{path}{suffix}")
            except OSError:
                pass
        return total

    # -- frames -----------------------------------------------------------------------------------

    def select_frame(self, index: int) -> FrameView:
        frames = self.state().frames
        if not 0 <= index < len(frames):
            raise SessionError(f"there is no frame {index} at this step")
        self.frame = index
        frame = frames[index]
        depth = len(frames) - 1 - index  # as the call stack numbers it, innermost #0
        if frame.kind == "prelude":
            # its line is in the built-in prelude: the source pane had no line to point at
            # and said nothing
            self.message = f"frame #{depth}: {frame.scope} is built in, its source is not shown"
        else:
            self.message = f"frame #{depth}: {frame.scope}, line {frame.line}"
        return frame

    def frame_command(self, text: str) -> FrameView:
        """`:frame N`: select frame N counted as the call stack shows it (0 the innermost)."""
        try:
            depth = int(text)
        except ValueError:
            raise SessionError(
                f"not a frame number: `{text.strip()}` (0 is the innermost)"
            ) from None
        frames = self.state().frames
        if not 0 <= depth < len(frames):
            have = f"0..{len(frames) - 1}" if frames else "none"
            raise SessionError(f"there is no frame {depth} at this step (frames: {have})")
        return self.select_frame(len(frames) - 1 - depth)

    # -- live runs --------------------------------------------------------------------------------

    def note_stop(self, stopper: Any) -> None:
        """Keep the step budget the run was recorded under (the status line shows it) and say
        why the recording stopped early, when it did."""
        if stopper is None:
            return
        self.max_steps = stopper.max_steps
        self.max_store_bytes = stopper.max_store_bytes
        if stopper.stopped():
            run_id = self.timeline.run_id
            self.message = (
                f"{stopper.reason()} at step {self.last:,}; the run is saved as interrupted "
                f"(agency resume {run_id} runs it on)"
            )

    def waiting_interrupt(self) -> Any:
        """The pending interrupt of a live run paused at its end, else None."""
        rec = self.recording
        if rec is None or getattr(rec, "run_id", None) != self.timeline.run_id:
            return None
        if self.branch != getattr(rec, "branch", 0):
            return None
        machine = getattr(rec, "machine", None)
        if machine is None or getattr(machine, "status", None) != "interrupted":
            return None
        return machine.pending or {"message": "interrupt"}

    def interrupt_answer(self, action: str, text: str) -> Any:
        """The value typed after `:approve`, `:reject` or `:resolve` (a reason is plain text;
        the others are Agency literals). Refuses when no interrupt is waiting."""
        if self.waiting_interrupt() is None:
            raise SessionError("the run is not waiting on an interrupt")
        text = text.strip()
        if not text:
            if action == "resolve":
                raise SessionError("usage: :resolve VALUE")
            return None
        return text if action == "reject" else parse_literal(text)

    def answer_interrupt(
        self,
        action: str,
        value: Any = None,
        progress: RunProgress | None = None,
        stopper: Any = None,
    ) -> None:
        """Answer the live run's pending interrupt and run it on (recording every step)."""
        if self.waiting_interrupt() is None:
            raise SessionError("the run is not waiting on an interrupt")
        from runtime.errors import AgencyError
        from runtime.runs.runner import decision_from

        try:
            self.recording.continue_run(
                decision_from(action, value), progress=progress, stopper=stopper
            )
        except AgencyError as exc:
            raise SessionError(str(exc)) from None
        refresh = getattr(self.timeline, "refresh", None)
        if refresh is not None:
            refresh()
        self._state = None
        self._length = -1
        self.length  # noqa: B018
        self.message = f"interrupt answered ({action}): the run went on to step {self.last}"
        if stopper is not None and stopper.stopped():
            self.message += f" ({stopper.reason()})"
