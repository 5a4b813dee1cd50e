"""Provides JavaScript's built-in classes as Agency has them: `Set`, `Map`, `Date`, `URL`, `Error`
and `Array.from`, with JavaScript semantics for the methods programs use.

`Set` and `Map` are containers (`JSSet`, `JSMap`): every change goes through `_insert`,
`_replace` or `_remove`, which log it the way `Machine.splice` logs an array change, so a
recording stays O(change). The recorder sees a Set as the list of its elements and a Map as the
list of its `[key, value]` pairs. A `Date` is a value (`JSDate`); `Date.now()` and `new Date()`
read the clock through the effect journal, so a replay serves the recorded time. `URL` and
`Error` are plain objects with the fields JavaScript gives them (`url.searchParams` is a Map).
"""

from __future__ import annotations

import datetime
import math
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.vm.effects import observe
from runtime.vm.limits import SMALL, check_array_length
from runtime.vm.values import (
    JSArray,
    JSDate,
    JSMap,
    JSObject,
    JSSet,
    a_type,
    is_regex,
    make_regex,
    num,
    set_key,
    to_number,
    to_str,
)

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

CLASS_TYPES = (JSSet, JSMap, JSDate)


def _a(args: list[Any], i: int) -> Any:
    return args[i] if i < len(args) else None


# -- changes, logged ---------------------------------------------------------------------------


def _entry(c: JSSet | JSMap, item: Any) -> Any:
    """What the recorder stores for one element: the element, or a Map's [key, value]."""
    return list(item) if type(c) is JSMap else item


def _writable(m: Machine | None, c: JSSet | JSMap, what: str) -> None:
    if m is not None and m.frozen and id(c) in m.frozen:
        m.refuse_frozen(c, what)


def _insert(m: Machine | None, c: JSSet | JSMap, k: Any, item: Any) -> None:
    _writable(m, c, "add to")
    c[k] = item
    if m is not None and m.wlog is not None:
        m.rec.log_push(c, _entry(c, item))


def _replace(m: Machine | None, c: JSMap, k: Any, item: Any) -> None:
    _writable(m, c, "set an entry of")
    c[k] = item
    if m is not None and m.wlog is not None:
        m.rec.log_set(c, list(c).index(k), _entry(c, item))


def _remove(m: Machine | None, c: JSSet | JSMap, k: Any) -> None:
    _writable(m, c, "delete from")
    at = list(c).index(k) if m is not None and m.wlog is not None else 0
    del c[k]
    if m is not None and m.wlog is not None:
        m.rec.log_splice(c, at, 1, ())


def _clear(m: Machine | None, c: JSSet | JSMap) -> None:
    _writable(m, c, "clear")
    n = len(c)
    c.clear()
    if m is not None and m.wlog is not None and n:
        m.rec.log_splice(c, 0, n, ())


# -- constructors ------------------------------------------------------------------------------


def items_of(v: Any, what: str) -> list[Any]:
    """The elements an iterable value yields (`for … of` in JavaScript)."""
    t = type(v)
    if v is None:
        return []
    if t is JSArray:
        return list(v)
    if t is str:
        return list(v)
    if t is JSSet:
        return list(v.values())
    if t is JSMap:
        return [JSArray(pair) for pair in v.values()]
    raise AgencyRuntimeError(f"{what}: {a_type(v)} is not iterable")


def new_set(m: Machine, args: list[Any]) -> JSSet:
    out = JSSet()
    for x in items_of(_a(args, 0), "new Set"):
        out.setdefault(set_key(x), x)
    return out


def new_map(m: Machine, args: list[Any]) -> JSMap:
    out = JSMap()
    for pair in items_of(_a(args, 0), "new Map"):
        if type(pair) is not JSArray:
            raise AgencyRuntimeError(
                f"new Map: each entry must be a [key, value] array, got {a_type(pair)}"
            )
        k = _a(pair, 0)
        out[set_key(k)] = (k, _a(pair, 1))
    return out


def now_ms(m: Machine) -> int:
    """The wall clock in milliseconds, read once per call through the effect journal."""
    return int(observe(m, "clock", {"what": "Date.now"}, lambda: int(m.world.clock())))


def new_date(m: Machine, args: list[Any]) -> JSDate:
    if not args:
        return JSDate(now_ms(m))
    if len(args) == 1:
        v = args[0]
        if type(v) is JSDate:
            return JSDate(v.ms)
        if type(v) is str:
            return JSDate(parse_date(v))
        n = to_number(v)
        return JSDate(_time_clip(n))
    parts = [to_number(x) for x in args[:7]]
    if any(p != p for p in parts):
        return JSDate(math.nan)
    year, month = int(parts[0]), int(parts[1])
    if 0 <= year <= 99:
        year += 1900
    rest = [int(p) for p in parts[2:]] + [0] * (7 - len(parts))
    day = rest[0] if len(parts) > 2 else 1
    ms = _utc_ms(year, month, day, *rest[1:5])
    return JSDate(ms)


def _utc_ms(year: int, month: int, day: int, h: int, mi: int, s: int, ms: int) -> float:
    year += month // 12
    month %= 12
    days = (datetime.date(year, month + 1, 1) - datetime.date(1970, 1, 1)).days + day - 1
    return float((((days * 24 + h) * 60 + mi) * 60 + s) * 1000 + ms)


def _time_clip(n: float) -> float:
    if n != n or abs(n) > 8.64e15:
        return math.nan
    return float(int(n))


def parse_date(text: str) -> float:
    """Milliseconds for an ISO 8601 date (`2025-06-15`, `2025-06-15T12:00:00.000Z`, with an
    offset); a date-only form is UTC, a date-time without offset is read as UTC too (the run's
    time zone is not an input). NaN when unreadable."""
    s = text.strip()
    if not s:
        return math.nan
    if s.endswith("Z") or s.endswith("z"):
        s = s[:-1] + "+00:00"
    try:
        at = datetime.datetime.fromisoformat(s)
    except ValueError:
        return math.nan
    if at.tzinfo is not None:
        at = at.astimezone(datetime.UTC).replace(tzinfo=None)
    delta = at - datetime.datetime(1970, 1, 1)
    return float(delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000)


def new_url(m: Machine, args: list[Any]) -> JSObject:
    raw = to_str(_a(args, 0))
    base = _a(args, 1)
    if base is not None:
        raw = urllib.parse.urljoin(to_str(base), raw)
    parts = urllib.parse.urlsplit(raw)
    if not parts.scheme or (parts.scheme in ("http", "https") and not parts.netloc):
        raise AgencyRuntimeError(f"Invalid URL: {raw}")
    host = parts.hostname or ""
    port = str(parts.port) if parts.port is not None else ""
    path = parts.path or ("/" if parts.netloc else "")
    search = f"?{parts.query}" if parts.query else ""
    hash_ = f"#{parts.fragment}" if parts.fragment else ""
    netloc = host + (f":{port}" if port else "")
    params = JSMap()
    for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
        if set_key(k) not in params:
            params[set_key(k)] = (k, v)
    scheme = parts.scheme + ":"
    href = f"{scheme}//{netloc}{path}{search}{hash_}" if parts.netloc else raw
    return JSObject(
        {
            "href": href,
            "protocol": scheme,
            "host": netloc,
            "hostname": host,
            "port": port,
            "pathname": path,
            "search": search,
            "hash": hash_,
            "origin": f"{scheme}//{netloc}" if parts.netloc else "null",
            "username": parts.username or "",
            "password": parts.password or "",
            "searchParams": params,
        }
    )


def new_error(m: Machine, args: list[Any]) -> JSObject:
    message = _a(args, 0)
    return JSObject({"name": "Error", "message": "" if message is None else to_str(message)})


def new_regexp(m: Machine, args: list[Any]) -> JSObject:
    """`new RegExp("a+", "i")` is `re/a+/i`; `new RegExp(re/x/g)` copies it (with new flags,
    when they are given)."""
    source, flags = _a(args, 0), _a(args, 1)
    if is_regex(source):
        return make_regex(
            str(source["source"]), str(source["flags"]) if flags is None else to_str(flags)
        )
    text = "(?:)" if source is None else to_str(source)
    return make_regex(text, "" if flags is None else to_str(flags))


CONSTRUCTORS: dict[str, Callable[[Machine, list[Any]], Any]] = {
    "Set": new_set,
    "Map": new_map,
    "Date": new_date,
    "URL": new_url,
    "Error": new_error,
    "RegExp": new_regexp,
}


def array_from(v: Any = None, *rest: Any) -> JSArray:
    """`Array.from(iterable)`; an array-like `{length: n}` gives n nulls."""
    if type(v) is JSObject and "length" in v:
        n = to_number(v["length"])
        if n != n or n <= 0:
            return JSArray()
        if n > SMALL:
            check_array_length(n if n == math.inf else int(n))
        return JSArray([None] * int(n))
    return JSArray(items_of(v, "Array.from"))


# -- members and methods -----------------------------------------------------------------------


def get_member(obj: Any, name: str) -> Any:
    if name == "size" and type(obj) in (JSSet, JSMap):
        return len(obj)
    return None


def call_method(m: Machine, obj: Any, name: str, args: list[Any]) -> Any:
    t = type(obj)
    table: dict[str, Callable[[Machine, Any, list[Any]], Any]] = (
        SET_METHODS if t is JSSet else MAP_METHODS if t is JSMap else DATE_METHODS
    )
    fn = table.get(name)
    if fn is None:
        raise AgencyRuntimeError(f"{a_type(obj)} has no method `{name}`")
    return fn(m, obj, args)


def _set_add(m: Machine, s: JSSet, args: list[Any]) -> JSSet:
    x = _a(args, 0)
    k = set_key(x)
    if k not in s:
        _insert(m, s, k, x)
    return s


def _delete(m: Machine, c: JSSet | JSMap, args: list[Any]) -> bool:
    k = set_key(_a(args, 0))
    if k not in c:
        return False
    _remove(m, c, k)
    return True


def _map_set(m: Machine, c: JSMap, args: list[Any]) -> JSMap:
    key, value = _a(args, 0), _a(args, 1)
    k = set_key(key)
    if k in c:
        _replace(m, c, k, (c[k][0], value))
    else:
        _insert(m, c, k, (key, value))
    return c


def _map_get(m: Machine, c: JSMap, args: list[Any]) -> Any:
    pair = c.get(set_key(_a(args, 0)))
    return None if pair is None else pair[1]


SET_METHODS: dict[str, Callable[[Machine, Any, list[Any]], Any]] = {
    "add": _set_add,
    "has": lambda m, s, a: set_key(_a(a, 0)) in s,
    "delete": _delete,
    "clear": lambda m, s, a: _clear(m, s),
    "values": lambda m, s, a: JSArray(s.values()),
    "keys": lambda m, s, a: JSArray(s.values()),
    "entries": lambda m, s, a: JSArray(JSArray([x, x]) for x in s.values()),
    "toString": lambda m, s, a: "[object Set]",
}

MAP_METHODS: dict[str, Callable[[Machine, Any, list[Any]], Any]] = {
    "set": _map_set,
    "get": _map_get,
    "has": lambda m, c, a: set_key(_a(a, 0)) in c,
    "delete": _delete,
    "clear": lambda m, c, a: _clear(m, c),
    "keys": lambda m, c, a: JSArray(p[0] for p in c.values()),
    "values": lambda m, c, a: JSArray(p[1] for p in c.values()),
    "entries": lambda m, c, a: JSArray(JSArray(p) for p in c.values()),
    "toString": lambda m, c, a: "[object Map]",
}


def _utc(d: JSDate) -> datetime.datetime:
    if d.ms != d.ms:
        raise AgencyRuntimeError("Invalid Date")
    return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=d.ms)


def _field(get: Callable[[datetime.datetime], int]) -> Callable[[Machine, JSDate, list[Any]], Any]:
    def method(m: Machine, d: JSDate, args: list[Any]) -> Any:
        return math.nan if d.ms != d.ms else get(_utc(d))

    return method


_DAYS = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _date_string(d: JSDate) -> str:
    if d.ms != d.ms:
        return "Invalid Date"
    at = _utc(d)
    day = _DAYS[(at.weekday() + 1) % 7]
    return (
        f"{day} {_MONTHS[at.month - 1]} {at.day:02d} {at.year} "
        f"{at.hour:02d}:{at.minute:02d}:{at.second:02d} GMT+0000 (Coordinated Universal Time)"
    )


# The run's time zone is not an input (it would make runs differ between machines): local
# getters are the UTC ones.
_GETTERS: dict[str, Callable[[datetime.datetime], int]] = {
    "FullYear": lambda t: t.year,
    "Month": lambda t: t.month - 1,
    "Date": lambda t: t.day,
    "Day": lambda t: (t.weekday() + 1) % 7,
    "Hours": lambda t: t.hour,
    "Minutes": lambda t: t.minute,
    "Seconds": lambda t: t.second,
    "Milliseconds": lambda t: t.microsecond // 1000,
}

DATE_METHODS: dict[str, Callable[[Machine, Any, list[Any]], Any]] = {
    "toISOString": lambda m, d, a: d.iso(),
    "toJSON": lambda m, d, a: d.iso() if d.ms == d.ms else None,
    "getTime": lambda m, d, a: num(float(d.ms)) if d.ms == d.ms else math.nan,
    "valueOf": lambda m, d, a: num(float(d.ms)) if d.ms == d.ms else math.nan,
    "toString": lambda m, d, a: _date_string(d),
    "toDateString": lambda m, d, a: _date_string(d)[:15],
    "getTimezoneOffset": lambda m, d, a: 0,
    **{f"get{k}": _field(g) for k, g in _GETTERS.items()},
    **{f"getUTC{k}": _field(g) for k, g in _GETTERS.items()},
}
