"""Provides the value operations the machine's instructions perform: indexing and slicing,
spreading, building objects, argument lists, and matching and destructuring patterns."""

from __future__ import annotations

import math
from typing import Any

from runtime.errors import AgencyRuntimeError
from runtime.language.bytecode import Code, Location
from runtime.language.syntax import ast as A
from runtime.vm import utf16
from runtime.vm.frames import (
    Frame,
)
from runtime.vm.methods import (
    get_member,
)
from runtime.vm.types import conforms
from runtime.vm.utf16 import BMP_BELOW
from runtime.vm.values import (
    JSArray,
    JSMap,
    JSObject,
    JSSet,
    Result,
    a_type,
    js_eq,
    num,
    to_number,
    to_str,
)

# ----------------------------------------------------------------------------------------------
# Helpers shared by the loop


def stmt_location(f: Frame) -> Location | None:
    """The location of the statement a frame is at (its last STEP)."""
    code = f.code
    pcs = code.step_pcs
    for i in range(len(pcs) - 1, -1, -1):
        if pcs[i] <= f.stmt_pc:
            return code.locations[i]
    return None


def stmt_position(f: Frame) -> tuple[int, int]:
    """(line, col) of the statement a frame is at (its last STEP), for the call stack view."""
    code = f.code
    pcs = code.step_pcs
    for i in range(len(pcs) - 1, -1, -1):
        if pcs[i] <= f.stmt_pc:
            loc = code.locations[i]
            return loc.line, loc.col
    return code.span.line, code.span.col


def bind_block(
    code: Code, args: list[Any], named: dict[str, Any]
) -> tuple[list[Any], dict[str, Any]]:
    """A trailing block (argument kind `&`) binds to the callee's last parameter by name, so
    `row() as g { … }` with `def row(gap = 0, block = null)` leaves `gap` to its default."""
    named = dict(named)
    block = named.pop("&")
    params = [p for p in code.params if not p.name.startswith("__")]
    if not params:
        raise AgencyRuntimeError(f"`{code.name}` takes no parameters, so it cannot take a block")
    last = params[-1]
    if last.rest:
        return [*args, block], named
    named[last.name] = block
    return args, named


def check_named(code: Code, args: list[Any], named: dict[str, Any]) -> None:
    """A call the program writes with named arguments (`fn(a: 1, z: 9)`, direct or through a
    variable) is checked as the reference checks it, with its wording: every name must be a
    parameter, none may also be filled by position, and each parameter without a default up
    to the last one named (or after the positional ones, until a defaulted one nothing later
    is named past) must be given. A call without named arguments is not checked: a missing
    argument is null, as in JavaScript."""
    given = [k for k in named if k != "&"]
    if not given:
        return
    params = [p for p in code.params if not p.name.startswith("__")]
    catch_all = len(params) != len(code.params) and any(p.name == "__named" for p in code.params)
    fixed = [p for p in params if not p.rest]
    rest = params[-1].name if params and params[-1].rest else None
    at = {p.name: i for i, p in enumerate(fixed)}
    for key in given:
        i = at.get(key)
        if i is None:
            if key != rest and not catch_all:
                raise AgencyRuntimeError(f"Unknown named argument '{key}' in call to '{code.name}'")
        elif i < len(args):
            raise AgencyRuntimeError(
                f"Named argument '{key}' conflicts with positional argument at position {i + 1} "
                f"in call to '{code.name}'"
            )
    block = fixed[-1].name if "&" in named and fixed and rest is None else None
    for i in range(len(args), len(fixed)):
        p = fixed[i]
        if p.name in named or p.name == block:
            continue
        if p.has_default or p.optional or _schema_param(p.type):
            if not any(q.name in named for q in fixed[i + 1 :]):
                break
            continue
        raise AgencyRuntimeError(f"Missing required argument '{p.name}' in call to '{code.name}'")


def _schema_param(t: Any) -> bool:
    """A `Schema<T>` parameter: a direct call is given it by the compiler when it leaves it
    out, so a call through a variable may leave it out too."""
    return (type(t) is A.TName or type(t) is A.TGeneric) and t.name == "Schema"


def has_failure(args: list[Any], named: dict[str, Any]) -> bool:
    for a in args:
        if type(a) is Result and not a.ok:
            return True
    return any(type(v) is Result and not v.ok for v in named.values()) if named else False


def accepts_results(t: Any, program: Any, depth: int = 0) -> bool:
    """Whether a parameter declared with type `t` takes a failure as it is: `Result…`, `any`,
    or a union holding one (an alias is looked through). Untyped parameters do not."""
    if t is None or depth > 20:
        return False
    kind = type(t)
    if kind is A.TName:
        if t.name in ("any", "Result"):
            return True
        alias = program.types.get(t.name)
        return alias is not None and accepts_results(alias, program, depth + 1)
    if kind is A.TGeneric:
        return bool(t.name == "Result")
    if kind is A.TUnion:
        return any(accepts_results(o, program, depth + 1) for o in t.options)
    return False


def callee_text(v: Any) -> str:
    if v is None:
        return "null"
    return f"{a_type(v)} value"


def array_index(key: Any) -> int | None:
    t = type(key)
    if t is int:
        return key if key >= 0 else None
    if t is float and key.is_integer() and key >= 0:
        return int(key)
    if t is str and key.isdigit():
        return int(key)
    return None


def range_bounds(start: Any, end: Any) -> tuple[int | float, int | float]:
    """The first value and the bound of a `for (i in range(…))` loop, counting up by 1, as the
    `range` builtin builds it: an end of -1 means `range(start)`, and the count is `end - start`
    truncated (none when negative or NaN), so `range(0.5, 3)` runs 0.5 and 1.5."""
    s, e = to_number(start), to_number(end)
    if e == -1:
        s, e = 0, s
    if type(s) is int and type(e) is int:
        return s, e
    span = e - s
    if span != span or span <= 0:
        return 0, 0
    if span == math.inf:
        raise AgencyRuntimeError("range: cannot loop over infinitely many numbers")
    first = num(float(s)) if s == s else 0
    return first, first + math.floor(span)


def get_index(obj: Any, key: Any) -> Any:
    t = type(obj)
    if t is JSArray:
        i = array_index(key)
        if i is not None:
            return obj[i] if i < len(obj) else None
        if type(key) is int and key < 0:
            return None
        if key == "length":
            return len(obj)
        props = getattr(obj, "props", None)  # a match array's index, input and groups
        return props.get(key) if props and type(key) is str else None
    if t is JSObject:
        return obj.get(key if type(key) is str else to_str(key))
    if t is str:  # positions are UTF-16 code units, as JavaScript's (see utf16.py)
        i = array_index(key)
        if obj.isascii() or obj.__sizeof__() - 4 * len(obj) < BMP_BELOW:
            if i is not None:
                return obj[i] if i < len(obj) else None
            return len(obj) if key == "length" else None
        if i is not None:
            return utf16.unit_at(obj, i) if i < utf16.length(obj) else None
        return utf16.length(obj) if key == "length" else None
    if obj is None:
        raise AgencyRuntimeError(f"Cannot read properties of null (reading '{to_str(key)}')")

    return get_member(obj, to_str(key))


def slice_value(obj: Any, start: Any, end: Any) -> Any:
    if type(obj) not in (JSArray, str):
        raise AgencyRuntimeError(f"cannot slice {a_type(obj)}")
    n = len(obj)
    s = 0 if start is None else int(to_number(start))
    e = n if end is None else int(to_number(end))
    if type(obj) is str and utf16.has_astral(obj):  # `s[a:b]` counts UTF-16 code units
        a, b, _ = slice(s, None if end is None else e).indices(utf16.length(obj))
        return utf16.cut(obj, a, max(a, b))
    r = obj[s:e]
    return JSArray(r) if type(obj) is JSArray else r


def spread_items(v: Any) -> list[Any]:
    t = type(v)
    if t is JSArray:
        return list(v)
    if t is str:
        return list(v)
    if v is None:
        return []
    if t is JSSet:  # `[...set]`, `[...map]`: what `for … of` yields, as in JavaScript
        return list(v.values())
    if t is JSMap:
        return [JSArray(pair) for pair in v.values()]
    raise AgencyRuntimeError(f"cannot spread {a_type(v)}")


def build_object(stack: list[Any], spec: tuple[str, ...]) -> JSObject:
    n = sum(2 if s == "pair" else 1 for s in spec)
    values = stack[-n:] if n else []
    if n:
        del stack[-n:]
    out = JSObject()
    i = 0
    for s in spec:
        if s == "spread":
            v = values[i]
            i += 1
            if type(v) is JSObject:
                out.update(v)
            elif type(v) is JSArray:
                for j, x in enumerate(v):
                    out[str(j)] = x
            elif v is not None:
                raise AgencyRuntimeError(f"cannot spread {a_type(v)} into an object")
        else:
            k, v = values[i], values[i + 1]
            i += 2
            out[k if type(k) is str else to_str(k)] = v
    return out


def repush_args(stack: list[Any], args: list[Any], named: dict[str, Any], spec: Any) -> None:
    if spec is None or type(spec) is int:
        stack.extend(args)
        if named:  # a named call re-pushed with an int spec cannot happen; keep it honest
            raise AgencyRuntimeError("internal error: cannot pause inside this call")
        return
    it = iter(args)
    for kind in spec:
        if kind is None:
            stack.append(next(it))
        elif kind == "...":
            stack.append(JSArray(it))
        else:
            stack.append(named[kind])


_NULL = A.PLiteral(None)


def match_pattern(p: Any, v: Any, binds: dict[str, Any], types: Any = None) -> bool:
    """Whether `v` matches pattern `p`, collecting binders in `binds`; `types` are the
    program's type aliases (for type patterns)."""
    t = type(p)
    if t is A.PWildcard:
        return True
    if t is A.PBind:
        binds[p.name] = v
        return True
    if t is A.PLiteral:
        return js_eq(p.value, v)
    if t is A.PObject:
        if type(v) is not JSObject:
            if type(v) is Result:
                v = JSObject(
                    {"success": v.ok, "value": v.value}
                    if v.ok
                    else {"success": False, "error": v.error}
                )
            else:
                return False
        for f in p.fields:
            if f.key not in v and type(f.pattern) is not A.PBind and f.pattern != _NULL:
                return False  # a missing key matches only a binder or `null` (loose)
            if not match_pattern(f.pattern, v.get(f.key), binds, types):
                return False
        if p.rest is not None:
            taken = {f.key for f in p.fields}
            binds[p.rest] = JSObject((k, x) for k, x in v.items() if k not in taken)
        return True
    if t is A.PArray:
        if type(v) is not JSArray:
            return False
        n = len(p.items)
        m = len(p.tail)
        if p.rest is None and len(v) != n:
            return False
        if len(v) < n + m:
            return False
        for sub, x in zip(p.items, v):
            if not match_pattern(sub, x, binds, types):
                return False
        for sub, x in zip(p.tail, v[len(v) - m :]):
            if not match_pattern(sub, x, binds, types):
                return False
        if p.rest is not None:
            binds[p.rest] = JSArray(v[n : len(v) - m])
        return True
    if t is A.PResult:
        if type(v) is not Result:
            return False
        if v.ok != (p.kind == "success"):
            return False
        if p.inner is None:
            return True
        return match_pattern(p.inner, v.value if v.ok else v.error, binds, types)
    if t is A.PType:
        if not conforms(v, p.type, types or {}):
            return False
        return p.inner is None or match_pattern(p.inner, v, binds, types)
    return False


def destructure(p: Any, v: Any, binds: dict[str, Any]) -> None:
    t = type(p)
    if t is A.PBind:
        binds[p.name] = v
    elif t is A.PArray:
        items = list(v) if type(v) in (JSArray, str) else []
        for i, sub in enumerate(p.items):
            destructure(sub, items[i] if i < len(items) else None, binds)
        if p.tail:
            _destructure_tail(p, items, binds)
        elif p.rest is not None:
            binds[p.rest] = JSArray(items[len(p.items) :])
    elif t is A.PObject:
        if v is None:
            raise AgencyRuntimeError("cannot destructure null")
        for f in p.fields:
            if type(v) is JSObject:
                x = v.get(f.key)
            else:
                x = get_member(v, f.key)
            destructure(f.pattern, x, binds)
        if p.rest is not None:
            taken = {f.key for f in p.fields}
            rest = v if type(v) is JSObject else JSObject()
            binds[p.rest] = JSObject((k, x) for k, x in rest.items() if k not in taken)
    elif t is A.PWildcard:
        pass


def _destructure_tail(p: A.PArray, items: list[Any], binds: dict[str, Any]) -> None:
    """`[first, ...mid, last] = xs`: the tail binds from the end; the two ends may not
    overlap."""
    n, m = len(p.items), len(p.tail)
    if len(items) < n + m:
        raise AgencyRuntimeError(
            f"cannot destructure an array of {len(items)} into {n + m} elements around `...{p.rest}`"
        )
    for sub, x in zip(p.tail, items[len(items) - m :]):
        destructure(sub, x, binds)
    binds[p.rest or ""] = JSArray(items[n : len(items) - m])
