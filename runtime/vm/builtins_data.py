"""Provides the builtins over plain data: `range`, `keys`/`values`/`entries`, `len`, the
conversions (`String`, `Number`, `parseInt`, …) and the `JSON`, `Object` and `Math` namespaces."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.language.int_ops import int_to_double
from runtime.vm import classes, utf16
from runtime.vm.builtin_base import BUILTINS as BUILTINS
from runtime.vm.builtin_base import builtin
from runtime.vm.effects import observe
from runtime.vm.limits import SMALL, check_array_length
from runtime.vm.values import (
    JSArray,
    JSMap,
    JSObject,
    JSSet,
    js_keys,
    js_pow,
    num,
    parse_json,
    stringify,
    to_number,
    to_str,
    truthy,
    type_name,
)

if TYPE_CHECKING:
    from runtime.vm.machine import Machine


# -- collections --------------------------------------------------------------------------------


@builtin("range")
def _range(m: Machine, args: list[Any], named: dict[str, Any]) -> JSArray:
    """`range(n)`, `range(start, end)` (also by name: `range(start: 1, end: 4)`), and a step
    third. As the reference's `end = -1` default, an end of -1 counts from 0 to start.

    As the reference's `Array.from({length: end - start}, (_, i) => i + start)`, the length is
    `end - start` truncated (none when negative or NaN) and a fractional start is kept:
    `range(0.5, 3)` is `[0.5, 1.5]`. The step is this runtime's addition (the reference has
    none): `start + i * step` while short of `end`; a fractional step works, a zero one is an
    error, and so is one that would build more elements than an array may hold."""
    values = list(args)
    for i, key in enumerate(("start", "end", "step")):
        if key in named:
            values += [None] * (i + 1 - len(values))
            values[i] = named[key]
    if len(values) == 2 and values[1] is not None and to_number(values[1]) == -1:
        values = values[:1]
    if not values:
        raise AgencyRuntimeError("range() needs at least one argument")
    nums = [to_number(a) for a in values[:3]]
    start, end = (0, nums[0]) if len(nums) == 1 else (nums[0], nums[1])
    step = nums[2] if len(nums) >= 3 else 1
    if step == 0:
        raise AgencyRuntimeError("range(): the step cannot be 0")
    if step != step:
        raise AgencyRuntimeError("range(): the step is not a number (NaN)")
    span = (end - start) / step
    if span != span or span <= 0:
        return JSArray()
    count = math.ceil(span) if len(nums) >= 3 else math.floor(span) if span < math.inf else 0
    if span == math.inf or count > SMALL:
        try:
            check_array_length(count if span < math.inf else span)
        except AgencyRuntimeError as e:
            raise AgencyRuntimeError(f"range(): {e}") from None
    if _whole(start) and _whole(step):
        first, by = int(start), int(step)
        return JSArray(range(first, first + count * by, by))
    return JSArray(num(float(start + i * step)) for i in range(count))


def _whole(n: Any) -> bool:
    return type(n) is int or (n == n and n not in (math.inf, -math.inf) and n == int(n))


def integer(v: Any) -> int:
    """A number argument as an integer, as JavaScript's ToIntegerOrInfinity with the infinities
    clamped to ±2**63 (far past any length): NaN is 0."""
    n = to_number(v)
    if n != n:
        return 0
    if n in (math.inf, -math.inf):
        return 2**63 if n > 0 else -(2**63)
    return int(n)


@builtin("keys")
def _keys(m: Machine, args: list[Any], named: dict[str, Any]) -> JSArray:
    obj = args[0] if args else None
    if type(obj) is JSObject:
        return JSArray(js_keys(obj))
    if type(obj) is JSArray:
        return JSArray(str(i) for i in range(len(obj)))
    raise AgencyRuntimeError(f"keys() expects an object, got {type_name(obj)}")


@builtin("values")
def _values(m: Machine, args: list[Any], named: dict[str, Any]) -> JSArray:
    obj = args[0] if args else None
    if type(obj) is JSObject:
        return JSArray(obj[k] for k in js_keys(obj))
    if type(obj) is JSArray:
        return JSArray(obj)
    raise AgencyRuntimeError(f"values() expects an object, got {type_name(obj)}")


@builtin("entries")
def _entries(m: Machine, args: list[Any], named: dict[str, Any]) -> JSArray:
    obj = args[0] if args else None
    if type(obj) is not JSObject:
        raise AgencyRuntimeError(f"entries() expects an object, got {type_name(obj)}")
    return JSArray(JSArray([k, obj[k]]) for k in js_keys(obj))


@builtin("len")
def _len(m: Machine, args: list[Any], named: dict[str, Any]) -> int:
    v = args[0] if args else None
    if type(v) is str:
        return utf16.length(v)  # as `.length`: UTF-16 code units
    if isinstance(v, (JSArray, JSObject)):
        return len(v)
    raise AgencyRuntimeError(f"len() expects an array, string or object, got {type_name(v)}")


# -- conversions ---------------------------------------------------------------------------------


@builtin("String")
def _string(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    return to_str(args[0]) if args else ""


@builtin("Number")
def _number(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    return to_number(args[0]) if args else 0


@builtin("Boolean")
def _boolean(m: Machine, args: list[Any], named: dict[str, Any]) -> bool:
    return truthy(args[0]) if args else False


@builtin("parseInt")
def _parse_int(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    text = to_str(args[0] if args else None).strip()
    radix = integer(args[1]) if len(args) > 1 and args[1] is not None else 0
    sign = -1 if text[:1] == "-" else 1
    body = text[1:] if text[:1] in ("+", "-") else text
    if radix in (0, 16) and body[:2].lower() == "0x":  # `0x1f` is hexadecimal, as in JavaScript
        body, radix = body[2:], 16
    if radix == 0:
        radix = 10
    if not 2 <= radix <= 36:
        return math.nan
    digits = ""
    for ch in body:
        if ch.isascii() and ch.isalnum() and int(ch, 36) < radix:
            digits += ch
        else:
            break
    if not digits:
        return math.nan
    if radix == 10:
        return sign * int(digits) if len(digits) <= 16 else sign * num_of_text(digits)
    n = int(digits, radix)
    return sign * n if n < 2**53 else sign * int_to_double(n)


@builtin("parseFloat")
def _parse_float(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    text = to_str(args[0] if args else None).strip()
    found = _FLOAT_PREFIX.match(text)
    if found is None:
        return math.nan
    return num_of_text(found.group(0))


_FLOAT_PREFIX = re.compile(r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")


def num_of_text(text: str) -> Any:
    """A decimal number's text as JavaScript reads it: a double (so 5,000 digits are
    Infinity, never a 5,000-digit integer)."""
    f = float(text)
    return int(f) if f.is_integer() and abs(f) < 2**53 else f


@builtin("JSON")
def _json_ns(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    raise AgencyRuntimeError("JSON is not a function (use JSON.stringify or JSON.parse)")


@builtin("Object")
def _object_ns(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    raise AgencyRuntimeError("Object is not a function (use Object.keys)")


@builtin("Math")
def _math_ns(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    raise AgencyRuntimeError("Math is not a function (use Math.floor, Math.max, …)")


def _math_round(x: Any) -> Any:
    if x is None:
        return math.nan
    n = to_number(x)
    if type(n) is int:
        return n
    return math.floor(n + 0.5) if n == n and abs(n) != math.inf else n


NAMESPACES: dict[str, dict[str, Callable[..., Any]]] = {
    "JSON": {
        "stringify": lambda *a: stringify(a[0] if a else None, a[2] if len(a) > 2 else None),
        "parse": lambda *a: parse_json(to_str(a[0] if a else None)),
    },
    "Object": {
        "keys": lambda *a: _keys(None, list(a), {}),  # type: ignore[arg-type]
        "values": lambda *a: _values(None, list(a), {}),  # type: ignore[arg-type]
        "entries": lambda *a: _entries(None, list(a), {}),  # type: ignore[arg-type]
        "fromEntries": lambda *a: _from_entries(a[0] if a else None),
        "create": lambda *a: JSObject(a[0]) if a and type(a[0]) is JSObject else JSObject(),
        "getOwnPropertyNames": lambda *a: _keys(None, list(a), {}),  # type: ignore[arg-type]
    },
    "Array": {
        "from": classes.array_from,
        "isArray": lambda *a: bool(a) and type(a[0]) is JSArray,
        "of": lambda *a: JSArray(a),
    },
    "Math": {
        "floor": lambda x=None, *_: math.floor(to_number(x)) if _finite(x) else _nan_or(x),
        "ceil": lambda x=None, *_: math.ceil(to_number(x)) if _finite(x) else _nan_or(x),
        "round": lambda x=None, *_: _math_round(x),
        "abs": lambda x=None, *_: abs(to_number(x)) if x is not None else math.nan,
        "sqrt": lambda x=None, *_: _sqrt(x),
        "max": lambda *a: _extreme(max, a, -math.inf),
        "min": lambda *a: _extreme(min, a, math.inf),
        "pow": lambda x=None, y=None, *_: js_pow(x, y) if y is not None else math.nan,
        "trunc": lambda x=None, *_: math.trunc(to_number(x)) if _finite(x) else _nan_or(x),
        "sign": lambda x=None, *_: _sign(x),
        "cbrt": lambda x=None, *_: _real(_cbrt, x),
        "exp": lambda x=None, *_: _real(math.exp, x),
        "log": lambda x=None, *_: _log(math.log, x),
        "log2": lambda x=None, *_: _log(math.log2, x),
        "log10": lambda x=None, *_: _log(math.log10, x),
        "sin": lambda x=None, *_: _real(math.sin, x),
        "cos": lambda x=None, *_: _real(math.cos, x),
        "tan": lambda x=None, *_: _real(math.tan, x),
        "asin": lambda x=None, *_: _real(math.asin, x),
        "acos": lambda x=None, *_: _real(math.acos, x),
        "atan": lambda x=None, *_: _real(math.atan, x),
        "atan2": lambda y=None, x=None, *_: (
            math.nan if y is None or x is None else _num(math.atan2(to_number(y), to_number(x)))
        ),
        "hypot": lambda *a: _real(lambda _: math.hypot(*(to_number(v) for v in a)), 0),
    },
    "Date": {
        "parse": lambda *a: _num(classes.parse_date(to_str(a[0] if a else None))),
        "UTC": lambda *a: _num(classes.new_date(None, list(a) if len(a) > 1 else [*a, 0]).ms),  # type: ignore[arg-type]
    },
    "String": {
        "fromCharCode": lambda *a: "".join(_utf16_units(a)),
        "fromCodePoint": lambda *a: "".join(_code_point(x) for x in a),
    },
    "Number": {
        "parseInt": lambda *a: _parse_int(None, list(a), {}),  # type: ignore[arg-type]
        "parseFloat": lambda *a: _parse_float(None, list(a), {}),  # type: ignore[arg-type]
        "isInteger": lambda x=None, *_: _is_number(x) and _finite(x) and float(x).is_integer(),
        "isFinite": lambda x=None, *_: _is_number(x) and _finite(x),
        "isNaN": lambda x=None, *_: _is_number(x) and x != x,
        "isSafeInteger": lambda x=None, *_: (
            _is_number(x) and _finite(x) and float(x).is_integer() and abs(x) <= 2**53 - 1
        ),
    },
}


# Values read as `Math.PI`, `Number.MAX_SAFE_INTEGER`: members of a namespace that are not
# functions.
CONSTANTS: dict[str, dict[str, Any]] = {
    "Math": {
        "PI": math.pi,
        "E": math.e,
        "LN2": math.log(2),
        "LN10": math.log(10),
        "LOG2E": 1 / math.log(2),
        "LOG10E": 1 / math.log(10),
        "SQRT2": math.sqrt(2),
        "SQRT1_2": math.sqrt(0.5),
    },
    "Number": {
        "MAX_SAFE_INTEGER": 2**53 - 1,
        "MIN_SAFE_INTEGER": -(2**53 - 1),
        "EPSILON": 2.0**-52,
        "MAX_VALUE": 1.7976931348623157e308,
        "MIN_VALUE": 5e-324,
        "POSITIVE_INFINITY": math.inf,
        "NEGATIVE_INFINITY": -math.inf,
        "NaN": math.nan,
    },
}


def _real(fn: Callable[[float], float], x: Any) -> Any:
    """A Math function of a number as JavaScript computes it: NaN for a missing argument or
    outside the function's domain, ±Infinity on overflow."""
    if x is None:
        return math.nan
    n = to_number(x)
    try:
        return _num(fn(float(n)))
    except ValueError:
        return math.nan
    except OverflowError:
        return math.inf


def _cbrt(x: float) -> float:
    """The cube root, exact for perfect cubes (`Math.cbrt(27)` is 3, as in JavaScript)."""
    c = math.cbrt(x)
    r = round(c)
    return float(r) if r**3 == x else c


def _log(fn: Callable[[float], float], x: Any) -> Any:
    """Math.log/log2/log10: -Infinity at 0, NaN below it."""
    if x is not None and to_number(x) == 0:
        return -math.inf
    return _real(fn, x)


def _from_entries(pairs: Any) -> JSObject:
    if type(pairs) is not JSArray:
        raise AgencyRuntimeError(
            f"Object.fromEntries expects an array of pairs, got {type_name(pairs)}"
        )
    out = JSObject()
    for pair in pairs:
        if type(pair) is not JSArray:
            raise AgencyRuntimeError(
                f"Object.fromEntries: each entry must be a [key, value] array, got {type_name(pair)}"
            )
        out[to_str(pair[0] if pair else None)] = pair[1] if len(pair) > 1 else None
    return out


@builtin("isNaN")
def _is_nan(m: Machine, args: list[Any], named: dict[str, Any]) -> bool:
    """The global isNaN: whether the argument, made a number, is NaN (`isNaN("abc")` is true)."""
    n = to_number(args[0]) if args else math.nan
    return n != n


@builtin("isFinite")
def _is_finite(m: Machine, args: list[Any], named: dict[str, Any]) -> bool:
    return bool(args) and _finite(args[0])


@builtin("structuredClone")
def _structured_clone(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """A deep copy of plain data (arrays and objects; other values are shared)."""
    return _clone(args[0] if args else None, 0)


def _clone(v: Any, depth: int) -> Any:
    if depth > 500:
        raise AgencyRuntimeError("structuredClone: the value is too deeply nested (or cyclic)")
    t = type(v)
    if t is JSArray:
        return JSArray(_clone(x, depth + 1) for x in v)
    if t is JSObject:
        return JSObject({k: _clone(x, depth + 1) for k, x in v.items()})
    return v


@builtin("console")
def _console_ns(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    raise AgencyRuntimeError("console is not a function (use console.log, or print)")


def _is_number(x: Any) -> bool:
    return type(x) in (int, float)


def _utf16_units(codes: tuple[Any, ...]) -> list[str]:
    """String.fromCharCode: each argument a UTF-16 code unit; surrogate pairs are joined."""
    units = [int(to_number(c)) & 0xFFFF if _finite(c) else 0 for c in codes]
    data = b"".join(u.to_bytes(2, "little") for u in units)
    return [data.decode("utf-16-le", errors="surrogatepass")]


def _code_point(x: Any) -> str:
    n = to_number(x)
    if not _finite(x) or not float(n).is_integer() or not 0 <= n <= 0x10FFFF:
        raise AgencyRuntimeError(f"String.fromCodePoint: invalid code point {to_str(x)}")
    return chr(int(n))


def _object_assign(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """Object.assign(target, ...sources): each key set through the machine, so it is recorded
    and a frozen target refuses it."""
    target = args[0] if args else None
    if type(target) is not JSObject:
        raise AgencyRuntimeError("Object.assign expects an object")
    for s in args[1:]:
        if type(s) is JSObject:
            for k, v in list(s.items()):
                m.set_key(target, k, v)
    return target


def _object_freeze(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """Object.freeze(v): later changes to the object or array `v` are refused (not to what it
    holds: JavaScript's freeze is shallow, and leaves a Set or Map as it is)."""
    v = args[0] if args else None
    if type(v) is JSObject or type(v) is JSArray:
        m.freeze(v, deep=False)
    return v


def _object_is_frozen(m: Machine, args: list[Any], named: dict[str, Any]) -> bool:
    v = args[0] if args else None
    if type(v) is JSObject or type(v) is JSArray or type(v) is JSSet or type(v) is JSMap:
        return id(v) in m.frozen
    return True  # a primitive cannot change, as JavaScript answers


def _extreme(pick: Callable[..., Any], args: tuple[Any, ...], empty: float) -> Any:
    """Math.max / Math.min: NaN if any argument is NaN, as in JavaScript."""
    nums = [to_number(x) for x in args]
    if any(n != n for n in nums):
        return math.nan
    return pick(nums, default=empty)


def _finite(x: Any) -> bool:
    n = to_number(x)
    return x is not None and n == n and n not in (math.inf, -math.inf)


def _nan_or(x: Any) -> Any:
    """What Math.floor and the like give for a value that is not a finite number: NaN for a
    missing argument (JavaScript's undefined), else the number itself (NaN, ±Infinity)."""
    return math.nan if x is None else to_number(x)


def _sqrt(x: Any) -> Any:
    n = to_number(x)
    if x is None or n != n or n < 0:
        return math.nan
    if n == math.inf:
        return n
    return _num(math.sqrt(n if type(n) is float or n < 2**53 else float(n)))


def _sign(x: Any) -> Any:
    n = to_number(x)
    if x is None or n != n:
        return math.nan
    return (n > 0) - (n < 0)


def _num(f: float) -> Any:
    return int(f) if f.is_integer() else f


def _math_random(m: Machine, args: list[Any], named: dict[str, Any]) -> float:
    """Math.random(), read through the effect journal so a replayed run gets the same number."""
    return float(observe(m, "random", {"what": "Math.random"}, random.random))


def _console(m: Machine, args: list[Any], named: dict[str, Any]) -> None:
    """console.log and its siblings print as `print` does."""
    BUILTINS["print"](m, args, named)


# Namespace members that need the machine (the clock, the journal, the output).
MACHINE_MEMBERS: dict[str, Callable[[Machine, list[Any], dict[str, Any]], Any]] = {
    "Date.now": lambda m, args, named: classes.now_ms(m),
    "Math.random": _math_random,
    "Object.assign": _object_assign,
    "Object.freeze": _object_freeze,
    "Object.isFrozen": _object_is_frozen,
    **{f"console.{k}": _console for k in ("log", "info", "debug", "warn", "error")},
}


def _register_namespaces() -> None:
    for name, fn in MACHINE_MEMBERS.items():
        BUILTINS.setdefault(name, fn)
    for ns, members in NAMESPACES.items():
        for member, fn in members.items():

            def call(m: Machine, args: list[Any], named: dict[str, Any], fn: Any = fn) -> Any:
                return fn(*args)

            BUILTINS[f"{ns}.{member}"] = call


_register_namespaces()
