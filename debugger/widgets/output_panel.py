"""Provides `OutputPanel`: what the program printed up to the current step.

A line-API view over the printed lines, so a run that printed a million lines scrolls as fast
as one that printed ten. Stepping forward appends only the new lines; it keeps to the end.
A line wider than the panel wraps onto the rows under it (the panel takes no focus, so a line
cut at its right edge could not be read): while every line fits, a row is a line; once one
does not, each line's first row is kept in a list, extended as lines are added and rebuilt
only when the panel's width changes.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from rich.cells import cell_len, chop_cells
from rich.segment import Segment
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from debugger.widgets.fitted_title import fit_title


def _cells(line: str) -> int:
    """Cells `line` takes: its length when ASCII (most output; rich's count is ~5x slower)."""
    return len(line) if line.isascii() else cell_len(line)


def wrap_words(line: str, width: int) -> list[str]:
    """`line` in rows of at most `width` cells, broken after the last space a row has (a word
    longer than a row is cut where the row ends; a wide character never is). Each row looks at
    `width` characters only, so a megabyte line wraps in linear time."""
    rows: list[str] = []
    i, n = 0, len(line)
    while True:
        head = line[i : i + width]  # a character takes one cell at least
        if not head.isascii():
            head = chop_cells(head, width)[0] or head[:1]  # (a character wider than a row)
        if i + len(head) >= n:  # the rest fits
            rows.append(line[i:])
            return rows
        space = head.rfind(" ")
        cut = space + 1 if space > 0 else len(head)
        rows.append(line[i : i + cut])
        i += cut


class OutputPanel(ScrollView, can_focus=False):
    """Printed lines so far, long ones wrapped."""

    COMPONENT_CLASSES = {"output--empty"}
    DEFAULT_CSS = """
    OutputPanel > .output--empty {
        color: $text-muted;
        text-style: italic;
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.lines: list[str] = []
        self._printed = 0  # entries of the output tuple the lines hold
        self._last: str | None = None
        self._width = 0  # cells of the widest line
        self._wrap_width = 0  # the width `_starts` was built for (0: rows are lines)
        self._starts: list[int] = []  # while wrapping: the first row of each line
        self._chop_cache: tuple[tuple[str, int], list[str]] = (("", 0), [""])

    def show(self, output: Sequence[str]) -> None:
        """Show `output` (one entry per print; an entry may hold several lines)."""
        n = len(output)
        if n == self._printed and (n == 0 or output[-1] == self._last):
            return
        if n < self._printed or (self._printed and output[self._printed - 1] != self._last):
            self.lines, self._printed, self._width = [], 0, 0
            self._wrap_width, self._starts = 0, []
        for text in output[self._printed :]:
            for line in str(text).split("\n"):
                self.lines.append(line)
                self._width = max(self._width, _cells(line))
        self._printed = n
        self._last = output[-1] if n else None
        fit_title(self, self.titles())
        self._lay_out()
        self._to_end()

    def titles(self) -> list[str]:
        """The panel's title, longest first (see `fit_title`)."""
        count = len(self.lines)
        if not count:
            return ["output"]  # the panel says "nothing printed yet"
        lines = f"{count} line{'s' if count != 1 else ''}"
        return [f"output · {lines}", f"output · {count}", lines, f"{count}"]

    def on_resize(self) -> None:
        fit_title(self, self.titles())
        at_end = self.scroll_offset.y >= self.max_scroll_y
        self._lay_out()
        if at_end:
            self._to_end()

    def _to_end(self) -> None:
        rows = self.virtual_size.height
        height = self.scrollable_content_region.height or self.size.height
        # force: the scrollbar that a longer output needs only shows after the next layout, and
        # until then an unforced scroll is refused (a jump from 0 to 3,000 lines stayed at 0).
        self.scroll_to(y=max(rows - height, 0), animate=False, immediate=True, force=True)
        self.refresh()

    def _lay_out(self) -> None:
        """Rows for the panel's width: one a line while all fit, else lines wrapped."""
        width = self._text_width()
        if width <= 0 or self._width <= width:
            self._wrap_width, self._starts = 0, []
            self.virtual_size = Size(self._width, len(self.lines))
            return
        if width != self._wrap_width:
            self._wrap_width, self._starts = width, []
        starts = self._starts
        row = self._end_row()
        for line in self.lines[len(starts) :]:
            starts.append(row)
            row += self._rows_of(line)
        self.virtual_size = Size(width, row)

    def _rows_of(self, line: str) -> int:
        return 1 if _cells(line) <= self._wrap_width else len(self._chopped(line))

    def _chopped(self, line: str) -> list[str]:
        """`line` in rows of the wrap width, broken between words where it can be."""
        if self._chop_cache[0] != (line, self._wrap_width):
            self._chop_cache = ((line, self._wrap_width), wrap_words(line, self._wrap_width))
        return self._chop_cache[1]

    def _text_width(self) -> int:
        """Cells a row shows: the panel's width, less a vertical scrollbar it may need."""
        region = self.scrollable_content_region.width
        if not region:
            return 0
        if self.show_vertical_scrollbar:
            return region
        return region - self.styles.scrollbar_size_vertical if self.lines else region

    def _end_row(self) -> int:
        """The row after the last line laid out so far."""
        if not self._starts:
            return 0
        return self._starts[-1] + self._rows_of(self.lines[len(self._starts) - 1])

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        width = self.scrollable_content_region.width
        style = self.rich_style
        if not self.lines:
            if row == 0:
                muted = self.get_component_rich_style("output--empty", partial=True)
                text = Strip([Segment("nothing printed yet", style + muted)])
                return text.crop_extend(0, width, style)
            return Strip.blank(width, style)
        if not self._wrap_width:
            if row >= len(self.lines):
                return Strip.blank(width, style)
            strip = Strip([Segment(self.lines[row], style)])
            return strip.crop_extend(scroll_x, scroll_x + width, style)
        index = bisect.bisect_right(self._starts, row) - 1
        if index < 0 or row >= self.virtual_size.height:
            return Strip.blank(width, style)
        line = self.lines[index]
        if _cells(line) > self._wrap_width:
            parts = self._chopped(line)
            part = row - self._starts[index]
            line = parts[part] if part < len(parts) else ""
        return Strip([Segment(line, style)]).extend_cell_length(width, style)
