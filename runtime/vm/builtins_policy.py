"""Provides the host side of `std::policy` (runtime/language/std/policy.agency): glob matching of
a rule's `match` values against an interrupt's data; and of `std::tag`: the table of tags, a
hidden module global (so restore rolls it back and snapshots keep it, object identity included)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import regex

from runtime.errors import AgencyRuntimeError
from runtime.vm.builtin_base import builtin
from runtime.vm.values import JSArray, JSObject, RegexTime, js_eq

if TYPE_CHECKING:
    from runtime.vm.machine import Machine


def _unescaped(text: str) -> list[tuple[int, str]]:
    """The characters of a glob that are not escaped by a backslash (`\\{` is a literal `{`),
    with their positions."""
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        out.append((i, text[i]))
        i += 1
    return out


def _first_group(pattern: str, after: int = 0) -> tuple[int, int, list[str]] | None:
    """The first `{…}` group of `pattern` that starts at or after `after` (its brace's
    position, its closing brace's, and its alternatives, split at the commas outside nested
    groups); None when there is none or it is never closed (a lone brace is literal).
    Escaped braces and commas (`\\{`) are text."""
    depth, start = 0, -1
    for i, c in _unescaped(pattern):
        if i < after:
            continue
        if c == "{":
            if depth == 0:
                start = i
            depth += 1
        elif c == "}" and depth:
            depth -= 1
            if depth == 0:
                inner, parts, nested, last = pattern[start + 1 : i], [], 0, 0
                for k, ch in _unescaped(inner):
                    if ch == "{":
                        nested += 1
                    elif ch == "}":
                        nested -= 1
                    elif ch == "," and nested == 0:
                        parts.append(inner[last:k])
                        last = k + 1
                parts.append(inner[last:])
                return start, i, parts
    return None


def _expand(pattern: str) -> list[str]:
    """`{a,b}` alternatives spelled out (nested braces too): "x{1,2}" → ["x1", "x2"]. A
    backslash escapes a brace or comma (as the reference's builtin policies escape a directory
    name they scope rules to)."""
    group = _first_group(pattern)
    if group is None:
        return [pattern]
    start, end, parts = group
    head, tail = pattern[:start], pattern[end + 1 :]
    out: list[str] = []
    for p in parts:
        out.extend(_expand(head + p + tail))
        if len(out) > MAX_ALTERNATIVES:  # `{a,b}` twenty times over is a million globs
            raise AgencyRuntimeError(
                f"the glob {pattern!r} spells out more than {MAX_ALTERNATIVES:,} alternatives"
            )
    return out


MAX_ALTERNATIVES = 10_000


def _alternatives(pattern: str) -> int:
    """How many globs `_expand` spells `pattern` out to, counted group by group without
    spelling them out (it stops counting past MAX_ALTERNATIVES): refusing `{a,b}` twenty times
    over took spelling out ten thousand of them first, ~0.3 s each time it was asked."""
    total, at = 1, 0
    while total <= MAX_ALTERNATIVES:
        group = _first_group(pattern, at)
        if group is None:
            break
        _start, end, parts = group
        total *= sum(_alternatives(part) for part in parts)
        at = end + 1
    return total


@lru_cache(maxsize=256)
def _glob_regex(pattern: str) -> regex.Pattern[str]:
    """A glob as a regex: `**` crosses `/`, `*` and `?` stay inside one path segment."""
    if _alternatives(pattern) > MAX_ALTERNATIVES:
        raise AgencyRuntimeError(
            f"the glob {pattern!r} spells out more than {MAX_ALTERNATIVES:,} alternatives"
        )
    out = []
    for alt in _expand(pattern):
        i, rx = 0, ""
        while i < len(alt):
            if alt[i] == "\\" and i + 1 < len(alt):  # an escaped character is itself
                rx += re.escape(alt[i + 1])
                i += 2
            elif alt.startswith("/**", i) and i + 3 == len(alt):
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
    # The time-limited engine: `**a**a**a…b` backtracks polynomially in the value's length.
    return regex.compile("(?:" + "|".join(out) + r")\Z", regex.VERSION0)


@builtin("__policy_glob")
def _policy_glob(m: Machine, args: list[Any], named: dict[str, Any]) -> bool:
    """Whether `value` matches the glob `pattern` (strings only)."""
    pattern, value = args[0], args[1]
    if type(pattern) is not str or type(value) is not str:
        return False
    with RegexTime(pattern) as clock:
        return _glob_regex(pattern).match(value, timeout=clock.limit) is not None


# -- std::tag ------------------------------------------------------------------------------------

TAGS = "__tags"  # hidden module global: [[value, {tags}], …] (objects by identity, others by value)


def _tag_index(table: Any, value: Any) -> int:
    for i, (v, _tags) in enumerate(table):
        if js_eq(v, value):  # objects and arrays by identity, the rest by value
            return i
    return -1


@builtin("__tags_get")
def _tags_get(m: Machine, args: list[Any], named: dict[str, Any]) -> JSObject:
    """A copy of the tags of `value` ({} when it has none)."""
    table = m.globals.get(TAGS) or JSArray()
    i = _tag_index(table, args[0] if args else None)
    return JSObject(table[i][1]) if i >= 0 else JSObject()


@builtin("__tags_set")
def _tags_set(m: Machine, args: list[Any], named: dict[str, Any]) -> JSObject:
    """Replace the tags of `value` (an empty object removes its entry); returns a copy."""
    value, tags = args[0], JSObject(args[1] or {})
    table = JSArray(m.globals.get(TAGS) or ())
    i = _tag_index(table, value)
    if i >= 0:
        del table[i]
    if tags:
        table.append(JSArray([value, tags]))
    m.globals[TAGS] = table
    if m.wlog is not None:
        m.wlog.append((2, TAGS, m.rec.enc_now(table)))
    return JSObject(tags)
