"""Provides the Agency front end: source text to the AST (`runtime.language.syntax.ast`).

`parse` reads a whole file; `parse_fragment` a code fragment (std::template's, where a `return`
may stand at the top); `parse_expression` one expression (the debugger's `:set x = <expr>`);
`parse_arguments` a comma-separated argument list (a test's `input`, such as `"Ada", 3`). Each
raises AgencySyntaxError, listing every problem found, and nothing else.
"""

from __future__ import annotations

from runtime.language.syntax import parser
from runtime.language.syntax.ast import Arg, Expr, Program

__all__ = ["parse", "parse_arguments", "parse_expression", "parse_fragment"]


def parse(source: str, path: str = "<input>") -> Program:
    """Parse a whole Agency file; `Program.path` is `path`."""
    return parser.parse(source, path)


def parse_fragment(source: str, path: str = "<code>") -> Program:
    """Parse a code fragment, which may hold a `return` at the top (a body to graft)."""
    return parser.parse_fragment(source, path)


def parse_expression(source: str) -> Expr:
    """Parse one expression (surrounding whitespace and newlines are allowed)."""
    return parser.parse_expression(source)


def parse_arguments(source: str) -> tuple[Arg, ...]:
    """Parse `a, name: b, ...rest` as call arguments; empty text is no arguments."""
    return parser.parse_arguments(source)
