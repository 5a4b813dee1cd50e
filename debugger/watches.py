"""Provides watches: expressions read at every step the cursor visits, and the searches over the
record that watchpoints (`c`/`C` stop where a watched value changes) and `:trace` (every change
of an expression, from the first step on) make.

A watch reads its expression in the frame of the function it was set in (the innermost frame of
that function at each step, so a call into a helper does not hide `main`'s `total`), then in the
globals. Where that function is not on the stack, or a name is not bound yet, the watch is out
of scope and shows so; a step changes a watch when the watch is in scope there and its value
differs from the step before (a value coming into scope counts: it was just written).

Finding the next change does not read every step: a value can only change at a step that wrote
one of the names it reads (assigned it, changed a list or object it holds in place, restored
it), which the timeline's `last_write` and `next_write` answer from its write index, so the
search walks from write to write. Each candidate is checked by reading the expression at it and
at the step before. Only where the watch is out of scope (between two calls of a helper,
before its names are bound) does the search look at steps one by one.
"""

from __future__ import annotations

import bisect
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from debugger.errors import SessionError
from debugger.expressions import Expression, NotInScope, compile_expression, scope_of, show

__all__ = ["OUT_OF_SCOPE", "Watch", "changes", "next_change"]

Cancelled = Callable[[], bool]
Progress = Callable[[int, int], None]
PROGRESS_EVERY = 256  # rounds of a search between two progress reports


class _OutOfScope:
    def __repr__(self) -> str:
        return "OUT_OF_SCOPE"


OUT_OF_SCOPE: Any = _OutOfScope()


@dataclass
class Watch:
    """An expression to show at every step; a watchpoint (`stops`) also stops `c` and `C`."""

    expression: Expression
    function: str | None  # the function whose frame it reads; None: the innermost that has
    # the names it reads
    stops: bool = False

    @classmethod
    def parse(cls, text: str, function: str | None, stops: bool = False) -> Watch:
        return cls(compile_expression(text), function, stops)

    @property
    def text(self) -> str:
        return self.expression.text

    def frame_index(self, state: Any) -> int | None:
        """Index into `state.frames` of the frame this watch reads; None when its function is
        not on the stack (the innermost frame when the watch has no function)."""
        frames = state.frames
        for i in range(len(frames) - 1, -1, -1):
            if self.function is None and self.expression.resolves(frames[i], state.globals):
                return i
            if frames[i].scope == self.function:
                return i
        return len(frames) - 1 if frames and self.function is None else None

    def value(self, state: Any) -> Any:
        """The expression's value at `state`, OUT_OF_SCOPE when a name it reads is not
        visible; a SessionError when it cannot be read there (`null.x`, a wrong operand)."""
        frame = self.frame_index(state)
        if frame is None and (self.function is not None or not state.globals):
            return OUT_OF_SCOPE
        try:
            return self.expression.evaluate(
                scope_of(state, frame) if frame is not None else dict(state.globals)
            )
        except NotInScope:
            return OUT_OF_SCOPE

    def describe(self, state: Any) -> str:
        """`expr = value` as the watches panel shows it."""
        try:
            value = self.value(state)
        except SessionError as exc:
            return f"{self.text}: {exc}"
        if value is OUT_OF_SCOPE:
            return f"{self.text}: not in scope"
        return f"{self.text} = {show(value)}"


def _state(watch: Watch, timeline: Any, step: int) -> Any:
    """The state at `step` as far as the watch reads it: a narrow view of just its names where
    the timeline makes one (converting the whole state at every candidate step is what made a
    search slow), else the whole view."""
    narrow = getattr(timeline, "names_at", None)
    if narrow is None:
        return timeline.state_at(step)
    return narrow(step, watch.expression.names)


def _read(watch: Watch, timeline: Any, step: int) -> Any:
    return _value(watch, _state(watch, timeline, step))


def _value(watch: Watch, state: Any) -> Any:
    try:
        return watch.value(state)
    except SessionError:
        return OUT_OF_SCOPE  # unreadable here: no value to compare


def _differs(before: Any, now: Any) -> bool:
    """Whether a watch read `now` changed from `before` (coming into scope is a change)."""
    if now is OUT_OF_SCOPE:
        return False
    return before is OUT_OF_SCOPE or before != now or type(before) is not type(now)


def _changed_at(watch: Watch, timeline: Any, step: int, first: int) -> bool:
    """Whether `step` changes the watch: in scope there and different from the step before."""
    if step <= first:
        return _read(watch, timeline, step) is not OUT_OF_SCOPE
    # the step before first: materialised states move forward cheaply, not back
    before = _read(watch, timeline, step - 1)
    return _differs(before, _read(watch, timeline, step))


def _nearest_write(
    watch: Watch, timeline: Any, step: int, backwards: bool, state: Any = None
) -> int | None:
    """The nearest step at or before `step` (after it, forwards) that wrote a name the watch
    reads, in the frame the watch reads at `step` (`state`, when the caller has read it),
    or a global of that name."""
    frame = watch.frame_index(state if state is not None else _state(watch, timeline, step))
    find = timeline.last_write if backwards else timeline.next_write
    index = None if backwards else timeline.index()
    best: int | None = None
    for name in watch.expression.names:
        try:
            found = (
                find(name, step, frame) if frame is not None else find(name, step, None, "globals")
            )
        except (KeyError, IndexError, ValueError):
            found = None
        if index is not None:  # a later assignment or call binding it, in any frame
            for steps in (index.names.get(name), index.params.get(name)):
                i = bisect.bisect_right(steps or [], step)
                if steps and i < len(steps) and (found is None or steps[i] < found):
                    found = steps[i]
        if found is not None and (best is None or (found > best if backwards else found < best)):
            best = found
    return best


def _indexed(timeline: Any) -> bool:
    return callable(getattr(timeline, "next_write", None)) and callable(
        getattr(timeline, "index", None)
    )


def next_change(
    watch: Watch,
    timeline: Any,
    start: int,
    first: int,
    last: int,
    backwards: bool = False,
    cancelled: Cancelled | None = None,
    until: int | None = None,
    progress: Progress | None = None,
) -> int | None:
    """The nearest step after `start` (before it, `backwards`) that changes the watch, in the
    run `first..last`, looking no further than `until`; None when there is none. `progress`
    hears now and then how far into `first..last` the search is."""
    if backwards:
        bound = first if until is None else max(first, until)
    else:
        bound = last if until is None else min(last, until)
    if not _indexed(timeline):
        return _scan(watch, timeline, start, bound, first, backwards, cancelled, progress)
    search = _back if backwards else _forward
    return search(watch, timeline, start, bound, first, cancelled, progress)


def _report(progress: Progress | None, n: int, done: int, total: int) -> None:
    """Tell `progress` how far a search is, every `PROGRESS_EVERY` rounds of its loop."""
    if progress is not None and n % PROGRESS_EVERY == 0:
        progress(done, max(total, 1))


def _back(
    watch: Watch,
    timeline: Any,
    start: int,
    bound: int,
    first: int,
    cancelled: Cancelled | None,
    progress: Progress | None = None,
) -> int | None:
    cur = start - 1
    n = 0
    while cur >= bound:
        if n == BACK_STEPS_ALONE:
            # Each read going back rebuilds a state from its keyframe; a change far back
            # (a hot variable, a watch on a condition that flips once) is found sooner by
            # passes forward over windows further and further back.
            return _back_in_windows(watch, timeline, cur + 1, bound, first, cancelled, progress)
        if cancelled is not None and cancelled():
            return None
        n += 1
        _report(progress, n, start - cur, start - bound)
        if _read(watch, timeline, cur) is OUT_OF_SCOPE:
            # between calls of the watch's function, or before a name it reads is bound:
            # no write of this frame to follow back, so step by step
            if _changed_at(watch, timeline, cur, first):
                return cur
            cur -= 1
            continue
        step = _nearest_write(watch, timeline, cur, backwards=True)
        entry = _last_at_or_before(_entries(watch, timeline), cur)
        if entry is not None and (step is None or entry > step):
            step = entry  # the call began there: the value came into scope
        if step is None or step < bound:
            return None
        if _changed_at(watch, timeline, step, first):
            return step
        cur = step - 1
    return None


BACK_STEPS_ALONE = 64  # candidate steps `_back` reads one by one before reading windows forward


def _back_in_windows(
    watch: Watch,
    timeline: Any,
    start: int,
    bound: int,
    first: int,
    cancelled: Cancelled | None,
    progress: Progress | None = None,
) -> int | None:
    """`_back` by forward passes (`changes`) over windows before `start`, each twice as wide
    as the one after it: the last change in the nearest window that has one."""
    hi, width = start - 1, 1024
    while hi >= bound:
        lo = max(bound, hi - width + 1)
        found = None
        for step, _ in changes(watch, timeline, lo, hi, cancelled, limit=hi - lo + 2):
            # a pass reports its first step when the watch is readable there; whether it
            # changed there is a question about the step before the window
            if step > lo or _changed_at(watch, timeline, lo, first):
                found = step
        if cancelled is not None and cancelled():
            return None
        if found is not None:
            return found
        if progress is not None:
            progress(start - lo, max(start - bound, 1))
        hi, width = lo - 1, width * 2
    return None


def _forward(
    watch: Watch,
    timeline: Any,
    start: int,
    bound: int,
    first: int,
    cancelled: Cancelled | None,
    progress: Progress | None = None,
) -> int | None:
    cur = start
    n = 0
    while cur < bound:
        if cancelled is not None and cancelled():
            return None
        n += 1
        _report(progress, n, cur - first, bound - first)
        step = _nearest_write(watch, timeline, cur, backwards=False)
        entry = _first_after(_entries(watch, timeline), cur)
        if entry is not None and (step is None or entry < step):
            step = entry  # a call of its function begins: a value may come into scope
        if step is None or step > bound:
            return None
        if _changed_at(watch, timeline, step, first):
            return step
        cur = step
    return None


def _scan(
    watch: Watch,
    timeline: Any,
    start: int,
    bound: int,
    first: int,
    backwards: bool,
    cancelled: Cancelled | None,
    progress: Progress | None = None,
) -> int | None:
    """Step by step, for timelines without a write index."""
    steps = range(start - 1, bound - 1, -1) if backwards else range(start + 1, bound + 1)
    for n, step in enumerate(steps):
        if cancelled is not None and n % 1024 == 1023 and cancelled():
            return None
        _report(progress, n + 1, n, len(steps))
        if _changed_at(watch, timeline, step, first):
            return step
    return None


def changes(
    watch: Watch,
    timeline: Any,
    first: int,
    last: int,
    cancelled: Cancelled | None = None,
    limit: int = 10_000,
    progress: Progress | None = None,
) -> Iterator[tuple[int, Any]]:
    """Every step of `first..last` where the watch changes, with its new value (`:trace`),
    at most `limit` of them; `progress(done, total)` hears how far along the run it is.

    One pass forwards from write to write: the value at a candidate is compared with the value
    at the candidate before (nothing the watch reads is written in between), so each candidate
    costs one narrow read of a state that only moves forward, never a rebuild of the step
    before it."""
    if not _indexed(timeline):
        yield from _changes_by_search(watch, timeline, first, last, cancelled, limit, progress)
        return
    index = timeline.index()
    writes, entries = _candidates(watch, timeline, index)
    state = _state(watch, timeline, first)
    before, frame, containers = _observe(watch, state, index, first)
    count = 0
    if before is not OUT_OF_SCOPE:
        yield first, before
        count += 1
    cur, n = first, 0
    while count < limit and cur < last:
        if cancelled is not None and cancelled():
            return
        n += 1
        _report(progress, n, cur - first, last - first)
        step = _first_after(writes, cur)
        if containers:
            # a list or object it reads can change in place: the write index knows where
            found = _nearest_write(watch, timeline, cur, False, state)
            if found is not None and (step is None or found < step):
                step = found
        if step is None or step > last:
            return
        # a call of the watch's function begins here: read the step before it on the way
        # (the state moves forward), to see whether the value just came into scope
        ahead = _read(watch, timeline, step - 1) if step in entries and step - 1 > cur else before
        state = _state(watch, timeline, step)
        now, now_frame, containers = _observe(watch, state, index, step)
        if now_frame == frame or now is OUT_OF_SCOPE:
            changed = _differs(before, now)
        elif step in entries:
            changed = _differs(ahead, now)
        else:  # another frame now, not at a call's start (rare): compare with the step before
            changed = _changed_at(watch, timeline, step, first)
        if changed:
            yield step, now
            count += 1
        before, frame, cur = now, now_frame, step


def _candidates(watch: Watch, timeline: Any, index: Any) -> tuple[list[int], set[int]]:
    """The steps that may change the watch, sorted, and which of them begin a call of its
    function. Candidates: every step that assigned a name it reads or bound it as a call's
    argument (in any frame: a superset, each is read and compared, so an extra one costs a
    read, never a wrong answer), replaced the state (`restore()`), edited it at a fork, or
    entered its function (`_entries`)."""
    steps: set[int] = set(index.restores)
    for name in watch.expression.names:
        steps.update(index.names.get(name, ()))
        steps.update(index.params.get(name, ()))
    steps.update(timeline.lineage_edits())
    entries = _entries(watch, timeline)
    steps.update(entries)
    return sorted(steps), set(entries)


_ENTRIES: weakref.WeakKeyDictionary[Any, dict[str, list[int]]] = weakref.WeakKeyDictionary()


def _entries(watch: Watch, timeline: Any) -> list[int]:
    """The steps where the watch's function is entered (a call begins, or a call it made
    returns to it), sorted; where a value comes into scope without a write: a global read in
    the function's frame, a call that binds nothing yet. Found from the write index's steps
    per location, once per index and function."""
    if watch.function is None:
        return []
    index = timeline.index()
    known = _ENTRIES.setdefault(index, {})
    found = known.get(watch.function)
    if found is None:
        inside: list[int] = []
        for loc_id, loc in enumerate(timeline.locations):
            if loc.scope == watch.function:
                inside += index.at_location.get(loc_id, ())
        inside.sort()
        found = [k for i, k in enumerate(inside) if i == 0 or inside[i - 1] != k - 1]
        known[watch.function] = found
    return found


def _first_after(steps: list[int], step: int) -> int | None:
    i = bisect.bisect_right(steps, step)
    return steps[i] if i < len(steps) else None


def _last_at_or_before(steps: list[int], step: int) -> int | None:
    i = bisect.bisect_right(steps, step)
    return steps[i - 1] if i else None


def _observe(watch: Watch, state: Any, index: Any, step: int) -> tuple[Any, int | None, bool]:
    """What a pass along the run needs at a candidate, from one lookup of the frame: the
    watch's value (as `Watch.value`, OUT_OF_SCOPE where it cannot be read), the call it reads
    (the frame instance, as the write index numbers them; None for the globals) and whether a
    name it reads holds a list or an object (which can change in place)."""
    i = watch.frame_index(state)
    if i is None and (watch.function is not None or not state.globals):
        return OUT_OF_SCOPE, None, False
    scope = scope_of(state, i) if i is not None else dict(state.globals)
    try:
        value = watch.expression.evaluate(scope)
    except (NotInScope, SessionError):
        value = OUT_OF_SCOPE
    containers = value is not OUT_OF_SCOPE and any(
        type(scope.get(name)) in (list, dict) for name in watch.expression.names
    )
    if i is None:
        return value, None, containers
    depth = i if state.frames[0].kind == "module" else i + 1  # views leave the module out
    return value, index.frame_at(depth, step), containers


def _changes_by_search(
    watch: Watch,
    timeline: Any,
    first: int,
    last: int,
    cancelled: Cancelled | None,
    limit: int,
    progress: Progress | None,
) -> Iterator[tuple[int, Any]]:
    """`changes` for timelines without a write index: one `next_change` after another."""
    step: int | None = first if _changed_at(watch, timeline, first, first) else None
    if step is None:
        step = next_change(
            watch, timeline, first, first, last, cancelled=cancelled, progress=progress
        )
    count = 0
    while step is not None and count < limit:
        yield step, _read(watch, timeline, step)
        count += 1
        if progress is not None:
            progress(step - first, max(last - first, 1))
        step = next_change(
            watch, timeline, step, first, last, cancelled=cancelled, progress=progress
        )
