"""Provides the type-expression grammar (annotations, aliases, function types)."""

from __future__ import annotations

import runtime.language.syntax.ast as ast
from runtime.language.syntax.reader import (
    _CLOSERS,
    _CONSTANTS,
    _OPENERS,
    TokenReader,
    _plain,
    _string_text,
)
from runtime.language.syntax.tokens import (
    EOF,
    NAME,
    NEWLINE,
    NUMBER,
    STRING,
    Token,
    describe,
)

_BOXED = {"Number": "number", "String": "string", "Boolean": "boolean"}


class TypeParser(TokenReader):
    """Type expressions: `string[]`, `A | B`, `(a: T) -> R`, `{name: T}`, `Promise<T>`."""

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
        while self.at("[") and self.peek_after().kind in ("]", STRING):
            self.advance()
            if self.at(STRING):  # `T["key"]`: the type of a property (written as `[]<T, K>`)
                key = self.type_expr()
                self.expect("]")
                result = ast.TGeneric("[]", (result, key), self.span_from(start))
                continue
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
            # TypeScript's boxed spellings are the primitives, as the reference normalises them
            return ast.TName(_BOXED.get(tok.text, tok.text), tok.span)
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
        return toks[j].kind in ("->", "=>")

    def function_type(self, opener: Token) -> ast.TFunc:
        """`(a: T, U) -> R` (or `=> R`); parameter names, `?` and `...` are accepted and
        dropped."""

        def param() -> ast.TypeExpr:
            self.accept("...")
            if self.peek().kind == NAME and self.peek_after().kind in (":", "?"):
                self.advance()
                self.accept("?")
                self.expect(":")
            return self.type_expr()

        params = tuple(self.comma_list(opener, param))
        self.expect_arrow(
            "->", f"expected `->` after a function type's parameters, got {describe(self.peek())}"
        )
        result = self.type_expr()
        if self.at_word("raises"):
            # `(string) -> string raises <std::read>`: checked where the function is declared,
            # so the type keeps only its shape
            self.raises_clause()
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
