"""Provides schema validation as ordinary Agency code: the parser turns `T!`, `schema(T)` and
`type X = …` into calls of prelude functions (`__validate`, `__schema_check`, …, written in
Agency at the end of prelude.agency), so validating is a run of steps like any other call, its
state is frames and locals, and a validator may pause or be checkpointed inside.

A type becomes a *descriptor*, plain data built at run time (so `Age(18)` and
`min.partial(n: low)` are evaluated where they are written):

    {k: "string" | "number" | "boolean" | "null" | "any" | "object" | "regex" | "function"}
    {k: "lit", value: v}                 a literal type
    {k: "array", of: D}                  T[]
    {k: "fields", fields: [{name, optional, type: D}]}   an object type
    {k: "union", of: [D, …]}
    {k: "result", of: D | null}          Result, Result<T>
    {k: "record", of: D}                 Record<K, V>
    {k: "partial" | "required", of: D}   Partial<T>, Required<T>
    {k: "pick" | "omit", of: D, keys: D} Pick<T, "a" | "b">, Omit<…>
    {k: "nonnull", of: D}                NonNullable<T>
    {k: "all", of: [D, …]}               A & B
    {k: "keyof", of: D}                  keyof T
    {k: "ref", fn: F, args: [...]}       an alias: F is its generated `__schema_Name` def (or,
                                         for `T["key"]`, the prelude's `__schema_index`)
    {k: "check", of: D, validators: [f, …], json: [{…}, …]}   `@validate` / `@jsonSchema`

Each `type Name<T>(p: number) = …` gets a def named `type Name` with parameters `(T, p)` returning the descriptor
of its right-hand side (type parameters are descriptors, value parameters values), so recursive
aliases are expanded lazily, one level per use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import runtime.language.syntax.ast as A
from runtime.language.syntax.nodes import Node, replace

SCHEMA_PREFIX = "type "  # `type Age`: its generated def (no program can write that name)

PRIMITIVES = {
    "string": "string",
    "number": "number",
    "boolean": "boolean",
    "null": "null",
    "undefined": "null",
    "void": "null",
    "any": "any",
    "unknown": "any",
    "never": "any",
    "object": "object",
    "regex": "regex",
    "RegExp": "regex",
    "Function": "function",
}
_WRAPPERS = {
    "Partial": "partial",
    "Required": "required",
    "NonNullable": "nonnull",
    "Pick": "pick",
    "Omit": "omit",
}


def _obj(span: A.Span, **entries: A.Expr) -> A.ObjectLit:
    return A.ObjectLit(tuple(A.ObjectEntry(k, v, span) for k, v in entries.items()), span)


def _lit(v: Any, span: A.Span) -> A.Literal:
    return A.Literal(v, span)


def _arr(items: Sequence[A.Expr], span: A.Span) -> A.ArrayLit:
    return A.ArrayLit(tuple(items), span)


def _call(name: str, span: A.Span, *args: A.Expr) -> A.Call:
    return A.Call(A.Name(name, span), tuple(A.Arg(a, None, False, span) for a in args), span)


def descriptor(t: A.TypeExpr, type_params: frozenset[str] = frozenset()) -> A.Expr:
    """The expression building the descriptor of `t`; names in `type_params` are descriptors
    passed in (the `<T>` of a generic alias)."""
    span = t.span
    if isinstance(t, A.TBang):
        return descriptor(t.inner, type_params)
    if isinstance(t, A.TName):
        if t.name in type_params:
            return A.Name(t.name, span)
        return _named(t.name, (), span)
    if isinstance(t, A.TLiteral):
        return _obj(span, k=_lit("lit", span), value=_lit(t.value, span))
    if isinstance(t, A.TArray):
        return _obj(span, k=_lit("array", span), of=descriptor(t.element, type_params))
    if isinstance(t, A.TObject):
        fields = [
            _obj(
                f.span,
                name=_lit(f.name, f.span),
                optional=_lit(f.optional, f.span),
                type=descriptor(f.type, type_params),
            )
            for f in t.fields
        ]
        return _obj(span, k=_lit("fields", span), fields=_arr(fields, span))
    if isinstance(t, A.TUnion):
        options = [descriptor(o, type_params) for o in t.options]
        return _obj(span, k=_lit("union", span), of=_arr(options, span))
    if isinstance(t, A.TGeneric):
        args = [descriptor(a, type_params) for a in t.args]
        return _generic(t.name, args, span)
    if isinstance(t, A.TCall):
        targs = [descriptor(a, type_params) for a in t.type_args]
        return _named(t.name, (*targs, *t.args), span)
    if isinstance(t, A.TValidated):
        return _obj(
            span,
            k=_lit("check", span),
            of=descriptor(t.inner, type_params),
            validators=_arr(list(t.validators), span),
            json=_arr(list(t.json), span),
        )
    return _obj(span, k=_lit("function" if isinstance(t, A.TFunc) else "any", span))


def _named(name: str, args: tuple[A.Expr, ...], span: A.Span) -> A.Expr:
    if not args and name in PRIMITIVES:
        return _obj(span, k=_lit(PRIMITIVES[name], span))
    if not args and name == "Result":
        return _obj(span, k=_lit("result", span), of=_lit(None, span))
    if not args and name in ("Schema", "Date", "Map", "Set"):
        return _obj(span, k=_lit("any", span))
    fn = A.Name(SCHEMA_PREFIX + name, span)
    return _obj(span, k=_lit("ref", span), fn=fn, args=_arr(list(args), span))


def _generic(name: str, args: list[A.Expr], span: A.Span) -> A.Expr:
    first = args[0] if args else _lit(None, span)
    if name == "Result":
        return _obj(span, k=_lit("result", span), of=first)
    if name == "&":
        return _obj(span, k=_lit("all", span), of=_arr(args, span))
    if name == "keyof":
        return _obj(span, k=_lit("keyof", span), of=first)
    if name == "[]" and len(args) == 2:  # `T["key"]`: resolved when used, as an alias is
        fn = A.Name("__schema_index", span)
        return _obj(span, k=_lit("ref", span), fn=fn, args=_arr(args, span))
    if name == "Record" and len(args) == 2:
        return _obj(span, k=_lit("record", span), of=args[1])
    if name == "Array" and len(args) == 1:
        return _obj(span, k=_lit("array", span), of=first)
    if name in ("Pick", "Omit") and len(args) == 2:
        return _obj(span, k=_lit(_WRAPPERS[name], span), of=first, keys=args[1])
    if name in _WRAPPERS and len(args) == 1:
        return _obj(span, k=_lit(_WRAPPERS[name], span), of=first)
    if name in ("Schema", "Promise", "Set", "Map"):
        return _obj(span, k=_lit("any", span))
    return _named(name, tuple(args), span)


def schema_function(alias: A.TypeAlias) -> A.FuncDecl:
    """`def __schema_Name(T…, p…) { return <descriptor> }` for `type Name<T…>(p…) = …`."""
    span = alias.span
    defaults = alias.type_defaults or (None,) * len(alias.type_params)
    # a type parameter's default is a descriptor too, built from the parameters before it
    params = tuple(
        A.Param(
            n,
            A.TName("any", span),
            None if d is None else descriptor(d, frozenset(alias.type_params[:i])),
            False,
            span,
        )
        for i, (n, d) in enumerate(zip(alias.type_params, defaults))
    )
    params += tuple(
        A.Param(p.name, A.TName("any", span), None, False, p.span) for p in alias.params
    )
    body = A.Block((A.Return(descriptor(alias.type, frozenset(alias.type_params)), span),), span)
    return A.FuncDecl("def", SCHEMA_PREFIX + alias.name, params, None, body, None, (), span)


def schema_value(t: A.TypeExpr, span: A.Span) -> A.Expr:
    """`schema(T)`: an object whose `parse`, `parseJSON` and `toJSONSchema` (also under
    `zodSchema`) are prelude functions with the descriptor bound."""
    d = descriptor(t)

    def bound(fn: str) -> A.Expr:
        partial = A.Member(A.Name(fn, span), "partial", False, span)
        return A.Call(partial, (A.Arg(d, "d", False, span),), span)

    json = bound("__schema_json")
    return _obj(
        span,
        parse=bound("__schema_parse"),
        parseJSON=bound("__schema_parse_json"),
        toJSONSchema=json,
        zodSchema=_obj(span, toJSONSchema=json),
    )


def validated(value: A.Expr, t: A.TypeExpr) -> A.Expr:
    """`__validate(value, <descriptor of t>)`: what `const x: T! = value` stores."""
    return _call("__validate", value.span, value, descriptor(t))


# -- `!` on declarations, parameters and return types ------------------------------------------


def bang_var(decl: A.VarDecl) -> A.VarDecl:
    """`const x: T! = e` stores `__validate(e, T)`: a success of the value or a failure."""
    if type(decl.type) is not A.TBang or decl.value is None:
        return decl
    return replace(decl, value=validated(decl.value, decl.type.inner))


def bang_function(decl: A.FuncDecl) -> A.FuncDecl:
    """`def f(x: T!): R!`: each `!` parameter is validated on entry (a failure is returned
    without running the body; the parameter keeps its plain value) and each returned value
    is validated (`return e` returns `__validate(e, R)`)."""
    bang_params = [p for p in decl.params if type(p.type) is A.TBang]
    returns = decl.return_type
    if not bang_params and type(returns) is not A.TBang:
        return decl
    body = decl.body
    if type(returns) is A.TBang:
        body = _wrap_returns(body, returns.inner)
    prologue: list[A.Stmt] = []
    for p in bang_params:
        assert type(p.type) is A.TBang
        span = p.span
        checked = p.name + "!"  # not a name a program can write: no clash with its locals
        target = A.PBind(checked, span)
        prologue.append(
            A.VarDecl("const", target, None, validated(A.Name(p.name, span), p.type.inner), span)
        )
        fail = A.Return(A.Name(checked, span), span)
        cond = _call("isFailure", span, A.Name(checked, span))
        prologue.append(A.If(cond, A.Block((fail,), span), None, span))
    params = tuple(
        replace(p, type=p.type.inner) if type(p.type) is A.TBang else p for p in decl.params
    )
    body = A.Block((*prologue, *body.body), body.span)
    return replace(decl, params=params, body=body)


def _wrap_returns(node: Any, t: A.TypeExpr) -> Any:
    """`node` with every `return e` of its function (not of nested blocks) validated."""
    if type(node) is A.Return:
        value = node.value if node.value is not None else A.Literal(None, node.span)
        return A.Return(validated(value, t), node.span)
    if type(node) in (A.BlockFn, A.FuncDecl) or not isinstance(node, Node):
        return node
    changes: dict[str, Any] = {}
    for name in node._fields:
        v = getattr(node, name)
        if isinstance(v, Node):
            w = _wrap_returns(v, t)
        elif type(v) is tuple:
            w = tuple(_wrap_returns(x, t) for x in v)
        else:
            continue
        if w is not v:
            changes[name] = w
    return replace(node, **changes) if changes else node


# -- type patterns with validators: `x is Adult`, `p: Positive => …` -----------------------------


def has_validators(t: A.TypeExpr, aliases: Mapping[str, A.TypeExpr]) -> bool:
    """Whether testing a value against `t` runs `@validate` validators (through aliases)."""
    seen: set[str] = set()
    todo: list[Any] = [t]
    while todo:
        x = todo.pop()
        if isinstance(x, A.TValidated):
            if x.validators:
                return True
            todo.append(x.inner)
        elif isinstance(x, (A.TName, A.TCall)):
            if x.name in aliases and x.name not in seen:
                seen.add(x.name)
                todo.append(aliases[x.name])
            if isinstance(x, A.TCall):
                todo.extend(x.type_args)
        elif isinstance(x, (A.TBang, A.TArray)):
            todo.append(x.inner if isinstance(x, A.TBang) else x.element)
        elif isinstance(x, A.TObject):
            todo.extend(f.type for f in x.fields)
        elif isinstance(x, A.TUnion):
            todo.extend(x.options)
        elif isinstance(x, A.TGeneric):
            todo.extend(x.args)
    return False


def conforms_expr(value: A.Expr, t: A.TypeExpr) -> A.Expr:
    """`__schema_check(<descriptor of t>, value, "", 0) == null`: whether `value` has the type
    `t`, its validators included."""
    span = value.span
    check = _call("__schema_check", span, descriptor(t), value, _lit("", span), _lit(0, span))
    return A.Binary("==", check, _lit(None, span), span)


def validated_binders(
    pattern: A.Pattern, aliases: Mapping[str, A.TypeExpr], fresh: Any
) -> tuple[A.Pattern, list[tuple[str, A.TypeExpr]]]:
    """`pattern` with each nested type pattern whose type has validators given a binder (a
    fresh name from `fresh()` when it had none), and the (binder, type) pairs to validate after
    the structural match. A type pattern around a non-binder pattern is left unchecked."""
    found: list[tuple[str, A.TypeExpr]] = []

    def walk(p: Any) -> Any:
        if isinstance(p, A.PType) and has_validators(p.type, aliases):
            if p.inner is None or isinstance(p.inner, A.PWildcard):
                name = fresh()
                found.append((name, p.type))
                return replace(p, inner=A.PBind(name, p.span))
            if isinstance(p.inner, A.PBind):
                found.append((p.inner.name, p.type))
                return p
        if not isinstance(p, Node):
            return p
        changes: dict[str, Any] = {}
        for field in p._fields:
            v = getattr(p, field)
            if isinstance(v, Node):
                w = walk(v)
            elif type(v) is tuple:
                w = tuple(walk(x) for x in v)
            else:
                continue
            if w != v:
                changes[field] = w
        return replace(p, **changes) if changes else p

    return walk(pattern), found
