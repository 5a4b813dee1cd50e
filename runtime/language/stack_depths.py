"""Provides `stack_depths(code)`: the operand-stack depths a function's frame can have at each
pc, found by walking its bytecode from pc 0 with an empty stack along every edge (fall-through,
jumps, loop exits, a trap's catch target).

A checkpoint's frames are checked against it (`runtime.vm.checkpoints`): a frame at `pc` holds
exactly one of the depths at `pc` (a caller waiting on its call, one fewer: the call's value
is pushed when it returns). So a pc moved to another statement, or to another call's return
point, whose operand stack does not have that shape is refused before anything runs.

A depth is tracked with what is known of the value on top (truthy, falsy, or nothing), so the
mismatch path of `MATCH` (False on top, the binders not pushed), its success path (the binders,
then True) and a validator's rejection (a constant `false`, jumping back) meet at the
`JUMP_IF_FALSE` after it without mixing: each takes only its own edge. Superinstructions (`runtime.vm.fuse`, written over the first instruction of the sequence
they stand for) are read as that first instruction: every other instruction is still in place.
"""

from __future__ import annotations

from typing import Any

from runtime.language import bytecode as B
from runtime.language.bytecode import Code
from runtime.language.identity import ByIdentity

# (depth, what is known of the top value: True truthy, False falsy, None nothing)
State = tuple[int, bool | None]

MAX_DEPTH = 100_000  # deeper than any compiled expression: the walk gives up (see below)

# Instructions that only change the depth, by a fixed amount.
_FIXED = {
    B.STEP: 0,
    B.LOAD_LOCAL: 1,
    B.STORE_LOCAL: -1,
    B.BINARY: -1,
    B.LOAD_GLOBAL: 1,
    B.STORE_GLOBAL: -1,
    B.GET_MEMBER: 0,
    B.GET_INDEX: -1,
    B.POP: -1,
    B.UNARY: 0,
    B.DUP: 1,
    B.DUP2: 2,
    B.SWAP: 0,
    B.SET_MEMBER: -2,
    B.SET_INDEX: -3,
    B.SLICE: -2,
    B.ITER_INIT: -1,
    B.RANGE_INIT: -2,
    B.UPDATE_LOCAL: 1,
    B.UPDATE_GLOBAL: 1,
    B.UPDATE_MEMBER: 0,
    B.UPDATE_INDEX: -1,
    B.LOAD_SHARED: 1,
    B.STORE_SHARED: -1,
    B.UPDATE_SHARED: 1,
    B.THREAD_PUSH: 0,
    B.THREAD_POP: 0,
    B.HANDLER_PUSH: 0,
    B.HANDLER_POP: 0,
    B.TRAP_POP: 0,
    B.ARRAY_APPEND: -2,
    B.MARK_STEP: 0,
    B.BREAKPOINT: 0,
    B.ENTER_NODE: 1,  # the node's result, when it returns
    B.LOAD_NAME: 1,
    B.LOAD_OUTER: 1,
    B.STORE_OUTER: -1,
    B.UPDATE_OUTER: 1,
    B.MAKE_CLOSURE: 1,
}


class StackDepthError(Exception):
    """The bytecode does not have one operand-stack shape per path (never for compiled code:
    a bug in the compiler, or code this analysis does not know)."""


def unfused(op: int, arg: Any) -> tuple[int, Any]:
    """The instruction a superinstruction was written over (any other: itself)."""
    if op == B.STEP_NEXT:
        return B.STEP, arg[0]
    if op in (
        B.LOCAL_OP_LOCAL_STORE,
        B.LOCAL_OP_CONST_STORE,
        B.LOCAL_OP_CONST_JUMP,
        B.LOCAL_OP_LOCAL_JUMP,
        B.LOCAL_OP_CONST,
        B.LOCAL_OP_LOCAL,
    ):
        return B.LOAD_LOCAL, arg[0]
    if op == B.OP_CONST_JUMP:
        return B.CONST, arg[0]
    if op == B.BINARY_STORE:
        return B.BINARY, arg[0]
    if op == B.FOR_RANGE:
        return B.RANGE_NEXT, tuple(arg[:3])
    if op == B.FOR_EACH:
        return B.ITER_NEXT, (*arg[:3], None)
    if op == B.PUSH_LOCAL:
        return B.LOAD_LOCAL, arg[0]
    return op, arg


def _call_size(spec: Any) -> int:
    """The callee (or receiver) and the arguments a call pops."""
    return 1 + (spec if isinstance(spec, int) else len(spec or ()))


def _next_states(op: int, arg: Any, pc: int, state: State) -> list[tuple[int, State]]:
    """Where execution can go from `pc` in `state`, and in what state."""
    depth, known = state
    out: list[tuple[int, State]] = []
    nxt = pc + 1
    fixed = _FIXED.get(op)
    if fixed is not None:
        return [(nxt, (depth + fixed, None))]
    if op == B.CONST:  # `false` pushed for a jump back to a mismatch jump: known falsy
        return [(nxt, (depth + 1, arg if type(arg) is bool else None))]
    if op == B.JUMP:
        return [(arg, state)]
    if op in (B.JUMP_IF_FALSE, B.JUMP_IF_TRUE):
        jump_when = op == B.JUMP_IF_TRUE
        if known is not (not jump_when):
            out.append((arg, (depth - 1, None)))
        if known is not jump_when:
            out.append((nxt, (depth - 1, None)))
        return out
    if op in (B.JUMP_IF_FALSE_KEEP, B.JUMP_IF_TRUE_KEEP):
        jump_when = op == B.JUMP_IF_TRUE_KEEP
        if known is not (not jump_when):
            out.append((arg, (depth, jump_when)))
        if known is not jump_when:
            out.append((nxt, (depth, not jump_when)))
        return out
    if op == B.JUMP_IF_NOT_NULL_KEEP:
        return [(arg, (depth, None)), (nxt, (depth, False))]
    if op in (B.ITER_NEXT, B.RANGE_NEXT, B.JUMP_IF_BOUND):
        return [(arg[0], (depth, None)), (nxt, (depth, None))]
    if op == B.CALL:
        return [(nxt, (depth - _call_size(arg) + 1, None))]
    if op == B.CALL_METHOD:
        return [(nxt, (depth - _call_size(arg[1]) + 1, None))]
    if op in (B.RETURN, B.HALT):
        return []
    if op in (B.BUILD_ARRAY, B.BUILD_STRING):
        return [(nxt, (depth - arg + 1, None))]
    if op in (B.BUILD_ARRAY_SPREAD, B.BUILD_OBJECT):
        return [(nxt, (depth - len(arg) + 1, None))]
    if op == B.BUILD_OBJECT_SPREAD:
        n = sum(2 if s == "pair" else 1 for s in arg)
        return [(nxt, (depth - n + 1, None))]
    if op == B.MATCH:  # the subject: the binders and True, or False in its place
        names = arg[1]
        return [(nxt, (depth - 1 + len(names) + 1, True)), (nxt, (depth, False))]
    if op == B.DESTRUCTURE:
        return [(nxt, (depth - 1 + len(arg[1]), None))]
    if op == B.TRAP_PUSH:  # where an error goes: `frame_shapes` follows that edge
        return [(nxt, (depth, None))]
    if op == B.UNWRAP_OR_JUMP:  # a failure is popped on the way to the default
        return [(nxt, (depth, None)), (arg, (depth - 1, None))]
    if op == B.PIPE_PREP:
        return [(nxt, (depth, None)), (arg, (depth, None))]
    raise StackDepthError(f"{B.OP_NAMES.get(op, op)} at pc {pc}: no known stack effect")


# What a frame holds at a pc besides its locals: (operand-stack depth, handlers pushed, threads
# pushed, traps set: (catch target, stack depth to cut back to, whether the failure is pushed)).
Shape = tuple[int, int, int, tuple[tuple[int, int, bool], ...]]

_BLOCKS = {  # instructions that change the frame's handler or thread stack
    B.HANDLER_PUSH: (1, 0),
    B.HANDLER_POP: (-1, 0),
    B.THREAD_PUSH: (0, 1),
    B.THREAD_POP: (0, -1),
}


# Builtins that push or pop a thread of the frame calling them (a `parallel` or `fork` branch).
_THREAD_CALLS = {"__fork_branch": 1, "__fork_branch_end": -1}


def frame_shapes(code: Code) -> list[frozenset[Shape]]:
    """The shapes a frame of `code` can have at each pc (empty: unreachable), walking every
    path from pc 0 with nothing pushed, an error inside a trap included (from any instruction:
    the stack is cut back to where the trap was set, and the trap is gone). Raises
    `StackDepthError` when a path would pop an empty operand stack or grow it without bound."""
    ops, args = code.ops, code.args
    n = len(ops)
    # A walk state: (depth, what is known of the top value, handlers, threads, traps).
    Walk = tuple[int, bool | None, int, int, tuple[tuple[int, int, bool], ...]]
    seen: list[set[Walk]] = [set() for _ in range(n)]
    thread_calls = {}  # pc -> threads the call pushes (or pops)
    targets = _targets(code)
    for pc in range(n):
        name = static_callee(code, pc, targets)
        if name in _THREAD_CALLS:
            thread_calls[pc] = _THREAD_CALLS[name]
    work: list[tuple[int, Walk]] = [(0, (0, None, 0, 0, ()))]
    while work:
        pc, walk = work.pop()
        if pc == n:  # falling off the end: nothing runs there
            continue
        if not 0 <= pc < n:
            raise StackDepthError(f"`{code.name}`: a jump to pc {pc}, outside the function")
        if walk in seen[pc]:
            continue
        depth, known, handlers, threads, traps = walk
        if not 0 <= depth <= MAX_DEPTH:
            raise StackDepthError(f"`{code.name}` pc {pc}: a stack depth of {depth}")
        if handlers < 0 or threads < 0 or len(seen[pc]) > MAX_DEPTH:
            continue  # a pop of a block never pushed on this path: no run goes this way
        seen[pc].add(walk)
        if traps:  # an error here, caught by the innermost trap
            target, sp, push_failure = traps[-1]
            work.append((target, (sp + push_failure, None, handlers, threads, traps[:-1])))
        op, arg = unfused(ops[pc], args[pc])
        if op == B.TRAP_PUSH:
            target, push_failure = arg
            if target is None:
                raise StackDepthError(f"`{code.name}` pc {pc}: a trap never patched")
            traps = (*traps, (target, depth, bool(push_failure)))
        elif op == B.TRAP_POP:
            traps = traps[:-1]
        elif op in _BLOCKS:
            handlers, threads = handlers + _BLOCKS[op][0], threads + _BLOCKS[op][1]
        elif pc in thread_calls:
            threads = max(0, threads + thread_calls[pc])
        for target, (after, top) in _next_states(op, arg, pc, (depth, known)):
            if target is None:
                raise StackDepthError(f"`{code.name}` pc {pc}: a jump never patched")
            work.append((target, (after, top, handlers, threads, traps)))
    return [frozenset((w[0], w[2], w[3], w[4]) for w in walks) for walks in seen]


def stack_depths(code: Code) -> list[frozenset[int]]:
    """The operand-stack depths a frame of `code` can have at each pc (see `frame_shapes`)."""
    return [frozenset(shape[0] for shape in shapes) for shapes in frame_shapes(code)]


# (values popped, values pushed) of the instructions a statement's straight-line code runs
# before a call; the others (jumps, MATCH) end the search for the callee.
_MOVES = {
    B.STEP: (0, 0),
    B.LOAD_LOCAL: (0, 1),
    B.STORE_LOCAL: (1, 0),
    B.CONST: (0, 1),
    B.BINARY: (2, 1),
    B.LOAD_GLOBAL: (0, 1),
    B.STORE_GLOBAL: (1, 0),
    B.GET_MEMBER: (1, 1),
    B.GET_INDEX: (2, 1),
    B.POP: (1, 0),
    B.UNARY: (1, 1),
    B.SET_MEMBER: (2, 0),
    B.SET_INDEX: (3, 0),
    B.SLICE: (3, 1),
    B.ITER_INIT: (1, 0),
    B.RANGE_INIT: (2, 0),
    B.UPDATE_LOCAL: (0, 1),
    B.UPDATE_GLOBAL: (0, 1),
    B.UPDATE_MEMBER: (1, 1),
    B.UPDATE_INDEX: (2, 1),
    B.LOAD_SHARED: (0, 1),
    B.STORE_SHARED: (1, 0),
    B.UPDATE_SHARED: (0, 1),
    B.THREAD_PUSH: (0, 0),
    B.THREAD_POP: (0, 0),
    B.HANDLER_PUSH: (0, 0),
    B.HANDLER_POP: (0, 0),
    B.TRAP_PUSH: (0, 0),
    B.TRAP_POP: (0, 0),
    B.ARRAY_APPEND: (2, 0),
    B.MARK_STEP: (0, 0),
    B.BREAKPOINT: (0, 0),
    B.LOAD_NAME: (0, 1),
    B.LOAD_OUTER: (0, 1),
    B.STORE_OUTER: (1, 0),
    B.UPDATE_OUTER: (0, 1),
    B.MAKE_CLOSURE: (0, 1),
}


def _moves(op: int, arg: Any) -> tuple[int, int] | None:
    fixed = _MOVES.get(op)
    if fixed is not None:
        return fixed
    if op == B.CALL:
        return _call_size(arg), 1
    if op == B.CALL_METHOD:
        return _call_size(arg[1]), 1
    if op in (B.BUILD_ARRAY, B.BUILD_STRING):
        return arg, 1
    if op in (B.BUILD_ARRAY_SPREAD, B.BUILD_OBJECT):
        return len(arg), 1
    if op == B.BUILD_OBJECT_SPREAD:
        return sum(2 if s == "pair" else 1 for s in arg), 1
    if op == B.DESTRUCTURE:
        return 1, len(arg[1])
    return None  # a jump, a MATCH, a DUP or SWAP: the search gives up


def static_callee(
    code: Code, call_pc: int, targets: set[int] | frozenset[int] | None = None
) -> str | None:
    """The function a CALL at `call_pc` calls, when the code that pushes its callee runs
    straight to the call (no jump in between, none into it) and the callee is a constant
    function (`f(…)` for a def `f`); else None."""
    at = _callee_pusher(code, call_pc, targets)
    if at is None:
        return None
    o, a = unfused(code.ops[at], code.args[at])
    if o == B.CONST and isinstance(a, B.FuncRef):
        return a.name
    return None


def callee_local(code: Code, call_pc: int) -> str | None:
    """The local variable a CALL at `call_pc` takes its callee from (`g(…)` for a local or
    parameter `g` holding a function value), when the code runs straight from loading it to
    the call and nothing in between assigns it (`g(g = h)`); else None."""
    at = _callee_pusher(code, call_pc)
    if at is None:
        return None
    o, name = unfused(code.ops[at], code.args[at])
    if o != B.LOAD_LOCAL:
        return None
    for pc in range(at + 1, call_pc):
        o, a = unfused(code.ops[pc], code.args[pc])
        if o in (B.STORE_LOCAL, B.UPDATE_LOCAL) and (
            a == name or (type(a) is tuple and a[0] == name)
        ):
            return None
    return str(name)


def _callee_pusher(
    code: Code, call_pc: int, targets: set[int] | frozenset[int] | None = None
) -> int | None:
    """The pc of the instruction that pushed the callee of the CALL at `call_pc`, when the
    code runs straight from there to the call; else None."""
    ops, args = code.ops, code.args
    op, arg = unfused(ops[call_pc], args[call_pc])
    if op != B.CALL:
        return None
    if targets is None:
        targets = _known_targets(code)
    # From the last place another path may come in (a jump's target, the instruction after
    # one that may jump), the code runs straight to the call.
    pc = call_pc
    while pc > 0 and _moves(*unfused(ops[pc - 1], args[pc - 1])) is not None:
        pc -= 1
    pc = max([pc, *(t for t in targets if t <= call_pc)])
    pushed: list[int | None] = []  # who pushed each value since then
    while pc < call_pc:
        o, a = unfused(ops[pc], args[pc])
        moves = _moves(o, a)
        if moves is None:
            return None
        pops, pushes = moves
        del pushed[max(0, len(pushed) - pops) :]
        pushed.extend([pc] * pushes)
        pc += 1
    size = _call_size(arg)
    if size > len(pushed):
        return None
    return pushed[-size]


# The jump targets of the codes asked about last, by identity: reading a checkpoint asks them
# of the code of every frame waiting on a call, and a run's checkpoints hold frames of the same
# few codes (restoring one walked its function's instructions once per frame). They are the
# same linked or not (`unfused`).
_TARGETS: ByIdentity[Code, frozenset[int]] = ByIdentity(256)


def _known_targets(code: Code) -> frozenset[int]:
    return _TARGETS.get(code, lambda c: frozenset(_targets(c)))


def _targets(code: Code) -> set[int]:
    """Every pc a jump (or a trap's catch) may go to."""
    out: set[int] = set()
    for op, arg in zip(code.ops, code.args):
        op, arg = unfused(op, arg)
        if op in (
            B.JUMP,
            B.JUMP_IF_FALSE,
            B.JUMP_IF_TRUE,
            B.JUMP_IF_FALSE_KEEP,
            B.JUMP_IF_TRUE_KEEP,
            B.JUMP_IF_NOT_NULL_KEEP,
            B.UNWRAP_OR_JUMP,
            B.PIPE_PREP,
        ):
            out.add(arg)
        elif op in (B.ITER_NEXT, B.RANGE_NEXT, B.TRAP_PUSH, B.JUMP_IF_BOUND):
            out.add(arg[0])
    return out
