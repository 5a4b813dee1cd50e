"""Provides `StatusLine`: step k/n, branch, location, tokens, cost, what the run is (finished,
failed, interrupted, running: the same at every step) and why the cursor stopped where it is;
staged edits and a waiting interrupt are called out.

When the line is wider than the terminal, the step budget goes first, then the token and cost
figures, so the run's status, a waiting interrupt (and how to answer it) and the reason stay in
sight; a reason still too long (how to resume a stopped recording) wraps onto the rows under
it (up to four), which are given back when the text fits again."""

from __future__ import annotations

from textual.content import Content
from textual.geometry import Size
from textual.widget import Widget

from runtime.record.views import StateView

MAX_ROWS = 4  # a long reason wraps to at most this many rows, given back when it fits again
STATUS_STYLE = {
    "running": "$text-primary",
    "finished": "bold $text-success",
    "failed": "bold $text-error",
    "interrupted": "bold $text-warning",
}


class StatusLine(Widget):
    """One line under the panels. Redrawn in place on every step; a plain refresh, never a
    layout pass (which would repaint the whole screen)."""

    DEFAULT_CSS = """
    StatusLine {
        height: auto;
        max-height: 4;  /* MAX_ROWS */
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.content = Content("")  # the whole line
        self.unbudgeted = Content("")  # the line without the step budget
        self.compact = Content("")  # without the budget, tokens and cost, for narrow terminals

    def render(self) -> Content:
        return self._fitted(self.content_size.width)

    def _fitted(self, width: int) -> Content:
        """The fullest version of the line that fits `width` (else the compact one, wrapped)."""
        if width and self.content.cell_length > width:
            return self.unbudgeted if self.unbudgeted.cell_length <= width else self.compact
        return self.content

    def _rows(self, width: int) -> int:
        """Rows the line takes at `width`: as many as its words wrap to, up to MAX_ROWS (a
        cancelled recording's reason ends with how to resume it; cut at two rows, that part
        was lost at 80 columns)."""
        fitted = self._fitted(width)
        if not width or fitted.cell_length <= width:
            return 1
        return min(len(fitted.wrap(width)), MAX_ROWS)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return self._rows(width)

    def show(
        self,
        state: StateView,
        length: int,
        reason: str = "",
        edits: int = 0,
        interrupt: object = None,
        breakpoints: int = 0,
        status: str | None = None,
        edits_at: int | None = None,
        max_steps: int | None = None,
    ) -> None:
        """Show `state` at step k of `length`; `status` is what the run is (finished, failed,
        interrupted, running), wherever the cursor stands, and defaults to the state's own
        (which says "running" at every step but the last); `edits_at`
        is the step where the staged edits wait, when it is not this one; `max_steps` the step
        budget the run was recorded under."""
        status = status or state.status
        loc = state.location
        where = f"{loc.scope}:{loc.line}" if loc is not None else "-"
        u = state.usage
        steps: list[tuple[str, str] | str] = [
            ("step ", "$text-muted"),
            (f"{state.step:,}/{max(length - 1, 0):,}", "bold"),  # as `g` takes them
        ]
        head = list(steps)
        if max_steps is not None:  # the recording's step budget (--max-steps)
            head.append((f" (max {max_steps:,})", "$text-muted"))
        place: list[tuple[str, str] | str] = [
            ("  branch ", "$text-muted"),
            (str(state.branch), "bold"),
            ("  at ", "$text-muted"),
            where,
        ]
        head += place
        usage: list[tuple[str, str] | str] = [
            ("  tokens ", "$text-muted"),
            f"{u.input_tokens}↑ {u.output_tokens}↓",
            ("  cost ", "$text-muted"),
            f"${u.cost:.4f}",
        ]
        tail: list[tuple[str, str] | str] = [
            ("  run ", "$text-muted"),
            (status, STATUS_STYLE.get(status, "")),
        ]
        if breakpoints:
            tail += [("  ● ", "$text-error"), f"{breakpoints}"]
        if edits:
            if edits_at is None:
                tail += [("  ✎ ", "bold $text-success"), f"{edits} staged (r: restore from here)"]
            else:
                tail += [("  ✎ ", "bold $text-warning"), f"{edits} staged at step {edits_at}"]
        short = list(tail)
        if interrupt is not None:
            message = interrupt.get("message") if isinstance(interrupt, dict) else interrupt
            tail += [
                ("  ⏸ ", "bold $text-warning"),
                f"waiting on interrupt: {message} (:approve / :reject)",
            ]
            # narrow: how to answer before the question, which may be long
            short += [("  ⏸ ", "bold $text-warning"), f":approve / :reject  {message}"]
        rest: list[tuple[str, str] | str] = []
        if state.error:
            rest += [("  error: ", "bold $text-error"), state.error]
        if reason:
            rest += [("  — ", "$text-muted"), (reason, "italic")]
        content = Content.assemble(*head, *usage, *tail, *rest)
        if content.plain != self.content.plain or content != self.content:
            width = self.content_size.width
            rows = self._rows(width)
            self.content = content
            self.unbudgeted = Content.assemble(*steps, *place, *usage, *tail, *rest)
            self.compact = Content.assemble(*steps, *place, *short, *rest)
            # a layout pass only when the line needs a row more or one less
            self.refresh(layout=self._rows(width) != rows)
