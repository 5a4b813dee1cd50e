"""Provides `EditScreen`: a small dialog to type a new value for a variable, a message or an
LLM answer. It returns the text typed (None when dismissed); the app parses and checks it, so a
wrong value is reported in the app and changes nothing."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class EditScreen(ModalScreen[str | None]):
    """Asks for one value."""

    DEFAULT_CSS = """
    EditScreen {
        align: center middle;
    }
    EditScreen > Vertical {
        width: 80;
        max-width: 100%;
        height: auto;
        border: thick $primary;
        background: $surface;
        padding: 0 1;
    }
    EditScreen .hint {
        color: $text-muted;
        width: 1fr;
    }
    """

    BINDINGS = [Binding("escape", "dismiss_none", "Cancel", id="edit.cancel")]

    def __init__(self, title: str, value: str, hint: str) -> None:
        super().__init__()
        self.title_text = title
        self.value = value
        self.hint = hint

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.title_text, id="edit-title")
            yield Input(self.value, id="edit-value", select_on_focus=False)
            yield Label(self.hint, classes="hint")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
