"""Provides `KeyFooter`: Textual's footer of key bindings, fitted to the terminal's width.

Textual's footer lays the keys out left to right and lets the ones that do not fit fall off
the right edge; at 80 columns that took `? Help` and `q Quit`, the two keys a new user needs
most (how to find the rest, how to get out). This footer keeps the keys it is told to `keep`
and, when the others do not all fit, leaves out the ones furthest down the app's `BINDINGS`
(which lists the verbs by how much a person needs them), so what it shows is always a prefix
of that list followed by the kept keys. Nothing is lost: every key is on the help screen and in
the command palette."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey  # not exported; textual is pinned exactly


class KeyFooter(Footer):
    """A footer that drops the least needed keys, never the `keep` ones, to fit its width."""

    def __init__(self, keep: tuple[str, ...] = ("help", "quit"), *, compact: bool = True) -> None:
        """`keep`: the actions whose keys always show."""
        super().__init__(compact=compact)
        self.keep = frozenset(keep)
        self.hidden: tuple[str, ...] = ()  # the actions left out at the current width
        self._shown: tuple[Any, ...] | None = None  # what the keys were composed from

    def bindings_changed(self, screen: Screen[Any]) -> None:
        # Textual composes the footer again whenever the bindings may have changed, which is
        # at every focus change: some 25 keys mounted and styled anew, a third of a second
        # per tab on a loaded machine, and the keys typed after a tab waited for it. Only
        # a change in what the footer shows composes it again.
        shown = _shown_keys(screen)
        if self._bindings_ready and shown == self._shown:
            return
        super().bindings_changed(screen)
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self._shown = shown

    def compose(self) -> ComposeResult:
        # The keys left out at this width stay out while the new ones are measured (`fit`
        # runs once they are laid out), so a change of bindings (a focus change, a dialog)
        # never flashes the unfitted footer.
        for widget in super().compose():
            if isinstance(widget, FooterKey) and widget.action in self.hidden:
                widget.display = False
            yield widget
        self.call_after_refresh(self.fit)

    def on_resize(self) -> None:
        self.fit()

    def fit(self) -> None:
        """Show as many keys as fit beside the kept ones, dropping from the end of the list."""
        keys = list(self.query(FooterKey))
        if not keys or not self.size.width:
            return
        palette = [k for k in keys if k.has_class("-command-palette")]
        keys = [k for k in keys if not k.has_class("-command-palette")]
        room = self.size.width - sum(_width(k) for k in palette)
        widths = {k: _width(k) for k in keys}
        needed = sum(widths.values())
        dropped: list[FooterKey] = []
        for key in reversed(keys):
            if needed <= room:
                break
            if key.action not in self.keep:
                dropped.append(key)
                needed -= widths[key]
        for key in keys:
            key.display = key not in dropped
        self.hidden = tuple(k.action for k in keys if k in dropped)


def _shown_keys(screen: Screen[Any]) -> tuple[Any, ...]:
    """What the footer shows of `screen`'s bindings (the shown ones and the palette's)."""
    return tuple(
        (b.key, b.action, b.description, b.key_display, enabled, tooltip)
        for _, b, enabled, tooltip in screen.active_bindings.values()
        if b.show or b.action == "command_palette"
    )


def _width(key: FooterKey) -> int:
    """The cells `key` takes in the footer: its text, padding, border and margin."""
    margin = key.styles.margin
    return key.render().cell_len + key.styles.gutter.width + margin.left + margin.right
