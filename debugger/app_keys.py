"""Provides `OrderedKeys`, the part of `DebuggerApp` that hands keys on in the order they were
typed.

Textual runs a priority binding (`g`, `/`, `home`, ...) on the app's own queue as the key is
read, but hands any other key to the focused widget's queue, from which it bubbles up, queue by
queue, to the app's bindings. Keys faster than a person types (a paste into the terminal,
`tmux send-keys`, a held key) then overtook each other: `s s s home` ran `home` first and ended
three steps in, and `down e` could open the edit dialog on the variable above. Here a key (or a
paste) read while an earlier one is still on its way up waits for it; a key is done once every
queue it bubbles through has had its turn, which a callback posted behind it, queue by queue,
tells, pass after pass while a queue on that path still holds something the key set off
(enter in the command line posts the line typed, then the command: `:goto 7` then `s` ran
`s` first, typed into the closing command line). A key whose widget went away meanwhile (its
queue closed, so the callback never runs) is let go after `KEY_PATIENCE` seconds, so the keys
behind it are never stuck; one whose widget is still there is waited for up to `KEY_LIMIT`
seconds, as a loaded machine may take longer than the patience to hand a key up (the `e` behind
`g 3 enter` went into the command line, still open, and the edit dialog never opened).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual import events
from textual.message_pump import MessagePump

__all__ = ["KEY_LIMIT", "KEY_PATIENCE", "OrderedKeys"]

KEY_PATIENCE = 0.5  # seconds a key whose widget went away holds up the keys behind it
KEY_LIMIT = 5.0  # seconds any key may take to bubble up before the next one goes anyway
KEY_DEFERRALS = 8  # times the next key lets the app's queue go first (it may never empty)
KEY_ROUNDS = 6  # passes up behind a key at most: the later ones follow what it set off

if TYPE_CHECKING:
    from textual.app import App

    class _App(App[None]):
        """Textual's app, as the part sees it."""

else:
    _App = object


class OrderedKeys(_App):
    """Keys and pastes reach the widgets and bindings one after another, in typed order."""

    _keys_waiting: deque[events.Key | events.Paste] | None = None
    _key_ticket = 0  # the key on its way up (0: none)
    _key_since = 0.0  # when it set off
    _key_screen: object = None  # the screen it was typed on
    _key_target: MessagePump | None = None  # the widget it went in at
    _key_rounds = 0  # passes up from there still to make
    _after_keys: list[Callable[[], object]] | None = None

    def keys_waiting(self) -> bool:
        """True when keys read already wait for the one on its way up."""
        return bool(self._keys_waiting)

    def after_keys(self, callback: Callable[[], object]) -> None:
        """Call `callback` once the keys waiting now have been handed on (once, however often
        it is asked for meanwhile): a burst of keys draws once, after the burst."""
        if self._after_keys is None:
            self._after_keys = []
        if callback not in self._after_keys:
            self._after_keys.append(callback)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, (events.Key, events.Paste)) and not event.is_forwarded:
            if self._keys_waiting is None:
                self._keys_waiting = deque()
            self._keys_waiting.append(event)
            if not self._key_ticket:
                await self._send_keys()
            return
        await super().on_event(event)

    async def _send_keys(self) -> None:
        """Send the waiting keys until one goes up through the widgets' queues (then the next
        waits for it) or none is left."""
        while self._keys_waiting and not self._key_ticket:
            event = self._keys_waiting.popleft()
            target = self.focused or self.screen  # where Textual hands it unless bound first
            await super().on_event(event)
            if event.is_forwarded:  # not a priority binding: it goes up from `target`
                self._key_ticket = time.monotonic_ns() or 1
                self._key_since = time.monotonic()
                self._key_screen = self.screen
                self._key_target, self._key_rounds = target, KEY_ROUNDS
                self._follow_key(target, self._key_ticket)
        if not self._keys_waiting and self._after_keys:
            callbacks, self._after_keys = self._after_keys, None
            for callback in callbacks:
                callback()

    def _follow_key(self, node: MessagePump, ticket: int) -> None:
        """Post, behind the key in `node`'s queue, the look at the next queue up; the last
        look is on the app's own queue, behind the key's bindings."""
        if node is not self and node.call_later(self._key_passed, node, ticket):
            return
        self.call_later(self._key_at_app, ticket)

    def _key_at_app(self, ticket: int) -> None:
        """The key has been through every queue and its bindings have run."""
        if ticket != self._key_ticket:
            return
        target = self._key_target
        if self._key_rounds > 1 and target is not None and self._path_busy(target):
            # Again from where it went in: messages the key set off (enter's binding in a text
            # field posts its text there, which the command line posts on as a command) go up
            # behind it, and this pass follows them.
            self._key_rounds -= 1
            self._follow_key(target, ticket)
            return
        if self.screen is not self._key_screen:
            # The key opened (or closed) a dialog: the keys behind it are for the dialog's
            # field, which takes focus as the dialog is first drawn.
            self._key_screen = self.screen
            self.screen.call_after_refresh(self.call_later, self._key_done, ticket)
        else:
            self.call_later(self._key_done, ticket)

    def _path_busy(self, node: MessagePump | None) -> bool:
        """Whether a queue from `node` up to the screen still holds messages."""
        while node is not None and node is not self:
            if not node._message_queue.empty():
                return True
            node = node._parent
        return False

    def _key_passed(self, node: MessagePump, ticket: int) -> None:
        if ticket != self._key_ticket:
            return  # let go already
        self._follow_key(node._parent or self, ticket)

    async def _key_done(self, ticket: int, deferred: int = 0) -> None:
        if ticket != self._key_ticket:
            return
        if deferred < KEY_DEFERRALS and not self._message_queue.empty():
            # What the key set off on the app's own queue (a focus moved back to a panel as
            # the command line closes) comes first: the next key goes where that leaves focus.
            self.call_later(self._key_done, ticket, deferred + 1)
            return
        self._key_ticket = 0
        await self._send_keys()

    async def _release_overdue_key(self) -> None:
        """Let the next keys go when the key before them has been on its way too long: its
        widget was removed under it, or it never came up; an interval calls this."""
        if not self._key_ticket:
            return
        waited = time.monotonic() - self._key_since
        target = self._key_target
        gone = target is None or target._closing or target._closed or not target.is_attached
        if waited > (KEY_PATIENCE if gone else KEY_LIMIT):
            await self._key_done(self._key_ticket)
