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
import copy
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from debugger.commands import parse_literal, parse_set_command
from debugger.declarations import typed_names
from debugger.diff import DiffLine, diff_branches, diff_states
from debugger.errors import SessionError
from debugger.expressions import Expression, compile_expression, scope_of, show
from debugger.formatting import describe_value, json_type
from debugger.stops import EventBreak, LineBreak, parse_break
from debugger.watches import Watch, changes, next_change
from runtime.errors import AgencyError
from runtime.language.files import read_text
from runtime.record.views import BranchInfo, Change, Event, FrameView, Location, StateView

__all__ = [
    "EditPrompt",
    "Edits",
    "Move",
    "Session",
    "SessionError",
    "TimelineLike",
    "Variables",
]

Progress = Callable[[int, int], None]
"""Reports long work: `progress(done, total)`; total 0 when unknown."""

RunProgress = Callable[[int], None]
"""The runtime's progress callback while it runs or re-executes: the step reached."""

Cancelled = Callable[[], bool]
"""Asked now and then by long scans; True stops them early."""

# Kinds of timeline events `continue` stops at, besides breakpoints and the ends.
STOP_EVENTS = frozenset({"debugger", "interrupt", "error"})
# Frames a person cannot edit: the module's and the prelude's (builtins written in Agency).
USER_HIDDEN_KINDS = frozenset({"module", "prelude"})
SCAN_REPORT_EVERY = 4096


class TimelineLike(Protocol):
    """What a session needs from `runtime.record.timeline.Timeline` (documented there)."""

    run_id: str
    branch: int
    source_path: str

    def __len__(self) -> int: ...
    def state_at(self, step: int) -> StateView: ...
    def location_at(self, step: int) -> Location | None: ...
    def kind_at(self, step: int) -> str: ...
    def depth_at(self, step: int) -> int: ...
    def events(self, kind: str | None = None) -> list[Event]: ...
    def changes_at(self, step: int) -> list[Change]: ...
    def last_write(
        self, name: str, before: int, frame: int | None = None, scope: str | None = None
    ) -> int | None: ...
    def llm_call_at(self, step: int) -> dict[str, Any] | None: ...
    def search(self, text: str) -> list[int]: ...
    def branches(self) -> list[BranchInfo]: ...
    def switch(self, branch: int) -> TimelineLike: ...
    def diverge(self, a: int, b: int) -> int | None: ...
    def fork(
        self, step: int, edits: dict[str, Any], progress: RunProgress | None = None
    ) -> TimelineLike: ...
    def export_checkpoint(self, step: int) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Move:
    """Where a move landed and why it stopped there (shown in the status line)."""

    step: int
    reason: str = ""


@dataclass
class Edits:
    """Values changed at one step, waiting for `Session.restore` to run a branch with them.

    The shape of `as_dict()` is what `Timeline.fork` takes.
    """

    step: int
    frame: int
    locals: dict[str, Any] = field(default_factory=dict)
    args: dict[str, Any] = field(default_factory=dict)
    globals: dict[str, Any] = field(default_factory=dict)
    messages: dict[int, str] = field(default_factory=dict)
    llm_answer: Any = None
    has_llm_answer: bool = False

    def __len__(self) -> int:
        n = len(self.locals) + len(self.args) + len(self.globals) + len(self.messages)
        return n + (1 if self.has_llm_answer else 0)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"frame": self.frame}
        for key in ("locals", "args", "globals", "messages"):
            value = getattr(self, key)
            if value:
                out[key] = dict(value)
        if self.has_llm_answer:
            out["llm_answer"] = self.llm_answer
        return out

    def describe(self) -> list[str]:
        """One line per edit, e.g. `locals.x = 3`."""
        lines = [
            f"{kind}.{name} = {describe_value(value, 40)}"
            for kind in ("args", "locals", "globals")
            for name, value in getattr(self, kind).items()
        ]
        lines += [f"messages[{i}] = {describe_value(t, 40)}" for i, t in self.messages.items()]
        if self.has_llm_answer:
            lines.append(f"llm answer = {describe_value(self.llm_answer, 40)}")
        return lines


@dataclass(frozen=True, slots=True)
class EditPrompt:
    """What the edit dialog asks: its title, the value as text to start from, and a hint."""

    title: str
    text: str
    hint: str


@dataclass
class Variables:
    """The variables at the cursor, as the variables panel shows them."""

    scope: str
    args: dict[str, Any]
    locals: dict[str, Any]
    globals: dict[str, Any]
    edited: set[tuple[str, str]] = field(default_factory=set)  # (kind, name) staged
    outcome: dict[str, Any] | None = None  # result (or error) of a run that has ended


# -- paths inside values --------------------------------------------------------------------------------------


def _same_type(old: Any, new: Any) -> bool:
    return old is None or json_type(old) == json_type(new)


def _get_path(value: Any, path: list[str | int], name: str) -> Any:
    cur = value
    where = name
    for seg in path:
        if isinstance(seg, int) and isinstance(cur, list):
            if not -len(cur) <= seg < len(cur):
                raise SessionError(f"{where} has no index {seg} (length {len(cur)})")
            cur = cur[seg]
            where += f"[{seg}]"
        elif isinstance(cur, dict) and json_type(cur) == "object":
            key = str(seg)
            if key not in cur:
                raise SessionError(f"{where} has no field `{key}`")
            cur = cur[key]
            where += f".{key}"
        else:
            raise SessionError(f"{where} is a {json_type(cur)}; it has no `{seg}`")
    return cur


def _set_path(value: Any, path: list[str | int], new: Any) -> Any:
    if not path:
        return new
    out = copy.deepcopy(value)
    cur = out
    for seg in path[:-1]:
        cur = cur[seg if isinstance(cur, list) else str(seg)]
    last = path[-1]
    cur[last if isinstance(cur, list) else str(last)] = new
    return out


def _first_step(timeline: Any) -> int:
    """The lowest recorded step (binary search on `kind_at`, which refuses unrecorded ones)."""
    n = len(timeline)
    if n == 0 or _recorded(timeline, 0):
        return 0
    lo, hi = 0, n - 1  # step hi is recorded (the last one always is)
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if _recorded(timeline, mid):
            hi = mid
        else:
            lo = mid
    return hi


def _recorded(timeline: Any, step: int) -> bool:
    try:
        timeline.kind_at(step)
    except IndexError:
        return False
    return True


# -- the session ----------------------------------------------------------------------------------


class ScanCancelled(Exception):
    """A scan's `cancelled()` said stop part-way (the cursor stays where it was)."""


class Session:
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
        self.event_breaks: list[EventBreak] = []
        self.watches: list[Watch] = []
        self._line_hits: dict[tuple[str, int], list[int]] = {}
        self.frame: int | None = None  # None: the innermost user frame
        self.edits: Edits | None = None
        self.last_search = ""
        self.message = ""  # why the last move stopped where it did
        self.max_steps: int | None = None  # the step budget of the recording, when it had one
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
        """The run's status at the cursor as a person means it: a recording paused on an
        interrupt (live, or stored as interrupted) is "interrupted" at its last step, not
        "running"."""
        status = self.state().status
        if status != "running" or self.step != self.last:
            return status
        if self.waiting_interrupt() is not None:
            return "interrupted"
        run = getattr(self.timeline, "run", None)
        if self.recording is None and getattr(run, "status", None) == "interrupted":
            return "interrupted"
        stopper = getattr(self.recording, "stopper", None)
        if stopper is not None and stopper.stopped() and self._live_branch():
            return "interrupted"  # stopped early (--max-steps, esc): resumable
        return status

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

    # -- moving ----------------------------------------------------------------------------------

    def goto(self, step: int, reason: str = "") -> Move:
        """Put the cursor on `step` (clamped to the run). Staged edits stay with their step (a
        stray key must not lose them); `restore` and `discard_edits` are the only ways out."""
        step = min(max(int(step), self.first), self.last)
        if step != self.step:
            self.frame = None
        self.step = step
        self.message = reason
        return Move(step, reason)

    def step_forward(self, n: int = 1) -> Move:
        target = self.step + n
        return self.goto(target, "end of the run" if target >= self.last else "")

    def step_back(self, n: int = 1) -> Move:
        target = self.step - n
        return self.goto(target, "start of the run" if target <= self.first else "")

    def next_over(self, cancelled: Cancelled | None = None) -> Move:
        """Step over calls: the next step in this frame or a caller (`depth <= here`)."""
        depth = self.timeline.depth_at(self.step)
        stops = {step for step, _ in self._stop_steps()}
        for j in range(self.step + 1, self.last + 1):
            if self.timeline.depth_at(j) <= depth:
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
        return self.goto(self.last, "end of the run")

    def reverse_next(self, cancelled: Cancelled | None = None) -> Move:
        """Step back over calls: the previous step in this frame or a caller."""
        if self.step > self.first and self.timeline.kind_at(self.step) == "end":
            return self.goto(self.step - 1)  # the end has no frame: back to the last statement
        depth = self.timeline.depth_at(self.step)
        for j in range(self.step - 1, self.first - 1, -1):
            if self.timeline.depth_at(j) <= depth:
                return self.goto(j)
            if cancelled is not None and j % SCAN_REPORT_EVERY == 0 and cancelled():
                return Move(self.step, "cancelled")
        return self.goto(self.first, "start of the run")

    def step_out(self, cancelled: Cancelled | None = None) -> Move:
        """Run (in the record) until the current function returns: the first later step in a
        caller (`depth < here`), as gdb's `finish`; the end when it never returns."""
        depth = self.timeline.depth_at(self.step)
        for j in range(self.step + 1, self.last + 1):
            if self.timeline.depth_at(j) < depth:
                return self.goto(j, f"returned from {self._scope_at(self.step)}")
            if cancelled is not None and j % SCAN_REPORT_EVERY == 0 and cancelled():
                return Move(self.step, "cancelled")
        return self.goto(self.last, "end of the run")

    def reverse_step_out(self, cancelled: Cancelled | None = None) -> Move:
        """Back to where the current function was called: the last earlier step in a caller."""
        if self.step > self.first and self.timeline.kind_at(self.step) == "end":
            return self.goto(self.step - 1)  # the end has no frame: back to the last statement
        depth = self.timeline.depth_at(self.step)
        for j in range(self.step - 1, self.first - 1, -1):
            if self.timeline.depth_at(j) < depth:
                return self.goto(j, f"the call of {self._scope_at(self.step)}")
            if cancelled is not None and j % SCAN_REPORT_EVERY == 0 and cancelled():
                return Move(self.step, "cancelled")
        return self.goto(self.first, "start of the run")

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
                    stops.append((ev.step, f"break {brk.describe()}: {ev.summary}"))
        stops.sort()
        return stops

    def _at_breakpoint(self, step: int, cancelled: Cancelled | None = None) -> bool:
        loc = self.timeline.location_at(step)
        if loc is None or (loc.file, loc.line) not in self.breakpoints:
            return False
        extra = self.conditions.get((loc.file, loc.line))
        if extra is None:
            return True
        if extra.hit is not None:
            hits = self._hits(loc.file, loc.line, cancelled)
            if bisect.bisect_right(hits, step) != extra.hit:
                return False
        return extra.holds(self.timeline.state_at(step))

    def _hits(self, file: str, line: int, cancelled: Cancelled | None = None) -> list[int]:
        """The steps of this branch at `file:line`, in order (one pass, cached; raises
        ScanCancelled when `cancelled()` says so part-way)."""
        self.length  # noqa: B018 - a grown recording drops the cache
        key = (file, line)
        if key not in self._line_hits:
            hits = []
            for j in range(self.first, self.last + 1):
                if cancelled is not None and j % SCAN_REPORT_EVERY == 0 and cancelled():
                    raise ScanCancelled
                loc = self.timeline.location_at(j)
                if loc is not None and loc.line == line and loc.file == file:
                    hits.append(j)
            self._line_hits[key] = hits
        return self._line_hits[key]

    def continue_forward(
        self, cancelled: Cancelled | None = None, progress: Progress | None = None
    ) -> Move:
        """Run forward (in the record) to a breakpoint, a `debugger()`, interrupt or error
        event, or the end."""
        stops = self._stop_steps()
        i = bisect.bisect_right(stops, (self.step, "\uffff"))
        limit, reason = stops[i] if i < len(stops) else (self.last, "end of the run")
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
        limit, reason = stops[i] if i >= 0 else (self.first, "start of the run")
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
        for n, j in enumerate(steps):
            try:
                at = self._at_breakpoint(j, cancelled)
            except ScanCancelled:
                return Move(self.step, "cancelled")
            if at:
                return self.goto(j, f"breakpoint at line {self._line(j)}")
            if n % SCAN_REPORT_EVERY == SCAN_REPORT_EVERY - 1:
                if progress is not None:
                    progress(n, len(steps))
                if cancelled is not None and cancelled():
                    return Move(self.step, "cancelled")
        return None

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
        """Steps whose output, messages or changed variable names contain `text` (cached)."""
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

    # -- frames and breakpoints -------------------------------------------------------------------

    def select_frame(self, index: int) -> FrameView:
        frames = self.state().frames
        if not 0 <= index < len(frames):
            raise SessionError(f"there is no frame {index} at this step")
        self.frame = index
        return frames[index]

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

    def statement_lines(self, file: str | None = None) -> set[int] | None:
        """Lines of `file` where a step can start (None when the timeline does not say)."""
        file = file or self.source_path
        locations = getattr(self.timeline, "locations", None)
        if not locations:
            return None
        return {loc.line for loc in locations if loc.file == file}

    def toggle_breakpoint(self, line: int, file: str | None = None) -> tuple[int, bool]:
        """Set or clear a breakpoint. A line where no statement starts moves to the next one
        that has one (as gdb does). Returns the line and whether a breakpoint is now set."""
        file = file or self.source_path
        line = int(line)
        key = (file, line)
        if key in self.breakpoints:
            self.breakpoints.discard(key)
            self.conditions.pop(key, None)
            return line, False
        lines = self.statement_lines(file)
        if lines is not None and line not in lines:
            later = [n for n in lines if n > line]
            if not later:
                raise SessionError(f"no statement starts on or after line {line}")
            line = min(later)
            key = (file, line)
            if key in self.breakpoints:
                return line, True
        self.breakpoints.add(key)
        return line, True

    def break_command(self, text: str) -> tuple[int, int, bool]:
        """`:break LINE` in the file on screen: toggle it. Returns (line asked, line it landed
        on, whether a breakpoint is now set)."""
        try:
            line = int(text)
        except ValueError:
            raise SessionError(
                f"usage: :break LINE (a line number, not `{text.strip()}`)"
            ) from None
        loc = self.shown_location()
        path = loc.file if loc is not None else self.source_path
        if not 1 <= line <= max(len(self.source_text(path).splitlines()), 1):
            raise SessionError(f"line {line} is outside {path}")
        at, on = self.toggle_breakpoint(line, path)
        return line, at, on

    def break_spec(self, text: str) -> str:
        """`:break …` with a condition, a hit count or an event (plain lines toggle, as
        `break_command`): set it, or clear an event breakpoint given again. Says what it did."""
        spec = parse_break(text)
        if isinstance(spec, EventBreak):
            if spec in self.event_breaks:
                self.event_breaks.remove(spec)
                return f"no longer stopping on {spec.describe()}"
            self.event_breaks.append(spec)
            return f"c and C stop on {spec.describe()}"
        if spec.condition is None and spec.hit is None:
            line, at, on = self.break_command(str(spec.line))
            moved = f" (line {line} has no statement)" if at != line else ""
            return f"breakpoint {'set' if on else 'cleared'} at line {at}{moved}"
        loc = self.shown_location()
        path = loc.file if loc is not None else self.source_path
        at, _ = self.toggle_breakpoint(spec.line, path)
        if (path, at) not in self.breakpoints:  # it was set: toggling cleared it; set it again
            self.toggle_breakpoint(at, path)
        self.conditions[(path, at)] = LineBreak(at, spec.condition, spec.hit)
        return f"breakpoint at {self.conditions[(path, at)].describe()}"

    def breakpoints_described(self) -> list[str]:
        """Every breakpoint, as `:breaks` lists them."""
        out = []
        for file, line in sorted(self.breakpoints):
            extra = self.conditions.get((file, line))
            out.append(f"{file}:{extra.describe() if extra else f'line {line}'}")
        out += [f"on {brk.describe()}" for brk in self.event_breaks]
        return out

    # -- watches and expressions -----------------------------------------------------------------

    def _watch_function(self, expression: Expression) -> str | None:
        """The function a new watch reads: the selected frame's when a frame was chosen, else
        the innermost one that has the names it reads (None: wherever they are visible)."""
        state = self.state()
        frames = state.frames
        if self.frame is not None and 0 <= self.frame < len(frames):
            return frames[self.frame].scope
        for f in reversed(frames):
            if f.kind != "prelude" and expression.resolves(f, state.globals):
                return f.scope
        return None

    def add_watch(self, text: str, stops: bool = False) -> Watch:
        """Watch an expression (read in the selected frame's function); a watchpoint also
        stops `c` and `C` where its value changes. The same text again replaces it."""
        expression = compile_expression(text)
        watch = Watch(expression, self._watch_function(expression), stops)
        self.watches = [w for w in self.watches if w.text != watch.text] + [watch]
        return watch

    def remove_watch(self, text: str) -> int:
        """`:unwatch N` (1-based, as listed), `:unwatch EXPR` or `:unwatch all`: how many went."""
        text = text.strip()
        before = len(self.watches)
        if text == "all":
            self.watches = []
        elif text.isdigit() and 1 <= int(text) <= before:
            del self.watches[int(text) - 1]
        else:
            self.watches = [w for w in self.watches if w.text != text]
        if len(self.watches) == before:
            raise SessionError(f"no watch `{text}` (give its number, its text or all)")
        return before - len(self.watches)

    def watch_lines(self) -> list[tuple[Watch, str]]:
        """Each watch with what it reads at the cursor."""
        state = self.state()
        return [(w, w.describe(state)) for w in self.watches]

    def print_expression(self, text: str) -> str:
        """`:print EXPR`: its value at the cursor, in the selected frame (nothing runs)."""
        expr = compile_expression(text)
        state = self.state()
        frames = state.frames
        frame = self.frame_index() if frames else None
        scope = scope_of(state, frame) if frames else dict(state.globals)
        return f"{expr.text} = {show(expr.evaluate(scope), 400)}"

    def trace(self, text: str, cancelled: Cancelled | None = None) -> list[tuple[int, str]]:
        """`:trace EXPR`: every step of this branch where its value changes, with the value."""
        expression = compile_expression(text)
        watch = Watch(expression, self._watch_function(expression))
        found = changes(watch, self.timeline, self.first, self.last, cancelled)
        return [(step, show(value, 120)) for step, value in found]

    def diff(self, text: str) -> tuple[str, list[DiffLine]]:
        """`:diff A B` (two steps of this branch; `:diff B` from the cursor) or `:diff branch
        N`: a title and the differences."""
        words = text.split()
        if len(words) == 2 and words[0] == "branch":
            try:
                other = int(words[1])
            except ValueError:
                raise SessionError(f"not a branch number: `{words[1]}`") from None
            if other not in {b.id for b in self.branches()}:
                raise SessionError(f"there is no branch {other}")
            if other == self.branch:
                raise SessionError("that is the branch on screen: give another")
            lines = diff_branches(
                self.timeline, self.timeline.switch(other), self.diverge(self.branch, other)
            )
            return f"branch {self.branch} → branch {other}", lines
        if len(words) not in (1, 2):
            raise SessionError("usage: :diff STEP [STEP]  or  :diff branch N")
        a, b = (
            (self.step, self.parse_step(words[0]))
            if len(words) == 1
            else (
                self.parse_step(words[0]),
                self.parse_step(words[1]),
            )
        )
        states = self.timeline.state_at(a), self.timeline.state_at(b)
        return f"step {a} → step {b}", diff_states(*states)

    def breakpoint_lines(self, file: str | None = None) -> set[int]:
        file = file or self.source_path
        return {line for f, line in self.breakpoints if f == file}

    # -- changing the past ------------------------------------------------------------------------

    def _staged(self) -> Edits:
        self._check_edits_here()
        if self.edits is None or not len(self.edits):
            self.edits = Edits(self.step, self._user_frame_index())
        return self.edits

    def _check_edits_here(self) -> None:
        """Refuse to act at the cursor while edits wait at another step (they would be lost)."""
        if self.edits is not None and len(self.edits) and self.edits.step != self.step:
            n = len(self.edits)
            raise SessionError(
                f"{n} edit{'s are' if n != 1 else ' is'} staged at step {self.edits.step}: "
                f"go back (g {self.edits.step}) to restore, or :discard"
            )

    def restore_plan(self) -> str:
        """What a restore from the cursor would run again, live: the recorded LLM and tool
        calls after it on this branch (with a real model, they are paid for again)."""
        later = {
            kind: sum(1 for e in self.events(kind) if e.step >= self.step)
            for kind in ("llm", "tool", "interrupt")
        }
        parts = [f"steps {self.step}..{self.last} run again, live"]
        if later["llm"]:
            parts.append(f"{later['llm']} LLM call{'s' if later['llm'] != 1 else ''} made again")
        if later["tool"]:
            parts.append(f"{later['tool']} tool call{'s' if later['tool'] != 1 else ''}")
        if later["interrupt"]:
            parts.append("interrupts asked again")
        return "; ".join(parts)

    def pending_edits(self) -> Edits | None:
        """The staged edits wherever they are (None when there are none)."""
        return self.edits if self.edits is not None and len(self.edits) else None

    def _user_frame_index(self) -> int:
        """The selected frame counted among user frames (what `Timeline.fork` indexes);
        -1 (the innermost) when a builtin's frame is selected."""
        frames = self.state().frames
        selected = self.frame_index()
        users = [i for i, f in enumerate(frames) if f.kind not in USER_HIDDEN_KINDS]
        return users.index(selected) if selected in users else -1

    def current_value(self, kind: str, name: str) -> Any:
        """The value of `name` in `kind` (locals, args, globals) of the selected frame, with
        staged edits applied."""
        staged = self.edits if self.edits is not None and self.edits.step == self.step else None
        if staged is not None and name in getattr(staged, kind):
            return getattr(staged, kind)[name]
        if kind == "globals":
            return self.state().globals[name]
        frame = self.selected_frame()
        if frame is None:
            raise SessionError("there is no frame at this step")
        return getattr(frame, kind)[name]

    def resolve(self, name: str) -> str:
        """Which scope `name` is in at the selected frame: locals, args or globals."""
        frame = self.selected_frame()
        if frame is not None and name in frame.locals:
            return "locals"
        if frame is not None and name in frame.args:
            return "args"
        if name in self.state().globals:
            return "globals"
        where = f" in {frame.scope}" if frame is not None else ""
        raise SessionError(f"no variable `{name}`{where} at step {self.step}")

    def edit_variable(
        self, kind: str | None, name: str, value: Any, path: Iterable[str | int] = ()
    ) -> str:
        """Stage `name[path] = value`. A variable declared with a type keeps it (a value of
        another type is refused); an untyped one takes any plain value, null included.
        Returns `kind.name`."""
        if kind is None:
            kind = self.resolve(name)
        if kind not in ("locals", "args", "globals"):
            raise SessionError(f"the run's {name} cannot be edited; edit a variable before it")
        if kind != "globals":
            frame = self.selected_frame()
            if frame is not None and frame.kind in USER_HIDDEN_KINDS:
                raise SessionError(
                    f"`{frame.scope}` is a builtin's frame; select a frame of your program"
                )
        path = list(path)
        try:
            whole = self.current_value(kind, name)
        except KeyError:
            raise SessionError(f"no variable `{name}` in {kind} at step {self.step}") from None
        old = _get_path(whole, path, name)
        where = name + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in path)
        if json_type(old) in ("result", "function"):
            raise SessionError(f"{where} is a {json_type(old)}; only plain values can be edited")
        if json_type(value) in ("result", "function"):
            raise SessionError(f"only plain values can be set, not a {json_type(value)}")
        typed = self._declared_with_type(kind, name)
        if typed is not False and not _same_type(old, value):
            why = "declared with a type" if typed else "its declaration was not found"
            raise SessionError(
                f"{where} is a {json_type(old)}, not a {json_type(value)}: edit refused "
                f"({why}; type a {json_type(old)})"
            )
        staged = self._staged()
        getattr(staged, kind)[name] = _set_path(whole, path, value)
        return f"{kind}.{where}"

    def _declared_with_type(self, kind: str, name: str) -> bool | None:
        """Was `name` (of `kind`, in the selected frame) declared with a type? None when its
        declaration cannot be found (then an edit keeps the value's type, to be safe)."""
        frame = self.selected_frame()
        loc = self.state().location
        path = loc.file if loc is not None else self.source_path
        if path not in self._typed:
            self._typed[path] = typed_names(self.source_text(path), path)
        table = self._typed[path]
        if table is None:
            return None
        scope = "" if kind == "globals" or frame is None else frame.scope
        return table.get((scope, name))

    def thread_messages(self) -> tuple[Any, ...]:
        state = self.state()
        return state.threads.get(state.active_thread, ())

    def edit_message(self, index: int, text: Any) -> str:
        """Stage a new text for message `index` of the active thread; returns what was staged."""
        messages = self.thread_messages()
        if not 0 <= index < len(messages):
            raise SessionError(f"there is no message {index} in the active thread at this step")
        if not isinstance(text, str):
            raise SessionError(f"a message's text is a string, not a {json_type(text)}")
        self._staged().messages[index] = text
        return f"message {index}"

    def message_prompt(self, index: int) -> EditPrompt:
        """The edit dialog for message `index` of the active thread (staged text first)."""
        messages = self.thread_messages()
        if not 0 <= index < len(messages):
            raise SessionError(f"there is no message {index} in the active thread at this step")
        staged = self.staged()
        text = staged.messages.get(index) if staged is not None else None
        return EditPrompt(
            f"Edit message {index} ({messages[index].role})",
            messages[index].content if text is None else text,
            "the new text, as typed (no quotes); enter stages it, esc cancels",
        )

    def answer_prompt(self) -> EditPrompt:
        """The edit dialog for the answer of the LLM call made at this step."""
        call = self.llm_answer_here()
        if call is None:
            raise SessionError("this step made no LLM call: go to one with [ or ] first")
        return EditPrompt(
            f"Edit the LLM answer at step {self.step} ({json_type(call.get('value'))})",
            describe_value(call.get("value"), 1_000_000),
            'an Agency literal: 3, "text", [1, 2], {a: 1}; enter stages it',
        )

    @staticmethod
    def variable_prompt(kind: str, label: str, value: Any) -> EditPrompt:
        """The edit dialog for variable `label` (a name and maybe a path) of `kind`."""
        return EditPrompt(
            f"Edit {kind}.{label} ({json_type(value)})",
            describe_value(value, 1_000_000),
            'an Agency literal: 3, -1.5, "text", true, null, [1, 2], {a: 1}; '
            "enter stages it, r restores from here",
        )

    def llm_answer_here(self) -> dict[str, Any] | None:
        """The LLM call answered at exactly this step (None when this step made none)."""
        steps = self.event_steps("llm")
        i = bisect.bisect_left(steps, self.step)
        if i < len(steps) and steps[i] == self.step:
            return self.llm_call()
        return None

    def edit_llm_answer(self, value: Any) -> str:
        """Stage a different answer for the LLM call made at this step; returns what was
        staged."""
        call = self.llm_answer_here()
        if call is None:
            raise SessionError(
                "this step made no LLM call: go to one with [ or ] to edit its answer"
            )
        old = call.get("value")
        if not _same_type(old, value):
            raise SessionError(
                f"the answer is a {json_type(old)}, not a {json_type(value)}: edit refused"
            )
        staged = self._staged()
        staged.llm_answer = value
        staged.has_llm_answer = True
        return "the LLM answer"

    def set_command(self, text: str) -> str:
        """Apply `:set TARGET = VALUE` (targets: a variable, `locals.x`, `args.x`, `globals.x`,
        paths such as `obj.a[0]`, `messages[i]`, `answer`). Returns what was staged."""
        head, path, value = parse_set_command(text)
        if head in ("locals", "args", "globals"):
            if not path or not isinstance(path[0], str):
                raise SessionError(f"usage: :set {head}.NAME = VALUE")
            return self.edit_variable(head, str(path[0]), value, path[1:])
        if head == "messages" and len(path) == 1 and isinstance(path[0], int):
            if head not in self._names_in_scope():
                return self.edit_message(path[0], value)
        if head == "answer" and not path and head not in self._names_in_scope():
            return self.edit_llm_answer(value)
        return self.edit_variable(None, head, value, path)

    def _names_in_scope(self) -> set[str]:
        frame = self.selected_frame()
        names = set(self.state().globals)
        if frame is not None:
            names |= set(frame.locals) | set(frame.args)
        return names

    def discard_edits(self) -> int:
        """Drop the staged edits; returns how many there were."""
        count = len(self.edits) if self.edits is not None else 0
        self.edits = None
        return count

    def restore(self, progress: RunProgress | None = None, stopper: Any = None) -> int:
        """Restore from the cursor: fork a branch with the staged edits and run it live (until
        `stopper`, if given, stops it). The cursor stays on the fork step, now in the new
        branch; returns the branch id."""
        self._check_edits_here()
        edits = self.edits.as_dict() if self.edits is not None else {}
        edits.setdefault("frame", self._user_frame_index())
        step = self.step
        from runtime.errors import AgencyError

        try:
            if stopper is None:
                timeline = self.timeline.fork(step, edits, progress)
            else:
                timeline = self.timeline.fork(step, edits, progress, stopper=stopper)
        except AgencyError as exc:
            raise SessionError(f"cannot restore from step {step}: {exc}") from None
        self._set_timeline(timeline)
        self.step = min(step, self.last)
        self.edits = None
        self.message = f"restored from step {step}: branch {self.branch}"
        if stopper is not None and stopper.stopped():
            self.message += f" ({stopper.reason()} at step {self.last:,})"
        return self.branch

    def switch_branch(self, branch: int) -> int:
        """Show another branch; the cursor keeps its step where the branch has it."""
        known = {b.id for b in self.branches()}
        if branch not in known:
            raise SessionError(f"there is no branch {branch} (branches: {sorted(known)})")
        self._set_timeline(self.timeline.switch(branch))
        self.goto(min(self.step, self.last), f"branch {branch}")
        return branch

    def diverge(self, a: int, b: int) -> int | None:
        return self.timeline.diverge(a, b)

    def _set_timeline(self, timeline: TimelineLike) -> None:
        self.timeline = timeline
        self._state = None
        self._length = -1
        self._first = None
        self.frame = None
        self.length  # noqa: B018 - resets the caches

    def save_checkpoint(self, path: str) -> str:
        """Write the state at the cursor as a checkpoint JSON file; returns the path."""
        if not path.strip():
            raise SessionError("no file name given for the checkpoint")
        data = self.timeline.export_checkpoint(self.step)
        target = Path(path).expanduser()
        try:
            if target.parent and not target.parent.exists():
                raise SessionError(f"cannot write {path}: folder {target.parent} does not exist")
            with open(target, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=2)
                fh.write("\n")
        except OSError as exc:
            raise SessionError(f"cannot write {path}: {exc.strerror or exc}") from None
        return str(target)

    def open_checkpoint(self, path: str, progress: RunProgress | None = None) -> None:
        """Replace the timeline with a run continued from checkpoint file `path`."""
        if self._checkpoint_loader is None:
            raise SessionError("this session cannot open checkpoint files")
        from runtime.errors import AgencyError

        try:
            timeline = self._checkpoint_loader(path, progress)
        except AgencyError as exc:
            raise SessionError(str(exc)) from None
        self.recording = None
        self._set_timeline(timeline)
        self.goto(self.first, f"opened checkpoint {path}")

    # -- live runs --------------------------------------------------------------------------------

    def note_stop(self, stopper: Any) -> None:
        """Keep the step budget the run was recorded under (the status line shows it) and say
        why the recording stopped early, when it did."""
        if stopper is None:
            return
        self.max_steps = stopper.max_steps
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


# -- opening sessions -----------------------------------------------------------------------------


def _checkpoint_loader(program: Any, config: Any) -> Callable[[str, RunProgress | None], Any]:
    """Opens checkpoint files of `program` as new recorded runs (for `Session.open_checkpoint`)."""

    def load(path: str, progress: RunProgress | None = None) -> Any:
        from runtime.runs.recording import at_checkpoint_step, record_machine
        from runtime.vm.builtins import World
        from runtime.vm.checkpoints import load_file
        from runtime.vm.rebuild import rebuild

        prog = program() if callable(program) else program
        data = load_file(path, prog)
        model = config.make_model() if config is not None else None
        machine = rebuild(prog, data, model=model, world=World(quiet=True))
        return record_machine(machine, at_step=at_checkpoint_step(data), progress=progress).timeline

    return load


def record_session(
    program: Any,
    config: Any,
    store: Any = None,
    progress: RunProgress | None = None,
    stopper: Any = None,
) -> Session:
    """Run `program` under the recorder (to its end, an unanswered interrupt, or until
    `stopper` stops it: a step budget, a cancel); a session at step 0 of that run."""
    from runtime.runs.recording import record_program

    config.quiet = True  # the program's prints belong in the output panel, not the terminal
    recording = record_program(program, config, store=store, progress=progress, stopper=stopper)
    session = Session(
        recording.timeline,
        recording=recording,
        source=program.source,
        checkpoint_loader=_checkpoint_loader(program, config),
    )
    session.note_stop(stopper)
    return session


def checkpoint_session(
    program: Any,
    path: str,
    config: Any,
    store: Any = None,
    progress: RunProgress | None = None,
    stopper: Any = None,
) -> Session:
    """A session over a run continued from checkpoint file `path` (checked against `program`:
    a checkpoint of another source raises CheckpointFormatError saying so)."""
    from runtime.runs.recording import at_checkpoint_step, record_machine, run_config_of
    from runtime.vm.builtins import World
    from runtime.vm.checkpoints import load_file
    from runtime.vm.rebuild import rebuild

    config.quiet = True
    data = load_file(path, program)
    machine = rebuild(program, data, model=config.make_model(), world=World(quiet=True))
    recording = record_machine(
        machine,
        store=store,
        config=run_config_of(config, machine.model, str(Path(path).resolve())),
        at_step=at_checkpoint_step(data),
        progress=progress,
        stopper=stopper,
    )
    session = Session(
        recording.timeline,
        recording=recording,
        source=program.source,
        checkpoint_loader=_checkpoint_loader(program, config),
    )
    session.message = f"opened checkpoint {path} (step {data.get('step', '?')} of its run)"
    session.note_stop(stopper)
    return session


def trace_session(store: Any, run_id: str | None = None, branch: int = 0) -> Session:
    """A session over a stored run (the latest when `run_id` is None)."""
    from runtime.errors import AgencyError
    from runtime.runs.fork import Timeline

    if run_id is None:
        latest = store.latest_run()
        if latest is None:
            raise AgencyError("the run store holds no runs yet")
        run_id = latest.id
    timeline = Timeline.open(store, run_id, branch)

    def program() -> Any:
        from runtime.language.program import load_program

        return load_program(timeline.source_path)

    return Session(
        timeline, checkpoint_loader=_checkpoint_loader(program, _RecordedModel(timeline))
    )


class _RecordedModel:
    """The model a stored run was recorded with, for runs continued from its checkpoints."""

    def __init__(self, timeline: Any) -> None:
        self.timeline = timeline

    def make_model(self) -> Any:
        from runtime.runs.fork import live_model

        return live_model(self.timeline)
