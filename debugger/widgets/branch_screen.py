"""Provides `BranchScreen`: the run's branches (where each forked, its edits, where it
diverges from the one on screen); choosing one returns its id."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from debugger.formatting import describe_value
from runtime.record.views import BranchInfo


def describe_branch(info: BranchInfo, current: int, diverges: int | None) -> Content:
    parts: list[tuple[str, str] | str] = [
        ("▶ " if info.id == current else "  ", "bold $text-accent"),
        (f"branch {info.id}", "bold"),
        (f"  {info.length} steps", "$text-muted"),
    ]
    if info.parent is not None:
        parts.append(f"  from branch {info.parent} at step {info.fork_step}")
    if diverges is not None and info.id != current:
        parts.append((f"  diverges at step {diverges}", "$text-warning"))
    edits = {k: v for k, v in (info.edits or {}).items() if k != "frame"}
    if edits:
        parts.append((f"  edits {describe_value(edits, 60)}", "$text-success"))
    return Content.assemble(*parts)


class BranchScreen(ModalScreen[int | None]):
    """Lists branches; Enter switches, Escape closes."""

    DEFAULT_CSS = """
    BranchScreen {
        align: center middle;
    }
    BranchScreen > Vertical {
        width: 100;
        max-width: 100%;
        height: auto;
        max-height: 24;
        border: thick $primary;
        background: $surface;
    }
    BranchScreen OptionList {
        height: auto;
        max-height: 20;
    }
    """

    BINDINGS = [Binding("escape", "dismiss_none", "Close", id="branches.close")]

    def __init__(self, rows: list[tuple[BranchInfo, int | None]], current: int) -> None:
        super().__init__()
        self.rows = rows
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Branches: enter switches, esc closes")
            yield OptionList(
                *[
                    Option(describe_branch(info, self.current, d), id=str(info.id))
                    for info, d in self.rows
                ],
                id="branch-list",
            )

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        ids = [info.id for info, _ in self.rows]
        if self.current in ids:
            options.highlighted = ids.index(self.current)
        options.focus()

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(int(event.option.id or 0))

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
