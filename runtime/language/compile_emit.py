"""Provides the emitter every part of the function compiler builds on: appending instructions,
patching jumps, statement steps, hidden locals, errors, and loading and storing names."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtime.errors import Diagnostic
from runtime.language.bytecode import (
    BUILTIN_NAMES,
    CONST,
    HANDLER_POP,
    LOAD_GLOBAL,
    LOAD_LOCAL,
    LOAD_NAME,
    LOAD_OUTER,
    LOAD_SHARED,
    STEP,
    STORE_GLOBAL,
    STORE_LOCAL,
    STORE_OUTER,
    STORE_SHARED,
    THREAD_POP,
    TRAP_POP,
    Code,
    FuncRef,
    Location,
)
from runtime.language.syntax import ast as A

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


class CodeEmitter:
    """Emits one function's code: instructions, jumps to patch, steps, hidden locals and name resolution."""

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
        # Names the function binds other than as a loop variable (parameters, declarations,
        # assignments), and the variables of the loops being compiled: a loop over one of
        # these names shadows it (see `FunctionCompiler.for_stmt`).
        self.bound: set[str] = set()
        self.loop_names: list[str] = []
        # A handler body's view of the enclosing function's variables (read and written in
        # the frame that opened the `handle` block, like a JavaScript closure).
        self.outer: set[str] = set()
        # Open match arms: a `return` inside one yields the match's value (see `match`).
        self.arms: list[_Arm] = []

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

    def close_blocks(self, depth: int) -> None:
        for kind in reversed(self.blocks[depth:]):
            self.emit({"thread": THREAD_POP, "handler": HANDLER_POP, "trap": TRAP_POP}[kind])

    def check_not_constant(self, name: str, span: A.Span) -> None:
        local = name in self.locals and not self.is_module
        if (local and name in self.consts) or (not local and name in self.unit.module_consts):
            self.error(f"cannot assign to `{name}`: it is a constant", span)

    # -- the recursive parts, defined by the compilers built on this one ----------------------
    # An expression holds a block, a block holds statements, a match both: each layer
    # (compile_expressions, compile_match, compiler) can call the others through these.

    def expr(self, e: A.Expr, type_hint: A.TypeExpr | None = None) -> None:
        raise NotImplementedError

    def match(self, m: A.Match, path: str, as_stmt: bool) -> None:
        raise NotImplementedError

    def match_pattern(self, pattern: A.Pattern, span: A.Span) -> int:
        raise NotImplementedError

    def block(self, block: A.Block, path: str) -> None:
        raise NotImplementedError

    def assign(self, s: A.Assign) -> None:
        raise NotImplementedError
