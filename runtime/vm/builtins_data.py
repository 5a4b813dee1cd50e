"""Provides the builtins over plain data: `range`, `keys`/`values`/`entries`, `len`, the
conversions (`String`, `Number`, `parseInt`, …) and the `JSON`, `Object` and `Math` namespaces."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.vm import classes
from runtime.vm.builtin_base import BUILTINS as BUILTINS
from runtime.vm.builtin_base import builtin
from runtime.vm.limits import SMALL, check_array_length
from runtime.vm.values import (
    JSArray,
    JSObject,
    js_pow,
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
    nums = [integer(a) for a in args]
    if not nums:
        raise AgencyRuntimeError("range() needs at least one argument")
    if len(nums) >= 3 and nums[2] == 0:
        raise AgencyRuntimeError("range(): the step cannot be 0")
    span = range(nums[0]) if len(nums) == 1 else range(*nums[:3])
    if len(span) > SMALL:
        check_array_length(len(span))
    return JSArray(span)


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
        return JSArray(obj.keys())
    if type(obj) is JSArray:
        return JSArray(str(i) for i in range(len(obj)))
    raise AgencyRuntimeError(f"keys() expects an object, got {type_name(obj)}")


@builtin("values")
def _values(m: Machine, args: list[Any], named: dict[str, Any]) -> JSArray:
    obj = args[0] if args else None
    if type(obj) is JSObject:
        return JSArray(obj.values())
    if type(obj) is JSArray:
        return JSArray(obj)
    raise AgencyRuntimeError(f"values() expects an object, got {type_name(obj)}")


@builtin("entries")
def _entries(m: Machine, args: list[Any], named: dict[str, Any]) -> JSArray:
    obj = args[0] if args else None
    if type(obj) is not JSObject:
        raise AgencyRuntimeError(f"entries() expects an object, got {type_name(obj)}")
    return JSArray(JSArray([k, v]) for k, v in obj.items())


@builtin("len")
def _len(m: Machine, args: list[Any], named: dict[str, Any]) -> int:
    v = args[0] if args else None
    if isinstance(v, (JSArray, str, JSObject)):
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
    digits = ""
    for i, ch in enumerate(text):
        if ch.isdigit() or (i == 0 and ch in "+-"):
            digits += ch
        else:
            break
    if digits in ("", "+", "-"):
        return math.nan
    return int(digits) if len(digits) <= 16 else num_of_text(digits)


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
        "assign": lambda *a: _object_assign(*a),
    },
    "Array": {
        "from": classes.array_from,
        "isArray": lambda *a: bool(a) and type(a[0]) is JSArray,
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
    },
    "String": {
        "fromCharCode": lambda *a: "".join(_utf16_units(a)),
        "fromCodePoint": lambda *a: "".join(_code_point(x) for x in a),
    },
    "Number": {
        "isInteger": lambda x=None, *_: _is_number(x) and _finite(x) and float(x).is_integer(),
        "isFinite": lambda x=None, *_: _is_number(x) and _finite(x),
        "isNaN": lambda x=None, *_: _is_number(x) and x != x,
        "isSafeInteger": lambda x=None, *_: (
            _is_number(x) and _finite(x) and float(x).is_integer() and abs(x) <= 2**53 - 1
        ),
    },
}


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


def _object_assign(target: Any = None, *sources: Any) -> Any:
    if type(target) is not JSObject:
        raise AgencyRuntimeError("Object.assign expects an object")
    for s in sources:
        if type(s) is JSObject:
            target.update(s)
    return target


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


def _register_namespaces() -> None:
    for ns, members in NAMESPACES.items():
        for member, fn in members.items():

            def call(m: Machine, args: list[Any], named: dict[str, Any], fn: Any = fn) -> Any:
                return fn(*args)

            BUILTINS[f"{ns}.{member}"] = call


_register_namespaces()
