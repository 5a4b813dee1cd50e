"""Provides the shapes a debugging session works with, shared by its parts (`debugger.session`,
`debugger.edits`, `debugger.points`) so none of them imports another for a type: what a session
needs from a timeline (`TimelineLike`), a `Move`, the progress and cancel callbacks, and the
frame kinds a person cannot edit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from runtime.record.views import BranchInfo, Change, Event, Location, StateView

if TYPE_CHECKING:
    from runtime.runs.stopping import Stopper

__all__ = [
    "SCAN_REPORT_EVERY",
    "STOP_EVENTS",
    "USER_HIDDEN_KINDS",
    "Cancelled",
    "Move",
    "Progress",
    "RunProgress",
    "SessionReading",
    "TimelineLike",
]

Progress = Callable[[int, int], None]
"""Reports long work: `progress(done, total)`; total 0 when unknown."""

RunProgress = Callable[[int], None]
"""The runtime's progress callback while it runs or re-executes: the step reached."""

Cancelled = Callable[[], bool]
"""Asked now and then by long scans; True stops them early."""

# Kinds of timeline events `continue` stops at, besides breakpoints and the ends.
STOP_EVENTS = frozenset({"debugger", "interrupt", "error"})
# Frames a person cannot edit: the module's and the prelude's (builtins written in Agency).
USER_HIDDEN_KINDS = frozenset({"module", "prelude"})
SCAN_REPORT_EVERY = 4096


class TimelineLike(Protocol):
    """What a session needs from `runtime.record.timeline.Timeline` (documented there)."""

    run_id: str
    branch: int
    source_path: str

    def __len__(self) -> int: ...
    def state_at(self, step: int) -> StateView: ...
    def location_at(self, step: int) -> Location | None: ...
    def kind_at(self, step: int) -> str: ...
    def depth_at(self, step: int) -> int: ...
    def events(self, kind: str | None = None) -> list[Event]: ...
    def changes_at(self, step: int) -> list[Change]: ...
    def last_write(
        self, name: str, before: int, frame: int | None = None, scope: str | None = None
    ) -> int | None: ...
    def llm_call_at(self, step: int) -> dict[str, Any] | None: ...
    def search(self, text: str) -> list[int]: ...
    def branches(self) -> list[BranchInfo]: ...
    def switch(self, branch: int) -> TimelineLike: ...
    def diverge(self, a: int, b: int) -> int | None: ...
    def fork(
        self,
        step: int,
        edits: dict[str, Any],
        progress: RunProgress | None = None,
        stopper: Stopper | None = None,
    ) -> TimelineLike: ...
    def export_checkpoint(self, step: int) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Move:
    """Where a move landed and why it stopped there (shown in the status line)."""

    step: int
    reason: str = ""


class SessionReading(Protocol):
    """What a session's parts (`Editing`, `Points`) read from the rest of `Session`: the
    timeline, where the cursor stands, and the record around it."""

    timeline: TimelineLike
    frame: int | None

    @property
    def first(self) -> int: ...
    @property
    def last(self) -> int: ...
    @property
    def branch(self) -> int: ...
    @property
    def source_path(self) -> str: ...
    def source_text(self, path: str | None = None) -> str: ...
    def state(self) -> StateView: ...
    def frame_index(self) -> int: ...
    def branches(self) -> list[BranchInfo]: ...
