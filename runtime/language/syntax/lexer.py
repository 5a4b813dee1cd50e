"""Provides the lexer: Agency source text to a list of tokens.

The lexer never raises. Problems (an unterminated string, a stray character) become diagnostics
and lexing goes on, so the parser can report further errors in the same run.

Newlines are tokens, because they end statements. Consecutive newlines collapse into one, and a
newline is dropped when the next line starts with `.`, `?.`, `|>`, `&&`, `||` or `??`, so method
chains and pipelines may be written one step per line. Newlines inside brackets are the parser's
business (it skips them there).
"""

from __future__ import annotations

import re

from runtime.errors import Diagnostic
from runtime.language.syntax.ast import Span
from runtime.language.syntax.tokens import (
    CODE,
    CONTINUATION_STARTS,
    EOF,
    NAME,
    NEWLINE,
    NUMBER,
    PUNCT1,
    PUNCT2,
    PUNCT3,
    REGEX,
    STRING,
    Interpolation,
    StringValue,
    Token,
)

_SAFE_INTEGER = 2**53  # JavaScript's Number.MAX_SAFE_INTEGER + 1: larger whole numbers are floats
# Tokens in one file. Lexing is ~6 µs and ~200 bytes a token: past this a 10 MB line of `;`
# took 90 s and 2 GB before any error. A program of a million tokens is ~150,000 lines.
MAX_TOKENS = 1_000_000
MAX_DEPTH = 200  # strings nested inside `${…}` inside strings ...

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER_RE = re.compile(
    r"0[xX][0-9a-fA-F](?:_?[0-9a-fA-F])*"
    r"|(?:[0-9](?:_?[0-9])*(?:\.[0-9](?:_?[0-9])*)?|\.[0-9](?:_?[0-9])*)(?:[eE][+-]?[0-9]+)?"
)
_DIGITS = frozenset("0123456789")
_NAME_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
# Unit suffixes of number literals (`500ms`, `2h`, `32mb`): the number they multiply by. Time
# units give milliseconds; sizes give bytes, 1024-based and in any case (`100KB`).
_UNIT_RE = re.compile(r"(ms|s|m|h|d|w|[kKmMgG]?[bB])(?![A-Za-z0-9_])")
_UNIT_START = frozenset("smhdwbkKMgGB")  # a unit's first letter (`""` is in no frozenset)
_UNIT_SCALE = {
    "ms": 1,
    "s": 1000,
    "m": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
    "w": 604_800_000,
    "b": 1,
    "kb": 1024,
    "mb": 1024**2,
    "gb": 1024**3,
}
_SPACE_RE = re.compile(r"[ \t\r\f\v]+")
_HEX_RE = re.compile(r"[0-9a-fA-F]+")
# Runs of ordinary characters inside a string, per closing quote.
_PLAIN_RE = {
    '"': re.compile(r'[^"\\$\n]+'),
    "'": re.compile(r"[^'\\$\n]+"),
    "`": re.compile(r"[^`\\$\n]+"),
    '"""': re.compile(r'[^"\\$\n]+'),
}
_ESCAPES = {
    "\\": "\\",
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "0": "\0",
    '"': '"',
    "'": "'",
    "`": "`",
}
_VALID_CHARS = (
    frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_\"'`/ \t\r\f\v\n")
    | PUNCT1
)


def tokenize(source: str) -> tuple[list[Token], list[Diagnostic]]:
    """Split `source` into tokens (ending with EOF) and the lexical problems found."""
    lexer = Lexer(source)
    return lexer.run(), lexer.diagnostics


class Lexer:
    """A single pass over the source; `run()` returns the tokens."""

    def __init__(self, source: str) -> None:
        self.src = source
        self.n = len(source)
        # A byte-order mark (editors on Windows write one) is not part of the program.
        self.i = 1 if source.startswith("\ufeff") else 0
        self.line = 1
        self.line_start = self.i  # index of the first character of the current line
        self.depth = 0
        self.aborted = False  # nesting went too deep; the rest of the file was skipped
        self.diagnostics: list[Diagnostic] = []
        # Where a string or comment ran to the end of the file; parser errors after it are noise.
        self.runaway_at: Span | None = None

    def run(self) -> list[Token]:
        return self._scan(interpolation=False)

    # ----------------------------------------------------------------------------------------

    def _span(self, line: int, col: int) -> Span:
        """From (line, col) to the current position."""
        return Span(line, col, self.line, self.i - self.line_start + 1)

    def _error(self, message: str, span: Span) -> None:
        self.diagnostics.append(Diagnostic(message, span))

    def _newline_at(self, index: int) -> None:
        """Record that the character at `index` is a newline."""
        self.line += 1
        self.line_start = index + 1

    def _scan(self, interpolation: bool) -> list[Token]:
        """Tokens up to the end of input or, inside `${`, up to its closing `}` (consumed).

        The hot path (a name or a punctuation mark, with the blanks after it) makes its span
        here, on one line, and skips the blanks in the same turn of the loop: lexing is most
        of parsing a big file, and a turn of this loop costs as much as a token."""
        src, n = self.src, self.n
        tokens: list[Token] = []
        append = tokens.append
        name_match = _NAME_RE.match
        space_match = _SPACE_RE.match
        doc: str | None = None
        braces = 0
        while True:
            i = self.i
            if i >= n:
                append(Token(EOF, "", self._span(self.line, i - self.line_start + 1)))
                return tokens
            c = src[i]
            col = i - self.line_start + 1
            if len(tokens) >= MAX_TOKENS:
                return self._too_many(tokens, col)
            if c in " \t\r\f\v":
                m = space_match(src, i)
                assert m is not None
                self.i = m.end()
                continue
            if c == "\n":
                if tokens and tokens[-1].kind != NEWLINE:
                    append(Token(NEWLINE, "\n", Span(self.line, col, self.line, col + 1)))
                self.i = i + 1
                self._newline_at(i)
                continue
            line = self.line
            if c in _NAME_START:
                m = name_match(src, i)
                assert m is not None
                end = m.end()
                if end == i + 2 and c == "r" and src[i + 1] == "e" and end < n and src[end] == "/":
                    append(self._regex(line, col, doc))
                    doc = None
                    continue
                text = m.group()
                append(Token(NAME, text, Span(line, col, line, col + end - i), None, doc))
                doc = None
                if end < n and src[end] in " \t\r\f\v":
                    end = space_match(src, end).end()  # type: ignore[union-attr]
                self.i = end
                continue
            if c == "/" and i + 1 < n and src[i + 1] in "/*":
                comment = self._comment()
                if comment is not None:
                    doc = comment
                continue
            if c in _DIGITS or (c == "." and src[i + 1 : i + 2] in _DIGITS):
                append(self._number(line, col, doc))
            elif c == "$" and src[i + 1 : i + 2] in _DIGITS:
                append(self._dollars(line, col, doc))
            elif c in "\"'`":
                append(self._string(line, col, doc))
            elif c == "[" and src[i + 1 : i + 2] == "|":
                append(self._code(line, col, doc))
            else:
                three = src[i : i + 3]
                two = three[:2]
                if three in PUNCT3:
                    kind = three
                elif two in PUNCT2 and not (two == "?." and src[i + 2 : i + 3] in _DIGITS):
                    kind = two
                elif c in PUNCT1:
                    kind = c
                else:
                    self._bad_characters(line, col)
                    continue
                if interpolation:
                    if kind == "{":
                        braces += 1
                    elif kind == "}":
                        if braces == 0:
                            append(Token(EOF, "}", Span(line, col, line, col + 1)))
                            self.i = i + 1
                            return tokens
                        braces -= 1
                end = i + len(kind)
                if kind in CONTINUATION_STARTS and tokens and tokens[-1].kind == NEWLINE:
                    tokens.pop()
                append(Token(kind, kind, Span(line, col, line, col + end - i), None, doc))
                if end < n and src[end] in " \t\r\f\v":
                    end = space_match(src, end).end()  # type: ignore[union-attr]
                self.i = end
            doc = None

    def _too_many(self, tokens: list[Token], col: int) -> list[Token]:
        """Stop at `MAX_TOKENS`: the tokens so far and an end, the rest of the file unread."""
        span = Span(self.line, col, self.line, col + 1)
        self._error(
            f"more than {MAX_TOKENS:,} tokens in one file; split the program into modules "
            "(`import`)",
            span,
        )
        self._runaway(span)  # what the parser says about the cut-off end is noise
        self.i = self.n
        tokens.append(Token(EOF, "", Span(self.line, col + 1, self.line, col + 1)))
        return tokens

    def _bad_characters(self, line: int, col: int) -> None:
        """Report a run of characters that cannot start a token, and skip it."""
        src, n = self.src, self.n
        j = self.i
        while j < n and src[j] not in _VALID_CHARS:
            j += 1
        bad = src[self.i : j]
        self.i = j
        what = "character" if len(bad) == 1 else "characters"
        shown = bad if len(bad) <= 20 else bad[:20] + "…"
        self._error(f"unexpected {what} `{shown}`", self._span(line, col))

    def _comment(self) -> str | None:
        """Skip a comment; return the text of a `/** doc */` comment."""
        src, i = self.src, self.i
        if src[i + 1] == "/":
            end = src.find("\n", i)
            self.i = self.n if end < 0 else end
            return None
        line, col = self.line, i - self.line_start + 1
        end = src.find("*/", i + 2)
        stop = self.n if end < 0 else end + 2
        newline = src.find("\n", i, stop)
        while newline >= 0:
            self._newline_at(newline)
            newline = src.find("\n", newline + 1, stop)
        self.i = stop
        if end < 0:
            span = self._span(line, col)
            self._error(f"unterminated comment starting at {line}:{col}", span)
            self._runaway(span)
            return None
        if src.startswith("/**", i) and end > i + 2:
            return _doc_text(src[i + 3 : end])
        return None

    def _code(self, line: int, col: int, doc: str | None) -> Token:
        """`[| … |]`: a code literal, its text kept as written (it is parsed on its own)."""
        src, start = self.src, self.i
        end = src.find("|]", start + 2)
        stop = self.n if end < 0 else end + 2
        newline = src.find("\n", start, stop)
        while newline >= 0:
            self._newline_at(newline)
            newline = src.find("\n", newline + 1, stop)
        self.i = stop
        span = self._span(line, col)
        if end < 0:
            self._error(f"unterminated code literal starting at {line}:{col}: expected `|]`", span)
            self._runaway(span)
            return Token(CODE, "", span, None, doc)
        return Token(CODE, src[start + 2 : end], span, None, doc)

    def _runaway(self, span: Span) -> None:
        if self.runaway_at is None:
            self.runaway_at = span

    def _number(self, line: int, col: int, doc: str | None) -> Token:
        m = _NUMBER_RE.match(self.src, self.i)
        assert m is not None
        text = m.group()
        self.i = m.end()
        digits = text.replace("_", "")
        value: int | float
        if digits[:2] in ("0x", "0X"):
            value = _number_value(int(digits, 16))
        elif "." in digits or "e" in digits or "E" in digits or len(digits) > 16:
            value = float(digits)  # correctly rounded, `inf` past 1.8e308, whatever its length
        else:
            value = _number_value(int(digits))
        if digits[:2] not in ("0x", "0X") and self.src[self.i : self.i + 1] in _UNIT_START:
            unit = _UNIT_RE.match(self.src, self.i)
            if unit is not None:
                self.i = unit.end()
                text += unit.group()
                value = _scaled(value, _UNIT_SCALE[unit.group().lower()])
        return Token(NUMBER, text, Span(line, col, line, self.i - self.line_start + 1), value, doc)

    def _regex(self, line: int, col: int, doc: str | None) -> Token:
        """`re/pattern/flags`: up to the first `/` that is not escaped or inside `[…]`."""
        src, n, start = self.src, self.n, self.i
        j = start + 3
        in_class = False
        while j < n and src[j] != "\n":
            c = src[j]
            if c == "\\":
                j += 2
                continue
            if c == "[":
                in_class = True
            elif c == "]":
                in_class = False
            elif c == "/" and not in_class:
                break
            j += 1
        if j >= n or src[j] != "/":
            self.i = j
            span = self._span(line, col)
            self._error(
                "unterminated regex literal: end it with `/` (write `\\/` for a slash)", span
            )
            return Token(REGEX, src[start:j] + "/", span, None, doc)
        j += 1
        while j < n and src[j].isascii() and src[j].isalpha():
            j += 1
        text = src[start:j]
        self.i = j
        return Token(REGEX, text, self._span(line, col), None, doc)

    def _dollars(self, line: int, col: int, doc: str | None) -> Token:
        """`$5.00`: an amount of dollars, the plain number (costs are counted in dollars)."""
        self.i += 1
        token = self._number(line, col, doc)
        return Token(NUMBER, "$" + token.text, token.span, token.value, doc)

    # ----------------------------------------------------------------------------------------
    # Strings

    def _string(self, line: int, col: int, doc: str | None) -> Token:
        src, n = self.src, self.n
        start = self.i
        close = '"""' if src.startswith('"""', start) else src[start]
        triple = close == '"""'
        plain = _PLAIN_RE[close]
        self.i = start + len(close)
        parts: list[str | Interpolation] = []
        buf: list[str] = []
        self.depth += 1
        while True:
            i = self.i
            if i >= n:
                span = self._span(line, col)
                self._error(f"unterminated string starting at {line}:{col}", span)
                self._runaway(span)
                break
            c = src[i]
            if c == close[0] and src.startswith(close, i):
                self.i = i + len(close)
                break
            if c == "\\":
                self.i = i + 1
                buf.append(self._escape(triple))
            elif c == "$" and src.startswith("${", i):
                if buf:
                    parts.append("".join(buf))
                    buf = []
                interpolation = self._interpolation()
                if interpolation is None:
                    if self.aborted:
                        break
                    continue  # ran to the end of the file: reported as an unterminated string
                parts.append(interpolation)
            elif c == "\n":
                buf.append(c)
                self.i = i + 1
                self._newline_at(i)
            else:
                m = plain.match(src, i)
                if m is None:  # a lone `$` or a quote that does not close this string
                    buf.append(c)
                    self.i = i + 1
                else:
                    buf.append(m.group())
                    self.i = m.end()
        self.depth -= 1
        if buf or not parts:
            parts.append("".join(buf))
        text = src[start : self.i]
        return Token(STRING, text, self._span(line, col), StringValue(tuple(parts), triple), doc)

    def _escape(self, raw: bool) -> str:
        """Decode the escape whose backslash was just consumed; an unknown one keeps it."""
        src, i = self.src, self.i
        c = src[i : i + 1]
        if src.startswith("${", i):
            self.i = i + 2
            return "${"
        if raw:
            return "\\"
        simple = _ESCAPES.get(c)
        if simple is not None:
            self.i = i + 1
            return simple
        if c == "x":
            digits = src[i + 1 : i + 3]
            if len(digits) == 2 and _HEX_RE.fullmatch(digits):
                self.i = i + 3
                return chr(int(digits, 16))
        elif c == "u":
            code = self._unicode_escape(i + 1)
            if code is not None:
                # A UTF-16 surrogate pair written as two escapes is one character.
                if 0xD800 <= code <= 0xDBFF and src.startswith("\\u", self.i):
                    saved = self.i
                    low = self._unicode_escape(self.i + 2)
                    if low is not None and 0xDC00 <= low <= 0xDFFF:
                        return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00))
                    self.i = saved
                return chr(code)
        return "\\"

    def _unicode_escape(self, j: int) -> int | None:
        """Read `HHHH` or `{H…}` at `j`; on success move past it and return the code point."""
        src = self.src
        if src.startswith("{", j):
            end = src.find("}", j + 1, j + 10)
            digits = src[j + 1 : end] if end > 0 else ""
            if digits and _HEX_RE.fullmatch(digits) and int(digits, 16) <= 0x10FFFF:
                self.i = end + 1
                return int(digits, 16)
            return None
        digits = src[j : j + 4]
        if len(digits) == 4 and _HEX_RE.fullmatch(digits):
            self.i = j + 4
            return int(digits, 16)
        return None

    def _interpolation(self) -> Interpolation | None:
        """Lex `${ … }` starting at the `$`; None when it runs to the end of the file."""
        line, col = self.line, self.i - self.line_start + 1
        self.i += 2
        if self.depth > MAX_DEPTH:
            span = self._span(line, col)
            self._error("too deeply nested strings (more than 200 levels)", span)
            self._runaway(span)
            self.i = self.n
            self.aborted = True
            return None
        tokens = self._scan(interpolation=True)
        if tokens[-1].text != "}":
            return None
        return Interpolation(tuple(tokens), self._span(line, col))


def _number_value(whole: int) -> int | float:
    """A whole literal as the JavaScript number it is: exact up to 2**53, else the nearest float
    (`inf` past the largest), so no later step meets a 10,000-digit int (Python refuses to
    print one)."""
    if -_SAFE_INTEGER <= whole <= _SAFE_INTEGER:
        return whole
    try:
        return float(whole)
    except OverflowError:
        return float("inf")


def _scaled(value: int | float, scale: int) -> int | float:
    """`value` units of `scale` each, an int when whole (`1.5s` is 1500)."""
    scaled = value * scale
    return int(scaled) if isinstance(scaled, float) and scaled.is_integer() else scaled


def _doc_text(body: str) -> str:
    """The text of a `/** … */` comment without the leading `*` of each line."""
    lines = []
    for raw in body.splitlines():
        stripped = raw.strip()
        if stripped.startswith("*"):
            stripped = stripped[1:].strip()
        lines.append(stripped)
    return "\n".join(lines).strip()
