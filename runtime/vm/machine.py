"""Provides the explicit-stack machine that runs compiled Agency code.

All execution state is data on the `Machine`: the frame stack, module globals, shared values,
message threads, output, usage, checkpoints and the effect journal. No Python recursion holds
program state, so the machine can stop at any step boundary, be snapshotted, and be rebuilt in
another process (`runtime.vm.checkpoints`).

Recording: when `wlog` is a list, every write the program makes is appended to it as a small
tuple (see `W_*` below) and `on_step` is called at each step boundary. The recorder turns those
into per-step deltas; the machine never copies its state per step.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from runtime.errors import AgencyRuntimeError
from runtime.vm.boundary import host_error
from runtime.vm.builtins_fork import BranchCancelled
from runtime.vm.builtins_guard import next_poll, step_poll, timing
from runtime.vm.calls import CallingMachine
from runtime.vm.checkpoints import apply_restore
from runtime.vm.classes import items_of
from runtime.vm.frames import (
    Decision,
    ExitSignal,
    PauseSignal,
    RejectSignal,
    RestoreSignal,
    UnwindSignal,
)
from runtime.vm.fuse import step_push
from runtime.vm.limits import SMALL, check_array_length, out_of_memory
from runtime.vm.machine_state import NEVER
from runtime.vm.methods import (
    checked,
)
from runtime.vm.operations import (
    build_object,
    destructure,
    get_index,
    match_pattern,
    range_bounds,
    slice_value,
    spread_items,
)
from runtime.vm.values import (
    Closure,
    JSArray,
    JSMap,
    JSObject,
    JSSet,
    Result,
    a_type,
    js_add,
    js_keys,
    to_number,
    to_str,
    truthy,
)
from runtime.vm.writelog import (
    INTERRUPTED,
    PLAIN,
    RUNNING,
    W_ACTIVE,
    W_SHARED,
    W_THREAD,
)


class Machine(CallingMachine):
    """Runs one program from one entry node. Use `run()` / `step()` / `run_until()`."""

    __slots__ = ()

    # -- public API -------------------------------------------------------------------------

    def run(self) -> Any:
        """Run to the end (or to an unanswered interrupt). Returns the result."""
        self.stop_at = math.inf
        self._run()
        return self.result

    def poll_time_guards(self) -> bool:
        """A step boundary where the running time guards are due a look (builtins_guard's
        `step_poll`): True when it pushed a check of one to run before the statement."""
        self._poll_at = next_poll(self)
        if step_poll(self):
            return True
        if not timing(self):  # none runs: no looks until one begins (`poll_soon`)
            self._poll_at = NEVER
        return False

    def step(self, n: int = 1) -> None:
        """Run until `n` more steps have started (or the run ends)."""
        self.stop_at = float(self.step_index + n)
        self._run()

    def run_until(self, predicate: Callable[[Machine], bool], limit: int = 10**9) -> bool:
        """Step until `predicate(machine)` holds at a step boundary; True if it did."""
        for _ in range(limit):
            if self.done or self.status == INTERRUPTED:
                return False
            self.step()
            if predicate(self):
                return True
        return False

    def answer_interrupt(self, decision: Decision) -> None:
        """Answer the pending interrupt; the next `run()` continues with it."""
        self.answer = decision
        self.pending = None
        if self.status == INTERRUPTED:
            self.status = RUNNING

    # -- helpers used by builtins -------------------------------------------------------------

    # -- the loop -----------------------------------------------------------------------------

    def _run(self) -> None:
        if self.done:
            return
        if self.status == INTERRUPTED and self.answer is None:
            return
        self.status = RUNNING
        self.stopped_by = None
        while True:
            try:
                self._loop()
                if self.reenter:  # a time guard's check was pushed at a step boundary
                    self.reenter = False
                    continue
                return
            except RestoreSignal as sig:
                try:
                    apply_restore(self, sig.checkpoint, sig.options)
                except AgencyRuntimeError as err:
                    if not self._raise(err):
                        return
                except Exception as why:  # noqa: BLE001 - a damaged checkpoint, never a crash
                    if not self._raise(AgencyRuntimeError(f"restore: damaged checkpoint ({why})")):
                        return
            except RejectSignal as rejected:
                self._reject(rejected.value)
            except UnwindSignal as unwind:
                self._unwind(unwind.depth, unwind.value)
            except BranchCancelled:
                pass  # a race branch lost: its frames are gone, the race frame goes on
            except ExitSignal as ended:
                self.exit_code = ended.code
                self._finish(None)
                return
            except PauseSignal as paused:  # (not `sig`: mypyc types a name by its first use)
                self.status = INTERRUPTED
                self.pending = paused.payload
                return
            except AgencyRuntimeError as err:
                if not self._raise(err):
                    return
            except RecursionError:
                if not self._raise(AgencyRuntimeError("value is too deeply nested")):
                    return
            except MemoryError:
                if not self._raise(out_of_memory()):
                    return
            except (ValueError, ArithmeticError) as exc:
                # An operator given a value it cannot take (Infinity as an index, a number too
                # large); a TypeError, KeyError or AttributeError here is a bug in agency and
                # ends the run as an internal error (builtins convert theirs: `_call_builtin`).
                if not self._raise(host_error("this statement", exc)):
                    return

    def _loop(self) -> None:  # noqa: C901 - the dispatch loop is one function for speed
        frames = self.frames
        glob = self.globals
        while True:
            frame = frames[-1]
            code = frame.code
            ops = code.ops
            oargs = code.args
            stack = frame.stack
            L = frame.locals
            pc = frame.pc
            depth = len(frames) - 1
            wlog = self.wlog
            markers = code.markers
            push = stack.append
            pop = stack.pop
            try:
                while True:
                    op = ops[pc]
                    arg = oargs[pc]
                    pc += 1
                    if op >= 62:  # superinstructions (runtime/vm/fuse.py); others fall through
                        if op == 62:  # STEP_NEXT (location index, location, op, arg, next pc,
                            # derived write): STEP (below) and the instruction after it, in one
                            # dispatch.
                            frame.stmt_pc = pc - 1
                            frame.stmt_sp = len(stack)
                            fused: tuple[int, Any, int, Any, int, Any] = arg  # typed for mypyc
                            at, self.location, op, next_arg, next_pc, derived = fused
                            step = self.step_index = self.step_index + 1
                            if step >= self.step_limit:  # hooks, flush, stop, breakpoints
                                frame.pc = pc
                                if self.at_limit(markers[at]):
                                    return
                            elif wlog is not None:
                                if derived is not None:  # `name = a <op> b`, an int operator
                                    dw: tuple[Any, str, Any, Any, str, int, Any] = derived
                                    entry, x, b, fast, name, after, b_local = dw
                                    a = L.get(x)
                                    if b_local:  # a local, or `c <op> d` (fuse.nested_value)
                                        b = L.get(b) if b_local is True else b_local(L)
                                    if type(a) is int and type(b) is int:
                                        # The step and the write as one entry, without the
                                        # value: a reader recomputes it (W_STEP_WRITE).
                                        L[name] = fast(a, b)
                                        wlog.append(entry)
                                        pc = after
                                        continue
                                    if not x:  # a loop head, b its FOR_RANGE or FOR_EACH:
                                        # the step and the loop variable's write as one entry
                                        # (W_STEP_LOCAL), then the value
                                        _, slot, var, end = next_arg  # (FOR_EACH: end is its index)
                                        if b == 70:  # FOR_RANGE (else FOR_EACH)
                                            v = L[slot]
                                            if not v >= L[end]:  # (as FOR_RANGE: NaN too)
                                                L[slot] = v + 1
                                                L[var] = v
                                                wlog.append(entry)
                                                wlog.append(v)
                                                pc = next_pc
                                                continue
                                        else:
                                            seq = L[slot]
                                            i = L[end]
                                            if i < len(seq):
                                                L[end] = i + 1
                                                v = L[var] = seq[i]
                                                if type(v) not in PLAIN:  # (defines it first)
                                                    v = self.rec.enc_now(v)
                                                wlog.append(entry)
                                                wlog.append(v)
                                                pc = next_pc
                                                continue
                                    elif fast is None:  # `a.push(v)`, v the local `name`: the
                                        # step and the push as one entry (W_STEP_PUSH) when
                                        # the recorder lets the machine log a's pushes
                                        lst: Any = a  # (a list, if the recorder knows it)
                                        head = self.rec.pushes.get(id(lst))
                                        v = L.get(name)
                                        if (
                                            head is not None
                                            and type(v) in PLAIN
                                            and len(lst) < SMALL
                                            and (not self.frozen or id(lst) not in self.frozen)
                                        ):
                                            lst.append(v)
                                            e = entry.get(head[1])
                                            if e is None:
                                                e = step_push(entry, markers[at], head[1], name)
                                            wlog.append(e)
                                            pc = after
                                            continue
                                wlog.append(markers[at])
                            elif derived is not None:  # unrecorded: the same shortcut, which
                                # saves `name = a <op> (c <op> d)` two dispatches
                                dw = derived
                                entry, x, b, fast, name, after, b_local = dw
                                if fast is not None:
                                    a = L.get(x)
                                    if b_local:
                                        b = L.get(b) if b_local is True else b_local(L)
                                    if type(a) is int and type(b) is int:
                                        L[name] = fast(a, b)
                                        pc = after
                                        continue
                            arg = next_arg
                            pc = next_pc
                        if op >= 63:  # (a STEP_NEXT's next instruction may be one)
                            if op == 63:  # LOCAL_OP_LOCAL_STORE (a, b, fn, int fn, name, next pc)
                                lls: tuple[str, str, Any, Any, str, int] = arg
                                x, y, fn, fast, name, pc = lls
                                a = L.get(x)
                                b = L.get(y)
                                if fast is not None and type(a) is int and type(b) is int:
                                    v = L[name] = fast(a, b)  # a number or a boolean
                                    if wlog is not None:
                                        wlog.append(name)
                                        wlog.append(v)
                                    continue
                                v = L[name] = fn(a, b)
                                if wlog is not None:
                                    e = v if type(v) in PLAIN else self.rec.enc_now(v)
                                    wlog.append(name)
                                    wlog.append(e)
                                continue
                            if op == 64:  # LOCAL_OP_CONST_STORE (a, b, fn, int fn, name, next pc)
                                lcs: tuple[str, Any, Any, Any, str, int] = arg
                                x, b, fn, fast, name, pc = lcs
                                a = L.get(x)
                                if fast is not None and type(a) is int:
                                    v = L[name] = fast(a, b)  # a number or a boolean
                                    if wlog is not None:
                                        wlog.append(name)
                                        wlog.append(v)
                                    continue
                                v = L[name] = fn(a, b)
                                if wlog is not None:
                                    e = v if type(v) in PLAIN else self.rec.enc_now(v)
                                    wlog.append(name)
                                    wlog.append(e)
                                continue
                            if op == 72:  # BINARY_STORE (fn, name, next pc)
                                bs: tuple[Any, str, int] = arg
                                fn, name, next_pc = bs
                                b = pop()
                                a = pop()
                                pc = next_pc
                                if fn is js_add and type(a) is int and type(b) is int:
                                    v = L[name] = a + b
                                    if wlog is not None:
                                        wlog.append(name)
                                        wlog.append(v)
                                    continue
                                v = L[name] = fn(a, b)
                                if wlog is not None:
                                    e = v if type(v) in PLAIN else self.rec.enc_now(v)
                                    wlog.append(name)
                                    wlog.append(e)
                                continue
                            if op == 70:  # FOR_RANGE (target, slot, var, end slot): RANGE_NEXT
                                fr: tuple[int, str, str, str] = arg
                                target, slot, var, end_slot = fr
                                i = L[slot]
                                if i >= L[end_slot]:
                                    pc = target
                                    continue
                                L[slot] = i + 1
                                L[var] = i
                                if wlog is not None:
                                    wlog.append(var)
                                    wlog.append(i)
                                continue
                            if op == 71:  # FOR_EACH (target, slot, var, index slot)
                                # ITER_NEXT without a second variable
                                fe: tuple[int, str, str, str] = arg
                                target, slot, var, index_slot = fe
                                seq = L[slot]
                                i = L[index_slot]
                                if i >= len(seq):
                                    pc = target
                                    continue
                                L[index_slot] = i + 1
                                v = seq[i]
                                L[var] = v
                                if wlog is not None:
                                    e = v if type(v) in PLAIN else self.rec.enc_now(v)
                                    wlog.append(var)
                                    wlog.append(e)
                                continue
                            if op == 65:  # LOCAL_OP_CONST_JUMP (a, b, fn, int fn, target, next pc)
                                lcj: tuple[str, Any, Any, Any, int, int] = arg
                                x, b, fn, fast, target, pc = lcj
                                a = L.get(x)
                                v = fast(a, b) if fast is not None and type(a) is int else fn(a, b)
                                if v is not True and (v is False or v is None or not truthy(v)):
                                    pc = target
                                continue
                            if op == 66:  # LOCAL_OP_LOCAL_JUMP (a, b, fn, int fn, target, next pc)
                                llj: tuple[str, str, Any, Any, int, int] = arg
                                x, y, fn, fast, target, pc = llj
                                a = L.get(x)
                                b = L.get(y)
                                if fast is not None and type(a) is int and type(b) is int:
                                    v = fast(a, b)
                                else:
                                    v = fn(a, b)
                                if v is not True and (v is False or v is None or not truthy(v)):
                                    pc = target
                                continue
                            if op == 67:  # LOCAL_OP_CONST (a, b, fn, int fn, next pc)
                                lc: tuple[str, Any, Any, Any, int] = arg
                                x, b, fn, fast, pc = lc
                                a = L.get(x)
                                push(
                                    fast(a, b) if fast is not None and type(a) is int else fn(a, b)
                                )
                                continue
                            if op == 68:  # LOCAL_OP_LOCAL (a, b, fn, int fn, next pc)
                                ll: tuple[str, str, Any, Any, int] = arg
                                x, y, fn, fast, pc = ll
                                a = L.get(x)
                                b = L.get(y)
                                if fast is not None and type(a) is int and type(b) is int:
                                    push(fast(a, b))
                                else:
                                    push(fn(a, b))
                                continue
                            if op == 69:  # OP_CONST_JUMP (b, fn, int fn, target, next pc)
                                ocj: tuple[Any, Any, Any, int, int] = arg
                                b, fn, fast, target, pc = ocj
                                a = pop()
                                v = fast(a, b) if fast is not None and type(a) is int else fn(a, b)
                                if v is not True and (v is False or v is None or not truthy(v)):
                                    pc = target
                                continue
                            if op == 74:  # PUSH_LOCAL (array, item, next pc)
                                # `xs.push(v)` as a statement, both locals: Machine.push, inlined
                                # (calling it costs the array loop 8%)
                                pl: tuple[str, str, int] = arg
                                x, y, next_pc = pl
                                arr = L.get(x)
                                if type(arr) is JSArray and (
                                    not self.frozen or id(arr) not in self.frozen
                                ):
                                    if len(arr) >= SMALL:
                                        check_array_length(len(arr) + 1)
                                    v = L.get(y)
                                    arr.append(v)
                                    if wlog is not None:
                                        rec = self.rec
                                        head = rec.pushes.get(id(arr))
                                        if head is not None and type(v) in PLAIN:
                                            wlog.append(head)
                                            wlog.append(v)
                                        else:
                                            rec.log_push(arr, v)
                                    pc = next_pc
                                    continue
                                push(arr)  # anything else: its instructions (LOAD_LOCAL first)
                                continue
                    if op == 0:  # STEP
                        frame.stmt_pc = pc - 1
                        frame.stmt_sp = len(stack)
                        step = self.step_index = self.step_index + 1
                        self.location = code.locations[arg]
                        self.call_index = 0
                        if step >= self.step_limit:  # hooks, flush, stop, breakpoints
                            frame.pc = pc
                            if self.at_limit(markers[arg]):
                                return
                        elif wlog is not None:
                            # Recording: a step marker in the write log, processed in bulk.
                            wlog.append(markers[arg])
                    elif op == 1:  # LOAD_LOCAL
                        push(L.get(arg))
                    elif op == 2:  # STORE_LOCAL
                        v = pop()
                        L[arg] = v
                        if wlog is not None:
                            e = v if type(v) in PLAIN else self.rec.enc_now(v)
                            wlog.append(arg)
                            wlog.append(e)
                    elif op == 3:  # CONST
                        push(arg)
                    elif op == 4:  # BINARY
                        b = pop()
                        a = stack[-1]
                        if arg is js_add and type(a) is int and type(b) is int:
                            stack[-1] = a + b
                        else:
                            stack[-1] = arg(a, b)
                    elif op == 5:  # JUMP
                        pc = arg
                    elif op == 6:  # JUMP_IF_FALSE
                        v = pop()
                        if v is False or v is None or not truthy(v):
                            pc = arg
                    elif op == 7:  # LOAD_GLOBAL
                        if arg in glob:
                            push(glob[arg])
                        else:
                            push(self._load_name(arg))
                    elif op == 8:  # STORE_GLOBAL
                        v = pop()
                        glob[arg] = v
                        if wlog is not None:
                            wlog.append((2, arg, v if type(v) in PLAIN else self.rec.enc_now(v)))
                    elif op == 9:  # CALL
                        frame.pc = pc
                        if self._call(frame, arg, pc):
                            break
                        pc = frame.pc
                    elif op == 10:  # RETURN
                        v = pop()
                        frame.pc = pc
                        self._return(v)
                        if not frames:
                            return
                        break
                    elif op == 11:  # GET_MEMBER
                        stack[-1] = self.methods(self, stack[-1], arg, None)
                    elif op == 12:  # GET_INDEX
                        i = pop()
                        stack[-1] = get_index(stack[-1], i)
                    elif op == 13:  # CALL_METHOD
                        frame.pc = pc
                        name, spec = arg
                        if self._call_method(frame, name, spec):
                            break
                        pc = frame.pc
                    elif op == 14:  # POP
                        pop()
                    elif op == 15:  # ITER_NEXT (target, slot, var, second)
                        it: tuple[int, str, str, str | None] = arg
                        target, slot, var, second = it
                        seq = L[slot]
                        ikey = slot + "i"
                        i = L[ikey]
                        if i >= len(seq):
                            pc = target
                            continue
                        L[ikey] = i + 1
                        okey = slot + "o"
                        obj = L.get(okey)
                        if obj is not None:
                            first, sec = seq[i], obj.get(seq[i])
                        else:
                            first, sec = seq[i], i
                        L[var] = first
                        if wlog is not None:
                            e = first if type(first) in PLAIN else self.rec.enc_now(first)
                            wlog.append(var)
                            wlog.append(e)
                        if second is not None:
                            L[second] = sec
                            if wlog is not None:
                                e = sec if type(sec) in PLAIN else self.rec.enc_now(sec)
                                wlog.append(second)
                                wlog.append(e)
                    elif op == 16:  # RANGE_NEXT (target, slot, var)
                        rn: tuple[int, str, str] = arg
                        target, slot, var = rn
                        i = L[slot]
                        if i >= L[slot + "e"]:
                            pc = target
                            continue
                        L[slot] = i + 1
                        L[var] = i
                        if wlog is not None:
                            wlog.append(var)
                            wlog.append(i)
                    elif op == 17:  # JUMP_IF_TRUE
                        if truthy(pop()):
                            pc = arg
                    elif op == 18:  # JUMP_IF_FALSE_KEEP
                        if not truthy(stack[-1]):
                            pc = arg
                    elif op == 19:  # JUMP_IF_TRUE_KEEP
                        if truthy(stack[-1]):
                            pc = arg
                    elif op == 20:  # JUMP_IF_NOT_NULL_KEEP
                        if stack[-1] is not None:
                            pc = arg
                    elif op == 21:  # UNARY
                        stack[-1] = arg(stack[-1])
                    elif op == 22:  # DUP
                        push(stack[-1])
                    elif op == 23:  # DUP2
                        stack.extend(stack[-2:])
                    elif op == 24:  # SWAP
                        stack[-1], stack[-2] = stack[-2], stack[-1]
                    elif op == 25:  # SET_MEMBER
                        v = pop()
                        self.set_key(pop(), arg, v)
                    elif op == 26:  # SET_INDEX
                        v = pop()
                        i = pop()
                        self.set_key(pop(), i, v)
                    elif op == 27:  # BUILD_ARRAY
                        if arg:
                            items = JSArray(stack[-arg:])
                            del stack[-arg:]
                            push(items)
                        else:
                            push(JSArray())
                    elif op == 28:  # BUILD_ARRAY_SPREAD
                        n = len(arg)
                        values = stack[-n:]
                        del stack[-n:]
                        out = JSArray()
                        for flag, v in zip(arg, values):
                            if flag:
                                out.extend(spread_items(v))
                            else:
                                out.append(v)
                        if len(out) > SMALL:
                            check_array_length(len(out))
                        push(out)
                    elif op == 29:  # BUILD_OBJECT
                        n = len(arg)
                        if n:
                            values = stack[-n:]
                            del stack[-n:]
                            push(JSObject(zip(arg, values)))
                        else:
                            push(JSObject())
                    elif op == 30:  # BUILD_OBJECT_SPREAD
                        push(build_object(stack, arg))
                    elif op == 31:  # BUILD_STRING
                        if arg:
                            parts = stack[-arg:]
                            del stack[-arg:]
                            push(
                                checked("".join(p if type(p) is str else to_str(p) for p in parts))
                            )
                        else:
                            push("")
                    elif op == 32:  # SLICE
                        end = pop()
                        start = pop()
                        stack[-1] = slice_value(stack[-1], start, end)
                    elif op == 33:  # ITER_INIT slot
                        v = pop()
                        t = type(v)
                        if t is JSArray:
                            seq, obj = v, None
                        elif t is JSObject:
                            seq, obj = JSArray(js_keys(v)), v  # index keys first, as JS
                        elif t is str:
                            seq, obj = JSArray(v), None
                        elif v is None:
                            seq, obj = JSArray(), None
                        elif t is JSSet or t is JSMap:  # as JavaScript's for…of
                            seq, obj = JSArray(items_of(v, "for")), None
                        else:
                            raise AgencyRuntimeError(f"cannot iterate over {a_type(v)}")
                        L[arg] = seq
                        L[arg + "i"] = 0
                        L[arg + "o"] = obj
                    elif op == 34:  # RANGE_INIT slot
                        end = pop()
                        start = pop()
                        s, e = range_bounds(start, end)
                        L[arg] = s
                        L[arg + "e"] = e
                    elif op == 35:  # UPDATE_LOCAL (name, delta)
                        name, delta = arg
                        old = L.get(name)
                        if type(old) is not int:
                            old = to_number(old)
                        new = old + delta
                        L[name] = new
                        push(old)
                        if wlog is not None:
                            wlog.append(name)
                            wlog.append(new)
                    elif op == 36:  # UPDATE_GLOBAL
                        name, delta = arg
                        old = to_number(glob.get(name))
                        new = old + delta
                        glob[name] = new
                        push(old)
                        if wlog is not None:
                            wlog.append((2, name, new))
                    elif op == 37:  # UPDATE_MEMBER (name, delta)
                        name, delta = arg
                        obj = pop()
                        old = to_number(self.methods(self, obj, name, None))
                        self.set_key(obj, name, old + delta)
                        push(old)
                    elif op == 38:  # UPDATE_INDEX delta
                        i = pop()
                        obj = pop()
                        old = to_number(get_index(obj, i))
                        self.set_key(obj, i, old + arg)
                        push(old)
                    elif op == 39:  # LOAD_SHARED
                        push(self.shared.get(arg))
                    elif op == 40:  # STORE_SHARED
                        v = pop()
                        if arg in self.statics:
                            if arg in self.shared:
                                raise AgencyRuntimeError(
                                    f"cannot assign to `{arg}`: it is a static constant"
                                )
                            self.freeze(v, deep=True)  # immutable at every depth
                        self.shared[arg] = v
                        if wlog is not None:
                            wlog.append(
                                (W_SHARED, arg, v if type(v) in PLAIN else self.rec.enc_now(v))
                            )
                    elif op == 57:  # UPDATE_SHARED
                        name, delta = arg
                        old = to_number(self.shared.get(name))
                        new = old + delta
                        self.shared[name] = new
                        push(old)
                        if wlog is not None:
                            wlog.append((W_SHARED, name, new))
                    elif op == 41:  # MATCH (pattern, names)
                        pattern, names = arg
                        binds: dict[str, Any] = {}
                        if match_pattern(pattern, stack[-1], binds, self.program.types):
                            pop()
                            for name in names:
                                push(binds.get(name))
                            push(True)
                        else:
                            stack[-1] = False
                    elif op == 42:  # DESTRUCTURE (pattern, names)
                        pattern, names = arg
                        binds = {}
                        destructure(pattern, pop(), binds)
                        for name in names:
                            push(binds.get(name))
                    elif op == 43:  # THREAD_PUSH kind
                        tid = str(self.thread_counter)
                        self.thread_counter += 1
                        base = (
                            [dict(m) for m in self.threads.get(self.active_thread(), [])]
                            if arg == "subthread"
                            else []
                        )
                        self.threads[tid] = base
                        frame.threads.append(tid)
                        if wlog is not None:
                            wlog.append((W_THREAD, tid, tuple(base)))
                            wlog.append((W_ACTIVE, tid))
                    elif op == 44:  # THREAD_POP
                        frame.threads.pop()
                        if wlog is not None:
                            wlog.append((W_ACTIVE, self.active_thread()))
                    elif op == 45:  # HANDLER_PUSH
                        frame.handlers.append(arg)
                    elif op == 46:  # HANDLER_POP
                        frame.handlers.pop()
                    elif op == 47:  # TRAP_PUSH (target, push_failure)
                        frame.traps.append((arg[0], len(stack), arg[1]))
                    elif op == 48:  # TRAP_POP
                        frame.traps.pop()
                    elif op == 49:  # UNWRAP_OR_JUMP
                        v = stack[-1]
                        if type(v) is Result:
                            if v.ok:
                                stack[-1] = v.value
                            else:
                                pop()
                                pc = arg
                    elif op == 50:  # PIPE_PREP
                        v = stack[-1]
                        if type(v) is Result:
                            if v.ok:
                                stack[-1] = v.value
                            else:
                                pc = arg
                    elif op == 51:  # ARRAY_APPEND
                        v = pop()
                        arr = pop()
                        self.splice(arr, len(arr), 0, (v,))
                    elif op == 52:  # MARK_STEP kind
                        self.step_index += 1
                        self.call_index = 0
                        loc = self.current_location()
                        if loc is not None:
                            self.location = loc
                        hook = self.on_step  # (mypyc calls `self.on_step(…)` as a method)
                        if hook is not None:
                            frame.pc = pc
                            hook(self, arg)
                        elif self.on_mark is not None:
                            frame.pc = pc
                            self.on_mark(self, arg)
                        if self.step_index >= self.stop_at:
                            frame.pc = pc
                            self.stopped_by = "step"
                            return
                    elif op == 53:  # BREAKPOINT label
                        self.event("debugger", arg or "debugger()", {"label": arg})
                        if self.stop_on_debugger:
                            frame.pc = pc
                            self.stopped_by = "debugger"
                            return
                    elif op == 54:  # ENTER_NODE
                        frame.pc = pc
                        self._enter_node()
                        break
                    elif op == 55:  # HALT
                        frame.pc = pc
                        self._finish(pop() if stack else None)
                        return
                    elif op == 56:  # LOAD_NAME
                        if arg in L:
                            push(L[arg])
                        else:
                            push(self._load_name(arg))
                    elif op == 58:  # LOAD_OUTER (a handler body reads its opener's variable)
                        push(frames[self._outer_index(L, arg)].locals.get(arg))
                    elif op == 59:  # STORE_OUTER
                        v = pop()
                        at = self._outer_index(L, arg)
                        frames[at].locals[arg] = v
                        if wlog is not None:
                            wlog.append(
                                (1, at, arg, v if type(v) in PLAIN else self.rec.enc_now(v))
                            )
                    elif op == 60:  # UPDATE_OUTER (name, delta)
                        name, delta = arg
                        at = self._outer_index(L, name)
                        old = frames[at].locals.get(name)
                        if type(old) is not int:
                            old = to_number(old)
                        new = old + delta
                        frames[at].locals[name] = new
                        push(old)
                        if wlog is not None:
                            wlog.append((1, at, name, new))
                    elif op == 61:  # MAKE_CLOSURE (a block over this frame)
                        push(Closure(arg, depth, code.name))
                    elif op == 73:  # JUMP_IF_BOUND (target, name)
                        if arg[1] in L:
                            pc = arg[0]
                    else:  # pragma: no cover - compiler and machine disagree
                        raise AgencyRuntimeError(f"internal error: unknown opcode {op}")
            except PauseSignal:
                raise  # the call already rewound frame.pc to run again
            except BaseException:
                frame.pc = pc
                raise

    # -- names, calls, returns ----------------------------------------------------------------

    # -- errors ---------------------------------------------------------------------------
