"""Provides `TimelineBar`: the whole run as one scrubbable bar with markers.

The top row carries a marker per column for what happened in the steps that column covers (LLM
calls, tool rounds, checkpoints, restores, interrupts, errors, `debugger()` stops, branches,
and where the breakpoints stop `c` and `C`);
the next row is the track with the cursor; a third row, the strip, shows a bar per column as
high as what its LLM calls spent: tokens (where the money went; shown for a run that spent any)
or, after `cycle_strip()`, the time the calls took (where the time went). The border's subtitle
names the measure and the tallest column. Clicking or dragging asks for a step (`StepSelected`,
collapsed while the app is busy so a drag never queues up hundreds of moves).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable

from textual import events
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

from runtime.record.views import Event

# kind -> (glyph, style, priority); when several kinds share a column the highest priority shows.
MARKERS: dict[str, tuple[str, str, int]] = {
    "error": ("✖", "bold $text-error", 90),
    "breakpoint": ("●", "bold $text-error", 85),  # where c / C stop for a breakpoint
    "interrupt": ("!", "bold $text-warning", 80),
    "debugger": ("◉", "bold $text-accent", 70),
    "branch": ("⎇", "bold $text-secondary", 60),
    "restore": ("↺", "bold $text-warning", 50),
    "checkpoint": ("◆", "$text-success", 40),
    "tool": ("T", "$text-secondary", 30),
    "llm": ("L", "bold $text-primary", 20),
    "breakpoint line": ("○", "$text-error", 10),  # a conditional one's line, condition unread
}
BREAKPOINT_KINDS = ("breakpoint", "breakpoint line")
SPARKS = " ▁▂▃▄▅▆▇█"
SPEND = "$text-warning"
SLOW = "$text-error"
STRIPS = ("tokens", "latency")  # what the strip measures; `cycle_strip` goes through them
TRACK_DONE = "$primary"
TRACK_TODO = "$foreground 30%"
CURSOR = "bold $text-accent"


def legend() -> Content:
    """`L llm  T tool  ◆ checkpoint ...` in the bar's colours (for the help screen)."""
    parts: list[tuple[str, str] | str] = []
    for kind, (glyph, style, _) in sorted(MARKERS.items(), key=lambda kv: kv[1][2]):
        parts += [(glyph, style), f" {kind}   "]
    return Content.assemble(*parts)


class TimelineBar(Widget):
    """A two-row scrubber over steps 0..length-1."""

    DEFAULT_CSS = """
    TimelineBar {
        height: 2;
    }
    TimelineBar.-spends {
        height: 3;
    }
    """

    step: reactive[int] = reactive(0)
    length: reactive[int] = reactive(1)

    class StepSelected(Message):
        """A click or drag on the bar asked for `step`."""

        def __init__(self, step: int) -> None:
            super().__init__()
            self.step = step

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, TimelineBar.StepSelected)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._events: list[Event] = []
        self._markers: list[tuple[str, str]] | None = None
        self._marker_key: tuple[int, int] = (0, 0)
        self._fork_step: int | None = None
        self._forks: list[int] = []
        self._breaks: dict[str, list[int]] = {kind: [] for kind in BREAKPOINT_KINDS}
        self._dragging = False
        self.strip = STRIPS[0]

    def set_events(
        self,
        events: Iterable[Event],
        length: int,
        fork_step: int | None = None,
        forks: Iterable[int] = (),
    ) -> None:
        """New markers (after opening a run, switching branch or growing a live run);
        `fork_step` is where this branch left its parent, `forks` where other branches leave
        this one (marked as branches too, so a branch made here can be found again)."""
        self._events = list(events)
        self._fork_step = fork_step
        self._forks = list(forks)
        self._markers = None
        self.length = max(length, 1)
        self._show_strip()

    def set_breakpoints(self, hits: list[int], unread: list[int] | None = None) -> None:
        """Mark where breakpoints stop (`hits`, sorted) and where a conditional breakpoint's
        line is reached but its condition was not read (`unread`, sorted)."""
        self._breaks = {"breakpoint": list(hits), "breakpoint line": list(unread or [])}
        self._markers = None
        self.refresh()

    def cycle_strip(self) -> str:
        """Show the next measure in the strip (tokens, latency); returns its name."""
        self.strip = STRIPS[(STRIPS.index(self.strip) + 1) % len(STRIPS)]
        self._show_strip()
        return self.strip

    def _show_strip(self) -> None:
        # a run that spent some of the measure gets the strip: the class gives it a line
        spent = any(_measure(e, self.strip) > 0 for e in self._events if e.kind == "llm")
        self.set_class(spent, "-spends")
        self.border_subtitle = _strip_title(self.strip, self._events) if spent else ""
        self.refresh()

    # -- geometry ---------------------------------------------------------------------------------

    def _width(self) -> int:
        return max(self.content_size.width, 1)

    def column_of(self, step: int) -> int:
        n, w = self.length, self._width()
        if n <= 1:
            return 0
        return min(w - 1, step * (w - 1) // (n - 1)) if n > w else min(w - 1, step * w // n)

    def step_at(self, x: int) -> int:
        n, w = self.length, self._width()
        x = min(max(x, 0), w - 1)
        if n <= 1:
            return 0
        if n > w:
            return round(x * (n - 1) / (w - 1)) if w > 1 else 0
        return min(n - 1, (x * n + n // 2) // w) if w else 0

    def _spend_row(self) -> list[tuple[str, str]] | None:
        """Where the tokens (or the time) went: a bar per column, as high as the tokens (or
        milliseconds) of the LLM calls in the steps it covers (None when the run has spent
        none, as scripted answers spend no tokens)."""
        w = self._width()
        spent = [0.0] * w
        for event in self._events:
            if event.kind != "llm":
                continue
            spent[self.column_of(event.step)] += _measure(event, self.strip)
        top = max(spent)
        if top <= 0:
            return None
        style = SPEND if self.strip == "tokens" else SLOW
        steps = len(SPARKS) - 1
        return [(SPARKS[max(1, math.ceil(n * steps / top))] if n else " ", style) for n in spent]

    def _marker_row(self) -> list[tuple[str, str]]:
        w = self._width()
        key = (w, self.length)
        if self._markers is None or self._marker_key != key:
            best: list[tuple[int, str, str]] = [(0, " ", "")] * w
            for event in self._events:
                spec = MARKERS.get(event.kind)
                if spec is None:
                    continue
                x = self.column_of(event.step)
                if spec[2] > best[x][0]:
                    best[x] = (spec[2], spec[0], spec[1])
            for kind, steps in (("branch", self._forks), *self._breaks.items()):
                glyph, style, priority = MARKERS[kind]
                for x in self._columns_holding(steps):
                    if priority > best[x][0]:
                        best[x] = (priority, glyph, style)
            self._markers = [(glyph, style) for _, glyph, style in best]
            self._marker_key = key
        return self._markers

    def _first_step_of(self, x: int) -> int:
        """The first step that `column_of` puts at column `x` or further right."""
        n, w = self.length, self._width()
        if n <= 1 or x <= 0:
            return 0
        if n > w:
            return -(-x * (n - 1) // (w - 1)) if w > 1 else n
        return -(-x * n // w)

    def _columns_holding(self, steps: list[int]) -> list[int]:
        """The columns that cover one of `steps` (sorted): a bisection per column, so a
        breakpoint hit on every fourth step of a 1M-step run costs as little as one hit."""
        if not steps:
            return []
        w = self._width()
        out = []
        for x in range(w):
            lo, hi = self._first_step_of(x), self._first_step_of(x + 1)
            i = bisect.bisect_left(steps, lo)
            if i < len(steps) and (steps[i] < hi or x == w - 1):
                out.append(x)
        return out

    # -- rendering --------------------------------------------------------------------------------

    def render(self) -> Content:
        w = self._width()
        cursor = self.column_of(self.step)
        top = Content.assemble(*_runs(self._marker_row()))
        fork = self.column_of(self._fork_step) if self._fork_step is not None else None
        track: list[tuple[str, str]] = []
        for x in range(w):
            if x == cursor:
                track.append(("█", CURSOR))
            elif fork is not None and x == fork:
                track.append(("┼", "bold $text-secondary"))
            elif x < cursor:
                track.append(("━", TRACK_DONE))
            else:
                track.append(("─", TRACK_TODO))
        rows = [top, Content.assemble(*_runs(track))]
        spend = self._spend_row()
        if spend is not None:  # a third row, only for runs that spent tokens
            rows.append(Content.assemble(*_runs(spend)))
        return Content("\n").join(rows)

    def watch_step(self) -> None:
        self.refresh()

    # -- mouse ------------------------------------------------------------------------------------

    def on_mouse_down(self, event: events.MouseDown) -> None:
        self._dragging = True
        self.capture_mouse()
        self._select(event)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        if self._dragging:
            self._select(event)

    def on_mouse_up(self, event: events.MouseUp) -> None:
        if self._dragging:
            self._dragging = False
            self.release_mouse()
            self._select(event)

    def _select(self, event: events.MouseEvent) -> None:
        x = event.get_content_offset_capture(self).x
        self.post_message(self.StepSelected(self.step_at(x)))


def _measure(event: Event, strip: str) -> float:
    """What one LLM call spent of `strip`'s measure: its tokens, or its latency in ms."""
    data = event.data or {}
    try:
        if strip == "latency":
            spent = float(data.get("latency_ms") or 0)
        else:
            spent = float(int(data.get("input_tokens") or 0) + int(data.get("output_tokens") or 0))
    except (TypeError, ValueError):
        return 0.0
    return spent if math.isfinite(spent) and spent > 0 else 0.0


def _strip_title(strip: str, events: list[Event]) -> str:
    """The strip's caption: its measure and the run's total and slowest (or biggest) call."""
    spent = [_measure(e, strip) for e in events if e.kind == "llm"]
    if strip == "latency":
        return f"strip: LLM latency · {_ms(sum(spent))} in all, slowest call {_ms(max(spent))}"
    return f"strip: tokens · {sum(spent):,.0f} in all, biggest call {max(spent):,.0f}"


def _ms(ms: float) -> str:
    if ms >= 1000:
        return f"{ms / 1000:,.1f} s"
    return f"{ms:.1f} ms" if ms < 10 else f"{ms:,.0f} ms"


def _runs(cells: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Merge neighbouring cells of one style, so a render is a few spans, not one per column."""
    out: list[tuple[str, str]] = []
    for glyph, style in cells:
        if out and out[-1][1] == style:
            out[-1] = (out[-1][0] + glyph, style)
        else:
            out.append((glyph, style))
    return out
