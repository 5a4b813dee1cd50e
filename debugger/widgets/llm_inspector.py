"""Provides `LLMInspector`: the LLM call at (or nearest before) the current step: the prompt
messages, the answer, model, tokens, cost and latency. With focus, `e` edits the answer."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

from debugger.formatting import describe_value
from debugger.widgets.fitted_title import fit_title

ROLE_STYLE = {
    "system": "$text-secondary",
    "user": "$text-primary",
    "assistant": "$text-success",
    "tool": "$text-warning",
}

FIRST, LAST = 2, 8  # messages of a long prompt shown: its first and its last
MAX_CHARS = 2000  # of one message shown (z shows the whole request)


def describe_call(call: dict[str, Any] | None, step: int) -> Content:
    """The call as text for the panel."""
    if call is None:
        return Content.styled("no LLM call at or before this step", "$text-muted")
    at = call.get("step", step)
    head = "this step" if at == step else f"step {at} (the latest call before this step)"
    usage = (
        f"{call.get('input_tokens', 0)} in · {call.get('output_tokens', 0)} out · "
        f"${float(call.get('cost') or 0):.4f} · {float(call.get('latency_ms') or 0):.1f} ms"
    )
    parts: list[tuple[str, str] | str] = [
        (f"{call.get('provider', '?')}/{call.get('model', '?')}", "bold $text-accent"),
        f"  {head}\n",
        (usage + "\n", "$text-muted"),
        ("prompt\n", "bold"),
    ]
    request = call.get("request") or {}
    messages = request.get("messages", []) if isinstance(request, dict) else []
    if not isinstance(messages, list):
        messages = []
    # A long conversation is sent whole with every call: its first messages (the system
    # prompt) and its last ones (what this call added) are what tell calls apart, and drawing
    # them all took most of a second at 800 messages. `z` shows the whole request.
    opening, closing = messages, []
    if len(messages) > FIRST + LAST + 1:
        opening, closing = messages[:FIRST], messages[-LAST:]
    for m in opening:
        parts += _message_parts(m)
    if closing:
        skipped = len(messages) - FIRST - LAST
        parts.append((f"  … {skipped} more messages (z shows them all)\n", "$text-muted"))
        for m in closing:
            parts += _message_parts(m)
    tools = request.get("tools") if isinstance(request, dict) else None
    if tools:
        names = [t.get("name", "?") if isinstance(t, dict) else str(t) for t in tools]
        parts.append((f"  tools: {', '.join(names)}\n", "$text-muted"))
    response = call.get("response") or {}
    answer = response.get("text") if isinstance(response, dict) else str(response)
    parts.append(("answer\n", "bold"))
    if answer:
        parts.append(f"  {answer}\n")
    for tc in (response.get("tool_calls") or []) if isinstance(response, dict) else []:
        parts.append((f"  → {describe_value(tc, 100)}\n", "$text-warning"))
    parts += [("value ", "bold"), describe_value(call.get("value"), 200)]
    return Content.assemble(*parts)


def _message_parts(m: Any) -> list[tuple[str, str] | str]:
    """One prompt message: its role, then its text (at most MAX_CHARS of it)."""
    role = str(m.get("role", "?")) if isinstance(m, dict) else "?"
    text = str(m.get("content", "")) if isinstance(m, dict) else str(m)
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS] + "…"
    return [(f"  {role}: ", ROLE_STYLE.get(role, "bold")), text + "\n"]


class LLMInspector(VerticalScroll, can_focus=True):
    """Shows one LLM call; `show(call, step)` replaces it only when the call changes."""

    DEFAULT_CSS = """
    LLMInspector > Static {
        width: 1fr;
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._body = Static(describe_call(None, 0))
        self._shown: tuple[int, bool, str | None] | None = None
        self._at: int | None = None  # the step of the call shown

    def compose(self) -> ComposeResult:
        yield self._body

    def show(self, call: dict[str, Any] | None, step: int, edited: Any = None) -> None:
        at = call.get("step", step) if call is not None else None
        key = (id(call), at == step, repr(edited) if edited is not None else None)
        if key == self._shown:
            return
        self._shown = key
        body = describe_call(call, step)
        if edited is not None:
            body = body + Content.styled(
                f"\n✎ staged answer: {describe_value(edited, 200)}", "bold $text-success"
            )
        self._body.update(body)
        self._at = at
        fit_title(self, self.titles())

    def titles(self) -> list[str]:
        """The panel's title, longest first (see `fit_title`)."""
        if self._at is None:
            return ["LLM call", "LLM"]
        return [f"LLM call · step {self._at}", f"LLM · step {self._at}", f"step {self._at}"]

    def on_resize(self) -> None:
        fit_title(self, self.titles())
