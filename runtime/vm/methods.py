"""Provides member access and the methods of Agency values: `obj.name`, the array and string
methods, and the methods of function values (`f.partial(a: 1)`, `.describe`, `.rename`,
`.preapprove`)."""

from __future__ import annotations

import decimal
import math
import unicodedata
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.language.bytecode import FuncRef
from runtime.vm import builtins_values, classes, regex_methods, termcolor, utf16
from runtime.vm.builtin_base import BUILTINS as BUILTINS
from runtime.vm.builtin_base import arg
from runtime.vm.frames import Decision, TailCall
from runtime.vm.limits import SMALL, check_array_length, check_string_length
from runtime.vm.number_text import NUMBER_TEXT
from runtime.vm.termcolor import is_color
from runtime.vm.utf16 import BMP_BELOW
from runtime.vm.values import (
    FUNCTION_TYPES,
    BoundFunction,
    JSArray,
    JSObject,
    Result,
    a_type,
    format_number,
    is_regex,
    js_eq,
    stringify,
    to_number,
    to_str,
    type_name,
)

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

from runtime.vm.builtins_data import CONSTANTS, MACHINE_MEMBERS, NAMESPACES, integer

# -- members and methods ------------------------------------------------------------------------


def get_member(obj: Any, name: str) -> Any:
    """`obj.name` for every kind of value."""
    t = type(obj)
    if t is JSObject:
        return obj.get(name)
    if t is JSArray:
        if name == "length":
            return len(obj)
        props = getattr(obj, "props", None)  # a match array's index, input and groups
        return props.get(name) if props else None
    if t is str:
        if name == "length":
            return (
                len(obj)
                if obj.isascii() or obj.__sizeof__() - 4 * len(obj) < BMP_BELOW
                else utf16.length(obj)
            )
        return None
    if t is Result:
        if name == "value":
            return obj.value
        if name == "error":
            return obj.error
        if name == "checkpoint":
            return obj.checkpoint
        if name == "success":
            return obj.ok
        if name == "skippedFunctions":
            return JSArray(JSObject({"name": n, "param": p}) for n, p in obj.skipped)
        if name == "functionName":
            return obj.origin
        if name == "destructiveRan":
            return obj.destructive
        if name == "neverStarted":
            return False if not obj.ok else None
        return None
    if obj is None:
        raise AgencyRuntimeError(f"Cannot read properties of null (reading '{name}')")
    if t is FuncRef or t is BoundFunction:
        if is_color(obj):
            return termcolor.member(obj, name)
    if t is FuncRef:
        if name == "name":
            return obj.name
        if obj.name in NAMESPACES and name in NAMESPACES[obj.name]:
            return FuncRef(f"{obj.name}.{name}")
        if f"{obj.name}.{name}" in MACHINE_MEMBERS:
            return FuncRef(f"{obj.name}.{name}")
        constants = CONSTANTS.get(obj.name)
        return constants.get(name) if constants is not None else None
    if t is BoundFunction:
        if name == "description":  # what .describe(...) gave it (a tool's description)
            return obj.description
        return obj.name if name == "name" else None
    if t in classes.CLASS_TYPES:
        return classes.get_member(obj, name)
    if t is Decision:
        if name == "action" or name == "type":
            return obj.action
        if name == "value":
            return obj.value
    return None


def error_preview(error: Any) -> str:
    """A failure's error as the reference quotes it in a message: text as it is, anything else
    as JSON, cut at 200 characters."""
    text = error if type(error) is str else stringify(error)
    return text[:200] + "..." if len(text) > 200 else text


def call_method(m: Machine, obj: Any, name: str, args: list[Any] | None) -> Any:
    """`obj.name` when `args` is None, else `obj.name(*args)`."""
    if args is None:
        return get_member(obj, name)
    t = type(obj)
    if t is JSArray:
        fn = ARRAY_METHODS.get(name)
        if fn is not None:
            return fn(m, obj, args)
    elif t is str:
        fn2 = STRING_METHODS.get(name)
        if fn2 is not None:
            return fn2(obj, args)
    elif t is int or t is float:
        text = NUMBER_TEXT.get(name)
        if text is not None:
            return text(obj, args)
        if name == "toString":
            if args and args[0] is not None and integer(args[0]) != 10:
                return _radix(obj, integer(args[0]))
            return format_number(obj)
        if name == "toLocaleString":
            return _locale_number(obj)
    elif t in classes.CLASS_TYPES:
        return classes.call_method(m, obj, name, args)
    elif (t is FuncRef or t is BoundFunction) and is_color(obj):
        return termcolor.method(obj, name, args)
    elif t is FuncRef and f"{obj.name}.{name}" in MACHINE_MEMBERS:
        return MACHINE_MEMBERS[f"{obj.name}.{name}"](m, args, {})
    elif t is FuncRef and obj.name in NAMESPACES:
        ns = NAMESPACES[obj.name]
        if name in ns:
            return ns[name](*args)
    elif t is JSObject:
        if is_regex(obj):
            return builtins_values.regex_method(obj, name, args)
        if name == "hasOwnProperty":
            return to_str(args[0] if args else None) in obj
        if name == "toString":
            return to_str(obj)
    elif obj is None:
        raise AgencyRuntimeError(f"Cannot read properties of null (reading '{name}')")
    if t is not JSObject and name == "toString":
        return to_str(obj)
    if t is Result:  # the reference's words (its failure-propagation checks)
        if obj.ok:
            raise AgencyRuntimeError(
                f"called '.{name}()' on a success Result. Did you mean .value.{name}(...)?"
            )
        raise AgencyRuntimeError(
            f"called '.{name}()' on a failure produced by '{obj.origin or '(unknown)'}' "
            f"({error_preview(obj.error)}). Check the Result before using it."
        )
    raise AgencyRuntimeError(f"{a_type(obj)} has no method `{name}`")


def _radix(n: float, base: int) -> str:
    """`n.toString(base)` for an integral number (2 to 36); other numbers in base 10."""
    if not 2 <= base <= 36:
        raise AgencyRuntimeError(f"toString() radix must be between 2 and 36, got {base}")
    if n != n or n in (math.inf, -math.inf) or not float(n).is_integer():
        return format_number(n)
    k, digits = abs(int(n)), ""
    while True:
        k, r = divmod(k, base)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[r] + digits
        if k == 0:
            break
    return ("-" if n < 0 else "") + digits


def _locale_number(n: float) -> str:
    """`n.toLocaleString()` as en-US writes it: thousands grouped, at most 3 decimals."""
    if n != n or n in (math.inf, -math.inf):
        return {math.inf: "∞", -math.inf: "-∞"}.get(n, "NaN")
    q = decimal.Decimal(n).quantize(decimal.Decimal("0.001"), rounding=decimal.ROUND_HALF_UP)
    whole, _, frac = f"{abs(q):f}".partition(".")
    frac = frac.rstrip("0")
    text = f"{int(whole):,}" + (f".{frac}" if frac else "")
    return ("-" if q < 0 else "") + text


def _a(args: list[Any], i: int, default: Any = None) -> Any:
    return args[i] if i < len(args) else default


def _slice_index(v: Any, n: int, default: int) -> int:
    if v is None:
        return default
    i = integer(v)
    if i < 0:
        i = max(n + i, 0)
    return min(i, n)


def _arr_push(m: Machine, arr: JSArray, args: list[Any]) -> int:
    return m.push(arr, args)


def _arr_pop(m: Machine, arr: JSArray, args: list[Any]) -> Any:
    if not arr:
        return None
    return m.splice(arr, len(arr) - 1, 1, ())[0]


def _arr_shift(m: Machine, arr: JSArray, args: list[Any]) -> Any:
    if not arr:
        return None
    return m.splice(arr, 0, 1, ())[0]


def _arr_unshift(m: Machine, arr: JSArray, args: list[Any]) -> int:
    m.splice(arr, 0, 0, tuple(args))
    return len(arr)


def _arr_splice(m: Machine, arr: JSArray, args: list[Any]) -> JSArray:
    n = len(arr)
    start = _slice_index(_a(args, 0, 0), n, 0)
    count = n - start if len(args) < 2 else max(0, min(integer(args[1]), n - start))
    return m.splice(arr, start, count, tuple(args[2:]))


def _arr_concat(arr: JSArray, args: list[Any]) -> JSArray:
    n = len(arr) + sum(len(v) if type(v) is JSArray else 1 for v in args)
    if n > SMALL:
        check_array_length(n)
    return JSArray([*arr, *(x for v in args for x in (v if type(v) is JSArray else [v]))])


def _arr_index_of(arr: JSArray, x: Any) -> int:
    for i, v in enumerate(arr):
        if js_eq(v, x):
            return i
    return -1


def _arr_join(m: Machine, arr: JSArray, args: list[Any]) -> str:
    sep = "," if not args or args[0] is None else to_str(args[0])
    return checked(sep.join("" if v is None else to_str(v) for v in arr))


def checked(s: str) -> str:
    """`s`, refused when longer than a program may build (after the fact: for results at most
    a few times their inputs' size). Every join of strings (templates, `join`, `concat`,
    `replace`) ends here, so the two halves of a surrogate pair it put side by side become the
    character again (utf16.mend)."""
    if len(s) > SMALL:
        check_string_length(len(s))
    return s if s.isascii() else utf16.mend(s)


def _arr_sort(m: Machine, arr: JSArray, args: list[Any]) -> Any:
    if args and type(args[0]) in FUNCTION_TYPES:
        return TailCall("__sort_by", [arr, args[0]])
    items = sorted(arr, key=lambda v: (v is None, to_str(v)))
    m.splice(arr, 0, len(arr), tuple(items))
    return arr


def _arr_fill(m: Machine, arr: JSArray, args: list[Any]) -> JSArray:
    """`a.fill(v, start?, end?)`: sets the elements in place and returns the array."""
    n = len(arr)
    start, end = _slice_index(_a(args, 1), n, 0), _slice_index(_a(args, 2), n, n)
    if start < end:
        m.splice(arr, start, end - start, (_a(args, 0),) * (end - start))
    return arr


def _arr_to_sorted(m: Machine, arr: JSArray, args: list[Any]) -> Any:
    """`a.toSorted(cmp?)`: a sorted copy."""
    return _arr_sort(m, JSArray(arr), args)


def _arr_reverse(m: Machine, arr: JSArray, args: list[Any]) -> JSArray:
    m.splice(arr, 0, len(arr), tuple(reversed(arr)))
    return arr


def _arr_flat(m: Machine, arr: JSArray, args: list[Any]) -> JSArray:
    out = JSArray()
    for v in arr:
        if type(v) is JSArray:
            out.extend(v)
        else:
            out.append(v)
    return out


def _prelude(name: str) -> Callable[[Machine, JSArray, list[Any]], Any]:
    def method(m: Machine, arr: JSArray, args: list[Any]) -> Any:
        return TailCall(name, [arr, *args])

    return method


ARRAY_METHODS: dict[str, Callable[[Machine, JSArray, list[Any]], Any]] = {
    "push": _arr_push,
    "pop": _arr_pop,
    "shift": _arr_shift,
    "unshift": _arr_unshift,
    "splice": _arr_splice,
    "includes": lambda m, a, args: _arr_index_of(a, _a(args, 0)) >= 0,
    "indexOf": lambda m, a, args: _arr_index_of(a, _a(args, 0)),
    "lastIndexOf": lambda m, a, args: (
        len(a) - 1 - _arr_index_of(JSArray(reversed(a)), _a(args, 0))
        if _arr_index_of(a, _a(args, 0)) >= 0
        else -1
    ),
    "join": _arr_join,
    "slice": lambda m, a, args: JSArray(
        a[_slice_index(_a(args, 0), len(a), 0) : _slice_index(_a(args, 1), len(a), len(a))]
    ),
    "concat": lambda m, a, args: _arr_concat(a, args),
    "at": lambda m, a, args: (
        a[integer(_a(args, 0, 0))] if -len(a) <= integer(_a(args, 0, 0)) < len(a) else None
    ),
    "reverse": _arr_reverse,
    "sort": _arr_sort,
    "fill": _arr_fill,
    "toSorted": _arr_to_sorted,
    "toReversed": lambda m, a, args: JSArray(reversed(a)),
    "flat": _arr_flat,
    "toString": lambda m, a, args: to_str(a),
    "map": _prelude("__arr_map"),
    "filter": _prelude("__arr_filter"),
    "reduce": _prelude("__arr_reduce"),
    "reduceRight": _prelude("__arr_reduceRight"),
    "flatMap": _prelude("__arr_flatMap"),
    "find": _prelude("__arr_find"),
    "findIndex": _prelude("__arr_findIndex"),
    "findLast": _prelude("__arr_findLast"),
    "findLastIndex": _prelude("__arr_findLastIndex"),
    "some": _prelude("__arr_some"),
    "every": _prelude("__arr_every"),
    "forEach": _prelude("__arr_forEach"),
}


def _str_replace(s: str, args: list[Any], count: int) -> str:
    old, new = to_str(_a(args, 0, "")), to_str(_a(args, 1, ""))
    if "$" not in new:
        return s.replace(old, new, count) if count > 0 else s.replace(old, new)
    # JavaScript replacement patterns: `$$` `$&` `` $` `` `$'`.
    out, start, done = [], 0, 0
    while count == 0 or done < count:
        i = s.find(old, start)
        if i < 0:
            break
        out.extend([s[start:i], _substitution(new, old, s[:i], s[i + len(old) :])])
        done += 1
        start = i + len(old)
        if not old:  # an empty pattern matches between every two characters
            if i >= len(s):
                break
            out.append(s[i])
            start += 1
    return "".join(out) + s[start:]


def _substitution(template: str, matched: str, before: str, after: str) -> str:
    parts = {"$": "$", "&": matched, "`": before, "'": after}
    out, i = [], 0
    while i < len(template):
        c = template[i]
        if c == "$" and i + 1 < len(template) and template[i + 1] in parts:
            out.append(parts[template[i + 1]])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _repeat(s: str, count: Any) -> str:
    n = to_number(count)
    if n != n:
        n = 0
    if n < 0 or n == math.inf:
        raise AgencyRuntimeError(
            f"repeat() count must be a finite number of 0 or more, got {to_str(count)}"
        )
    n = int(n)
    if n * len(s) > SMALL:
        check_string_length(n * len(s))
    return s * n


def _pad(s: str, args: list[Any], start: bool) -> str:
    """padStart/padEnd: widths count UTF-16 code units, and the fill is cut by them."""
    width = integer(_a(args, 0, 0))
    fill = " " if _a(args, 1) is None else to_str(args[1])
    n = utf16.length(s)
    if width <= n or not fill:
        return s
    if width > SMALL:
        check_string_length(width)
    need = width - n
    repeated = fill * (need // utf16.length(fill) + 1)
    padding = utf16.cut(repeated, 0, need)
    return padding + s if start else s + padding


def _str_split(s: str, args: list[Any]) -> JSArray:
    sep = _a(args, 0)
    if sep is None:
        return JSArray([s])
    if is_regex(sep):
        return regex_methods.split(s, args)
    sep = to_str(sep)
    if len(s) > SMALL:  # counted before the parts are made: 100M one-character strings are 6 GB
        check_array_length(len(s) if sep == "" else s.count(sep) + 1)
    parts = utf16.units_list(s) if sep == "" else s.split(sep)
    if len(args) > 1 and args[1] is not None:
        parts = parts[: max(0, integer(args[1]))]
    return JSArray(parts)


def _position(s: str, args: list[Any], at_end: bool) -> int:
    """The optional second argument of indexOf/includes/startsWith/endsWith (a UTF-16 position,
    clamped to the string) as a Python index; absent, the start (or the end)."""
    v = _a(args, 1)
    x = math.nan if v is None else to_number(v)
    if x != x:
        return len(s) if at_end else 0
    if s.isascii() or s.__sizeof__() - 4 * len(s) < BMP_BELOW:
        return int(min(max(x, 0), len(s)))
    return utf16.to_index(s, int(min(max(x, 0), utf16.length(s))))


def _index_of(s: str, args: list[Any]) -> int:
    needle = to_str(_a(args, 0, ""))
    if len(args) < 2:
        found = s.find(needle)
    else:
        found = s.find(needle, _position(s, args, False))
    return found if found <= 0 else utf16.to_unit_index(s, found)


def _last_index_of(s: str, args: list[Any]) -> int:
    v = _a(args, 1)
    x = math.nan if v is None else to_number(v)
    needle = to_str(_a(args, 0, ""))
    if x == x:  # JavaScript: the last match starting at or before this position
        end = utf16.to_index(s, int(min(max(x, 0), utf16.length(s)))) + len(needle)
        return utf16.to_unit_index(s, s.rfind(needle, 0, end))
    return utf16.to_unit_index(s, s.rfind(needle))


def _substring(s: str, args: list[Any]) -> str:
    n = utf16.length(s)
    a = min(max(integer(_a(args, 0, 0)), 0), n)
    b = n if _a(args, 1) is None else min(max(integer(args[1]), 0), n)
    return utf16.cut(s, min(a, b), max(a, b))


def _str_slice(s: str, args: list[Any]) -> str:
    if s.isascii() or s.__sizeof__() - 4 * len(s) < BMP_BELOW:
        n = len(s)
        return s[_slice_index(_a(args, 0), n, 0) : _slice_index(_a(args, 1), n, n)]
    n = utf16.length(s)
    start = _slice_index(_a(args, 0), n, 0)
    return utf16.cut(s, start, max(start, _slice_index(_a(args, 1), n, n)))


def _char_at(s: str, args: list[Any]) -> str:
    i = integer(args[0]) if args else 0
    if s.isascii() or s.__sizeof__() - 4 * len(s) < BMP_BELOW:
        return s[i] if 0 <= i < len(s) else ""
    return utf16.unit_at(s, i) if 0 <= i < utf16.length(s) else ""


def _str_at(s: str, args: list[Any]) -> str | None:
    i = integer(_a(args, 0, 0))
    n = utf16.length(s)
    if i < 0:
        i += n
    return utf16.unit_at(s, i) if 0 <= i < n else None


STRING_METHODS: dict[str, Callable[[str, list[Any]], Any]] = {
    "split": _str_split,
    "trim": lambda s, a: s.strip(),
    "trimStart": lambda s, a: s.lstrip(),
    "trimEnd": lambda s, a: s.rstrip(),
    "startsWith": lambda s, a: s.startswith(to_str(_a(a, 0, "")), _position(s, a, False)),
    "endsWith": lambda s, a: s.endswith(to_str(_a(a, 0, "")), 0, _position(s, a, True)),
    "includes": lambda s, a: s.find(to_str(_a(a, 0, "")), _position(s, a, False)) >= 0,
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "replace": lambda s, a: (
        regex_methods.replace(s, a, False) if is_regex(_a(a, 0)) else checked(_str_replace(s, a, 1))
    ),
    "replaceAll": lambda s, a: (
        regex_methods.replace(s, a, True) if is_regex(_a(a, 0)) else checked(_str_replace(s, a, 0))
    ),
    "match": regex_methods.match,
    "matchAll": regex_methods.match_all,
    "search": regex_methods.search,
    "toLowerCase": lambda s, a: s.lower(),
    "toUpperCase": lambda s, a: s.upper(),
    "substring": _substring,
    "slice": _str_slice,
    "charAt": _char_at,
    "repeat": lambda s, a: _repeat(s, _a(a, 0, 0)),
    "padStart": lambda s, a: _pad(s, a, True),
    "padEnd": lambda s, a: _pad(s, a, False),
    "toString": lambda s, a: s,
    "at": _str_at,
}


def _char_code(s: str, args: list[Any]) -> Any:
    """charCodeAt: the UTF-16 code unit at the index (NaN outside the string)."""
    i = integer(args[0]) if args else 0
    if s.isascii() or s.__sizeof__() - 4 * len(s) < BMP_BELOW:
        return ord(s[i]) if 0 <= i < len(s) else math.nan
    return utf16.code_unit(s, i) if 0 <= i < utf16.length(s) else math.nan


def _code_point_at(s: str, args: list[Any]) -> int | None:
    """codePointAt: the code point starting at the UTF-16 index (undefined outside)."""
    i = integer(_a(args, 0, 0))
    return utf16.code_point(s, i) if 0 <= i < utf16.length(s) else None


def _locale_compare(s: str, args: list[Any]) -> int:
    """localeCompare: -1, 0 or 1; letters compare ignoring case first, then lower before upper."""
    other = to_str(_a(args, 0, ""))

    def key(t: str) -> tuple[str, str]:
        return (unicodedata.normalize("NFKD", t).casefold(), t.swapcase())

    a, b = key(s), key(other)
    return (a > b) - (a < b)


def _normalize(s: str, args: list[Any]) -> str:
    form = to_str(_a(args, 0, "NFC"))
    if form not in ("NFC", "NFD", "NFKC", "NFKD"):
        raise AgencyRuntimeError(
            f"normalize: the form must be NFC, NFD, NFKC or NFKD, not {form!r}"
        )
    return unicodedata.normalize(form, s)  # type: ignore[arg-type]


STRING_METHODS.update(
    {
        "charCodeAt": _char_code,
        "codePointAt": _code_point_at,
        "localeCompare": _locale_compare,
        "normalize": _normalize,
        "concat": lambda s, a: checked(s + "".join(to_str(x) for x in a)),
        "trimLeft": lambda s, a: s.lstrip(),
        "trimRight": lambda s, a: s.rstrip(),
        "toLocaleLowerCase": lambda s, a: s.lower(),
        "toLocaleUpperCase": lambda s, a: s.upper(),
        "valueOf": lambda s, a: s,
    }
)


# Namespaced functions (JSON.stringify, Math.max, ...) are also callable through FuncRef values
# named "JSON.stringify": register them as builtins so `const f = Math.max; f(1, 2)` works.
# -- function values: f.partial(a: 1), f.describe(text), f.rename(name), f.preapprove() --------

# The handler a preapproved function's frame opens (checkpoints store handlers as two strings).
PREAPPROVE = ("preapprove", "approve")

FUNCTION_METHODS = frozenset({"partial", "describe", "rename", "preapprove"})


def function_method(
    m: Machine, fn: FuncRef | BoundFunction, name: str, args: list[Any], named: dict[str, Any]
) -> BoundFunction:
    """A new function value derived from `fn`; `fn` itself never changes."""
    bf = fn if type(fn) is BoundFunction else BoundFunction(fn)  # type: ignore[arg-type]
    base = bf.base.name
    if name == "partial":
        if args:
            raise AgencyRuntimeError(
                f"{base}.partial() binds parameters by name only, e.g. {base}.partial(x: 1)"
            )
        code = m.functions.get(base)
        for key in named:
            if code is not None and key not in code.param_names:
                raise AgencyRuntimeError(f"Unknown named argument '{key}' in call to '{base}'")
            if key in bf.bound:
                raise AgencyRuntimeError(f"parameter '{key}' of '{base}' is already bound")
        return bf.derive(bound={**bf.bound, **named})
    if name == "preapprove":
        return bf.derive(preapprove=True)
    text = arg(args, named, 0, "description" if name == "describe" else "name")
    if type(text) is not str:
        raise AgencyRuntimeError(f"{base}.{name}() expects a string, got {type_name(text)}")
    if name == "describe":
        return bf.derive(description=text)
    if not text:
        raise AgencyRuntimeError(f"{base}.rename() needs a non-empty name")
    return bf.derive(tool_name=text)


def bind_call(
    m: Machine, fn: BoundFunction, args: list[Any], named: dict[str, Any]
) -> tuple[list[Any], dict[str, Any]]:
    """The arguments a call of a bound function passes to its base: positional arguments fill
    the parameters left unbound, in declaration order (a rest parameter takes the remainder);
    extra ones are dropped, as JavaScript does (`xs.map(add5)` passes an index too)."""
    merged = dict(fn.bound)
    code = m.functions.get(fn.base.name)
    if code is None:  # a builtin: its own positions, plus what was bound by name
        merged.update(named)
        return list(args), merged
    free = [p for p in code.params if p.name not in merged and p.name not in named]
    i = 0
    for p in free:
        if i >= len(args):
            break
        if p.rest:
            merged[p.name] = JSArray(args[i:])
            i = len(args)
            break
        merged[p.name] = args[i]
        i += 1
    for key, v in named.items():
        if key in fn.bound:
            raise AgencyRuntimeError(f"parameter '{key}' of '{fn.base.name}' is already bound")
        merged[key] = v
    return [], merged
