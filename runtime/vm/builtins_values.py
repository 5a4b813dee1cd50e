"""Provides builtins for values and types: regex values, the host side of schema validation
and std::validation, and a fallback `sleep(ms)` (unit literals make it `sleep(50ms)`).

The fallback `sleep` waits through the effect journal, so a replayed or resumed run is served
the recorded wait instead of waiting again.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.language.syntax.validation import SCHEMA_PREFIX
from runtime.vm import regex_methods
from runtime.vm.builtin_base import builtin
from runtime.vm.classes import CLASS_TYPES
from runtime.vm.effects import observe
from runtime.vm.values import (
    FUNCTION_TYPES,
    BoundFunction,
    JSArray,
    JSObject,
    Result,
    a_type,
    is_regex,
    js_eq,
    make_regex,
    regex_test,
    stringify,
    to_str,
)

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

MAX_SLEEP_MS = 24 * 3_600_000


def journaled_wait(m: Machine, ms: float, wait_ms: float | None = None) -> None:
    """`sleep(ms)` through the effect journal, so a replayed or resumed run is served the wait
    it already did instead of waiting again. It waits `wait_ms` (a time guard's deadline can
    cut it short), but is journaled as the `ms` the program asked for, which replay compares."""

    def wait() -> None:
        time.sleep((ms if wait_ms is None else wait_ms) / 1000)

    observe(m, "sleep", {"ms": ms}, wait)


@builtin("__regex")
def _regex(m: Machine, args: list[Any], named: dict[str, Any]) -> JSObject:
    """`re/pattern/flags`: the regex value."""
    return make_regex(to_str(args[0]), to_str(args[1]) if len(args) > 1 else "")


def regex_method(r: JSObject, name: str, args: list[Any]) -> Any:
    """`r.test(s)`, `r.exec(s)`, `r.toString()`."""
    if name == "test":
        return regex_test(r, args[0] if args else None)
    if name == "exec":
        return regex_methods.exec_(r, args)
    if name == "toString":
        return f"/{r.get('source')}/{r.get('flags')}"
    raise AgencyRuntimeError(f"a regex has no method `{name}` (it has test, exec and toString)")


# -- schema validation: the host side of the prelude's `__schema_check` (see
# runtime/language/syntax/validation.py for the descriptors it walks) ---------------------------


def _kind_ok(kind: str, v: Any) -> bool:
    t = type(v)
    if kind == "any":
        return True
    if kind == "string":
        return t is str
    if kind == "number":
        return (t is int or t is float) and v == v
    if kind == "boolean":
        return t is bool
    if kind == "null":
        return v is None
    if kind == "array":
        return t is JSArray
    if kind in ("fields", "record", "partial", "required", "pick", "omit"):
        return t is JSObject
    if kind == "object":
        return t is JSObject or t is JSArray or t in CLASS_TYPES
    if kind == "result":
        return t is Result
    if kind == "function":
        return t in FUNCTION_TYPES
    if kind == "regex":
        return is_regex(v)
    raise AgencyRuntimeError(f"unknown kind of type `{kind}` in a schema")


@builtin("__schema_is")
def _schema_is(m: Machine, args: list[Any], named: dict[str, Any]) -> bool:
    """`__schema_is(kind, v)`: whether `v` is of the descriptor kind `kind` (its top level)."""
    return _kind_ok(str(args[0]), args[1] if len(args) > 1 else None)


def describe(d: Any) -> str:
    """A descriptor as a type, for messages: `number`, `"a" | "b"`, `{name: string}`."""
    if type(d) is not JSObject:
        return "any"
    k = d.get("k")
    if k == "lit":
        return stringify(d.get("value"))
    if k == "array":
        return describe(d.get("of")) + "[]"
    if k == "union":
        return " | ".join(describe(o) for o in d.get("of") or ())
    if k == "fields":
        fields = d.get("fields") or ()
        inner = ", ".join(
            f"{f.get('name')}{'?' if f.get('optional') else ''}: {describe(f.get('type'))}"
            for f in fields
        )
        return "{" + inner + "}"
    if k == "check":
        return describe(d.get("of"))
    if k == "ref":
        fn = d.get("fn")
        name = getattr(fn, "name", "")
        return name[len(SCHEMA_PREFIX) :] if name.startswith(SCHEMA_PREFIX) else "a type"
    if k == "result":
        return "Result"
    if k == "record":
        return f"Record<string, {describe(d.get('of'))}>"
    return str(k)


@builtin("__schema_fail")
def _schema_fail(m: Machine, args: list[Any], named: dict[str, Any]) -> Result:
    """`__schema_fail(d, v, path)`: the failure for a value that does not have the type `d`."""
    d, v = args[0], args[1] if len(args) > 1 else None
    path = args[2] if len(args) > 2 and args[2] else ""
    where = f" at {path}" if path else ""
    got = "null" if v is None else a_type(v)
    return Result(False, error=f"expected {describe(d)}{where}, got {got}")


def _fn_name(f: Any) -> str:
    if type(f) is BoundFunction:
        return f.base.name
    return str(getattr(f, "name", "a validator"))


@builtin("__schema_after")
def _schema_after(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """`__schema_after(f, r, v)`: what validator `f` said about `v`: null when it accepted the
    value, its failure when it did not; an error when it answered something else or changed
    the value."""
    f, r, v = args[0], args[1], args[2]
    if type(r) is not Result:
        raise AgencyRuntimeError(
            f"the validator `{_fn_name(f)}` returned {a_type(r)}: a validator returns "
            "success(value) or failure(reason)"
        )
    if not r.ok:
        return r
    if r.value is not v and not js_eq(r.value, v):
        raise AgencyRuntimeError(
            f"the validator `{_fn_name(f)}` modified the value ({stringify(v)} became "
            f"{stringify(r.value)}); validators only accept or reject, so repair values with "
            "an ordinary call"
        )
    return None


@builtin("__schema_keys")
def _schema_keys(m: Machine, args: list[Any], named: dict[str, Any]) -> JSArray:
    """The keys named by the descriptor of `"a" | "b"` (for Pick and Omit)."""
    d = args[0]
    out = JSArray()
    todo = [d]
    while todo:
        x = todo.pop(0)
        if type(x) is not JSObject:
            continue
        if x.get("k") == "lit":
            out.append(to_str(x.get("value")))
        elif x.get("k") == "union":
            todo.extend(x.get("of") or ())
    return out


@builtin("__schema_merge")
def _schema_merge(m: Machine, args: list[Any], named: dict[str, Any]) -> JSObject:
    """`@jsonSchema` fragments merged into a JSON schema: later keys win, except that
    descriptions are joined with new lines."""
    out = JSObject(args[0] if type(args[0]) is JSObject else {})
    for extra in args[1:]:
        if type(extra) is not JSObject:
            raise AgencyRuntimeError(f"`@jsonSchema` takes an object, not {a_type(extra)}")
        for k, v in extra.items():
            old = out.get("description")
            if k == "description" and type(old) is str and old:
                out[k] = old + "\n" + to_str(v)
            else:
                out[k] = v
    return out


# -- std::validation ------------------------------------------------------------------------------

_FORMATS = {
    "email": re.compile(r"[^\s@]+@[^\s@.]+(\.[^\s@.]+)+"),
    "url": re.compile(r"https?://[^\s/?#]+[^\s]*", re.IGNORECASE),
    "uuid": re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I),
}


@builtin("__validation_like")
def _validation_like(m: Machine, args: list[Any], named: dict[str, Any]) -> bool:
    """`__validation_like(format, value)`: whether the string `value` has the form `format`."""
    value = args[1] if len(args) > 1 else None
    return type(value) is str and _FORMATS[str(args[0])].fullmatch(value) is not None


@builtin("__validation_matches")
def _validation_matches(m: Machine, args: list[Any], named: dict[str, Any]) -> bool:
    """`__validation_matches(pattern, value)`: whether the regular expression finds a match."""
    pattern, value = args[0], args[1] if len(args) > 1 else None
    return type(value) is str and regex_test(
        pattern if is_regex(pattern) else to_str(pattern), value
    )


@builtin("__validation_json_problem")
def _validation_json_problem(m: Machine, args: list[Any], named: dict[str, Any]) -> str | None:
    """What keeps a value from being plain JSON (with the path to it), or null."""
    todo: list[tuple[Any, str, int]] = [(args[0] if args else None, "value", 0)]
    while todo:
        v, path, depth = todo.pop()
        t = type(v)
        if depth > 200:
            return f"{path} is nested too deeply (a cycle?)"
        if v is None or t is bool or t is str:
            continue
        if t is int or t is float:
            if v != v or v in (float("inf"), float("-inf")):
                return f"{path} is {stringify(v)}, which JSON cannot hold"
            continue
        if t is JSArray:
            todo.extend((x, f"{path}[{i}]", depth + 1) for i, x in enumerate(v))
        elif t is JSObject:
            todo.extend((x, f"{path}.{k}", depth + 1) for k, x in v.items())
        else:
            return f"{path} is {a_type(v)}, not plain JSON"
    return None
