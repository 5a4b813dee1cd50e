"""Provides `EditScreen`: a small dialog to type a new value for a variable, a message or an
LLM answer. Enter posts `EditScreen.Submitted` with the text; the app parses and stages it and
then either closes the dialog or calls `refuse(reason)`, which keeps the dialog open with the
text as typed and the reason under it. Escape dismisses it (None). A `warning` (the statement under way has read the value already)
is said under the field."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
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
    EditScreen #edit-warning {
        color: $text-warning;
        width: 1fr;
    }
    EditScreen #edit-error {
        color: $text-error;
        width: 1fr;
        display: none;
    }
    EditScreen #edit-error.-shown {
        display: block;
    }
    """

    BINDINGS = [Binding("escape", "dismiss_none", "Cancel", id="edit.cancel")]

    class Submitted(Message):
        """Enter was pressed on `text`; the app answers with `dismiss()` or `refuse(reason)`."""

        def __init__(self, dialog: EditScreen, text: str) -> None:
            super().__init__()
            self.dialog = dialog
            self.text = text

    def __init__(self, title: str, value: str, hint: str, warning: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.value = value
        self.hint = hint
        self.warning = warning  # said under the field from the start (an edit that may not tell)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.title_text, id="edit-title")
            yield Input(self.value, id="edit-value", select_on_focus=False)
            yield Label("", id="edit-error")
            if self.warning:
                yield Label(self.warning, id="edit-warning", markup=False)
            yield Label(self.hint, classes="hint")

    def on_mount(self) -> None:
        field = self.query_one(Input)
        field.focus()
        # Typing replaces the value (as in a spreadsheet cell; an arrow key keeps it to edit):
        # `e` then `7` made `17` of a 1. Not on each focus: a refused text stays as typed.
        field.select_all()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.post_message(self.Submitted(self, event.value))

    @on(Input.Changed)
    def _changed(self) -> None:
        # the reason was about the text it refused: once that text changes it no longer is
        self.query_one("#edit-error", Label).remove_class("-shown")

    def refuse(self, reason: str) -> None:
        """Keep the dialog open with the text as typed, and say why it was not taken."""
        error = self.query_one("#edit-error", Label)
        error.update(reason)
        error.add_class("-shown")
        self.query_one(Input).focus()

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
