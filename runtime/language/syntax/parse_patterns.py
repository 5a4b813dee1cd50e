"""Provides the pattern grammar: destructuring, `x is P`, and `match` with its arms."""

from __future__ import annotations

import runtime.language.syntax.ast as ast
from runtime.language.syntax.parse_types import TypeParser
from runtime.language.syntax.reader import (
    _ASSIGN_OPS,
    _PATTERN_TYPES,
    _assignable,
    _plain,
    _string_text,
)
from runtime.language.syntax.tokens import (
    EOF,
    NAME,
    NEWLINE,
    NUMBER,
    RESERVED,
    STRING,
    Token,
    describe,
)


class PatternParser(TypeParser):
    """Patterns (destructuring, `is`, match arms) and `match` itself."""

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
        arrow = self.expect_arrow(
            "=>", f"expected `=>` after the pattern, got {describe(self.peek())}"
        )
        body = self.arm_body(arrow)
        return ast.MatchArm(pattern, body, self.span_from(start), guard)

    def head_arm(self) -> ast.MatchArm:
        """An arm of `match (x is P) { … }`: a boolean case expression, or `_`."""
        start = self.peek().span
        tok = self.peek()
        guard = None
        if tok.is_word("_") and self.peek_after().kind in ("=>", "->"):
            self.advance()
        else:
            guard = self.expression()
        arrow = self.expect_arrow(
            "=>", f"expected `=>` after the case, got {describe(self.peek())}"
        )
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
