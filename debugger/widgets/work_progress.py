"""Provides `WorkProgress`: a line that shows long work (recording, restoring, scanning) as it
goes, with a bar when the total is known. Escape asks the app to cancel a scan; the line says
so only for work that can be cancelled."""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label, ProgressBar


class WorkProgress(Horizontal):
    """Hidden while idle; `start(label)`, `advance(done, total)`, `stop()`."""

    DEFAULT_CSS = """
    WorkProgress {
        height: 1;
        display: none;
    }
    WorkProgress.-busy {
        display: block;
    }
    WorkProgress > Label {
        width: auto;
        padding-right: 1;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.label = ""
        self.started = 0.0
        self.cancellable = False

    def compose(self) -> ComposeResult:
        yield Label("", id="work-label")
        yield ProgressBar(total=None, show_eta=False, id="work-bar")

    @property
    def busy(self) -> bool:
        return self.has_class("-busy")

    def start(self, label: str, cancellable: bool = False) -> None:
        self.label = label
        self.cancellable = cancellable
        self.started = time.monotonic()
        self.query_one(Label).update(f"⟳ {label}{self._hint}")
        self.query_one(ProgressBar).update(total=None, progress=0)
        self.add_class("-busy")

    def advance(self, done: int, total: int = 0) -> None:
        bar = self.query_one(ProgressBar)
        if total > 0:
            bar.update(total=total, progress=done)
            detail = f"{done:,}/{total:,}"
        else:
            bar.update(total=None)
            detail = f"step {done:,}"
        self.query_one(Label).update(f"⟳ {self.label}: {detail}{self._hint}")

    @property
    def _hint(self) -> str:
        return "  (esc cancels)" if self.cancellable else ""

    def stop(self) -> None:
        self.remove_class("-busy")
