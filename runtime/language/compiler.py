"""Provides the compiler from the AST to flat per-function code for the stack machine.

Each `node`, `def`, handler body and the module's top-level statements become a `Code`: two
parallel lists (`ops`, small-int opcodes; `args`, their operands) plus the step locations. A
`STEP` instruction starts every statement; at a step the frame's operand stack is at the depth
it had when the statement began, which is what lets `checkpoint()` re-enter a statement.

Loop and block state (iterators, indices, match subjects) lives in hidden locals named `__…`,
never on the operand stack across statements, so it is captured by every snapshot.

`FunctionCompiler` (statements, here) builds on `compile_match.MatchCompiler`, which builds on
`compile_expressions.ExpressionCompiler`, which builds on `compile_emit.CodeEmitter` (emitting,
patching, steps, names).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtime.language.bytecode import (
    BINARY,
    CONST,
    DESTRUCTURE,
    DUP,
    DUP2,
    GET_INDEX,
    GET_MEMBER,
    HANDLER_POP,
    HANDLER_PUSH,
    ITER_INIT,
    ITER_NEXT,
    JUMP,
    JUMP_IF_FALSE,
    JUMP_IF_FALSE_KEEP,
    JUMP_IF_NOT_NULL_KEEP,
    JUMP_IF_TRUE_KEEP,
    LOAD_LOCAL,
    POP,
    RANGE_INIT,
    RANGE_NEXT,
    RETURN,
    SET_INDEX,
    SET_MEMBER,
    THREAD_POP,
    THREAD_PUSH,
)
from runtime.language.scopes import pattern_names
from runtime.language.syntax import ast as A

if TYPE_CHECKING:
    pass


from runtime.language.compile_emit import _Loop
from runtime.language.compile_match import MatchCompiler


class FunctionCompiler(MatchCompiler):
    """Compiles one function body to a Code."""

    # -- emission -------------------------------------------------------------------------

    # -- names ----------------------------------------------------------------------------

    # -- statements -----------------------------------------------------------------------

    def block(self, block: A.Block, path: str) -> None:
        for i, stmt in enumerate(block.body):
            self.stmt(stmt, f"{path}.{i}" if path else str(i))

    def stmt(self, s: A.Stmt, path: str) -> None:
        t = type(s)
        if isinstance(s, A.Block):
            self.block(s, path)
            return
        if isinstance(s, A.If):
            self.if_stmt(s, path)
            return
        if isinstance(s, A.While):
            self.while_stmt(s, path)
            return
        if isinstance(s, A.ForIn):
            self.for_stmt(s, path)
            return
        if isinstance(s, A.Finalize):
            self.finalize(s)
            return
        header = s.span
        if isinstance(s, (A.ThreadBlock, A.HandleBlock)):
            header = A.Span(s.span.line, s.span.col, s.span.line, s.span.col + 6)
        self.step(header, path)
        if isinstance(s, A.ExprStmt):
            self.expr(s.expr)
            self.emit(POP)
        elif isinstance(s, A.VarDecl):
            self.var_decl(s)
        elif isinstance(s, A.Assign):
            self.assign(s)
        elif isinstance(s, A.Return) and self.arms:
            self.arm_return(s)
        elif isinstance(s, A.Return):
            if self.is_module:
                self.error("`return` outside a function", s.span)
            if is_interrupt_call(s.value):
                # `return interrupt(…)` gates what follows: approved, execution goes on with
                # the next statement (the value is dropped); rejected, the function returns
                # the failure (the machine unwinds it).
                self.expr(s.value)  # type: ignore[arg-type]
                self.emit(POP)
                return
            if s.value is None:
                self.emit(CONST, None)
            elif type(s.value) is A.Call and self.code.return_type is not None:
                # The def's return type is what a left-out `Schema` argument describes.
                self.call(s.value, self.code.return_type, schema_only=True)
            else:
                self.expr(s.value)
            self.emit(RETURN)
        elif isinstance(s, A.Break) or isinstance(s, A.Continue):
            if not self.loops:
                self.error(
                    f"`{'break' if isinstance(s, A.Break) else 'continue'}` outside a loop", s.span
                )
                return
            loop = self.loops[-1]
            self.close_blocks(loop.block_depth)
            if isinstance(s, A.Break):
                loop.breaks.append(self.emit(JUMP, None))
            else:
                self.emit(JUMP, loop.continue_target)
        elif isinstance(s, A.Goto):
            self.expr(s.call)
            self.emit(RETURN)
        elif isinstance(s, A.ThreadBlock):
            self.emit(THREAD_PUSH, s.kind)
            self.blocks.append("thread")
            body = s.body.body
            setup = _thread_setup_options(body[0]) if body else None
            lead = 0 if setup is None else 1  # the options go first: the start sees the label
            for i in range(lead):
                self.stmt(body[i], f"{path}.body.{i}")
            self.thread_event("start", s)
            for i in range(lead, len(body)):
                self.stmt(body[i], f"{path}.body.{i}")
            summarize = (setup or {}).get("summarize")  # (told only when written as a literal)
            eager = summarize.value if isinstance(summarize, A.Literal) else False
            self.thread_event("end", s, eager is True)
            self.blocks.pop()
            self.emit(THREAD_POP)
        elif isinstance(s, A.HandleBlock):
            self.emit(HANDLER_PUSH, self.unit.compile_handler(s.handler, self))
            self.blocks.append("handler")
            self.block(s.body, path + ".body")
            self.blocks.pop()
            self.emit(HANDLER_POP)
        elif isinstance(s, A.WithAction):
            action = s.action
            fixed = action in ("approve", "reject", "propagate")
            self.emit(HANDLER_PUSH, ("action" if fixed else "func", action))
            self.blocks.append("handler")
            inner = s.stmt
            self.stmt_body(inner, path)
            self.blocks.pop()
            self.emit(HANDLER_POP)
        elif isinstance(s, A.Match):
            self.match(s, path, as_stmt=True)
        else:
            self.error(f"unsupported statement {t.__name__}", s.span)

    def thread_event(self, which: str, s: A.ThreadBlock, eager: bool = False) -> None:
        """A call of `__thread_event` (no step of its own, literal arguments only): the
        onThreadStart / onThreadEnd callbacks run there when any listens. (A block left by
        `return` or `break` skips the end.)"""
        span = s.span
        args = tuple(A.Arg(A.Literal(v, span), span=span) for v in (which, s.kind, eager))
        self.expr(A.Call(A.Name("__thread_event", span), args, span))
        self.emit(POP)

    def finalize(self, s: A.Finalize) -> None:
        """`finalize { … }` runs only when a guard aborts this function: it is compiled as a
        block over this frame (no code at its place), which the guard calls by name."""
        if self.is_module:
            self.error("`finalize` outside a function", s.span)
            return
        if self.code.finalize is not None:
            self.error("a function or block can have only one `finalize`", s.span)
            return
        params = (A.Param(s.binder, None, None),) if s.binder else ()
        block = A.BlockFn(params, s.body, span=s.span)
        self.code.finalize = self.unit.compile_block(block, self)

    def stmt_body(self, s: A.Stmt, path: str) -> None:
        """A statement without its own STEP (the `with` suffix form shares its step)."""
        saved = self.steps
        self.steps = False
        try:
            self.stmt(s, path)
        finally:
            self.steps = saved

    def header_span(self, s: A.If | A.While | A.ForIn, end: A.Expr) -> A.Span:
        return A.Span(s.span.line, s.span.col, end.span.end_line, end.span.end_col + 1)

    def if_stmt(self, s: A.If, path: str) -> None:
        self.step(self.header_span(s, s.cond), path)
        self.condition(s.cond, statement=True)
        jf = self.emit(JUMP_IF_FALSE, None)
        self.block(s.then, path + ".then")
        if s.orelse is None:
            self.patch(jf)
            return
        end = self.emit(JUMP, None)
        self.patch(jf)
        if type(s.orelse) is A.If:
            self.if_stmt(s.orelse, path + ".else")
        else:
            self.block(s.orelse, path + ".else")  # type: ignore[arg-type]
        self.patch(end)

    def loop_body(self, body: A.Block, path: str, continue_target: int) -> _Loop:
        loop = _Loop([], continue_target, len(self.blocks))
        self.loops.append(loop)
        self.block(body, path)
        self.loops.pop()
        return loop

    def while_stmt(self, s: A.While, path: str) -> None:
        top = self.here()
        self.step(self.header_span(s, s.cond), path)
        self.condition(s.cond, statement=True)
        jf = self.emit(JUMP_IF_FALSE, None)
        loop = self.loop_body(s.body, path + ".body", top)
        self.emit(JUMP, top)
        self.patch(jf)
        for b in loop.breaks:
            self.patch(b)

    def for_stmt(self, s: A.ForIn, path: str) -> None:
        it = s.iterable
        is_range = (
            type(it) is A.Call
            and type(it.callee) is A.Name
            and it.callee.id == "range"
            and it.callee.id not in self.locals
            and 1 <= len(it.args) <= 2
            and all(a.name is None and not a.spread for a in it.args)
            and s.second is None
            and s.pattern is None
        )
        plain = [n for n in (s.var if s.pattern is None else None, s.second) if n]
        shadowing = self.shadowed(plain)
        saved = {name: self.renames.get(name) for name in shadowing}
        for name in shadowing:
            hidden = self.new_hidden(f"for_{name}_")
            self.locals.add(hidden)
            self.renames[name] = hidden
        var = self.renames.get(s.var, s.var)
        second = self.renames.get(s.second, s.second) if s.second is not None else None
        if s.pattern is not None:
            var = self.new_hidden("fv")
            self.locals.add(var)
        slot = self.new_hidden("it")
        if is_range:
            args = it.args  # type: ignore[union-attr]
            if len(args) == 1:
                self.emit(CONST, 0)
                self.expr(args[0].value)
            else:
                self.expr(args[0].value)
                self.expr(args[1].value)
            self.emit(RANGE_INIT, slot)
        else:
            self.expr(it)
            self.emit(ITER_INIT, slot)
        top = self.here()
        self.step(self.header_span(s, it), path)
        if is_range:
            nxt = self.emit(RANGE_NEXT, (None, slot, var))
        else:
            nxt = self.emit(ITER_NEXT, (None, slot, var, second))
        if s.pattern is not None:
            self.emit(LOAD_LOCAL, var)
            self.destructure(s.pattern, s.span)
        self.loop_names.extend(plain)
        loop = self.loop_body(s.body, path + ".body", top)
        del self.loop_names[len(self.loop_names) - len(plain) :]
        self.emit(JUMP, top)
        self.patch(nxt)
        for b in loop.breaks:
            self.patch(b)
        for name, outer in saved.items():
            if outer is None:
                del self.renames[name]
            else:
                self.renames[name] = outer

    def shadowed(self, names: list[str]) -> list[str]:
        """Which of a loop's variables are the loop's own, apart from a variable of the same
        name: as in the reference, where they are the parameters of the loop body's closure,
        `for (x in xs)` leaves a parameter, a declared variable, a module variable or an
        enclosing loop's variable `x` as it was (the name means the item only inside the
        loop). A name bound nowhere else keeps its own slot (the debugger shows it)."""
        if self.is_module:
            return []
        return sorted(
            n
            for n in set(names)
            if n in self.bound
            or n in self.renames
            or n in self.loop_names
            or n in self.outer
            or n not in self.locals
        )

    def var_decl(self, s: A.VarDecl) -> None:
        if s.value is None:
            self.emit(CONST, None)
        else:
            self.expr(s.value, type_hint=s.type)
        if type(s.target) is A.PBind:
            self.store_name(s.target.name, s.span, declaring=True)
        else:
            self.destructure(s.target, s.span)

    def destructure(self, target: A.Pattern, span: A.Span) -> None:
        """Bind the names of `target` from the value on top of the stack (consumed)."""
        names: set[str] = set()
        pattern_names(target, names)
        order = sorted(names)
        self.emit(DESTRUCTURE, (target, tuple(order)))
        for name in reversed(order):
            self.store_name(name, span, declaring=True)

    def assign(self, s: A.Assign) -> None:
        target, op = s.target, s.op
        if isinstance(target, A.Name):
            self.check_not_constant(target.id, s.span)
        if isinstance(target, A.Name):
            if op == "=":
                self.expr(s.value)
            elif op in _KEEP_JUMPS:
                self.load_name(target.id, target.span)
                skip = self.emit(_KEEP_JUMPS[op], None)
                self.emit(POP)
                self.expr(s.value)
                self.store_name(target.id, s.span)
                end = self.emit(JUMP, None)
                self.patch(skip)
                self.emit(POP)
                self.patch(end)
                return
            else:
                self.load_name(target.id, target.span)
                self.expr(s.value)
                self.emit(BINARY, op[0])
            self.store_name(target.id, s.span)
        elif isinstance(target, A.Member):
            self.expr(target.obj)
            if op == "=":
                self.expr(s.value)
            elif op in _KEEP_JUMPS:
                self.emit(DUP)
                self.emit(GET_MEMBER, target.name)
                skip = self.emit(_KEEP_JUMPS[op], None)
                self.emit(POP)
                self.expr(s.value)
                self.emit(SET_MEMBER, target.name)
                end = self.emit(JUMP, None)
                self.patch(skip)
                self.emit(POP)
                self.emit(POP)
                self.patch(end)
                return
            else:
                self.emit(DUP)
                self.emit(GET_MEMBER, target.name)
                self.expr(s.value)
                self.emit(BINARY, op[0])
            self.emit(SET_MEMBER, target.name)
        elif isinstance(target, A.Index):
            self.expr(target.obj)
            self.expr(target.index)
            if op == "=":
                self.expr(s.value)
            elif op in _KEEP_JUMPS:
                self.emit(DUP2)
                self.emit(GET_INDEX)
                skip = self.emit(_KEEP_JUMPS[op], None)
                self.emit(POP)
                self.expr(s.value)
                self.emit(SET_INDEX)
                end = self.emit(JUMP, None)
                self.patch(skip)
                self.emit(POP)
                self.emit(POP)
                self.emit(POP)
                self.patch(end)
                return
            else:
                self.emit(DUP2)
                self.emit(GET_INDEX)
                self.expr(s.value)
                self.emit(BINARY, op[0])
            self.emit(SET_INDEX)
        else:
            self.error("cannot assign to this expression", target.span)

    # -- expressions ----------------------------------------------------------------------


# `x ??= v`, `x ||= v`, `x &&= v` assign only when the current value is null, falsy, truthy:
# the jump that skips the assignment, keeping the current value on the stack.
_KEEP_JUMPS = {
    "??=": JUMP_IF_NOT_NULL_KEEP,
    "||=": JUMP_IF_TRUE_KEEP,
    "&&=": JUMP_IF_FALSE_KEEP,
}


def is_interrupt_call(e: A.Expr | None) -> bool:
    """`interrupt(…)`: a call of the interrupt builtin (the value of `return interrupt(…)`)."""
    return type(e) is A.Call and type(e.callee) is A.Name and e.callee.id == "interrupt"


def _thread_setup_options(stmt: A.Stmt) -> dict[str, A.Expr] | None:
    """The options of a thread block's `__thread_setup` statement (see syntax/concurrency.py),
    None when the statement is another."""
    call = stmt.expr if isinstance(stmt, A.ExprStmt) else getattr(stmt, "value", None)
    if not isinstance(stmt, (A.ExprStmt, A.VarDecl)) or not isinstance(call, A.Call):
        return None
    if not isinstance(call.callee, A.Name) or call.callee.id != "__thread_setup":
        return None
    opts = call.args[1].value if len(call.args) > 1 else None
    if not isinstance(opts, A.ObjectLit):
        return {}
    return {
        e.key: e.value
        for e in opts.entries
        if isinstance(e, A.ObjectEntry) and isinstance(e.key, str)
    }
