"""Provides the Agency abstract syntax tree.

Every node is a frozen, slotted dataclass with structural equality, so parser tests can compare
whole trees. Each node carries a `span`; spans are excluded from equality (two trees that differ
only in layout compare equal) but are always present, because the compiler turns them into step
locations and the error printer into carets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from runtime.errors import NO_SPAN as NO_SPAN  # spans are part of every node
from runtime.errors import Span as Span


def _span() -> Span:
    return field(default=NO_SPAN, compare=False, repr=False)


# --------------------------------------------------------------------------------------------
# Types (parsed for llm() structured output and tool schemas; otherwise ignored at run time)


@dataclass(frozen=True, slots=True)
class TName:
    """A named type: `string`, `number`, `boolean`, `any`, `null`, or an alias."""

    name: str
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class TLiteral:
    """A literal type: `"yes"`, `3`, `true`."""

    value: str | float | int | bool | None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class TArray:
    """`T[]` (also `Array<T>`)."""

    element: TypeExpr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class TField:
    name: str
    type: TypeExpr
    optional: bool = False
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class TObject:
    """`{k: T, k?: T}`."""

    fields: tuple[TField, ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class TUnion:
    """`A | B | C`."""

    options: tuple[TypeExpr, ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class TGeneric:
    """`Name<A, B>`, e.g. `Result<S, F>`."""

    name: str
    args: tuple[TypeExpr, ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class TFunc:
    """A function type `(a: T, U) -> R` (a block or function parameter). Parameter names are
    dropped; only their types are kept."""

    params: tuple[TypeExpr, ...]
    result: TypeExpr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class TBang:
    """`T!`: a value checked against `T` at run time (schema validation), giving a Result."""

    inner: TypeExpr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class TValidated:
    """A type with `@validate(f, …)` validators and `@jsonSchema({…})` fragments (in source
    order), on a `type` alias or an object-type field."""

    inner: TypeExpr
    validators: tuple[Expr, ...] = ()
    json: tuple[Expr, ...] = ()
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class TCall:
    """A use of a value-parameterised alias: `Age(18)`, `Bounded<string>(1, 3)`."""

    name: str
    type_args: tuple[TypeExpr, ...]
    args: tuple[Expr, ...]
    span: Span = _span()


TypeExpr = Union[
    TName, TLiteral, TArray, TObject, TUnion, TGeneric, TFunc, TBang, TValidated, TCall
]


# --------------------------------------------------------------------------------------------
# Patterns (match arms and destructuring)


@dataclass(frozen=True, slots=True)
class PWildcard:
    """`_`."""

    span: Span = _span()


@dataclass(frozen=True, slots=True)
class PLiteral:
    """A literal pattern: string, number, boolean or null; matches by `==`."""

    value: str | float | int | bool | None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class PBind:
    """A name pattern: always matches and binds the value."""

    name: str
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class PObjectField:
    """`key: pattern` inside an object pattern; `{x}` is `key="x", pattern=PBind("x")`."""

    key: str
    pattern: Pattern
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class PObject:
    """`{type: "a", x}` (and `{a, ...rest}`): matches an object whose listed keys match; `rest`
    gets the other keys."""

    fields: tuple[PObjectField, ...]
    rest: str | None = None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class PArray:
    """`[a, b]` (and `[a, ...rest]`): matches an array of exactly that length, or at least that
    length when `rest` is set."""

    items: tuple[Pattern, ...]
    rest: str | None = None
    span: Span = _span()
    tail: tuple[Pattern, ...] = ()  # items after a middle `...rest`: `[first, ...mid, last]`


@dataclass(frozen=True, slots=True)
class PResult:
    """`success(p)` or `failure(p)`: matches a Result of that kind, inner pattern on value/error."""

    kind: str  # "success" | "failure"
    inner: Pattern | None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class PType:
    """A type test: `s: string`, `{name}: Person`, `is boolean`, a type in an object field's
    value position (`{name: string}`). Matches when the value conforms to `type` and `inner`
    (when given) matches; binders get the original value."""

    inner: Pattern | None
    type: TypeExpr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class PValue:
    """`(expr)` as a match arm's case: matches when the subject `==` the expression's value
    (only at the top of an arm; the compiler evaluates it)."""

    expr: Expr
    span: Span = _span()


Pattern = Union[PWildcard, PLiteral, PBind, PObject, PArray, PResult, PType, PValue]


# --------------------------------------------------------------------------------------------
# Expressions


@dataclass(frozen=True, slots=True)
class Literal:
    """A number (int when integral in the source, else float), string, boolean or null."""

    value: str | float | int | bool | None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Template:
    """An interpolated string; parts alternate literal text (str) and expressions."""

    parts: tuple[str | Expr, ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Name:
    id: str
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Spread:
    """`...expr` inside an array literal, object literal or call arguments."""

    value: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class ArrayLit:
    items: tuple[Expr | Spread, ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class ObjectEntry:
    """`k: v`, `"k": v` (key is a str) or `[expr]: v` (key is an Expr). `{x}` is `x: x`."""

    key: str | Expr
    value: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class ObjectLit:
    entries: tuple[ObjectEntry | Spread, ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Unary:
    """Prefix `!`, `-`, `+`, `typeof`."""

    op: str
    operand: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Binary:
    """Arithmetic, comparison and equality: `+ - * / % ** == != === !== < > <= >=`."""

    op: str
    left: Expr
    right: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Logical:
    """Short-circuit `&&`, `||`, `??`."""

    op: str
    left: Expr
    right: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Pipe:
    """`left |> right`: calls `right` with `left` (a Result's value; a failure passes through)."""

    left: Expr
    right: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Catch:
    """`expr catch default`: `default` when `expr` is a failure or raises; else its value."""

    value: Expr
    default: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Try:
    """`try expr`: a runtime error becomes `failure(message)`; a value is returned as is."""

    value: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Conditional:
    """`if c then a else b` as an expression."""

    cond: Expr
    then: Expr
    orelse: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Arg:
    """A call argument: positional (`name` is None), named (`name: value`) or `...spread`."""

    value: Expr
    name: str | None = None
    spread: bool = False
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Call:
    """`callee(args)`, optionally followed by a trailing block (`f(xs) as x { … }`), which is
    passed as the callee's last parameter."""

    callee: Expr
    args: tuple[Arg, ...]
    span: Span = _span()
    block: BlockFn | None = None


@dataclass(frozen=True, slots=True)
class BlockFn:
    """A block: the trailing `as (a, b) { … }` of a call, or an inline `\\(a, b) -> expr`
    (whose body is one `return expr`). Evaluates to a closure over the enclosing function."""

    params: tuple[Param, ...]
    body: Block
    inline: bool = False
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Member:
    """`obj.name` or `obj?.name` (optional)."""

    obj: Expr
    name: str
    optional: bool = False
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Index:
    """`obj[index]` or `obj?.[index]`."""

    obj: Expr
    index: Expr
    optional: bool = False
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Slice:
    """`obj[start:end]`; either bound may be omitted."""

    obj: Expr
    start: Expr | None
    end: Expr | None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Update:
    """Postfix `target++` / `target--`; evaluates to the old value."""

    op: str  # "++" | "--"
    target: Expr  # Name, Member or Index
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class OptionalCall:
    """`callee?.(args)`: null when the callee is null, else the call."""

    callee: Expr
    args: tuple[Arg, ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class AssignExpr:
    """`(target op value)` in parentheses: the assignment, used as an expression whose value is
    what the target holds afterwards."""

    assign: Assign
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class ListComp:
    """`[expr for x in xs]` (optionally `if cond`)."""

    element: Expr
    var: str
    iterable: Expr
    cond: Expr | None = None
    span: Span = _span()
    second: str | None = None  # `for x, i in xs` (index) / `for k, v in obj` (value)
    pattern: Pattern | None = None  # `for {name} in people`: `var` is then ""


@dataclass(frozen=True, slots=True)
class MatchArm:
    """`pattern => body` or `pattern if (guard) => body`; body is an Expr or a Block.

    In the head form `match (x is P) { cond => … }` each arm's case is a boolean expression,
    held in `guard` with a PWildcard pattern (`_` alone is the default arm).
    """

    pattern: Pattern
    body: Expr | Block
    span: Span = _span()
    guard: Expr | None = None


@dataclass(frozen=True, slots=True)
class Match:
    """`match (subject) { arms }`, usable as a statement or an expression.

    `head`: the `match (x is P) { … }` form; `subject` is then the Is whose pattern is matched
    once (a mismatch makes the enclosing function return a failure)."""

    subject: Expr
    arms: tuple[MatchArm, ...]
    span: Span = _span()
    head: bool = False


@dataclass(frozen=True, slots=True)
class Is:
    """`value is pattern`: true when the value matches; binders are assigned when it does."""

    value: Expr
    pattern: Pattern
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Splice:
    """`$( generator(…) )`: code a generator in another file returns, run while the program is
    loaded and put in the splice's place (program.py expands it before compiling)."""

    expr: Expr
    span: Span = _span()


Expr = Union[
    Splice,
    Literal,
    Template,
    Name,
    ArrayLit,
    ObjectLit,
    Unary,
    Binary,
    Logical,
    Pipe,
    Catch,
    Try,
    Conditional,
    Call,
    Member,
    Index,
    Slice,
    Update,
    ListComp,
    Match,
    Is,
    BlockFn,
    AssignExpr,
    OptionalCall,
]


# --------------------------------------------------------------------------------------------
# Statements


@dataclass(frozen=True, slots=True)
class Block:
    body: tuple[Stmt, ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class VarDecl:
    """`let`/`const` declaration, also at module level.

    `kind` is one of: "let", "const", "shared" (module only, survives restore), "static"
    (module only, `static const`), or "assign" (a bare top-level `x = e`).
    `target` is a PBind, or a PArray/PObject for destructuring.
    """

    kind: str
    target: Pattern
    type: TypeExpr | None
    value: Expr | None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Assign:
    """`target op value` with op in `= += -= *= /= ??= ||= &&=`; target is Name, Member or
    Index."""

    target: Expr
    op: str
    value: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class ExprStmt:
    expr: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class If:
    cond: Expr
    then: Block
    orelse: Block | If | None = None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class While:
    cond: Expr
    body: Block
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class ForIn:
    """`for (a in xs)`, `for (a, b in xs)`.

    Over an array `a` is the item and `b` the index; over an object `a` is the key and `b` the
    value; `range(n)` is an array.
    """

    var: str
    second: str | None
    iterable: Expr
    body: Block
    span: Span = _span()
    pattern: Pattern | None = None  # `for ([k, v] in pairs)`: `var` is then ""


@dataclass(frozen=True, slots=True)
class Break:
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Continue:
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Return:
    value: Expr | None = None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Goto:
    """`goto other(args)`: a one-way transition to another node."""

    call: Call
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class ThreadBlock:
    """`thread { }` (fresh conversation) or `subthread { }` (a copy of the current one)."""

    kind: str  # "thread" | "subthread"
    body: Block
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Handler:
    """The `with (param) { body }` part of a handle block; or `with name` naming a def."""

    param: str | None
    body: Block | None
    func: str | None = None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class HandleBlock:
    """`handle { body } with (data) { … }`."""

    body: Block
    handler: Handler
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class WithAction:
    """`stmt with approve` / `stmt with reject` / `stmt with propagate` / `stmt with handlerFn`:
    answers interrupts raised by one statement."""

    stmt: Stmt
    action: str  # "approve" | "reject" | "propagate" | the name of a handler def
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Finalize:
    """`finalize { … }` / `finalize as draft { … }` at the end of a function or block: what the
    scope returns when a guard aborts it (`draft` is its last `saveDraft` value, or null)."""

    binder: str | None
    body: Block
    span: Span = _span()


Stmt = Union[
    Block,
    VarDecl,
    Assign,
    ExprStmt,
    If,
    While,
    ForIn,
    Break,
    Continue,
    Return,
    Goto,
    ThreadBlock,
    HandleBlock,
    WithAction,
    Match,
    Finalize,
]


# --------------------------------------------------------------------------------------------
# Top level


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    type: TypeExpr | None = None
    default: Expr | None = None
    rest: bool = False
    span: Span = _span()
    optional: bool = False  # `name?: T`: a call may leave it out (it is null)


@dataclass(frozen=True, slots=True)
class FuncDecl:
    """A `node` or a `def`.

    `doc` is the `\"\"\"docstring\"\"\"` first in the body (or a preceding `/** doc */`), used as
    the tool description. `modifiers` holds words written before `def`, such as "destructive"
    or "idempotent".
    """

    kind: str  # "node" | "def"
    name: str
    params: tuple[Param, ...]
    return_type: TypeExpr | None
    body: Block
    doc: str | None = None
    modifiers: tuple[str, ...] = ()
    span: Span = _span()
    # The `raises <…>` clause: the effects (and effect set names) it may raise; `("*",)` for any,
    # `()` for none; None without a clause (unconstrained). Checked by the type checker.
    raises: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class EffectSet:
    """`effectSet Name = <std::read, OtherSet, …>`: a named group of effects for `raises`
    clauses (std::capabilities). Nothing at run time; imported and exported like a type."""

    name: str
    members: tuple[str, ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class TypeAlias:
    """`type Name<T>(p: number) = …`: `type_params` are the `<T>` names, `params` the value
    parameters of a value-parameterised alias (both usually empty)."""

    name: str
    type: TypeExpr
    span: Span = _span()
    type_params: tuple[str, ...] = ()
    params: tuple[Param, ...] = ()


@dataclass(frozen=True, slots=True)
class Import:
    """`import { a, b } from "mod"`, `import x from "mod"`, `import "mod"`.

    `import * as x from "mod"` has no names and `namespace="x"`. `import { a as b }` has
    `names=("a",)` and `aliases=(("a", "b"),)`. `export { a } from "mod"` and
    `export * from "mod"` are imports with `reexport=True`: the names also become the
    importing module's exports (all of the module's, for `*`).
    """

    names: tuple[str, ...]
    module: str
    span: Span = _span()
    namespace: str | None = None
    aliases: tuple[tuple[str, str], ...] = ()
    reexport: bool = False


TopLevel = Union[FuncDecl, TypeAlias, EffectSet, Import, Stmt]


@dataclass(frozen=True, slots=True)
class Program:
    """A parsed file. `items` keeps source order: module statements run in that order."""

    items: tuple[TopLevel, ...]
    path: str = field(default="<input>", compare=False)
    span: Span = _span()
