"""Provides the type checker behind `std::agency`'s `typecheck` and `typecheckFile`: it reads a
module's declared types and checks its statements against them, without running anything.

What it checks (each diagnostic has the reference implementation's stable `AG####` code):
- AG2001: a value not assignable to a declared type: `const x: number = "s"` (assignment to
  'x'), `return e` in a def or node with a return type (return in 'f').
- AG2003: an object literal with a key its declared object type does not have.
- AG2005: a reassignment `x = e` whose value does not fit `x`'s declared type.
- AG2002: an `if`/`while` condition that is not a boolean (an optional `T | null` is a presence
  test and allowed). AG2006: a `for` over something that is not an array or an object.
- AG2012: a def or node with a return type whose body can end without a `return`.
- AG4005: assigning to (or `++`-ing) a `const`. AG4004: calling a function nothing defines.
- AG6016/AG6017/AG6018: the wrong number of arguments to a def of the module; AG6025: a named
  argument it has no parameter for; AG6026: a named argument for a parameter a positional
  argument fills; AG6019/AG6014: an argument whose type does not fit.
- AG1006: an annotation naming a type that is not defined, built in or imported.
- AG7006: a def marked both `destructive` and `idempotent`.
- AG3009 (warning): a node calls a function that may raise interrupts (it, or what it calls,
  interrupts; `read`/`write`; `guard`) outside a `handle` block or `with` answer.

Types come from annotations and from what expressions evidently are (literals, templates,
arithmetic, comparisons, arrays and objects of those, calls of defs with a return type); what
it cannot tell is `any`, which fits everything, so an unknown never makes an error. Not
checked: generic and value-parameterised aliases, narrowing, definite returns, method calls,
imported functions' argument types, effects declared with `effect`, `raises` clauses.

`// @tc-ignore` on a line of its own silences the next line; `// @tc-ignore AG2001, AG6019`
only those codes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from runtime.language import bytecode
from runtime.language.effect_sets import allowed, effect_sets
from runtime.language.module_info import function_effects
from runtime.language.program import STD_ALWAYS, gather_imports, prelude, std_path
from runtime.language.syntax import ast as A
from runtime.language.syntax.nodes import Node
from runtime.language.syntax.parser import parse
from runtime.language.typecheck_returns import always_returns, needs_return
from runtime.language.typecheck_types import (
    ANY,
    BOOLEAN,
    NULL,
    NUMBER,
    STRING,
    Any_,
    Arr,
    Func,
    Lit,
    Obj,
    Prim,
    Res,
    Type,
    Types,
    Union,
    assignable,
    show,
    union,
    widen,
)

IGNORE = re.compile(r"^\s*//\s*@tc-ignore\b(.*)$")
CODE = re.compile(r"AG\d{4}")
COMPARISONS = {"==", "!=", "===", "!==", "<", ">", "<=", ">=", "=~", "!~", "in", "instanceof"}
ARITHMETIC = {"-", "*", "/", "%", "**"}
# What `typeof x` can give, as TypeScript types it.
TYPEOF_NAMES = union(
    [
        Lit(n)
        for n in (
            "string",
            "number",
            "bigint",
            "boolean",
            "symbol",
            "undefined",
            "object",
            "function",
        )
    ]
)

MESSAGES = {
    "AG1006": "Type alias '{alias}' is not defined (referenced in '{context}').",
    "AG2001": "Type '{actual}' is not assignable to type '{expected}' ({context}).",
    "AG2002": "Type '{actual}' is not assignable to type 'boolean' (condition).",
    "AG2003": "Unknown property '{key}' on type '{expected}' ({context}).",
    "AG2005": "Type '{actual}' is not assignable to type '{expected}'.",
    "AG2012": "Not all code paths return a value in '{fn}'.",
    "AG2006": "For-loop iterable must be an array or Record, got '{actual}'.",
    "AG3009": "Function '{fn}' may throw interrupts [{effects}] but is not inside a handler.",
    "AG3012": (
        "'raises {ref}' names a type alias, not an effect set: declare it with `effectSet`, "
        "or list the effects inline (`<…>`)."
    ),
    "AG3013": (
        "{kind} '{name}' raises effect '{effect}', which its 'raises {declared}' does not "
        "allow. Add '{effect}' to the clause."
    ),
    "AG4004": "Function '{name}' is not defined.",
    "AG4005": "Cannot reassign to constant '{name}'.",
    "AG6014": "Named argument '{name}' on '{fn}' expects type '{expected}', got '{actual}'.",
    "AG6016": "Expected {expected} argument(s) for '{fn}', but got {count}.",
    "AG6017": "Expected at least {min} argument(s) for '{fn}', but got {count}.",
    "AG6018": "Expected {min}-{max} argument(s) for '{fn}', but got {count}.",
    "AG6019": (
        "Argument type '{actual}' is not assignable to parameter type '{expected}' "
        "in call to '{fn}'."
    ),
    "AG6025": "Unknown named argument '{name}' in call to '{fn}'.",
    "AG6026": (
        "Named argument '{name}' conflicts with positional argument at position {position} "
        "in call to '{fn}'."
    ),
    "AG7006": (
        "Function '{name}' cannot be both destructive and idempotent — those markers are "
        "contradictory. Pick one."
    ),
}
WARNINGS = frozenset({"AG3009"})
GUARD = "std::guard"
# Every function the machine provides (the compiler's tables of host functions).
HOST_NAMES = frozenset().union(
    *(v for k, v in vars(bytecode).items() if k.endswith("_NAMES") and type(v) is frozenset)
)


@dataclass
class Diagnostic:
    code: str
    params: dict[str, Any]
    span: A.Span

    def as_plain(self, offsets: list[int]) -> dict[str, Any]:
        line, col = self.span.line, self.span.col
        start = offsets[line - 1] + col - 1 if 0 < line <= len(offsets) else 0
        end_line = self.span.end_line
        end = offsets[end_line - 1] + self.span.end_col - 1 if 0 < end_line <= len(offsets) else 0
        return {
            "code": self.code,
            "severity": "warning" if self.code in WARNINGS else "error",
            "message": MESSAGES[self.code].format(**self.params),
            "loc": {"line": line, "col": col, "start": start, "end": end},
            "params": self.params,
        }


@dataclass
class Binding:
    type: Type
    const: bool
    declared: bool  # from an annotation (reassignments are checked against it)


@dataclass
class Scope:
    """A function's variables (function-scoped, as the language is); blocks and handlers are
    child scopes that see their creator's variables."""

    parent: Scope | None
    vars: dict[str, Binding] = field(default_factory=dict)
    returns: Type | None = None  # the declared return type (None: not checked)
    name: str = ""
    node: bool = False

    def lookup(self, name: str) -> Binding | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.vars:
                return scope.vars[name]
            scope = scope.parent
        return None


class Checker:
    """Checks one parsed module; `diagnostics` holds what it found, in the order found."""

    def __init__(self, tree: A.Program, source: str) -> None:
        self.diagnostics: list[Diagnostic] = []
        self.context = ""
        self.funcs = {i.name: i for i in tree.items if type(i) is A.FuncDecl}
        self.lines = source.splitlines()
        aliases = {i.name: i for i in tree.items if type(i) is A.TypeAlias}
        imported: set[str] = set()
        for item in tree.items:
            if type(item) is A.Import:
                imported |= set(item.names) | {b for _, b in item.aliases}
                if item.namespace:
                    imported.add(item.namespace)
        try:
            modules = [sub for sub, _ in gather_imports(tree, source)]
        except Exception:  # noqa: BLE001 - an unresolvable import is the compiler's to report
            modules = []
        self.effect_sets = effect_sets([*modules, tree])
        self.alias_names = {
            i.name for m in [*modules, tree] for i in m.items if type(i) is A.TypeAlias
        }
        self.known = (
            set(HOST_NAMES)
            | {i.name for i in prelude().items if type(i) is A.FuncDecl}
            | _always_available()
            | {i.name for m in modules for i in m.items if type(i) is A.FuncDecl}
            | {getattr(i, "name", "") for i in tree.items}
            | imported
            | {"debugger"}  # a statement the compiler knows
        )
        try:
            self.effects = function_effects(tree, source, prelude().items)
        except Exception:  # noqa: BLE001 - as above
            self.effects = function_effects(A.Program(tree.items[:0]), "", prelude().items)
        # A budget trip (std::guard) is raised only while a guard runs, and `guard(…)` itself is
        # reported: the LLM calls and helpers that check budgets do not raise it of their own.
        for name, found in self.effects.items():
            if name != "guard" and GUARD in found:
                self.effects[name] = [e for e in found if e != GUARD]
        self.types = Types(aliases, imported, self._unknown_type)
        self.module = Scope(None, name="top-level")
        # Generated code (`$( … )`) may declare functions the source does not show.
        self.spliced = "$(" in source
        self.handlers = 0  # how many handle blocks (or `with` answers) enclose the statement

    def report(self, code: str, span: A.Span, **params: Any) -> None:
        self.diagnostics.append(Diagnostic(code, params, span))

    def _unknown_type(self, name: str, span: A.Span) -> None:
        self.report("AG1006", span, alias=name, context=self.context)

    def resolve(self, t: A.TypeExpr | None, context: str) -> Type:
        self.context = context
        return self.types.resolve(t)

    # -- the module ---------------------------------------------------------------------------

    def check(self, tree: A.Program) -> None:
        for item in tree.items:
            if type(item) is A.TypeAlias and not item.type_params and not item.params:
                self.resolve(item.type, item.name)
        for item in tree.items:
            if type(item) in (A.VarDecl, A.Assign, A.ExprStmt):
                self.statement(item, self.module)
        for item in tree.items:
            if type(item) is A.FuncDecl:
                self.function(item)

    def function(self, f: A.FuncDecl) -> None:
        if "destructive" in f.modifiers and "idempotent" in f.modifiers:
            self.report("AG7006", f.span, name=f.name)
        if f.raises is not None:
            self.raises_clause(f, f.raises)
        scope = Scope(self.module, name=f.name, node=f.kind == "node")
        for p in f.params:
            t = self.resolve(p.type, p.name)
            scope.vars[p.name] = Binding(
                Arr(t) if p.rest and type(t) is not Any_ else t, False, True
            )
        if f.return_type is not None:
            scope.returns = self.resolve(f.return_type, f.name)
        self.block(f.body, scope)
        if scope.returns is not None and needs_return(scope.returns):
            if not always_returns(f.body):
                self.report("AG2012", f.span, fn=f.name)

    def raises_clause(self, f: A.FuncDecl, members: tuple[str, ...]) -> None:
        """Every effect `f` may raise (transitively) must be one its `raises` clause allows."""
        clause = allowed(members, self.effect_sets, self.alias_names)
        for ref in clause.not_sets:
            self.report("AG3012", f.span, ref=ref)
        if clause.not_sets or clause.anything:
            return
        declared = f"<{', '.join(members)}>"
        kind = "Node" if f.kind == "node" else "Function"
        for effect in self.effects.get(f.name, []):
            if effect not in clause.effects:
                self.report(
                    "AG3013", f.span, kind=kind, name=f.name, effect=effect, declared=declared
                )

    # -- statements ---------------------------------------------------------------------------

    def block(self, block: A.Block, scope: Scope) -> None:
        for stmt in block.body:
            self.statement(stmt, scope)

    def statement(self, s: Any, scope: Scope) -> None:
        kind = type(s)
        if kind is A.Block:
            self.block(s, scope)
        elif kind is A.VarDecl:
            self.declaration(s, scope)
        elif kind is A.Assign:
            self.assignment(s, scope)
        elif kind is A.ExprStmt:
            self.expr(s.expr, scope)
        elif kind is A.If:
            self.condition(s.cond, scope)
            self.block(s.then, scope)
            if s.orelse is not None:
                self.statement(s.orelse, scope)
        elif kind is A.While:
            self.condition(s.cond, scope)
            self.block(s.body, scope)
        elif kind is A.ForIn:
            self.loop(s, scope)
        elif kind is A.Return:
            self.returned(s, scope)
        elif kind is A.Goto:
            self.expr(s.call, scope)
        elif kind in (A.ThreadBlock, A.Finalize):
            self.block(s.body, scope)
        elif kind is A.HandleBlock:
            self.handlers += 1
            self.block(s.body, scope)
            self.handlers -= 1
            if s.handler.body is not None:
                inner = Scope(scope, name=scope.name)
                if s.handler.param:
                    inner.vars[s.handler.param] = Binding(ANY, False, False)
                self.block(s.handler.body, inner)
        elif kind is A.WithAction:
            self.handlers += 1
            self.statement(s.stmt, scope)
            self.handlers -= 1
        elif kind is A.Match:
            self.expr(s, scope)

    def declaration(self, s: A.VarDecl, scope: Scope) -> None:
        actual = self.expr(s.value, scope) if s.value is not None else NULL
        if type(s.target) is not A.PBind:
            for name in _bound(s.target):
                scope.vars[name] = Binding(ANY, s.kind == "const", False)
            return
        name = s.target.name
        const = s.kind in ("const", "static")
        if s.type is None:
            scope.vars[name] = Binding(widen(actual), const, False)
            return
        declared = self.resolve(s.type, name)
        context = f"assignment to '{name}'"
        if s.value is not None and not _typed_llm(s.value) and not assignable(actual, declared):
            self.report(
                "AG2001", s.span, actual=show(actual), expected=show(declared), context=context
            )
        elif s.value is not None:
            self.excess(s.value, declared, context)
        scope.vars[name] = Binding(declared, const, True)

    def excess(self, value: Any, expected: Type, context: str) -> None:
        """AG2003: an object literal written for a declared object type names a key the type
        does not have (a misspelt optional field, most often)."""
        if type(value) is not A.ObjectLit or type(expected) is not Obj or not expected.fields:
            return
        known = {name for name, _, _ in expected.fields}
        for entry in value.entries:
            key = getattr(entry, "key", None)
            if type(key) is str and key not in known:
                self.report("AG2003", entry.span, key=key, expected=show(expected), context=context)

    def assignment(self, s: A.Assign, scope: Scope) -> None:
        actual = self.expr(s.value, scope)
        self.expr(s.target, scope) if type(s.target) is not A.Name else None
        if type(s.target) is not A.Name:
            return
        name = s.target.id
        binding = scope.lookup(name)
        if binding is None:
            scope.vars[name] = Binding(widen(actual), False, False)
            return
        if binding.const:
            self.report("AG4005", s.span, name=name)
        elif s.op == "=" and binding.declared and not assignable(actual, binding.type):
            self.report("AG2005", s.span, actual=show(actual), expected=show(binding.type))

    def condition(self, cond: A.Expr, scope: Scope) -> None:
        t = self.expr(cond, scope)
        if assignable(t, BOOLEAN) or (type(t) is Union and NULL in t.options):
            return
        self.report("AG2002", getattr(cond, "span", A.Span(0, 0, 0, 0)), actual=show(t))

    def loop(self, s: A.ForIn, scope: Scope) -> None:
        t = self.expr(s.iterable, scope)
        if type(t) in (Prim, Lit, Res, Func):
            self.report("AG2006", s.iterable.span, actual=show(t))
        element = t.element if type(t) is Arr else ANY
        if s.pattern is not None:
            for name in _bound(s.pattern):
                scope.vars[name] = Binding(ANY, False, False)
        else:
            scope.vars[s.var] = Binding(element if type(t) is Arr else ANY, False, False)
        if s.second:
            scope.vars[s.second] = Binding(NUMBER if type(t) is Arr else ANY, False, False)
        self.block(s.body, scope)

    def returned(self, s: A.Return, scope: Scope) -> None:
        actual = self.expr(s.value, scope) if s.value is not None else NULL
        expected = scope.returns
        if expected is None or (s.value is not None and _typed_llm(s.value)):
            return
        actual = _passed(actual, expected)  # `return failure(…)` fits any def
        context = f"return in '{scope.name}'"
        if not assignable(actual, expected):
            self.report(
                "AG2001", s.span, actual=show(actual), expected=show(expected), context=context
            )
        else:
            self.excess(s.value, expected, context)

    # -- expressions --------------------------------------------------------------------------

    def expr(self, e: Any, scope: Scope) -> Type:
        """The type of `e` (ANY when not evident), checking what it contains on the way."""
        kind = type(e)
        if kind is A.Literal:
            v = e.value
            if v is None:
                return NULL
            return Lit(float(v) if type(v) is int else v)
        if kind is A.Template:
            for part in e.parts:
                if type(part) is not str:
                    self.expr(part, scope)
            return STRING
        if kind is A.Name:
            binding = scope.lookup(e.id)
            return binding.type if binding is not None else ANY
        if kind is A.Binary:
            left, right = self.expr(e.left, scope), self.expr(e.right, scope)
            if e.op in COMPARISONS:
                return BOOLEAN
            if e.op in ARITHMETIC:
                return NUMBER
            if e.op == "+":
                lw, rw = widen(left), widen(right)
                if STRING in (lw, rw):
                    return STRING
                if lw == NUMBER and rw == NUMBER:
                    return NUMBER
            return ANY
        if kind is A.Unary:
            inner = self.expr(e.operand, scope)
            if e.op == "void":
                return NULL
            if e.op == "typeof":
                return TYPEOF_NAMES
            return BOOLEAN if e.op == "!" else NUMBER if e.op in ("-", "+") else inner
        if kind is A.Logical:
            left, right = self.expr(e.left, scope), self.expr(e.right, scope)
            if e.op == "&&" and left == BOOLEAN and right == BOOLEAN:
                return BOOLEAN
            return ANY
        if kind is A.ArrayLit:
            items = [self.expr(i.value if type(i) is A.Spread else i, scope) for i in e.items]
            if not items or any(type(i) is A.Spread for i in e.items):
                return Arr(ANY)
            return Arr(union(items))
        if kind is A.ObjectLit:
            return self.object(e, scope)
        if kind is A.Conditional:
            self.expr(e.cond, scope)
            return union([self.expr(e.then, scope), self.expr(e.orelse, scope)])
        if kind is A.Call:
            return self.call(e, scope)
        if kind is A.Member:
            return self.member(self.expr(e.obj, scope), e.name)
        if kind is A.Update:
            self.mutated(e.target, e.span, scope)
            return NUMBER
        if kind is A.AssignExpr:
            self.assignment(e.assign, scope)
            return ANY
        if kind is A.BlockFn:
            self.block_fn(e, scope)
            return Func()
        if kind is A.Is:
            self.expr(e.value, scope)
            for name in _bound(e.pattern):
                scope.vars.setdefault(name, Binding(ANY, False, False))
            return BOOLEAN
        if kind is A.Match:
            self.expr(e.subject, scope)
            for arm in e.arms:
                for name in _bound(arm.pattern):
                    scope.vars[name] = Binding(ANY, False, False)
                if arm.guard is not None:
                    self.expr(arm.guard, scope)
                if type(arm.body) is A.Block:
                    self.block(arm.body, scope)
                else:
                    self.expr(arm.body, scope)
            return ANY
        if kind is A.ListComp:
            comprehension = Scope(scope, name=scope.name, returns=None)
            self.expr(e.iterable, scope)
            for name in [e.var, e.second, *(_bound(e.pattern) if e.pattern else [])]:
                if name:
                    comprehension.vars[name] = Binding(ANY, False, False)
            if e.cond is not None:
                self.expr(e.cond, comprehension)
            return Arr(widen(self.expr(e.element, comprehension)))
        for child in _children(e):  # Pipe, Catch, Try, Index, Slice, OptionalCall, Spread, …
            if type(child) is A.Block:
                self.block(child, scope)
            elif type(child) is A.Arg:
                self.expr(child.value, scope)
            elif hasattr(child, "span") and not isinstance(child, (str, A.Param)):
                self.expr(child, scope)
        return ANY

    def object(self, e: A.ObjectLit, scope: Scope) -> Type:
        fields: list[tuple[str, Type, bool]] = []
        exact = True
        for entry in e.entries:
            if isinstance(entry, A.Spread):
                self.expr(entry.value, scope)
                exact = False
                continue
            t = self.expr(entry.value, scope)
            if type(entry.key) is str:
                fields.append((entry.key, t, False))
            else:
                self.expr(entry.key, scope)
                exact = False
        return Obj(tuple(fields)) if exact else ANY

    def member(self, t: Type, name: str) -> Type:
        if name == "length" and (type(t) is Arr or widen(t) == STRING):
            return NUMBER
        if type(t) is Obj:
            for field_name, field_type, optional in t.fields:
                if field_name == name:
                    return union([field_type, NULL]) if optional else field_type
        if type(t) is Res:
            return t.success if name == "value" else t.failure if name == "error" else ANY
        return ANY

    def mutated(self, target: Any, span: A.Span, scope: Scope) -> None:
        if type(target) is A.Name:
            binding = scope.lookup(target.id)
            if binding is not None and binding.const:
                self.report("AG4005", span, name=target.id)
        else:
            self.expr(target, scope)

    def block_fn(self, e: A.BlockFn, scope: Scope) -> None:
        inner = Scope(scope, name=scope.name, returns=None, node=scope.node)
        for p in e.params:
            inner.vars[p.name] = Binding(self.resolve(p.type, p.name), False, p.type is not None)
        self.block(e.body, inner)

    def call(self, e: A.Call, scope: Scope) -> Type:
        given = [(a, self.expr(a.value, scope)) for a in e.args]
        if e.block is not None:
            self.block_fn(e.block, scope)
        if type(e.callee) is not A.Name:
            self.expr(e.callee, scope)
            return ANY
        name = e.callee.id
        if scope.lookup(name) is not None:
            return ANY  # a function held in a variable: its signature is not known
        if scope.node and not self.handlers and self.effects.get(name):
            effects = ", ".join(self.effects[name])
            self.report("AG3009", e.span, fn=name, effects=effects)
        if name in ("success", "failure"):
            inner = widen(given[0][1]) if given else NULL
            return Res(inner, ANY) if name == "success" else Res(ANY, inner)
        f = self.funcs.get(name)
        if f is None:
            if name not in self.known and not self.spliced and not name[:1].isupper():
                self.report("AG4004", e.callee.span, name=name)
            return ANY
        self.arguments(f, e, given)
        return self.resolve(f.return_type, f.name) if f.return_type is not None else ANY

    def parameter(self, f: A.FuncDecl, p: A.Param) -> Type:
        """What an argument for `p` must be: a validated parameter (`x: T!`, checked by the
        body's first statements) takes anything, a value that fails its check makes the call
        return a failure; a `Schema` one is filled in when left out."""
        checked = p.name + "!"
        for stmt in f.body.body:
            if type(stmt) is A.VarDecl and getattr(stmt.target, "name", "") == checked:
                return ANY
        t = self.resolve(p.type, p.name)
        return union([t, NULL]) if p.default is not None or self.optional(p) else t

    def optional(self, p: A.Param) -> bool:
        """`name?: T` (the parser keeps no mark of the `?`, so it is read from the source)."""
        line = self.lines[p.span.line - 1] if 0 < p.span.line <= len(self.lines) else ""
        return line[p.span.col - 1 :].lstrip(".").startswith(p.name + "?")

    def arguments(self, f: A.FuncDecl, e: A.Call, given: list[tuple[A.Arg, Type]]) -> None:
        """Arity and argument types of a call to a def of this module."""
        if any(a.spread for a, _ in given):
            return
        rest = any(p.rest for p in f.params)
        fixed = [p for p in f.params if not p.rest]
        by_name = {p.name: p for p in f.params}
        positional = [(a, t) for a, t in given if a.name is None]
        named = [(a, t) for a, t in given if a.name is not None]
        for a, _ in named:
            if a.name not in by_name and not rest:
                self.report("AG6025", a.span, name=a.name, fn=f.name)
            elif a.name in by_name and by_name[a.name] in fixed[: len(positional)]:
                at = fixed.index(by_name[a.name]) + 1
                self.report("AG6026", a.span, name=a.name, fn=f.name, position=at)
        required = sum(
            1 for p in fixed if p.default is None and not _schema(p) and not self.optional(p)
        )
        count = len(given) + (1 if e.block is not None else 0)
        bound = {p.name for p in fixed[: len(positional)]} | {a.name for a, _ in named}
        unbound = [
            p
            for p in fixed
            if p.default is None and not _schema(p) and not self.optional(p) and p.name not in bound
        ]
        missing = len(unbound) > (1 if e.block is not None else 0)
        too_many = not rest and len(positional) > len(fixed)
        if missing or too_many:
            if rest:
                self.report("AG6017", e.span, min=required, fn=f.name, count=count)
            elif required == len(fixed):
                self.report("AG6016", e.span, expected=required, fn=f.name, count=count)
            else:
                self.report("AG6018", e.span, min=required, max=len(fixed), fn=f.name, count=count)
        for (a, t), p in zip(positional, fixed, strict=False):
            expected = self.parameter(f, p)
            if not assignable(_passed(t, expected), expected):
                self.report("AG6019", a.span, actual=show(t), expected=show(expected), fn=f.name)
        for a, t in named:
            param = by_name.get(a.name or "")
            if param is None:
                continue
            expected = self.parameter(f, param)
            if not assignable(_passed(t, expected), expected):
                self.report(
                    "AG6014",
                    a.span,
                    name=a.name,
                    fn=f.name,
                    expected=show(expected),
                    actual=show(t),
                )


@lru_cache(maxsize=1)
def _always_available() -> frozenset[str]:
    """The functions of the std modules every program sees without importing them."""
    names: set[str] = set()
    for module in STD_ALWAYS:
        path = std_path(module)
        if path is not None:
            tree = parse(path.read_text(encoding="utf-8"), str(path))
            names |= {i.name for i in tree.items if type(i) is A.FuncDecl}
    return frozenset(names)


def _children(node: Any) -> list[Any]:
    out: list[Any] = []
    for name in node._fields if isinstance(node, Node) else ():
        if name == "span":
            continue
        value = getattr(node, name)
        if isinstance(value, tuple):
            out.extend(value)
        elif value is not None:
            out.append(value)
    return out


def _bound(pattern: Any) -> list[str]:
    """The names a pattern binds."""
    if pattern is None:
        return []
    if type(pattern) is A.PBind:
        return [pattern.name]
    names: list[str] = []
    for child in _children(pattern):
        if type(child) is str:
            if type(pattern) in (A.PObject, A.PArray):
                names.append(child)  # a `...rest` name
        elif type(child) is A.PObjectField:
            names.extend(_bound(child.pattern))
        elif isinstance(child, Node) and type(child).__name__.startswith("P"):
            names.extend(_bound(child))
    return names


def _schema(p: A.Param) -> bool:
    """A `Schema<T>` parameter, which a call may leave out (it is given the expected type's)."""
    t = p.type
    return type(t) in (A.TName, A.TGeneric) and getattr(t, "name", "") == "Schema"


def _passed(actual: Type, expected: Type) -> Type:
    """What a parameter receives: a Result given for a parameter that takes no Result is its
    success value (a failure skips the call and is its result)."""
    if type(actual) is Res and not assignable(actual, expected):
        return actual.success
    return actual


def _typed_llm(e: Any) -> bool:
    """`llm(…)` answers in the declared type (its schema is the annotation)."""
    return type(e) is A.Call and type(e.callee) is A.Name and e.callee.id == "llm"


def _ignored(source: str) -> dict[int, set[str] | None]:
    """Line → the codes `// @tc-ignore` silences on it (None: every code)."""
    out: dict[int, set[str] | None] = {}
    for number, line in enumerate(source.splitlines(), start=1):
        m = IGNORE.match(line)
        if m:
            codes = set(CODE.findall(m.group(1)))
            out[number + 1] = codes or None
    return out


def typecheck(source: str, path: str = "<source>.agency") -> dict[str, list[dict[str, Any]]]:
    """The report on `source`: `{errors, warnings}`, each a list of diagnostics
    `{code, severity, message, loc: {line, col, start, end}, params}` in source order. A source
    that does not parse raises `AgencySyntaxError`."""
    tree = parse(source, path)
    checker = Checker(tree, source)
    checker.check(tree)
    offsets = [0]
    for line in source.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    ignored = _ignored(source)
    report: dict[str, list[dict[str, Any]]] = {"errors": [], "warnings": []}
    seen: set[tuple[str, int, int, str]] = set()
    found = sorted(checker.diagnostics, key=lambda d: (d.span.line, d.span.col))
    for d in found:
        # The same finding twice is reported once; two at one place (a function's clause
        # exceeded by two effects) are two.
        key = (d.code, d.span.line, d.span.col, MESSAGES[d.code].format(**d.params))
        codes = ignored.get(d.span.line, set())
        if key in seen or (d.span.line in ignored and (codes is None or d.code in codes)):
            continue
        seen.add(key)
        plain = d.as_plain(offsets)
        report["warnings" if plain["severity"] == "warning" else "errors"].append(plain)
    return report
