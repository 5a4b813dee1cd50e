"""Provides `MessagesPanel`: the messages of the active thread, by role.

The highlighted message is the one `e` edits. Rebuilt only when the thread changes (new
messages, a restore that rolled some back, another branch), not on every step.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

from textual.content import Content
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from debugger.widgets.fitted_title import fit_title
from runtime.record.views import Message

ROLE_STYLE = {
    "system": "bold $text-secondary",
    "user": "bold $text-primary",
    "assistant": "bold $text-success",
    "tool": "bold $text-warning",
}
MAX_CHARS = 600  # of one message shown; the edit dialog has the whole text


class MessagesPanel(OptionList):
    """One option per message: role, then content (tool calls summarised)."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._shape: tuple[object, ...] = ()
        self._thread = ""
        self._count = 0
        self.messages: tuple[Message, ...] = ()
        # Options made before, by (index, message, its edit), each with its message (which
        # keeps the id in the key its own): consecutive steps share most of a thread's messages
        # (the same objects), so a thread that grew or shrank by a call makes only its new
        # messages' options, and one that grew has only those measured (`show`).
        self._made: dict[tuple[int, int, str | None], tuple[Message, Option]] = {}

    @property
    def selected(self) -> int | None:
        """Index of the highlighted message in the thread."""
        return self.highlighted if self.messages else None

    def titles(self) -> list[str]:
        """The panel's title, longest first: the count stays longest, as it says whether there
        is anything to scroll to."""
        n, thread = self._count, self._thread
        return [
            f"messages · thread {thread} · {n}",
            f"messages · {n} · thread {thread}",
            f"messages · {n}",
            f"msgs · {n}",
            f"{n}",
        ]

    def on_resize(self) -> None:
        fit_title(self, self.titles())

    def _cut(self, n: int) -> bool:
        """Drop the options from index `n` on, keeping what was measured of the others; False
        if this Textual keeps its lines otherwise (then the caller sets the options anew).

        A step back past a call shrinks the thread by its last messages. Textual's way to
        remove an option forgets the height of every option and measures them all again,
        O(thread) a keypress on a long conversation. Textual 8.2 (pinned in pyproject.toml)
        keeps those heights in a private line cache, by option index, and its renders by option
        object: cutting both lists at `n` leaves the rest as measured."""
        try:
            cache, options = self._line_cache, self._options
            lines, heights, index_to_line = cache.lines, cache.heights, cache.index_to_line
            to_index, by_id = self._option_to_index, self._id_to_option
        except AttributeError:
            return False
        if lines and lines[-1][0] >= n:  # lines were laid out for options being dropped
            first = index_to_line.get(n)
            if first is None:
                return False
            del lines[first:]
        for index in range(n, len(options)):
            heights.pop(index, None)
            index_to_line.pop(index, None)
        for option in options[n:]:
            to_index.pop(option, None)
            if option.id is not None:
                by_id.pop(option.id, None)
        del options[n:]
        self._mouse_hovering_over = None
        if self.highlighted is not None and self.highlighted >= n:
            self.highlighted = n - 1 if n else None
        self.refresh(layout=self.styles.auto_dimensions)
        self._update_lines()  # (the virtual size, from the lines kept)
        return True

    def show(self, thread: str, messages: Sequence[Message], edited: dict[int, str]) -> None:
        messages = tuple(messages)
        shape = (thread, len(messages), messages[-1] if messages else None, tuple(edited.items()))
        self._thread, self._count = thread, len(messages)
        fit_title(self, self.titles())
        if shape == self._shape:
            return
        self._shape = shape
        self.messages = messages
        keep = self.highlighted
        options = []
        made, kept = self._made, {}
        for i, m in enumerate(messages):
            key = (i, id(m), edited.get(i))
            found = made.get(key)
            if found is not None:
                kept[key] = found
                options.append(found[1])
                continue
            text = edited.get(i, m.content)
            if len(text) > MAX_CHARS:
                text = text[:MAX_CHARS] + "…"
            parts: list[tuple[str, str] | str] = [(f"{m.role:<10}", ROLE_STYLE.get(m.role, "bold"))]
            if i in edited:
                parts.append(("✎ ", "bold $text-success"))
            if m.name:
                parts.append((f"[{m.name}] ", "$text-muted"))
            parts.append(text)
            for call in m.tool_calls:
                name = call.get("name") if isinstance(call, dict) else str(call)
                parts.append((f"  → calls {name}", "$text-warning"))
            option = Option(Content.assemble(*parts), id=str(i))
            kept[key] = (m, option)
            options.append(option)
        # (what the last two threads shown had: stepping back and forth reuses both)
        self._made = {**made, **kept} if len(made) <= 2 * len(kept) else kept
        if not options:
            options.append(
                Option(
                    Content.styled("no messages in this thread yet", "$text-muted"), disabled=True
                )
            )
        shown = self.options
        if messages and 0 < len(shown) < len(options) and all(map(operator.is_, shown, options)):
            # The thread grew (a step on past a call): the options shown are its first ones,
            # the same objects, and adding the rest measures only those.
            self.add_options(options[len(shown) :])
        elif not (
            messages
            and len(options) < len(shown)
            and all(map(operator.is_, options, shown))
            and self._cut(len(options))
        ):
            self.set_options(options)
        if messages:
            self.highlighted = (
                keep if keep is not None and keep < len(messages) else len(messages) - 1
            )
