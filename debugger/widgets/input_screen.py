"""Provides `InputScreen`: the line a program's `input(prompt)` asks for, typed in a dialog (the
terminal is the debugger's, so the program cannot read it). Enter answers the line; Escape ends
the input (`input()` then returns "", as at the end of a file); Ctrl-C also stops the run at its
next step (a program that asks again and again is not a trap)."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class InputScreen(ModalScreen[str | None]):
    """Asks for one line of input for the program being run."""

    DEFAULT_CSS = """
    InputScreen {
        align: center middle;
    }
    InputScreen > Vertical {
        width: 80;
        max-width: 100%;
        height: auto;
        border: thick $accent;
        background: $surface;
        padding: 0 1;
    }
    InputScreen .hint {
        color: $text-muted;
        width: 1fr;
    }
    """

    AUTO_FOCUS = "#input-line"

    BINDINGS = [
        Binding("escape", "end_input", "End of input", id="input.end"),
        # priority: the text field would take ctrl+c (copy)
        Binding("ctrl+c", "stop_run", "Stop the run", priority=True, id="input.stop"),
    ]

    def __init__(self, prompt: str) -> None:
        super().__init__()
        self.prompt = prompt

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("the program asks for a line (input)", id="input-title")
            yield Label(self.prompt or "(no prompt)", id="input-prompt", markup=False)
            yield Input(id="input-line")
            yield Label(
                'enter: answer    esc: end of input (it gets "")    ctrl+c: stop the run',
                classes="hint",
            )

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_end_input(self) -> None:
        self.dismiss(None)

    async def action_stop_run(self) -> None:
        self.dismiss(None)
        await self.app.run_action("cancel_work('ctrl+c')")
