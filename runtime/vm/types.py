"""Provides the run-time type test used by type patterns (`s: string => …`, `x is Person`).

`conforms(value, type_expr, aliases)` answers whether an Agency value has a type written in the
source. It is structural and never changes or calls anything, so a match stays one atomic
machine step. Covered: the primitive names (`string number boolean null any object`), literal
types, `T[]`, object shapes (`{k: T, k?: T}`, extra keys allowed), unions, `Result<…>`,
`Record<K, V>` and type aliases (followed by name, recursion allowed). Anything else (utility
types, validators, imported types) is an error naming the type, not a silent answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtime.errors import AgencyRuntimeError
from runtime.language.syntax import ast as A
from runtime.vm.values import JSArray, JSObject, Result, js_eq

_MAX_DEPTH = 200


def conforms(value: Any, type_expr: A.TypeExpr, aliases: Mapping[str, A.TypeExpr]) -> bool:
    """Whether `value` has the type `type_expr`; `aliases` maps `type X = …` names to types."""
    return _conforms(value, type_expr, aliases, 0)


def _conforms(v: Any, t: Any, aliases: Mapping[str, A.TypeExpr], depth: int) -> bool:
    if depth > _MAX_DEPTH:
        raise AgencyRuntimeError("type check too deep (a recursive type or value?)")
    k = type(t)
    if k is A.TName:
        return _named(v, t.name, aliases, depth)
    if k is A.TLiteral:
        return js_eq(t.value, v) or (t.value is None and v is None)
    if k is A.TArray:
        return type(v) is JSArray and all(_conforms(x, t.element, aliases, depth + 1) for x in v)
    if k is A.TObject:
        if type(v) is not JSObject:
            return False
        for f in t.fields:
            x = v.get(f.name)
            if x is None and f.optional:
                continue
            if not _conforms(x, f.type, aliases, depth + 1):
                return False
        return True
    if k is A.TUnion:
        return any(_conforms(v, option, aliases, depth + 1) for option in t.options)
    if k is A.TBang or k is A.TValidated:  # (validators run only through `!` and schema())
        return _conforms(v, t.inner, aliases, depth + 1)
    if k is A.TCall:
        return _named(v, t.name, aliases, depth)
    if k is A.TGeneric:
        if t.name == "Result":
            return type(v) is Result
        if t.name == "Record" and len(t.args) == 2:
            return type(v) is JSObject and all(
                _conforms(x, t.args[1], aliases, depth + 1) for x in v.values()
            )
        raise AgencyRuntimeError(f"the type `{t.name}<…>` cannot be tested in a pattern yet")
    raise AgencyRuntimeError(f"cannot test a value against {k.__name__}")


def _named(v: Any, name: str, aliases: Mapping[str, A.TypeExpr], depth: int) -> bool:
    if name in aliases:
        return _conforms(v, aliases[name], aliases, depth + 1)
    if name == "string":
        return type(v) is str
    if name == "number":
        return type(v) is int or type(v) is float
    if name == "boolean":
        return type(v) is bool
    if name in ("null", "undefined", "void"):
        return v is None
    if name in ("any", "unknown"):
        return True
    if name == "object":
        return type(v) is JSObject or type(v) is Result
    if name == "Result":
        return type(v) is Result
    raise AgencyRuntimeError(f"unknown type `{name}` in a pattern")
