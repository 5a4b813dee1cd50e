"""Provides the compiler from the AST to flat per-function code for the stack machine.

Each `node`, `def`, handler body and the module's top-level statements become a `Code`: two
parallel lists (`ops`, small-int opcodes; `args`, their operands) plus the step locations. A
`STEP` instruction starts every statement; at a step the frame's operand stack is at the depth
it had when the statement began, which is what lets `checkpoint()` re-enter a statement.

Loop and block state (iterators, indices, match subjects) lives in hidden locals named `__…`,
never on the operand stack across statements, so it is captured by every snapshot.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtime.errors import Diagnostic
from runtime.language.bytecode import (
    ARRAY_APPEND,
    BINARY,
    BREAKPOINT,
    BUILD_ARRAY,
    BUILD_ARRAY_SPREAD,
    BUILD_OBJECT,
    BUILD_OBJECT_SPREAD,
    BUILD_STRING,
    BUILTIN_NAMES,
    CALL,
    CALL_METHOD,
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
    LOAD_GLOBAL,
    LOAD_LOCAL,
    LOAD_NAME,
    LOAD_OUTER,
    LOAD_SHARED,
    MAKE_CLOSURE,
    MARK_STEP,
    MATCH,
    PIPE_PREP,
    POP,
    RANGE_INIT,
    RANGE_NEXT,
    RETURN,
    SET_INDEX,
    SET_MEMBER,
    SLICE,
    STEP,
    STORE_GLOBAL,
    STORE_LOCAL,
    STORE_OUTER,
    STORE_SHARED,
    SWAP,
    THREAD_POP,
    THREAD_PUSH,
    TRAP_POP,
    TRAP_PUSH,
    UNARY,
    UNWRAP_OR_JUMP,
    UPDATE_GLOBAL,
    UPDATE_INDEX,
    UPDATE_LOCAL,
    UPDATE_MEMBER,
    UPDATE_OUTER,
    UPDATE_SHARED,
    Code,
    FuncRef,
    Location,
)
from runtime.language.scopes import pattern_names
from runtime.language.syntax import ast as A
from runtime.language.syntax.validation import conforms_expr, has_validators, validated_binders

if TYPE_CHECKING:
    from runtime.language.program_compiler import ProgramCompiler


@dataclass(slots=True)
class _Loop:
    breaks: list[int]
    continue_target: int
    block_depth: int  # len(self.blocks) when the loop started


@dataclass(slots=True)
class _Arm:
    ends: list[int]  # jumps to the end of the match
    block_depth: int  # len(self.blocks) when the match started
    as_stmt: bool


class FunctionCompiler:
    """Compiles one function body to a Code."""

    def __init__(
        self,
        unit: ProgramCompiler,
        code: Code,
        locals_: set[str],
        steps: bool = True,
    ) -> None:
        self.unit = unit
        self.code = code
        self.locals = locals_
        self.steps = steps
        self.loops: list[_Loop] = []
        self.blocks: list[str] = []  # "thread" | "handler" | "trap" currently open
        self.hidden = 0
        self.is_module = code.kind == "module"
        self.consts: set[str] = set()  # this function's `const` names
        self.renames: dict[str, str] = {}  # a comprehension's variable -> its hidden local
        # A handler body's view of the enclosing function's variables (read and written in
        # the frame that opened the `handle` block, like a JavaScript closure).
        self.outer: set[str] = set()
        # Open match arms: a `return` inside one yields the match's value (see `match`).
        self.arms: list[_Arm] = []

    # -- emission -------------------------------------------------------------------------

    def emit(self, op: int, arg: Any = None) -> int:
        self.code.ops.append(op)
        self.code.args.append(arg)
        return len(self.code.ops) - 1

    def here(self) -> int:
        return len(self.code.ops)

    def patch(self, at: int, target: int | None = None) -> None:
        target = self.here() if target is None else target
        arg = self.code.args[at]
        if isinstance(arg, tuple):
            self.code.args[at] = (target, *arg[1:])
        else:
            self.code.args[at] = target

    def new_hidden(self, stem: str) -> str:
        self.hidden += 1
        return f"__{stem}{self.hidden}"

    def step(self, span: A.Span, path: str) -> None:
        if not self.steps:
            return
        loc = Location(
            self.code.file,
            self.code.name,
            path,
            span.line,
            span.col,
            span.end_line,
            span.end_col,
        )
        self.code.locations.append(loc)
        self.code.step_pcs.append(self.here())
        self.emit(STEP, len(self.code.locations) - 1)

    def error(self, message: str, span: A.Span) -> None:
        self.unit.diagnostics.append(Diagnostic(message, span, self.code.file))

    # -- names ----------------------------------------------------------------------------

    def load_name(self, name: str, span: A.Span) -> None:
        name = self.renames.get(name, name)
        if name in self.locals and not self.is_module:
            self.emit(LOAD_LOCAL, name)
        elif name in self.outer:
            self.emit(LOAD_OUTER, name)
        elif name in self.unit.shared_names:
            self.emit(LOAD_SHARED, name)
        elif name in self.unit.global_names:
            self.emit(LOAD_GLOBAL, name)
        elif name in self.unit.function_names or name in BUILTIN_NAMES:
            self.emit(CONST, FuncRef(name))
        elif name in ("undefined",):
            self.emit(CONST, None)
        elif name in ("Infinity", "NaN"):
            self.emit(CONST, float("inf") if name == "Infinity" else float("nan"))
        elif name == "__dirname":
            # The absolute directory of the file this code is in (fixed when it is compiled).
            self.emit(CONST, os.path.dirname(os.path.abspath(self.code.file)))
        else:
            # Unknown at compile time: resolved (or reported) when it runs.
            self.emit(LOAD_NAME, name)

    def store_name(self, name: str, span: A.Span, declaring: bool = False) -> None:
        name = self.renames.get(name, name)
        if name in self.locals and not self.is_module:
            self.emit(STORE_LOCAL, name)
        elif name in self.outer:
            self.emit(STORE_OUTER, name)
        elif name in self.unit.shared_names:
            self.emit(STORE_SHARED, name)
        else:
            self.emit(STORE_GLOBAL, name)

    # -- statements -----------------------------------------------------------------------

    def block(self, block: A.Block, path: str) -> None:
        for i, stmt in enumerate(block.body):
            self.stmt(stmt, f"{path}.{i}" if path else str(i))

    def stmt(self, s: A.Stmt, path: str) -> None:
        t = type(s)
        if t is A.Block:
            self.block(s, path)  # type: ignore[arg-type]
            return
        if t is A.If:
            self.if_stmt(s, path)  # type: ignore[arg-type]
            return
        if t is A.While:
            self.while_stmt(s, path)  # type: ignore[arg-type]
            return
        if t is A.ForIn:
            self.for_stmt(s, path)  # type: ignore[arg-type]
            return
        if t is A.Finalize:
            self.finalize(s)  # type: ignore[arg-type]
            return
        header = s.span
        if t in (A.ThreadBlock, A.HandleBlock):
            header = A.Span(s.span.line, s.span.col, s.span.line, s.span.col + 6)
        self.step(header, path)
        if t is A.ExprStmt:
            self.expr(s.expr)  # type: ignore[union-attr]
            self.emit(POP)
        elif t is A.VarDecl:
            self.var_decl(s)  # type: ignore[arg-type]
        elif t is A.Assign:
            self.assign(s)  # type: ignore[arg-type]
        elif t is A.Return and self.arms:
            self.arm_return(s)  # type: ignore[arg-type]
        elif t is A.Return:
            if self.is_module:
                self.error("`return` outside a function", s.span)
            if is_interrupt_call(s.value):  # type: ignore[union-attr]
                # `return interrupt(…)` gates what follows: approved, execution goes on with
                # the next statement (the value is dropped); rejected, the function returns
                # the failure (the machine unwinds it).
                self.expr(s.value)  # type: ignore[union-attr, arg-type]
                self.emit(POP)
                return
            if s.value is None:  # type: ignore[union-attr]
                self.emit(CONST, None)
            else:
                self.expr(s.value)  # type: ignore[union-attr]
            self.emit(RETURN)
        elif t is A.Break or t is A.Continue:
            if not self.loops:
                self.error(f"`{'break' if t is A.Break else 'continue'}` outside a loop", s.span)
                return
            loop = self.loops[-1]
            self.close_blocks(loop.block_depth)
            if t is A.Break:
                loop.breaks.append(self.emit(JUMP, None))
            else:
                self.emit(JUMP, loop.continue_target)
        elif t is A.Goto:
            self.expr(s.call)  # type: ignore[union-attr]
            self.emit(RETURN)
        elif t is A.ThreadBlock:
            self.emit(THREAD_PUSH, s.kind)  # type: ignore[union-attr]
            self.blocks.append("thread")
            self.block(s.body, path + ".body")  # type: ignore
            self.blocks.pop()
            self.emit(THREAD_POP)
        elif t is A.HandleBlock:
            self.emit(HANDLER_PUSH, self.unit.compile_handler(s.handler, self))  # type: ignore[union-attr]
            self.blocks.append("handler")
            self.block(s.body, path + ".body")  # type: ignore
            self.blocks.pop()
            self.emit(HANDLER_POP)
        elif t is A.WithAction:
            action = s.action  # type: ignore[union-attr]
            fixed = action in ("approve", "reject", "propagate")
            self.emit(HANDLER_PUSH, ("action" if fixed else "func", action))
            self.blocks.append("handler")
            inner = s.stmt  # type: ignore[union-attr]
            self.stmt_body(inner, path)
            self.blocks.pop()
            self.emit(HANDLER_POP)
        elif t is A.Match:
            self.match(s, path, as_stmt=True)  # type: ignore[arg-type]
        else:
            self.error(f"unsupported statement {t.__name__}", s.span)

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

    def close_blocks(self, depth: int) -> None:
        for kind in reversed(self.blocks[depth:]):
            self.emit({"thread": THREAD_POP, "handler": HANDLER_POP, "trap": TRAP_POP}[kind])

    def header_span(self, s: A.If | A.While | A.ForIn, end: A.Expr) -> A.Span:
        return A.Span(s.span.line, s.span.col, end.span.end_line, end.span.end_col + 1)

    def if_stmt(self, s: A.If, path: str) -> None:
        self.step(self.header_span(s, s.cond), path)
        self.expr(s.cond)
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
        self.expr(s.cond)
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
        var = s.var
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
            nxt = self.emit(RANGE_NEXT, (None, slot, s.var))
        else:
            nxt = self.emit(ITER_NEXT, (None, slot, var, s.second))
        if s.pattern is not None:
            self.emit(LOAD_LOCAL, var)
            self.destructure(s.pattern, s.span)
        loop = self.loop_body(s.body, path + ".body", top)
        self.emit(JUMP, top)
        self.patch(nxt)
        for b in loop.breaks:
            self.patch(b)

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

    def check_not_constant(self, name: str, span: A.Span) -> None:
        local = name in self.locals and not self.is_module
        if (local and name in self.consts) or (not local and name in self.unit.module_consts):
            self.error(f"cannot assign to `{name}`: it is a constant", span)

    def assign(self, s: A.Assign) -> None:
        target, op = s.target, s.op
        t = type(target)
        if t is A.Name:
            self.check_not_constant(target.id, s.span)  # type: ignore[union-attr]
        if t is A.Name:
            if op == "=":
                self.expr(s.value)
            elif op == "??=":
                self.load_name(target.id, target.span)  # type: ignore[union-attr]
                skip = self.emit(JUMP_IF_NOT_NULL_KEEP, None)
                self.emit(POP)
                self.expr(s.value)
                self.store_name(target.id, s.span)  # type: ignore[union-attr]
                end = self.emit(JUMP, None)
                self.patch(skip)
                self.emit(POP)
                self.patch(end)
                return
            else:
                self.load_name(target.id, target.span)  # type: ignore[union-attr]
                self.expr(s.value)
                self.emit(BINARY, op[0])
            self.store_name(target.id, s.span)  # type: ignore[union-attr]
        elif t is A.Member:
            self.expr(target.obj)  # type: ignore[union-attr]
            if op == "=":
                self.expr(s.value)
            elif op == "??=":
                self.emit(DUP)
                self.emit(GET_MEMBER, target.name)  # type: ignore[union-attr]
                skip = self.emit(JUMP_IF_NOT_NULL_KEEP, None)
                self.emit(POP)
                self.expr(s.value)
                self.emit(SET_MEMBER, target.name)  # type: ignore[union-attr]
                end = self.emit(JUMP, None)
                self.patch(skip)
                self.emit(POP)
                self.emit(POP)
                self.patch(end)
                return
            else:
                self.emit(DUP)
                self.emit(GET_MEMBER, target.name)  # type: ignore[union-attr]
                self.expr(s.value)
                self.emit(BINARY, op[0])
            self.emit(SET_MEMBER, target.name)  # type: ignore[union-attr]
        elif t is A.Index:
            self.expr(target.obj)  # type: ignore[union-attr]
            self.expr(target.index)  # type: ignore[union-attr]
            if op == "=":
                self.expr(s.value)
            elif op == "??=":
                self.emit(DUP2)
                self.emit(GET_INDEX)
                skip = self.emit(JUMP_IF_NOT_NULL_KEEP, None)
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

    def expr(self, e: A.Expr, type_hint: A.TypeExpr | None = None) -> None:
        t = type(e)
        if t is A.Literal:
            self.emit(CONST, e.value)  # type: ignore[union-attr]
        elif t is A.Name:
            self.load_name(e.id, e.span)  # type: ignore[union-attr]
        elif t is A.Binary:
            self.expr(e.left)  # type: ignore[union-attr]
            self.expr(e.right)  # type: ignore[union-attr]
            self.emit(BINARY, e.op)  # type: ignore[union-attr]
        elif t is A.Call:
            self.call(e, type_hint)  # type: ignore[arg-type]
        elif t is A.Member or t is A.Index:
            exits: list[int] = []
            self.chain_link(e, exits)
            for j in exits:
                self.patch(j)
        elif t is A.Template:
            n = 0
            for part in e.parts:  # type: ignore[union-attr]
                if isinstance(part, str):
                    if part:
                        self.emit(CONST, part)
                        n += 1
                else:
                    self.expr(part)
                    n += 1
            self.emit(BUILD_STRING, n)
        elif t is A.Logical:
            self.expr(e.left)  # type: ignore[union-attr]
            op = {"&&": JUMP_IF_FALSE_KEEP, "||": JUMP_IF_TRUE_KEEP, "??": JUMP_IF_NOT_NULL_KEEP}[
                e.op  # type: ignore[union-attr]
            ]
            j = self.emit(op, None)
            self.emit(POP)
            self.expr(e.right)  # type: ignore[union-attr]
            self.patch(j)
        elif t is A.Unary:
            self.expr(e.operand)  # type: ignore[union-attr]
            self.emit(UNARY, e.op)  # type: ignore[union-attr]
        elif t is A.ArrayLit:
            if any(type(i) is A.Spread for i in e.items):  # type: ignore[union-attr]
                flags = []
                for item in e.items:  # type: ignore[union-attr]
                    if type(item) is A.Spread:
                        self.expr(item.value)
                        flags.append(True)
                    else:
                        self.expr(item)  # type: ignore[arg-type]
                        flags.append(False)
                self.emit(BUILD_ARRAY_SPREAD, tuple(flags))
            else:
                for item in e.items:  # type: ignore[union-attr]
                    self.expr(item)  # type: ignore[arg-type]
                self.emit(BUILD_ARRAY, len(e.items))  # type: ignore[union-attr]
        elif t is A.ObjectLit:
            self.object_lit(e)  # type: ignore[arg-type]
        elif t is A.Conditional:
            self.expr(e.cond)  # type: ignore
            jf = self.emit(JUMP_IF_FALSE, None)
            self.expr(e.then)  # type: ignore[union-attr]
            end = self.emit(JUMP, None)
            self.patch(jf)
            self.expr(e.orelse)  # type: ignore[union-attr]
            self.patch(end)
        elif t is A.Update:
            self.update(e)  # type: ignore[arg-type]
        elif t is A.Slice:
            self.expr(e.obj)  # type: ignore[union-attr]
            self.expr(e.start) if e.start is not None else self.emit(CONST, None)  # type: ignore[union-attr]
            self.expr(e.end) if e.end is not None else self.emit(CONST, None)  # type: ignore[union-attr]
            self.emit(SLICE)
        elif t is A.Catch:
            trap = self.emit(TRAP_PUSH, (None, False))
            self.blocks.append("trap")
            self.expr(e.value)  # type: ignore
            self.blocks.pop()
            self.emit(TRAP_POP)
            unwrap = self.emit(UNWRAP_OR_JUMP, None)
            end = self.emit(JUMP, None)
            self.patch(trap)
            self.patch(unwrap)
            self.expr(e.default)  # type: ignore[union-attr]
            self.patch(end)
        elif t is A.Try:
            trap = self.emit(TRAP_PUSH, (None, True))
            self.blocks.append("trap")
            self.expr(e.value)  # type: ignore
            self.blocks.pop()
            self.emit(TRAP_POP)
            # `try e` is always a Result: a plain value becomes success(value).
            self.emit(CONST, FuncRef("__as_result"))
            self.emit(SWAP)
            self.emit(CALL, 1)
            self.patch(trap)
        elif t is A.Pipe:
            self.expr(e.left)  # type: ignore[union-attr]
            skip = self.emit(PIPE_PREP, None)
            right = e.right  # type: ignore[union-attr]
            if type(right) is A.Call and not _derives_function(right):
                self.expr(right.callee)
                self.emit(SWAP)
                self.call_args(right.args, extra_positional=1)
            else:
                self.expr(right)
                self.emit(SWAP)
                self.emit(CALL, 1)
            # A pipe always yields a Result: a stage's plain value becomes success(value).
            self.emit(CONST, FuncRef("__as_result"))
            self.emit(SWAP)
            self.emit(CALL, 1)
            self.patch(skip)
        elif t is A.ListComp:
            self.list_comp(e)  # type: ignore[arg-type]
        elif t is A.Match:
            self.match(e, "", as_stmt=False)  # type: ignore[arg-type]
        elif t is A.Is:
            self.is_expr(e)  # type: ignore[arg-type]
        elif t is A.BlockFn:
            self.emit(MAKE_CLOSURE, self.unit.compile_block(e, self))  # type: ignore[arg-type]
        else:
            self.error(f"unsupported expression {t.__name__}", e.span)
            self.emit(CONST, None)

    def object_lit(self, e: A.ObjectLit) -> None:
        simple = all(type(x) is A.ObjectEntry and isinstance(x.key, str) for x in e.entries)
        if simple:
            keys = []
            for entry in e.entries:
                self.expr(entry.value)
                keys.append(entry.key)  # type: ignore[union-attr]
            self.emit(BUILD_OBJECT, tuple(keys))
            return
        spec = []
        for entry in e.entries:
            if isinstance(entry, A.Spread):
                self.expr(entry.value)
                spec.append("spread")
            elif isinstance(entry.key, str):
                self.emit(CONST, entry.key)
                self.expr(entry.value)
                spec.append("pair")
            else:
                self.expr(entry.key)
                self.expr(entry.value)
                spec.append("pair")
        self.emit(BUILD_OBJECT_SPREAD, tuple(spec))

    def update(self, e: A.Update) -> None:
        delta = 1 if e.op == "++" else -1
        target = e.target
        if type(target) is A.Name:
            self.check_not_constant(target.id, e.span)
            name = self.renames.get(target.id, target.id)
            if name in self.locals and not self.is_module:
                self.emit(UPDATE_LOCAL, (name, delta))
            elif name in self.outer:
                self.emit(UPDATE_OUTER, (name, delta))
            elif name in self.unit.shared_names:
                self.emit(UPDATE_SHARED, (name, delta))
            else:
                self.emit(UPDATE_GLOBAL, (name, delta))
        elif type(target) is A.Member:
            self.expr(target.obj)
            self.emit(UPDATE_MEMBER, (target.name, delta))
        elif type(target) is A.Index:
            self.expr(target.obj)
            self.expr(target.index)
            self.emit(UPDATE_INDEX, delta)
        else:
            self.error(f"`{e.op}` needs a variable, property or element", e.span)
            self.emit(CONST, None)

    def call(self, e: A.Call, type_hint: A.TypeExpr | None = None) -> None:
        callee = e.callee
        if type(callee) is A.Name and callee.id not in self.locals:
            name = callee.id
            if name.startswith("__step_"):
                self.emit(MARK_STEP, name[len("__step_") :])
                self.emit(CONST, None)
                return
            if name == "debugger" and name not in self.unit.function_names:
                label = (
                    e.args[0].value.value if e.args and type(e.args[0].value) is A.Literal else None
                )
                self.emit(BREAKPOINT, label)
                self.emit(CONST, None)
                return
        if type(callee) is A.Member:
            exits: list[int] = []
            self.chain_link(e, exits)
            for j in exits:
                self.patch(j)
            return
        self.expr(callee)
        extra: list[tuple[str, Any]] = []
        if (
            type_hint is not None
            and type(callee) is A.Name
            and callee.id == "llm"
            and callee.id not in self.locals
        ):
            extra.append(("__type", self.unit.schema_for(type_hint)))
        self.call_args(e.args, extra_named=extra, block=e.block)

    def chain_link(self, e: A.Expr, exits: list[int]) -> None:
        """`e`, a link of a chain of members, indexes and method calls (`o?.a.b(c)[0]`) or its
        head. A `?.` on null jumps to the end of the whole chain (`exits`) with null, as in
        JavaScript: `o?.a.b` is null when `o` is."""
        link: A.Member | A.Index
        if type(e) is A.Call and type(e.callee) is A.Member:
            link = e.callee
        elif type(e) is A.Member or type(e) is A.Index:
            link = e
        else:
            self.expr(e)
            return
        self.chain_link(link.obj, exits)
        if link.optional:
            present = self.emit(JUMP_IF_NOT_NULL_KEEP, None)
            exits.append(self.emit(JUMP, None))
            self.patch(present)
        if type(e) is A.Call:
            spec = self.arg_spec(e.args)
            if e.block is not None:
                spec = self.with_block(spec, e.block)
            self.emit(CALL_METHOD, (link.name, spec))  # type: ignore[union-attr]
        elif type(link) is A.Index:
            self.expr(link.index)
            self.emit(GET_INDEX)
        else:
            self.emit(GET_MEMBER, link.name)  # type: ignore[union-attr]

    def arg_spec(self, args: tuple[A.Arg, ...], extra_positional: int = 0) -> Any:
        if all(a.name is None and not a.spread for a in args):
            for a in args:
                self.expr(a.value)
            return len(args) + extra_positional
        kinds: list[str | None] = [None] * extra_positional
        for a in args:
            self.expr(a.value)
            kinds.append("..." if a.spread else a.name)
        return tuple(kinds)

    def call_args(
        self,
        args: tuple[A.Arg, ...],
        extra_positional: int = 0,
        extra_named: list[tuple[str, Any]] | None = None,
        block: A.BlockFn | None = None,
    ) -> None:
        spec = self.arg_spec(args, extra_positional)
        if extra_named:
            kinds = list(spec) if isinstance(spec, tuple) else [None] * spec
            for name, value in extra_named:
                self.emit(CONST, value)
                kinds.append(name)
            spec = tuple(kinds)
        if block is not None:
            spec = self.with_block(spec, block)
        self.emit(CALL, spec)

    def with_block(self, spec: Any, block: A.BlockFn) -> tuple[str | None, ...]:
        """A trailing block goes last, as the argument kind `&`: the machine binds it to the
        callee's last parameter (by name, so omitted optional parameters keep their defaults)."""
        self.emit(MAKE_CLOSURE, self.unit.compile_block(block, self))
        kinds = list(spec) if isinstance(spec, tuple) else [None] * spec
        kinds.append("&")
        return tuple(kinds)

    def list_comp(self, e: A.ListComp) -> None:
        """`[f(x) for x in xs if c]`; `x` is the comprehension's own (a hidden local), so it
        neither changes nor declares a variable `x` of the function. So are `i` in
        `for x, i in xs` and the names of a pattern binder (`for {name} in people`)."""
        binders: set[str] = set()
        if e.pattern is not None:
            pattern_names(e.pattern, binders)
        else:
            binders.add(e.var)
        if e.second is not None:
            binders.add(e.second)
        saved = {name: self.renames.get(name) for name in binders}
        for name in sorted(binders):
            hidden = self.new_hidden(f"lc_{name}_")
            self.locals.add(hidden)
            self.renames[name] = hidden
        var = self.renames[e.var] if e.pattern is None else self.new_hidden("lc_item")
        self.locals.add(var)
        second = self.renames[e.second] if e.second is not None else None
        out = self.new_hidden("lc")
        self.emit(BUILD_ARRAY, 0)
        self.emit(STORE_LOCAL, out)
        slot = self.new_hidden("it")
        self.expr(e.iterable)
        self.emit(ITER_INIT, slot)
        top = self.here()
        nxt = self.emit(ITER_NEXT, (None, slot, var, second))
        if e.pattern is not None:
            order: set[str] = set()
            pattern_names(e.pattern, order)
            names = sorted(order)
            self.emit(LOAD_LOCAL, var)
            self.emit(DESTRUCTURE, (e.pattern, tuple(names)))
            for name in reversed(names):
                self.emit(STORE_LOCAL, self.renames[name])
        if e.cond is not None:
            self.expr(e.cond)
            self.emit(JUMP_IF_FALSE, top)
        self.emit(LOAD_LOCAL, out)
        self.expr(e.element)
        self.emit(ARRAY_APPEND)
        self.emit(JUMP, top)
        self.patch(nxt)
        self.emit(LOAD_LOCAL, out)
        self.locals.add(out)
        for name, outer in saved.items():
            if outer is None:
                del self.renames[name]
            else:
                self.renames[name] = outer

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

    def is_expr(self, e: A.Is) -> None:
        """`x is P`: true or false; on a match the pattern's names are assigned (so
        `if (r is success(v)) { … v … }` and `while (…)` see them)."""
        self.expr(e.value)
        mismatch = self.match_pattern(e.pattern, e.span)
        self.emit(CONST, True)
        end = self.emit(JUMP, None)
        self.patch(mismatch)
        self.emit(CONST, False)
        self.patch(end)


def _derives_function(call: A.Call) -> bool:
    """`f.partial(a: 1)` (or .describe/.rename/.preapprove) makes a function value: as a pipe
    stage it is called with the piped value, not given it as an extra argument."""
    callee = call.callee
    return type(callee) is A.Member and callee.name in (
        "partial",
        "describe",
        "rename",
        "preapprove",
    )


def is_interrupt_call(e: A.Expr | None) -> bool:
    """`interrupt(…)`: a call of the interrupt builtin (the value of `return interrupt(…)`)."""
    return type(e) is A.Call and type(e.callee) is A.Name and e.callee.id == "interrupt"
