"""Provides the string methods that take a regex, as JavaScript's do: `s.match(re)`,
`s.matchAll(re)`, `s.search(re)`, and `replace`, `replaceAll` and `split` when their pattern is a
regex; and a regex's `exec(s)`.

A regex value is the tagged object `re/…/flags` makes (runtime.vm.values.make_regex). A match is
an array of the whole match and its groups (an unmatched group is null) with JavaScript's
`index`, `input` and `groups` properties (`groups` is null when the regex names no group).
Regexes keep no `lastIndex`: `exec` and a non-global `match` always look from the start.

Each operation runs inside a `RegexTime`: one call into the engine may take `AGENCY_REGEX_TIMEOUT`
seconds (and the engine checks for Ctrl-C and SIGTERM while it matches).
"""

from __future__ import annotations

import re
from typing import Any

import regex

from runtime.errors import AgencyRuntimeError
from runtime.vm import utf16
from runtime.vm.builtins_data import integer
from runtime.vm.limits import SMALL, check_string_length
from runtime.vm.values import JSArray, JSObject, RegexTime, compiled_regex, is_regex, to_str


def pattern_of(r: Any) -> tuple[regex.Pattern[str], bool, RegexTime]:
    """The compiled pattern of a regex value (or of a string, read as a regex's source, as
    `match` and `search` do in JavaScript), whether it has the `g` flag, and the clock of the
    operation that uses it (its calls run `with` it, passing `timeout=clock.limit`)."""
    if is_regex(r):
        source, flags = str(r["source"]), str(r["flags"])
    else:
        source, flags = "(?:)" if r is None else to_str(r), ""
    return compiled_regex(source, flags), "g" in flags, RegexTime(source, flags)


def _groups(found: regex.Match[str]) -> JSArray:
    """A match array, as JavaScript's: the whole match and its groups, with `index` (a UTF-16
    position), `input` and `groups` (the named groups' object, or null without any)."""
    arr = JSArray([found.group(0), *found.groups()])
    named = found.groupdict()
    s = found.string
    arr.props = {
        "index": utf16.to_unit_index(s, found.start()),
        "input": s,
        "groups": JSObject(named) if named else None,
    }
    return arr


def match(s: str, args: list[Any]) -> Any:
    """`s.match(re)`: the first match and its groups; with `g`, every whole match; null if none."""
    pattern, every, clock = pattern_of(args[0] if args else None)
    with clock:
        if every:
            found = [m.group(0) for m in pattern.finditer(s, timeout=clock.limit)]
            return JSArray(found) if found else None
        first = pattern.search(s, timeout=clock.limit)
    return _groups(first) if first is not None else None


def match_all(s: str, args: list[Any]) -> JSArray:
    """`s.matchAll(re)`: every match with its groups (JavaScript requires the `g` flag)."""
    r: Any = args[0] if args else None
    if is_regex(r) and "g" not in str(r["flags"]):
        raise AgencyRuntimeError("matchAll needs a regex with the g flag, like re/abc/g")
    pattern, _, clock = pattern_of(r)
    with clock:
        return JSArray(_groups(m) for m in pattern.finditer(s, timeout=clock.limit))


def search(s: str, args: list[Any]) -> int:
    """`s.search(re)`: the (UTF-16) index of the first match, or -1."""
    pattern, _, clock = pattern_of(args[0] if args else None)
    with clock:
        found = pattern.search(s, timeout=clock.limit)
    return utf16.to_unit_index(s, found.start()) if found is not None else -1


def exec_(r: Any, args: list[Any]) -> Any:
    """`re.exec(s)`: the first match and its groups, or null."""
    pattern, _, clock = pattern_of(r)
    with clock:
        found = pattern.search(to_str(args[0] if args else None), timeout=clock.limit)
    return _groups(found) if found is not None else None


def replace(s: str, args: list[Any], every: bool) -> str:
    """`s.replace(re, text)` / `s.replaceAll(re, text)`: a `g` regex replaces every match, one
    without `g` the first (replaceAll refuses it, as JavaScript does). The text may name groups:
    `$1`, `$<name>`, `$&`, `` $` ``, `$'`, `$$`."""
    r = args[0]
    flags = str(r["flags"])
    if every and "g" not in flags:
        raise AgencyRuntimeError("replaceAll needs a regex with the g flag, like re/abc/g")
    pattern = compiled_regex(str(r["source"]), flags)
    template = to_str(args[1] if len(args) > 1 else None)
    with RegexTime(str(r["source"]), flags) as clock:
        out = pattern.sub(
            lambda m: _expand(template, m, s),
            s,
            count=0 if "g" in flags else 1,
            timeout=clock.limit,
        )
    if len(out) > SMALL:
        check_string_length(len(out))
    return out


_REFERENCE = re.compile(r"\$(\$|&|`|'|<([A-Za-z_][A-Za-z0-9_]*)>|[0-9]{1,2})")


def _expand(template: str, found: regex.Match[str], s: str) -> str:
    """A replacement text with its `$` references filled from one match."""
    if "$" not in template:
        return template

    def one(ref: re.Match[str]) -> str:
        token = ref.group(1)
        if token == "$":
            return "$"
        if token == "&":
            return found.group(0)
        if token == "`":
            return s[: found.start()]
        if token == "'":
            return s[found.end() :]
        if ref.group(2) is not None:
            name = ref.group(2)
            if name not in found.re.groupindex:
                return ref.group(0)
            return found.group(name) or ""
        n = int(token)
        if len(token) == 2 and not 1 <= n <= found.re.groups:
            n, rest = int(token[0]), token[1]  # `$15` with one group is `$1` then `5`
            return (found.group(n) or "") + rest if 1 <= n <= found.re.groups else ref.group(0)
        if not 1 <= n <= found.re.groups:
            return ref.group(0)
        return found.group(n) or ""

    return _REFERENCE.sub(one, template)


def split(s: str, args: list[Any]) -> JSArray:
    """`s.split(re, limit?)`: the pieces between matches, with any groups spliced in between
    (JavaScript's algorithm: an empty match splits between characters, never at either end).
    JavaScript tries a match at each position in turn; a search from a position finds the same
    first match with one call instead of one per character."""
    pattern, _, clock = pattern_of(args[0])
    parts: list[Any] = []
    with clock:
        if not s:
            parts = [] if pattern.match(s, timeout=clock.limit) is not None else [s]
        else:
            p = q = 0
            while q < len(s):
                found = pattern.search(s, q, timeout=clock.limit)
                if found is None or found.start() >= len(s):
                    break
                if found.end() == p:  # an empty match where the last piece ended
                    q = found.start() + 1
                    continue
                parts.append(s[p : found.start()])
                parts.extend(found.groups())
                p = q = found.end()
            parts.append(s[p:])
    limit = args[1] if len(args) > 1 else None
    if limit is not None:
        parts = parts[: max(0, integer(limit))]
    return JSArray(parts)
