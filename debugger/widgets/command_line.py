"""Provides `CommandLine`: the one-line prompt at the bottom for `:` commands, `/` search,
`g` go to step and file names (save / open a checkpoint).

It reports what was typed (`Submitted`, with the mode it was opened in) or that it was
dismissed (`Cancelled`); the app decides what the text means. Tab completes a file name (save,
open) or a command name (`:`); up and down recall earlier lines of the same prompt; focus moving
elsewhere (a click on a panel) closes it, so a prompt is never left open that keys do not reach.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from textual import events, on
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

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="command_line.cancel"),
        Binding("tab", "complete", "Complete", id="command_line.complete"),
        Binding("up", "recall(-1)", "Earlier line", show=False, id="command_line.earlier"),
        Binding("down", "recall(1)", "Later line", show=False, id="command_line.later"),
    ]
    # Modes whose text is a file name, and `:` commands whose argument is one: completed from
    # the disk.
    PATH_MODES = frozenset({"write", "open"})
    PATH_COMMANDS = frozenset({"write", "open", "w", "o"})

    class Submitted(Message):
        def __init__(self, mode: str, text: str) -> None:
            super().__init__()
            self.mode = mode
            self.text = text

    class Cancelled(Message):
        """The prompt closed without a line; `refocus` is False when focus already moved on
        (a click elsewhere), so nothing should take it back."""

        def __init__(self, refocus: bool = True) -> None:
            super().__init__()
            self.refocus = refocus

    def __init__(self, *, commands: Iterable[str] = (), id: str | None = None) -> None:
        super().__init__(id=id)
        self.mode = "command"
        self.commands = sorted(commands)  # what Tab completes the first word of a `:` line to
        self.history: dict[str, list[str]] = {}
        self._recalled = 0  # how far back up/down is in this mode's history (0: the new line)
        self._draft = ""  # the line being typed before up recalled an older one

    def compose(self) -> ComposeResult:
        yield Label(":", id="prompt")
        yield Input(id="command-input", select_on_focus=False)

    def open(self, mode: str, text: str = "", *, selected: bool = False) -> None:
        """Show the prompt for `mode` with `text` typed in already; `selected` offers it as a
        default that typing replaces (an arrow key keeps it to edit)."""
        self.mode = mode
        self.query_one(Label).update(PROMPTS.get(mode, ":"))
        field = self.query_one(Input)
        field.value = text
        field.cursor_position = len(text)
        if selected:
            field.select_all()
        self._recalled = 0
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

    @on(events.DescendantBlur)
    def _focus_left(self, event: events.DescendantBlur) -> None:
        # Focus went elsewhere while the prompt was open (a click on a panel, tab from a
        # terminal that sends it otherwise): close it rather than leave a half-typed line on
        # screen that no key reaches.
        if self.is_open:
            self.close()
            self.post_message(self.Cancelled(refocus=False))

    # -- history ---------------------------------------------------------------------------------

    def action_recall(self, direction: int) -> None:
        """Show an earlier (`direction` -1) or later (+1) line of this prompt's history."""
        lines = self.history.get(self.mode, [])
        back = min(max(self._recalled - direction, 0), len(lines))
        if back == self._recalled:
            return
        field = self.query_one(Input)
        if self._recalled == 0:
            self._draft = field.value
        self._recalled = back
        self._set(lines[-back] if back else self._draft)

    def _set(self, text: str) -> None:
        field = self.query_one(Input)
        field.value = text
        field.cursor_position = len(text)

    # -- completion ------------------------------------------------------------------------------

    def action_complete(self) -> None:
        """Complete the file name (save, open) or command name (`:`) being typed: as far as
        the choices agree, then list them."""
        text = self.query_one(Input).value
        command, space, argument = text.partition(" ")
        if self.mode in self.PATH_MODES:
            head, choices = _path_choices(text)
        elif self.mode == "command" and space and command in self.PATH_COMMANDS:
            head, choices = _path_choices(argument)
            head = command + space + head
        elif self.mode == "command" and " " not in text.strip():
            head, choices = "", [c + " " for c in self.commands if c.startswith(text.strip())]
        else:
            self.app.bell()
            return
        if not choices:
            self.app.bell()
            return
        common = os.path.commonprefix(choices)
        if len(choices) == 1 or head + common != text:
            self._set(head + common)
            return
        shown = ", ".join(c.rstrip() for c in choices[:12])
        more = f" and {len(choices) - 12} more" if len(choices) > 12 else ""
        self.notify(f"{shown}{more}", title=f"{len(choices)} choices")


def _path_choices(text: str) -> tuple[str, list[str]]:
    """(the folder part of `text` as typed, the names in that folder that start as `text`'s
    last part does); folders end with `/` so completion goes on inside them."""
    head, slash, stem = text.rpartition("/")
    head += slash
    folder = os.path.expanduser(head) if head else "."
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return head, []
    hidden = stem.startswith(".")
    return head, [
        e.name + ("/" if e.is_dir() else "")
        for e in entries
        if e.name.startswith(stem) and (hidden or not e.name.startswith("."))
    ]
