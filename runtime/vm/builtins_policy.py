"""Provides the host side of `std::policy` (runtime/language/std/policy.agency): glob matching of
a rule's `match` values against an interrupt's data."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from runtime.vm.builtin_base import builtin

if TYPE_CHECKING:
    from runtime.vm.machine import Machine


def _expand(pattern: str) -> list[str]:
    """`{a,b}` alternatives spelled out (nested braces too): "x{1,2}" → ["x1", "x2"]."""
    start = pattern.find("{")
    if start < 0:
        return [pattern]
    depth = 0
    for end in range(start, len(pattern)):
        c = pattern[end]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                break
    else:
        return [pattern]  # an unclosed brace is literal
    inner, parts, depth, last = pattern[start + 1 : end], [], 0, 0
    for i, c in enumerate(inner):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(inner[last:i])
            last = i + 1
    parts.append(inner[last:])
    head, tail = pattern[:start], pattern[end + 1 :]
    return [x for p in parts for x in _expand(head + p + tail)]


@lru_cache(maxsize=256)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob as a regex: `**` crosses `/`, `*` and `?` stay inside one path segment."""
    out = []
    for alt in _expand(pattern):
        i, rx = 0, ""
        while i < len(alt):
            if alt.startswith("/**", i) and i + 3 == len(alt):
                rx += "(?:/.*)?"  # "dir/**" also matches "dir" itself
                i += 3
            elif alt.startswith("**", i):
                rx += ".*"
                i += 2
            elif alt[i] == "*":
                rx += "[^/]*"
                i += 1
            elif alt[i] == "?":
                rx += "[^/]"
                i += 1
            else:
                rx += re.escape(alt[i])
                i += 1
        out.append(rx)
    return re.compile("(?:" + "|".join(out) + r")\Z")


@builtin("__policy_glob")
def _policy_glob(m: Machine, args: list[Any], named: dict[str, Any]) -> bool:
    """Whether `value` matches the glob `pattern` (strings only)."""
    pattern, value = args[0], args[1]
    if type(pattern) is not str or type(value) is not str:
        return False
    return _glob_regex(pattern).match(value) is not None
