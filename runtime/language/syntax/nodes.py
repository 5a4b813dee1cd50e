"""Provides `Node`, the base of the syntax tree's classes (`runtime.language.syntax.ast`), and
`replace`: what `@dataclass(frozen=True, slots=True)` gave them (fields from the
annotations, slots, an `__init__`, equality and a hash over the compared fields, a repr,
`__match_args__`, no assignment, copies and pickling), for a fraction of the import time.

Why not dataclasses: the tree has seventy node classes, and `dataclass` generates and compiles
six methods for each and builds each class twice (for the slots) when the module is imported:
about 85 ms of every `agency` process that parses a program, more than parsing the prelude.
Here the metaclass gives a class its slots as it is built, one small compiled `__init__` and
C getters of its fields; equality, hashing and the repr are shared by
every class through `Node`, immutability and pickling through `runtime.frozen.Immutable` (as
`Frozen` records have them).

A class lists its fields as annotations, in order, defaults after the fields without one, as a
dataclass does. `uncompared(default=…)` marks a field equality and the hash leave out (a node's
`span`: two trees that differ only in layout are equal); `repr=False` leaves it out of the repr.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, ClassVar, TypeVar, dataclass_transform

from runtime.frozen import Immutable

__all__ = ["Node", "replace", "uncompared"]


class _Uncompared:
    __slots__ = ("default", "repr")

    def __init__(self, default: Any, repr: bool) -> None:
        self.default = default
        self.repr = repr


def uncompared(*, default: Any, repr: bool = True) -> Any:
    """A field's default, the field left out of equality and the hash (and out of the repr
    with `repr=False`)."""
    return _Uncompared(default, repr)


@dataclass_transform(frozen_default=True, eq_default=True, field_specifiers=(uncompared,))
class _NodeMeta(type):
    def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> _NodeMeta:
        if "__slots__" in ns:  # `Node` itself (a node class lists fields, not slots)
            return super().__new__(mcs, name, bases, ns)
        names = tuple(n for n, t in ns.get("__annotations__", {}).items() if "ClassVar" not in t)
        defaults: dict[str, Any] = {}
        compared: list[str] = []
        shown: list[str] = []
        for n in names:
            value = ns.pop(n, _REQUIRED)
            if type(value) is _Uncompared:
                if value.repr:
                    shown.append(n)
                value = value.default
            else:
                compared.append(n)
                shown.append(n)
            if value is not _REQUIRED:
                defaults[n] = value
        ns["__slots__"] = names
        ns["__match_args__"] = names
        ns["_fields"] = names
        ns["_shown"] = tuple(shown)
        methods, scope = _methods(name, names, defaults, compared)
        ns.update(methods)
        cls = super().__new__(mcs, name, bases, ns)
        # The compiled `__init__` sets each field through its slot's own setter: a third
        # cheaper than `object.__setattr__`, which looks the name up (lexing makes a token a
        # few microseconds, and this was a third of it).
        scope.update({f"_s_{n}": cls.__dict__[n].__set__ for n in names})
        return cls


_REQUIRED = object()
_set = object.__setattr__


def _methods(
    name: str, names: tuple[str, ...], defaults: dict[str, Any], compared: list[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """`__init__` (compiled: the parser makes thousands of nodes), `_values` (every field's
    value) and `_key` (the compared ones') for a class with these fields; and the globals of
    `__init__`, where the class's slot setters `_s_<field>` go once it is built."""
    params = ", ".join(f"{n}=_d_{n}" if n in defaults else n for n in names)
    body = "".join(f"\n    _s_{n}(self, {n})" for n in names) or "\n    pass"
    scope: dict[str, Any] = {f"_d_{n}": v for n, v in defaults.items()}
    exec(compile(f"def __init__(self, {params}):{body}", name, "exec"), scope)  # noqa: S102
    init = scope["__init__"]
    init.__qualname__ = f"{name}.__init__"
    methods = {"__init__": init, "_values": _getter(names), "_key": _getter(tuple(compared))}
    return methods, scope


def _getter(names: tuple[str, ...]) -> Any:
    """A function of a node giving the tuple of these fields' values (a C `attrgetter` when
    there are two or more)."""
    if len(names) >= 2:
        return staticmethod(attrgetter(*names))
    if names:
        one = attrgetter(names[0])
        return staticmethod(lambda node: (one(node),))
    return staticmethod(lambda node: ())


class Node(Immutable, metaclass=_NodeMeta):
    """A syntax tree node: a record with value semantics over its compared fields."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]]  # every field, in order
    _shown: ClassVar[tuple[str, ...]]  # the fields the repr shows

    _key: ClassVar[Any]  # the compared fields' values as a tuple (a static function)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return bool(self._key(self) == other._key(other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key(self))

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._shown)
        return f"{type(self).__qualname__}({shown})"


N = TypeVar("N", bound=Node)


def replace(node: N, **changes: Any) -> N:
    """A copy of `node` with some fields changed (what `dataclasses.replace` did)."""
    values = dict(zip(node._fields, node._values(node), strict=True))
    values.update(changes)
    return type(node)(**values)
