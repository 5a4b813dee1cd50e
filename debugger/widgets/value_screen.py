"""Provides `ValueScreen`: one value full-screen, pretty-printed JSON that scrolls (`z` on a
variable). `c` copies it to the terminal's clipboard (OSC 52, which most terminals and tmux
pass on) and `s` saves it to a file beside the run, for terminals that do not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, Static


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


class ValueScreen(ModalScreen[None]):
    """`title` (what the value is) and the value; Escape closes."""

    DEFAULT_CSS = """
    ValueScreen {
        align: center middle;
    }
    ValueScreen > Vertical {
        width: 95%;
        height: 90%;
        border: thick $primary;
        background: $surface;
    }
    ValueScreen VerticalScroll {
        height: 1fr;
        padding: 0 1;
    }
    """

    BINDINGS = [
        Binding("escape,z,q", "close", "Close", id="value.close"),
        Binding("c", "copy", "Copy", id="value.copy"),
        Binding("s", "save", "Save to a file", id="value.save"),
    ]

    def __init__(self, title: str, value: Any, save_as: str) -> None:
        super().__init__()
        self.title_text = title
        self.text = pretty(value)
        self.save_as = save_as

    def compose(self) -> ComposeResult:
        with Vertical():
            hint = "c copies, s saves to a file, esc closes"
            yield Label(Content.assemble((self.title_text, "bold"), (f"  ({hint})", "$text-muted")))
            with VerticalScroll():
                yield Static(Content(self.text), id="value-text")

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.text)
        self.notify(f"copied {len(self.text):,} characters (OSC 52); s saves to a file instead")

    def action_save(self) -> None:
        path = Path(self.save_as)
        try:
            path.write_text(self.text + "\n", encoding="utf-8")
        except OSError as exc:
            self.notify(f"cannot write {path}: {exc.strerror}", severity="error")
            return
        self.notify(f"saved to {path}")

    def action_close(self) -> None:
        self.dismiss(None)
