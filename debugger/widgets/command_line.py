"""Provides `CommandLine`: the one-line prompt at the bottom for `:` commands, `/` search,
`g` go to step and file names (save / open a checkpoint).

It reports what was typed (`Submitted`, with the mode it was opened in) or that it was
dismissed (`Cancelled`); the app decides what the text means.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Label

PROMPTS = {
    "command": ":",
    "search": "/",
    "goto": "go to step: ",
    "write": "save checkpoint to: ",
    "open": "open checkpoint: ",
}


class CommandLine(Horizontal):
    """Hidden until `open(mode)`; Enter submits, Escape cancels."""

    DEFAULT_CSS = """
    CommandLine {
        height: 1;
        display: none;
    }
    CommandLine.-open {
        display: block;
    }
    CommandLine > Label {
        width: auto;
    }
    /* `:focus` too: Input's own focused style (a tall border) would hide the typed text. */
    CommandLine > Input, CommandLine > Input:focus {
        border: none;
        height: 1;
        padding: 0;
        width: 1fr;
    }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="command_line.cancel")]

    class Submitted(Message):
        def __init__(self, mode: str, text: str) -> None:
            super().__init__()
            self.mode = mode
            self.text = text

    class Cancelled(Message):
        pass

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.mode = "command"
        self.history: dict[str, list[str]] = {}

    def compose(self) -> ComposeResult:
        yield Label(":", id="prompt")
        yield Input(id="command-input", select_on_focus=False)

    def open(self, mode: str, text: str = "") -> None:
        """Show the prompt for `mode` with `text` typed in already."""
        self.mode = mode
        self.query_one(Label).update(PROMPTS.get(mode, ":"))
        field = self.query_one(Input)
        field.value = text
        field.cursor_position = len(text)
        self.add_class("-open")
        # Focus now, not with `focus()` (which waits its turn in the app's queue): keys already
        # queued behind the one that opened the prompt (a paste, fast typing) must land here,
        # never on the key bindings of the widget that had focus.
        self.screen.set_focus(field)

    def close(self) -> None:
        self.remove_class("-open")
        self.query_one(Input).value = ""

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value
        self.history.setdefault(self.mode, []).append(text)
        mode = self.mode
        self.close()
        self.post_message(self.Submitted(mode, text))

    def action_cancel(self) -> None:
        self.close()
        self.post_message(self.Cancelled())
