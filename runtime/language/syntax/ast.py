"""Provides the Agency abstract syntax tree.

Every node is a frozen, slotted record (`Node`, see nodes.py) with structural equality, so parser tests can compare
whole trees. Each node carries a `span`; spans are excluded from equality (two trees that differ
only in layout compare equal) but are always present, because the compiler turns them into step
locations and the error printer into carets.
"""

from __future__ import annotations

from typing import Union

from runtime.errors import NO_SPAN as NO_SPAN  # spans are part of every node
from runtime.errors import Span as Span
from runtime.language.syntax.nodes import Node, uncompared


def _span() -> Span:
    span: Span = uncompared(default=NO_SPAN, repr=False)
    return span


# --------------------------------------------------------------------------------------------
# Types (parsed for llm() structured output and tool schemas; otherwise ignored at run time)


class TName(Node):
    """A named type: `string`, `number`, `boolean`, `any`, `null`, or an alias."""

    name: str
    span: Span = _span()


class TLiteral(Node):
    """A literal type: `"yes"`, `3`, `true`."""

    value: str | float | int | bool | None
    span: Span = _span()


class TArray(Node):
    """`T[]` (also `Array<T>`)."""

    element: TypeExpr
    span: Span = _span()


class TField(Node):
    name: str
    type: TypeExpr
    optional: bool = False
    span: Span = _span()


class TObject(Node):
    """`{k: T, k?: T}`."""

    fields: tuple[TField, ...]
    span: Span = _span()


class TUnion(Node):
    """`A | B | C`."""

    options: tuple[TypeExpr, ...]
    span: Span = _span()


class TGeneric(Node):
    """`Name<A, B>`, e.g. `Result<S, F>`."""

    name: str
    args: tuple[TypeExpr, ...]
    span: Span = _span()


class TFunc(Node):
    """A function type `(a: T, U) -> R` (a block or function parameter). Parameter names are
    dropped; only their types are kept."""

    params: tuple[TypeExpr, ...]
    result: TypeExpr
    span: Span = _span()


class TBang(Node):
    """`T!`: a value checked against `T` at run time (schema validation), giving a Result."""

    inner: TypeExpr
    span: Span = _span()


class TValidated(Node):
    """A type with `@validate(f, …)` validators and `@jsonSchema({…})` fragments (in source
    order), on a `type` alias or an object-type field."""

    inner: TypeExpr
    validators: tuple[Expr, ...] = ()
    json: tuple[Expr, ...] = ()
    span: Span = _span()


class TCall(Node):
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


class PWildcard(Node):
    """`_`."""

    span: Span = _span()


class PLiteral(Node):
    """A literal pattern: string, number, boolean or null; matches by `==`."""

    value: str | float | int | bool | None
    span: Span = _span()


class PBind(Node):
    """A name pattern: always matches and binds the value."""

    name: str
    span: Span = _span()


class PObjectField(Node):
    """`key: pattern` inside an object pattern; `{x}` is `key="x", pattern=PBind("x")`."""

    key: str
    pattern: Pattern
    span: Span = _span()


class PObject(Node):
    """`{type: "a", x}` (and `{a, ...rest}`): matches an object whose listed keys match; `rest`
    gets the other keys."""

    fields: tuple[PObjectField, ...]
    rest: str | None = None
    span: Span = _span()


class PArray(Node):
    """`[a, b]` (and `[a, ...rest]`): matches an array of exactly that length, or at least that
    length when `rest` is set."""

    items: tuple[Pattern, ...]
    rest: str | None = None
    span: Span = _span()
    tail: tuple[Pattern, ...] = ()  # items after a middle `...rest`: `[first, ...mid, last]`


class PResult(Node):
    """`success(p)` or `failure(p)`: matches a Result of that kind, inner pattern on value/error."""

    kind: str  # "success" | "failure"
    inner: Pattern | None
    span: Span = _span()


class PType(Node):
    """A type test: `s: string`, `{name}: Person`, `is boolean`, a type in an object field's
    value position (`{name: string}`). Matches when the value conforms to `type` and `inner`
    (when given) matches; binders get the original value."""

    inner: Pattern | None
    type: TypeExpr
    span: Span = _span()


class PValue(Node):
    """`(expr)` as a match arm's case: matches when the subject `==` the expression's value
    (only at the top of an arm; the compiler evaluates it)."""

    expr: Expr
    span: Span = _span()


Pattern = Union[PWildcard, PLiteral, PBind, PObject, PArray, PResult, PType, PValue]


# --------------------------------------------------------------------------------------------
# Expressions


class Literal(Node):
    """A number (int when integral in the source, else float), string, boolean or null."""

    value: str | float | int | bool | None
    span: Span = _span()


class Template(Node):
    """An interpolated string; parts alternate literal text (str) and expressions."""

    parts: tuple[str | Expr, ...]
    span: Span = _span()


class Name(Node):
    id: str
    span: Span = _span()


class Spread(Node):
    """`...expr` inside an array literal, object literal or call arguments."""

    value: Expr
    span: Span = _span()


class ArrayLit(Node):
    items: tuple[Expr | Spread, ...]
    span: Span = _span()


class ObjectEntry(Node):
    """`k: v`, `"k": v` (key is a str) or `[expr]: v` (key is an Expr). `{x}` is `x: x`."""

    key: str | Expr
    value: Expr
    span: Span = _span()


class ObjectLit(Node):
    entries: tuple[ObjectEntry | Spread, ...]
    span: Span = _span()


class Unary(Node):
    """Prefix `!`, `-`, `+`, `typeof`, `void`."""

    op: str
    operand: Expr
    span: Span = _span()


class Binary(Node):
    """Arithmetic, comparison and equality: `+ - * / % ** == != === !== < > <= >=`."""

    op: str
    left: Expr
    right: Expr
    span: Span = _span()


class Logical(Node):
    """Short-circuit `&&`, `||`, `??`."""

    op: str
    left: Expr
    right: Expr
    span: Span = _span()


class Pipe(Node):
    """`left |> right`: calls `right` with `left` (a Result's value; a failure passes through)."""

    left: Expr
    right: Expr
    span: Span = _span()


class Catch(Node):
    """`expr catch default`: `default` when `expr` is a failure or raises; else its value."""

    value: Expr
    default: Expr
    span: Span = _span()


class Try(Node):
    """`try expr`: a runtime error becomes `failure(message)`; a value is returned as is."""

    value: Expr
    span: Span = _span()


class Conditional(Node):
    """`if c then a else b` as an expression."""

    cond: Expr
    then: Expr
    orelse: Expr
    span: Span = _span()


class Arg(Node):
    """A call argument: positional (`name` is None), named (`name: value`) or `...spread`."""

    value: Expr
    name: str | None = None
    spread: bool = False
    span: Span = _span()


class Call(Node):
    """`callee(args)`, optionally followed by a trailing block (`f(xs) as x { … }`), which is
    passed as the callee's last parameter."""

    callee: Expr
    args: tuple[Arg, ...]
    span: Span = _span()
    block: BlockFn | None = None


class BlockFn(Node):
    """A block: the trailing `as (a, b) { … }` of a call, or an inline `\\(a, b) -> expr`
    (whose body is one `return expr`). Evaluates to a closure over the enclosing function."""

    params: tuple[Param, ...]
    body: Block
    inline: bool = False
    span: Span = _span()


class Member(Node):
    """`obj.name` or `obj?.name` (optional)."""

    obj: Expr
    name: str
    optional: bool = False
    span: Span = _span()


class Index(Node):
    """`obj[index]` or `obj?.[index]`."""

    obj: Expr
    index: Expr
    optional: bool = False
    span: Span = _span()


class Slice(Node):
    """`obj[start:end]`; either bound may be omitted."""

    obj: Expr
    start: Expr | None
    end: Expr | None
    span: Span = _span()


class Update(Node):
    """Postfix `target++` / `target--`; evaluates to the old value."""

    op: str  # "++" | "--"
    target: Expr  # Name, Member or Index
    span: Span = _span()


class OptionalCall(Node):
    """`callee?.(args)`: null when the callee is null, else the call."""

    callee: Expr
    args: tuple[Arg, ...]
    span: Span = _span()


class AssignExpr(Node):
    """`(target op value)` in parentheses: the assignment, used as an expression whose value is
    what the target holds afterwards."""

    assign: Assign
    span: Span = _span()


class ListComp(Node):
    """`[expr for x in xs]` (optionally `if cond`)."""

    element: Expr
    var: str
    iterable: Expr
    cond: Expr | None = None
    span: Span = _span()
    second: str | None = None  # `for x, i in xs` (index) / `for k, v in obj` (value)
    pattern: Pattern | None = None  # `for {name} in people`: `var` is then ""


class MatchArm(Node):
    """`pattern => body` or `pattern if (guard) => body`; body is an Expr or a Block.

    In the head form `match (x is P) { cond => … }` each arm's case is a boolean expression,
    held in `guard` with a PWildcard pattern (`_` alone is the default arm).
    """

    pattern: Pattern
    body: Expr | Block
    span: Span = _span()
    guard: Expr | None = None


class Match(Node):
    """`match (subject) { arms }`, usable as a statement or an expression.

    `head`: the `match (x is P) { … }` form; `subject` is then the Is whose pattern is matched
    once (a mismatch makes the enclosing function return a failure)."""

    subject: Expr
    arms: tuple[MatchArm, ...]
    span: Span = _span()
    head: bool = False


class Is(Node):
    """`value is pattern`: true when the value matches; binders are assigned when it does."""

    value: Expr
    pattern: Pattern
    span: Span = _span()


class Splice(Node):
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


class Block(Node):
    body: tuple[Stmt, ...]
    span: Span = _span()


class VarDecl(Node):
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


class Assign(Node):
    """`target op value` with op in `= += -= *= /= ??= ||= &&=`; target is Name, Member or
    Index."""

    target: Expr
    op: str
    value: Expr
    span: Span = _span()


class ExprStmt(Node):
    expr: Expr
    span: Span = _span()


class If(Node):
    cond: Expr
    then: Block
    orelse: Block | If | None = None
    span: Span = _span()


class While(Node):
    cond: Expr
    body: Block
    span: Span = _span()


class ForIn(Node):
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


class Break(Node):
    span: Span = _span()


class Continue(Node):
    span: Span = _span()


class Return(Node):
    value: Expr | None = None
    span: Span = _span()


class Goto(Node):
    """`goto other(args)`: a one-way transition to another node."""

    call: Call
    span: Span = _span()


class ThreadBlock(Node):
    """`thread { }` (fresh conversation) or `subthread { }` (a copy of the current one)."""

    kind: str  # "thread" | "subthread"
    body: Block
    span: Span = _span()


class Handler(Node):
    """The `with (param) { body }` part of a handle block; or `with name` naming a def."""

    param: str | None
    body: Block | None
    func: str | None = None
    span: Span = _span()


class HandleBlock(Node):
    """`handle { body } with (data) { … }`."""

    body: Block
    handler: Handler
    span: Span = _span()


class WithAction(Node):
    """`stmt with approve` / `stmt with reject` / `stmt with propagate` / `stmt with handlerFn`:
    answers interrupts raised by one statement."""

    stmt: Stmt
    action: str  # "approve" | "reject" | "propagate" | the name of a handler def
    span: Span = _span()


class Finalize(Node):
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


class Param(Node):
    name: str
    type: TypeExpr | None = None
    default: Expr | None = None
    rest: bool = False
    span: Span = _span()
    optional: bool = False  # `name?: T`: a call may leave it out (it is null)


class FuncDecl(Node):
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


class EffectSet(Node):
    """`effectSet Name = <std::read, OtherSet, …>`: a named group of effects for `raises`
    clauses (std::capabilities). Nothing at run time; imported and exported like a type."""

    name: str
    members: tuple[str, ...]
    span: Span = _span()


class TypeAlias(Node):
    """`type Name<T>(p: number) = …`: `type_params` are the `<T>` names, `params` the value
    parameters of a value-parameterised alias (both usually empty). `type_defaults` holds
    each type parameter's default (`<T = string>`), None where it has none, or is empty
    when no parameter has one."""

    name: str
    type: TypeExpr
    span: Span = _span()
    type_params: tuple[str, ...] = ()
    params: tuple[Param, ...] = ()
    type_defaults: tuple[TypeExpr | None, ...] = ()


class Import(Node):
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


class Program(Node):
    """A parsed file. `items` keeps source order: module statements run in that order."""

    items: tuple[TopLevel, ...]
    path: str = uncompared(default="<input>")
    span: Span = _span()
