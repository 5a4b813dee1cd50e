"""Parser: the `is` operator, match guards and head form, arm statements, pattern extensions
(middle rest, rename, loop and comprehension binders) and type patterns; their errors."""

from __future__ import annotations

import pytest

from runtime.errors import AgencySyntaxError
from runtime.language.syntax import parse, parse_expression
from runtime.language.syntax.ast import (
    Assign,
    Binary,
    Block,
    FuncDecl,
    Goto,
    Is,
    ListComp,
    Literal,
    Logical,
    Match,
    MatchArm,
    Name,
    PArray,
    PBind,
    PLiteral,
    PObject,
    PObjectField,
    PResult,
    PType,
    PValue,
    PWildcard,
    Return,
    Stmt,
    TArray,
    TName,
)


def body(source: str) -> tuple[Stmt, ...]:
    (main,) = [i for i in parse("node main() {\n" + source + "\n}").items]
    assert isinstance(main, FuncDecl)
    return main.body.body


def arms(source: str, prelude: str = "") -> tuple[MatchArm, ...]:
    items = parse(prelude + "node main() {\nmatch (x) {\n" + source + "\n}\n}").items
    main = items[-1]
    assert isinstance(main, FuncDecl)
    m = main.body.body[0]
    assert isinstance(m, Match)
    return m.arms


def errors(source: str) -> list[tuple[str, int, int]]:
    with pytest.raises(AgencySyntaxError) as info:
        parse(source, "t.agency")
    return [(d.message, d.span.line, d.span.col) for d in info.value.diagnostics]


def test_is_binds_tighter_than_and_and_looser_than_comparisons() -> None:
    e = parse_expression('s is {type: "a"} && ok')
    assert e == Logical(
        "&&",
        Is(Name("s"), PObject((PObjectField("type", PLiteral("a")),))),
        Name("ok"),
    )
    assert parse_expression("a < b is true") == Is(
        Binary("<", Name("a"), Name("b")), PLiteral(True)
    )


def test_is_right_side_is_a_pattern_or_a_type() -> None:
    assert parse_expression("r is success") == Is(Name("r"), PResult("success", None))
    assert parse_expression("r is failure(e)") == Is(Name("r"), PResult("failure", PBind("e")))
    assert parse_expression("x is number[]") == Is(Name("x"), PType(None, TArray(TName("number"))))
    assert parse_expression("x is Person") == Is(Name("x"), PType(None, TName("Person")))
    assert parse_expression("x is null") == Is(Name("x"), PLiteral(None))
    assert parse_expression('x is ["a", ...r]') == Is(Name("x"), PArray((PLiteral("a"),), "r"))


def test_guards_type_tests_and_expression_cases() -> None:
    got = arms(
        "{age} if (age > 1) => 1\n"
        "s: string => 2\n"
        "is boolean => 3\n"
        "{name}: P => 4\n"
        "(a == b) => 5\n"
        "_ if (y) => 6",
        prelude="type P = {name: string}\n",
    )
    assert got == (
        MatchArm(
            PObject((PObjectField("age", PBind("age")),)),
            Literal(1),
            guard=Binary(">", Name("age"), Literal(1)),
        ),
        MatchArm(PType(PBind("s"), TName("string")), Literal(2)),
        MatchArm(PType(None, TName("boolean")), Literal(3)),
        MatchArm(PType(PObject((PObjectField("name", PBind("name")),)), TName("P")), Literal(4)),
        MatchArm(PValue(Binary("==", Name("a"), Name("b"))), Literal(5)),
        MatchArm(PWildcard(), Literal(6), guard=Name("y")),
    )


def test_object_fields_rename_and_type_in_value_position() -> None:
    (arm,) = arms('{name as n, age: number, tag: "x", kind: k, ...rest} => 0')
    assert arm.pattern == PObject(
        (
            PObjectField("name", PBind("n")),
            PObjectField("age", PType(None, TName("number"))),
            PObjectField("tag", PLiteral("x")),
            PObjectField("kind", PBind("k")),
        ),
        "rest",
    )
    # In a declaration `key: name` still renames, even for a type word.
    (decl,) = body("const {a: string, b as c} = o")
    assert decl.target == PObject(  # type: ignore[union-attr]
        (PObjectField("a", PBind("string")), PObjectField("b", PBind("c")))
    )


def test_array_rest_in_the_middle() -> None:
    (arm,) = arms("[a, ...mid, b, c] => 0")
    assert arm.pattern == PArray((PBind("a"),), "mid", tail=(PBind("b"), PBind("c")))
    (decl,) = body("const [...init, last] = xs")
    assert decl.target == PArray((), "init", tail=(PBind("last"),))  # type: ignore[union-attr]


def test_match_head_form_arms_are_conditions() -> None:
    (m,) = body("match (x is {v}) {\n v > 1 => 1\n true => 2\n _ => 3\n}")
    assert isinstance(m, Match) and m.head
    assert [a.guard for a in m.arms] == [Binary(">", Name("v"), Literal(1)), Literal(True), None]
    assert all(a.pattern == PWildcard() for a in m.arms)


def test_arm_bodies_may_be_single_statements() -> None:
    got = arms('"a" => n = 1\n"b" => return 2\n"c" => goto other()\n_ => n += 1')
    assert [type(a.body) for a in got] == [Block] * 4
    kinds = [type(a.body.body[0]) for a in got]  # type: ignore[union-attr]
    assert kinds == [Assign, Return, Goto, Assign]


def test_loop_and_comprehension_binders() -> None:
    (loop,) = body("for ({name, ...r}, i in xs) { }")
    assert loop.pattern == PObject((PObjectField("name", PBind("name")),), "r")  # type: ignore[union-attr]
    assert (loop.var, loop.second) == ("", "i")  # type: ignore[union-attr]
    comp = parse_expression("[a for [a, b], i in xs if i > 0]")
    assert isinstance(comp, ListComp)
    assert comp.pattern == PArray((PBind("a"), PBind("b")))
    assert (comp.var, comp.second) == ("", "i")
    comp = parse_expression("[k for k, v in o]")
    assert isinstance(comp, ListComp) and (comp.var, comp.second, comp.pattern) == ("k", "v", None)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "match (x) { [...a, ...b] => 1 }",
            [("only one `...rest` is allowed in an array pattern", 1, 20)],
        ),
        (
            'match (x) { "a": string => 1 }',
            [("a `: Type` test needs a name, `[…]` or `{…}` before it", 1, 16)],
        ),
        ("match (x) { {a as 3} => 1 }", [("expected a name after `as`, got number `3`", 1, 19)]),
        ("match (x) { a if => 1 }", [("expected an expression after `if`, got `=>`", 1, 18)]),
        ("match (x) { is => 1 }", [("expected a type, got `=>`", 1, 16)]),
        ("match (x is {v}) { v > 1 2 }", [("expected `=>` after the case, got number `2`", 1, 26)]),
        (
            "y = x is [(1)]",
            [("a `(expression)` case is only allowed as a whole match arm", 1, 11)],
        ),
        (
            "for ([a, 1] in xs) { }",
            [("expected a variable name, `[` or `{`, got number `1`", 1, 10)],
        ),
        ("y = [a for {a} of xs]", [("expected `in` after the loop variable, got `of`", 1, 16)]),
        ("y = x is", [("expected a pattern, got end of file", 1, 9)]),
    ],
)
def test_bad_patterns_are_located(source: str, expected: list[tuple[str, int, int]]) -> None:
    assert errors(source) == expected
