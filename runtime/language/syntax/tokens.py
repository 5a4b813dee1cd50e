"""Provides the tokens the lexer produces and the parser consumes.

A token's `kind` is one of the word kinds below (`NAME`, `NUMBER`, `STRING`, `NEWLINE`, `EOF`) or,
for punctuation, the punctuation text itself (`"("`, `"=>"`, `"?."`). Keywords are plain `NAME`
tokens: which words are keywords depends on where they stand (`type`, `from` and `shared` are
ordinary names in most places), so the parser decides.

A string token carries its already-decoded parts; each `${…}` part holds the tokens of the
embedded expression (lexed in place, so their spans point into the same file), ending in an `EOF`
token that stands on the closing `}`.
"""

from __future__ import annotations

from runtime.language.syntax.ast import Span
from runtime.language.syntax.nodes import Node

NAME = "name"
NUMBER = "number"
STRING = "string"
NEWLINE = "newline"
EOF = "eof"
REGEX = "regex"  # `re/pattern/flags`; the token text is the whole literal
CODE = "code"  # a code literal `[| … |]`; the token text is what stands between the brackets

# Longest first: the lexer tries three characters, then two, then one.
PUNCT3 = frozenset({"...", "===", "!==", "??=", "||=", "&&="})
PUNCT2 = frozenset(
    {"?.", "??", "|>", "=>", "==", "!=", "<=", ">=", "&&", "||", "++", "--", "+=", "-=", "*=", "/="}
    | {"**", "->"}
    | {"=~", "!~"}
    | {"$("}  # a splice `$( generator() )`
)
PUNCT1 = frozenset("()[]{},;:.?+-*/%<>=!|\\@&")

# A line that starts with one of these continues the expression on the line before it
# (method chains and pipelines written one step per line).
CONTINUATION_STARTS = frozenset({".", "?.", "|>", "&&", "||", "??"})

# Words that can never be a variable name. Other keywords (`type`, `from`, `shared`, `static`,
# `thread`, `handle`, `node`, ...) only mean something at the start of a statement.
RESERVED = frozenset(
    {
        "let",
        "const",
        "if",
        "then",
        "else",
        "while",
        "for",
        "in",
        "return",
        "break",
        "continue",
        "goto",
        "def",
        "import",
        "match",
        "try",
        "catch",
        "typeof",
        "with",
        "true",
        "false",
        "null",
        "undefined",
    }
)

# Words that start a statement; error recovery stops before a line that starts with one.
STATEMENT_KEYWORDS = frozenset(
    {
        "let",
        "const",
        "def",
        "node",
        "return",
        "if",
        "while",
        "for",
        "type",
        "import",
        "shared",
        "static",
        "export",
    }
)


class Interpolation(Node):
    """One `${expr}` inside a string: the expression's tokens (ending in EOF) and its span."""

    tokens: tuple[Token, ...]
    span: Span


class StringValue(Node):
    """A decoded string literal: text parts and interpolations, in order."""

    parts: tuple[str | Interpolation, ...]
    triple: bool = False  # written as """…""" (raw)

    @property
    def is_plain(self) -> bool:
        """True when the string has no `${…}` part."""
        return all(isinstance(part, str) for part in self.parts)

    @property
    def text(self) -> str:
        """The text of a plain string (interpolations are skipped)."""
        return "".join(part for part in self.parts if isinstance(part, str))


class Token(Node):
    """One token. `value` is the number for NUMBER, a StringValue for STRING, else None.

    `doc` holds the text of a `/** … */` comment written right before this token.
    """

    kind: str
    text: str
    span: Span
    value: int | float | StringValue | None = None
    doc: str | None = None

    def is_word(self, word: str) -> bool:
        """True for the NAME token `word`."""
        return self.kind == NAME and self.text == word


def describe(token: Token) -> str:
    """How an error message names a token: "`)`", "end of line", "a string", ..."""
    if token.kind == NEWLINE:
        return "end of line"
    if token.kind == EOF:
        return "end of file" if not token.text else f"`{token.text}`"
    if token.kind == STRING:
        return "a string"
    if token.kind == NUMBER:
        return f"number `{token.text}`"
    return f"`{token.text}`"
