"""Provides linking: compiled code names a few things symbolically (an operator by its text, a
constant object as JSON-like data) so that the language layer never depends on the machine; the
machine links them to its own objects once per program, before the first instruction runs."""

from __future__ import annotations

from runtime.language.bytecode import BINARY, CONST, UNARY, CompiledProgram
from runtime.vm.fuse import fuse
from runtime.vm.values import BINARY_OPS, UNARY_OPS, from_plain


def link(program: CompiledProgram) -> CompiledProgram:
    """Link `program` in place (once), with its superinstructions (`runtime.vm.fuse`), and
    return it."""
    if program.linked:
        return program
    for code in [*program.functions.values(), program.module]:
        ops, args = code.ops, code.args
        for pc, op in enumerate(ops):
            arg = args[pc]
            if op == BINARY and type(arg) is str:
                args[pc] = BINARY_OPS[arg]
            elif op == UNARY and type(arg) is str:
                args[pc] = UNARY_OPS[arg]
            elif op == CONST and type(arg) in (dict, list):
                args[pc] = from_plain(arg)
        fuse(code)
    program.linked = True
    return program
