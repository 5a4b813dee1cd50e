"""Provides superinstructions: one dispatch for a few hot instruction sequences.

`fuse(code)` writes a superinstruction over the first instruction of each sequence it knows and
leaves every other instruction where it was. So every pc keeps its meaning: a jump into the
middle of a sequence, a frame resumed after a call, a checkpoint re-entering a statement and a
snapshot rebuilt in another process all find the original instructions; only a dispatch that
starts at the sequence's first instruction takes the shortcut. A superinstruction does exactly
what the sequence does (the same writes, in the same order, logged the same way), so a run and
its record are the same with or without it.

- `STEP_NEXT (location index, location, op, arg, pc after it)`: a statement's STEP and the
  instruction after it. It stops where STEP stops (with the frame at the instruction after the
  STEP); otherwise it goes straight on to that instruction.
- `LOCAL_OP_{LOCAL,CONST}_STORE (a, b, fn, int fn, name, next pc)`: `name = a <op> b` from
  LOAD_LOCAL a; LOAD_LOCAL b | CONST b; BINARY; STORE_LOCAL.
- `LOCAL_OP_{LOCAL,CONST}_JUMP (a, b, fn, int fn, target, next pc)`: a loop or `if` test,
  from the same three and JUMP_IF_FALSE.
- `LOCAL_OP_{LOCAL,CONST} (a, b, fn, int fn, next pc)`: the three alone (part of an expression).

- `OP_CONST_JUMP (b, fn, int fn, target, next pc)`: CONST b; BINARY; JUMP_IF_FALSE.
- `BINARY_STORE (fn, name, next pc)`: BINARY; STORE_LOCAL name (the end of `x = … <op> …`).
- `FOR_RANGE`, `FOR_EACH`: RANGE_NEXT, and ITER_NEXT without a second variable, with their
  hidden slots' names spelled out (and tested before the other instructions: loop heads are hot).

A superinstruction whose sequence ends with a store before an unconditional JUMP (a loop's last
statement) goes on at the JUMP's target instead: the JUMP does nothing else.

`int fn` is the operator on two ints as plain Python (see `INT_FAST`), or None when the
constant operand is not an int.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from runtime.language.bytecode import (
    BINARY,
    BINARY_STORE,
    CONST,
    FOR_EACH,
    FOR_RANGE,
    ITER_NEXT,
    JUMP,
    JUMP_IF_FALSE,
    LOAD_LOCAL,
    LOCAL_OP_CONST,
    LOCAL_OP_CONST_JUMP,
    LOCAL_OP_CONST_STORE,
    LOCAL_OP_LOCAL,
    LOCAL_OP_LOCAL_JUMP,
    LOCAL_OP_LOCAL_STORE,
    OP_CONST_JUMP,
    RANGE_NEXT,
    STEP,
    STEP_NEXT,
    STORE_LOCAL,
    Code,
)
from runtime.vm.values import (
    _exact,
    js_add,
    js_eq,
    js_ge,
    js_gt,
    js_le,
    js_lt,
    js_mod,
    js_mul,
    js_ne,
    js_sub,
)


def _int_mul(a: int, b: int) -> int | float:
    return _exact(a * b)


def _int_mod(a: int, b: int) -> int | float:
    if b == 0:
        return math.nan
    r = abs(a) % abs(b)
    return -r if a < 0 else r


# JavaScript operators on two ints, as plain Python (`*` turns inexact beyond 2**53 and `%`
# takes the dividend's sign, as `js_mul` and `js_mod` do for ints; `/` is left to `js_div`).
INT_FAST: dict[Callable[[Any, Any], Any], Callable[[Any, Any], Any]] = {
    js_add: operator.add,
    js_sub: operator.sub,
    js_lt: operator.lt,
    js_gt: operator.gt,
    js_le: operator.le,
    js_ge: operator.ge,
    js_eq: operator.eq,
    js_ne: operator.ne,
    js_mul: _int_mul,
    js_mod: _int_mod,
}

_AFTER = {
    (LOAD_LOCAL, STORE_LOCAL): LOCAL_OP_LOCAL_STORE,
    (CONST, STORE_LOCAL): LOCAL_OP_CONST_STORE,
    (LOAD_LOCAL, JUMP_IF_FALSE): LOCAL_OP_LOCAL_JUMP,
    (CONST, JUMP_IF_FALSE): LOCAL_OP_CONST_JUMP,
}


_THREADED = {
    BINARY_STORE,
    LOCAL_OP_LOCAL_STORE,
    LOCAL_OP_CONST_STORE,
    LOCAL_OP_LOCAL_JUMP,
    LOCAL_OP_CONST_JUMP,
}


def _through_jumps(ops: list[int], args: list[Any], pc: int) -> int:
    """Where execution goes from `pc` through unconditional JUMPs (which do nothing else)."""
    seen = set()
    while pc < len(ops) and ops[pc] == JUMP and pc not in seen:
        seen.add(pc)
        pc = args[pc]
    return pc


def fuse(code: Code) -> None:
    """Write superinstructions into `code` (linked: BINARY operands are functions), in place."""
    ops, args = code.ops, code.args
    n = len(ops)
    new_ops, new_args = list(ops), list(args)
    for pc in range(n - 2):
        if ops[pc] != LOAD_LOCAL or ops[pc + 2] != BINARY or ops[pc + 1] not in (LOAD_LOCAL, CONST):
            continue
        second, fn = ops[pc + 1], args[pc + 2]
        b = args[pc + 1]
        fast = INT_FAST.get(fn) if second == LOAD_LOCAL or type(b) is int else None
        head = (args[pc], b, fn, fast)
        after = ops[pc + 3] if pc + 3 < n else None
        sup = _AFTER.get((second, after))  # type: ignore[arg-type]
        if sup is not None:
            new_ops[pc], new_args[pc] = sup, (*head, args[pc + 3], pc + 4)
        else:
            new_ops[pc] = LOCAL_OP_LOCAL if second == LOAD_LOCAL else LOCAL_OP_CONST
            new_args[pc] = (*head, pc + 3)
    for pc in range(n):
        op, arg = ops[pc], args[pc]
        if op == RANGE_NEXT:
            new_ops[pc], new_args[pc] = FOR_RANGE, (*arg, arg[1] + "e")
        elif op == ITER_NEXT and arg[3] is None:
            new_ops[pc], new_args[pc] = FOR_EACH, (*arg[:3], arg[1] + "i")
        elif op == CONST and pc + 2 < n and ops[pc + 1] == BINARY and ops[pc + 2] == JUMP_IF_FALSE:
            fn = args[pc + 1]
            fast = INT_FAST.get(fn) if type(arg) is int else None
            new_ops[pc], new_args[pc] = OP_CONST_JUMP, (arg, fn, fast, args[pc + 2], pc + 3)
        elif op == BINARY and pc + 1 < n and ops[pc + 1] == STORE_LOCAL:
            new_ops[pc], new_args[pc] = BINARY_STORE, (arg, args[pc + 1], pc + 2)
    for pc in range(n - 1):
        if new_ops[pc] in _THREADED:  # its next instruction a JUMP: go to the JUMP's target
            arg = new_args[pc]
            new_args[pc] = (*arg[:-1], _through_jumps(ops, args, arg[-1]))
    for pc in range(n - 1):
        if ops[pc] == STEP and ops[pc + 1] != STEP:
            at = args[pc]
            new_ops[pc] = STEP_NEXT
            new_args[pc] = (at, code.locations[at], new_ops[pc + 1], new_args[pc + 1], pc + 2)
    ops[:] = new_ops
    args[:] = new_args
