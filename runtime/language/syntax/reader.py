"""Provides the token cursor every part of the parser stands on: peeking, expecting, the one
`fail()`, bracket-aware newline handling and error recovery; and the grammar's shared tables."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NoReturn, TypeVar

import runtime.language.syntax.ast as ast
from runtime.errors import AgencySyntaxError, Diagnostic
from runtime.language.syntax.ast import Span
from runtime.language.syntax.lexer import Lexer
from runtime.language.syntax.tokens import (
    CODE,
    EOF,
    NAME,
    NEWLINE,
    NUMBER,
    REGEX,
    RESERVED,
    STATEMENT_KEYWORDS,
    STRING,
    StringValue,
    Token,
    describe,
)

MAX_DEPTH = 200
MAX_DIAGNOSTICS = 100
_RECURSION_LIMIT = 4000

T = TypeVar("T")

# Appended to a parse error at `=>` outside an argument: as in the reference, an arrow function
# is a block, which only a call takes (`map(xs, (n) => n * 2)`); it is not a value.
BLOCK_NOT_A_VALUE = (
    "; an arrow function is a block, which Agency takes only as an argument of a call "
    "(`map(xs, (n) => n * 2)`), not as a value to store or call: for a reusable function "
    "declare a `def`"
)

# Binding powers, lowest first.
_PIPE = 10
_CATCH = 20
_TERNARY = 25
_OR = 30
_AND = 40
_EQUALITY = 50
_COMPARE = 60
_SUM = 70
_PRODUCT = 80
_POWER = 90
_IS = 55  # `x is P`: below comparisons, above `==` and `&&`
_PREFIX_OPERAND = 85  # a prefix operator's operand: takes `**`, stops at `*`
_POSTFIX = 110

_INFIX: dict[str, int] = {
    "|>": _PIPE,
    "catch": _CATCH,
    "?": _TERNARY,
    "||": _OR,
    "??": _OR,
    "&&": _AND,
    "==": _EQUALITY,
    "!=": _EQUALITY,
    "===": _EQUALITY,
    "!==": _EQUALITY,
    "<": _COMPARE,
    ">": _COMPARE,
    "<=": _COMPARE,
    ">=": _COMPARE,
    "=~": _COMPARE,
    "!~": _COMPARE,
    "in": _COMPARE,
    "instanceof": _COMPARE,
    "+": _SUM,
    "-": _SUM,
    "*": _PRODUCT,
    "/": _PRODUCT,
    "%": _PRODUCT,
    "**": _POWER,
    "(": _POSTFIX,
    "[": _POSTFIX,
    ".": _POSTFIX,
    "?.": _POSTFIX,
    "++": _POSTFIX,
    "--": _POSTFIX,
}
_LOGICAL = frozenset({"||", "??", "&&"})
_ASSIGN_OPS = frozenset({"=", "+=", "-=", "*=", "/=", "??=", "||=", "&&="})
_OPENERS = {"(": ")", "[": "]", "{": "}", "$(": ")"}
_CLOSERS = frozenset({")", "]", "}"})
_STATEMENT_ENDS = frozenset({NEWLINE, ";", "}", EOF})
_NO_FOLD_AFTER = frozenset({"**", ".", "?.", "[", "(", "++", "--"})
_BUILTIN_TYPES = frozenset({"string", "number", "boolean", "any", "null", "undefined", "void"})
# Words that make a bare name in a pattern a type test (`{name: string}`, `x is object`).
_PATTERN_TYPES = frozenset({"string", "number", "boolean", "any", "object"})


class _Abandon(Exception):
    """Unwinds a statement that has an error; the diagnostic is already recorded."""


_CLASSES = frozenset({"Array", "Set", "Map", "Date", "URL", "Error", "RegExp"})


# --------------------------------------------------------------------------------------------
# Helpers

_CONSTANTS: dict[str, bool | None] = {
    "true": True,
    "false": False,
    "null": None,
    "undefined": None,
}
_EXPRESSION_WORDS = frozenset(
    {"true", "false", "null", "undefined", "if", "match", "try", "typeof"}
)
_EXPRESSION_STARTS = frozenset(
    {NUMBER, STRING, REGEX, CODE, "(", "[", "{", "-", "+", "!", "\\", "$("}
)


def _assignable(expr: ast.Expr) -> bool:
    if isinstance(expr, ast.Name):
        return True
    if isinstance(expr, (ast.Member, ast.Index)):
        return not expr.optional
    return False


def _plain(tok: Token) -> bool:
    return isinstance(tok.value, StringValue) and tok.value.is_plain


def _string_text(tok: Token) -> str:
    assert isinstance(tok.value, StringValue)
    return tok.value.text


def _number_key(value: int | float) -> str:
    """A number used as an object key, spelled as JavaScript would (`1`, `1.5`)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "Infinity" if value > 0 else "NaN"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


class TokenReader:
    """The parser's token cursor, error reporting and recovery; the grammar builds on it."""

    def __init__(self, tokens: list[Token], path: str = "<input>", lexer: Lexer | None = None):
        self.toks = tokens
        self.pos = 0
        self.path = path
        self.last = tokens[0]  # the last token consumed; node spans end where it ends
        self._nl: list[bool] = [False]  # True: newlines are insignificant here
        self.depth = 0
        self.loops = 0  # enclosing loops in the current def/node
        self.in_function = False
        self.diagnostics: list[Diagnostic] = []
        self._seen: set[tuple[int, int]] = set()
        self._lexer = lexer
        self._triple_literals: set[int] = set()  # id() of Literals written as """…"""
        # Names declared by `type X = …` anywhere in the file: in a pattern they are type tests.
        self.type_names = {
            tokens[i + 1].text
            for i in range(len(tokens) - 2)
            if tokens[i].kind == NAME
            and tokens[i].text == "type"
            and tokens[i + 1].kind == NAME
            and tokens[i + 2].kind in ("=", "<", "(")
        }
        # `type` aliases written inside a def or node: hoisted to the top level of the file.
        self.inner_aliases: list[ast.TypeAlias] = []
        self.headers = 0  # inside an `if`/`while`/`for`/`match` header: `f() {` is not a block
        self.parallels = 0  # `parallel` blocks so far: each gets its own hidden state local
        self.threads_as_values = 0  # `x = thread { … }` so far: each keeps its thread's id

    def finish(self, result: T, source: str) -> T:
        """Return `result`, or raise AgencySyntaxError with every problem found."""
        diagnostics = list(self._lexer.diagnostics) if self._lexer else []
        runaway = self._lexer.runaway_at if self._lexer else None
        for diagnostic in self.diagnostics:
            at = (diagnostic.span.line, diagnostic.span.col)
            if runaway is not None and at > (runaway.line, runaway.col):
                continue  # a string or comment ran to the end of the file: everything after is noise
            diagnostics.append(diagnostic)
        if diagnostics:
            diagnostics.sort(key=lambda d: (d.span.line, d.span.col))
            diagnostics = [
                Diagnostic(d.message, d.span, self.path) for d in diagnostics[:MAX_DIAGNOSTICS]
            ]
            raise AgencySyntaxError(diagnostics, source)
        return result

    def report(self, message: str, span: Span) -> None:
        """Record a problem and carry on (only the first problem at one position is kept)."""
        at = (span.line, span.col)
        if at in self._seen:
            return
        self._seen.add(at)
        self.diagnostics.append(Diagnostic(message, span, self.path))

    def fail(self, message: str, span: Span | None = None) -> NoReturn:
        """Record a problem and abandon the current statement."""
        self.report(message, span if span is not None else self.peek().span)
        raise _Abandon

    def peek(self) -> Token:
        """The current token; skips newlines where they are insignificant."""
        toks = self.toks
        if self._nl[-1]:
            while toks[self.pos].kind == NEWLINE:
                self.pos += 1
        return toks[self.pos]

    def peek_after(self, offset: int = 1) -> Token:
        """The token `offset` places after the current one (same newline rule)."""
        toks, j = self.toks, self.pos
        skip = self._nl[-1]
        count = -1
        while True:
            tok = toks[j]
            if tok.kind == EOF:
                return tok
            if not (skip and tok.kind == NEWLINE):
                count += 1
                if count == offset:
                    return tok
            j += 1

    def peek_past_newlines(self) -> Token:
        """The next token that is not a newline, without consuming anything."""
        j = self.pos
        while self.toks[j].kind == NEWLINE:
            j += 1
        return self.toks[j]

    def skip_newlines(self) -> None:
        while self.toks[self.pos].kind == NEWLINE:
            self.pos += 1

    def advance(self) -> Token:
        tok = self.peek()
        if tok.kind != EOF:
            self.pos += 1
        self.last = tok
        return tok

    def at(self, kind: str) -> bool:
        return self.peek().kind == kind

    def at_word(self, word: str) -> bool:
        tok = self.peek()
        return tok.kind == NAME and tok.text == word

    def accept(self, kind: str) -> Token | None:
        if self.peek().kind == kind:
            return self.advance()
        return None

    def expect(self, kind: str, message: str | None = None) -> Token:
        tok = self.peek()
        if tok.kind == kind:
            return self.advance()
        self.fail(message or f"expected `{kind}`, got {describe(tok)}", tok.span)

    def expect_arrow(self, preferred: str, message: str) -> Token:
        """`=>` or `->`: the reference takes either spelling in match arms, inline blocks and
        function types."""
        if self.at("=>") or self.at("->"):
            return self.advance()
        return self.expect(preferred, message)

    def expect_word(self, word: str, message: str | None = None) -> Token:
        tok = self.peek()
        if tok.kind == NAME and tok.text == word:
            return self.advance()
        self.fail(message or f"expected `{word}`, got {describe(tok)}", tok.span)

    def expect_close(self, opener: Token) -> Token:
        close = _OPENERS[opener.kind]
        tok = self.peek()
        if tok.kind == close:
            return self.advance()
        where = f"{opener.span.line}:{opener.span.col}"
        self.fail(
            f"expected `{close}` to close `{opener.kind}` opened at {where}, got {describe(tok)}"
            + (BLOCK_NOT_A_VALUE if tok.kind == "=>" else ""),
            tok.span,
        )

    def expect_name(self, what: str = "a name") -> Token:
        tok = self.peek()
        if tok.kind == NAME and tok.text not in RESERVED:
            return self.advance()
        if tok.kind == NAME:
            self.fail(f"`{tok.text}` is a keyword and cannot be used as {what}", tok.span)
        self.fail(f"expected {what}, got {describe(tok)}", tok.span)

    def expect_end(self) -> None:
        tok = self.peek()
        if tok.kind != EOF:
            self.fail(f"unexpected {describe(tok)}", tok.span)

    def span_from(self, start: Span) -> Span:
        """From the start of `start` to the end of the last consumed token."""
        end = self.last.span
        return Span(start.line, start.col, end.end_line, end.end_col)

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.fail(f"too deeply nested (more than {MAX_DEPTH} levels)")

    def bracketed(self, opener: Token, parse: Callable[[], T]) -> T:
        """Run `parse` with newlines insignificant, then expect the closer of `opener`."""
        self._nl.append(True)
        try:
            result = parse()
            self.expect_close(opener)
        finally:
            self._nl.pop()
        return result

    def comma_list(self, opener: Token, item: Callable[[], T]) -> list[T]:
        """`item, item, …` up to the closer of `opener` (consumed); trailing comma allowed."""
        close = _OPENERS[opener.kind]

        def items() -> list[T]:
            result: list[T] = []
            while not self.at(close):
                result.append(item())
                if not self.accept(","):
                    break
            return result

        return self.bracketed(opener, items)

    def recover(self, start: int) -> None:
        """Skip to the end of the abandoned statement that began at token `start`.

        Brackets are counted from the statement start, so a statement whose error is inside a
        multi-line call or block is skipped whole. An unclosed `(` or `[` gives up at a line
        that starts with a statement keyword (the author probably forgot the `)`).
        """
        toks = self.toks
        stack: list[str] = []
        for tok in toks[start : self.pos]:
            self._track(stack, tok.kind)
        if self.pos == start and toks[self.pos].kind not in _STATEMENT_ENDS:
            self._track(stack, toks[self.pos].kind)
            self.pos += 1
        while True:
            tok = toks[self.pos]
            kind = tok.kind
            if kind == EOF:
                return
            if not stack:
                if kind in (NEWLINE, ";"):
                    self.pos += 1
                    return
                if kind == "}":
                    return
            elif (
                kind == NAME
                and tok.text in STATEMENT_KEYWORDS
                and stack[-1] != "{"
                and toks[self.pos - 1].kind == NEWLINE
            ):
                return
            self._track(stack, kind)
            self.pos += 1

    @staticmethod
    def _track(stack: list[str], kind: str) -> None:
        if kind in _OPENERS:
            stack.append(kind)
        elif kind in _CLOSERS and stack:
            stack.pop()

    def guarded(self, parse: Callable[[], T]) -> T | None:
        """Run a statement parser; on an error, recover and return None."""
        start, depth, nl = self.pos, self.depth, len(self._nl)
        try:
            return parse()
        except _Abandon:
            del self._nl[nl:]
            self.depth = depth
            self.recover(start)
            return None

    # ----------------------------------------------------------------------------------------
    # The grammar is recursive: a type holds a default expression, an expression holds a block
    # of statements. The layers above (parse_expressions, parse_declarations, parser) define
    # these; they are declared here so that every layer can call them.

    def expression(self, min_bp: int = 0) -> ast.Expr:
        raise NotImplementedError

    def expr_after(self, tok: Token, min_bp: int = 0) -> ast.Expr:
        raise NotImplementedError

    def header(self, parse: Callable[[], T]) -> T:
        raise NotImplementedError

    def decorators(self) -> tuple[tuple[ast.Expr, ...], tuple[ast.Expr, ...]]:
        raise NotImplementedError

    def param(self) -> ast.Param:
        raise NotImplementedError

    def effect_name(self) -> str:
        raise NotImplementedError

    def raises_clause(self) -> tuple[str, ...]:
        raise NotImplementedError

    def block(self) -> ast.Block:
        raise NotImplementedError

    def statement_body(self, start: Token, top: bool) -> ast.TopLevel:
        raise NotImplementedError

    def handler_body(self) -> ast.Block:
        raise NotImplementedError

    def loop_binders(self, of: bool = False) -> tuple[str, str | None, ast.Pattern | None]:
        raise NotImplementedError
