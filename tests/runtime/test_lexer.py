"""Lexer: tokens, spans, strings, numbers, comments and newline rules."""

from __future__ import annotations

import pytest

from runtime.language.syntax.ast import Span
from runtime.language.syntax.lexer import tokenize
from runtime.language.syntax.tokens import (
    EOF,
    NAME,
    NEWLINE,
    NUMBER,
    STRING,
    Interpolation,
    StringValue,
    Token,
)


def lex(source: str) -> list[Token]:
    tokens, diagnostics = tokenize(source)
    assert diagnostics == [], [d.message for d in diagnostics]
    return tokens


def kinds(source: str) -> list[str]:
    return [t.kind for t in lex(source)]


def string_value(source: str) -> StringValue:
    tokens = lex(source)
    assert [t.kind for t in tokens] == [STRING, EOF]
    value = tokens[0].value
    assert isinstance(value, StringValue)
    return value


def text_of(source: str) -> str:
    value = string_value(source)
    assert value.is_plain
    return value.text


def test_names_punctuation_and_spans() -> None:
    tokens = lex("let x = a?.b ?? 3")
    assert [(t.kind, t.text) for t in tokens] == [
        (NAME, "let"),
        (NAME, "x"),
        ("=", "="),
        (NAME, "a"),
        ("?.", "?."),
        (NAME, "b"),
        ("??", "??"),
        (NUMBER, "3"),
        (EOF, ""),
    ]
    assert tokens[0].span == Span(1, 1, 1, 4)
    assert tokens[4].span == Span(1, 10, 1, 12)
    assert tokens[-1].span == Span(1, 18, 1, 18)


def test_a_leading_byte_order_mark_is_skipped_and_columns_start_after_it() -> None:
    tokens = lex("\ufefflet x")
    assert [(t.kind, t.text) for t in tokens][:2] == [(NAME, "let"), (NAME, "x")]
    assert tokens[0].span == Span(1, 1, 1, 4)
    _, diagnostics = tokenize("let \ufeffx")  # elsewhere it is a stray character
    assert diagnostics


def test_longest_punctuation_first() -> None:
    source = "=== !== ??= ... ** |> => == != <= >= && || ++ -- += -= *= /= ?. ( ) [ ] { } , ; : ."
    assert kinds(source)[:-1] == source.split()


def test_question_dot_before_a_digit_is_a_conditional() -> None:
    assert kinds("a?.5:1") == [NAME, "?", NUMBER, ":", NUMBER, EOF]


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ("42", 42),
        ("3.5", 3.5),
        (".5", 0.5),
        ("1_000", 1000),
        ("1e3", 1000.0),
        ("2.5E-2", 0.025),
        ("0x1F", 31),
        ("0", 0),
    ],
)
def test_numbers(source: str, value: float) -> None:
    tokens = lex(source)
    assert tokens[0].kind == NUMBER
    assert tokens[0].value == value
    assert type(tokens[0].value) is type(value)


def test_number_followed_by_member() -> None:
    assert kinds("3.toFixed") == [NUMBER, ".", NAME, EOF]
    assert kinds("x.5") == [NAME, NUMBER, EOF]  # `.5` is a number


@pytest.mark.parametrize(
    ("source", "text"),
    [
        (r'"a\\b"', "a\\b"),
        (r'"a\nb"', "a\nb"),
        (r'"a\tb"', "a\tb"),
        (r'"a\rb"', "a\rb"),
        (r'"a\0b"', "a\0b"),
        (r'"a\"b"', 'a"b'),
        (r"'a\'b'", "a'b"),
        (r"`a\`b`", "a`b"),
        (r'"a\${b}"', "a${b}"),
        (r'"\x41\x7e"', "A~"),
        (r'"\u00e9"', "é"),
        (r'"\u{1F600}"', "\U0001f600"),
        (r'"\uD83D\uDE00"', "\U0001f600"),
        (r'"\q"', "\\q"),
        (r'"\xZZ"', "\\xZZ"),
        (r'"\u12"', "\\u12"),
        (r'"\$x"', "\\$x"),
        ('"a\\\nb"', "a\\\nb"),
    ],
)
def test_escapes(source: str, text: str) -> None:
    assert text_of(source) == text


def test_all_quotes_are_equivalent_and_multiline() -> None:
    assert text_of('"it\'s"') == "it's"
    assert text_of("'say \"hi\"'") == 'say "hi"'
    assert text_of("`a\nb`") == "a\nb"
    tokens = lex('"a\nb" x')
    assert tokens[0].span == Span(1, 1, 2, 3)
    assert tokens[1].span == Span(2, 4, 2, 5)


def test_raw_triple_quoted_strings() -> None:
    value = string_value('"""a\\nb \\${x} "quoted" ${y}"""')
    assert value.triple
    assert value.parts[0] == 'a\\nb ${x} "quoted" '
    interpolation = value.parts[1]
    assert isinstance(interpolation, Interpolation)
    assert [t.text for t in interpolation.tokens] == ["y", "}"]


def test_empty_strings() -> None:
    assert text_of('""') == ""
    assert text_of('""""""') == ""


def test_interpolation_tokens_have_file_spans() -> None:
    value = string_value('"a ${b + 1} c"')
    assert value.parts[0] == "a "
    assert value.parts[2] == " c"
    interpolation = value.parts[1]
    assert isinstance(interpolation, Interpolation)
    assert [t.kind for t in interpolation.tokens] == [NAME, "+", NUMBER, EOF]
    assert interpolation.tokens[0].span == Span(1, 6, 1, 7)
    assert interpolation.span == Span(1, 4, 1, 12)


def test_interpolation_with_nested_braces_and_strings() -> None:
    value = string_value('"x ${ {a: "}", b: `${ {c: 1}.c }`}.a } y"')
    assert value.parts[0] == "x "
    assert value.parts[2] == " y"
    inner = value.parts[1]
    assert isinstance(inner, Interpolation)
    kinds_inside = [t.kind for t in inner.tokens]
    assert kinds_inside == ["{", NAME, ":", STRING, ",", NAME, ":", STRING, "}", ".", NAME, EOF]
    nested = inner.tokens[7].value
    assert isinstance(nested, StringValue)
    assert not nested.is_plain


def test_comments() -> None:
    assert kinds("a // comment\nb /* block\n comment */ c") == [NAME, NEWLINE, NAME, NAME, EOF]
    tokens = lex("/* x\ny */ z")
    assert tokens[0].span == Span(2, 6, 2, 7)


def test_doc_comment_attaches_to_next_token() -> None:
    tokens = lex("/**\n * Adds two numbers.\n * Really.\n */\ndef add() {}")
    assert tokens[0].text == "def"
    assert tokens[0].doc == "Adds two numbers.\nReally."
    assert tokens[1].doc is None
    assert lex("/* plain */ def")[0].doc is None


def test_newlines_collapse_and_leading_newlines_vanish() -> None:
    assert kinds("\n\n a \n\n // c\n\n b \n") == [NAME, NEWLINE, NAME, NEWLINE, EOF]


@pytest.mark.parametrize("start", [".map(f)", "?.x", "|> f", "&& b", "|| b", "?? b"])
def test_continuation_lines_drop_the_newline(start: str) -> None:
    assert NEWLINE not in kinds(f"xs\n  // note\n  {start}")


def test_windows_line_endings() -> None:
    tokens = lex("a\r\nb")
    assert [t.kind for t in tokens] == [NAME, NEWLINE, NAME, EOF]
    assert tokens[2].span == Span(2, 1, 2, 2)


@pytest.mark.parametrize(
    ("source", "message", "span"),
    [
        ('x = "abc', "unterminated string starting at 1:5", Span(1, 5, 1, 9)),
        ("x = 'a\nb", "unterminated string starting at 1:5", Span(1, 5, 2, 2)),
        ('"${a', "unterminated string starting at 1:1", Span(1, 1, 1, 5)),
        ("/* abc", "unterminated comment starting at 1:1", Span(1, 1, 1, 7)),
        ("a # b", "unexpected character `#`", Span(1, 3, 1, 4)),
        ("a ##é b", "unexpected characters `##é`", Span(1, 3, 1, 6)),
    ],
)
def test_lexical_errors(source: str, message: str, span: Span) -> None:
    _, diagnostics = tokenize(source)
    assert [(d.message, d.span) for d in diagnostics] == [(message, span)]


def test_lexing_a_large_file() -> None:
    # How fast: benchmarks/bench_parser.py (timed tests are flaky on shared machines).
    source = 'let x = foo(a, "text ${b} more", 1_000.5) // note\n' * 5000
    tokens, diagnostics = tokenize(source)
    assert len(tokens) > 50_000 and not diagnostics


@pytest.mark.parametrize(
    ("source", "spans"),
    [
        # The hot path makes a name's or a mark's span itself and skips the blanks after it.
        ("a \t b", [("name", "a", 1, 2), ("name", "b", 5, 6)]),
        ("x+= \f1", [("name", "x", 1, 2), ("+=", "+=", 2, 4), ("number", "1", 6, 7)]),
        ("re/a b/g", [("regex", "re/a b/g", 1, 9)]),
        ("re /a/", [("name", "re", 1, 3), ("/", "/", 4, 5), ("name", "a", 5, 6), ("/", "/", 6, 7)]),
        ("rex/a", [("name", "rex", 1, 4), ("/", "/", 4, 5), ("name", "a", 5, 6)]),
        (
            "2h  3ms 4 b",
            [
                ("number", "2h", 1, 3),
                ("number", "3ms", 5, 8),
                ("number", "4", 9, 10),
                ("name", "b", 11, 12),
            ],
        ),
    ],
)
def test_spans_on_the_hot_path(source: str, spans: list[tuple[str, str, int, int]]) -> None:
    tokens = lex(source)
    assert [(t.kind, t.text, t.span.col, t.span.end_col) for t in tokens[:-1]] == spans
    assert all(t.span.line == t.span.end_line == 1 for t in tokens)
