"""Parser: whole-tree comparisons for every form, precedence, newline rules, spans and errors."""

from __future__ import annotations

import pytest

from runtime.errors import AgencySyntaxError
from runtime.language.syntax import parse, parse_arguments, parse_expression
from runtime.language.syntax.ast import (
    Arg,
    ArrayLit,
    Assign,
    Binary,
    Block,
    Break,
    Call,
    Catch,
    Conditional,
    Continue,
    Expr,
    ExprStmt,
    ForIn,
    FuncDecl,
    Goto,
    HandleBlock,
    Handler,
    If,
    Import,
    Index,
    ListComp,
    Literal,
    Logical,
    Match,
    MatchArm,
    Member,
    Name,
    ObjectEntry,
    ObjectLit,
    Param,
    PArray,
    PBind,
    Pipe,
    PLiteral,
    PObject,
    PObjectField,
    PResult,
    PWildcard,
    Return,
    Slice,
    Span,
    Spread,
    Stmt,
    TArray,
    Template,
    TField,
    TGeneric,
    ThreadBlock,
    TLiteral,
    TName,
    TObject,
    TopLevel,
    Try,
    TUnion,
    TypeAlias,
    TypeExpr,
    Unary,
    Update,
    VarDecl,
    While,
    WithAction,
)
from runtime.language.syntax.reader import BLOCK_NOT_A_VALUE

# --------------------------------------------------------------------------------------------
# Helpers


def items(source: str) -> tuple[TopLevel, ...]:
    return parse(source).items


def body(source: str) -> tuple[Stmt, ...]:
    """The statements of `source` written inside a node body."""
    (main,) = items("node main() {\n" + source + "\n}")
    assert isinstance(main, FuncDecl)
    return main.body.body


def stmt(source: str) -> Stmt:
    (only,) = body(source)
    return only


def expr(source: str) -> Expr:
    return parse_expression(source)


def type_of(source: str) -> TypeExpr:
    (alias,) = items(f"type T = {source}")
    assert isinstance(alias, TypeAlias)
    return alias.type


def errors(source: str) -> list[tuple[str, int, int]]:
    with pytest.raises(AgencySyntaxError) as info:
        parse(source, "t.agency")
    return [(d.message, d.span.line, d.span.col) for d in info.value.diagnostics]


def n(name: str) -> Name:
    return Name(name)


def lit(value: str | int | float | bool | None) -> Literal:
    return Literal(value)


def call(callee: str | Expr, *args: Expr | Arg) -> Call:
    target = Name(callee) if isinstance(callee, str) else callee
    return Call(target, tuple(a if isinstance(a, Arg) else Arg(a) for a in args))


def let(name: str, value: Expr | None, kind: str = "let", type_: TypeExpr | None = None) -> VarDecl:
    return VarDecl(kind, PBind(name), type_, value)


def block(*stmts: Stmt) -> Block:
    return Block(tuple(stmts))


# --------------------------------------------------------------------------------------------
# Declarations


def test_def_with_everything() -> None:
    (decl,) = items(
        "destructive idempotent def add(a: number, b: number = 2, ...rest): number {\n"
        '  """\n  Adds two numbers.\n  """\n'
        "  return a + b\n"
        "}"
    )
    assert decl == FuncDecl(
        "def",
        "add",
        (
            Param("a", TName("number")),
            Param("b", TName("number"), lit(2)),
            Param("rest", None, None, rest=True),
        ),
        TName("number"),
        block(Return(Binary("+", n("a"), n("b")))),
        doc="Adds two numbers.",
        modifiers=("destructive", "idempotent"),
    )


def test_node_and_doc_comment() -> None:
    (decl,) = items('/** Greets someone. */\nnode greet(name: string = "Ada") {\n}\n')
    assert decl == FuncDecl(
        "node",
        "greet",
        (Param("name", TName("string"), lit("Ada")),),
        None,
        block(),
        doc="Greets someone.",
    )


def test_only_a_plain_triple_quoted_string_is_a_docstring() -> None:
    (decl,) = items('def f() {\n  "not a doc"\n}')
    assert isinstance(decl, FuncDecl)
    assert decl.doc is None
    assert decl.body == block(ExprStmt(lit("not a doc")))


def test_export_async_and_safe_are_recorded() -> None:
    decls = items(
        "export def a() {}\nasync def b() {}\nexport safe node c() {}\nexport const k = 1"
    )
    assert [d.modifiers for d in decls if isinstance(d, FuncDecl)] == [
        ("export",),
        ("async",),
        ("export", "safe"),
    ]
    assert decls[3] == let("k", lit(1), "const")


def test_module_variables() -> None:
    assert items(
        "let a = 1\nconst b = 2\nc = 3\nshared d = 4\nshared let e = 5\nstatic const f = 6\n"
        "shared g: number = 7"
    ) == (
        let("a", lit(1)),
        let("b", lit(2), "const"),
        let("c", lit(3), "assign"),
        let("d", lit(4), "shared"),
        let("e", lit(5), "shared"),
        let("f", lit(6), "static"),
        let("g", lit(7), "shared", TName("number")),
    )


def test_top_level_assignment_that_is_not_a_plain_name() -> None:
    assert items("a.b = 1\nc += 2") == (
        Assign(Member(n("a"), "b"), "=", lit(1)),
        Assign(n("c"), "+=", lit(2)),
    )


def test_contextual_keywords_are_names_elsewhere() -> None:
    assert items("shared = 1\ntype = 2\nprint(from, static, node, thread)") == (
        let("shared", lit(1), "assign"),
        let("type", lit(2), "assign"),
        ExprStmt(call("print", n("from"), n("static"), n("node"), n("thread"))),
    )


def test_imports() -> None:
    assert items(
        'import { a, b } from "mod"\nimport x from "./x.agency"\nimport * as ns from "m"\n'
        'import "side"\nimport nodes { go } from "n"'
    ) == (
        Import(("a", "b"), "mod"),
        Import(("x",), "./x.agency"),
        Import((), "m", namespace="ns"),
        Import((), "side"),
        Import(("go",), "n"),
    )


def test_default_import_with_named_or_namespace_imports() -> None:
    assert items('import a, { b, c as d } from "./m.agency"\nimport e, * as ns from "./n.js"') == (
        Import(("a", "b", "c"), "./m.agency", aliases=(("c", "d"),)),
        Import(("e",), "./n.js", namespace="ns"),
    )
    assert errors('import a, b from "./m.agency"') == [
        ("expected `{` or `*` after `,`, got `b`", 1, 11)
    ]


def test_static_statement() -> None:
    (decl,) = items("static setup()")
    assert isinstance(decl, VarDecl) and decl.kind == "static"
    assert decl.value == call("setup")
    assert errors("def f() {\n  static setup()\n}") != []


def test_reexports() -> None:
    assert items('export * from "./a.agency"\nexport { f, g as h } from "./b.agency"') == (
        Import((), "./a.agency", reexport=True),
        Import(("f", "g"), "./b.agency", aliases=(("g", "h"),), reexport=True),
    )
    assert errors('export { f } into "./b.agency"') == [("expected `from`, got `into`", 1, 14)]


# --------------------------------------------------------------------------------------------
# Types


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("string", TName("string")),
        ("number", TName("number")),
        ("boolean", TName("boolean")),
        ("any", TName("any")),
        ("null", TName("null")),
        ("Person", TName("Person")),
        ('"yes"', TLiteral("yes")),
        ("3", TLiteral(3)),
        ("-1", TLiteral(-1)),
        ("true", TLiteral(True)),
        ('"a" | "b"', TUnion((TLiteral("a"), TLiteral("b")))),
        ('| "a" | "b"', TUnion((TLiteral("a"), TLiteral("b")))),
        ("string[]", TArray(TName("string"))),
        ("string[][]", TArray(TArray(TName("string")))),
        ("Array<number>", TArray(TName("number"))),
        ("Result<string, Error>", TGeneric("Result", (TName("string"), TName("Error")))),
        ("(string | number)[]", TArray(TUnion((TName("string"), TName("number"))))),
        (
            "{name: string, age?: number}",
            TObject((TField("name", TName("string")), TField("age", TName("number"), True))),
        ),
        (
            '{\n  a: string;\n  "b-c": number\n  d: {e: boolean}\n}',
            TObject(
                (
                    TField("a", TName("string")),
                    TField("b-c", TName("number")),
                    TField("d", TObject((TField("e", TName("boolean")),))),
                )
            ),
        ),
        ("{}", TObject(())),
    ],
)
def test_types(source: str, expected: TypeExpr) -> None:
    assert type_of(source) == expected


def test_type_annotations_in_let_and_return() -> None:
    (decl,) = items("def f(): {ok: boolean} {\n  const x: string[] = []\n}")
    assert isinstance(decl, FuncDecl)
    assert decl.return_type == TObject((TField("ok", TName("boolean")),))
    assert decl.body == block(let("x", ArrayLit(()), "const", TArray(TName("string"))))


# --------------------------------------------------------------------------------------------
# Statements


def test_let_and_const() -> None:
    assert body("let x\nlet y: number = 1\nconst z = y") == (
        let("x", None),
        let("y", lit(1), type_=TName("number")),
        let("z", n("y"), "const"),
    )


def test_destructuring() -> None:
    assert body("let [a, b, ...rest] = xs\nconst {x, y: z, [q]} = obj".replace(", [q]", "")) == (
        VarDecl("let", PArray((PBind("a"), PBind("b")), "rest"), None, n("xs")),
        VarDecl(
            "const",
            PObject((PObjectField("x", PBind("x")), PObjectField("y", PBind("z")))),
            None,
            n("obj"),
        ),
    )
    assert stmt("const [_, {a}] = pair") == VarDecl(
        "const", PArray((PWildcard(), PObject((PObjectField("a", PBind("a")),)))), None, n("pair")
    )


@pytest.mark.parametrize("op", ["=", "+=", "-=", "*=", "/=", "??="])
def test_assignment_operators(op: str) -> None:
    assert stmt(f"x {op} 1") == Assign(n("x"), op, lit(1))


def test_assignment_targets() -> None:
    assert stmt("a.b[i].c = e") == Assign(
        Member(Index(Member(n("a"), "b"), n("i")), "c"), "=", n("e")
    )
    assert stmt("x = y = 1".replace(" = 1", "")) == Assign(n("x"), "=", n("y"))


def test_postfix_update() -> None:
    assert body("x++\na.b--\nxs[0]++") == (
        ExprStmt(Update("++", n("x"))),
        ExprStmt(Update("--", Member(n("a"), "b"))),
        ExprStmt(Update("++", Index(n("xs"), lit(0)))),
    )


def test_if_forms() -> None:
    expected = If(
        n("a"),
        block(ExprStmt(call("f"))),
        If(n("b"), block(ExprStmt(call("g"))), block(ExprStmt(call("h")))),
    )
    assert stmt("if (a) { f() } else if (b) { g() } else { h() }") == expected
    assert stmt("if a { f() } else if b { g() } else { h() }") == expected
    assert stmt("if (a) {\n  f()\n}\nelse if (b) {\n  g()\n}\nelse {\n  h()\n}") == expected
    assert stmt("if (a) {}") == If(n("a"), block())
    assert stmt("if (a) && b {}") == If(Logical("&&", n("a"), n("b")), block())


def test_if_without_else_followed_by_statement() -> None:
    assert body("if (a) { f() }\nelsewhere()") == (
        If(n("a"), block(ExprStmt(call("f")))),
        ExprStmt(call("elsewhere")),
    )


def test_long_else_if_chain_is_not_too_deep() -> None:
    source = "if (x == 0) {}" + "".join(f" else if (x == {i}) {{}}" for i in range(1, 500))
    chain = stmt(source)
    depth = 0
    while isinstance(chain, If):
        depth += 1
        chain = chain.orelse  # type: ignore[assignment]
    assert depth == 500


def test_while_and_for() -> None:
    assert body(
        "while (i < 3) { i++ }\nfor (x in xs) { break }\nfor (x, i in xs) { continue }\n"
        "for k, v in obj {}\nfor (i in range(n)) {}\nfor (let x in xs) {}"
    ) == (
        While(Binary("<", n("i"), lit(3)), block(ExprStmt(Update("++", n("i"))))),
        ForIn("x", None, n("xs"), block(Break())),
        ForIn("x", "i", n("xs"), block(Continue())),
        ForIn("k", "v", n("obj"), block()),
        ForIn("i", None, call("range", n("n")), block()),
        ForIn("x", None, n("xs"), block()),
    )


def test_return_forms() -> None:
    assert body("return\n") == (Return(),)
    assert body("if (a) { return }") == (If(n("a"), block(Return())),)
    assert body("return; f()") == (Return(), ExprStmt(call("f")))
    assert body("return 1 + 2") == (Return(Binary("+", lit(1), lit(2))),)
    assert body("return other(x)") == (Return(call("other", n("x"))),)


def test_goto_threads_and_blocks() -> None:
    assert body("goto other(1)\nthread { f() }\nsubthread {\n  g()\n}\n{ h() }") == (
        Goto(call("other", lit(1))),
        ThreadBlock("thread", block(ExprStmt(call("f")))),
        ThreadBlock("subthread", block(ExprStmt(call("g")))),
        block(ExprStmt(call("h"))),
    )


def test_handle_blocks() -> None:
    assert body(
        "handle { f() } with (data) { return approve(data) }\n"
        "handle {\n  g()\n}\nwith onInterrupt\n"
        "handle { h() } with (d: any) { return reject() }"
    ) == (
        HandleBlock(
            block(ExprStmt(call("f"))),
            Handler("data", block(Return(call("approve", n("data"))))),
        ),
        HandleBlock(block(ExprStmt(call("g"))), Handler(None, None, "onInterrupt")),
        HandleBlock(block(ExprStmt(call("h"))), Handler("d", block(Return(call("reject"))))),
    )


def test_handle_at_the_top_level_may_return() -> None:
    assert items("handle { f() } with (d) { return approve(d) }") == (
        HandleBlock(
            block(ExprStmt(call("f"))), Handler("d", block(Return(call("approve", n("d")))))
        ),
    )


def test_with_action_suffix() -> None:
    assert body('const x = deleteFile("a") with approve\nsend() with reject') == (
        WithAction(let("x", call("deleteFile", lit("a")), "const"), "approve"),
        WithAction(ExprStmt(call("send")), "reject"),
    )


def test_match_statement_and_expression() -> None:
    arms = (
        MatchArm(PLiteral("a"), lit(1)),
        MatchArm(PLiteral(-2), block(ExprStmt(call("f")))),
        MatchArm(PWildcard(), lit(3)),
    )
    expected_match = Match(n("x"), arms)
    assert stmt('match (x) {\n  "a" => 1\n  -2 => { f() }\n  _ => 3\n}') == expected_match
    assert stmt('match (x) { "a" => 1, -2 => { f() }, _ => 3 }') == expected_match
    assert stmt('match x { "a" => 1, -2 => {\n f()\n }\n _ => 3, }') == expected_match
    assert stmt('const v = match (x) { "a" => 1, -2 => { f() }, _ => 3 }') == let(
        "v", expected_match, "const"
    )


def test_statements_separated_by_semicolons() -> None:
    assert body("a(); b();; c()") == (
        ExprStmt(call("a")),
        ExprStmt(call("b")),
        ExprStmt(call("c")),
    )


# --------------------------------------------------------------------------------------------
# Expressions


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("a |> b |> c", Pipe(Pipe(n("a"), n("b")), n("c"))),
        ("a catch b |> c", Pipe(Catch(n("a"), n("b")), n("c"))),
        ("a || b catch c", Catch(Logical("||", n("a"), n("b")), n("c"))),
        ("a ?? b || c", Logical("||", Logical("??", n("a"), n("b")), n("c"))),
        ("a || b && c", Logical("||", n("a"), Logical("&&", n("b"), n("c")))),
        ("a && b == c", Logical("&&", n("a"), Binary("==", n("b"), n("c")))),
        ("a === b < c", Binary("===", n("a"), Binary("<", n("b"), n("c")))),
        ("a !== b != c", Binary("!=", Binary("!==", n("a"), n("b")), n("c"))),
        ("a <= b + c", Binary("<=", n("a"), Binary("+", n("b"), n("c")))),
        ("a >= b - c", Binary(">=", n("a"), Binary("-", n("b"), n("c")))),
        ("a + b * c", Binary("+", n("a"), Binary("*", n("b"), n("c")))),
        ("a - b - c", Binary("-", Binary("-", n("a"), n("b")), n("c"))),
        ("a / b % c", Binary("%", Binary("/", n("a"), n("b")), n("c"))),
        ("a * b ** c", Binary("*", n("a"), Binary("**", n("b"), n("c")))),
        ("a ** b ** c", Binary("**", n("a"), Binary("**", n("b"), n("c")))),
        ("-a ** 2", Unary("-", Binary("**", n("a"), lit(2)))),
        ("!a && b", Logical("&&", Unary("!", n("a")), n("b"))),
        ("!a.b", Unary("!", Member(n("a"), "b"))),
        ("-a * b", Binary("*", Unary("-", n("a")), n("b"))),
        ("typeof x == 'string'", Binary("==", Unary("typeof", n("x")), lit("string"))),
        ("+x", Unary("+", n("x"))),
        ("!!x", Unary("!", Unary("!", n("x")))),
        ("x++ + 1", Binary("+", Update("++", n("x")), lit(1))),
        ("(a + b) * c", Binary("*", Binary("+", n("a"), n("b")), n("c"))),
        ("a ? b : c ? d : e", Conditional(n("a"), n("b"), Conditional(n("c"), n("d"), n("e")))),
        ("a || b ? c : d", Conditional(Logical("||", n("a"), n("b")), n("c"), n("d"))),
    ],
)
def test_precedence(source: str, expected: Expr) -> None:
    assert expr(source) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("-42", lit(-42)),
        ("-3.5", lit(-3.5)),
        ("- 42", Unary("-", lit(42))),
        ("-x", Unary("-", n("x"))),
        ("a - 1", Binary("-", n("a"), lit(1))),
        ("a -1", Binary("-", n("a"), lit(1))),
        ("[-1, -2]", ArrayLit((lit(-1), lit(-2)))),
        ("2 ** -1", Binary("**", lit(2), lit(-1))),
        ("-2 ** 2", Unary("-", Binary("**", lit(2), lit(2)))),
        ("-5.toFixed(1)", Unary("-", call(Member(lit(5), "toFixed"), lit(1)))),
    ],
)
def test_negative_number_literals(source: str, expected: Expr) -> None:
    assert expr(source) == expected


def test_literals() -> None:
    assert expr("true") == lit(True)
    assert expr("false") == lit(False)
    assert expr("null") == lit(None)
    assert expr("undefined") == lit(None)
    assert expr("1_000") == lit(1000)
    assert type(expr("42").value) is int  # type: ignore[union-attr]
    assert type(expr("4.0").value) is float  # type: ignore[union-attr]
    assert expr('"hi"') == lit("hi")
    assert expr('""') == lit("")


def test_templates() -> None:
    assert expr('"Hello, ${name}!"') == Template(("Hello, ", n("name"), "!"))
    assert expr("`${a}${b}`") == Template((n("a"), n("b")))
    assert expr('"n = ${xs.length + 1}"') == Template(
        ("n = ", Binary("+", Member(n("xs"), "length"), lit(1)))
    )
    assert expr('"${ f("${x}") }"') == Template((call("f", Template((n("x"),))),))
    assert expr('"""raw \\n ${x}"""') == Template(("raw \\n ", n("x")))
    assert expr('"a\\${b}"') == lit("a${b}")
    assert expr('"${ {a: 1}.a }"') == Template(
        (Member(ObjectLit((ObjectEntry("a", lit(1)),)), "a"),)
    )
    assert expr('"${\n  x +\n  y\n}"') == Template((Binary("+", n("x"), n("y")),))


def test_try_and_catch() -> None:
    assert expr("try f(x)") == Try(call("f", n("x")))
    assert expr("try a + b") == Try(Binary("+", n("a"), n("b")))
    assert expr("try f() catch 0") == Catch(Try(call("f")), lit(0))
    assert expr("try f() |> g") == Pipe(Try(call("f")), n("g"))
    assert expr("f() catch g() catch 1") == Catch(Catch(call("f"), call("g")), lit(1))


def test_conditional_expression() -> None:
    assert expr("if a then b else c") == Conditional(n("a"), n("b"), n("c"))
    assert expr("if a > 1 then 'x' else if b then 'y' else 'z'") == Conditional(
        Binary(">", n("a"), lit(1)), lit("x"), Conditional(n("b"), lit("y"), lit("z"))
    )
    assert stmt("const v = if c then a else b") == let(
        "v", Conditional(n("c"), n("a"), n("b")), "const"
    )


def test_arrays_and_comprehensions() -> None:
    assert expr("[]") == ArrayLit(())
    assert expr("[1, ...xs, 2,]") == ArrayLit((lit(1), Spread(n("xs")), lit(2)))
    assert expr("[\n  1,\n  2\n]") == ArrayLit((lit(1), lit(2)))
    assert expr("[f(x) for x in xs]") == ListComp(call("f", n("x")), "x", n("xs"))
    assert expr("[x for x in xs if x > 1]") == ListComp(
        n("x"), "x", n("xs"), Binary(">", n("x"), lit(1))
    )
    assert expr("[[x, y] for x in range(3)]") == ListComp(
        ArrayLit((n("x"), n("y"))), "x", call("range", lit(3))
    )


def test_objects() -> None:
    assert expr("{}") == ObjectLit(())
    assert expr('{a: 1, "b c": 2, [k]: 3, 4: 5, x, ...rest, type: 6, match: 7,}') == ObjectLit(
        (
            ObjectEntry("a", lit(1)),
            ObjectEntry("b c", lit(2)),
            ObjectEntry(n("k"), lit(3)),
            ObjectEntry("4", lit(5)),
            ObjectEntry("x", n("x")),
            Spread(n("rest")),
            ObjectEntry("type", lit(6)),
            ObjectEntry("match", lit(7)),
        )
    )
    assert expr("{\n  a: 1,\n  b: {\n    c: [2]\n  }\n}") == ObjectLit(
        (
            ObjectEntry("a", lit(1)),
            ObjectEntry("b", ObjectLit((ObjectEntry("c", ArrayLit((lit(2),))),))),
        )
    )


def test_calls_and_arguments() -> None:
    assert expr('greet("Ada", name: "Bo", ...more)') == Call(
        n("greet"), (Arg(lit("Ada")), Arg(lit("Bo"), "name"), Arg(n("more"), spread=True))
    )
    assert expr("f({a: 1})") == call("f", ObjectLit((ObjectEntry("a", lit(1)),)))
    assert expr("f(a ? b : c)") == call("f", Conditional(n("a"), n("b"), n("c")))
    assert expr("f(type: 1, from: 2)") == Call(n("f"), (Arg(lit(1), "type"), Arg(lit(2), "from")))
    assert expr("f(\n  1,\n  2,\n)") == call("f", lit(1), lit(2))
    assert expr("f()()") == call(call("f"))


def test_members_indexes_and_slices() -> None:
    assert expr("a.b.match.catch.type") == Member(
        Member(Member(Member(n("a"), "b"), "match"), "catch"), "type"
    )
    assert expr("a?.b?.[0]") == Index(Member(n("a"), "b", optional=True), lit(0), optional=True)
    assert expr("a[1:3]") == Slice(n("a"), lit(1), lit(3))
    assert expr("a[:2]") == Slice(n("a"), None, lit(2))
    assert expr("a[1:]") == Slice(n("a"), lit(1), None)
    assert expr("a[:]") == Slice(n("a"), None, None)
    assert expr("a[i + 1]") == Index(n("a"), Binary("+", n("i"), lit(1)))
    assert expr("JSON.stringify(x)") == call(Member(n("JSON"), "stringify"), n("x"))


def test_match_expression_inside_call() -> None:
    assert expr("f(match (x) {\n  1 => { g()\n h() }\n  _ => 2\n})") == call(
        "f",
        Match(
            n("x"),
            (
                MatchArm(PLiteral(1), block(ExprStmt(call("g")), ExprStmt(call("h")))),
                MatchArm(PWildcard(), lit(2)),
            ),
        ),
    )


# --------------------------------------------------------------------------------------------
# Patterns


@pytest.mark.parametrize(
    ("source", "pattern"),
    [
        ('"a"', PLiteral("a")),
        ("3", PLiteral(3)),
        ("-3", PLiteral(-3)),
        ("2.5", PLiteral(2.5)),
        ("null", PLiteral(None)),
        ("true", PLiteral(True)),
        ("false", PLiteral(False)),
        ("_", PWildcard()),
        ("x", PBind("x")),
        (
            '{type: "a", x}',
            PObject((PObjectField("type", PLiteral("a")), PObjectField("x", PBind("x")))),
        ),
        ('{"k": 1}', PObject((PObjectField("k", PLiteral(1)),))),
        ("[a, b]", PArray((PBind("a"), PBind("b")))),
        ("[a, ...rest]", PArray((PBind("a"),), "rest")),
        ("[]", PArray(())),
        ("success(v)", PResult("success", PBind("v"))),
        ('failure("x")', PResult("failure", PLiteral("x"))),
        ("success()", PResult("success", None)),
        (
            "success({a: [_, 1]})",
            PResult("success", PObject((PObjectField("a", PArray((PWildcard(), PLiteral(1)))),))),
        ),
    ],
)
def test_patterns(source: str, pattern: object) -> None:
    subject = stmt(f"match (x) {{ {source} => 0 }}")
    assert subject == Match(n("x"), (MatchArm(pattern, lit(0)),))  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Newlines


def test_newline_continuation_rules() -> None:
    assert body("let x = a +\n  b") == (let("x", Binary("+", n("a"), n("b"))),)
    assert body("let x =\n  1") == (let("x", lit(1)),)
    assert body("f(a,\n  b)") == (ExprStmt(call("f", n("a"), n("b"))),)
    assert body("let s = xs\n  .map(f)\n  // note\n  .join(',')") == (
        let("s", call(Member(call(Member(n("xs"), "map"), n("f")), "join"), lit(","))),
    )
    assert body("let r = a\n  |> b\n  |> c") == (let("r", Pipe(Pipe(n("a"), n("b")), n("c"))),)
    assert body("let r = a\n  ?.b") == (let("r", Member(n("a"), "b", optional=True)),)
    assert body("let r = a\n  && b\n  || c") == (
        let("r", Logical("||", Logical("&&", n("a"), n("b")), n("c"))),
    )
    assert body("let x = (\n  a\n  + b\n)") == (let("x", Binary("+", n("a"), n("b"))),)


def test_newline_ends_statements() -> None:
    assert body("a\n-b") == (ExprStmt(n("a")), ExprStmt(Unary("-", n("b"))))
    assert body("f\n(x)") == (ExprStmt(n("f")), ExprStmt(n("x")))
    assert body("a\n[1]") == (ExprStmt(n("a")), ExprStmt(ArrayLit((lit(1),))))
    assert body("x\n++\ny".replace("\n++\n", "++\n")) == (
        ExprStmt(Update("++", n("x"))),
        ExprStmt(n("y")),
    )


# --------------------------------------------------------------------------------------------
# Spans


def test_statement_spans_cover_the_statement() -> None:
    source = "node main() {\n  const x = f(1,\n    2) with approve\n  if (x) {\n    y()\n  } else {\n  }\n}"
    (main,) = items(source)
    assert isinstance(main, FuncDecl)
    assert main.span == Span(1, 1, 8, 2)
    assert main.body.span == Span(1, 13, 8, 2)
    first, second = main.body.body
    assert first.span == Span(2, 3, 3, 20)
    assert isinstance(first, WithAction)
    assert first.stmt.span == Span(2, 3, 3, 7)
    assert second.span == Span(4, 3, 7, 4)
    assert isinstance(second, If)
    assert second.then.body[0].span == Span(5, 5, 5, 8)


def test_expression_spans() -> None:
    e = expr("(a + b) * foo.bar(1)")
    assert isinstance(e, Binary)
    assert e.span == Span(1, 1, 1, 21)
    assert e.left.span == Span(1, 2, 1, 7)
    assert e.right.span == Span(1, 11, 1, 21)
    assert isinstance(e.right, Call)
    assert e.right.args[0].span == Span(1, 19, 1, 20)
    t = expr('"x ${y}"')
    assert isinstance(t, Template)
    assert t.span == Span(1, 1, 1, 9)
    assert t.parts[1].span == Span(1, 6, 1, 7)  # type: ignore[union-attr]
    assert expr("-42").span == Span(1, 1, 1, 4)


def test_program_span_and_path() -> None:
    program = parse("let x = 1\nlet y = 2\n", "demo.agency")
    assert program.path == "demo.agency"
    assert program.span.line == 1
    assert [item.span for item in program.items] == [Span(1, 1, 1, 10), Span(2, 1, 2, 10)]


def test_spans_are_not_part_of_equality() -> None:
    assert parse("let x = 1") == parse("\n\n   let   x   =   1  ")


# --------------------------------------------------------------------------------------------
# Entry points for the debugger and the test runner


def test_parse_expression_and_arguments() -> None:
    assert parse_expression("  a +\n b ") == Binary("+", n("a"), n("b"))
    assert parse_arguments('"Ada", 3') == (Arg(lit("Ada")), Arg(lit(3)))
    assert parse_arguments("name: 'Ada', ...xs,") == (
        Arg(lit("Ada"), "name"),
        Arg(n("xs"), spread=True),
    )
    assert parse_arguments("") == ()
    assert parse_arguments("  \n ") == ()
    with pytest.raises(AgencySyntaxError, match="unexpected `b`"):
        parse_expression("a b")
    with pytest.raises(AgencySyntaxError, match="expected an expression"):
        parse_expression("")
    with pytest.raises(AgencySyntaxError, match="expected an argument"):
        parse_arguments("1, )")


# --------------------------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('print("a"\nlet x = 1', [("expected `)` to close `(` opened at 1:6, got `let`", 2, 1)]),
        ("let x = 1 +", [("expected an expression after `+`, got end of file", 1, 12)]),
        ("let x = 1 +\n", [("expected an expression after `+`, got end of file", 2, 1)]),
        ('let s = "abc\nfoo', [("unterminated string starting at 1:9", 1, 9)]),
        ('let s = "abc\nfoo(', [("unterminated string starting at 1:9", 1, 9)]),
        ("}", [("unexpected `}`", 1, 1)]),
        ("node m() {\n  break\n}", [("`break` outside a loop", 2, 3)]),
        ("def f() {\n  continue\n}", [("`continue` outside a loop", 2, 3)]),
        ("return 1", [("`return` outside a def or node", 1, 1)]),
        ("let x = 3 3", [("expected a new line or `;` before number `3`", 1, 11)]),
        ("f(1, 2", [("expected `)` to close `(` opened at 1:2, got end of file", 1, 7)]),
        ("xs[1", [("expected `]` to close `[` opened at 1:3, got end of file", 1, 5)]),
        ("x = {a: 1", [("expected `}` to close `{` opened at 1:5, got end of file", 1, 10)]),
        ("node m() {\n", [("expected `}` to close `{` opened at 1:10, got end of file", 2, 1)]),
        ('x = "${a +}"', [("expected an expression after `+`, got `}`", 1, 11)]),
        ('x = "${}"', [("empty `${}` in a string", 1, 6)]),
        ('x = "${a b}"', [("unexpected `b` in `${…}`", 1, 10)]),
        ("if x { } else", [("expected `{` to start a block, got end of file", 1, 14)]),
        ("else { }", [("`else` without `if`", 1, 1)]),
        ("let 3 = 4", [("expected a variable name, `[` or `{`, got number `3`", 1, 5)]),
        ("let if = 4", [("expected a variable name, `[` or `{`, got `if`", 1, 5)]),
        ("const x", [("`const` needs a value: `const x = …`", 1, 8)]),
        ("++x", [("prefix `++` is not supported; write `x += 1` or `x++`", 1, 1)]),
        ("f() = 1", [("the left side of `=` must be a variable, a member or an index", 1, 1)]),
        ("x = f()++", [("`++` needs a variable, a member or an index", 1, 5)]),
        (
            "x = a?.b = 1".replace("x = ", ""),
            [("the left side of `=` must be a variable, a member or an index", 1, 1)],
        ),
        (
            "f() with 3",
            [
                (
                    "expected `approve`, `reject`, `propagate` or a handler function after "
                    "`with`, got number `3`",
                    1,
                    10,
                )
            ],
        ),
        ("goto 3", [("`goto` needs a call, like `goto other(x)`", 1, 6)]),
        (
            "raise app::stop",
            [("expected `(` after the effect name `app::stop`, got end of file", 1, 16)],
        ),
        (
            "def f() raises <a::b {}",
            [("expected `>` to close the effect list opened at 1:16, got `{`", 1, 22)],
        ),
        ("for x over xs {}", [("expected `in` after the loop variable, got `over`", 1, 7)]),
        # an arrow function is a block argument, not a value (as in the reference)
        (
            "x = ((n) => n * 2)(4)",
            [("expected `)` to close `(` opened at 1:5, got `=>`" + BLOCK_NOT_A_VALUE, 1, 10)],
        ),
        (
            "const f = (n) => n * 2",
            [("expected a new line or `;` before `=>`" + BLOCK_NOT_A_VALUE, 1, 15)],
        ),
        (
            "match (x) { 1 => 2 3 => 4 }",
            [("expected a new line or `,` between match arms, got number `3`", 1, 20)],
        ),
        ("match (x) { 1 2 }", [("expected `=>` after the pattern, got number `2`", 1, 15)]),
        ("x = a.", [("expected a property name after `.`, got end of file", 1, 7)]),
        ("x = [1 2]", [("expected `]` to close `[` opened at 1:5, got number `2`", 1, 8)]),
        ("x = {a 1}", [("expected `}` to close `{` opened at 1:5, got number `1`", 1, 8)]),
        ("x = {if}", [("expected `:` after the key `if`", 1, 8)]),
        ("x = if a then b", [("expected `else` in `if … then … else …`, got end of file", 1, 16)]),
        ("x = a ? b", [("expected `:` in `? :`, got end of file", 1, 10)]),
        (
            "type T = {a: string b: number}",
            [("expected `}` to close `{` opened at 1:10, got `b`", 1, 21)],
        ),
        (
            "type T = Result<string",
            [("expected `>` to close `<` opened at 1:16, got end of file", 1, 23)],
        ),
        ("let x: = 1", [("expected a type, got `=`", 1, 8)]),
        ("def f(...a, b) {}", [("a `...rest` parameter must be the last one", 1, 13)]),
        (
            "node m() {\n  def g() {}\n}",
            [("a `def` or `node` can only be declared at the top level", 2, 3)],
        ),
        (
            "node m() {\n  shared x = 1\n}",
            [("`shared` variables are only allowed at the top level", 2, 3)],
        ),
        (
            "if (a) {\n  type T = string\n}",
            [("`type` aliases are only allowed at the top level", 2, 3)],
        ),
        ('if (a) {\n  import "m"\n}', [("`import` is only allowed at the top level", 2, 3)]),
        (
            "for (x in xs) {\n  handle { f() } with (d) { break }\n}",
            [("`break` outside a loop", 2, 29)],
        ),
        ("x = ...y", [("expected an expression after `=`, got `...`", 1, 5)]),
        (
            "x = a # b",
            [("unexpected character `#`", 1, 7), ("expected a new line or `;` before `b`", 1, 9)],
        ),
    ],
)
def test_error_messages(source: str, expected: list[tuple[str, int, int]]) -> None:
    assert errors(source) == expected


def test_several_errors_are_reported_at_once() -> None:
    source = (
        "node main() {\n"
        "  let a = (1 +\n"
        "  let b = 2\n"
        "  if (a) {\n"
        "    let c = ;\n"
        "  }\n"
        "  break\n"
        "}\n"
        "let d = 3 3\n"
        "def f( {\n"
        "}\n"
        "let e = ]\n"
    )
    assert errors(source) == [
        ("expected an expression after `+`, got `let`", 3, 3),
        ("expected an expression after `=`, got `;`", 5, 13),
        ("`break` outside a loop", 7, 3),
        ("expected a new line or `;` before number `3`", 9, 11),
        ("expected a parameter name, got `{`", 10, 8),
        ("expected an expression after `=`, got `]`", 12, 9),
    ]


def test_errors_render_with_path_and_caret() -> None:
    with pytest.raises(AgencySyntaxError) as info:
        parse("let x = (1 + 2\nlet y = 1", "prog.agency")
    assert info.value.render() == (
        "prog.agency:2:1: expected `)` to close `(` opened at 1:9, got `let`\n"
        "   2 | let y = 1\n"
        "       ^^^"
    )
    assert info.value.exit_code == 65


def test_too_deep_nesting_message() -> None:
    # The statement and its value take two levels; the 200th `(` (column 204) is one too many.
    assert errors("x = " + "(" * 300) == [("too deeply nested (more than 200 levels)", 1, 204)]


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    for source in [
        "x = " + "[" * 5000,
        "x = " + "-" * 5000 + "1",
        "x = " + "!" * 5000 + "1",
        "x = " + "{a: " * 5000,
        "x = 2" + " ** 2" * 5000,
        "node m() {" + "if (x) {" * 3000,
        "x = " + '"${' * 3000,
        "match (x) { " + "[" * 3000,
        "type T = " + "(" * 3000,
    ]:
        with pytest.raises(AgencySyntaxError):
            parse(source)


def test_nesting_up_to_the_limit_parses_even_from_deep_in_the_stack() -> None:
    sources = [
        "x = " + "[" * 195 + "]" * 195,
        "x = " + "{a: " * 195 + "1" + "}" * 195,
        'x = "' + '${"' * 195 + '"}' * 195 + '"',
        "node m() {" + "if (x) {" * 95 + "}" * 96,
    ]

    def from_depth(frames: int, source: str) -> object:
        return from_depth(frames - 1, source) if frames else parse(source)

    for source in sources:
        assert from_depth(800, source) is not None


# --------------------------------------------------------------------------------------------
# Speed


def test_five_thousand_lines_parse() -> None:
    # How fast: benchmarks/bench_parser.py (timed tests are flaky on shared machines).
    chunk = (
        "def helper(a: number, b: string = 'x'): {ok: boolean} {\n"
        '  """Does things."""\n'
        "  let total = 0\n"
        "  for (x, i in range(a)) {\n"
        "    if (x % 2 == 0 && i > 3) { total += x * 2 ** i } else { continue }\n"
        "  }\n"
        "  const msg = `value ${total} and ${b.toUpperCase()}`\n"
        '  const r = match (total) { 0 => "zero", _ => { print("other") } }\n'
        "  return {ok: true, items: [y * 2 for y in xs if y != null], ...rest}\n"
        "}\n"
    )
    source = chunk * 500
    program = parse(source)
    assert len(program.items) == 500


def test_instanceof_is_a_comparison_and_void_a_prefix() -> None:
    assert expr("a + 1 instanceof Array") == Binary(
        "instanceof", Binary("+", n("a"), lit(1)), n("Array")
    )
    assert expr("x instanceof Map == false") == Binary(
        "==", Binary("instanceof", n("x"), n("Map")), lit(False)
    )
    assert expr("void f(1)") == Unary("void", Call(n("f"), (Arg(lit(1)),)))
    assert expr("void") == n("void")  # alone, still a name


def test_alias_type_parameter_defaults() -> None:
    (alias,) = items("type Pair<A, B = A[]> = {first: A, rest: B}")
    assert isinstance(alias, TypeAlias)
    assert alias.type_params == ("A", "B")
    assert alias.type_defaults == (None, TArray(TName("A")))
    (plain,) = items("type Box<T> = {item: T}")
    assert isinstance(plain, TypeAlias) and plain.type_defaults == ()
    assert errors("type Bad<A = string, B> = {a: A, b: B}") == [
        (
            "the type parameter `B` has no default but comes after one that has: parameters "
            "with defaults go last",
            1,
            22,
        )
    ]
