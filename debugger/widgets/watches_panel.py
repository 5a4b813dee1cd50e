"""Provides `WatchesPanel`: the watched expressions and their values at the current step.

A watchpoint is marked ◉ (`c` and `C` stop where its value changes), a plain watch ○. The panel
hides itself while nothing is watched; `:watch`, `:watchpoint` and `:unwatch` change the list.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content
from textual.widgets import OptionList
from textual.widgets.option_list import Option


class WatchesPanel(OptionList):
    """`show(rows)` with rows of (is a watchpoint, `expr = value`)."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._rows: tuple[tuple[bool, str], ...] = ()
        self.display = False

    def show(self, rows: Sequence[tuple[bool, str]]) -> None:
        rows = tuple(rows)
        self.display = bool(rows)
        if rows == self._rows:
            return
        self._rows = rows
        self.set_options(
            [Option(_prompt(n, stops, text)) for n, (stops, text) in enumerate(rows, 1)]
        )


def _prompt(n: int, stops: bool, text: str) -> Content:
    return Content.assemble(
        (f"{n} ", "$text-muted"),
        ("◉ " if stops else "○ ", "$text-warning" if stops else "$text-muted"),
        (text, ""),
    )
