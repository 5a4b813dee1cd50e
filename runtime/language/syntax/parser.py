"""Provides the parser: tokens to the Agency AST.

Recursive descent for declarations and statements, Pratt (binding powers) for expressions.
The grammar is a chain of classes, one module each, every one building on the one before:
`reader.TokenReader` (the cursor, `fail()`, recovery) → `parse_types` → `parse_patterns`
(with `match`) → `parse_expressions` → `parse_declarations` → `Parser` here (statements).

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

import sys
from collections.abc import Callable

import runtime.language.syntax.ast as ast
import runtime.language.syntax.templates as templates
import runtime.language.syntax.validation as validation
from runtime.errors import AgencySyntaxError, Diagnostic
from runtime.language.syntax.ast import Span
from runtime.language.syntax.lexer import Lexer
from runtime.language.syntax.parse_declarations import DeclarationParser
from runtime.language.syntax.reader import (
    _ASSIGN_OPS,
    _CLOSERS,
    _RECURSION_LIMIT,
    _STATEMENT_ENDS,
    BLOCK_NOT_A_VALUE,
    T,
    _Abandon,
    _assignable,
)
from runtime.language.syntax.tokens import (
    EOF,
    NAME,
    NEWLINE,
    RESERVED,
    Token,
    describe,
)


def parse(source: str, path: str = "<input>") -> ast.Program:
    """Parse a whole Agency file; `Program.path` is `path`."""
    return _run(source, path, lambda parser: parser.program())


def parse_fragment(source: str, path: str = "<code>") -> ast.Program:
    """Parse a code fragment (a template, statements to graft into a body): as `parse`, but a
    `return` at the top is allowed, since the fragment may become a function's body."""

    def fragment(parser: Parser) -> ast.Program:
        parser.in_function = True
        return parser.program()

    return _run(source, path, fragment)


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


class Parser(DeclarationParser):
    """One parse of one token list. Use `parse`/`parse_expression` from `runtime.language.syntax`."""

    # ----------------------------------------------------------------------------------------
    # Results and errors

    # ----------------------------------------------------------------------------------------
    # Token access

    # ----------------------------------------------------------------------------------------
    # Recovery

    # ----------------------------------------------------------------------------------------
    # Program and declarations

    def fragment_problems(self, text: str) -> list[tuple[str, Span]]:
        """A code literal's text parsed as a file of its own, holes standing in as names."""
        filled = templates.with_placeholders(text, templates.scan(text))
        try:
            parse(filled, self.path)
        except AgencySyntaxError as exc:
            return [(d.message, d.span) for d in exc.diagnostics]
        return []

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
            if isinstance(stmt, (ast.FuncDecl, ast.TypeAlias, ast.EffectSet, ast.Import)):
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
                hint = BLOCK_NOT_A_VALUE if tok.kind == "=>" else ""
                self.fail(f"expected a new line or `;` before {describe(tok)}{hint}", tok.span)
        self.depth -= 1
        return stmt

    def inner_statement(self) -> ast.Stmt | None:
        """A statement inside a block; declarations there are reported and dropped."""
        stmt = self.statement(top=False)
        if isinstance(stmt, (ast.FuncDecl, ast.TypeAlias, ast.EffectSet, ast.Import)):
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
        if word == "static" and self.static_statement_ahead():
            self.module_only(start, top, "`static` statements are")
            return self.static_statement(start)
        if word == "static" and nxt.kind == NAME:
            self.advance()
            if self.at_word("let") or self.at_word("const"):
                self.advance()
            self.module_only(start, top, "`static` variables are")
            return self.var_decl(start, "static")
        if word == "interface" and nxt.kind == NAME and self.peek_after(2).kind in ("{", "<"):
            # `interface Name { … }`: TypeScript's spelling of `type Name = { … }`
            self.module_only(start, top, "`interface` declarations are")
            return self.type_alias()
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
        if word == "export" and nxt.kind in ("{", "*"):
            self.module_only(start, top, "`export … from` is")
            return self.reexport()
        if word == "export" and nxt.kind == NAME:
            self.module_only(start, top, "`export` is")
            self.advance()
            return self.statement_body(self.peek(), top)
        if word == "optimize" and nxt.kind == NAME and nxt.text in ("const", "let", "static"):
            # `optimize const prompt = …` marks a value for the reference's prompt optimizer
            # (`agency eval optimize`); running, it is the declaration itself
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

    def static_statement_ahead(self) -> bool:
        """`static f()`: `static` before an expression rather than a declaration."""
        nxt, after = self.peek_after(), self.peek_after(2)
        if nxt.kind == NAME and nxt.text in ("let", "const"):
            return False
        if nxt.kind == NAME and after.kind in ("=", ":"):
            return False
        return nxt.kind == NAME and after.kind in ("(", ".", "?.")

    def static_statement(self, start: Token) -> ast.VarDecl:
        """`static f()` runs once, when the module's statics are set up: a static declaration
        of a name no program can write (so nothing can read it)."""
        self.advance()  # static
        expr = self.expression()
        span = self.span_from(start.span)
        target = ast.PBind(f"static@{start.span.line}:{start.span.col}", start.span)
        return ast.VarDecl("static", target, None, expr, span)

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
            after = self.peek_past_newlines()
            if after.is_word("elif"):  # Python's spelling of `else if`
                self.skip_newlines()
                continue
            if not after.is_word("else"):
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
            var, second, found = self.loop_binders(of=True)
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

    def loop_binders(self, of: bool = False) -> tuple[str, str | None, ast.Pattern | None]:
        """`x`, `x, i`, `[k, v]`, `{name, ...rest}, i` up to and including `in` (or, for a
        loop's header, `of`).

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
        if of and self.at_word("of"):  # `for (const x of xs)`: TypeScript's spelling, as `in`
            self.advance()
            return var, second, pattern
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

    # ----------------------------------------------------------------------------------------
    # Patterns

    # ----------------------------------------------------------------------------------------
    # Types
