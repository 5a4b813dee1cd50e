"""Provides `AppCore`, what the parts of `DebuggerApp` (`debugger.app_commands`,
`debugger.app_editing`) need from the app: the session, the busy-work machinery and the
panels they read. Each part extends it with the few other things it calls, and is typed
against it plus Textual's `App`, so a part that calls something the app lacks fails `mypy`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from debugger.errors import SessionError

if TYPE_CHECKING:
    from debugger.session import Session
    from debugger.widgets.variables_panel import VariablesPanel
    from runtime.runs.stopping import Stopper

__all__ = ["AppCore"]


class AppCore(Protocol):
    """The part of `DebuggerApp` its mixins share (defined in `debugger.app`)."""

    session: Session | None
    variables: VariablesPanel
    _stopper: Stopper | None
    _events_key: tuple[Any, ...]

    @property
    def _live(self) -> Session: ...
    def _can_act(self) -> bool: ...
    def _fail(self, error: SessionError | str) -> None: ...
    def _begin(self, label: str, cancellable: bool = False, runs: bool = False) -> None: ...
    def _end(self) -> None: ...
    def _from_thread(self, fn: Callable[..., Any], *args: Any) -> None: ...
    def _refresh_view(self) -> None: ...
    def _move(self, fn: Callable[[], object]) -> None: ...
    def _step_progress(self, step: int) -> None: ...
    def _scan_progress(self, done: int, total: int) -> None: ...
    def _work_done(self, message: str) -> None: ...
    def _work_failed(self, error: SessionError | str) -> None: ...
