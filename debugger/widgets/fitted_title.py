"""Provides `fit_title`: the longest of a panel's titles its top border has room for.

Textual cuts a border title that does not fit short with `…`, from the end: a narrow panel
(80 columns split three ways) lost the count at the end of "messages · thread 0 · 2". A panel
gives its titles longest first, each still saying what matters most, and fits one again when
it is resized.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from textual.widget import Widget

__all__ = ["fit_title"]

BORDER_CELLS = 6  # the corners, the rules beside the title and the spaces around it


def fit_title(widget: Widget, titles: Sequence[str]) -> None:
    """Set `widget`'s border title to the first of `titles` that fits its width (the last one
    when none does; the first while it is not laid out yet)."""
    width = widget.outer_size.width
    title = titles[0]
    if width:
        room = width - BORDER_CELLS
        title = next((t for t in titles if cell_len(t) <= room), titles[-1])
    if widget.border_title != title:
        widget.border_title = title
