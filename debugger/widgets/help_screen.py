"""Provides `HelpScreen`: every key binding of the app and every `:` command, read from the
app's `BINDINGS` and command table (never a hand-written list that could drift), plus the
timeline legend."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
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
        lines: list[tuple[str, str] | str] = [("Keys\n", "bold $text-accent")]
        for key, description in self.keys:
            lines += [(f"  {key:<14}", "bold"), description + "\n"]
        lines.append(("\nCommands (type : first)\n", "bold $text-accent"))
        for usage, description in self.commands:
            lines += [(f"  {usage:<26}", "bold"), description + "\n"]
        lines.append(("\nMouse\n", "bold $text-accent"))
        for where, what in MOUSE:
            lines += [(f"  {where:<26}", "bold"), what + "\n"]
        lines.append(("\nTimeline markers\n", "bold $text-accent"))
        with VerticalScroll():
            yield Static(Content.assemble(*lines) + Content("  ") + legend(), id="help-text")

    def action_dismiss_help(self) -> None:
        self.dismiss(None)
