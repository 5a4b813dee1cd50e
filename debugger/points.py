"""Provides `Points`, the part of a `Session` that says where to stop and what to read there:
line breakpoints (with a condition or a hit count), event breakpoints, watches and watchpoints,
`:print`, `:trace` and `:diff`. Parsing is `debugger.stops` and `debugger.expressions`; finding
changes is `debugger.watches`; comparing is `debugger.diff`.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, Protocol

from debugger.diff import DiffLine, diff_branches, diff_states
from debugger.errors import SessionError
from debugger.expressions import Expression, compile_expression, scope_of, show
from debugger.shapes import Cancelled, Progress, SessionReading
from debugger.stops import EventBreak, LineBreak, parse_break
from debugger.watches import Watch, changes
from runtime.record.views import Event, Location, StateView

__all__ = ["Points", "SessionForPoints"]


class SessionForPoints(SessionReading, Protocol):
    """What `Points` needs from the rest of `Session` (moving and reading the record)."""

    step: int
    message: str

    @property
    def length(self) -> int: ...

    def shown_location(self) -> Location | None: ...
    def _hits(self, file: str, line: int, cancelled: Cancelled | None = None) -> list[int]: ...
    def _stop_steps(self) -> list[tuple[int, str]]: ...
    def diverge(self, a: int, b: int) -> int | None: ...
    def parse_step(self, text: str) -> int: ...
    def events(self, kind: str | None = None) -> list[Event]: ...


if TYPE_CHECKING:
    _Session = SessionForPoints
else:
    _Session = object


class Points(_Session):
    """Breakpoints, watches and expressions of a session (mixed into `Session`)."""

    breakpoints: set[tuple[str, int]]
    conditions: dict[tuple[str, int], LineBreak]
    _condition_cache: dict[tuple[Any, ...], dict[int, bool]]  # see `_condition_reads`
    _scope_walk: Callable[[int], dict[str, Any]] | None = None  # set by a scan forward
    _reads_memo: tuple[LineBreak, tuple[Any, int, int], dict[int, bool]] | None = None
    event_breaks: list[EventBreak]
    watches: list[Watch]

    # -- breakpoints -------------------------------------------------------------------------------

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
            if not any(
                spec.matches(ev.kind, ev.summary, ev.data) for ev in self.events(spec.event_kind)
            ):  # a misspelt tool name, say: c would run to the end without a word
                return f"c and C stop on {spec.describe()} (it has not happened in this run)"
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

    # -- where breakpoints hit (the scrubber's marks, `c` on an indexed run) --------------------

    def _timeline_index(self) -> Any:
        """The timeline's write index when it is built (None otherwise: reading it would
        mean a pass over the whole run)."""
        indexed = getattr(self.timeline, "indexed", None)
        if indexed is None or not indexed():
            return None
        return self.timeline.index()  # type: ignore[attr-defined]

    def _indexed_hits(self, file: str, line: int) -> list[int]:
        """The steps of this branch at `file:line`, from the write index's steps per
        location (no pass over the run)."""
        index = self._timeline_index()
        hits: list[int] = []
        for loc_id, loc in enumerate(getattr(self.timeline, "locations", ())):
            if loc.line == line and loc.file == file:
                hits += index.at_location.get(loc_id, ())
        hits.sort()
        lo, hi = bisect.bisect_left(hits, self.first), bisect.bisect_right(hits, self.last)
        return hits[lo:hi]

    def _hit_candidates(self, steps: range) -> dict[int, tuple[str, int]]:
        """The steps of `steps` (in its order) at a line that has a breakpoint, each with its
        (file, line)."""
        if not steps:
            return {}
        lo, hi = min(steps[0], steps[-1]), max(steps[0], steps[-1])
        found: dict[int, tuple[str, int]] = {}
        for file, line in self.breakpoints:
            hits = self._hits(file, line)
            for step in hits[bisect.bisect_left(hits, lo) : bisect.bisect_right(hits, hi)]:
                found[step] = (file, line)
        return {step: found[step] for step in sorted(found, reverse=steps.step < 0)}

    def breakpoint_marks(
        self, scan_limit: int = 50_000, budget: int = 2048
    ) -> tuple[list[int], list[int]] | None:
        """Where `c` and `C` stop for a breakpoint, for the scrubber: (steps where one stops,
        steps at a conditional breakpoint's line whose condition was not read: past `budget`
        readings), both sorted. None when the run is longer than `scan_limit` and its write
        index is not built (finding a line's steps would be a pass over the run)."""
        if self.breakpoints and self._timeline_index() is None and self.length > scan_limit:
            return None
        sure: set[int] = set()
        unread: list[int] = []
        left = budget
        for file, line in sorted(self.breakpoints):
            hits = self._hits(file, line)
            extra = self.conditions.get((file, line))
            if extra is not None and extra.hit is not None:
                hits = hits[extra.hit - 1 : extra.hit]
            if extra is None or extra.condition is None:
                sure.update(hits)
                continue
            known = self._condition_reads(file, line, extra)
            for n, step in enumerate(hits):
                if step not in known:  # read by an earlier c or C, or marks: free
                    if left <= 0:
                        unread += [k for k in hits[n:] if k not in known]
                        sure.update(k for k in hits[n:] if known.get(k))
                        break
                    left -= 1
                if self._condition_holds(file, line, extra, step):
                    sure.add(step)
        sure.update(step for step, why in self._stop_steps() if why.startswith("break "))
        return sorted(sure), sorted(set(unread) - sure)

    def _condition_reads(self, file: str, line: int, extra: LineBreak) -> dict[int, bool]:
        """What a conditional breakpoint's condition was at the steps it was read (by `c`,
        `C` or the marks), for this branch; kept until the run grows or the branch changes."""
        memo = self._reads_memo
        now = (self.timeline, self.branch, self.length)
        if memo is not None and memo[0] is extra and memo[1] == now:
            return memo[2]  # a scan asks step after step
        run = getattr(self.timeline, "run_id", None)
        key = (run, self.branch, self.length, file, line, extra.describe())
        reads = self._condition_cache.get(key)
        if reads is None:
            self._condition_cache = {key: {}} | {
                k: v for k, v in self._condition_cache.items() if k[:3] == key[:3]
            }
            reads = self._condition_cache[key]
        self._reads_memo = (extra, now, reads)
        return reads

    def _condition_holds(self, file: str, line: int, extra: LineBreak, step: int) -> bool:
        """Whether the breakpoint's condition holds at `step` (read once per step)."""
        reads = self._condition_reads(file, line, extra)
        held = reads.get(step)
        if held is None and self._scope_walk is not None:
            # a scan forward's reader (its names cover every condition's)
            reads[step] = held = extra.holds_in(self._scope_walk(step))
        elif held is None:
            reads[step] = held = extra.holds(
                self._narrow_state(step, extra.condition.names if extra.condition else ())
            )
        return held

    def _narrow_state(self, step: int, names: Collection[str]) -> StateView:
        """The state at `step` as far as `names` go (a narrow view when the timeline makes
        one: reading a condition at thousands of steps must not convert whole states)."""
        narrow = getattr(self.timeline, "names_at", None)
        return narrow(step, names) if narrow is not None else self.timeline.state_at(step)

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

    def trace(
        self, text: str, cancelled: Cancelled | None = None, progress: Progress | None = None
    ) -> list[tuple[int, str]]:
        """`:trace EXPR`: every step of this branch where its value changes, with the value
        (`progress(done, total)` hears how far along the run it is)."""
        expression = compile_expression(text)
        watch = Watch(expression, self._watch_function(expression))
        found = changes(watch, self.timeline, self.first, self.last, cancelled, progress=progress)
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
