"""Provides `ListScreen`: a titled list of lines over the app (`:trace`, `:diff`, `:breaks`).
A line that names a step goes there on Enter (the screen returns that step); Enter on a line
that names none, and Escape, close the list."""

from __future__ import annotations

from collections.abc import Sequence

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option


class ListScreen(ModalScreen[int | None]):
    """Rows of (step or None, text); Enter on a row with a step returns the step."""

    DEFAULT_CSS = """
    ListScreen {
        align: center middle;
    }
    ListScreen > Vertical {
        width: 110;
        max-width: 100%;
        height: auto;
        max-height: 90%;
        border: thick $primary;
        background: $surface;
    }
    ListScreen OptionList {
        height: auto;
        max-height: 30;
    }
    """

    BINDINGS = [Binding("escape", "dismiss_none", "Close", id="list.close")]

    def __init__(self, title: str, rows: Sequence[tuple[int | None, str]]) -> None:
        super().__init__()
        self.title_text = title
        self.rows = list(rows)

    def compose(self) -> ComposeResult:
        seen: set[int] = set()
        ids = []
        for step, _ in self.rows:  # option ids are unique: a step's first row goes there
            ids.append(str(step) if step is not None and step not in seen else None)
            if step is not None:
                seen.add(step)
        steps = any(step is not None for step, _ in self.rows)
        # a list that names no step (`:breaks`) has no step column, and Enter just closes it
        blank = " " * 14 if steps else ""
        with Vertical():
            hint = "enter goes to the step, esc closes" if steps else "enter or esc closes"
            yield Label(Content.assemble((self.title_text, "bold"), (f"  ({hint})", "$text-muted")))
            yield OptionList(
                *[
                    Option(
                        Content.assemble(
                            (f"step {step:>7}  " if step is not None else blank, "$text-muted"),
                            text,
                        ),
                        id=ident,
                    )
                    for (step, text), ident in zip(self.rows, ids, strict=True)
                ]
                or [Option("(nothing)", disabled=True)],
                id="list-rows",
            )

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        # the row's own step (a second row of one step has no option id, and still goes there)
        rows = self.rows
        step = rows[event.option_index][0] if event.option_index < len(rows) else None
        self.dismiss(step)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
