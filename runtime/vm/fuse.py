"""Provides superinstructions: one dispatch for a few hot instruction sequences.

`fuse(code)` writes a superinstruction over the first instruction of each sequence it knows and
leaves every other instruction where it was. So every pc keeps its meaning: a jump into the
middle of a sequence, a frame resumed after a call, a checkpoint re-entering a statement and a
snapshot rebuilt in another process all find the original instructions; only a dispatch that
starts at the sequence's first instruction takes the shortcut. A superinstruction does exactly
what the sequence does (the same writes, in the same order, logged the same way but for the
derived writes below, which read back the same), so a run and its record are the same with or
without it.

- `STEP_NEXT (location index, location, op, arg, pc after it, derived write)`: a statement's
  STEP and the instruction after it. It stops where STEP stops (with the frame at the
  instruction after the STEP); otherwise it goes straight on to that instruction. When that
  instruction is a whole `LOCAL_OP_*_STORE` with an int operator, a recording machine that
  finds two ints does the store itself and logs the step and the write as one entry without
  the value (`W_STEP_WRITE`), which a reader recomputes: the loop statements `i = i + 1`,
  `total = total + i` log a third of the entries they did, so cost a third as much to store.
  The same for `name = a <op> (c <op> d)` (LOAD_LOCAL a, then `c <op> d` as one
  `LOCAL_OP_*`, then BINARY_STORE): `total = total + i * 2` is one entry too (`W_NESTED`).
  A loop head (FOR_RANGE, FOR_EACH next) logs its step and the loop variable's name as one
  entry, then the value (`W_STEP_LOCAL`): three entries an iteration become two.
- `LOCAL_OP_{LOCAL,CONST}_STORE (a, b, fn, int fn, name, next pc)`: `name = a <op> b` from
  LOAD_LOCAL a; LOAD_LOCAL b | CONST b; BINARY; STORE_LOCAL.
- `LOCAL_OP_{LOCAL,CONST}_JUMP (a, b, fn, int fn, target, next pc)`: a loop or `if` test,
  from the same three and JUMP_IF_FALSE.
- `LOCAL_OP_{LOCAL,CONST} (a, b, fn, int fn, next pc)`: the three alone (part of an expression).

- `OP_CONST_JUMP (b, fn, int fn, target, next pc)`: CONST b; BINARY; JUMP_IF_FALSE.
- `BINARY_STORE (fn, name, next pc)`: BINARY; STORE_LOCAL name (the end of `x = … <op> …`).
- `FOR_RANGE`, `FOR_EACH`: RANGE_NEXT, and ITER_NEXT without a second variable, with their
  hidden slots' names spelled out (and tested before the other instructions: loop heads are hot).
- `PUSH_LOCAL (array, item, next pc)`: LOAD_LOCAL array; LOAD_LOCAL item; CALL_METHOD push;
  POP, the statement `xs.push(v)`, as `Machine.push` does it when `xs` holds an array.

A superinstruction whose sequence ends with a store before an unconditional JUMP (a loop's last
statement) goes on at the JUMP's target instead: the JUMP does nothing else.

`int fn` is the operator on two ints as plain Python (see `INT_FAST`), or None when the
constant operand is not an int.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from runtime.language.bytecode import (
    BINARY,
    BINARY_STORE,
    CALL_METHOD,
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
    POP,
    PUSH_LOCAL,
    RANGE_NEXT,
    STEP,
    STEP_NEXT,
    STORE_LOCAL,
    Code,
)
from runtime.language.int_ops import INT_OP_INDEX, INT_OPS
from runtime.vm.values import (
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
from runtime.vm.writelog import W_NESTED, W_STEP_LOCAL, W_STEP_PUSH, W_STEP_WRITE

# JavaScript operators on two ints, as plain Python (`runtime.language.int_ops`).
INT_FAST: dict[Callable[[Any, Any], Any], Callable[[Any, Any], Any]] = {
    js_add: INT_OPS["+"],
    js_sub: INT_OPS["-"],
    js_lt: INT_OPS["<"],
    js_gt: INT_OPS[">"],
    js_le: INT_OPS["<="],
    js_ge: INT_OPS[">="],
    js_eq: INT_OPS["=="],
    js_ne: INT_OPS["!="],
    js_mul: INT_OPS["*"],
    js_mod: INT_OPS["%"],
}

_AFTER = {
    (LOAD_LOCAL, STORE_LOCAL): LOCAL_OP_LOCAL_STORE,
    (CONST, STORE_LOCAL): LOCAL_OP_CONST_STORE,
    (LOAD_LOCAL, JUMP_IF_FALSE): LOCAL_OP_LOCAL_JUMP,
    (CONST, JUMP_IF_FALSE): LOCAL_OP_CONST_JUMP,
}


_THREADED = {
    BINARY_STORE,
    PUSH_LOCAL,
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


def _hidden(name: Any) -> bool:
    """A hidden local is not in the record: a reader could not recompute a write from it."""
    return type(name) is str and name[:2] == "__"


def _derived_write(
    code: Code, at: int, op: int, arg: Any, ops: list[int], args: list[Any], pc: int
) -> tuple[Any, ...] | None:
    """For a STEP_NEXT (at `pc`) whose next instruction is a whole `name = a <op> b` with an
    int operator on visible locals (b an int if a constant): (its log entry, a, b, int fn,
    name, next pc, b is a local), what a recording machine logs the step and the write with,
    as one entry without the value, when a and b are ints (`W_STEP_WRITE`). The same for
    `name = a <op> (c <op> d)`, b being the inner pair (`_nested_write`). For `xs.push(v)`
    (PUSH_LOCAL): ({oid: its entry}, xs, None, None, v, next pc, False), which the machine
    logs as one `W_STEP_PUSH` when the recorder lets it log xs's pushes (`step_push`). For a
    loop head (FOR_RANGE, FOR_EACH): (its `W_STEP_LOCAL` entry, "" (no operand), the op, None,
    the loop variable, 0, False), which the machine logs with the variable's value when the
    loop goes on. Else None."""
    if at >= len(code.markers):
        return None
    if op == PUSH_LOCAL:  # `xs.push(v)`: the machine logs its step and push as one entry
        xs, v, next_pc = arg
        if _hidden(xs) or _hidden(v):
            return None
        return ({}, xs, None, None, v, next_pc, False)  # ({oid: entry}, list, -, -, item)
    if op == FOR_RANGE or op == FOR_EACH:  # a loop head: its step and the variable's write
        var = arg[2]
        if _hidden(var):
            return None
        return ((W_STEP_LOCAL, code.markers[at], var), "", op, None, var, 0, False)
    if op == LOAD_LOCAL:
        return _nested_write(code, at, arg, ops, args, pc + 2)
    if op not in (LOCAL_OP_LOCAL_STORE, LOCAL_OP_CONST_STORE):
        return None
    x, b, _fn, fast, name, next_pc = arg
    b_local = op == LOCAL_OP_LOCAL_STORE
    if fast is None or _hidden(x) or _hidden(name) or (b_local and _hidden(b)):
        return None
    entry = (W_STEP_WRITE, code.markers[at], name, x, b, INT_OP_INDEX[fast], b_local)
    return (entry, x, b, fast, name, next_pc, b_local)


def _nested_write(
    code: Code, at: int, x: str, ops: list[int], args: list[Any], pc: int
) -> tuple[Any, ...] | None:
    """`name = x <op> (c <op> d)`: LOAD_LOCAL x (before `pc`), then `c <op> d` as one
    LOCAL_OP_{LOCAL,CONST}, then BINARY_STORE; both operators on ints as plain Python. Its
    second operand is `(c, d, op index, d is a local)`, and in place of "b is a local" the
    machine's derived tuple has the function that computes it (None unless two ints)."""
    if pc >= len(ops) or ops[pc] not in (LOCAL_OP_LOCAL, LOCAL_OP_CONST):
        return None
    c, d, _fn, inner, inner_next = args[pc]
    if inner is None or inner_next >= len(ops) or ops[inner_next] != BINARY_STORE:
        return None
    fn, name, next_pc = args[inner_next]
    fast = INT_FAST.get(fn)
    d_local = ops[pc] == LOCAL_OP_LOCAL
    if fast is None or _hidden(x) or _hidden(name) or _hidden(c) or (d_local and _hidden(d)):
        return None
    spec = (c, d, INT_OP_INDEX[inner], d_local)
    entry = (W_STEP_WRITE, code.markers[at], name, x, spec, INT_OP_INDEX[fast], W_NESTED)
    return (entry, x, spec, fast, name, next_pc, nested_value(c, d, inner, d_local))


def step_push(entries: dict[int, Any], marker: int, oid: int, name: str) -> tuple[Any, ...]:
    """The entry a statement `xs.push(v)` logs for the list `oid`: its step marker and the push
    in one (`W_STEP_PUSH`), kept for the next time (for a few lists a statement)."""
    entry = (W_STEP_PUSH, marker, oid, name)
    if len(entries) < 64:
        entries[oid] = entry
    return entry


def nested_value(
    c: str, d: Any, inner: Callable[[Any, Any], Any], d_local: bool
) -> Callable[[dict[str, Any]], Any]:
    """What computes `c <op> d` from the frame's locals for a nested derived write: the value
    when both are ints, else None (the machine then runs the statement's instructions)."""
    if d_local:

        def two_locals(values: dict[str, Any]) -> Any:
            a, b = values.get(c), values.get(d)
            return inner(a, b) if type(a) is int and type(b) is int else None

        return two_locals

    def local_and_const(values: dict[str, Any]) -> Any:
        a = values.get(c)
        return inner(a, d) if type(a) is int else None

    return local_and_const


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
    for pc in range(n - 3):
        if (
            new_ops[pc] == LOAD_LOCAL
            and ops[pc + 1] == LOAD_LOCAL
            and ops[pc + 2] == CALL_METHOD
            and args[pc + 2] == ("push", 1)
            and ops[pc + 3] == POP
        ):
            new_ops[pc], new_args[pc] = PUSH_LOCAL, (args[pc], args[pc + 1], pc + 4)
    for pc in range(n - 1):
        if new_ops[pc] in _THREADED:  # its next instruction a JUMP: go to the JUMP's target
            arg = new_args[pc]
            new_args[pc] = (*arg[:-1], _through_jumps(ops, args, arg[-1]))
    for pc in range(n - 1):
        if ops[pc] == STEP and ops[pc + 1] != STEP:
            at = args[pc]
            new_ops[pc] = STEP_NEXT
            nxt, nxt_arg = new_ops[pc + 1], new_args[pc + 1]
            derived = _derived_write(code, at, nxt, nxt_arg, new_ops, new_args, pc)
            new_args[pc] = (at, code.locations[at], nxt, nxt_arg, pc + 2, derived)
    ops[:] = new_ops
    args[:] = new_args
