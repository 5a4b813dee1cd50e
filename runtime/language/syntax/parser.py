"""Provides the parser: tokens to the Agency AST.

Recursive descent for declarations and statements, Pratt (binding powers) for expressions.

Newlines end statements, so the token stream keeps them; inside `( … )`, `[ … ]`, an object
literal and a `${…}` they mean nothing and `peek()` skips them. A stack of booleans (`_nl`)
records which of the two applies where the parser stands; a block or a `match` body pushes
"significant" again, so a block inside a call argument still ends its statements at newlines.

Errors: every problem becomes a Diagnostic. A statement with an error is abandoned (an internal
`_Abandon` exception unwinds to the statement loop) and parsing resumes at the next line whose
brackets are balanced, so one run reports several independent errors. `parse` then raises one
AgencySyntaxError with all of them. Nesting deeper than MAX_DEPTH is an error, not a crash.

Choices where the syntax is ambiguous (tests pin each one):
- `{` starting a statement is a block; in expression position it is an object literal; after `=>`
  in a match arm it is a block.
- `-` written right before a number in prefix position folds into the literal (`-42` is
  `Literal(-42)`), unless `**` or a postfix (`.`, `[`, `(`) follows the number; otherwise `Unary`.
- `-x ** 2` is `-(x ** 2)`, as in Python (JavaScript refuses it).
- `try e` takes everything up to a `catch` or `|>`: `try a + b` is `Try(a + b)`,
  `try f() catch d` is `Catch(Try(f()), d)`.
- `c ? a : b` is accepted as well as `if c then a else b`; both give `Conditional`.
- Template parts omit empty text: `"${a}${b}"` is `Template((a, b))`.
- `1e3` and `2.0` are floats; only literals written with digits alone (or hex) are ints.
- A top-level `x = e` is `VarDecl("assign")`; inside a body it is `Assign`.
- Words before `def`/`node` (`export`, `async`, `destructive`, ...) all go to `modifiers`.
- `return` at the top level, and `break`/`continue` outside a loop, are errors; a handler body
  (`with (d) { … }`) counts as a function, so `return approve(d)` is fine there.
- Reserved words (tokens.RESERVED, e.g. `match`, `if`, `in`) are never variable names; all other
  keywords (`type`, `from`, `shared`, `node`, `thread`, ...) are names except where a statement
  starts with them. Any word may follow `.` or be an object key or a named argument.
- `x is P` binds below comparisons and above `==`/`&&` (`a < b is true` is `(a < b) is true`).
  Its right side is a pattern; there, and as the value of an object-pattern field in a match
  (`{name: string}`), a builtin type word, a `type` declared in the file or a capitalised name
  is a type test. In a declaration `{key: name}` always binds. `match (x is P) { … }` has
  boolean conditions as arm cases (`_` is the default).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import NoReturn, TypeVar

import runtime.language.syntax.ast as ast
import runtime.language.syntax.concurrency as concurrency
import runtime.language.syntax.validation as validation
from runtime.errors import AgencySyntaxError, Diagnostic
from runtime.language.syntax.ast import Span
from runtime.language.syntax.lexer import Lexer
from runtime.language.syntax.tokens import (
    EOF,
    NAME,
    NEWLINE,
    NUMBER,
    REGEX,
    RESERVED,
    STATEMENT_KEYWORDS,
    STRING,
    Interpolation,
    StringValue,
    Token,
    describe,
)

MAX_DEPTH = 200
MAX_DIAGNOSTICS = 100
_RECURSION_LIMIT = 4000

T = TypeVar("T")

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
_ASSIGN_OPS = frozenset({"=", "+=", "-=", "*=", "/=", "??="})
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = frozenset({")", "]", "}"})
_STATEMENT_ENDS = frozenset({NEWLINE, ";", "}", EOF})
_NO_FOLD_AFTER = frozenset({"**", ".", "?.", "[", "(", "++", "--"})
_BUILTIN_TYPES = frozenset({"string", "number", "boolean", "any", "null", "undefined", "void"})
# Words that make a bare name in a pattern a type test (`{name: string}`, `x is object`).
_PATTERN_TYPES = frozenset({"string", "number", "boolean", "any", "object"})


class _Abandon(Exception):
    """Unwinds a statement that has an error; the diagnostic is already recorded."""


def parse(source: str, path: str = "<input>") -> ast.Program:
    """Parse a whole Agency file; `Program.path` is `path`."""
    return _run(source, path, lambda parser: parser.program())


def parse_expression(source: str) -> ast.Expr:
    """Parse one expression (surrounding whitespace and newlines are allowed)."""

    def expression(parser: Parser) -> ast.Expr:
        parser._nl.append(True)
        expr = parser.expression()
        parser.expect_end()
        return expr

    return _run(source, "<expression>", expression)


def parse_arguments(source: str) -> tuple[ast.Arg, ...]:
    """Parse `a, name: b, ...rest` as call arguments; empty text is no arguments."""

    def arguments(parser: Parser) -> tuple[ast.Arg, ...]:
        parser._nl.append(True)
        args = []
        while not parser.at(EOF):
            args.append(parser.argument())
            if not parser.accept(","):
                break
        parser.expect_end()
        return tuple(args)

    return _run(source, "<arguments>", arguments)


def _run(source: str, path: str, parse_with: Callable[[Parser], T]) -> T:
    # One nesting level costs up to ~8 Python frames (an object literal inside an object
    # literal), so MAX_DEPTH levels need more than Python's default limit of 1000. Python 3.11
    # does not use the C stack for these Python-to-Python calls, so a higher limit is safe.
    limit = sys.getrecursionlimit()
    if limit < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)
    try:
        lexer = Lexer(source)
        parser = Parser(lexer.run(), path, lexer)
        try:
            result = parse_with(parser)
        except _Abandon:
            parser.finish(None, source)  # raises: a diagnostic was recorded
            raise AssertionError("unreachable") from None
        except RecursionError:
            # Only when the caller itself was already very deep in the stack.
            diagnostic = Diagnostic("too deeply nested", parser.toks[parser.pos].span, path)
            raise AgencySyntaxError([diagnostic], source) from None
        return parser.finish(result, source)
    finally:
        if limit < _RECURSION_LIMIT:
            sys.setrecursionlimit(limit)


_CLASSES = frozenset({"Set", "Map", "Date", "URL", "Error"})


class Parser:
    """One parse of one token list. Use `parse`/`parse_expression` from `runtime.language.syntax`."""

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

    # ----------------------------------------------------------------------------------------
    # Results and errors

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

    # ----------------------------------------------------------------------------------------
    # Token access

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
            f"expected `{close}` to close `{opener.kind}` opened at {where}, got {describe(tok)}",
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

    # ----------------------------------------------------------------------------------------
    # Recovery

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
    # Program and declarations

    def program(self) -> ast.Program:
        items: list[ast.TopLevel] = []
        while True:
            self.skip_separators()
            tok = self.peek()
            if tok.kind == EOF:
                break
            if tok.kind in _CLOSERS:
                self.report(f"unexpected `{tok.kind}`", tok.span)
                self.advance()
                continue
            item = self.guarded(lambda: self.statement(top=True))
            if item is not None:
                items.append(item)
        end = self.toks[-1].span
        span = Span(1, 1, end.end_line, end.end_col)
        items += self.inner_aliases
        return ast.Program(tuple(items), self.path, span)

    def skip_separators(self) -> None:
        toks = self.toks
        while toks[self.pos].kind in (NEWLINE, ";"):
            self.pos += 1

    def function(self, start: Token, modifiers: tuple[str, ...]) -> ast.FuncDecl:
        kind = self.advance().text  # def | node
        name = self.expect_name(f"a {kind} name").text
        opener = self.expect(
            "(", f"expected `(` after the {kind} name, got {describe(self.peek())}"
        )
        params = tuple(self.comma_list(opener, self.param))
        seen_rest = False
        for param in params:
            if seen_rest:
                self.report("a `...rest` parameter must be the last one", param.span)
            seen_rest = seen_rest or param.rest
        return_type = None
        if self.accept(":"):
            return_type = self.type_expr()
        if self.at_word("raises"):
            self.raises_clause()
        saved = self.loops, self.in_function
        self.loops, self.in_function = 0, True
        try:
            body = self.block()
        finally:
            self.loops, self.in_function = saved
        doc = start.doc
        if body.body:
            first = body.body[0]
            if (
                isinstance(first, ast.ExprStmt)
                and isinstance(first.expr, ast.Literal)
                and id(first.expr) in self._triple_literals
                and isinstance(first.expr.value, str)
            ):
                doc = inspect.cleandoc(first.expr.value)
                body = ast.Block(body.body[1:], body.span)
        return validation.bang_function(
            ast.FuncDecl(
                kind, name, params, return_type, body, doc, modifiers, self.span_from(start.span)
            )
        )

    def param(self) -> ast.Param:
        start = self.peek().span
        rest = self.accept("...") is not None
        name = self.expect_name("a parameter name").text
        self.accept("?")  # `prefix?: string`: optional; an omitted argument is null anyway
        type_ = self.type_expr() if self.accept(":") else None
        default = None
        if self.at("="):
            eq = self.advance()
            default = self.expr_after(eq)
            if rest:
                self.report("a `...rest` parameter cannot have a default", eq.span)
        return ast.Param(name, type_, default, rest, self.span_from(start))

    def type_alias(self) -> ast.TypeAlias:
        start = self.advance().span  # type
        name = self.expect_name("a type name").text
        type_params: tuple[str, ...] = ()
        params: tuple[ast.Param, ...] = ()
        if self.at("<"):
            type_params = self.alias_type_params(self.advance())
        if self.at("("):
            params = tuple(self.comma_list(self.advance(), self.param))
        self.expect("=", f"expected `=` after `type {name}`, got {describe(self.peek())}")
        self.skip_newlines()
        return ast.TypeAlias(name, self.type_expr(), self.span_from(start), type_params, params)

    def alias_type_params(self, opener: Token) -> tuple[str, ...]:
        """`<T, U = string>` after an alias name: the names (defaults are parsed and dropped)."""
        names = [self.expect_name("a type parameter").text]
        if self.accept("="):
            self.type_expr()
        while self.accept(","):
            names.append(self.expect_name("a type parameter").text)
            if self.accept("="):
                self.type_expr()
        if not self.accept(">"):
            where = f"{opener.span.line}:{opener.span.col}"
            self.fail(f"expected `>` to close `<` opened at {where}, got {describe(self.peek())}")
        return tuple(names)

    def decorated_alias(self, start: Token, top: bool) -> ast.TypeAlias:
        """`@validate(f, …)` / `@jsonSchema({…})` lines, then `[export] type X = …`."""
        validators, json = self.decorators()
        if self.at_word("export"):
            self.advance()
        if not self.at_word("type"):
            self.fail(
                f"`@validate` and `@jsonSchema` go before a `type` alias or an object-type field, "
                f"not before {describe(self.peek())}",
                self.peek().span,
            )
        self.module_only(start, top, "`type` aliases are")
        alias = self.type_alias()
        inner = ast.TValidated(alias.type, validators, json, alias.span)
        return ast.TypeAlias(alias.name, inner, alias.span, alias.type_params, alias.params)

    def decorators(self) -> tuple[tuple[ast.Expr, ...], tuple[ast.Expr, ...]]:
        """A run of `@validate(…)` / `@jsonSchema(…)`: their arguments, in source order."""
        validators: list[ast.Expr] = []
        json: list[ast.Expr] = []
        while self.at("@"):
            at = self.advance()
            name = self.expect_name("a decorator name after `@`")
            if name.text not in ("validate", "jsonSchema"):
                self.fail(
                    f"unknown decorator `@{name.text}`: there are `@validate` and `@jsonSchema`",
                    name.span,
                )
            opener = self.expect(
                "(", f"expected `(` after `@{name.text}`, got {describe(self.peek())}"
            )
            args = self.comma_list(opener, self.expression)
            if not args:
                self.fail(f"`@{name.text}(…)` needs at least one argument", at.span)
            (validators if name.text == "validate" else json).extend(args)
            self.skip_newlines()
        return tuple(validators), tuple(json)

    def import_(self) -> ast.Import:
        start = self.advance().span  # import
        names: list[str] = []
        namespace = None
        aliases: tuple[tuple[str, str], ...] = ()
        tok = self.peek()
        if tok.kind != STRING:
            if (
                tok.kind == NAME
                and tok.text in ("nodes", "tools", "node", "test")
                and self.peek_after().kind == "{"
            ):
                self.advance()  # `import nodes|tools|node|test { … }`
            if self.at("{"):
                opener = self.advance()
                self.import_aliases: list[tuple[str, str]] = []
                names = [t for t in self.comma_list(opener, self.import_name)]
                aliases = tuple(self.import_aliases)
            elif self.accept("*"):
                self.expect_word(
                    "as", f"expected `as` after `import *`, got {describe(self.peek())}"
                )
                namespace = self.expect_name("a module name").text
            else:
                names = [self.expect_name("a name to import").text]
            self.expect_word("from", f"expected `from`, got {describe(self.peek())}")
        tok = self.peek()
        if tok.kind != STRING or not _plain(tok):
            self.fail(f"expected the module path as a string, got {describe(tok)}", tok.span)
        self.advance()
        module = _string_text(tok)
        return ast.Import(tuple(names), module, self.span_from(start), namespace, aliases)

    def import_name(self) -> str:
        tok = self.peek()
        if tok.kind != NAME:
            self.fail(f"expected a name to import, got {describe(tok)}", tok.span)
        self.advance()
        if self.at_word("as"):
            self.advance()
            alias = self.expect_name("a name")
            self.import_aliases.append((tok.text, alias.text))
        return tok.text

    # ----------------------------------------------------------------------------------------
    # Statements

    def statement(self, top: bool = False) -> ast.TopLevel:
        """One statement (or, when `top`, a declaration), its `with` suffix and its end."""
        self.enter()
        start = self.peek()
        stmt = self.statement_body(start, top)
        if self.at_word("with"):
            with_tok = self.advance()
            action = self.peek()
            if isinstance(stmt, (ast.FuncDecl, ast.TypeAlias, ast.Import)):
                self.fail(
                    "`with approve` / `with reject` cannot follow a declaration", with_tok.span
                )
            if not (action.kind == NAME and action.text not in RESERVED):
                self.fail(
                    "expected `approve`, `reject`, `propagate` or a handler function after "
                    f"`with`, got {describe(action)}",
                    action.span,
                )
            self.advance()
            stmt = ast.WithAction(stmt, action.text, self.span_from(start.span))
        if self.last.kind != "}":
            tok = self.peek()
            if tok.kind in (NEWLINE, ";"):
                self.advance()
            elif tok.kind == "{" and self.last.kind == NAME:
                name = self.last.text
                self.fail(
                    f"a block must follow a call with parentheses: `{name}() {{ … }}` or "
                    f"`{name}() as x {{ … }}`",
                    tok.span,
                )
            elif tok.kind not in ("}", EOF):
                self.fail(f"expected a new line or `;` before {describe(tok)}", tok.span)
        self.depth -= 1
        return stmt

    def inner_statement(self) -> ast.Stmt | None:
        """A statement inside a block; declarations there are reported and dropped."""
        stmt = self.statement(top=False)
        if isinstance(stmt, (ast.FuncDecl, ast.TypeAlias, ast.Import)):
            return None
        return stmt

    def statement_body(self, start: Token, top: bool) -> ast.TopLevel:
        if start.kind == "{":
            return self.block()
        if start.kind == "@":
            return self.decorated_alias(start, top)
        if start.kind != NAME:
            return self.expression_statement(start, top)
        word = start.text
        nxt = self.peek_after()
        if word in ("let", "const"):
            self.advance()
            return self.var_decl(start, word)
        if word == "if":
            return self.if_statement()
        if word == "while":
            return self.while_statement()
        if word == "for":
            return self.for_statement()
        if word == "return":
            return self.return_statement()
        if word in ("break", "continue"):
            self.advance()
            if self.loops == 0:
                self.report(f"`{word}` outside a loop", start.span)
            return ast.Break(start.span) if word == "break" else ast.Continue(start.span)
        if word == "goto":
            self.advance()
            call = self.expr_after(start)
            if not isinstance(call, ast.Call):
                self.fail("`goto` needs a call, like `goto other(x)`", call.span)
            return ast.Goto(call, self.span_from(start.span))
        if word in ("thread", "subthread") and nxt.kind == "{":
            self.advance()
            return ast.ThreadBlock(word, self.block(), self.span_from(start.span))
        if word in ("thread", "subthread") and nxt.kind == "(" and self.block_form_ahead():
            return self.thread_statement(start, None)
        if word == "handle" and nxt.kind == "{":
            return self.handle_block()
        if word == "finalize" and (nxt.kind == "{" or (nxt.kind == NAME and nxt.text == "as")):
            return self.finalize_block(start)
        if word == "destructive" and nxt.kind == "{":
            return self.destructive_block(start)
        if word == "parallel" and self.block_form_ahead():
            return self.parallel_statement(start)
        if word == "seq" and nxt.kind == "{":
            self.advance()
            return self.block()
        if word == "else":
            self.fail("`else` without `if`", start.span)
        if word == "shared" and nxt.kind == NAME:
            self.advance()
            if self.at_word("let") or self.at_word("const"):
                self.advance()
            self.module_only(start, top, "`shared` variables are")
            return self.var_decl(start, "shared")
        if word == "static" and nxt.kind == NAME:
            self.advance()
            if self.at_word("let") or self.at_word("const"):
                self.advance()
            self.module_only(start, top, "`static` variables are")
            return self.var_decl(start, "static")
        if word == "type" and nxt.kind == NAME and self.peek_after(2).kind in ("=", "<", "("):
            if not top and self.in_function:
                self.inner_aliases.append(self.type_alias())
                return ast.Block((), self.span_from(start.span))
            self.module_only(start, top, "`type` aliases are")
            return self.type_alias()
        if word == "import":
            self.module_only(start, top, "`import` is")
            return self.import_()
        if word == "effect" and nxt.kind == NAME and self.at_effect_name(1):
            self.module_only(start, top, "`effect` declarations are")
            return self.effect_declaration(start)
        if word == "effectSet" and nxt.kind == NAME and self.peek_after(2).kind == "=":
            self.module_only(start, top, "`effectSet` declarations are")
            return self.effect_set(start)
        modifiers = self.modifiers_before_function()
        if modifiers is not None:
            if not top:
                self.report("a `def` or `node` can only be declared at the top level", start.span)
            for _ in modifiers:
                self.advance()
            return self.function(start, tuple(modifiers))
        if word == "export" and nxt.kind == NAME:
            self.module_only(start, top, "`export` is")
            self.advance()
            return self.statement_body(self.peek(), top)
        return self.expression_statement(start, top)

    def destructive_block(self, start: Token) -> ast.Block:
        """`destructive { … }`: the statements of a region (no scope of its own) after a mark
        that destructive work began, so later failures of the function say `destructiveRan`."""
        self.advance()  # destructive
        body = self.block()
        mark = ast.Call(ast.Name("__destructive_mark", start.span), (), start.span)
        return ast.Block((ast.ExprStmt(mark, start.span), *body.body), self.span_from(start.span))

    def finalize_block(self, start: Token) -> ast.Finalize:
        """`finalize { … }` or `finalize as draft { … }`."""
        self.advance()  # finalize
        binder = None
        if self.at_word("as"):
            self.advance()
            binder = self.expect_name("a name after `finalize as`").text
        return ast.Finalize(binder, self.block(), self.span_from(start.span))

    def effect_declaration(self, start: Token) -> ast.Block:
        """`effect ns::name { field: T, … }`: the payload type of an effect. Checked at compile
        time by the reference; here it is parsed and has no run-time meaning (an empty block)."""
        self.advance()  # effect
        self.effect_name()
        if self.at("{"):
            self.type_expr()
        return ast.Block((), self.span_from(start.span))

    def effect_set(self, start: Token) -> ast.Block:
        """`effectSet Name = <a::b, OtherSet, …>`: a named set for `raises` (parsed, no effect)."""
        self.advance()  # effectSet
        self.expect_name("an effect set name")
        self.expect("=", f"expected `=` after the effect set name, got {describe(self.peek())}")
        self.effect_list()
        return ast.Block((), self.span_from(start.span))

    def raises_clause(self) -> None:
        """`raises <std::read, Set>`, `raises <*>`, `raises <>` or `raises SetName` after a
        function's parameters: which effects it may raise (parsed and not checked)."""
        self.advance()  # raises
        if self.at("<"):
            self.effect_list()
        else:
            self.expect_name("an effect set after `raises`")

    def effect_list(self) -> None:
        opener = self.expect(
            "<", f"expected `<` to open an effect list, got {describe(self.peek())}"
        )
        while not self.at(">"):
            if self.at("*"):
                self.advance()
            else:
                self.effect_name()
            if not self.accept(","):
                break
        if not self.accept(">"):
            self.fail(
                f"expected `>` to close the effect list opened at {opener.span.line}:"
                f"{opener.span.col}, got {describe(self.peek())}",
                self.peek().span,
            )

    def effect_name(self) -> str:
        """`ns::name` (any number of `::` segments) or a plain set name."""
        parts = [self.expect_name("an effect name").text]
        while self.at(":") and self.peek_after().kind == ":":
            self.advance()
            self.advance()
            parts.append(self.expect_name("an effect name after `::`").text)
        return "::".join(parts)

    def module_only(self, start: Token, top: bool, what: str) -> None:
        if not top:
            self.report(f"{what} only allowed at the top level", start.span)

    def modifiers_before_function(self) -> list[str] | None:
        """The words before `def`/`node` when a declaration starts here (`[]` for none)."""
        words: list[str] = []
        j = self.pos
        toks = self.toks
        while toks[j].kind == NAME and len(words) < 8:
            word = toks[j].text
            if word in ("def", "node") and toks[j + 1].kind == NAME:
                return words
            if word in RESERVED:
                return None
            words.append(word)
            j += 1
        return None

    def expression_statement(self, start: Token, top: bool) -> ast.TopLevel:
        if start.kind in ("++", "--"):
            self.fail(
                f"prefix `{start.kind}` is not supported; write `x {start.kind[0]}= 1` or `x{start.kind}`",
                start.span,
            )
        expr = self.expression()
        tok = self.peek()
        if tok.kind == "=" and isinstance(expr, ast.Slice):
            return self.slice_assignment(expr, self.advance(), start)
        if tok.kind in _ASSIGN_OPS:
            if not _assignable(expr):
                self.fail(
                    f"the left side of `{tok.kind}` must be a variable, a member or an index",
                    expr.span,
                )
            self.advance()
            value = self.expr_after(tok)
            span = self.span_from(start.span)
            if top and tok.kind == "=" and isinstance(expr, ast.Name):
                return ast.VarDecl("assign", ast.PBind(expr.id, expr.span), None, value, span)
            return ast.Assign(expr, tok.kind, value, span)
        if isinstance(expr, ast.Match):
            return expr
        return ast.ExprStmt(expr, expr.span)

    def slice_assignment(self, target: ast.Slice, eq: Token, start: Token) -> ast.ExprStmt:
        """`xs[a:b] = ys` replaces that part of the array in place (a splice): the call
        `__slice_assign(xs, a, b, ys)` of the prelude."""
        value = self.expr_after(eq)
        none = ast.Literal(None, target.span)
        args = tuple(
            ast.Arg(e) for e in (target.obj, target.start or none, target.end or none, value)
        )
        span = self.span_from(start.span)
        return ast.ExprStmt(ast.Call(ast.Name("__slice_assign", span), args, span), span)

    def var_decl(self, start: Token, kind: str) -> ast.VarDecl | ast.Block:
        target = self.pattern(binding=True)
        type_ = self.type_expr() if self.accept(":") else None
        value = None
        if self.at("=") and self.thread_value_ahead():
            self.advance()
            return self.thread_value(start, kind, target, type_)
        if self.at("="):
            value = self.expr_after(self.advance())
        elif kind in ("const", "static"):
            self.report(f"`{start.text}` needs a value: `{start.text} x = …`", self.peek().span)
        elif not isinstance(target, ast.PBind):
            self.report("a destructuring declaration needs a value", self.peek().span)
        if type(type_) is ast.TBang and value is None:
            self.report(f"`{start.text} x: T!` needs a value to validate", self.peek().span)
        return validation.bang_var(
            ast.VarDecl(kind, target, type_, value, self.span_from(start.span))
        )

    def block(self) -> ast.Block:
        if self.peek_past_newlines().kind == "{":
            self.skip_newlines()  # a brace on the next line still opens the block
        tok = self.peek()
        if tok.kind != "{":
            self.fail(f"expected `{{` to start a block, got {describe(tok)}", tok.span)
        opener = self.advance()
        self.enter()
        self._nl.append(False)
        body: list[ast.Stmt] = []
        while True:
            self.skip_separators()
            tok = self.peek()
            if tok.kind == "}":
                break
            if tok.kind == EOF:
                self.expect_close(opener)
            if tok.kind in (")", "]"):
                self.report(f"unexpected `{tok.kind}`", tok.span)
                self.advance()
                continue
            stmt = self.guarded(self.inner_statement)
            if stmt is not None:
                body.append(stmt)
        self._nl.pop()
        self.advance()
        self.depth -= 1
        return ast.Block(tuple(body), self.span_from(opener.span))

    def if_statement(self) -> ast.If:
        # An `else if` chain is collected in a loop, so a long chain is not deep recursion.
        heads: list[tuple[Token, ast.Expr, ast.Block]] = []
        orelse: ast.Block | None = None
        while True:
            start = self.advance()  # if
            cond = self.header(lambda start=start: self.expr_after(start))  # type: ignore[misc]
            heads.append((start, cond, self.block()))
            if not self.peek_past_newlines().is_word("else"):
                break
            self.skip_newlines()
            self.advance()  # else
            if not self.at_word("if"):
                orelse = self.block()
                break
        result: ast.Block | ast.If | None = orelse
        end = self.last.span
        for start, cond, then in reversed(heads):
            span = Span(start.span.line, start.span.col, end.end_line, end.end_col)
            result = ast.If(cond, then, result, span)
        assert isinstance(result, ast.If)
        return result

    def handler_body(self) -> ast.Block:
        """A handler is called like a function: `return approve(v)` is its answer."""
        saved = self.loops, self.in_function
        self.loops, self.in_function = 0, True
        try:
            return self.block()
        finally:
            self.loops, self.in_function = saved

    def loop_body(self) -> ast.Block:
        self.loops += 1
        try:
            return self.block()
        finally:
            self.loops -= 1

    def while_statement(self) -> ast.While:
        start = self.advance()
        cond = self.header(lambda: self.expr_after(start))
        return ast.While(cond, self.loop_body(), self.span_from(start.span))

    def for_statement(self) -> ast.ForIn:
        start = self.advance()
        opener = self.accept("(")

        pattern: list[ast.Pattern] = []

        def header() -> tuple[str, str | None, ast.Expr]:
            if self.at_word("let") or self.at_word("const"):
                self.advance()
            var, second, found = self.loop_binders()
            if found is not None:
                pattern.append(found)
            return var, second, self.header(self.expression)

        if opener is not None:
            var, second, iterable = self.bracketed(opener, header)
        else:
            var, second, iterable = header()
        body = self.loop_body()
        span = self.span_from(start.span)
        return ast.ForIn(var, second, iterable, body, span, pattern[0] if pattern else None)

    def loop_binders(self) -> tuple[str, str | None, ast.Pattern | None]:
        """`x`, `x, i`, `[k, v]`, `{name, ...rest}, i` up to and including `in`.

        A destructuring first binder comes back as a pattern (and `""` for the name)."""
        pattern: ast.Pattern | None = None
        var = ""
        if self.at("[") or self.at("{"):
            pattern = self.pattern(binding=True)
        else:
            var = self.expect_name("a loop variable").text
        second = None
        if self.accept(","):
            second = self.expect_name("a second loop variable").text
        self.expect_word(
            "in", f"expected `in` after the loop variable, got {describe(self.peek())}"
        )
        return var, second, pattern

    def return_statement(self) -> ast.Return:
        start = self.advance()
        if not self.in_function:
            self.report("`return` outside a def or node", start.span)
        tok = self.peek()
        if tok.kind in _STATEMENT_ENDS or tok.is_word("with"):
            return ast.Return(None, start.span)
        value = self.expression()
        return ast.Return(value, self.span_from(start.span))

    def handle_block(self) -> ast.HandleBlock:
        start = self.advance()  # handle
        body = self.block()
        if self.peek_past_newlines().is_word("with"):
            self.skip_newlines()
        with_tok = self.expect_word(
            "with", f"expected `with` after the `handle` block, got {describe(self.peek())}"
        )
        tok = self.peek()
        if tok.kind == "(":
            opener = self.advance()

            def param() -> str | None:
                if self.at(")"):
                    return None
                name = self.expect_name("a parameter name").text
                if self.accept(":"):
                    self.type_expr()
                return name

            name = self.bracketed(opener, param)
            handler = ast.Handler(name, self.handler_body(), None, self.span_from(with_tok.span))
        elif tok.kind == "{":
            handler = ast.Handler(None, self.handler_body(), None, self.span_from(with_tok.span))
        elif tok.kind == NAME and tok.text not in RESERVED:
            self.advance()
            handler = ast.Handler(None, None, tok.text, self.span_from(with_tok.span))
        else:
            self.fail(
                f"expected `(param) {{ … }}` or a function name after `with`, got {describe(tok)}",
                tok.span,
            )
        return ast.HandleBlock(body, handler, self.span_from(start.span))

    # ----------------------------------------------------------------------------------------
    # Expressions (Pratt)

    def expression(self, min_bp: int = 0) -> ast.Expr:
        """An expression whose operators all bind tighter than `min_bp`."""
        self.enter()
        start = self.peek().span
        left = self.prefix()
        while True:
            tok = self.peek()
            kind = tok.kind
            if kind == NAME:
                if tok.text == "is":
                    if _IS <= min_bp:
                        break
                    self.advance()
                    left = self.is_operator(left, tok, start)
                    continue
                if tok.text != "catch":
                    break
                kind = "catch"
            bp = _INFIX.get(kind)
            if bp is None or bp <= min_bp:
                break
            self.advance()
            left = self.infix(left, tok, kind, bp, start)
        self.depth -= 1
        return left

    def expr_after(self, tok: Token, min_bp: int = 0) -> ast.Expr:
        """The operand after `tok` (which may be on the next line)."""
        self.skip_newlines()
        if not self.starts_expression(self.peek()):
            self.fail(
                f"expected an expression after `{tok.text}`, got {describe(self.peek())}",
                self.peek().span,
            )
        return self.expression(min_bp)

    @staticmethod
    def starts_expression(tok: Token) -> bool:
        if tok.kind == NAME:
            return tok.text not in RESERVED or tok.text in _EXPRESSION_WORDS
        return tok.kind in _EXPRESSION_STARTS

    def infix(self, left: ast.Expr, tok: Token, kind: str, bp: int, start: Span) -> ast.Expr:
        if kind == "(":
            args = tuple(self.comma_list(tok, self.argument))
            after = self.toks[self.pos]  # on the same line as the `)`
            if after.is_word("as") or (after.kind == "{" and not self.headers):
                block = self.trailing_block()
                return ast.Call(left, args, self.span_from(start), block)
            return ast.Call(left, args, self.span_from(start))
        if kind in (".", "?."):
            return self.member(left, tok, start)
        if kind == "[":
            return self.index(left, tok, start, optional=False)
        if kind in ("++", "--"):
            if not _assignable(left):
                self.fail(f"`{kind}` needs a variable, a member or an index", left.span)
            return ast.Update(kind, left, self.span_from(start))
        if kind == "?":
            then = self.expr_after(tok)
            self.skip_newlines()
            colon = self.expect(":", f"expected `:` in `? :`, got {describe(self.peek())}")
            orelse = self.expr_after(colon, _TERNARY - 1)
            return ast.Conditional(left, then, orelse, self.span_from(start))
        right = self.expr_after(tok, bp - 1 if kind == "**" else bp)
        span = self.span_from(start)
        if kind == "|>":
            return ast.Pipe(left, right, span)
        if kind == "catch":
            return ast.Catch(left, right, span)
        if kind in _LOGICAL:
            return ast.Logical(kind, left, right, span)
        return ast.Binary(kind, left, right, span)

    def member(self, left: ast.Expr, tok: Token, start: Span) -> ast.Expr:
        optional = tok.kind == "?."
        nxt = self.peek()
        if nxt.kind == NAME:
            self.advance()
            return ast.Member(left, nxt.text, optional, self.span_from(start))
        if optional and nxt.kind == "[":
            return self.index(left, self.advance(), start, optional=True)
        if optional and nxt.kind == "(":
            self.fail("optional calls `?.(…)` are not supported", nxt.span)
        self.fail(f"expected a property name after `{tok.kind}`, got {describe(nxt)}", nxt.span)

    def index(self, left: ast.Expr, opener: Token, start: Span, optional: bool) -> ast.Expr:
        def inside() -> tuple[ast.Expr | None, ast.Expr | None, bool]:
            first = None if self.at(":") else self.expression()
            if not self.accept(":"):
                if first is None:  # unreachable: `:` was checked above
                    self.fail("expected an index")
                return first, None, False
            end = None if self.at("]") else self.expression()
            return first, end, True

        if self.at("]"):
            self.fail("expected an index between `[` and `]`", self.peek().span)
        first, end, is_slice = self.bracketed(opener, inside)
        span = self.span_from(start)
        if is_slice:
            return ast.Slice(left, first, end, span)
        assert first is not None
        return ast.Index(left, first, optional, span)

    def argument(self) -> ast.Arg:
        tok = self.peek()
        if tok.kind == "...":
            self.advance()
            value = self.expr_after(tok)
            return ast.Arg(value, None, True, self.span_from(tok.span))
        if tok.kind == NAME and self.peek_after().kind == ":":
            self.advance()
            value = self.expr_after(self.advance())
            return ast.Arg(value, tok.text, False, self.span_from(tok.span))
        if not self.starts_expression(tok):
            self.fail(f"expected an argument, got {describe(tok)}", tok.span)
        value = self.expression()
        return ast.Arg(value, None, False, value.span)

    def prefix(self) -> ast.Expr:
        tok = self.peek()
        kind = tok.kind
        if kind == NUMBER:
            self.advance()
            assert isinstance(tok.value, (int, float))
            return ast.Literal(tok.value, tok.span)
        if kind == STRING:
            self.advance()
            return self.string(tok)
        if kind == NAME:
            return self.word(tok)
        if kind == REGEX:  # `re/a+/i` is `__regex("a+", "i")`, a regex value
            self.advance()
            body, _, flags = tok.text[3:].rpartition("/")
            args = (ast.Arg(ast.Literal(body, tok.span)), ast.Arg(ast.Literal(flags, tok.span)))
            return ast.Call(ast.Name("__regex", tok.span), args, tok.span)
        if kind == "(":
            self.advance()
            return self.bracketed(tok, self.expression)
        if kind == "[":
            return self.array(self.advance())
        if kind == "{":
            return self.object(self.advance())
        if kind == "\\":
            return self.inline_block(self.advance())
        if kind in ("-", "+", "!"):
            self.advance()
            nxt = self.peek()
            if (
                kind == "-"
                and nxt.kind == NUMBER
                and (nxt.span.line, nxt.span.col) == (tok.span.end_line, tok.span.end_col)
                and self.peek_after().kind not in _NO_FOLD_AFTER
            ):
                self.advance()
                assert isinstance(nxt.value, (int, float))
                return ast.Literal(-nxt.value, self.span_from(tok.span))
            operand = self.expr_after(tok, _PREFIX_OPERAND)
            return ast.Unary(kind, operand, self.span_from(tok.span))
        if kind in ("++", "--"):
            self.fail(f"prefix `{kind}` is not supported; write `x {kind[0]}= 1`", tok.span)
        if kind == "...":
            self.fail("`...` is only allowed in arrays, objects and call arguments", tok.span)
        if kind in (NEWLINE, EOF):
            self.fail(f"expected an expression, got {describe(tok)}", tok.span)
        if kind in _CLOSERS:
            self.fail(f"unexpected `{kind}`", tok.span)
        self.fail(f"expected an expression, got {describe(tok)}", tok.span)

    def header(self, parse: Callable[[], T]) -> T:
        """Parse the head of an `if`/`while`/`for`/`match`, where a `{` after a call opens the
        statement's body, not a trailing block."""
        self.headers += 1
        try:
            return parse()
        finally:
            self.headers -= 1

    def trailing_block(self) -> ast.BlockFn:
        """After a call's `)`: `as x { … }`, `as (a, b) { … }`, `as { … }` or `{ … }`."""
        start = self.peek().span
        params: tuple[ast.Param, ...] = ()
        if self.at_word("as"):
            self.advance()
            tok = self.peek()
            if tok.kind == "(":
                params = tuple(self.comma_list(self.advance(), self.param))
            elif tok.kind == NAME and tok.text not in RESERVED:
                self.advance()
                params = (ast.Param(tok.text, None, None, False, tok.span),)
            elif tok.kind != "{":
                self.fail(
                    f"expected a parameter name, `(a, b)` or `{{` after `as`, got {describe(tok)}",
                    tok.span,
                )
        saved = self.headers
        self.headers = 0
        try:
            body = self.handler_body()
        finally:
            self.headers = saved
        return ast.BlockFn(params, body, False, self.span_from(start))

    def inline_block(self, backslash: Token) -> ast.BlockFn:
        """`\\x -> expr`, `\\(a, b) -> expr`, `\\ -> expr`: a block returning one expression."""
        params: tuple[ast.Param, ...] = ()
        tok = self.peek()
        if tok.kind == "(":
            params = tuple(self.comma_list(self.advance(), self.param))
        elif tok.kind == NAME:
            name = self.expect_name("a parameter name")
            params = (ast.Param(name.text, None, None, False, name.span),)
        arrow = self.expect(
            "->", f"expected `->` after the inline block's parameters, got {describe(self.peek())}"
        )
        saved = self.headers
        self.headers = 0
        try:
            value = self.expr_after(arrow)
        finally:
            self.headers = saved
        body = ast.Block((ast.Return(value, value.span),), value.span)
        return ast.BlockFn(params, body, True, self.span_from(backslash.span))

    def word(self, tok: Token) -> ast.Expr:
        text = tok.text
        if text in RESERVED:
            if text in _CONSTANTS:
                self.advance()
                return ast.Literal(_CONSTANTS[text], tok.span)
            if text == "if":
                return self.conditional()
            if text == "match":
                return self.match()
            if text == "try":
                self.advance()
                return ast.Try(self.expr_after(tok, _CATCH), self.span_from(tok.span))
            if text == "typeof":
                self.advance()
                operand = self.expr_after(tok, _PREFIX_OPERAND)
                return ast.Unary("typeof", operand, self.span_from(tok.span))
            self.fail(f"expected an expression, got the keyword `{text}`", tok.span)
        if text == "new" and self.peek_after().kind == NAME:
            return self.new_instance()
        if text == "schema" and self.peek_after().kind == "(":
            self.advance()
            t = self.bracketed(self.advance(), self.type_expr)
            return validation.schema_value(t, self.span_from(tok.span))
        if text in ("interrupt", "raise"):
            raised = self.raise_form(tok)
            if raised is not None:
                return raised
        if text == "async" and self.peek_after().kind == NAME:
            return self.async_call(tok)
        if text in concurrency.COMPREHENSION_PREFIXES and self.peek_after().kind == "[":
            nxt = self.peek_after()
            if (nxt.span.line, nxt.span.col) != (tok.span.end_line, tok.span.end_col):
                return self.fork_prefix(tok)  # `fork [e for x in xs]`, not `fork[i]`
        self.advance()
        return ast.Name(text, tok.span)

    def async_call(self, tok: Token) -> ast.Expr:
        """`async f(x)`: the call runs as a branch the caller does not wait for; branches run in
        turn here (runtime/vm/builtins_fork.py), so it is the call itself, finished before the
        next statement."""
        self.advance()
        call = self.expr_after(tok, _PREFIX_OPERAND)
        if not isinstance(call, ast.Call):
            self.fail("`async` must be followed by a call, like `async f(x)`", call.span)
        return call

    def fork_prefix(self, tok: Token) -> ast.Call:
        """`fork [e for x in xs if c]` (or `forkShared`, `race`, `raceShared`)."""
        self.advance()
        items = self.array(self.advance())
        if not isinstance(items, ast.ListComp):
            self.fail(
                f"`{tok.text} [ … ]` needs a comprehension, like `{tok.text} [f(x) for x in xs]`",
                items.span,
            )
        return concurrency.fork_comprehension(tok.text, items, self.span_from(tok.span))

    def thread_value_ahead(self) -> bool:
        """After `let x =`: `thread {`, `subthread {` or `thread(…) {`."""
        tok = self.peek_after()
        if tok.kind != NAME or tok.text not in ("thread", "subthread"):
            return False
        saved = self.pos
        self.pos += 1
        try:
            return self.peek_after().kind == "{" or self.block_form_ahead()
        finally:
            self.pos = saved

    def thread_value(
        self, start: Token, kind: str, target: ast.Pattern, type_: ast.TypeExpr | None
    ) -> ast.Block:
        """`const msgs = thread { … }`: the block runs, then `msgs` holds its messages."""
        self.threads_as_values += 1
        handle = f"__thread#{self.threads_as_values}"
        block = self.thread_statement(self.peek(), handle)
        span = self.span_from(start.span)
        value = concurrency.thread_value_expr(handle, span)
        store = ast.VarDecl(kind, target, type_, value, span)
        return concurrency.thread_value(block, handle, store, span)

    def thread_statement(self, start: Token, handle: str | None) -> ast.ThreadBlock:
        """`thread { … }`, `subthread(label: "x", hidden: true) { … }` and the like."""
        word = self.advance().text
        options: list[ast.Arg] = []
        if self.at("("):
            options = self.comma_list(self.advance(), self.argument)
            for a in options:
                if a.name not in concurrency.THREAD_OPTIONS:
                    self.fail(
                        f"`{word}` takes the options "
                        + ", ".join(f"`{o}:`" for o in sorted(concurrency.THREAD_OPTIONS)),
                        a.span,
                    )
        body = self.block()
        span = self.span_from(start.span)
        if handle is None and any(a.name == "summarize" for a in options):
            self.threads_as_values += 1
            handle = f"__thread#{self.threads_as_values}"
        if not options and handle is None:
            return ast.ThreadBlock(word, body, span)
        return concurrency.thread_block(word, tuple(options), body, handle, span)

    def block_form_ahead(self) -> bool:
        """Whether `word {` or `word(…) {` follows (the block forms of `parallel`)."""
        i = self.pos + 1
        if self.toks[i].kind == "(":
            depth = 0
            while i < len(self.toks) and self.toks[i].kind != EOF:
                kind = self.toks[i].kind
                depth += kind == "("
                depth -= kind == ")"
                i += 1
                if depth == 0:
                    break
        return i < len(self.toks) and self.toks[i].kind == "{"

    def parallel_statement(self, start: Token) -> ast.Block:
        """`parallel { … }` / `parallel(shared: true) { … }`: each statement is a branch."""
        self.advance()
        shared: ast.Expr | None = None
        if self.at("("):
            for a in self.comma_list(self.advance(), self.argument):
                if a.name != "shared":
                    self.fail("`parallel` takes only the option `shared: …`", a.span)
                shared = a.value
        body = self.block()
        self.parallels += 1
        state = f"__parallel#{self.parallels}"
        return concurrency.parallel_block(body.body, shared, state, self.span_from(start.span))

    def raise_form(self, tok: Token) -> ast.Expr | None:
        """`interrupt ns::name(msg, data?)` (an interrupt with an effect name), and `raise`
        before `interrupt(…)`, `ns::name(…)` or `(msg)`: all are calls of `interrupt`, the
        effect name passed third. Anything else is the plain name (a variable `raise`)."""
        nxt = self.peek_after()
        adjacent = nxt.span.line == tok.span.end_line
        if not adjacent:
            return None
        if tok.text == "interrupt":
            if nxt.kind != NAME or not self.at_effect_name(1):
                return None
            self.advance()
            return self.effect_call(tok)
        if nxt.kind == NAME and nxt.text == "interrupt":
            self.advance()
            return self.prefix_call_expr()
        if nxt.kind == NAME and self.at_effect_name(1):
            self.advance()
            return self.effect_call(tok)
        if nxt.kind == "(" and (nxt.span.line, nxt.span.col) != (
            tok.span.end_line,
            tok.span.end_col,
        ):
            return None  # `raise (x)` with a space stays a call of a variable named raise
        if nxt.kind == "(":
            self.advance()
            opener = self.advance()
            args = tuple(self.comma_list(opener, self.argument))
            callee = ast.Name("interrupt", tok.span)
            return ast.Call(callee, args, self.span_from(tok.span))
        return None

    def prefix_call_expr(self) -> ast.Expr:
        """The expression after `raise`: `interrupt(…)` or `interrupt ns::name(…)`."""
        return self.expression(_PREFIX_OPERAND)

    def at_effect_name(self, offset: int) -> bool:
        """Whether the tokens from `offset` on spell `name::` (two adjacent colons)."""
        a, b = self.peek_after(offset + 1), self.peek_after(offset + 2)
        return a.kind == ":" and b.kind == ":" and a.span.end_col == b.span.col

    def effect_call(self, start: Token) -> ast.Call:
        """`ns::name(args)` with the current token at `ns`: a call of `interrupt` whose third
        argument is the effect name ("ns::name"; names may have several segments)."""
        effect = self.effect_name()
        opener = self.peek()
        if opener.kind != "(":
            self.fail(
                f"expected `(` after the effect name `{effect}`, got {describe(opener)}",
                opener.span,
            )
        self.advance()
        args = list(self.comma_list(opener, self.argument))
        if all(a.name is None and not a.spread for a in args):
            while len(args) < 2:
                args.append(ast.Arg(ast.Literal(None, opener.span)))
            args.append(ast.Arg(ast.Literal(effect, start.span)))
        else:
            args.append(ast.Arg(ast.Literal(effect, start.span), name="__effect"))
        callee = ast.Name("interrupt", start.span)
        return ast.Call(callee, tuple(args), self.span_from(start.span))

    def new_instance(self) -> ast.Expr:
        """`new Set(xs)`: JavaScript's built-in classes are constructed by calling them, so
        `new C(args)` is the call `C(args)`; `new C` alone is `C()`."""
        self.advance()  # new
        cls = self.advance()
        if cls.text not in _CLASSES:
            self.fail(
                f"`new` works with the built-in classes ({', '.join(sorted(_CLASSES))}), "
                f"not `{cls.text}`",
                cls.span,
            )
        name = ast.Name(cls.text, cls.span)
        if self.peek().kind == "(":
            return name
        return ast.Call(name, (), cls.span)

    def conditional(self) -> ast.Conditional:
        start = self.advance()  # if
        cond = self.expr_after(start)
        self.skip_newlines()
        then_tok = self.expect_word(
            "then", f"expected `then` in `if … then … else …`, got {describe(self.peek())}"
        )
        then = self.expr_after(then_tok)
        self.skip_newlines()
        else_tok = self.expect_word(
            "else", f"expected `else` in `if … then … else …`, got {describe(self.peek())}"
        )
        orelse = self.expr_after(else_tok)
        return ast.Conditional(cond, then, orelse, self.span_from(start.span))

    def string(self, tok: Token) -> ast.Literal | ast.Template:
        value = tok.value
        assert isinstance(value, StringValue)
        if value.is_plain:
            literal = ast.Literal(value.text, tok.span)
            if value.triple:
                self._triple_literals.add(id(literal))
            return literal
        parts: list[str | ast.Expr] = []
        for part in value.parts:
            if isinstance(part, str):
                if part:
                    parts.append(part)
            else:
                parts.append(self.interpolation(part))
        self.last = tok
        return ast.Template(tuple(parts), tok.span)

    def interpolation(self, part: Interpolation) -> ast.Expr:
        """Parse the tokens of one `${…}` in place of the main stream, then switch back."""
        saved = self.toks, self.pos, self._nl
        self.toks, self.pos, self._nl = list(part.tokens), 0, [True]
        try:
            if self.at(EOF):
                self.fail("empty `${}` in a string", part.span)
            expr = self.expression()
            tok = self.peek()
            if tok.kind != EOF:
                self.fail(f"unexpected {describe(tok)} in `${{…}}`", tok.span)
            return expr
        finally:
            self.toks, self.pos, self._nl = saved

    def array(self, opener: Token) -> ast.ArrayLit | ast.ListComp:
        def inside() -> ast.ArrayLit | ast.ListComp:
            items: list[ast.Expr | ast.Spread] = []
            while not self.at("]"):
                items.append(self.array_item())
                if len(items) == 1 and self.at_word("for") and not isinstance(items[0], ast.Spread):
                    return self.comprehension(items[0], opener)
                if not self.accept(","):
                    break
            return ast.ArrayLit(tuple(items))

        node = self.bracketed(opener, inside)
        span = self.span_from(opener.span)
        if isinstance(node, ast.ArrayLit):
            return ast.ArrayLit(node.items, span)
        return ast.ListComp(
            node.element, node.var, node.iterable, node.cond, span, node.second, node.pattern
        )

    def array_item(self) -> ast.Expr | ast.Spread:
        tok = self.peek()
        if tok.kind == "...":
            self.advance()
            return ast.Spread(self.expr_after(tok), self.span_from(tok.span))
        if not self.starts_expression(tok):
            self.fail(f"expected an array item, got {describe(tok)}", tok.span)
        return self.expression()

    def comprehension(self, element: ast.Expr, opener: Token) -> ast.ListComp:
        self.advance()  # for
        var, second, pattern = self.loop_binders()
        iterable = self.expr_after(self.last)
        cond = None
        if self.at_word("if"):
            cond = self.expr_after(self.advance())
        return ast.ListComp(element, var, iterable, cond, second=second, pattern=pattern)

    def object(self, opener: Token) -> ast.ObjectLit:
        entries = self.comma_list(opener, self.object_entry)
        return ast.ObjectLit(tuple(entries), self.span_from(opener.span))

    def object_entry(self) -> ast.ObjectEntry | ast.Spread:
        tok = self.peek()
        start = tok.span
        key: str | ast.Expr
        if tok.kind == "...":
            self.advance()
            return ast.Spread(self.expr_after(tok), self.span_from(start))
        if tok.kind == "[":
            opener = self.advance()
            key = self.bracketed(opener, self.expression)
        elif tok.kind == STRING:
            if not _plain(tok):
                self.fail("an object key cannot contain `${…}`; use `[expr]: value`", tok.span)
            key = _string_text(self.advance())
        elif tok.kind == NUMBER:
            self.advance()
            assert isinstance(tok.value, (int, float))
            key = _number_key(tok.value)
        elif tok.kind == NAME:
            self.advance()
            key = tok.text
            if not self.at(":"):
                if tok.text in RESERVED:
                    self.fail(f"expected `:` after the key `{tok.text}`", self.peek().span)
                return ast.ObjectEntry(key, ast.Name(key, tok.span), tok.span)
        else:
            self.fail(f"expected a property name, got {describe(tok)}", tok.span)
        colon = self.expect(
            ":", f"expected `:` after the property name, got {describe(self.peek())}"
        )
        value = self.expr_after(colon)
        return ast.ObjectEntry(key, value, self.span_from(start))

    def match(self) -> ast.Match:
        start = self.advance()  # match
        subject = self.header(lambda: self.expr_after(start))
        if self.peek_past_newlines().kind == "{":
            self.skip_newlines()
        tok = self.peek()
        if tok.kind != "{":
            self.fail(f"expected `{{` after the `match` subject, got {describe(tok)}", tok.span)
        opener = self.advance()
        self._nl.append(False)
        head = type(subject) is ast.Is
        arms: list[ast.MatchArm] = []
        while True:
            while self.toks[self.pos].kind in (NEWLINE, ",", ";"):
                self.pos += 1
            tok = self.peek()
            if tok.kind == "}":
                break
            if tok.kind == EOF:
                self.expect_close(opener)
            arms.append(self.head_arm() if head else self.match_arm())
            tok = self.peek()
            if tok.kind not in (NEWLINE, ",", ";", "}"):
                self.fail(f"expected a new line or `,` between match arms, got {describe(tok)}")
        self._nl.pop()
        self.advance()
        return ast.Match(subject, tuple(arms), self.span_from(start.span), head)

    def match_arm(self) -> ast.MatchArm:
        start = self.peek().span
        tok = self.peek()
        pattern: ast.Pattern
        if tok.kind == "(":
            expr = self.bracketed(self.advance(), self.expression)
            pattern = ast.PValue(expr, self.span_from(tok.span))
        elif tok.is_word("is"):
            self.advance()
            pattern = ast.PType(None, self.type_expr(), self.span_from(tok.span))
        else:
            pattern = self.pattern(binding=False)
        guard = None
        if self.at_word("if"):
            guard = self.expr_after(self.advance())
        arrow = self.expect("=>", f"expected `=>` after the pattern, got {describe(self.peek())}")
        body = self.arm_body(arrow)
        return ast.MatchArm(pattern, body, self.span_from(start), guard)

    def head_arm(self) -> ast.MatchArm:
        """An arm of `match (x is P) { … }`: a boolean case expression, or `_`."""
        start = self.peek().span
        tok = self.peek()
        guard = None
        if tok.is_word("_") and self.peek_after().kind == "=>":
            self.advance()
        else:
            guard = self.expression()
        arrow = self.expect("=>", f"expected `=>` after the case, got {describe(self.peek())}")
        body = self.arm_body(arrow)
        return ast.MatchArm(ast.PWildcard(tok.span), body, self.span_from(start), guard)

    def arm_body(self, arrow: Token) -> ast.Expr | ast.Block:
        """A block, an expression, or one statement (`x = 1`, `return e`, `goto n()`)."""
        self.skip_newlines()
        tok = self.peek()
        if tok.kind == "{" and not self._object_literal_ahead():
            return self.block()
        if tok.kind == NAME and tok.text in ("return", "goto", "break", "continue"):
            stmt = self.statement_body(tok, top=False)
            return ast.Block((stmt,), self.span_from(tok.span))  # type: ignore[arg-type]
        expr = self.expr_after(arrow)
        op = self.peek()
        if op.kind in _ASSIGN_OPS:
            if not _assignable(expr):
                self.fail(
                    f"the left side of `{op.kind}` must be a variable, a member or an index",
                    expr.span,
                )
            self.advance()
            value = self.expr_after(op)
            assign = ast.Assign(expr, op.kind, value, self.span_from(tok.span))
            return ast.Block((assign,), assign.span)
        return expr

    def is_operator(self, left: ast.Expr, tok: Token, start: Span) -> ast.Is:
        """`left is PATTERN` (`is` consumed): a type (`x is string[]`, `x is Person`) or a
        match pattern (`r is success(v)`, `step is {type: "a"}`)."""
        self.skip_newlines()
        if self.type_word(self.peek()) and self.peek_after().kind != "(":
            first = self.peek()
            pattern: ast.Pattern = ast.PType(None, self.type_expr(), self.span_from(first.span))
        else:
            pattern = self.pattern(binding=False, suffix=False)
        return ast.Is(left, pattern, self.span_from(start))

    def type_word(self, tok: Token) -> bool:
        """A name that, alone in a pattern, is a type test rather than a binder: a builtin
        type, a `type` declared in this file, or a capitalised name (an imported type; an
        unknown one is a run-time error rather than a binder that always matches)."""
        if tok.kind != NAME:
            return False
        text = tok.text
        return text in _PATTERN_TYPES or text in self.type_names or text[:1].isupper()

    def _object_literal_ahead(self) -> bool:
        """At a `{` that opens an object literal (`{k: v`, `{"k": v`, `{...x`), not a block."""
        toks, j = self.toks, self.pos + 1
        while toks[j].kind == NEWLINE:
            j += 1
        first = toks[j]
        if first.kind == "...":
            return True
        if first.kind not in (NAME, STRING, NUMBER):
            return False
        j += 1
        while toks[j].kind == NEWLINE:
            j += 1
        return toks[j].kind == ":"

    # ----------------------------------------------------------------------------------------
    # Patterns

    def pattern(self, binding: bool, suffix: bool | None = None) -> ast.Pattern:
        """A match pattern, or (`binding`) a declaration target: a name, `[…]` or `{…}`.

        A match pattern may end with a type (`s: string`, `{name}: Person`) unless `suffix` is
        False (the right side of `is`, where `:` could belong to `? :`)."""
        self.enter()
        tok = self.peek()
        kind = tok.kind
        result: ast.Pattern
        if kind == "[":
            result = self.array_pattern(self.advance(), binding)
        elif kind == "{":
            result = self.object_pattern(self.advance(), binding)
        elif kind == NAME and tok.text == "_":
            self.advance()
            result = ast.PWildcard(tok.span)
        elif (
            kind == NAME
            and tok.text not in RESERVED
            and not (
                tok.text in ("success", "failure")
                and (not binding or self.peek_after().kind == "(")
            )
        ):
            self.advance()
            result = ast.PBind(tok.text, tok.span)
        elif binding:
            self.fail(f"expected a variable name, `[` or `{{`, got {describe(tok)}", tok.span)
        elif kind == NAME and tok.text in ("success", "failure"):
            self.advance()
            inner = None
            if self.at("("):
                opener = self.advance()
                inner = self.bracketed(
                    opener, lambda: None if self.at(")") else self.pattern(binding=False)
                )
            result = ast.PResult(tok.text, inner, self.span_from(tok.span))
        elif kind == "(":
            self.fail("a `(expression)` case is only allowed as a whole match arm", tok.span)
        else:
            result = ast.PLiteral(self.literal_value("a pattern"), self.span_from(tok.span))
        if not binding and suffix is not False and self.at(":"):
            colon = self.advance()
            if isinstance(result, (ast.PLiteral, ast.PType)):
                self.fail("a `: Type` test needs a name, `[…]` or `{…}` before it", colon.span)
            result = ast.PType(result, self.type_expr(), self.span_from(tok.span))
        self.depth -= 1
        return result

    def literal_value(self, what: str) -> str | int | float | bool | None:
        """A literal written in a pattern or a type: string, number, `-`number, constant."""
        tok = self.peek()
        if tok.kind == STRING:
            if not _plain(tok):
                self.fail(f"a string in {what} cannot contain `${{…}}`", tok.span)
            return _string_text(self.advance())
        if tok.kind == NUMBER:
            self.advance()
            assert isinstance(tok.value, (int, float))
            return tok.value
        if tok.kind == "-" and self.peek_after().kind == NUMBER:
            self.advance()
            number = self.advance().value
            assert isinstance(number, (int, float))
            return -number
        if tok.kind == NAME and tok.text in _CONSTANTS:
            self.advance()
            return _CONSTANTS[tok.text]
        self.fail(f"expected {what}, got {describe(tok)}", tok.span)

    def array_pattern(self, opener: Token, binding: bool) -> ast.PArray:
        items: list[ast.Pattern] = []
        tail: list[ast.Pattern] = []
        rest: list[str] = []

        def item() -> None:
            if self.at("..."):
                dots = self.advance()
                if rest:
                    self.fail("only one `...rest` is allowed in an array pattern", dots.span)
                rest.append(self.expect_name("a name after `...`").text)
            else:
                (tail if rest else items).append(self.pattern(binding))

        self.comma_list(opener, item)
        return ast.PArray(
            tuple(items),
            rest[0] if rest else None,
            self.span_from(opener.span),
            tuple(tail),
        )

    def object_pattern(self, opener: Token, binding: bool) -> ast.PObject:
        rest: list[str] = []

        def field() -> ast.PObjectField | None:
            tok = self.peek()
            if rest:
                self.fail("`...rest` must come last", tok.span)
            if tok.kind == "...":
                self.advance()
                rest.append(self.expect_name("a name after `...`").text)
                return None
            if tok.kind == STRING and _plain(tok):
                key = _string_text(self.advance())
                self.expect(":", f"expected `:` after the key, got {describe(self.peek())}")
                return ast.PObjectField(key, self.pattern(binding), self.span_from(tok.span))
            if tok.kind != NAME:
                self.fail(f"expected a property name, got {describe(tok)}", tok.span)
            self.advance()
            if self.accept(":"):
                value = self.peek()
                if not binding and self.type_word(value) and self.peek_after().kind != "(":
                    type_ = ast.PType(None, self.type_expr(), self.span_from(value.span))
                    return ast.PObjectField(tok.text, type_, self.span_from(tok.span))
                return ast.PObjectField(tok.text, self.pattern(binding), self.span_from(tok.span))
            if self.at_word("as"):
                self.advance()
                name = self.expect_name("a name after `as`")
                bind = ast.PBind(name.text, name.span)
                return ast.PObjectField(tok.text, bind, self.span_from(tok.span))
            if tok.text in RESERVED:
                self.fail(f"expected `:` after the key `{tok.text}`", self.peek().span)
            return ast.PObjectField(tok.text, ast.PBind(tok.text, tok.span), tok.span)

        fields = [f for f in self.comma_list(opener, field) if f is not None]
        return ast.PObject(tuple(fields), rest[0] if rest else None, self.span_from(opener.span))

    # ----------------------------------------------------------------------------------------
    # Types

    def type_expr(self) -> ast.TypeExpr:
        """`A | B | …` (a leading `|` is allowed)."""
        self.enter()
        start = self.peek().span
        self.accept("|")
        options = [self.type_postfix()]
        while self.at("|"):
            self.advance()
            self.skip_newlines()
            options.append(self.type_postfix())
        self.depth -= 1
        if len(options) == 1:
            return options[0]
        last = options[-1]
        if isinstance(last, ast.TBang):  # `A | B!` validates the whole union
            union = ast.TUnion((*options[:-1], last.inner), self.span_from(start))
            return ast.TBang(union, union.span)
        return ast.TUnion(tuple(options), self.span_from(start))

    def type_postfix(self) -> ast.TypeExpr:
        start = self.peek().span
        result = self.type_primary()
        while self.at("[") and self.peek_after().kind == "]":
            self.advance()
            self.advance()
            result = ast.TArray(result, self.span_from(start))
        if self.at("!"):
            self.advance()
            result = ast.TBang(result, self.span_from(start))
        if self.at("&"):  # `A & B`: both (written as the generic `&<A, B>`)
            self.advance()
            self.skip_newlines()
            right = self.type_postfix()
            if isinstance(right, ast.TBang):
                both = ast.TGeneric("&", (result, right.inner), self.span_from(start))
                return ast.TBang(both, both.span)
            return ast.TGeneric("&", (result, right), self.span_from(start))
        return result

    def type_primary(self) -> ast.TypeExpr:
        tok = self.peek()
        if tok.kind == "(" and self._function_type_ahead():
            return self.function_type(self.advance())
        if tok.kind == "(":
            return self.bracketed(self.advance(), self.type_expr)
        if tok.kind == "{":
            return self.object_type(self.advance())
        if tok.kind == NAME and tok.text == "keyof" and self.peek_after().kind in (NAME, "("):
            self.advance()  # `keyof T`: the union of T's keys (written as `keyof<T>`)
            return ast.TGeneric("keyof", (self.type_postfix(),), self.span_from(tok.span))
        if tok.kind == NAME and tok.text not in _CONSTANTS:
            self.advance()
            type_args: tuple[ast.TypeExpr, ...] = ()
            if self.at("<"):
                opener = self.advance()
                type_args = self.type_arguments(opener)
            if self.at("("):  # `Age(18)`: a value-parameterised alias
                args = self.comma_list(self.advance(), self.expression)
                return ast.TCall(tok.text, type_args, tuple(args), self.span_from(tok.span))
            if type_args:
                if tok.text == "Array" and len(type_args) == 1:
                    return ast.TArray(type_args[0], self.span_from(tok.span))
                return ast.TGeneric(tok.text, type_args, self.span_from(tok.span))
            return ast.TName(tok.text, tok.span)
        if tok.kind == NAME and tok.text in ("null", "undefined"):
            self.advance()
            return ast.TName("null", tok.span)
        if tok.kind in (STRING, NUMBER, "-") or tok.kind == NAME:
            return ast.TLiteral(self.literal_value("a type"), self.span_from(tok.span))
        self.fail(f"expected a type, got {describe(tok)}", tok.span)

    def _function_type_ahead(self) -> bool:
        """At a `(` in a type: is it `( … ) ->`, a function type (else a parenthesised type)?"""
        toks, j, depth = self.toks, self.pos, 0
        while toks[j].kind == NEWLINE:
            j += 1
        while True:
            kind = toks[j].kind
            if kind == EOF:
                return False
            if kind in _OPENERS:
                depth += 1
            elif kind in _CLOSERS:
                depth -= 1
                if depth == 0:
                    break
            j += 1
        j += 1
        while toks[j].kind == NEWLINE:
            j += 1
        return toks[j].kind == "->"

    def function_type(self, opener: Token) -> ast.TFunc:
        """`(a: T, U) -> R`; parameter names, `?` and `...` are accepted and dropped."""

        def param() -> ast.TypeExpr:
            self.accept("...")
            if self.peek().kind == NAME and self.peek_after().kind in (":", "?"):
                self.advance()
                self.accept("?")
                self.expect(":")
            return self.type_expr()

        params = tuple(self.comma_list(opener, param))
        self.expect("->")
        result = self.type_expr()
        return ast.TFunc(params, result, self.span_from(opener.span))

    def type_arguments(self, opener: Token) -> tuple[ast.TypeExpr, ...]:
        self._nl.append(True)
        try:
            args = [self.type_expr()]
            while self.accept(","):
                if self.at(">"):
                    break
                args.append(self.type_expr())
            if not self.accept(">"):
                where = f"{opener.span.line}:{opener.span.col}"
                tok = self.peek()
                self.fail(f"expected `>` to close `<` opened at {where}, got {describe(tok)}")
        finally:
            self._nl.pop()
        return tuple(args)

    def object_type(self, opener: Token) -> ast.TObject:
        # Fields are separated by `,`, `;` or new lines, so newlines stay significant here.
        self._nl.append(False)
        fields: list[ast.TField] = []
        try:
            while True:
                while self.toks[self.pos].kind in (NEWLINE, ",", ";"):
                    self.pos += 1
                tok = self.peek()
                if tok.kind == "}":
                    break
                decorators = self.decorators() if tok.kind == "@" else None
                tok = self.peek()
                if tok.kind == NAME or (tok.kind == STRING and _plain(tok)):
                    self.advance()
                    name = tok.text if tok.kind == NAME else _string_text(tok)
                else:
                    self.expect_close(opener)
                    break  # unreachable: expect_close fails here
                optional = self.accept("?") is not None
                self.expect(":", f"expected `:` after the field name, got {describe(self.peek())}")
                field_type = self.type_expr()
                if decorators is not None:
                    field_type = ast.TValidated(field_type, *decorators, self.span_from(tok.span))
                fields.append(ast.TField(name, field_type, optional, self.span_from(tok.span)))
                if self.peek().kind not in (NEWLINE, ",", ";", "}"):
                    self.expect_close(opener)
        finally:
            self._nl.pop()
        self.advance()
        return ast.TObject(tuple(fields), self.span_from(opener.span))


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
_EXPRESSION_STARTS = frozenset({NUMBER, STRING, REGEX, "(", "[", "{", "-", "+", "!", "\\"})


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
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
