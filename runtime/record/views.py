"""Provides the read-only views of a run that the timeline hands to its readers (CLI, debugger).

A view is plain data: values inside are JSON-like Python values (None, bool, int, float, str,
list, dict) where arrays and objects are copies, never live machine containers. Two markers
stand for values JSON has no word for:

- a Result is `{"$result": "success", "value": v}` or `{"$result": "failure", "error": e}`
- a function reference is `{"$function": "name"}`
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtime.language.location import Location as Location  # a view names where a step is


@dataclass(frozen=True, slots=True)
class FrameView:
    """One frame of the call stack, outermost first in `StateView.frames`."""

    scope: str  # function name
    kind: str  # "node" | "def" | "handler" | "block" | "prelude"
    args: dict[str, Any]
    locals: dict[str, Any]
    line: int  # the line this frame is at (for callers: the line of the pending call)
    col: int


@dataclass(frozen=True, slots=True)
class Message:
    role: str  # "system" | "user" | "assistant" | "tool"
    content: str
    name: str | None = None  # tool name for role "tool"
    tool_calls: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0


@dataclass(frozen=True, slots=True)
class StateView:
    """The whole visible state of a run at one step."""

    step: int
    branch: int
    location: Location | None
    frames: tuple[FrameView, ...]
    globals: dict[str, Any]
    threads: dict[str, tuple[Message, ...]]
    active_thread: str
    output: tuple[str, ...]
    usage: Usage
    status: str = "running"  # "running" | "finished" | "failed" | "interrupted"
    result: Any = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Event:
    """Something worth a marker on the timeline."""

    step: int
    kind: str  # "llm" | "tool" | "checkpoint" | "restore" | "interrupt" | "error" | "debugger" | "effect" | "branch"
    summary: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Change:
    """One write made by a step: `target` is a readable path such as `main.counter`,
    `globals.total`, `threads.0`, `output`."""

    target: str
    value: Any


@dataclass(frozen=True, slots=True)
class BranchInfo:
    id: int
    parent: int | None
    fork_step: int | None  # step of the parent branch this one starts after
    length: int
    edits: dict[str, Any] = field(default_factory=dict)
