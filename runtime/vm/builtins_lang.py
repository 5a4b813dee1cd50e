"""Provides small builtins of the language itself that other builtins modules do not cover:
`_pairsOf` (what a two-name comprehension or loop walks), and the project settings a program
reads (`__memory_project_config`: agency.json's `memory`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.vm.builtin_base import arg, builtin
from runtime.vm.values import JSArray, JSObject, from_plain

if TYPE_CHECKING:
    from runtime.vm.machine import Machine


@builtin("_pairsOf")
def _pairs_of(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """The pairs a two-name loop walks: [item, index] of an array, [key, value] of an object;
    nothing (an empty array) for any other value, strings included."""
    v = arg(args, named, 0, "value")
    if type(v) is JSArray:
        return JSArray(JSArray([item, i]) for i, item in enumerate(v))
    if type(v) is JSObject:
        return JSArray(JSArray([k, item]) for k, item in v.items())
    return JSArray()


@builtin("__memory_project_config")
def _memory_project_config(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """The project's memory config (agency.json's `memory`, e.g. {dir}), or null."""
    config = m.world.memory_config
    return from_plain(config) if isinstance(config, dict) else None
