"""Provides the registry of builtin functions: `BUILTINS` and the `@builtin(name)` decorator.

The builtins live in several modules by topic (`builtins.py` for the core, `builtins_fs.py`,
`builtins_shell.py`, `builtins_std.py` for the host side of the `std::` modules); each registers
its functions here, and `builtins.py` imports them all so that importing it registers every one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from runtime.language.bytecode import BUILTIN_NAMES

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

Builtin = Callable[["Machine", list[Any], dict[str, Any]], Any]

BUILTINS: dict[str, Builtin] = {}


def builtin(name: str) -> Callable[[Builtin], Builtin]:
    def deco(fn: Builtin) -> Builtin:
        BUILTINS[name] = fn
        if name not in BUILTIN_NAMES:
            raise AssertionError(
                f"builtin {name!r} is not declared in runtime.language.bytecode.BUILTIN_NAMES"
            )
        return fn

    return deco


def arg(args: list[Any], named: dict[str, Any], i: int, name: str, default: Any = None) -> Any:
    """Argument `i` (or the one named `name`) of a builtin call, `default` when absent."""
    if name in named:
        return named[name]
    return args[i] if i < len(args) else default
