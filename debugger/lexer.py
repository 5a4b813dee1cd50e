"""Provides `AgencyLexer`, a Pygments lexer for Agency source (used by the debugger's source pane).

Agency looks like TypeScript with a few words of its own (`node`, `def`, `thread`, `handle`,
`match`, `llm`, `checkpoint`, ...). The lexer is a plain `RegexLexer`: it colours, it never
judges, so unfinished code still highlights sensibly.
"""

from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups, include, words
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    Whitespace,
)

from runtime.language.syntax.tokens import RESERVED

__all__ = ["AgencyLexer"]

DECLARATIONS = ("node", "def", "type")
CONSTANTS = ("true", "false", "null", "undefined")
# The parser's reserved words, plus words that are keywords only at the start of a statement.
KEYWORDS = tuple(
    sorted(
        (RESERVED - set(DECLARATIONS) - set(CONSTANTS))
        | {"from", "export", "as", "thread", "subthread", "handle", "shared", "static", "uses"}
        | {"instanceof"}  # an operator spelled as a word (`void` is highlighted as a type)
    )
)
TYPES = ("string", "number", "boolean", "any", "void", "Result")
# Builtins people meet in every agent program; highlighted so the interesting calls stand out.
BUILTINS = (
    "llm",
    "print",
    "printJSON",
    "checkpoint",
    "getCheckpoint",
    "restore",
    "interrupt",
    "approve",
    "reject",
    "success",
    "failure",
    "isSuccess",
    "isFailure",
    "debugger",
    "range",
    "map",
    "filter",
    "reduce",
    "find",
    "keys",
    "values",
    "read",
    "write",
    "saveToDisk",
    "loadFromDisk",
    "getMutable",
    "setMutable",
    "JSON",
    "Object",
)


def _string_state(quote: str, token: type) -> list:  # type: ignore[type-arg]
    """The rules inside a string closed by `quote`: escapes, `${…}` and text."""
    plain = "".join(sorted(set("\\$" + quote[0])))
    return [
        (r"\\.", String.Escape),
        (r"\$\{", String.Interpol, "interpolation"),
        (quote, token, "#pop"),
        (r"\$", token),
        (rf"[^{_escape_class(plain)}]+", token),
        (r".", token),
    ]


def _escape_class(chars: str) -> str:
    return "".join("\\" + c for c in chars)


class AgencyLexer(RegexLexer):  # type: ignore[misc]  # pygments is untyped
    """Pygments lexer for the Agency agent language (`.agency` files)."""

    name = "Agency"
    aliases = ["agency"]
    filenames = ["*.agency"]
    mimetypes = ["text/x-agency"]

    tokens = {
        "root": [
            (r"\n", Whitespace),
            (r"[ \t\r\f\v]+", Whitespace),
            include("comments"),
            (r'"""', String.Double, "triple"),
            (r'"', String.Double, "dq"),
            (r"'", String.Single, "sq"),
            (r"`", String.Backtick, "bq"),
            (
                r"(node|def)(\s+)([A-Za-z_][A-Za-z0-9_]*)",
                bygroups(Keyword.Declaration, Whitespace, Name.Function),
            ),
            (
                r"(type)(\s+)([A-Za-z_][A-Za-z0-9_]*)(\s*)(=)",
                bygroups(Keyword.Declaration, Whitespace, Name.Class, Whitespace, Operator),
            ),
            (words(DECLARATIONS, suffix=r"\b"), Keyword.Declaration),
            (words(KEYWORDS, suffix=r"\b"), Keyword),
            (words(CONSTANTS, suffix=r"\b"), Keyword.Constant),
            (words(TYPES, suffix=r"\b"), Keyword.Type),
            (words(BUILTINS, prefix=r"(?<![.\w])", suffix=r"\b"), Name.Builtin),
            (r"0[xX][0-9a-fA-F](?:_?[0-9a-fA-F])*", Number.Hex),
            (
                r"(?:[0-9](?:_?[0-9])*(?:\.[0-9](?:_?[0-9])*)?|\.[0-9](?:_?[0-9])*)"
                r"(?:[eE][+-]?[0-9]+)?",
                Number,
            ),
            (r"[A-Za-z_][A-Za-z0-9_]*(?=\s*\()", Name.Function),
            (r"[A-Za-z_][A-Za-z0-9_]*", Name),
            (r"\.\.\.|===|!==|\?\?=|\?\.|\?\?|\|>|=>|==|!=|<=|>=|&&|\|\||\+\+|--", Operator),
            (r"\+=|-=|\*=|/=|\*\*|[+\-*/%<>=!|?]", Operator),
            (r"[()\[\]{},;:.]", Punctuation),
            (r".", Text),
        ],
        "comments": [
            (r"(?s)/\*\*.*?\*/", String.Doc),
            (r"(?s)/\*.*?\*/", Comment.Multiline),
            (r"//[^\n]*", Comment.Single),
        ],
        "dq": _string_state('"', String.Double),
        "sq": _string_state("'", String.Single),
        "bq": _string_state("`", String.Backtick),
        "triple": [
            (r"\\\$\{", String.Escape),
            (r"\$\{", String.Interpol, "interpolation"),
            (r'"""', String.Double, "#pop"),
            (r'[^"$\\]+', String.Double),
            (r".", String.Double),
        ],
        "interpolation": [
            (r"\}", String.Interpol, "#pop"),
            (r"\{", Punctuation, "#push"),
            include("root"),
        ],
    }
