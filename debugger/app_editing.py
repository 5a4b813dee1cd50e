"""Provides `EditingKeys`, the part of `DebuggerApp` that changes the past: `e` (edit the
focused message, the LLM answer or the selected variable in a dialog), staging a `:set`, `r`
(restore from the cursor into a new branch, asking first when nothing is staged) and `B` (the
branches).

A part of `DebuggerApp` (its methods take the app as `self`); the session does the work, these
show it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Protocol

from textual import work

from debugger.app_parts import AppCore
from debugger.commands import parse_literal
from debugger.edits import EditPrompt
from debugger.errors import SessionError
from debugger.widgets.branch_screen import BranchScreen
from debugger.widgets.confirm_screen import ConfirmScreen
from debugger.widgets.edit_screen import EditScreen
from debugger.widgets.llm_inspector import LLMInspector
from debugger.widgets.messages_panel import MessagesPanel
from runtime.runs.stopping import Stopper

__all__ = ["AppForEditing", "EditingKeys"]

STAGED_VARIABLE = re.compile(r"(locals|args|globals)\.([A-Za-z_$][\w$]*)")  # what edits say


class AppForEditing(AppCore, Protocol):
    """What `EditingKeys` needs from the rest of `DebuggerApp`."""

    def cmd_branch(self, rest: str) -> None: ...


if TYPE_CHECKING:
    from textual.app import App

    class _App(App[None], AppForEditing):
        """Textual's app plus the rest of `DebuggerApp`, as the part sees it."""

else:
    _App = object


class EditingKeys(_App):
    """Editing and restoring: the keys and dialogs of `DebuggerApp` that change the past."""

    _edit_stage: Callable[[str], str] | None  # what the open edit dialog stages
    _stopper: Stopper | None  # kept by the app, written here too
    _progress_toward: int  # the step the work line's bar ends at (0: unknown)

    def action_edit(self) -> None:
        """Edit what has focus: a message, the LLM answer, else the selected variable."""
        if not self._can_act():
            return
        s = self.session
        assert s is not None
        refused = s.edit_refused()
        if refused is not None:  # said before the dialog, not after the value is typed
            self._fail(refused)
            return
        focused = self.focused
        try:
            if isinstance(focused, MessagesPanel) and focused.selected is not None:
                index = focused.selected
                self._ask(s.message_prompt(index), partial(s.edit_message, index))
                return
            if isinstance(focused, LLMInspector):
                self._ask(s.answer_prompt(), lambda text: s.edit_llm_answer(parse_literal(text)))
                return
        except SessionError as exc:
            self._fail(exc)
            return
        ref = self.variables.selected
        if ref is None:
            self._fail(
                "select a variable (variables panel), a message or the LLM call to edit"
                " (tab moves between them)"
            )
            return
        self._ask(
            s.variable_prompt(ref.kind, ref.label, ref.value),
            lambda text: s.edit_variable(ref.kind, ref.name, parse_literal(text), path=ref.path),
            s.already_read(ref.kind, ref.name) or "",
        )

    def _ask(self, prompt: EditPrompt, stage: Callable[[str], str], warning: str = "") -> None:
        """Open the edit dialog; `stage(text)` stages what is typed (returns what it staged)."""
        self._edit_stage = stage
        self.push_screen(EditScreen(prompt.title, prompt.text, prompt.hint, warning))

    def on_edit_screen_submitted(self, message: EditScreen.Submitted) -> None:
        """Stage the dialog's text; a refused value keeps the dialog open with the reason."""
        stage, self._edit_stage = self._edit_stage, None
        if stage is None or self.session is None:
            return
        try:
            where = stage(message.text)
        except SessionError as exc:
            self._edit_stage = stage
            message.dialog.refuse(str(exc))
            return
        message.dialog.dismiss(None)
        self._staged_note(where)

    def _stage(self, edit: Callable[[str], str], text: str) -> None:
        """Stage a `:set` typed on the command line (a refusal is a notification)."""
        try:
            where = edit(text)
        except SessionError as exc:
            self._fail(exc)
            return
        self._staged_note(where)
        staged = STAGED_VARIABLE.match(where)
        warning = self._live.already_read(*staged.groups()) if staged else None
        if warning:  # the dialog says it as it opens; a `:set` says it here
            self.notify(warning, severity="warning", timeout=8)

    def _staged_note(self, where: str) -> None:
        assert self.session is not None
        self.notify(f"staged {where}; press r to restore from step {self.session.step}")
        self._refresh_view()

    def action_restore(self) -> None:
        """Restore from here with the staged edits; with none, ask first (it re-runs live)."""
        if not self._can_act():
            return
        s = self.session
        assert s is not None
        refused = s.restore_refused()
        if refused is not None:
            self._fail(refused)
            return
        pending = s.pending_edits()
        if pending is not None and pending.step != s.step:
            self._fail(
                f"your edits are staged at step {pending.step}: "
                f"g {pending.step} then r, or :discard them"
            )
            return
        if pending is None:
            self.push_screen(
                ConfirmScreen(
                    f"Restore from step {s.step} with nothing changed?", s.restore_plan()
                ),
                self._restore_confirmed,
            )
            return
        self._restore_now()

    def _restore_confirmed(self, yes: bool | None) -> None:
        if yes:
            self._restore_now()

    def _restore_now(self) -> None:
        assert self.session is not None
        self._stopper = Stopper(self.session.max_steps, self.session.max_store_bytes)
        self._begin(f"restoring from step {self.session.step}", cancellable=True, runs=True)
        # the re-execution up to the fork step has a known end: a bar, not only "--%"
        self._progress_toward = self.session.step
        self._restore_worker(self._stopper)

    @work(thread=True, exclusive=True, group="work", exit_on_error=False)
    def _restore_worker(self, stopper: Stopper) -> None:
        assert self.session is not None
        try:
            branch = self.session.restore(self._step_progress, stopper)
        except SessionError as exc:
            self._from_thread(self._work_failed, exc)
            return
        self._from_thread(self._work_done, f"branch {branch} runs from step {self.session.step}")

    def action_branches(self) -> None:
        if not self._can_act():
            return
        s = self.session
        assert s is not None
        rows = [(info, s.diverge(s.branch, info.id)) for info in s.branches()]
        self.push_screen(BranchScreen(rows, s.branch), self._branch_chosen)

    def _branch_chosen(self, branch: int | None) -> None:
        if branch is None or self.session is None or branch == self.session.branch:
            return
        self.cmd_branch(str(branch))
