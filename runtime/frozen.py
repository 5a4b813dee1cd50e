"""Provides `Frozen`, the base of the immutable records that reading a recorded run makes (the
store's records in `runtime.record.contract`, the views in `runtime.record.views`, `Location`)
and the errors' `Span` and `Diagnostic` (`runtime.errors`): what a frozen slotted dataclass gives them, equality and a hash over the fields, a repr, no
assignment, copies, `replace` and `as_dict`, without building the class when it is imported.

Why not a dataclass: `@dataclass(frozen=True, slots=True)` generates and compiles six methods
and builds the class twice each time its module is imported, ~0.6 ms a class on an idle box
(twice that on a busy one), and `agency show` imports twenty of them, about a sixth of its
start-up; a class written out costs ~0.02 ms. A subclass lists its fields in `__slots__`, in
order, annotates them, and writes its `__init__` with `set_field`; a field whose dataclass
default was a new dict takes None for it. `dataclasses` itself is imported only to raise its
`FrozenInstanceError` (it imports `inspect`, which every command would otherwise pay for).
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, ClassVar, Self, dataclass_transform

__all__ = ["Frozen", "Immutable", "set_field"]

set_field = object.__setattr__  # how an `__init__` sets a field of its (frozen) record


class Immutable:
    """No assignment and no deletion after `__init__` (which sets fields with `set_field`), and
    copies, deep copies and pickles rebuilt by calling the class with `_values(self)`: what
    `Frozen` and the syntax tree's `Node` share."""

    __slots__ = ()
    _values: ClassVar[Any]  # the fields' values as a tuple, in order (a static function)

    def __setattr__(self, name: str, value: Any) -> None:
        from dataclasses import FrozenInstanceError  # when it happens (start-up time)

        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:  # copy, deepcopy and pickle rebuild it by __init__
        return (type(self), self._values(self))


@dataclass_transform(frozen_default=True, eq_default=True)
class Frozen(Immutable):
    """A record with value semantics over the fields named by its class's `__slots__`."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()  # the names in `__slots__`

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        names: tuple[str, ...] = tuple(cls.__slots__)
        assert len(names) >= 2, f"{cls.__name__}: a record has two fields or more"
        cls._fields = names
        cls._values = staticmethod(attrgetter(*names))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return bool(self._values(self) == self._values(other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values(self))

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={v!r}" for n, v in zip(self._fields, self._values(self)))
        return f"{type(self).__qualname__}({shown})"

    def replace(self, **changes: Any) -> Self:
        """A copy with some fields changed (what `dataclasses.replace` does for a dataclass)."""
        return type(self)(**{**dict(zip(self._fields, self._values(self))), **changes})

    def as_dict(self) -> dict[str, Any]:
        """The fields as a dict, records inside turned into dicts too, at any depth inside
        lists, tuples and dicts (what `dataclasses.asdict` does for a dataclass)."""
        return {n: _plain(v) for n, v in zip(self._fields, self._values(self))}


def _plain(value: Any) -> Any:
    if isinstance(value, Frozen):
        return value.as_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
