"""Provides `HelpScreen`: every key binding of the app and every `:` command, read from the
app's `BINDINGS` and command table (never a hand-written list that could drift), plus the
timeline legend."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.visual import VisualType
from textual.widgets import Static

from debugger.widgets.timeline_bar import legend

# What a click does where (the widgets' own handlers; listed here so `?` teaches them too).
MOUSE = [
    ("click a line number", "toggle a breakpoint on that line"),
    ("click or drag the timeline", "go to that step"),
    ("click a frame", "select it: variables and source follow"),
    ("click a variable", "select it (then e edits, y why, z zoom)"),
    ("click a message", "select it (then e edits it)"),
    ("scroll wheel", "scroll the panel under the pointer"),
]

# Keys the focused panel takes (Textual's own list and tree keys, which the app leaves to them).
PANELS = [
    ("tab, shift+tab", "move between the panels: variables, call stack, messages, LLM call"),
    ("↑ ↓ pgup pgdn", "select a variable, frame or message (then e, y, z act on it); scroll"),
    ("enter", "variables: open or close a value; call stack: show that frame"),
    ("space", "variables: open or close a value"),
    ("shift+space", "variables: open or close every value beside this one"),
    ("shift+↑ shift+↓", "variables: the previous / next value at the same depth"),
    ("shift+←", "variables: the value this one is inside"),
]


class HelpScreen(ModalScreen[None]):
    """The full list of keys and commands."""

    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
    }
    HelpScreen > VerticalScroll {
        width: 90;
        max-width: 100%;
        height: 90%;
        border: thick $primary;
        background: $surface;
        padding: 0 1;
    }
    """

    BINDINGS = [
        Binding("escape,q,question_mark", "dismiss_help", "Close", id="help.close"),
    ]

    def __init__(self, keys: list[tuple[str, str]], commands: list[tuple[str, str]]) -> None:
        super().__init__()
        self.keys = keys
        self.commands = commands

    def compose(self) -> ComposeResult:
        sections = [
            ("Keys", [(key, about, 16) for key, about in self.keys]),
            ("Commands (type : first)", [(usage, about, 28) for usage, about in self.commands]),
            ("Panels", [(keys, what, 22) for keys, what in PANELS]),
            ("Mouse", [(where, what, 28) for where, what in MOUSE]),
        ]
        # In the border, so it stays in view however far the text is scrolled: nothing on
        # screen said how to leave the help (the footer offers no key under a dialog).
        with VerticalScroll() as scroll:
            scroll.border_title = "help: esc, q or ? closes · ↑ ↓ pgup pgdn scroll"
            yield HelpText(sections, legend(), id="help-text")

    def action_dismiss_help(self) -> None:
        self.dismiss(None)


Entry = tuple[str, str, int]  # (key or usage, what it does, the width of the first column)


class HelpText(Static):
    """The help's text, laid out for the width it is drawn at: two columns, a wrapped
    description going on under itself, a usage too long for its column on a line of its own."""

    def __init__(
        self, sections: list[tuple[str, list[Entry]]], markers: Content, *, id: str | None = None
    ) -> None:
        self.sections = sections
        self.markers = markers
        super().__init__(self._layout(88), id=id)

    def render(self) -> VisualType:
        width = self.content_region.width
        return self._layout(width) if width else super().render()

    def _layout(self, width: int) -> Content:
        lines: list[Content] = []
        for heading, entries in self.sections:
            lines += [Content(""), Content.styled(heading, "bold $text-accent")]
            for label, about, column in entries:
                lines += _entry(label, about, column, width)
        lines += [Content(""), Content.styled("Timeline markers", "bold $text-accent")]
        lines += [Content("  ") + line for line in self.markers.wrap(max(width - 2, 8))]
        return Content("\n").join(lines[1:])


def _entry(label: str, about: str, column: int, width: int) -> list[Content]:
    """One key or command: `  label  about…`, `about` wrapped in its own column."""
    indent = Content(" " * column)
    first_width = max(width - column, 12)
    wrapped = Content(about).wrap(first_width)
    name = Content.styled(label, "bold")
    if name.cell_length + 3 > column:  # too long for the column: a line (or more) of its own
        parts = name.wrap(max(width - 4, 8))
        head = [Content("  ") + parts[0]] + [Content("    ") + part for part in parts[1:]]
        return head + [indent + part for part in wrapped]
    first = Content("  ") + name + Content(" " * (column - 2 - name.cell_length))
    return [first + wrapped[0]] + [indent + part for part in wrapped[1:]]
