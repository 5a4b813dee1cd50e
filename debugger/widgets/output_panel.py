"""Provides `OutputPanel`: what the program printed up to the current step.

A line-API view over the printed lines, so a run that printed a million lines scrolls as fast
as one that printed ten. Stepping forward appends only the new lines; it keeps to the end.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.segment import Segment
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip


class OutputPanel(ScrollView, can_focus=False):
    """Printed lines so far."""

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
        self._width = 0

    def show(self, output: Sequence[str]) -> None:
        """Show `output` (one entry per print; an entry may hold several lines)."""
        n = len(output)
        if n == self._printed and (n == 0 or output[-1] == self._last):
            return
        if n < self._printed or (self._printed and output[self._printed - 1] != self._last):
            self.lines, self._printed, self._width = [], 0, 0
        for text in output[self._printed :]:
            for line in str(text).split("\n"):
                self.lines.append(line)
                self._width = max(self._width, len(line))
        self._printed = n
        self._last = output[-1] if n else None
        count = len(self.lines)
        self.border_title = f"output · {count} line{'s' if count != 1 else ''}"
        self.virtual_size = Size(self._width, count)
        height = self.scrollable_content_region.height or self.size.height
        # force: the scrollbar that a longer output needs only shows after the next layout, and
        # until then an unforced scroll is refused (a jump from 0 to 3,000 lines stayed at 0).
        self.scroll_to(y=max(count - height, 0), animate=False, immediate=True, force=True)
        self.refresh()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        style = self.rich_style
        if index >= len(self.lines):
            if index == 0:
                muted = self.get_component_rich_style("output--empty", partial=True)
                text = Strip([Segment("nothing printed yet", style + muted)])
                return text.crop_extend(0, width, style)
            return Strip.blank(width, style)
        strip = Strip([Segment(self.lines[index], style)])
        return strip.crop_extend(scroll_x, scroll_x + width, style)
