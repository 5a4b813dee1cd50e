"""Provides `SourceView`: the program's source with the current line and statement highlighted
and breakpoints in the gutter.

Lines are highlighted once (with `debugger.lexer.AgencyLexer`, styled by theme variables so every
theme and NO_COLOR work) and rendered on demand through the line API, so a step that moves the
current line repaints two lines, not the file. Clicking the gutter asks for a breakpoint.
"""

from __future__ import annotations

from rich.segment import Segment
from textual import events
from textual.content import Content, Span
from textual.geometry import Size
from textual.highlight import HighlightTheme
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from debugger.lexer import AgencyLexer
from runtime.record.views import Location

GUTTER = 9  # breakpoint dot, 5-digit line number, " ▶ "
BREAKPOINT_STYLE = "bold $text-error"
ARROW_STYLE = "bold $text-accent"
CURRENT_LINE_STYLE = "on $primary-muted"
SPAN_STYLE = "bold underline on $accent-muted"
NUMBER_STYLE = "$text-muted"


def highlight_lines(source: str) -> list[Content]:
    """The source split into lines, each coloured by token kind with theme variables."""
    code = "\n".join(source.splitlines())
    spans = []
    start = 0
    styles = HighlightTheme.STYLES
    for token_type, token in AgencyLexer(stripnl=False, ensurenl=True).get_tokens(code):
        end = start + len(token)
        kind = token_type
        while kind is not None:
            style = styles.get(kind)
            if style:
                spans.append((start, end, style))
                break
            kind = kind.parent
        start = end
    content = Content(code).add_spans([Span(a, b, s) for a, b, s in spans if a < len(code)])
    return list(content.split("\n", allow_blank=True)) if code else [Content("")]


def _cells(line: Content, chars: int) -> int:
    """The cells the first `chars` characters of `line` take (wide characters take two)."""
    return Content(line.plain[: max(chars, 0)]).cell_length


class SourceView(ScrollView, can_focus=False):
    """The source of the file being run; `location` and `breakpoints` drive the highlight."""

    DEFAULT_CSS = """
    SourceView {
        background: $surface;
    }
    """

    location: reactive[Location | None] = reactive(None, always_update=True)
    breakpoints: reactive[frozenset[int]] = reactive(frozenset(), always_update=True)

    class BreakpointToggled(Message):
        """The gutter of `line` was clicked."""

        def __init__(self, path: str, line: int) -> None:
            super().__init__()
            self.path = path
            self.line = line

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.path = ""
        self._source_lines: list[Content] = []
        self._cache: dict[tuple[int, int, int, int, int], Strip] = {}
        self._shown_line = 0
        self._refollow = False  # a follow waits for the next layout (`_follow`)

    # -- data in ----------------------------------------------------------------------------------

    def set_source(self, path: str, text: str) -> None:
        """Show `text` (the contents of `path`)."""
        if path == self.path and self._source_lines:
            return
        self.path = path
        self._source_lines = highlight_lines(text)
        self._cache.clear()
        width = max((line.cell_length for line in self._source_lines), default=0) + GUTTER + 1
        self.virtual_size = Size(width, len(self._source_lines))
        self.border_title = path
        self.refresh()

    @property
    def current_line(self) -> int:
        return self.location.line if self.location is not None else 0

    def watch_location(self, old: Location | None, new: Location | None) -> None:
        for loc in (old, new):
            if loc is not None:
                self.refresh_lines(loc.line - 1, max(loc.end_line - loc.line + 1, 1))
        if new is not None and new.line != self._shown_line:
            self._shown_line = new.line
            self._follow(new)
        elif new is not None:  # another statement of the same line: maybe across
            self.scroll_to(x=self._code_x(new), animate=False, immediate=True, force=True)

    def watch_breakpoints(self, old: frozenset[int], new: frozenset[int]) -> None:
        for line in old ^ new:
            self.refresh_line(line - 1)

    def _follow(self, loc: Location) -> None:
        """Keep the current statement on screen, scrolling only when it leaves the view: down
        to its line, and across (the gutter stays) when it starts or ends past the right edge
        of a line wider than the panel."""
        top = self.scroll_offset.y
        height = self.scrollable_content_region.height or self.size.height
        y = loc.line - 1
        if height <= 0:
            return
        if y < top + 1 or y >= top + height - 1:
            wanted = min(max(y - height // 3, 0), max(len(self._source_lines) - height, 0))
            # (forced: until a layout shows the scrollbar that the lines just set call for,
            # Textual refuses to scroll; the position is still kept within the lines)
            self.scroll_to(y=wanted, animate=False, immediate=True, force=True)
            if self.scroll_offset.y < wanted and not self._refollow:
                # The lines were set since the last layout (a run that opens at a statement
                # below the fold): the scroll stopped at the old bottom. Again once laid out.
                self._refollow = True
                self.call_after_refresh(self._follow_again)
        self.scroll_to(x=self._code_x(loc), animate=False, immediate=True, force=True)

    def _follow_again(self) -> None:
        self._refollow = False
        if self.location is not None:
            top = self.scroll_offset.y
            height = self.scrollable_content_region.height or self.size.height
            if not top + 1 <= self.location.line - 1 < top + height - 1:
                self._refollow = True  # once only: a view that cannot scroll there stays
                self._follow(self.location)
                self._refollow = False

    def _code_x(self, loc: Location) -> int:
        """How far the code is scrolled across so that `loc`'s statement shows: 0 when it
        ends in view, else its start a few cells in from the gutter."""
        if not 0 < loc.line <= len(self._source_lines):
            return 0
        code = self._source_lines[loc.line - 1]
        shown = self.scrollable_content_region.width - GUTTER
        start = _cells(code, loc.col - 1)
        end = _cells(code, loc.end_col - 1) if loc.end_line == loc.line else code.cell_length
        x = self.scroll_offset.x
        if shown <= 0 or (x <= start and end <= x + shown):
            return x  # already in view
        return 0 if end <= shown else max(start - 4, 0)

    def on_resize(self) -> None:
        if self.location is not None:
            self._follow(self.location)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()

    # -- rendering --------------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        if index >= len(self._source_lines):
            return Strip.blank(width, self.rich_style)
        strip = self._line_strip(index)
        if scroll_x and width > GUTTER:
            # scrolled across: the gutter (breakpoint, line number) stays, the code moves
            code = strip.crop_extend(GUTTER + scroll_x, scroll_x + width, self.rich_style)
            strip = Strip.join([strip.crop_extend(0, GUTTER, self.rich_style), code])
            return strip.apply_offsets(scroll_x, index)
        return strip.crop_extend(scroll_x, scroll_x + width, self.rich_style).apply_offsets(
            scroll_x, index
        )

    def _line_strip(self, index: int) -> Strip:
        number = index + 1
        loc = self.location
        on_line = loc is not None and loc.line <= number <= max(loc.end_line, loc.line)
        span = (0, 0)
        if on_line and loc is not None:
            start = loc.col - 1 if number == loc.line else 0
            end = (
                loc.end_col - 1 if number == loc.end_line else len(self._source_lines[index].plain)
            )
            span = (max(start, 0), max(end, start))
        key = (
            index,
            number in self.breakpoints,
            number == self.current_line,
            on_line,
            span[0] * 100_000 + span[1],
        )
        strip = self._cache.get(key)
        if strip is None:
            strip = self._render_strip(index, key[1], key[2], on_line, span)
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[key] = strip
        return strip

    def _render_strip(
        self, index: int, breakpoint: bool, current: bool, on_span: bool, span: tuple[int, int]
    ) -> Strip:
        number = index + 1
        gutter = Content.assemble(
            ("●" if breakpoint else " ", BREAKPOINT_STYLE),
            (f"{number:>5}", ARROW_STYLE if current else NUMBER_STYLE),
            (" ▶ " if current else "   ", ARROW_STYLE),
        )
        line = self._source_lines[index]
        if on_span and span[1] > span[0]:
            line = line.stylize(SPAN_STYLE, span[0], span[1])
        full = gutter + line
        if current or on_span:
            width = max(self.virtual_size.width, self.size.width)
            full = (full + " " * max(width - full.cell_length, 0)).stylize_before(
                CURRENT_LINE_STYLE
            )
        base = self.visual_style
        segments = [
            Segment(text, style.rich_style if style else None)
            for text, style in full.render(base, end="", parse_style=self._get_style)
        ]
        return Strip(segments, full.cell_length)

    # -- mouse ------------------------------------------------------------------------------------

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.x >= GUTTER:
            return
        line = self.scroll_offset.y + offset.y + 1
        if 1 <= line <= len(self._source_lines):
            event.stop()
            self.post_message(self.BreakpointToggled(self.path, line))
