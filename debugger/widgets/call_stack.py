"""Provides `CallStack`: the frames at the current step, innermost first (as gdb's `bt`).

Choosing a frame (enter or click) posts `FrameSelected`; the app selects it in the session and
the variables and source panels follow.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from debugger.widgets.fitted_title import fit_title
from runtime.record.views import FrameView

# Shown when there are no frames (the run has returned): a blank panel said nothing.
NO_FRAMES = "no frames: the program has ended"

KIND_STYLE = {"node": "bold $text-accent", "def": "$text-primary", "prelude": "$text-muted"}


class CallStack(OptionList):
    """The call stack; `show(frames, selected)` with frames outermost first."""

    class FrameSelected(Message):
        """The person chose frame `index` (outermost 0)."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._shape: tuple[tuple[str, str, int], ...] | None = None  # None: nothing shown yet
        self._count = 0

    def titles(self) -> list[str]:
        """The panel's title, longest first: the depth stays (300 frames of a recursion
        looked like the 12 the panel had room for)."""
        n = self._count
        return [f"call stack · {n} frame{'' if n == 1 else 's'}", f"stack · {n}", f"{n}"]

    def on_resize(self) -> None:
        fit_title(self, self.titles())

    def show(self, frames: Sequence[FrameView], selected: int) -> None:
        shape = tuple((f.scope, f.kind, f.line) for f in frames)
        if len(frames) != self._count or not self.border_title:
            self._count = len(frames)
            fit_title(self, self.titles())
        if shape != self._shape:
            old = self._shape or ()
            same_frames = bool(old) and [s[:2] for s in shape] == [s[:2] for s in old]
            self._shape = shape
            rows = list(range(len(frames) - 1, -1, -1))
            if not frames:
                self.set_options([Option(Content.styled(NO_FRAMES, "$text-muted"), disabled=True)])
            elif same_frames:
                # Only lines moved (the usual step): relabel the rows that changed.
                for depth, i in enumerate(rows):
                    if old[i] != shape[i]:
                        self.replace_option_prompt_at_index(depth, _prompt(depth, frames[i]))
            else:
                self.set_options(
                    [Option(_prompt(depth, frames[i]), id=str(i)) for depth, i in enumerate(rows)]
                )
        row = self._count - 1 - selected
        if 0 <= row < self._count and self.highlighted != row:
            self.highlighted = row

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(self.FrameSelected(int(event.option.id)))


def _prompt(depth: int, f: FrameView) -> Content:
    return Content.assemble(
        (f"#{depth} ", "$text-muted"),
        (f.scope, KIND_STYLE.get(f.kind, "")),
        (f"  {f.kind}", "$text-muted"),
        (f"  line {f.line}" if f.line else "", ""),
    )
