"""Provides what makes `c` and `C` stop besides a plain line breakpoint: a breakpoint's condition
and hit count (`:break 12 if i > 3`, `:break 12 hit 3`), and breakpoints on events (`:break llm`,
`:break tool search`, `:break interrupt`, `:break answer yes`).

Parsing and matching only; the session keeps the breakpoints and runs the scans.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from debugger.errors import SessionError
from debugger.expressions import Expression, NotInScope, compile_expression, scope_of

__all__ = ["EVENT_BREAKS", "EventBreak", "LineBreak", "parse_break"]

# kind -> what `:break KIND [TEXT]` stops on (the help screen lists these)
EVENT_BREAKS: dict[str, str] = {
    "llm": "every LLM call",
    "tool": "every tool call (or only TOOL's: break tool TOOL)",
    "interrupt": "every interrupt",
    "answer": "an LLM answer containing TEXT (break answer TEXT)",
}

_LINE = re.compile(r"\s*(\d+)\s*(?:hit\s+(\d+)\s*)?(?:if\s+(.+))?$", re.S)


@dataclass(frozen=True)
class LineBreak:
    """A breakpoint's extras: stop only when `condition` holds there and/or only at the
    `hit`-th arrival at the line (counted along the branch from its first step)."""

    line: int
    condition: Expression | None = None
    hit: int | None = None

    def describe(self) -> str:
        parts = [f"line {self.line}"]
        if self.hit is not None:
            parts.append(f"hit {self.hit}")
        if self.condition is not None:
            parts.append(f"if {self.condition.text}")
        return " ".join(parts)

    def holds(self, state: Any) -> bool:
        """Whether the condition holds at `state` (in its innermost frame). A name not in scope
        there is false; any other error is reported, as a wrong condition should be."""
        return self.holds_in(scope_of(state))

    def holds_in(self, scope: dict[str, Any]) -> bool:
        """Whether the condition holds over `scope` (the names visible at a step)."""
        if self.condition is None:
            return True
        try:
            value = self.condition.evaluate(scope)
        except NotInScope:
            return False
        return value not in (None, False, 0, "")


@dataclass(frozen=True)
class EventBreak:
    kind: str  # a key of EVENT_BREAKS
    text: str = ""  # tool name, or text an answer must contain

    def describe(self) -> str:
        return f"{self.kind} {self.text}".strip()

    def matches(self, kind: str, summary: str, data: dict[str, Any]) -> bool:
        if self.kind == "answer":
            return kind == "llm" and self.text.lower() in summary.lower()
        if kind != self.kind:
            return False
        return self.kind != "tool" or not self.text or data.get("name") == self.text

    @property
    def event_kind(self) -> str:
        return "llm" if self.kind == "answer" else self.kind


def parse_break(text: str) -> LineBreak | EventBreak:
    """`12`, `12 if i > 3`, `12 hit 3`, `12 hit 3 if ok`, `llm`, `tool NAME`, `interrupt`,
    `answer TEXT` → what to stop on."""
    body = text.strip()
    word, _, rest = body.partition(" ")
    if word in EVENT_BREAKS:
        rest = rest.strip()
        if word == "answer" and not rest:
            raise SessionError(
                "usage: :break answer TEXT (stops where an LLM answer contains TEXT)"
            )
        if word in ("llm", "interrupt") and rest:
            raise SessionError(f"usage: :break {word} (it takes nothing after it)")
        return EventBreak(word, rest)
    m = _LINE.match(body)
    if not m:
        kinds = ", ".join(EVENT_BREAKS)
        raise SessionError(
            f"usage: :break LINE [hit N] [if CONDITION], or :break EVENT ({kinds}); not `{body}`"
        )
    hit = int(m.group(2)) if m.group(2) else None
    if hit is not None and hit < 1:
        raise SessionError("a hit count starts at 1 (hit 1 is the first arrival)")
    condition = compile_expression(m.group(3)) if m.group(3) else None
    return LineBreak(int(m.group(1)), condition, hit)
