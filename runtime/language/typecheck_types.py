"""Provides the type checker's model of types (`std::agency`'s `typecheck`): what a declared type
annotation means, whether one type is assignable to another, and how a type is written in a
diagnostic.

A type is a small frozen value: `ANY` (nothing known: assignable both ways, so an unknown never
makes an error), a primitive (`string`, `number`, `boolean`, `null`, `regex`), a literal (`"a"`,
`3`, `true`), an array, an object shape (fields, optional or not; extra fields are allowed, as
TypeScript's structural typing), a union, `Result<S, F>` and a function. Type aliases resolve
through `Types.resolve`, which reports a name that is neither an alias, a built-in type nor an
imported name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from runtime.language.syntax import ast as A


@dataclass(frozen=True, slots=True)
class Any_:
    pass


@dataclass(frozen=True, slots=True)
class Prim:
    name: str  # "string" | "number" | "boolean" | "null" | "regex"


@dataclass(frozen=True, slots=True)
class Lit:
    value: str | float | bool


@dataclass(frozen=True, slots=True)
class Arr:
    element: Type


@dataclass(frozen=True, slots=True)
class Obj:
    fields: tuple[tuple[str, Type, bool], ...]  # (name, type, optional)


@dataclass(frozen=True, slots=True)
class Union:
    options: tuple[Type, ...]


@dataclass(frozen=True, slots=True)
class Res:
    success: Type
    failure: Type


@dataclass(frozen=True, slots=True)
class Func:
    pass


Type = Any_ | Prim | Lit | Arr | Obj | Union | Res | Func

ANY = Any_()
STRING, NUMBER, BOOLEAN, NULL = Prim("string"), Prim("number"), Prim("boolean"), Prim("null")
PRIMITIVES = {
    "string": STRING,
    "number": NUMBER,
    "boolean": BOOLEAN,
    "null": NULL,
    "undefined": NULL,
    "void": NULL,
    "regex": Prim("regex"),
}
# Built-in type names the checker knows nothing more about than that they exist.
OPAQUE = frozenset(
    {
        "[]",  # `T["key"]`, an indexed access type: not modelled
        "&",  # `A & B`
        "keyof",
        "Pick",
        "Omit",
        "Required",
        "NonNullable",
        "any",
        "unknown",
        "never",
        "object",
        "Object",
        "Json",
        "Date",
        "Set",
        "Map",
        "Code",
        "Function",
        "Promise",
        "Record",
        "Array",
        "Result",
        "Partial",
        "Thread",
        "Error",
        "Schema",
        "URL",
        "RegExp",
    }
)


def union(options: list[Type]) -> Type:
    """The union of `options`, flattened and without repeats (ANY absorbs everything)."""
    flat: list[Type] = []
    for t in options:
        for o in t.options if type(t) is Union else (t,):
            if type(o) is Any_:
                return ANY
            if o not in flat:
                flat.append(o)
    if not flat:
        return ANY
    return flat[0] if len(flat) == 1 else Union(tuple(flat))


def widen(t: Type) -> Type:
    """What a variable initialised with a value of type `t` holds later (`let x = "a"`:
    string), as TypeScript widens a mutable binding's literal type."""
    if type(t) is Lit:
        return BOOLEAN if type(t.value) is bool else STRING if type(t.value) is str else NUMBER
    if type(t) is Union:
        return union([widen(o) for o in t.options])
    if type(t) is Arr:
        return Arr(widen(t.element))
    if type(t) is Obj:
        return Obj(tuple((n, widen(f), o) for n, f, o in t.fields))
    return t


def assignable(actual: Type, expected: Type) -> bool:
    """Whether a value of type `actual` may be stored where `expected` is declared."""
    if type(actual) is Any_ or type(expected) is Any_:
        return True
    if type(actual) is Union:
        return all(assignable(o, expected) for o in actual.options)
    if type(expected) is Union:
        return any(assignable(actual, o) for o in expected.options)
    if type(expected) is Lit:
        return type(actual) is Lit and actual.value == expected.value
    if type(expected) is Prim:
        if type(actual) is Lit:
            return widen(actual) == expected
        return actual == expected
    if type(expected) is Arr:
        return type(actual) is Arr and assignable(actual.element, expected.element)
    if type(expected) is Obj:
        if type(actual) is not Obj:
            return False
        have = {n: t for n, t, _ in actual.fields}
        for name, t, optional in expected.fields:
            if name not in have:
                if not optional:
                    return False
            elif not assignable(have[name], t):
                return False
        return True
    if type(expected) is Res:
        return (
            type(actual) is Res
            and assignable(actual.success, expected.success)
            and assignable(actual.failure, expected.failure)
        )
    return type(actual) is type(expected)


def show(t: Type) -> str:
    """A type as a diagnostic writes it (`number`, `"a" | "b"`, `string[]`, `{ a: number }`)."""
    if type(t) is Any_:
        return "any"
    if type(t) is Prim:
        return t.name
    if type(t) is Lit:
        if type(t.value) is bool:
            return "true" if t.value else "false"
        if type(t.value) is str:
            return '"' + t.value + '"'
        return f"{t.value:g}" if type(t.value) is float else str(t.value)
    if type(t) is Arr:
        inner = show(t.element)
        return f"({inner})[]" if type(t.element) is Union else f"{inner}[]"
    if type(t) is Obj:
        if not t.fields:
            return "{}"
        parts = [f"{n}{'?' if o else ''}: {show(f)}" for n, f, o in t.fields]
        return "{ " + ", ".join(parts) + " }"
    if type(t) is Union:
        return " | ".join(show(o) for o in t.options)
    if type(t) is Res:
        return f"Result<{show(t.success)}, {show(t.failure)}>"
    return "function"


class Types:
    """Declared types of one module: its aliases, resolved on demand; `unknown(name, span)` is
    told of a type name that is not defined."""

    def __init__(
        self,
        aliases: dict[str, A.TypeAlias],
        imported: set[str],
        unknown: Callable[[str, A.Span], None],
    ) -> None:
        self.aliases = aliases
        self.imported = imported
        self.unknown = unknown
        self._busy: set[str] = set()

    def resolve(self, t: A.TypeExpr | None, params: frozenset[str] = frozenset()) -> Type:
        """The type an annotation declares (ANY for what the checker does not model)."""
        if t is None:
            return ANY
        if isinstance(t, A.TName):
            return self._name(t, params)
        if isinstance(t, A.TLiteral):
            v = t.value
            if v is None:
                return NULL
            return Lit(float(v) if type(v) is int else v)
        if isinstance(t, A.TArray):
            return Arr(self.resolve(t.element, params))
        if isinstance(t, A.TObject):
            return Obj(tuple((f.name, self.resolve(f.type, params), f.optional) for f in t.fields))
        if isinstance(t, A.TUnion):
            return union([self.resolve(o, params) for o in t.options])
        if isinstance(t, A.TGeneric):
            args = [self.resolve(a, params) for a in t.args]
            if t.name == "Result":
                return Res(args[0] if args else ANY, args[1] if len(args) > 1 else ANY)
            if t.name in ("Success", "Failure"):
                inner = args[0] if args else ANY
                return Res(inner, ANY) if t.name == "Success" else Res(ANY, inner)
            if t.name == "Array" and len(args) == 1:
                return Arr(args[0])
            if t.name not in OPAQUE and t.name not in self.aliases and t.name not in self.imported:
                self.unknown(t.name, t.span)
            return ANY
        if isinstance(t, A.TFunc):
            return Func()
        if isinstance(t, (A.TBang, A.TValidated)):
            return self.resolve(t.inner, params)
        return ANY  # value-parameterized types (TCall): not modelled

    def _name(self, t: A.TName, params: frozenset[str]) -> Type:
        name = t.name
        if name in PRIMITIVES:
            return PRIMITIVES[name]
        if name in ("Result", "Success", "Failure"):
            return Res(ANY, ANY)
        if name in params or name in OPAQUE or name in self.imported:
            return ANY
        alias = self.aliases.get(name)
        if alias is None:
            self.unknown(name, t.span)
            return ANY
        if alias.type_params or alias.params or name in self._busy:
            return ANY  # generic and recursive aliases: not modelled
        self._busy.add(name)
        try:
            return self.resolve(alias.type, frozenset(alias.type_params))
        finally:
            self._busy.discard(name)
