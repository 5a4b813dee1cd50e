"""Provides the `match` part of the function compiler."""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtime.language.bytecode import (
    BINARY,
    CALL,
    CONST,
    JUMP,
    JUMP_IF_FALSE,
    JUMP_IF_FALSE_KEEP,
    LOAD_LOCAL,
    MATCH,
    POP,
    RETURN,
    STORE_LOCAL,
    FuncRef,
)
from runtime.language.scopes import pattern_names
from runtime.language.syntax import ast as A
from runtime.language.syntax.validation import conforms_expr, has_validators, validated_binders

if TYPE_CHECKING:
    pass


from runtime.language.compile_emit import _Arm
from runtime.language.compile_expressions import ExpressionCompiler


class MatchCompiler(ExpressionCompiler):
    """Compiles `match`: arms, patterns, validated patterns and a `return` inside an arm."""

    def match(self, m: A.Match, path: str, as_stmt: bool) -> None:
        """Arms are tried in order: pattern (MATCH on the subject, kept in a hidden local so
        it is evaluated once), then the guard. A `return` in an arm's body (at any depth)
        yields the match's value; a statement match drops it and carries on after it.

        The head form `match (x is P) { cond => … }` matches `x` against `P` once, binding its
        names for every arm; when `x` does not match, the enclosing function returns a
        failure."""
        subject = self.new_hidden("m")
        self.locals.add(subject)
        if m.head and type(m.subject) is A.Is:
            head = m.subject
            self.expr(head.value)
            self.emit(STORE_LOCAL, subject)
            self.emit(LOAD_LOCAL, subject)
            mismatch = self.match_pattern(head.pattern, head.span)
            matched = self.emit(JUMP, None)
            self.patch(mismatch)
            self.emit(CONST, FuncRef("failure"))
            self.emit(CONST, "the value did not match the pattern of `match (… is …)`")
            self.emit(CALL, 1)
            self.emit(RETURN)
            self.patch(matched)
        else:
            self.expr(m.subject)
            self.emit(STORE_LOCAL, subject)
        arm_ctx = _Arm([], len(self.blocks), as_stmt)
        for i, arm in enumerate(m.arms):
            nexts: list[int] = []
            if type(arm.pattern) is A.PValue:
                self.emit(LOAD_LOCAL, subject)
                self.expr(arm.pattern.expr)
                self.emit(BINARY, "==")
                nexts.append(self.emit(JUMP_IF_FALSE, None))
            elif type(arm.pattern) is not A.PWildcard:
                self.emit(LOAD_LOCAL, subject)
                nexts.append(self.match_pattern(arm.pattern, arm.span))
            if arm.guard is not None:
                self.expr(arm.guard)
                nexts.append(self.emit(JUMP_IF_FALSE, None))
            self.arms.append(arm_ctx)
            if type(arm.body) is A.Block:
                self.block(arm.body, f"{path}.arm{i}" if path else f"arm{i}")
                if not as_stmt:
                    self.emit(CONST, None)
            else:
                self.expr(arm.body)  # type: ignore[arg-type]
                if as_stmt:
                    self.emit(POP)
            self.arms.pop()
            arm_ctx.ends.append(self.emit(JUMP, None))
            for j in nexts:
                self.patch(j)
        if not as_stmt:
            self.emit(CONST, None)
        for j in arm_ctx.ends:
            self.patch(j)

    def match_pattern(self, pattern: A.Pattern, span: A.Span) -> int:
        """MATCH the value on top of the stack (consumed) and bind the pattern's names.
        Returns the JUMP_IF_FALSE taken on a mismatch, for the caller to patch."""
        if type(pattern) is A.PType and has_validators(pattern.type, self.unit.types):
            return self.validated_match(pattern, span)
        if type(pattern) in (A.PObject, A.PArray, A.PType):
            checked, binders = validated_binders(pattern, self.unit.types, self.hidden_local)
            if binders:
                return self.match_then_validate(checked, binders, span)
        names: set[str] = set()
        pattern_names(pattern, names)
        order = tuple(sorted(names))
        self.emit(MATCH, (pattern, order))
        jf = self.emit(JUMP_IF_FALSE, None)
        for name in reversed(order):
            self.store_name(name, span)
        return jf

    def validated_match(self, pattern: A.PType, span: A.Span) -> int:
        """`x is T` / `p: T =>` where T has `@validate` validators: the validators are Agency
        calls, so they run first as an ordinary call (`__schema_check`, which also checks the
        shape), and only then does MATCH bind the pattern's names."""
        value = self.new_hidden("v")
        self.locals.add(value)
        self.emit(STORE_LOCAL, value)
        self.expr(conforms_expr(A.Name(value, span), pattern.type))
        failed = self.emit(JUMP_IF_FALSE_KEEP, None)
        self.emit(POP)
        self.emit(LOAD_LOCAL, value)
        names: set[str] = set()
        pattern_names(pattern, names)
        order = tuple(sorted(names))
        self.emit(MATCH, (pattern, order))
        self.patch(failed)
        jf = self.emit(JUMP_IF_FALSE, None)
        for name in reversed(order):
            self.store_name(name, span)
        return jf

    def hidden_local(self) -> str:
        name = self.new_hidden("t")
        self.locals.add(name)
        return name

    def match_then_validate(
        self, pattern: A.Pattern, binders: list[tuple[str, A.TypeExpr]], span: A.Span
    ) -> int:
        """MATCH the shape, then run the validators of the nested type patterns on the values
        their binders got; a rejected value jumps back to the mismatch jump with false."""
        names: set[str] = set()
        pattern_names(pattern, names)
        order = tuple(sorted(names))
        self.emit(MATCH, (pattern, order))
        jf = self.emit(JUMP_IF_FALSE, None)
        for name in reversed(order):
            self.store_name(name, span)
        rejects: list[int] = []
        for name, t in binders:
            self.expr(conforms_expr(A.Name(name, span), t))
            rejects.append(self.emit(JUMP_IF_FALSE, None))
        done = self.emit(JUMP, None)
        for j in rejects:
            self.patch(j)
        self.emit(CONST, False)
        self.emit(JUMP, jf)
        self.patch(done)
        return jf

    def arm_return(self, s: A.Return) -> None:
        """`return e` inside a match arm: the arm's (and the match's) value is `e`."""
        arm = self.arms[-1]
        if s.value is None:
            self.emit(CONST, None)
        else:
            self.expr(s.value)
        self.close_blocks(arm.block_depth)
        if arm.as_stmt:
            self.emit(POP)
        arm.ends.append(self.emit(JUMP, None))
