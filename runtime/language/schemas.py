"""Provides the JSON schema of an Agency type: what `const x: T = llm(…)` asks a model for and
what a def offered as a tool declares for its parameters. Checking replies against a schema is
the LLM layer's business (`runtime.llm.schema`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from runtime.errors import LLMError
from runtime.language.syntax import ast as A
from runtime.language.syntax.ast import (
    TArray,
    TBang,
    TCall,
    TGeneric,
    TLiteral,
    TName,
    TObject,
    TUnion,
    TValidated,
    TypeExpr,
)
from runtime.language.syntax.nodes import Node, replace

Schema = dict[str, Any]

_PRIMITIVES: dict[str, Schema] = {
    "string": {"type": "string"},
    "number": {"type": "number"},
    "boolean": {"type": "boolean"},
    "null": {"type": "null"},
    "undefined": {"type": "null"},
    "void": {"type": "null"},
    "any": {},
    "unknown": {},
    "object": {"type": "object"},
}

_JSON_TYPE_OF_LITERAL = {str: "string", bool: "boolean", int: "number", float: "number"}


# --------------------------------------------------------------------------------------------
# Types to schemas


def type_to_schema(
    t: TypeExpr,
    aliases: Mapping[str, TypeExpr] | None = None,
    type_params: Mapping[str, tuple[str, ...]] | None = None,
    type_defaults: Mapping[str, tuple[TypeExpr | None, ...]] | None = None,
) -> Schema:
    """The JSON schema for the Agency type `t`; alias names are looked up in `aliases`, a
    generic alias's type parameters (`type Page<T> = …`) in `type_params` and their defaults
    (`<T = string>`) in `type_defaults`.

    Raises `LLMError` for an unknown type name and for a recursive alias (structured output
    cannot describe an unbounded type).
    """
    return _Converter(aliases or {}, type_params or {}, type_defaults or {}).convert(t)


def wrap_schema(inner: Schema) -> Schema:
    """The schema `llm()` sends for a typed answer: `{"response": inner}`."""
    return {"type": "object", "properties": {"response": inner}, "required": ["response"]}


def tool_parameters(
    params: Iterable[tuple[str, TypeExpr | None, bool]],
    aliases: Mapping[str, TypeExpr] | None = None,
) -> Schema:
    """The `parameters` schema of a def offered as a tool.

    `params` lists `(name, type or None, optional)`; an untyped parameter accepts any value and
    a parameter with a default is optional.
    """
    conv = _Converter(aliases or {})
    properties: dict[str, Schema] = {}
    required: list[str] = []
    for name, t, optional in params:
        properties[name] = conv.convert(t) if t is not None else {}
        if not optional:
            required.append(name)
    return {"type": "object", "properties": properties, "required": required}


class _Converter:
    def __init__(
        self,
        aliases: Mapping[str, TypeExpr],
        type_params: Mapping[str, tuple[str, ...]] = {},
        type_defaults: Mapping[str, tuple[TypeExpr | None, ...]] = {},
    ) -> None:
        self.aliases = aliases
        self.type_params = type_params
        self.type_defaults = type_defaults
        self.expanding: list[str] = []

    def convert(self, t: TypeExpr) -> Schema:
        if isinstance(t, TName):
            return self.name(t.name)
        if isinstance(t, TLiteral):
            return _literal(t.value)
        if isinstance(t, TArray):
            return {"type": "array", "items": self.convert(t.element)}
        if isinstance(t, TObject):
            return {
                "type": "object",
                "properties": {f.name: self.convert(f.type) for f in t.fields},
                "required": [f.name for f in t.fields if not f.optional],
            }
        if isinstance(t, TUnion):
            return _union([self.convert(o) for o in t.options])
        if isinstance(t, TGeneric):
            return self.generic(t)
        if isinstance(t, TBang):
            return self.convert(t.inner)
        if isinstance(t, TValidated):
            return _with_fragments(self.convert(t.inner), t.json)
        if isinstance(t, TCall):
            return self.name(t.name)
        raise LLMError(f"cannot describe the type {t!r} as a JSON schema")

    def name(self, name: str) -> Schema:
        if name in self.aliases:
            if name in self.expanding:
                chain = " -> ".join([*self.expanding[self.expanding.index(name) :], name])
                raise LLMError(
                    f"the type `{name}` refers to itself ({chain}); structured output needs a "
                    "type of bounded depth, so write the nesting out"
                )
            return self.expand(name, ())
        if name in _PRIMITIVES:
            return dict(_PRIMITIVES[name])
        raise LLMError(
            f"unknown type `{name}`: declare it with `type {name} = …` or use string, number, "
            "boolean, any or null"
        )

    def expand(self, name: str, args: tuple[TypeExpr, ...]) -> Schema:
        """The schema of the alias `name`, its type parameters replaced by `args`; a missing
        one takes its default (which may name the parameters before it) or is `any`."""
        body = self.aliases[name]
        params = self.type_params.get(name, ())
        if params:
            defaults = self.type_defaults.get(name, ())
            given: dict[str, TypeExpr] = {}
            for i, p in enumerate(params):
                default = defaults[i] if i < len(defaults) else None
                if i < len(args):
                    given[p] = args[i]
                elif default is not None:
                    given[p] = _substitute(default, given)
                else:
                    given[p] = TName("any")
            body = _substitute(body, given)
        self.expanding.append(name)
        try:
            return self.convert(body)
        finally:
            self.expanding.pop()

    def generic(self, t: TGeneric) -> Schema:
        if t.name in self.type_params and t.name in self.aliases:
            if t.name in self.expanding:
                raise LLMError(
                    f"the type `{t.name}` refers to itself; structured output needs a type of "
                    "bounded depth, so write the nesting out"
                )
            return self.expand(t.name, t.args)
        args = [self.convert(a) for a in t.args]
        if t.name == "Array" and len(args) == 1:
            return {"type": "array", "items": args[0]}
        if t.name == "Result" and len(args) in (1, 2):
            error = args[1] if len(args) == 2 else {}
            return {
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {"success": _literal(True), "value": args[0]},
                        "required": ["success", "value"],
                    },
                    {
                        "type": "object",
                        "properties": {"success": _literal(False), "error": error},
                        "required": ["success", "error"],
                    },
                ]
            }
        if t.name == "Record" and len(args) == 2:
            return {"type": "object", "additionalProperties": args[1]}
        if t.name in _UTILITIES and len(args) == _UTILITIES[t.name]:
            return _utility(t.name, args)
        raise LLMError(
            f"unsupported generic type `{t.name}` with {len(args)} argument(s); structured output "
            "understands Array<T>, Result<S, F>, Record<string, T>, Partial<T>, Required<T>, "
            'Pick<T, K>, Omit<T, K>, NonNullable<T>, keyof T, A & B and T["key"]'
        )


# The utility types over object types (and their number of arguments). `&` is `A & B`, `keyof`
# is `keyof T` and `[]` is the indexed access `T["key"]`, as the parser writes them.
_UTILITIES = {
    "Partial": 1,
    "Required": 1,
    "Pick": 2,
    "Omit": 2,
    "NonNullable": 1,
    "keyof": 1,
    "&": 2,
    "[]": 2,
}


def _utility(name: str, args: list[Schema]) -> Schema:
    if name == "NonNullable":
        return _without_null(args[0])
    if name == "&":
        return _intersection(args[0], args[1])
    props, required = _object_parts(args[0], name)
    if name == "Partial":
        return {"type": "object", "properties": props, "required": []}
    if name == "Required":
        return {"type": "object", "properties": props, "required": list(props)}
    if name == "keyof":
        return _union([_literal(k) for k in props]) if props else {"not": {}}
    keys = _literal_keys(args[1], name)
    if name == "[]":
        missing = [k for k in keys if k not in props]
        if missing:
            raise LLMError(f"the type has no property `{missing[0]}` (it has {', '.join(props)})")
        return _union([props[k] for k in keys])
    keep = [k for k in props if (k in keys) == (name == "Pick")]
    return {
        "type": "object",
        "properties": {k: props[k] for k in keep},
        "required": [k for k in required if k in keep],
    }


def _object_parts(schema: Schema, name: str) -> tuple[dict[str, Schema], list[str]]:
    """The properties and required names of an object type's schema."""
    if schema.get("type") != "object" or "properties" not in schema:
        raise LLMError(f"`{name}` needs an object type with known properties")
    return dict(schema["properties"]), list(schema.get("required", []))


def _literal_keys(schema: Schema, name: str) -> list[str]:
    """The key names a `Pick`/`Omit`/indexed access is given: a string literal or a union of
    them."""
    values = schema.get("enum")
    if schema.get("type") != "string" or not isinstance(values, list):
        raise LLMError(f'`{name}` needs its keys as string literals, like "name" | "email"')
    return [str(v) for v in values]


def _without_null(schema: Schema) -> Schema:
    if list(schema) == ["anyOf"]:
        return _union([o for o in schema["anyOf"] if o != {"type": "null"}])
    kind = schema.get("type")
    if isinstance(kind, list) and "null" in kind:
        out = dict(schema)
        rest = [k for k in kind if k != "null"]
        out["type"] = rest[0] if len(rest) == 1 else rest
        if "enum" in out:
            out["enum"] = [v for v in out["enum"] if v is not None]
        return out
    return schema


def _intersection(a: Schema, b: Schema) -> Schema:
    """`A & B` of two object types: every property of both (one on both sides must agree)."""
    pa, ra = _object_parts(a, "&")
    pb, rb = _object_parts(b, "&")
    props = dict(pa)
    for k, v in pb.items():
        if k in props and props[k] != v and props[k] and v:
            raise LLMError(f"`A & B`: the property `{k}` has two different types")
        props[k] = props.get(k) or v
    return {
        "type": "object",
        "properties": props,
        "required": [*ra, *(k for k in rb if k not in ra)],
    }


def _substitute(t: Any, given: Mapping[str, TypeExpr]) -> Any:
    """`t` with each type parameter named in `given` replaced by its argument."""
    if isinstance(t, TName):
        return given.get(t.name, t)
    if isinstance(t, tuple):
        return tuple(_substitute(x, given) for x in t)
    if not isinstance(t, Node):
        return t
    changes = {}
    for name in t._fields:
        value = getattr(t, name)
        if isinstance(value, tuple | Node):
            new = _substitute(value, given)
            if new is not value:
                changes[name] = new
    return replace(t, **changes) if changes else t


def _with_fragments(schema: Schema, fragments: tuple[A.Expr, ...]) -> Schema:
    """`schema` with the `@jsonSchema({…})` fragments merged in, later keys winning and
    descriptions joined by new lines. Only entries written as literals are known before the
    program runs (`{minimum: low}` of a value-parameterised alias is left out)."""
    out = dict(schema)
    for fragment in fragments:
        if not isinstance(fragment, A.ObjectLit):
            continue
        for entry in fragment.entries:
            if not isinstance(entry, A.ObjectEntry) or not isinstance(entry.key, str):
                continue
            if not isinstance(entry.value, A.Literal):
                continue
            old = out.get("description")
            if entry.key == "description" and isinstance(old, str) and old:
                out["description"] = f"{old}\n{entry.value.value}"
            else:
                out[entry.key] = entry.value.value
    return out


def _literal(value: Any) -> Schema:
    if value is None:
        return {"type": "null"}
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    kind = _JSON_TYPE_OF_LITERAL.get(type(value))
    if kind is None:
        raise LLMError(f"cannot use {value!r} as a literal type")
    return {"type": kind, "enum": [value]}


def _union(options: list[Schema]) -> Schema:
    flat: list[Schema] = []
    for o in options:
        subs = o["anyOf"] if list(o) == ["anyOf"] else [o]
        for s in subs:
            if s not in flat:
                flat.append(s)
    if len(flat) == 1:
        return flat[0]
    # A union of literals (and null) becomes one enum, which every provider understands.
    if all(_is_enum_like(s) for s in flat):
        values: list[Any] = []
        kinds: list[str] = []
        for s in flat:
            kind = s["type"]
            for v in s.get("enum", [None]):
                if not any(json_equal(v, w) for w in values):
                    values.append(v)
            if kind not in kinds:
                kinds.append(kind)
        return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": values}
    return {"anyOf": flat}


def _is_enum_like(s: Schema) -> bool:
    keys = set(s)
    if s.get("type") == "null" and keys == {"type"}:
        return True
    return keys == {"type", "enum"} and isinstance(s["type"], str)


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: `true` is not `1`, `1` is `1.0`."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if type(a) is not type(b):
        if isinstance(a, list | tuple) and isinstance(b, list | tuple):
            return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return bool(a == b)
