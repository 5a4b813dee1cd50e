"""Provides `StatusLine`: step k/n, branch, location, tokens, cost, run status and why the
cursor stopped where it is; staged edits and a waiting interrupt are called out."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from runtime.timeline.views import StateView

STATUS_STYLE = {
    "running": "$text-primary",
    "finished": "bold $text-success",
    "failed": "bold $text-error",
    "interrupted": "bold $text-warning",
}


class StatusLine(Static):
    """One line under the panels."""

    def show(
        self,
        state: StateView,
        length: int,
        reason: str = "",
        edits: int = 0,
        interrupt: str | None = None,
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
        if interrupt:
            parts += [("  ⏸ ", "bold $text-warning"), f"{interrupt} (:approve / :reject)"]
        if state.error:
            parts += [("  error: ", "bold $text-error"), state.error]
        if reason:
            parts += [("  — ", "$text-muted"), (reason, "italic")]
        self.update(Content.assemble(*parts))
