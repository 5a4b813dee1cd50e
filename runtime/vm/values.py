"""Provides Agency's run-time values and their JavaScript semantics.

Values are plain Python objects chosen for speed:

- `null`/`undefined` is `None`; booleans are `bool`; strings are `str`.
- Numbers are `int` while integral arithmetic keeps them so, else `float` (JS has one number
  type; integral floats print and serialise without `.0`, so the split never shows).
- Arrays and objects are `JSArray` / `JSObject`: list and dict subclasses, owned by the
  machine, compared by identity. Their `oid` slot is filled lazily by whoever needs a stable
  name for them (the recorder, the checkpoint encoder).
- `Result` is `success(v)` / `failure(e)`; `FuncRef` names a def, node or builtin.
- `BoundFunction` is a function value derived from a `FuncRef` by `.partial()`, `.describe()`,
  `.rename()` or `.preapprove()`: the base plus what was bound, so it is plain data too.
- `Closure` is a block (`f(xs) as x { … }`, `\\x -> e`): its code's name plus the index of the
  frame that created it, whose variables it reads and writes. Plain data, so it snapshots.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

import regex

from runtime.errors import AgencyRuntimeError
from runtime.language.bytecode import FuncRef
from runtime.language.files import loads_json
from runtime.language.int_ops import exact as _exact
from runtime.language.int_ops import int_to_double
from runtime.vm import utf16
from runtime.vm.limits import REGEX_TIMEOUT_ENV, SMALL, check_string_length, regex_timeout


class JSArray(list):  # type: ignore[type-arg]
    """An Agency array: a list with identity semantics. `props` (unset on most arrays) holds
    named properties besides `length`: a regex match array's `index`, `input` and `groups`."""

    __slots__ = ("oid", "props")
    props: dict[str, Any]

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    __hash__ = object.__hash__  # type: ignore[assignment]


class JSObject(dict):  # type: ignore[type-arg]
    """An Agency object: an insertion-ordered dict with identity semantics."""

    __slots__ = ("oid",)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    __hash__ = object.__hash__  # type: ignore[assignment]


class Result:
    """`success(value)` or `failure(error)`; a failure from a def carries `.checkpoint`.

    `origin` names the def a runtime error became this failure in (`functionName`); `skipped`
    lists the (def, parameter) pairs whose calls it skipped on its way (`skippedFunctions`);
    `destructive` says it was made after destructive work had begun (`destructiveRan`)."""

    __slots__ = ("ok", "value", "error", "checkpoint", "origin", "skipped", "destructive")

    def __init__(
        self,
        ok: bool,
        value: Any = None,
        error: Any = None,
        checkpoint: Any = None,
        origin: str | None = None,
        skipped: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.ok = ok
        self.value = value
        self.error = error
        self.checkpoint = checkpoint
        self.origin = origin
        self.skipped = skipped
        self.destructive = False  # made after destructive work began (`destructiveRan`)

    def __repr__(self) -> str:
        return f"success({self.value!r})" if self.ok else f"failure({self.error!r})"


class Closure:
    """A block value: the block's code (by name) and the frame that created it (by its index in
    the frame stack; `owner` is that frame's function, checked when the block is called)."""

    __slots__ = ("name", "frame", "owner")

    def __init__(self, name: str, frame: int, owner: str) -> None:
        self.name = name
        self.frame = frame
        self.owner = owner

    def __repr__(self) -> str:
        return f"<block {self.name}>"


class BoundFunction:
    """A function derived from `base` (a FuncRef): `bound` arguments by parameter name, the tool
    `description` and `tool_name` an LLM sees, and whether its calls `preapprove` interrupts.

    Immutable: every method makes a new one, so sharing it between variables is safe."""

    __slots__ = ("base", "bound", "description", "tool_name", "preapprove")

    def __init__(
        self,
        base: FuncRef,
        bound: dict[str, Any] | None = None,
        description: str | None = None,
        tool_name: str | None = None,
        preapprove: bool = False,
    ) -> None:
        self.base = base
        self.bound = bound or {}
        self.description = description
        self.tool_name = tool_name
        self.preapprove = preapprove

    def derive(self, **changes: Any) -> BoundFunction:
        fields = {k: getattr(self, k) for k in self.__slots__ if k != "base"}
        fields.update(changes)
        return BoundFunction(self.base, **fields)

    @property
    def name(self) -> str:
        """The name an LLM sees when this function is offered as a tool."""
        return self.tool_name or self.base.name

    def __repr__(self) -> str:
        return f"<function {self.label()}>"

    def label(self) -> str:
        """How it was derived, for people: `add.partial(a: 5, xs: …).preapprove()` (containers
        as `…`: they may change while the label is shown)."""
        parts = [
            f"{k}: {stringify(v) if v is None or type(v) in (bool, int, float, str) else '…'}"
            for k, v in self.bound.items()
        ]
        text = f"{self.base.name}.partial({', '.join(parts)})" if parts else self.base.name
        if self.tool_name:
            text += f".rename({self.tool_name!r})"
        if self.description is not None:
            text += ".describe(…)"
        if self.preapprove:
            text += ".preapprove()"
        return text


FUNCTION_TYPES = (FuncRef, BoundFunction, Closure)


class JSSet(dict):  # type: ignore[type-arg]
    """An Agency `Set`: insertion-ordered, identity semantics. Maps each element's `set_key`
    to the element. Changed only through the machine (`classes.py`), so the write log sees it."""

    __slots__ = ("oid",)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    __hash__ = object.__hash__  # type: ignore[assignment]


class JSMap(dict):  # type: ignore[type-arg]
    """An Agency `Map`: maps each key's `set_key` to the pair (key, value), in insertion order."""

    __slots__ = ("oid",)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    __hash__ = object.__hash__  # type: ignore[assignment]


def set_key(v: Any) -> Any:
    """A Python dict key that compares as JavaScript's SameValueZero: `true` is not `1`, NaN is
    NaN, containers by identity."""
    t = type(v)
    if t is bool:
        return ("boolean", v)
    if t is float and v != v:
        return ("NaN",)
    return v


class JSDate:
    """An Agency `Date`: milliseconds since the epoch (NaN for an invalid date). Immutable here:
    the setters JavaScript has are not provided."""

    __slots__ = ("ms",)

    def __init__(self, ms: float) -> None:
        self.ms = ms

    def iso(self) -> str:
        import datetime

        if self.ms != self.ms:
            raise AgencyRuntimeError("Invalid time value")
        at = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=self.ms)
        return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"

    def __repr__(self) -> str:
        return f"Date({self.iso() if self.ms == self.ms else 'Invalid Date'})"


NUMBER_TYPES = (int, float)
CONTAINERS = (JSArray, JSObject)


def a_type(v: Any) -> str:
    """ "a number", "an array", … for messages."""
    name = type_name(v)
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def type_name(v: Any) -> str:
    """The JavaScript-ish name of a value's type, for error messages."""
    if v is None:
        return "null"
    t = type(v)
    if t is bool:
        return "boolean"
    if t is int or t is float:
        return "number"
    if t is str:
        return "string"
    if t is JSArray:
        return "array"
    if t is JSObject:
        return "object"
    if t is Result:
        return "result"
    if t is FuncRef or t is BoundFunction or t is Closure:
        return "function"
    if t is JSSet:
        return "Set"
    if t is JSMap:
        return "Map"
    if t is JSDate:
        return "Date"
    if hasattr(v, "js_object"):  # an object to the program (a handler's decision)
        return "object"
    return t.__name__


def truthy(v: Any) -> bool:
    """JavaScript truthiness: null, false, 0, NaN and "" are false; every container is true."""
    if v is None or v is False:
        return False
    t = type(v)
    if t is int or t is float:
        return bool(v == v and v != 0)
    if t is str:
        return bool(v != "")
    return True


def format_number(v: int | float) -> str:
    """A number as JavaScript prints it: `85`, not `85.0`; `Infinity`, `NaN`."""
    if type(v) is int:
        if -(2**53) <= v <= 2**53:
            return str(v)
        v = int_to_double(v)  # JavaScript has doubles only
    if v != v:
        return "NaN"
    if v in (math.inf, -math.inf):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "0"
    if float(v).is_integer() and abs(v) < 2**53:
        return str(int(v))
    # Shortest round-trip digits (as JavaScript), laid out the JavaScript way.
    from decimal import Decimal

    d = Decimal(repr(v))
    if 1e-6 <= abs(v) < 1e21:
        text = format(d, "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    text = format(d, "e").replace("E", "e")
    mantissa, exp = text.split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    sign = "-" if exp.startswith("-") else "+"
    return f"{mantissa}e{sign}{exp.lstrip('+-').lstrip('0') or '0'}"


_JOINING: set[int] = set()  # the arrays `to_str` is joining (the machine runs on one thread)


def to_str(v: Any) -> str:
    """String conversion as in a JavaScript template or `+` with a string."""
    t = type(v)
    if t is str:
        return v  # type: ignore[no-any-return]
    if v is None:
        return "null"
    if t is bool:
        return "true" if v else "false"
    if t is int or t is float:
        return format_number(v)
    if t is JSArray:
        if id(v) in _JOINING:  # an array inside itself joins as "", as JavaScript's join does
            return ""
        if not _JOINING:
            check_text_size(v, join=True)
        _JOINING.add(id(v))
        try:
            return ",".join("" if x is None else to_str(x) for x in v)
        finally:
            _JOINING.discard(id(v))
    if t is JSObject:
        if v.get(REGEX_TAG) is True:
            return f"/{v.get('source')}/{v.get('flags')}"
        return "[object Object]"
    if t is Result or t is FuncRef or t is BoundFunction or t is Closure:
        return stringify(v)
    if t is JSDate:
        return v.iso() if v.ms == v.ms else "Invalid Date"
    if t is JSSet or t is JSMap:
        return f"[object {type_name(v)}]"
    if hasattr(v, "js_object"):
        return "[object Object]"
    return str(v)


def display(v: Any) -> str:
    """How `print` shows a value: strings raw, everything else like console.log (JSON)."""
    if type(v) is str:
        return v
    if is_regex(v):
        return to_str(v)
    if type(v) in (JSArray, JSObject, Result):
        try:
            return stringify(v)
        except CircularError:
            return _display_cyclic(v)
    if hasattr(v, "js_object"):  # an object to the program (a handler's decision)
        return stringify(v)
    return to_str(v)


_JS_NUMBER = re.compile(r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")
_JS_RADIX = re.compile(r"0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+")


def to_number(v: Any) -> int | float:
    t = type(v)
    if t is int or t is float:
        return v  # type: ignore[no-any-return]
    if v is None:
        return 0
    if t is bool:
        return 1 if v else 0
    if t is str:
        s = v.strip()
        if s == "":
            return 0
        if not _JS_NUMBER.fullmatch(s):  # JS Number(): no `_`, `inf`, `nan`; `0x1f` is hex
            if _JS_RADIX.fullmatch(s):
                return _exact(int(s, 0))
            return math.nan
        f = float(s)
        return int(f) if f.is_integer() and abs(f) < 2**53 else f
    if t is JSArray:
        if len(v) == 0:
            return 0
        if len(v) == 1:
            return to_number(v[0])
    if t is JSDate:
        return num(float(v.ms)) if v.ms == v.ms else math.nan
    return math.nan


def num(f: float) -> int | float:
    """Normalise a float result: integral finite values become int (keeps ints fast)."""
    if f.is_integer() and abs(f) < 2**53:
        return int(f)
    return f


def js_add(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if (ta is int or ta is float) and (tb is int or tb is float):
        return a + b
    if ta is str or tb is str or ta in CONTAINERS or tb in CONTAINERS or ta is Result:
        return concat(to_str(a), to_str(b))
    return to_number(a) + to_number(b)


def concat(a: str, b: str) -> str:
    """`a + b`, refused when it would be longer than a program may build."""
    if len(a) + len(b) > SMALL:
        check_string_length(len(a) + len(b))
    if b and not b.isascii() and "\udc00" <= b[0] <= "\udfff" and "\ud800" <= a[-1:] <= "\udbff":
        return utf16.join_halves(a + b)  # two halves of a pair make the character again
    return a + b


def js_sub(a: Any, b: Any) -> Any:
    return to_number(a) - to_number(b)


def js_mul(a: Any, b: Any) -> Any:
    r = to_number(a) * to_number(b)
    return _exact(r) if type(r) is int else r


def js_div(a: Any, b: Any) -> Any:
    x, y = to_number(a), to_number(b)
    if y == 0:
        if x == 0 or x != x:
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1.0, y)
    r = x / y
    return num(r) if type(r) is float and r == r and r not in (math.inf, -math.inf) else r


def js_mod(a: Any, b: Any) -> Any:
    x, y = to_number(a), to_number(b)
    if y == 0 or x != x or y != y or x in (math.inf, -math.inf):
        return math.nan
    if type(x) is int and type(y) is int:
        r = abs(x) % abs(y)
        return -r if x < 0 else r
    return num(math.fmod(x, y))


def js_pow(a: Any, b: Any) -> Any:
    x, y = to_number(a), to_number(b)
    if type(x) is int and type(y) is int and y > 64 and abs(x) > 1:
        x = int_to_double(x)  # the exact power could have billions of digits: a double's will do
    try:
        r = x**y
    except ZeroDivisionError:
        return math.inf
    except OverflowError:
        return -math.inf if x < 0 and type(y) is int and y % 2 else math.inf
    if type(r) is complex:
        return math.nan
    return _exact(r) if type(r) is int else r


def js_eq(a: Any, b: Any) -> bool:
    """Strict equality: same type and value; arrays and objects by identity."""
    if a is b:
        return not (type(a) is float and a != a)
    ta, tb = type(a), type(b)
    if ta is tb:
        if ta in CONTAINERS or ta is Result or ta in (JSSet, JSMap, JSDate):
            return False
        return bool(a == b)
    if (ta is int or ta is float) and (tb is int or tb is float):
        return bool(a == b)
    return False


def js_ne(a: Any, b: Any) -> bool:
    return not js_eq(a, b)


def _compare_operands(a: Any, b: Any) -> tuple[Any, Any]:
    if type(a) is str and type(b) is str:
        return a, b
    return to_number(a), to_number(b)


def js_lt(a: Any, b: Any) -> bool:
    x, y = _compare_operands(a, b)
    return bool(x < y)


def js_gt(a: Any, b: Any) -> bool:
    x, y = _compare_operands(a, b)
    return bool(x > y)


def js_le(a: Any, b: Any) -> bool:
    x, y = _compare_operands(a, b)
    if x != x or y != y:
        return False
    return bool(x <= y)


def js_ge(a: Any, b: Any) -> bool:
    x, y = _compare_operands(a, b)
    if x != x or y != y:
        return False
    return bool(x >= y)


def js_neg(a: Any) -> Any:
    n = to_number(a)
    return -n if n != 0 else (0 if type(n) is int else -0.0)


def js_not(a: Any) -> bool:
    return not truthy(a)


def js_pos(a: Any) -> Any:
    return to_number(a)


def js_typeof(a: Any) -> str:
    name = type_name(a)
    if name in ("array", "result", "null", "Set", "Map", "Date"):
        return "object"
    return name


# -- regex values: `re/pattern/flags` is the object {source, flags} marked by a "$regex" key,
# plain data, so it is saved in checkpoints like any object -------------------------------------

REGEX_TAG = "$regex"
# A program's patterns run on the `regex` engine (its VERSION0 is `re`'s syntax): unlike `re` it
# takes a per-call timeout and checks for signals while it matches, so a catastrophic pattern
# cannot hang the process past Ctrl-C, SIGTERM or the time limit.
_REGEX_FLAGS = {"i": regex.IGNORECASE, "m": regex.MULTILINE, "s": regex.DOTALL}
_REGEX_CACHE: dict[tuple[str, str], regex.Pattern[str]] = {}
# JavaScript's `\k<name>` (a named group's text again) is Python's `(?P=name)`; an even run of
# backslashes before it is escaped backslashes, an odd one escapes the `\k`.
_NAMED_BACKREF = re.compile(r"(?<!\\)((?:\\\\)*)\\k<([A-Za-z_][A-Za-z0-9_]*)>")
_REGEX_CACHE_SIZE = 512  # patterns built from data (`s =~ x + i`) must not grow memory forever


def make_regex(source: str, flags: str) -> JSObject:
    compiled_regex(source, flags)  # a bad pattern is an error where it is written
    out = JSObject()
    out["source"] = source
    out["flags"] = flags
    out[REGEX_TAG] = True
    return out


def is_regex(v: Any) -> bool:
    return type(v) is JSObject and v.get(REGEX_TAG) is True


def compiled_regex(source: str, flags: str) -> regex.Pattern[str]:
    """The Python pattern for a JavaScript regex (flags i, m, s; g, u and y change nothing
    here). Run it inside a `RegexTime`, passing `timeout=clock.limit` to each call."""
    key = (source, flags)
    found = _REGEX_CACHE.get(key)
    if found is None:
        bits = regex.VERSION0
        for f in flags:
            if f not in "gimsuy":
                raise AgencyRuntimeError(f"unknown regex flag `{f}` in re/{source}/{flags}")
            bits |= _REGEX_FLAGS.get(f, 0)
        try:
            found = regex.compile(
                _NAMED_BACKREF.sub(
                    r"\1(?P=\2)",
                    source.replace("(?<", "(?P<").replace("(?P<=", "(?<=").replace("(?P<!", "(?<!"),
                ),
                bits,
            )
        except (regex.error, ValueError, OverflowError, RecursionError) as exc:
            raise AgencyRuntimeError(f"bad regex re/{source}/{flags}: {exc}") from None
        if len(_REGEX_CACHE) >= _REGEX_CACHE_SIZE:
            _REGEX_CACHE.clear()
        _REGEX_CACHE[key] = found
    return found


class RegexTime:
    """The time limit on a program's regex, `limits.regex_timeout()` seconds for each call into
    the engine (one search, or all the matches of one global `match`, `matchAll` or `replace`):
    calls pass `timeout=clock.limit`, and a timeout leaves the `with` block as a runtime error
    naming the pattern and the limit. A limit per call, not per operation, so a `split` of a
    long string into a million pieces is never cut short by its own loop's time."""

    __slots__ = ("source", "flags", "limit")

    def __init__(self, source: str, flags: str = "") -> None:
        self.source = source
        self.flags = flags
        self.limit = regex_timeout()

    def __enter__(self) -> RegexTime:
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if kind is TimeoutError:
            raise AgencyRuntimeError(
                f"the regex re/{self.source}/{self.flags} took longer than the {self.limit:g} s "
                f"a regex may take (its pattern backtracks too much on this input; set "
                f"{REGEX_TIMEOUT_ENV} to allow more)"
            ) from None


def regex_test(r: Any, s: Any) -> bool:
    """`s =~ r`: whether the regex `r` (or a pattern string) matches somewhere in `s`."""
    if is_regex(r):
        source, flags = str(r["source"]), str(r["flags"])
    elif type(r) is str:
        source, flags = r, ""
    else:
        raise AgencyRuntimeError(f"`=~` needs a regex on its right, like re/abc/, not {a_type(r)}")
    pattern = compiled_regex(source, flags)
    with RegexTime(source, flags) as clock:
        return pattern.search(s if type(s) is str else to_str(s), timeout=clock.limit) is not None


def js_in(key: Any, obj: Any) -> bool:
    """`key in obj`: whether an object has the property `key` (an array: the index, or
    `length`), as JavaScript's `in`; any other right side is an error."""
    t = type(obj)
    if t is JSObject:
        return to_str(key) in obj
    if t is JSArray:
        if key == "length":
            return True
        n = to_number(key)
        return type(key) is not bool and n == n and float(n).is_integer() and 0 <= n < len(obj)
    raise AgencyRuntimeError(f"cannot use `in` to look for a key in {a_type(obj)}")


def _is_error(v: Any) -> bool:
    """An Error value: `new Error(m)` (or an error a builtin made) is the plain object
    {name: "…Error", message}, so the shape is what marks it."""
    name = v.get("name")
    return type(name) is str and name.endswith("Error") and type(v.get("message")) is str


# What `x instanceof C` tests for each class a program can name (classes are builtins here;
# Agency has no user classes). Primitives are instances of nothing, as in JavaScript.
_INSTANCE_TESTS: dict[str, Callable[[Any], bool]] = {
    "Object": lambda v: v is not None and type(v) not in (bool, int, float, str),
    "Array": lambda v: type(v) is JSArray,
    "Set": lambda v: type(v) is JSSet,
    "Map": lambda v: type(v) is JSMap,
    "Date": lambda v: type(v) is JSDate,
    "RegExp": lambda v: is_regex(v),
    "Error": lambda v: type(v) is JSObject and _is_error(v),
    "URL": lambda v: type(v) is JSObject and type(v.get("searchParams")) is JSMap,
    "String": lambda v: False,
    "Number": lambda v: False,
    "Boolean": lambda v: False,
}


def js_instanceof(a: Any, cls: Any) -> bool:
    """`a instanceof C` for the built-in classes; any other right side is an error, as
    JavaScript's TypeError for a right side that is not a constructor."""
    test = _INSTANCE_TESTS.get(cls.name) if type(cls) is FuncRef else None
    if test is None:
        what = f"the function `{cls.name}`" if type(cls) is FuncRef else a_type(cls)
        if type(cls) in (BoundFunction, Closure):
            what = "a function"
        known = ", ".join(sorted(_INSTANCE_TESTS))
        raise AgencyRuntimeError(
            f"the right side of `instanceof` must be a class ({known}), not {what}"
        )
    return test(a)


def js_void(a: Any) -> None:
    return None


BINARY_OPS = {
    "+": js_add,
    "-": js_sub,
    "*": js_mul,
    "/": js_div,
    "%": js_mod,
    "**": js_pow,
    "==": js_eq,
    "===": js_eq,
    "!=": js_ne,
    "!==": js_ne,
    "<": js_lt,
    ">": js_gt,
    "<=": js_le,
    ">=": js_ge,
    "=~": lambda a, b: regex_test(b, a),
    "!~": lambda a, b: not regex_test(b, a),
    "in": js_in,
    "instanceof": js_instanceof,
}

UNARY_OPS = {"-": js_neg, "!": js_not, "+": js_pos, "typeof": js_typeof, "void": js_void}


# --------------------------------------------------------------------------------------------
# JSON


def js_keys(obj: dict[Any, Any]) -> list[Any]:
    """An object's keys in JavaScript's order: the array-index keys (`"0"`, `"2"`, `"10"`)
    first, ascending, then the others in insertion order, as Object.keys, JSON.stringify and
    the spread list them (counts keyed by number print as `{"1":…,"2":…,"3":…}`)."""
    keys = list(obj)
    if not any(type(k) is str and k[:1].isdigit() for k in keys):
        return keys
    index = [k for k in keys if _is_index_key(k)]
    if not index:
        return keys
    index.sort(key=int)
    return index + [k for k in keys if not _is_index_key(k)]


def _is_index_key(k: Any) -> bool:
    """`k` is a canonical array index: decimal digits, no leading zero, below 2**32 - 1."""
    return (
        type(k) is str
        and k.isascii()
        and k.isdigit()
        and (k == "0" or k[0] != "0")
        and int(k) < 4294967295
    )


def to_plain(v: Any, _depth: int = 0) -> Any:
    """A value as plain JSON data (JavaScript JSON.stringify rules): integral numbers as int,
    non-finite numbers as None, Results as {success, value|error}, functions dropped (None)."""
    if _depth > 500:
        raise NestingError("value is too deeply nested (or cyclic) to convert to JSON")
    t = type(v)
    if v is None or t is bool or t is str:
        return v
    if t is int:
        if -(2**53) <= v <= 2**53:
            return v
        f = int_to_double(v)
        return None if f in (math.inf, -math.inf) else _json_int(f) if abs(f) < 1e21 else f
    if t is float:
        if v != v or v in (math.inf, -math.inf):
            return None
        return _json_int(v) if v.is_integer() and abs(v) < 1e21 else v
    if t is JSArray or t is list or t is tuple:
        return [to_plain(x, _depth + 1) for x in v]
    if t is JSObject:
        return {
            str(k): to_plain(x, _depth + 1)
            for k in js_keys(v)
            if type(x := v[k]) not in FUNCTION_TYPES
        }
    if t is dict:
        return {
            str(k): to_plain(x, _depth + 1) for k, x in v.items() if type(x) not in FUNCTION_TYPES
        }
    if t is Result:
        return result_plain(v, to_plain(v.value if v.ok else v.error, _depth + 1))
    if t is FuncRef or t is BoundFunction or t is Closure:
        return None
    if t is JSDate:  # JSON.stringify uses toJSON: the ISO text (null when invalid)
        return v.iso() if v.ms == v.ms else None
    if t is JSSet or t is JSMap:  # as JSON.stringify: no enumerable properties
        return {}
    as_object = getattr(v, "js_object", None)  # a value a program sees as an object
    if as_object is not None:
        return to_plain(as_object(), _depth + 1)
    return str(v)


def result_plain(r: Result, inner: Any) -> dict[str, Any]:
    """A Result as JSON, in the reference's shape (`inner`: its value or error, as JSON).

    A failure's checkpoint is written as null: it is a whole machine state, restored through
    the live value (`r.checkpoint`), and would swamp every printed failure."""
    if r.ok:
        return {"__type": "resultType", "success": True, "value": inner}
    return {
        "__type": "resultType",
        "success": False,
        "error": inner,
        "checkpoint": None,
        "neverStarted": False,
        "destructiveRan": r.destructive,
        "functionName": r.origin,
        "args": None,
        "skippedFunctions": [{"name": n, "param": p} for n, p in r.skipped],
    }


def _json_int(f: float) -> int:
    """The integer JavaScript writes for an integral double (shortest digits, zero padded)."""
    if abs(f) < 2**53:
        return int(f)
    from decimal import Decimal

    return int(Decimal(repr(f)))


def _least_text(v: Any, join: bool, memo: dict[int, int], depth: int) -> int:
    """At least how many characters `v` writes as JSON (or, `join`, as an array's `join`),
    counting a value each time it is reached: a value holding the same array twice, forty
    levels deep, writes 2**40 copies of it from a few hundred bytes of heap. Linear in the
    distinct containers (memo by identity); a cycle adds nothing (it is refused or marked
    elsewhere) and past depth 500 nothing is counted (`to_plain` refuses that)."""
    t = type(v)
    if t is str:
        return len(v) if join else len(v) + 2
    if t is JSArray or t is list or t is tuple or t is JSObject or t is dict or t is Result:
        key = id(v)
        known = memo.get(key)
        if known is not None:
            return known
        if depth > 500:
            return 0
        memo[key] = 0
        if t is Result:
            n = 20 + _least_text(v.value if v.ok else v.error, join, memo, depth + 1)
        elif t is JSObject or t is dict:
            if join:
                n = 15  # [object Object]
            else:
                n = 1
                for k, x in v.items():
                    if type(x) not in FUNCTION_TYPES:
                        n += len(str(k)) + 4 + _least_text(x, join, memo, depth + 1)
        else:
            n = max(len(v) - 1, 0) if join else len(v) + 1
            for x in v:
                if x is not None and type(x) is not int and type(x) is not float:
                    n += _least_text(x, join, memo, depth + 1)
                elif not join or x is not None:
                    n += 1
        memo[key] = n
        return n
    return 0 if join and v is None else 1


def check_text_size(v: Any, join: bool = False) -> None:
    """Refuse writing `v` as text (JSON, or an array's join) that would be longer than the
    string limit, before building any of it."""
    t = type(v)
    if t is JSArray or t is JSObject or t is Result or t is list or t is dict:
        n = _least_text(v, join, {}, 0)
        if n > SMALL:
            check_string_length(n)


def stringify(v: Any, indent: int | str | None = None) -> str:
    """JSON.stringify: no spaces, keys in insertion order, non-ASCII kept."""
    if type(v) in FUNCTION_TYPES:
        return "undefined"
    check_text_size(v)
    try:
        plain = to_plain(v)
    except (NestingError, RecursionError):
        path = cycle_path(v)
        if path is None:
            raise
        raise CircularError(
            "JSON.stringify cannot convert a circular structure: "
            f"{'value' + ''.join(path)} refers back to an object that contains it"
        ) from None
    if type(indent) is int or type(indent) is float:
        indent = " " * int(min(10, max(0, indent))) if indent == indent else ""
    pad = indent[:10] if type(indent) is str else ""
    return _json_text(plain, pad, "")


_SURROGATE = re.compile("[\ud800-\udfff]")


def _json_string(s: str) -> str:
    """A JSON string literal, non-ASCII kept; a lone surrogate escaped (`\\ud800`), as
    JavaScript's JSON.stringify writes it, so the text always has a UTF-8 form."""
    text = json.dumps(s, ensure_ascii=False)
    if text.isascii():
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _json_text(v: Any, pad: str, at: str) -> str:
    """Plain data as JSON text, numbers written the JavaScript way (`1e-7`, not `1e-07`)."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    t = type(v)
    if t is str:
        return _json_string(v)
    if t is int or t is float:
        return format_number(v)
    if t is _Raw:
        return str(v)
    inner = at + pad
    if t is list:
        items = [_json_text(x, pad, inner) for x in v]
        if not items:
            return "[]"
        if not pad:
            return "[" + ",".join(items) + "]"
        return "[\n" + inner + (",\n" + inner).join(items) + "\n" + at + "]"
    pairs = [
        _json_string(str(k)) + (": " if pad else ":") + _json_text(x, pad, inner)
        for k, x in v.items()
    ]
    if not pairs:
        return "{}"
    if not pad:
        return "{" + ",".join(pairs) + "}"
    return "{\n" + inner + (",\n" + inner).join(pairs) + "\n" + at + "}"


class NestingError(AgencyRuntimeError):
    """A value too deeply nested, or cyclic, to convert to JSON."""


class CircularError(NestingError):
    """A cyclic value where JSON needs a tree (JavaScript's "Converting circular structure")."""


class _Raw(str):
    """Text `_json_text` writes as it is (a `[Circular *1]` marker)."""


def _children(v: Any) -> list[tuple[str, Any]] | None:
    """The (path step, value) pairs a container holds, as JSON sees them; None for a leaf."""
    t = type(v)
    if t is JSArray or t is list:
        return [(f"[{i}]", x) for i, x in enumerate(v)]
    if t is JSObject or t is dict:
        return [
            (f".{k}" if str(k).isidentifier() else f"[{json.dumps(str(k))}]", x)
            for k, x in v.items()
            if type(x) not in FUNCTION_TYPES
        ]
    if t is Result:
        return [(".value", v.value)] if v.ok else [(".error", v.error)]
    return None


def cycle_path(v: Any) -> tuple[str, ...] | None:
    """The path (`.a[0].self`) of the first reference in `v` back to a container that holds
    it, or None when `v` has no cycle (however deep or shared). Depth first, without Python
    recursion; a container explored once is not explored again, so shared parts cost once."""
    on_path: set[int] = set()
    done: set[int] = set()
    stack: list[tuple[Any, tuple[str, ...], bool]] = [(v, (), False)]
    while stack:
        node, path, leaving = stack.pop()
        if leaving:
            on_path.discard(id(node))
            done.add(id(node))
            continue
        if id(node) in done:
            continue
        kids = _children(node)
        if kids is None:
            continue
        if id(node) in on_path:
            return path
        on_path.add(id(node))
        stack.append((node, path, True))
        for step, x in reversed(kids):
            stack.append((x, path + (step,), False))
    return None


def _display_cyclic(v: Any) -> str:
    """How `print` shows a cyclic value: as JSON, with each reference back to a container that
    holds it written `[Circular *n]` and that container marked `<ref *n>`, as console.log
    marks them."""
    targets: dict[int, int] = {}
    on_path: set[int] = set()

    def plain(x: Any, depth: int) -> Any:
        kids = _children(x)
        if kids is None:
            return to_plain(x, depth)
        if id(x) in on_path:
            return _Raw(f"[Circular *{targets.setdefault(id(x), len(targets) + 1)}]")
        if depth > 500:
            raise NestingError("value is too deeply nested to show")
        on_path.add(id(x))
        try:
            t = type(x)
            if t is JSArray or t is list:
                out: Any = [plain(y, depth + 1) for y in x]
            elif t is Result:
                out = result_plain(x, plain(x.value if x.ok else x.error, depth + 1))
            else:
                keys = js_keys(x) if t is JSObject else list(x)
                out = {
                    str(k): plain(y, depth + 1)
                    for k in keys
                    if type(y := x[k]) not in FUNCTION_TYPES
                }
        finally:
            on_path.discard(id(x))
        n = targets.get(id(x))
        return out if n is None else _Raw(f"<ref *{n}> " + _json_text(out, "", ""))

    return _json_text(plain(v, 0), "", "")


def from_plain(v: Any) -> Any:
    """Plain JSON data (from json.loads, a provider, a mock file) as Agency values."""
    t = type(v)
    if t is dict:
        return JSObject((k, from_plain(x)) for k, x in v.items())
    if t is list:
        return JSArray(from_plain(x) for x in v)
    if t is float:
        return num(v)
    return v


def parse_json(text: str) -> Any:
    try:
        return from_plain(loads_json(text))
    except (json.JSONDecodeError, RecursionError) as exc:
        raise AgencyRuntimeError(f"JSON.parse: invalid JSON ({exc})") from None
