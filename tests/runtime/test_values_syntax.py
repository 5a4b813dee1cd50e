"""Syntax for values and types: unit literals, regex literals, `T!`, decorators on types,
value-parameterised aliases, and their located errors."""

from __future__ import annotations

import pytest

from runtime.errors import AgencySyntaxError
from runtime.language.syntax import ast as A
from runtime.language.syntax import parse, parse_expression
from runtime.language.syntax.lexer import tokenize
from runtime.language.syntax.tokens import NUMBER, REGEX


def errors(source: str) -> list[tuple[str, int, int]]:
    with pytest.raises(AgencySyntaxError) as info:
        parse(source, "t.agency")
    return [(d.message, d.span.line, d.span.col) for d in info.value.diagnostics]


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ("500ms", 500),
        ("1s", 1000),
        ("1.5s", 1500),
        ("2m", 120_000),
        ("2h", 7_200_000),
        ("1d", 86_400_000),
        ("1w", 604_800_000),
        ("100kb", 102_400),
        ("3MB", 3 * 1024**2),
        ("1Gb", 1024**3),
        ("8b", 8),
        ("$5.00", 5),
        ("$0.25", 0.25),
    ],
)
def test_unit_literals_are_numbers(source: str, value: float) -> None:
    tokens, diagnostics = tokenize(source)
    assert not diagnostics
    assert tokens[0].kind == NUMBER and tokens[0].value == value and tokens[0].text == source


def test_a_unit_must_end_the_word() -> None:
    tokens, _ = tokenize("2sx")
    assert [t.kind for t in tokens[:2]] == [NUMBER, "name"]
    assert tokens[0].value == 2


def test_regex_literal_token() -> None:
    tokens, diagnostics = tokenize(r"re/a\/b[/]c/gi + 1")
    assert not diagnostics
    assert tokens[0].kind == REGEX and tokens[0].text == r"re/a\/b[/]c/gi"
    assert tokens[1].kind == "+"


def test_regex_literal_and_match_operators() -> None:
    e = parse_expression("s =~ re/^hi/i && t !~ re/x/")
    assert isinstance(e, A.Logical)
    assert isinstance(e.left, A.Binary) and e.left.op == "=~"
    assert isinstance(e.right, A.Binary) and e.right.op == "!~"
    call = e.left.right
    assert isinstance(call, A.Call) and isinstance(call.callee, A.Name)
    assert call.callee.id == "__regex"
    assert [a.value for a in call.args] == [A.Literal("^hi"), A.Literal("i")]


def test_bang_union_applies_to_the_whole_union() -> None:
    (decl,) = parse('const x: "a" | "b"! = y').items
    assert isinstance(decl, A.VarDecl)
    assert isinstance(decl.type, A.TBang) and isinstance(decl.type.inner, A.TUnion)
    assert isinstance(decl.value, A.Call) and decl.value.callee == A.Name("__validate")


def test_bang_parameter_keeps_the_plain_type_and_checks_on_entry() -> None:
    (fn,) = parse("def f(x: number!) { return x }").items
    assert isinstance(fn, A.FuncDecl)
    assert fn.params[0].type == A.TName("number")
    first = fn.body.body[0]
    assert isinstance(first, A.VarDecl) and first.target == A.PBind("x!")


def test_decorated_and_parameterised_alias() -> None:
    source = (
        "@validate(min.partial(n: lo))\n@jsonSchema({minimum: lo})\ntype Age(lo: number) = number"
    )
    (alias,) = parse(source).items
    assert isinstance(alias, A.TypeAlias)
    assert [p.name for p in alias.params] == ["lo"]
    assert isinstance(alias.type, A.TValidated)
    assert len(alias.type.validators) == 1 and len(alias.type.json) == 1


def test_field_decorators_and_type_calls() -> None:
    (alias,) = parse("type P = {\n  @validate(ok)\n  age: Age(18)\n}").items
    assert isinstance(alias, A.TypeAlias) and isinstance(alias.type, A.TObject)
    field = alias.type.fields[0].type
    assert isinstance(field, A.TValidated) and isinstance(field.inner, A.TCall)
    assert field.inner.name == "Age" and field.inner.args == (A.Literal(18),)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "@cache(1)\ntype T = number",
            [("unknown decorator `@cache`: there are `@validate` and `@jsonSchema`", 1, 2)],
        ),
        (
            "@validate(f)\nlet x = 1",
            [
                (
                    "`@validate` and `@jsonSchema` go before a `type` alias or an object-type "
                    "field, not before `let`",
                    2,
                    1,
                )
            ],
        ),
        ("let x: number!", [("`let x: T!` needs a value to validate", 1, 15)]),
        (
            "x = re/abc",
            [("unterminated regex literal: end it with `/` (write `\\/` for a slash)", 1, 5)],
        ),
    ],
)
def test_error_messages(source: str, expected: list[tuple[str, int, int]]) -> None:
    assert errors(source) == expected
