"""Provides JavaScript's view of a string: a sequence of UTF-16 code units.

Agency strings are Python strings (code points), but the reference runs on JavaScript strings,
so `"😀".length` is 2 there, `"😀".charCodeAt(0)` is the high surrogate and `"a😀b".indexOf("b")`
is 3. Every string operation that takes or gives a position goes through here.

A string whose characters are all in the Basic Multilingual Plane has one code unit per code
point, so its positions are Python's and every function returns at once; only a string with an
astral character (an emoji, say) is encoded as UTF-16 to count or cut. `has_astral` is O(1):
CPython stores a string with a character above U+FFFF four bytes a character, and a string
without one in one or two, which the object's size shows (checked at import; if this Python
stores strings otherwise, a regex scan answers instead).

Cutting a surrogate pair in two gives lone surrogates, as in JavaScript. Python keeps two halves
side by side as two code points, where JavaScript sees the character again, so every join of
strings (`+`, templates, `join`, `concat`, `replace`) mends them (`mend`, `join_halves`).
Iterating a string (`for`, spread) goes by code points, as JavaScript's iterator does.
"""

from __future__ import annotations

import re

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_sizeof = str.__sizeof__
_UCS4_OVERHEAD = _sizeof("\U00010000") - 4
_UCS1_OVERHEAD = _sizeof("é") - 1


def _bmp_by_size(s: str) -> bool:
    # A string also counts a UTF-8 copy of itself once a C function asked for one (pickling
    # it, binding it to SQLite: recording does both), which only adds to its size: below the
    # line it is narrower than four bytes a character; at or above it, the scan says (only
    # strings with an astral character, or that copy, pay for it; they are encoded anyway).
    return s.isascii() or _sizeof(s) - 4 * len(s) < _UCS4_OVERHEAD or _ASTRAL.search(s) is None


def _bmp_by_scan(s: str) -> bool:
    return s.isascii() or _ASTRAL.search(s) is None


def _size_rule_holds() -> bool:
    samples = ["é", "日本", "\ud83d", "x" * 300 + "é", "ab\U0001f600", "\U0001f600" * 9, "日" * 40]
    ucs1 = ["é" * 50, "ça", "\xff" * 3]
    wider = ["日" * 3, "\ud83d", "a\U0001f600", "\u0100"]
    return all(
        _bmp_by_size(s) == _bmp_by_scan(s) == (_sizeof(s) - 4 * len(s) < _UCS4_OVERHEAD)
        for s in samples
    ) and all((_sizeof(s) - len(s) == _UCS1_OVERHEAD) == (max(s) <= "\xff") for s in ucs1 + wider)


# `bmp(s)`: whether every character of `s` is one UTF-16 code unit, so Python's positions are
# JavaScript's. Callers on a hot path test it first and keep Python's own operations.
_SIZES_TELL = _size_rule_holds()
bmp = _bmp_by_size if _SIZES_TELL else _bmp_by_scan
# For the hottest callers, the test without a call: `s.isascii() or s.__sizeof__() - 4 *
# len(s) < BMP_BELOW` says `s` is all BMP (never, when sizes do not tell: the slow path is right
# for every string, only slower).
BMP_BELOW = _UCS4_OVERHEAD if _SIZES_TELL else -(1 << 62)


def has_astral(s: str) -> bool:
    """Whether `s` has a character outside the BMP (two UTF-16 code units)."""
    return not bmp(s)


# The last string encoded and its code units: a loop over one string's positions encodes it
# once, not once a step. One tuple, rebound whole, so a reader never sees half of an update.
_last: tuple[str, bytes] = ("", b"")


def _units(s: str) -> bytes:
    global _last
    last = _last
    if last[0] is s:
        return last[1]
    data = s.encode("utf-16-le", "surrogatepass")
    _last = (s, data)
    return data


def _text(units: bytes) -> str:
    return units.decode("utf-16-le", "surrogatepass")


def length(s: str) -> int:
    """`s.length`: the number of UTF-16 code units."""
    if bmp(s):
        return len(s)
    return len(_units(s)) >> 1


def cut(s: str, start: int, end: int) -> str:
    """The code units `start` to `end` (already clamped to 0..length, start <= end)."""
    if bmp(s):
        return s[start:end]
    return _text(_units(s)[2 * start : 2 * end])


def unit_at(s: str, i: int) -> str:
    """The one-unit string at unit index `i` (0 <= i < length): a lone surrogate inside a
    pair."""
    if bmp(s):
        return s[i]
    return _text(_units(s)[2 * i : 2 * i + 2])


def code_unit(s: str, i: int) -> int:
    """The UTF-16 code unit at unit index `i` (0 <= i < length)."""
    if bmp(s):
        return ord(s[i])
    return int.from_bytes(_units(s)[2 * i : 2 * i + 2], "little")


def code_point(s: str, i: int) -> int:
    """`codePointAt(i)`: the code point starting at unit `i`; the unit itself when it is a lone
    surrogate or the second half of a pair."""
    if bmp(s):
        return ord(s[i])
    data = _units(s)
    unit = int.from_bytes(data[2 * i : 2 * i + 2], "little")
    if 0xD800 <= unit < 0xDC00 and 2 * i + 4 <= len(data):
        low = int.from_bytes(data[2 * i + 2 : 2 * i + 4], "little")
        if 0xDC00 <= low < 0xE000:
            return 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
    return unit


def units_list(s: str) -> list[str]:
    """`s.split("")`: one string per code unit."""
    if bmp(s):
        return list(s)
    data = _units(s)
    return [_text(data[i : i + 2]) for i in range(0, len(data), 2)]


def to_unit_index(s: str, i: int) -> int:
    """The unit index of Python (code point) index `i` in `s`; -1 stays -1."""
    if i <= 0 or bmp(s):
        return i
    return len(_units(s[:i])) >> 1


def to_index(s: str, unit: int) -> int:
    """The Python index where unit `unit` falls (a unit inside a pair counts as the pair's
    end, so a search from there starts after it, as JavaScript finds nothing at a low
    surrogate)."""
    if unit <= 0 or bmp(s):
        return unit
    return len(_text(_units(s)[: 2 * unit]))


_HALVES = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def mend(s: str) -> str:
    """`s` with any high surrogate followed by a low one made the character they encode (only a
    join of cut strings puts them so). A string of one-byte characters (Latin-1) has no
    surrogate, which its size shows at once; any other is scanned."""
    if s.isascii() or (_SIZES_TELL and _sizeof(s) - len(s) == _UCS1_OVERHEAD):
        return s
    return join_halves(s) if _HALVES.search(s) is not None else s


def join_halves(s: str) -> str:
    """`s` with each high surrogate followed by a low one made the one character they encode
    (a concatenation that puts the two halves of a pair together)."""
    return _text(_units(s))
