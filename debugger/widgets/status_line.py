"""Provides `StatusLine`: step k/n, branch, location, tokens, cost, run status and why the
cursor stopped where it is; staged edits and a waiting interrupt are called out."""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget

from runtime.timeline.views import StateView

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
        height: 1;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.content = Content("")

    def render(self) -> Content:
        return self.content

    def show(
        self,
        state: StateView,
        length: int,
        reason: str = "",
        edits: int = 0,
        interrupt: object = None,
        breakpoints: int = 0,
    ) -> None:
        loc = state.location
        where = f"{loc.scope}:{loc.line}" if loc is not None else "-"
        u = state.usage
        parts: list[tuple[str, str] | str] = [
            ("step ", "$text-muted"),
            (f"{state.step}/{max(length - 1, 0)}", "bold"),
            ("  branch ", "$text-muted"),
            (str(state.branch), "bold"),
            ("  at ", "$text-muted"),
            where,
            ("  tokens ", "$text-muted"),
            f"{u.input_tokens}↑ {u.output_tokens}↓",
            ("  cost ", "$text-muted"),
            f"${u.cost:.4f}",
            "  ",
            (state.status, STATUS_STYLE.get(state.status, "")),
        ]
        if breakpoints:
            parts += [("  ● ", "$text-error"), f"{breakpoints}"]
        if edits:
            parts += [("  ✎ ", "bold $text-success"), f"{edits} staged (r: restore from here)"]
        if interrupt is not None:
            message = interrupt.get("message") if isinstance(interrupt, dict) else interrupt
            parts += [
                ("  ⏸ ", "bold $text-warning"),
                f"waiting on interrupt: {message} (:approve / :reject)",
            ]
        if state.error:
            parts += [("  error: ", "bold $text-error"), state.error]
        if reason:
            parts += [("  — ", "$text-muted"), (reason, "italic")]
        content = Content.assemble(*parts)
        if content.plain != self.content.plain or content != self.content:
            self.content = content
            self.refresh()
