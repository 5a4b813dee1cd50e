"""Makes Textual's option lists safe to page through before they are laid out.

Textual (8.2) maps options to lines only once a list has room to draw: page up or page down in
a list with no height yet (the command palette the moment it opens, the call stack of a window
squeezed to a few rows) looked the highlighted option up in that empty map, and the KeyError
ended the app. Every `OptionList` of the app and of Textual's own screens goes through
`OptionList._move_page`, so it is guarded here, once, when the app is imported: with no line
laid out for the highlight there is no page to move by, and the key does nothing.
"""

from __future__ import annotations

from textual.widgets import OptionList

__all__ = ["guard_paging"]

_move_page = OptionList._move_page


def _guarded_move_page(self: OptionList, direction: int) -> None:
    if (self.highlighted or 0) not in self._index_to_line:
        return
    _move_page(self, direction)  # type: ignore[arg-type]


def guard_paging() -> None:
    """Install the guard (idempotent)."""
    OptionList._move_page = _guarded_move_page  # type: ignore[method-assign]
