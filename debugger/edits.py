"""Provides changing the past: `Edits` staged at a step, the `EditPrompt` the edit dialog
shows, and `Editing`, the part of a `Session` that stages edits (variables, messages, an LLM
answer, `:set`) and restores from them into a new branch (the old future is kept).
"""

from __future__ import annotations

import bisect
import copy
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from debugger.commands import parse_set_command
from debugger.declarations import typed_names
from debugger.errors import SessionError
from debugger.formatting import describe_value, json_type
from debugger.shapes import USER_HIDDEN_KINDS, Move, RunProgress, SessionReading, TimelineLike
from runtime.errors import AgencyError
from runtime.record.views import Event, FrameView

__all__ = ["EditPrompt", "Edits", "Editing", "SessionForEditing"]


@dataclass
class Edits:
    """Values changed at one step, waiting for `Session.restore` to run a branch with them.

    The shape of `as_dict()` is what `Timeline.fork` takes.
    """

    step: int
    frame: int
    locals: dict[str, Any] = field(default_factory=dict)
    args: dict[str, Any] = field(default_factory=dict)
    globals: dict[str, Any] = field(default_factory=dict)
    messages: dict[int, str] = field(default_factory=dict)
    llm_answer: Any = None
    has_llm_answer: bool = False

    def __len__(self) -> int:
        n = len(self.locals) + len(self.args) + len(self.globals) + len(self.messages)
        return n + (1 if self.has_llm_answer else 0)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"frame": self.frame}
        for key in ("locals", "args", "globals", "messages"):
            value = getattr(self, key)
            if value:
                out[key] = dict(value)
        if self.has_llm_answer:
            out["llm_answer"] = self.llm_answer
        return out

    def describe(self) -> list[str]:
        """One line per edit, e.g. `locals.x = 3`."""
        lines = [
            f"{kind}.{name} = {describe_value(value, 40)}"
            for kind in ("args", "locals", "globals")
            for name, value in getattr(self, kind).items()
        ]
        lines += [f"messages[{i}] = {describe_value(t, 40)}" for i, t in self.messages.items()]
        if self.has_llm_answer:
            lines.append(f"llm answer = {describe_value(self.llm_answer, 40)}")
        return lines


@dataclass(frozen=True, slots=True)
class EditPrompt:
    """What the edit dialog asks: its title, the value as text to start from, and a hint."""

    title: str
    text: str
    hint: str


# -- paths inside values --------------------------------------------------------------------------------------


def _same_type(old: Any, new: Any) -> bool:
    return old is None or json_type(old) == json_type(new)


def _get_path(value: Any, path: list[str | int], name: str) -> Any:
    cur = value
    where = name
    for seg in path:
        if isinstance(seg, int) and isinstance(cur, list):
            if not -len(cur) <= seg < len(cur):
                raise SessionError(f"{where} has no index {seg} (length {len(cur)})")
            cur = cur[seg]
            where += f"[{seg}]"
        elif isinstance(cur, dict) and json_type(cur) == "object":
            key = str(seg)
            if key not in cur:
                raise SessionError(f"{where} has no field `{key}`")
            cur = cur[key]
            where += f".{key}"
        else:
            raise SessionError(f"{where} is a {json_type(cur)}; it has no `{seg}`")
    return cur


def _set_path(value: Any, path: list[str | int], new: Any) -> Any:
    if not path:
        return new
    out = copy.deepcopy(value)
    cur = out
    for seg in path[:-1]:
        cur = cur[seg if isinstance(cur, list) else str(seg)]
    last = path[-1]
    cur[last if isinstance(cur, list) else str(last)] = new
    return out


class SessionForEditing(SessionReading, Protocol):
    """What `Editing` needs from the rest of `Session` (moving and reading the record)."""

    _typed: dict[str, dict[tuple[str, str], bool] | None]
    _checkpoint_loader: Callable[[str, RunProgress | None], TimelineLike] | None

    @property
    def length(self) -> int: ...
    def selected_frame(self) -> FrameView | None: ...
    def staged(self) -> Edits | None: ...
    def events(self, kind: str | None = None) -> list[Event]: ...
    def event_steps(self, kind: str) -> list[int]: ...
    def llm_call(self) -> dict[str, Any] | None: ...
    def goto(self, step: int, reason: str = "") -> Move: ...
    def following(self) -> bool: ...
    def _set_timeline(self, timeline: TimelineLike) -> None: ...


if TYPE_CHECKING:
    _Session = SessionForEditing
else:
    _Session = object


class Editing(_Session):
    """Staging edits and restoring from them (mixed into `Session`)."""

    # Kept by `Session`, written here too (declared here so the types are the session's).
    edits: Edits | None
    step: int
    message: str
    recording: Any
    thread: str | None

    # -- changing the past ------------------------------------------------------------------------

    def _staged(self) -> Edits:
        self._check_edits_here()
        refused = self.edit_refused()
        if refused is not None:
            raise SessionError(refused)
        if self.edits is None or not len(self.edits):
            self.edits = Edits(self.step, self._user_frame_index())
        return self.edits

    def _check_edits_here(self) -> None:
        """Refuse to act at the cursor while edits wait at another step (they would be lost)."""
        if self.edits is not None and len(self.edits) and self.edits.step != self.step:
            n = len(self.edits)
            raise SessionError(
                f"{n} edit{'s are' if n != 1 else ' is'} staged at step {self.edits.step}: "
                f"go back (g {self.edits.step}) to restore, or :discard"
            )

    def restore_refused(self) -> str | None:
        """Why a restore from here cannot run, said before anything is asked or staged work is
        lost (None when it can): another process is still recording the run, or its program
        cannot be re-executed (moved, unreadable, changed since)."""
        if self.following() and self._recorded_elsewhere():
            return (
                f"run {self.timeline.run_id} is still being recorded by another process (the "
                "timeline follows it): restore from it once that run has ended"
            )
        if self._at_the_end():
            # the step after the last statement: nothing is left to run from it, and a restore
            # made a branch that was the old one again
            return (
                f"step {self.step} is the end of the run: nothing runs after it; go back to a "
                f"statement (S, or g {self.step - 1}) and restore from there"
            )
        check = getattr(self.timeline, "cannot_reexecute", None)
        why = check() if check is not None else None
        return f"cannot restore from step {self.step}: {why}" if why else None

    def edit_refused(self) -> str | None:
        """Why nothing can be edited at the cursor (None when it can): at the end of the run
        an edit was staged, with "press r", and then `r` refused to run from there."""
        if self._at_the_end():
            return (
                f"step {self.step} is the end of the run: nothing runs after it to use an "
                f"edit; go back to a statement (S, or g {self.step - 1}) and edit there"
            )
        return None

    def _at_the_end(self) -> bool:
        return self.step > self.first and self.timeline.kind_at(self.step) == "end"

    def _recorded_elsewhere(self) -> bool:
        """Whether a process still holds the run its row calls running (not one that died:
        a restore takes such a run over)."""
        from runtime.runs.processes import stale_reason

        store = getattr(self.timeline, "store", None)
        run = getattr(self.timeline, "run", None)
        return store is None or run is None or stale_reason(store, run) is None

    def restore_plan(self) -> str:
        """What a restore from the cursor would run again, live: the recorded LLM and tool
        calls after it on this branch (with a real model, they are paid for again)."""
        later = {
            kind: sum(1 for e in self.events(kind) if e.step >= self.step)
            for kind in ("llm", "tool", "interrupt")
        }
        parts = [f"steps {self.step}..{self.last} run again, live"]
        if later["llm"]:
            parts.append(f"{later['llm']} LLM call{'s' if later['llm'] != 1 else ''} made again")
        if later["tool"]:
            parts.append(f"{later['tool']} tool call{'s' if later['tool'] != 1 else ''}")
        if later["interrupt"]:
            parts.append("interrupts asked again")
        return "; ".join(parts)

    def pending_edits(self) -> Edits | None:
        """The staged edits wherever they are (None when there are none)."""
        return self.edits if self.edits is not None and len(self.edits) else None

    def _user_frame_index(self) -> int:
        """The selected frame counted among user frames (what `Timeline.fork` indexes);
        -1 (the innermost) when a builtin's frame is selected."""
        frames = self.state().frames
        selected = self.frame_index()
        users = [i for i, f in enumerate(frames) if f.kind not in USER_HIDDEN_KINDS]
        return users.index(selected) if selected in users else -1

    def current_value(self, kind: str, name: str) -> Any:
        """The value of `name` in `kind` (locals, args, globals) of the selected frame, with
        staged edits applied."""
        staged = self.edits if self.edits is not None and self.edits.step == self.step else None
        if staged is not None and name in getattr(staged, kind):
            return getattr(staged, kind)[name]
        if kind == "globals":
            return self.state().globals[name]
        frame = self.selected_frame()
        if frame is None:
            raise SessionError("there is no frame at this step")
        return getattr(frame, kind)[name]

    def resolve(self, name: str) -> str:
        """Which scope `name` is in at the selected frame: locals, args or globals."""
        frame = self.selected_frame()
        if frame is not None and name in frame.locals:
            return "locals"
        if frame is not None and name in frame.args:
            return "args"
        if name in self.state().globals:
            return "globals"
        where = f" in {frame.scope}" if frame is not None else ""
        raise SessionError(f"no variable `{name}`{where} at step {self.step}")

    def edit_variable(
        self, kind: str | None, name: str, value: Any, path: Iterable[str | int] = ()
    ) -> str:
        """Stage `name[path] = value`. A variable declared with a type keeps it (a value of
        another type is refused); an untyped one takes any plain value, null included.
        Returns `kind.name`."""
        if kind is None:
            kind = self.resolve(name)
        if kind not in ("locals", "args", "globals"):
            raise SessionError(f"the run's {name} cannot be edited; edit a variable before it")
        if kind != "globals":
            frame = self.selected_frame()
            if frame is not None and frame.kind in USER_HIDDEN_KINDS:
                raise SessionError(
                    f"`{frame.scope}` is a builtin's frame; select a frame of your program"
                )
        path = list(path)
        try:
            whole = self.current_value(kind, name)
        except KeyError:
            raise SessionError(f"no variable `{name}` in {kind} at step {self.step}") from None
        old = _get_path(whole, path, name)
        where = name + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in path)
        if json_type(old) in ("result", "function"):
            raise SessionError(f"{where} is a {json_type(old)}; only plain values can be edited")
        if json_type(value) in ("result", "function"):
            raise SessionError(f"only plain values can be set, not a {json_type(value)}")
        typed = self._declared_with_type(kind, name)
        if typed is not False and not _same_type(old, value):
            why = "declared with a type" if typed else "its declaration was not found"
            raise SessionError(
                f"{where} is a {json_type(old)}, not a {json_type(value)}: edit refused "
                f"({why}; type a {json_type(old)})"
            )
        staged = self._staged()
        getattr(staged, kind)[name] = _set_path(whole, path, value)
        return f"{kind}.{where}"

    def already_read(self, kind: str, name: str) -> str | None:
        """A warning when the statement under way in the frame an edit of `name` goes to (every
        frame, for a global) has begun and mentions `name`: it may have read the old value
        already, which it then keeps (a restore resumes it part-way), and the edit shows from
        the next read. None when no such statement is under way (at a statement's first step
        nothing of it has run yet)."""
        state = self.state()
        frames = state.frames
        if not frames:
            return None
        top = len(frames) - 1
        which = range(top + 1) if kind == "globals" else [self.frame_index()]
        loc = state.location
        lines = self.source_text(loc.file if loc is not None else None).splitlines()
        mention = re.compile(rf"(?<![\w$.]){re.escape(name)}(?![\w$])")
        for i in reversed(which):
            frame = frames[i]
            if frame.kind in USER_HIDDEN_KINDS:
                continue
            if i == top:
                if loc is None or self.timeline.kind_at(self.step) in ("step", "end"):
                    continue  # about to start: it has read nothing yet
                first, last = loc.line, loc.end_line
            else:
                first = last = frame.line  # a caller waits inside its statement's call
            text = "\n".join(lines[max(first - 1, 0) : last])
            if mention.search(text):
                return (
                    f"line {first} ({frame.scope}) is part-way through and may have read "
                    f"{name} already: it keeps that value, the edit shows from the next read"
                )
        return None

    def _declared_with_type(self, kind: str, name: str) -> bool | None:
        """Was `name` (of `kind`, in the selected frame) declared with a type? None when its
        declaration cannot be found (then an edit keeps the value's type, to be safe)."""
        frame = self.selected_frame()
        loc = self.state().location
        path = loc.file if loc is not None else self.source_path
        if path not in self._typed:
            self._typed[path] = typed_names(self.source_text(path), path)
        table = self._typed[path]
        if table is None:
            return None
        scope = "" if kind == "globals" or frame is None else frame.scope
        return table.get((scope, name))

    def thread_messages(self) -> tuple[Any, ...]:
        """The messages of the active thread (what an edit changes)."""
        state = self.state()
        return state.threads.get(state.active_thread, ())

    def shown_thread(self) -> str:
        """The thread the messages panel shows: the one chosen with `t`, while it exists, else
        the active one."""
        state = self.state()
        chosen = self.thread
        return chosen if chosen is not None and chosen in state.threads else state.active_thread

    def cycle_thread(self, delta: int = 1) -> str:
        """Show the next (or previous) message thread of this step; returns its id."""
        state = self.state()
        ids = sorted(state.threads, key=lambda t: (len(t), t))
        if len(ids) < 2:
            raise SessionError("this step has only one message thread")
        current = self.shown_thread()
        i = ids.index(current) if current in ids else 0
        self.thread = ids[(i + delta) % len(ids)]
        return self.thread

    def _editing_the_active_thread(self) -> None:
        state = self.state()
        if self.shown_thread() != state.active_thread:
            raise SessionError(
                f"thread {self.shown_thread()} is on screen, but only the active thread "
                f"({state.active_thread}) can be edited: t switches back"
            )

    def edit_message(self, index: int, text: Any) -> str:
        """Stage a new text for message `index` of the active thread; returns what was staged."""
        self._editing_the_active_thread()
        messages = self.thread_messages()
        if not 0 <= index < len(messages):
            raise SessionError(f"there is no message {index} in the active thread at this step")
        if not isinstance(text, str):
            raise SessionError(f"a message's text is a string, not a {json_type(text)}")
        self._staged().messages[index] = text
        return f"message {index}"

    def message_prompt(self, index: int) -> EditPrompt:
        """The edit dialog for message `index` of the active thread (staged text first)."""
        messages = self.thread_messages()
        if not 0 <= index < len(messages):
            raise SessionError(f"there is no message {index} in the active thread at this step")
        staged = self.staged()
        text = staged.messages.get(index) if staged is not None else None
        return EditPrompt(
            f"Edit message {index} ({messages[index].role})",
            messages[index].content if text is None else text,
            "the new text, as typed (no quotes); enter stages it, esc cancels",
        )

    def answer_prompt(self) -> EditPrompt:
        """The edit dialog for the answer of the LLM call made at this step."""
        call = self.llm_answer_here()
        if call is None:
            raise SessionError("this step made no LLM call: go to one with [ or ] first")
        response = call.get("response")
        asked = response.get("tool_calls") if isinstance(response, dict) else None
        if asked:
            # A value given here is the call's final answer: the tools it asked for never run.
            names = ", ".join(str(c.get("name")) for c in asked if isinstance(c, dict))
            return EditPrompt(
                f"Edit the LLM answer at step {self.step} (it asked for {names})",
                describe_value(call.get("value"), 1_000_000),
                'the final answer instead, an Agency literal: 3, "text", [1, 2], {a: 1}; '
                f"{names} will not run; enter stages it",
            )
        return EditPrompt(
            f"Edit the LLM answer at step {self.step} ({json_type(call.get('value'))})",
            describe_value(call.get("value"), 1_000_000),
            'an Agency literal: 3, "text", [1, 2], {a: 1}; enter stages it',
        )

    @staticmethod
    def variable_prompt(kind: str, label: str, value: Any) -> EditPrompt:
        """The edit dialog for variable `label` (a name and maybe a path) of `kind`."""
        return EditPrompt(
            f"Edit {kind}.{label} ({json_type(value)})",
            describe_value(value, 1_000_000),
            'an Agency literal: 3, -1.5, "text", true, null, [1, 2], {a: 1}; '
            "enter stages it, r restores from here",
        )

    def llm_answer_here(self) -> dict[str, Any] | None:
        """The LLM call answered at exactly this step (None when this step made none)."""
        steps = self.event_steps("llm")
        i = bisect.bisect_left(steps, self.step)
        if i < len(steps) and steps[i] == self.step:
            return self.llm_call()
        return None

    def edit_llm_answer(self, value: Any) -> str:
        """Stage a different answer for the LLM call made at this step; returns what was
        staged."""
        call = self.llm_answer_here()
        if call is None:
            raise SessionError(
                "this step made no LLM call: go to one with [ or ] to edit its answer"
            )
        old = call.get("value")
        if not _same_type(old, value):
            raise SessionError(
                f"the answer is a {json_type(old)}, not a {json_type(value)}: edit refused"
            )
        staged = self._staged()
        staged.llm_answer = value
        staged.has_llm_answer = True
        return "the LLM answer"

    def set_command(self, text: str) -> str:
        """Apply `:set TARGET = VALUE` (targets: a variable, `locals.x`, `args.x`, `globals.x`,
        paths such as `obj.a[0]`, `messages[i]`, `answer`). Returns what was staged."""
        head, path, value = parse_set_command(text)
        refused = self.edit_refused()
        if refused is not None:  # before the name is looked for: the end has no frame
            raise SessionError(refused)
        if head in ("locals", "args", "globals"):
            if not path or not isinstance(path[0], str):
                raise SessionError(f"usage: :set {head}.NAME = VALUE")
            return self.edit_variable(head, str(path[0]), value, path[1:])
        if head == "messages" and len(path) == 1 and isinstance(path[0], int):
            if head not in self._names_in_scope():
                return self.edit_message(path[0], value)
        if head == "answer" and not path and head not in self._names_in_scope():
            return self.edit_llm_answer(value)
        return self.edit_variable(None, head, value, path)

    def _names_in_scope(self) -> set[str]:
        frame = self.selected_frame()
        names = set(self.state().globals)
        if frame is not None:
            names |= set(frame.locals) | set(frame.args)
        return names

    def discard_edits(self) -> int:
        """Drop the staged edits; returns how many there were."""
        count = len(self.edits) if self.edits is not None else 0
        self.edits = None
        return count

    def restore(self, progress: RunProgress | None = None, stopper: Any = None) -> int:
        """Restore from the cursor: fork a branch with the staged edits and run it live (until
        `stopper`, if given, stops it). The cursor stays on the fork step, now in the new
        branch; returns the branch id."""
        self._check_edits_here()
        edits = self.edits.as_dict() if self.edits is not None else {}
        edits.setdefault("frame", self._user_frame_index())
        step = self.step

        try:
            if stopper is None:
                timeline = self.timeline.fork(step, edits, progress)
            else:
                timeline = self.timeline.fork(step, edits, progress, stopper=stopper)
        except AgencyError as exc:
            raise SessionError(f"cannot restore from step {step}: {exc}") from None
        self._set_timeline(timeline)
        self.step = min(step, self.last)
        self.edits = None
        self.message = f"restored from step {step}: branch {self.branch}"
        if stopper is not None and stopper.stopped():
            self.message += f" ({stopper.reason()} at step {self.last:,})"
        return self.branch

    def switch_branch(self, branch: int) -> int:
        """Show another branch; the cursor keeps its step where the branch has it."""
        known = {b.id for b in self.branches()}
        if branch not in known:
            raise SessionError(f"there is no branch {branch} (branches: {sorted(known)})")
        self._set_timeline(self.timeline.switch(branch))
        self.goto(min(self.step, self.last), f"branch {branch}")
        return branch

    def save_checkpoint(self, path: str) -> str:
        """Write the state at the cursor as a checkpoint JSON file; returns the path."""
        if not path.strip():
            raise SessionError("no file name given for the checkpoint")
        data = self.timeline.export_checkpoint(self.step)
        target = Path(path).expanduser()
        try:
            if target.parent and not target.parent.exists():
                raise SessionError(f"cannot write {path}: folder {target.parent} does not exist")
            with open(target, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=2)
                fh.write("\n")
        except OSError as exc:
            raise SessionError(f"cannot write {path}: {exc.strerror or exc}") from None
        return str(target)

    def open_checkpoint(self, path: str, progress: RunProgress | None = None) -> None:
        """Replace the timeline with a run continued from checkpoint file `path`."""
        if self._checkpoint_loader is None:
            raise SessionError("this session cannot open checkpoint files")

        try:
            timeline = self._checkpoint_loader(path, progress)
        except AgencyError as exc:
            raise SessionError(str(exc)) from None
        self.recording = None
        self._set_timeline(timeline)
        self.goto(self.first, f"opened checkpoint {path}")
