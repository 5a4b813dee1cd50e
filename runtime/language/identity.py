"""Provides `ByIdentity`: what was derived from an object that is made once and kept (the
prelude's parsed tree, a function's compiled code), kept by the object's identity so that
asking again costs a lookup, not a walk of the object."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class ByIdentity(Generic[K, V]):
    """Up to `size` values, each derived from one object and kept with it (so its `id` is not
    given to another object meanwhile); all are dropped when a new one would make more."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.kept: dict[int, tuple[K, V]] = {}

    def get(self, key: K, make: Callable[[K], V]) -> V:
        """The value kept for `key`, or `make(key)`, then kept."""
        found = self.kept.get(id(key))
        if found is None or found[0] is not key:
            if len(self.kept) >= self.size:
                self.kept.clear()
            found = self.kept[id(key)] = (key, make(key))
        return found[1]
