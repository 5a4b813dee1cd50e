"""Provides the declaration grammar: functions and nodes, type aliases, decorators, imports and effect clauses."""

from __future__ import annotations

import inspect

import runtime.language.syntax.ast as ast
import runtime.language.syntax.validation as validation
from runtime.language.syntax.nodes import replace
from runtime.language.syntax.parse_expressions import ExpressionParser
from runtime.language.syntax.reader import (
    _plain,
    _string_text,
)
from runtime.language.syntax.tokens import (
    NAME,
    RESERVED,
    STRING,
    Token,
    describe,
)


class DeclarationParser(ExpressionParser):
    """Top-level declarations: `def`/`node`, parameters, `type` aliases, decorators, imports, effects."""

    def function(self, start: Token, modifiers: tuple[str, ...]) -> ast.FuncDecl:
        kind = self.advance().text  # def | node (| function, read as def)
        if kind == "function":
            kind = "def"
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
        if self.accept(":") or self.accept("->"):  # `-> T` is the reference's other spelling
            return_type = self.type_expr()
        raises = self.raises_clause() if self.at_word("raises") else None
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
                kind,
                name,
                params,
                return_type,
                body,
                doc,
                modifiers,
                self.span_from(start.span),
                raises,
            )
        )

    def param(self) -> ast.Param:
        start = self.peek().span
        rest = self.accept("...") is not None
        name = self.expect_name("a parameter name").text
        optional = self.accept("?") is not None  # `prefix?: string`: may be left out (null)
        type_ = self.type_expr() if self.accept(":") else None
        default = None
        if self.at("="):
            eq = self.advance()
            default = self.expr_after(eq)
            if rest:
                self.report("a `...rest` parameter cannot have a default", eq.span)
        return ast.Param(name, type_, default, rest, self.span_from(start), optional)

    def type_alias(self) -> ast.TypeAlias:
        keyword = self.advance()  # type (or interface)
        start = keyword.span
        name = self.expect_name("a type name").text
        type_params: tuple[str, ...] = ()
        defaults: tuple[ast.TypeExpr | None, ...] = ()
        params: tuple[ast.Param, ...] = ()
        if self.at("<"):
            type_params, defaults = self.alias_type_params(self.advance())
        if self.at("("):
            params = tuple(self.comma_list(self.advance(), self.param))
        if keyword.text != "interface" or not self.at("{"):  # `interface Name { … }`: no `=`
            self.expect("=", f"expected `=` after `type {name}`, got {describe(self.peek())}")
            self.skip_newlines()
        body = self.type_expr()
        return ast.TypeAlias(name, body, self.span_from(start), type_params, params, defaults)

    def alias_type_params(
        self, opener: Token
    ) -> tuple[tuple[str, ...], tuple[ast.TypeExpr | None, ...]]:
        """`<T, U = string>` after an alias name: the names and their defaults (the defaults
        are empty when no parameter has one). As in TypeScript, a parameter with a default
        cannot come before one without."""
        names: list[str] = []
        defaults: list[ast.TypeExpr | None] = []
        while True:
            tok = self.expect_name("a type parameter")
            names.append(tok.text)
            defaults.append(self.type_expr() if self.accept("=") else None)
            if defaults[-1] is None and any(d is not None for d in defaults):
                self.report(
                    f"the type parameter `{tok.text}` has no default but comes after one that "
                    "has: parameters with defaults go last",
                    tok.span,
                )
            if not self.accept(","):
                break
        if not self.accept(">"):
            where = f"{opener.span.line}:{opener.span.col}"
            self.fail(f"expected `>` to close `<` opened at {where}, got {describe(self.peek())}")
        if all(d is None for d in defaults):
            return tuple(names), ()
        return tuple(names), tuple(defaults)

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
        return replace(alias, type=inner)

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
                if self.accept(","):  # `import main, { a } from` / `import main, * as ns from`
                    if self.at("{"):
                        opener = self.advance()
                        self.import_aliases = []
                        names += [t for t in self.comma_list(opener, self.import_name)]
                        aliases = tuple(self.import_aliases)
                    else:
                        self.expect(
                            "*", f"expected `{{` or `*` after `,`, got {describe(self.peek())}"
                        )
                        self.expect_word(
                            "as", f"expected `as` after `import *`, got {describe(self.peek())}"
                        )
                        namespace = self.expect_name("a module name").text
            self.expect_word("from", f"expected `from`, got {describe(self.peek())}")
        tok = self.peek()
        if tok.kind != STRING or not _plain(tok):
            self.fail(f"expected the module path as a string, got {describe(tok)}", tok.span)
        self.advance()
        module = _string_text(tok)
        return ast.Import(tuple(names), module, self.span_from(start), namespace, aliases)

    def reexport(self) -> ast.Import:
        """`export { a, b as c } from "mod"` or `export * from "mod"`: an import whose names
        are also this module's exports."""
        start = self.advance().span  # export
        names: list[str] = []
        aliases: tuple[tuple[str, str], ...] = ()
        if self.at("{"):
            opener = self.advance()
            self.import_aliases = []
            names = [t for t in self.comma_list(opener, self.import_name)]
            aliases = tuple(self.import_aliases)
        else:
            self.advance()  # *
        self.expect_word("from", f"expected `from`, got {describe(self.peek())}")
        tok = self.peek()
        if tok.kind != STRING or not _plain(tok):
            self.fail(f"expected the module path as a string, got {describe(tok)}", tok.span)
        self.advance()
        span = self.span_from(start)
        return ast.Import(tuple(names), _string_text(tok), span, None, aliases, reexport=True)

    def import_name(self) -> str:
        if self.peek().text in ("destructive", "idempotent") and self.peek_after().kind == NAME:
            # `import { destructive f, idempotent g } from …` (and in `export { … } from`): the
            # retry-safety markers of the reference; they mark the name, the value is the same
            self.advance()
        tok = self.peek()
        if tok.kind != NAME:
            self.fail(f"expected a name to import, got {describe(tok)}", tok.span)
        self.advance()
        if self.at_word("as"):
            self.advance()
            alias = self.expect_name("a name")
            self.import_aliases.append((tok.text, alias.text))
        return tok.text

    def effect_declaration(self, start: Token) -> ast.Block:
        """`effect ns::name { field: T, … }`: the payload type of an effect. Checked at compile
        time by the reference; here it is parsed and has no run-time meaning (an empty block)."""
        self.advance()  # effect
        self.effect_name()
        if self.at("{"):
            self.type_expr()
        return ast.Block((), self.span_from(start.span))

    def effect_set(self, start: Token) -> ast.EffectSet:
        """`effectSet Name = <a::b, OtherSet, …>`: a named set for `raises` clauses."""
        self.advance()  # effectSet
        name = self.expect_name("an effect set name").text
        self.expect("=", f"expected `=` after the effect set name, got {describe(self.peek())}")
        members = self.effect_list()
        return ast.EffectSet(name, members, self.span_from(start.span))

    def raises_clause(self) -> tuple[str, ...]:
        """`raises <std::read, Set>`, `raises <*>`, `raises <>` or `raises SetName` after a
        function's parameters: which effects it may raise (the type checker holds it to it)."""
        self.advance()  # raises
        if self.at("<"):
            return self.effect_list()
        return (self.expect_name("an effect set after `raises`").text,)

    def effect_list(self) -> tuple[str, ...]:
        opener = self.expect(
            "<", f"expected `<` to open an effect list, got {describe(self.peek())}"
        )
        members: list[str] = []
        while not self.at(">"):
            if self.at("*"):
                self.advance()
                members.append("*")
            else:
                members.append(self.effect_name())
            if not self.accept(","):
                break
        if not self.accept(">"):
            self.fail(
                f"expected `>` to close the effect list opened at {opener.span.line}:"
                f"{opener.span.col}, got {describe(self.peek())}",
                self.peek().span,
            )
        return tuple(members)

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
            if word == "function" and toks[j + 1].kind == NAME and toks[j + 2].kind == "(":
                return words  # `function f(…)`: TypeScript's spelling of `def`
            if word in RESERVED:
                return None
            words.append(word)
            j += 1
        return None
