"""Provides the read-only views of a run that the timeline hands to its readers (CLI, debugger).

A view is plain data: values inside are JSON-like Python values (None, bool, int, float, str,
list, dict) where arrays and objects are copies, never live machine containers. Two markers
stand for values JSON has no word for:

- a Result is `{"$result": "success", "value": v}` or `{"$result": "failure", "error": e}`
- a function reference is `{"$function": "name"}`
"""

from __future__ import annotations

from typing import Any

from runtime.frozen import Frozen, set_field
from runtime.language.location import Location as Location  # a view names where a step is


class FrameView(Frozen):
    """One frame of the call stack, outermost first in `StateView.frames`."""

    __slots__ = ("scope", "kind", "args", "locals", "line", "col")

    scope: str  # function name
    kind: str  # "node" | "def" | "handler" | "block" | "prelude"
    args: dict[str, Any]
    locals: dict[str, Any]
    line: int  # the line this frame is at (for callers: the line of the pending call)
    col: int

    def __init__(
        self,
        scope: str,
        kind: str,
        args: dict[str, Any],
        locals: dict[str, Any],
        line: int,
        col: int,
    ) -> None:
        set_field(self, "scope", scope)
        set_field(self, "kind", kind)
        set_field(self, "args", args)
        set_field(self, "locals", locals)
        set_field(self, "line", line)
        set_field(self, "col", col)


class Message(Frozen):
    __slots__ = ("role", "content", "name", "tool_calls")

    role: str  # "system" | "user" | "assistant" | "tool"
    content: str
    name: str | None  # tool name for role "tool"
    tool_calls: tuple[dict[str, Any], ...]

    def __init__(
        self,
        role: str,
        content: str,
        name: str | None = None,
        tool_calls: tuple[dict[str, Any], ...] = (),
    ) -> None:
        set_field(self, "role", role)
        set_field(self, "content", content)
        set_field(self, "name", name)
        set_field(self, "tool_calls", tool_calls)


class Usage(Frozen):
    __slots__ = ("input_tokens", "output_tokens", "cost")

    input_tokens: int
    output_tokens: int
    cost: float

    def __init__(self, input_tokens: int = 0, output_tokens: int = 0, cost: float = 0.0) -> None:
        set_field(self, "input_tokens", input_tokens)
        set_field(self, "output_tokens", output_tokens)
        set_field(self, "cost", cost)


class StateView(Frozen):
    """The whole visible state of a run at one step."""

    __slots__ = (
        "step",
        "branch",
        "location",
        "frames",
        "globals",
        "threads",
        "active_thread",
        "output",
        "usage",
        "status",
        "result",
        "error",
    )

    step: int
    branch: int
    location: Location | None
    frames: tuple[FrameView, ...]
    globals: dict[str, Any]
    threads: dict[str, tuple[Message, ...]]
    active_thread: str
    output: tuple[str, ...]
    usage: Usage
    status: str  # "running" | "finished" | "failed" | "interrupted"
    result: Any
    error: str | None

    def __init__(
        self,
        step: int,
        branch: int,
        location: Location | None,
        frames: tuple[FrameView, ...],
        globals: dict[str, Any],
        threads: dict[str, tuple[Message, ...]],
        active_thread: str,
        output: tuple[str, ...],
        usage: Usage,
        status: str = "running",
        result: Any = None,
        error: str | None = None,
    ) -> None:
        set_field(self, "step", step)
        set_field(self, "branch", branch)
        set_field(self, "location", location)
        set_field(self, "frames", frames)
        set_field(self, "globals", globals)
        set_field(self, "threads", threads)
        set_field(self, "active_thread", active_thread)
        set_field(self, "output", output)
        set_field(self, "usage", usage)
        set_field(self, "status", status)
        set_field(self, "result", result)
        set_field(self, "error", error)


class Event(Frozen):
    """Something worth a marker on the timeline."""

    __slots__ = ("step", "kind", "summary", "data")

    step: int
    kind: str  # "llm" | "tool" | "checkpoint" | "restore" | "interrupt" | "error" | "debugger" | "effect" | "branch"
    summary: str
    data: dict[str, Any]  # a new empty dict when not given (or None)

    def __init__(
        self, step: int, kind: str, summary: str, data: dict[str, Any] | None = None
    ) -> None:
        set_field(self, "step", step)
        set_field(self, "kind", kind)
        set_field(self, "summary", summary)
        set_field(self, "data", {} if data is None else data)


class Change(Frozen):
    """One write made by a step: `target` is a readable path such as `main.counter`,
    `globals.total`, `threads.0`, `output`."""

    __slots__ = ("target", "value")

    target: str
    value: Any

    def __init__(self, target: str, value: Any) -> None:
        set_field(self, "target", target)
        set_field(self, "value", value)


class BranchInfo(Frozen):
    __slots__ = ("id", "parent", "fork_step", "length", "edits")

    id: int
    parent: int | None
    fork_step: int | None  # step of the parent branch this one starts after
    length: int
    edits: dict[str, Any]  # a new empty dict when not given (or None)

    def __init__(
        self,
        id: int,
        parent: int | None,
        fork_step: int | None,
        length: int,
        edits: dict[str, Any] | None = None,
    ) -> None:
        set_field(self, "id", id)
        set_field(self, "parent", parent)
        set_field(self, "fork_step", fork_step)
        set_field(self, "length", length)
        set_field(self, "edits", {} if edits is None else edits)
