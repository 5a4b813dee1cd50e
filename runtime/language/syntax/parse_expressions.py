"""Provides the expression grammar: a Pratt parser over the binding powers in `reader`."""

from __future__ import annotations

from collections.abc import Callable

import runtime.language.syntax.ast as ast
import runtime.language.syntax.concurrency as concurrency
import runtime.language.syntax.validation as validation
from runtime.language.syntax.ast import Span
from runtime.language.syntax.parse_patterns import PatternParser
from runtime.language.syntax.reader import (
    _ASSIGN_OPS,
    _CATCH,
    _CLASSES,
    _CLOSERS,
    _CONSTANTS,
    _EXPRESSION_STARTS,
    _EXPRESSION_WORDS,
    _INFIX,
    _IS,
    _LOGICAL,
    _NO_FOLD_AFTER,
    _OPENERS,
    _PREFIX_OPERAND,
    _TERNARY,
    T,
    _assignable,
    _number_key,
    _plain,
    _string_text,
)
from runtime.language.syntax.tokens import (
    CODE,
    EOF,
    NAME,
    NEWLINE,
    NUMBER,
    REGEX,
    RESERVED,
    STRING,
    Interpolation,
    StringValue,
    Token,
    describe,
)


class ExpressionParser(PatternParser):
    def code_literal(self, tok: Token) -> ast.Expr:
        """`[| … |]` is `__code_literal("…")`, a Code value; its text must parse (holes
        `#name` aside), with errors located in this file."""
        for message, span in self.fragment_problems(tok.text):
            line = tok.span.line + span.line - 1
            col = span.col + (tok.span.col + 1 if span.line == 1 else 0)
            end_col = span.end_col + (tok.span.col + 1 if span.end_line == 1 else 0)
            where = Span(line, col, tok.span.line + span.end_line - 1, end_col)
            self.report(f"in this code literal: {message}", where)
        text = ast.Literal(tok.text, tok.span)
        return ast.Call(ast.Name("__code_literal", tok.span), (ast.Arg(text),), tok.span)

    def fragment_problems(self, text: str) -> list[tuple[str, Span]]:
        """What is wrong with a code literal's text (the statement parser checks it)."""
        return []

    """Expressions, by binding power (Pratt), with calls, blocks, literals and the concurrency forms."""

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
                if tok.text in ("in", "instanceof"):  # `"key" in obj`, `x instanceof Map`
                    kind = tok.text
                elif tok.text != "catch":
                    break
                else:
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
            args = tuple(self.comma_list(self.advance(), self.argument))
            return ast.OptionalCall(left, args, self.span_from(start))
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
        if tok.kind == NAME and self.peek_after().kind in (":", "="):
            # `name: value`, or Python's spelling `name = value`
            self.advance()
            colon = self.advance()
            self.skip_newlines()
            named = self.arrow_block() if self.arrow_ahead() else self.expr_after(colon)
            return ast.Arg(named, tok.text, False, self.span_from(tok.span))
        if self.arrow_ahead():
            block = self.arrow_block()
            return ast.Arg(block, None, False, block.span)
        if not self.starts_expression(tok):
            self.fail(f"expected an argument, got {describe(tok)}", tok.span)
        value = self.expression()
        return ast.Arg(value, None, False, value.span)

    def arrow_ahead(self) -> bool:
        """At an argument written as a JavaScript arrow function: `x =>`, `(a, b) =>`,
        `() =>`, each optionally after `async`."""
        toks, j = self.toks, self.pos
        if toks[j].kind == NAME and toks[j].text == "async" and toks[j + 1].kind in (NAME, "("):
            j += 1
        if toks[j].kind == NAME:
            return toks[j + 1].kind == "=>"
        if toks[j].kind != "(":
            return False
        depth = 0
        while toks[j].kind != EOF:
            if toks[j].kind in _OPENERS:
                depth += 1
            elif toks[j].kind in _CLOSERS:
                depth -= 1
                if depth == 0:
                    return toks[j + 1].kind == "=>"
            j += 1
        return False

    def arrow_block(self) -> ast.BlockFn:
        """`(a, b) => expr` or `(a, b) => { … }` as an argument: a block, as the reference reads
        JavaScript's arrow functions there (`async` is dropped: everything is awaited)."""
        start = self.peek().span
        if self.at_word("async"):
            self.advance()
        if self.at("("):
            params = tuple(self.comma_list(self.advance(), self.param))
        else:
            name = self.expect_name("a parameter name")
            params = (ast.Param(name.text, None, None, False, name.span),)
        arrow = self.expect("=>")
        self.skip_newlines()
        saved = self.headers
        self.headers = 0
        try:
            if self.at("{"):
                return ast.BlockFn(params, self.handler_body(), False, self.span_from(start))
            value = self.expr_after(arrow)
        finally:
            self.headers = saved
        body = ast.Block((ast.Return(value, value.span),), value.span)
        return ast.BlockFn(params, body, True, self.span_from(start))

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
        if kind == CODE:
            return self.code_literal(self.advance())
        if kind == "$(":
            self.advance()
            inner = self.bracketed(tok, self.expression)
            return ast.Splice(inner, self.span_from(tok.span))
        if kind == "(":
            self.advance()
            return self.bracketed(tok, self.paren_expression)
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

    def paren_expression(self) -> ast.Expr:
        """An expression in parentheses, which may be an assignment: `(n += 1)`."""
        start = self.peek()
        expr = self.expression()
        op = self.peek()
        if op.kind not in _ASSIGN_OPS:
            return expr
        if not _assignable(expr):
            self.fail(
                f"the left side of `{op.kind}` must be a variable, a member or an index", expr.span
            )
        self.advance()
        value = self.expr_after(op)
        span = self.span_from(start.span)
        return ast.AssignExpr(ast.Assign(expr, op.kind, value, span), span)

    def inline_block(self, backslash: Token) -> ast.BlockFn:
        """`\\x -> expr`, `\\(a, b) -> expr`, `\\ -> expr`: a block returning one expression."""
        params: tuple[ast.Param, ...] = ()
        tok = self.peek()
        if tok.kind == "(":
            params = tuple(self.comma_list(self.advance(), self.param))
        elif tok.kind == NAME:
            name = self.expect_name("a parameter name")
            params = (ast.Param(name.text, None, None, False, name.span),)
        arrow = self.expect_arrow(
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
        if text == "void" and self.operand_follows(tok):
            # `void expr`: evaluates `expr` for its effects and gives undefined (null here)
            self.advance()
            operand = self.expr_after(tok, _PREFIX_OPERAND)
            return ast.Unary("void", operand, self.span_from(tok.span))
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
        if text in ("await", "sync") and self.peek_after().kind in (NAME, "("):
            nxt = self.peek_after()
            if nxt.span.line == tok.span.line and nxt.span.col > tok.span.end_col:
                # `await f(x)` / `sync f(x)`: every call is awaited, so the word is dropped,
                # as the reference does
                self.advance()
                return self.expr_after(tok, _PREFIX_OPERAND)
        if text in concurrency.COMPREHENSION_PREFIXES and self.peek_after().kind == "[":
            nxt = self.peek_after()
            if (nxt.span.line, nxt.span.col) != (tok.span.end_line, tok.span.end_col):
                return self.fork_prefix(tok)  # `fork [e for x in xs]`, not `fork[i]`
        self.advance()
        return ast.Name(text, tok.span)

    def operand_follows(self, tok: Token) -> bool:
        """An expression starts after the word `tok`, on its line (`void f()`, not `void` used
        as a name)."""
        nxt = self.peek_after()
        return nxt.span.line == tok.span.line and self.starts_expression(nxt)

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
                first = items[0]
                if (
                    len(items) == 1
                    and not isinstance(first, ast.Spread)
                    and self.peek().kind in _ASSIGN_OPS
                    and _assignable(first)
                ):
                    # `[total += x for x in xs]`: an assignment as a comprehension's element
                    op = self.advance()
                    value = self.expr_after(op)
                    span = self.span_from(first.span)
                    items[0] = ast.AssignExpr(ast.Assign(first, op.kind, value, span), span)
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
