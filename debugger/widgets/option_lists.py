"""Makes Textual's option lists safe to page through before they are laid out and to measure in
a window too narrow for their text, and its command palette safe to close at once
(`DebuggerPalette`).

Textual (8.2) maps options to lines only once a list has room to draw: page up or page down in
a list with no height yet (the command palette the moment it opens, the call stack of a window
squeezed to a few rows) looked the highlighted option up in that empty map, and the KeyError
ended the app. Every `OptionList` of the app and of Textual's own screens goes through
`OptionList._move_page`, so it is guarded here, once, when the app is imported: with no line
laid out for the highlight there is no page to move by, and the key does nothing.
"""

from __future__ import annotations

from typing import Any

from textual import work
from textual.command import CommandList, CommandPalette
from textual.content import Content
from textual.css.query import NoMatches
from textual.widgets import OptionList

__all__ = ["DebuggerPalette", "guard_paging"]

_move_page = OptionList._move_page


def _guarded_move_page(self: OptionList, direction: int) -> None:
    if (self.highlighted or 0) not in self._index_to_line:
        return
    _move_page(self, direction)  # type: ignore[arg-type]


_wrap_and_format = Content._wrap_and_format


def _wrap_at_least_one_cell(self: Content, width: int, *args: Any, **kwargs: Any) -> Any:
    # An option list measures its options at its width less their padding: in a window a few
    # cells wide that is 0 or less, and wrapping text at width 0 raised ValueError (a range with
    # step 0, in rich's chop_cells), which ended the app. One cell is the narrowest wrap.
    return _wrap_and_format(self, max(1, width), *args, **kwargs)


def guard_paging() -> None:
    """Install the guards (idempotent)."""
    OptionList._move_page = _guarded_move_page  # type: ignore[method-assign]
    Content._wrap_and_format = _wrap_at_least_one_cell  # type: ignore[method-assign]


class DebuggerPalette(CommandPalette):
    """Textual's command palette, whose gathering of commands may outlive its list.

    The palette fills its list from a worker started when it mounts and at each edit of its
    field; closed at once (ctrl+p then Escape, Backspace then Escape) the worker could run
    after the list was gone, and the NoMatches it raised ended the app. A gathering that finds
    no list has nothing to fill and stops.
    """

    @work(exclusive=True, group=CommandPalette._GATHER_COMMANDS_GROUP)
    async def _gather_commands(self, search_value: str) -> None:
        if not self.is_attached or not self.query(CommandList):
            return
        try:
            await CommandPalette._gather_commands.__wrapped__(self, search_value)  # type: ignore[attr-defined]
        except NoMatches:  # the palette closed while it gathered
            return
