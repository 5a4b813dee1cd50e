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
from runtime.language.bytecode import Code, CompiledProgram, FuncRef, Location
from runtime.language.syntax import ast as A
from runtime.language.syntax.ast import Span
from runtime.vm import builtins
from runtime.vm.boundary import HOST_ERRORS, host_error
from runtime.vm.builtins import get_member
from runtime.vm.builtins_callbacks import ACTIVE as ACTIVE_HOOKS
from runtime.vm.builtins_callbacks import HOOKED_CALL, active_callbacks
from runtime.vm.builtins_fork import FORK_LOCAL, BranchCancelled, fork_unwound
from runtime.vm.builtins_guard import DESTRUCTIVE, destructive_return
from runtime.vm.checkpoints import apply_restore, entry_checkpoint
from runtime.vm.classes import items_of
from runtime.vm.effects import begin_destructive, end_destructive, journaled
from runtime.vm.frames import (
    Decision,
    Frame,
    PauseSignal,
    RejectSignal,
    RestoreSignal,
    TailCall,
    UnwindSignal,
)
from runtime.vm.host import Host
from runtime.vm.limits import SMALL, check_array_length, out_of_memory
from runtime.vm.link import link
from runtime.vm.types import conforms
from runtime.vm.values import (
    FUNCTION_TYPES,
    BoundFunction,
    Closure,
    JSArray,
    JSMap,
    JSObject,
    JSSet,
    Result,
    a_type,
    js_add,
    js_eq,
    to_number,
    to_str,
    truthy,
)
from runtime.vm.writelog import (
    FAILED,
    HALTED,
    INTERRUPTED,
    PLAIN,
    RUNNING,
    W_ACTIVE,
    W_MESSAGE,
    W_OUTPUT,
    W_POP_FRAME,
    W_SHARED,
    W_STATUS,
    W_THREAD,
)

DEFAULT_RESTORE_CAP = 100


class Machine:
    """Runs one program from one entry node. Use `run()` / `step()` / `run_until()`."""

    # What every step reads or writes, as slots (quicker to reach than the instance's
    # dictionary, which holds everything else).
    __slots__ = (
        "step_index",
        "location",
        "stop_at",
        "breakpoints",
        "on_step",
        "wlog_limit",
        "rec",
        "methods",
        "__dict__",
    )

    def __init__(
        self,
        program: CompiledProgram,
        node: str = "main",
        args: list[Any] | None = None,
        named_args: dict[str, Any] | None = None,
        *,
        model: Any = None,
        world: Any = None,
        restore_cap: int = DEFAULT_RESTORE_CAP,
        start: bool = True,
    ) -> None:
        self.program = link(program)
        self.functions = program.functions
        self.builtins = builtins.BUILTINS
        self.methods = builtins.call_method
        self.node = node
        self.entry_args: list[Any] = list(args or [])
        self.entry_named: dict[str, Any] = dict(named_args or {})
        self.model = model
        self.world = world if world is not None else builtins.World()
        self.restore_cap = restore_cap
        # Rolled back by restore
        self.frames: list[Frame] = []
        self.globals: dict[str, Any] = {}
        self.threads: dict[str, list[dict[str, Any]]] = {"0": []}
        # Kept across restore
        self.shared: dict[str, Any] = {}
        self.mutable: dict[str, Any] = {}
        self.statics = set(program.statics)
        self.thread_counter = 1
        self.output: list[str] = []
        self.usage = {"input_tokens": 0, "output_tokens": 0, "cost": 0.0}
        self.checkpoints: dict[int, dict[str, Any]] = {}
        self.cp_counter = 0
        self.restore_counts: dict[str, int] = {}  # per restore call site
        self.restores_of: dict[str, int] = {}  # per checkpoint site
        self.effects: dict[str, Any] = {}
        self.call_index = 0  # effect calls within the current step
        self.call_step = -1  # the step `call_index` counts for (`effects.effect_key`)
        self.llm_calls = 0
        self.nodes_traversed: list[str] = []
        # Control
        self.step_index = -1
        self.location: Location | None = None
        self.status = RUNNING
        self.result: Any = None
        self.error: AgencyRuntimeError | None = None
        self.pending: Any = None  # the unanswered interrupt while paused
        self.answer: Decision | None = None
        self.stop_at = math.inf
        self.breakpoints: set[tuple[str, int]] = set()  # (file, line)
        self.stop_on_debugger = False
        self.stopped_by: str | None = None
        self.replaying = False  # re-executing from a record: effects are not performed
        self.host = Host()  # journal, recorded effects, model routing: set by whoever runs it
        # Recording
        self.wlog: list[Any] | None = None
        self.rec: Any = None  # the recorder, which encodes containers as they are written
        self.on_step: Callable[[Machine, str], None] | None = None  # per-step hook
        self.on_flush: Callable[[Machine], None] | None = None  # the write log is long
        self.on_mark: Callable[[Machine, str], None] | None = None  # an llm/tool step
        self.on_event: Callable[[int, str, str, dict[str, Any]], None] | None = None
        self.on_reset: Callable[[], None] | None = None  # restore replaced the state
        self.wlog_limit = 4096
        self.run_id = ""
        self.branch = 0
        if start:
            self.frames.append(Frame(program.module, {}))

    # -- public API -------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self.status in (HALTED, FAILED)

    def run(self) -> Any:
        """Run to the end (or to an unanswered interrupt). Returns the result."""
        self.stop_at = math.inf
        self._run()
        return self.result

    def step(self, n: int = 1) -> None:
        """Run until `n` more steps have started (or the run ends)."""
        self.stop_at = self.step_index + n
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

    def current_location(self) -> Location | None:
        """The location of the innermost user frame's current statement."""
        for frame in reversed(self.frames):
            code = frame.code
            if code.kind != "prelude" and code.locations:
                try:
                    idx = code.step_pcs.index(frame.stmt_pc)
                except ValueError:
                    continue
                return code.locations[idx]
        return self.location

    # -- helpers used by builtins -------------------------------------------------------------

    def log(self, record: tuple[Any, ...]) -> None:
        if self.wlog is not None:
            self.wlog.append(self.rec.enc_record(record) if self.rec is not None else record)

    def print(self, text: str) -> None:
        self.output.append(text)
        if self.wlog is not None:
            self.wlog.append((W_OUTPUT, text))
        self.world.emit(text)

    def event(self, kind: str, summary: str, data: dict[str, Any] | None = None) -> None:
        """A timeline marker; it belongs to the next step boundary (where its effect shows)."""
        if self.on_event is not None:
            # An error belongs to the statement that failed; anything else shows at the next
            # step boundary, where its effect is visible.
            step = self.step_index if kind == "error" else self.step_index + 1
            self.on_event(max(step, 0), kind, summary, data or {})

    def active_thread(self) -> str:
        for frame in reversed(self.frames):
            if frame.threads:
                return frame.threads[-1]
        return "0"

    def append_message(self, thread: str, message: dict[str, Any]) -> None:
        self.threads.setdefault(thread, []).append(message)
        if self.wlog is not None:
            self.wlog.append((W_MESSAGE, thread, message))

    def set_key(self, obj: Any, key: Any, value: Any) -> None:
        """`obj[key] = value` with JS rules, logged."""
        t = type(obj)
        if t is JSObject:
            k = key if type(key) is str else to_str(key)
            obj[k] = value
        elif t is JSArray:
            i = _index(key)
            if i is None:
                raise AgencyRuntimeError(f"cannot set property {to_str(key)!r} of an array")
            n = len(obj)
            if i < n:
                obj[i] = value
            else:
                if self.wlog is not None:
                    self.rec.log_splice(obj, n, 0, tuple([None] * (i - n) + [value]))
                obj.extend([None] * (i - n))
                obj.append(value)
                return
        elif obj is None:
            raise AgencyRuntimeError(f"cannot set property {to_str(key)!r} of null")
        else:
            raise AgencyRuntimeError(f"cannot set property {to_str(key)!r} of {a_type(obj)}")
        if self.wlog is not None:
            self.rec.log_set(obj, k if t is JSObject else i, value)

    def splice(self, arr: JSArray, start: int, delete: int, items: tuple[Any, ...]) -> JSArray:
        """The one primitive all array mutations go through (push, pop, shift, splice, …)."""
        if len(arr) + len(items) - delete > SMALL:
            check_array_length(len(arr) + len(items) - delete)
        removed = JSArray(arr[start : start + delete])
        arr[start : start + delete] = items
        if self.wlog is not None:
            self.rec.log_splice(arr, start, delete, items)
        return removed

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
                return
            except RestoreSignal as sig:
                try:
                    apply_restore(self, sig.checkpoint, sig.options)
                except AgencyRuntimeError as err:
                    if not self._raise(err):
                        return
                except Exception as exc:  # noqa: BLE001 - a damaged checkpoint, never a crash
                    if not self._raise(AgencyRuntimeError(f"restore: damaged checkpoint ({exc})")):
                        return
            except RejectSignal as rejected:
                self._reject(rejected.value)
            except UnwindSignal as unwind:
                self._unwind(unwind.depth, unwind.value)
            except BranchCancelled:
                pass  # a race branch lost: its frames are gone, the race frame goes on
            except PauseSignal as sig:
                self.status = INTERRUPTED
                self.pending = sig.payload
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
                        if op == 62:  # STEP_NEXT (location index, location, op, arg, next pc)
                            # STEP (below) and the instruction after it, in one dispatch.
                            frame.stmt_pc = pc - 1
                            frame.stmt_sp = len(stack)
                            at, loc, op, next_arg, next_pc = arg
                            self.location = loc
                            step = self.step_index = self.step_index + 1
                            if self.on_step is not None:
                                frame.pc = pc
                                self.on_step(self, "step")
                            elif wlog is not None:
                                wlog.append(markers[at])
                                if len(wlog) > self.wlog_limit:
                                    frame.pc = pc
                                    self.on_flush(self)  # type: ignore[misc]
                            if step >= self.stop_at:
                                frame.pc = pc
                                self.stopped_by = "step"
                                return
                            if self.breakpoints and (loc.file, loc.line) in self.breakpoints:
                                frame.pc = pc
                                self.stopped_by = "breakpoint"
                                return
                            arg = next_arg
                            pc = next_pc
                        if op >= 63:  # (a STEP_NEXT's next instruction may be one)
                            if op == 63:  # LOCAL_OP_LOCAL_STORE (a, b, fn, int fn, name, next pc)
                                x, y, fn, fast, name, pc = arg
                                a = L.get(x)
                                b = L.get(y)
                                if fast is not None and type(a) is int and type(b) is int:
                                    v = fast(a, b)
                                else:
                                    v = fn(a, b)
                                L[name] = v
                                if wlog is not None:
                                    wlog.append(
                                        (
                                            1,
                                            depth,
                                            name,
                                            v if type(v) in PLAIN else self.rec.enc_now(v),
                                        )
                                    )
                                continue
                            if op == 64:  # LOCAL_OP_CONST_STORE (a, b, fn, int fn, name, next pc)
                                x, b, fn, fast, name, pc = arg
                                a = L.get(x)
                                v = fast(a, b) if fast is not None and type(a) is int else fn(a, b)
                                L[name] = v
                                if wlog is not None:
                                    wlog.append(
                                        (
                                            1,
                                            depth,
                                            name,
                                            v if type(v) in PLAIN else self.rec.enc_now(v),
                                        )
                                    )
                                continue
                            if op == 65:  # LOCAL_OP_CONST_JUMP (a, b, fn, int fn, target, next pc)
                                x, b, fn, fast, target, pc = arg
                                a = L.get(x)
                                v = fast(a, b) if fast is not None and type(a) is int else fn(a, b)
                                if v is not True and (v is False or v is None or not truthy(v)):
                                    pc = target
                                continue
                            if op == 66:  # LOCAL_OP_LOCAL_JUMP (a, b, fn, int fn, target, next pc)
                                x, y, fn, fast, target, pc = arg
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
                                x, b, fn, fast, pc = arg
                                a = L.get(x)
                                push(
                                    fast(a, b) if fast is not None and type(a) is int else fn(a, b)
                                )
                                continue
                            if op == 68:  # LOCAL_OP_LOCAL (a, b, fn, int fn, next pc)
                                x, y, fn, fast, pc = arg
                                a = L.get(x)
                                b = L.get(y)
                                if fast is not None and type(a) is int and type(b) is int:
                                    push(fast(a, b))
                                else:
                                    push(fn(a, b))
                                continue
                            if op == 69:  # OP_CONST_JUMP (b, fn, int fn, target, next pc)
                                b, fn, fast, target, pc = arg
                                a = pop()
                                v = fast(a, b) if fast is not None and type(a) is int else fn(a, b)
                                if v is not True and (v is False or v is None or not truthy(v)):
                                    pc = target
                                continue
                            if op == 70:  # FOR_RANGE (target, slot, var, end slot): RANGE_NEXT
                                target, slot, var, end_slot = arg
                                i = L[slot]
                                if i >= L[end_slot]:
                                    pc = target
                                    continue
                                L[slot] = i + 1
                                L[var] = i
                                if wlog is not None:
                                    wlog.append((1, depth, var, i))
                                continue
                            if op == 71:  # FOR_EACH (target, slot, var, index slot)
                                # ITER_NEXT without a second variable
                                target, slot, var, index_slot = arg
                                seq = L[slot]
                                i = L[index_slot]
                                if i >= len(seq):
                                    pc = target
                                    continue
                                L[index_slot] = i + 1
                                v = seq[i]
                                L[var] = v
                                if wlog is not None:
                                    wlog.append(
                                        (
                                            1,
                                            depth,
                                            var,
                                            v if type(v) in PLAIN else self.rec.enc_now(v),
                                        )
                                    )
                                continue
                    if op == 0:  # STEP
                        frame.stmt_pc = pc - 1
                        frame.stmt_sp = len(stack)
                        self.step_index += 1
                        self.location = code.locations[arg]
                        self.call_index = 0
                        if self.on_step is not None:
                            frame.pc = pc
                            self.on_step(self, "step")
                        elif wlog is not None:
                            # Recording: a step marker in the write log, processed in bulk.
                            wlog.append(markers[arg])
                            if len(wlog) > self.wlog_limit:
                                frame.pc = pc
                                self.on_flush(self)  # type: ignore[misc]
                        if self.step_index >= self.stop_at:
                            frame.pc = pc
                            self.stopped_by = "step"
                            return
                        if self.breakpoints and (
                            (self.location.file, self.location.line) in self.breakpoints
                        ):
                            frame.pc = pc
                            self.stopped_by = "breakpoint"
                            return
                    elif op == 1:  # LOAD_LOCAL
                        push(L.get(arg))
                    elif op == 2:  # STORE_LOCAL
                        v = pop()
                        L[arg] = v
                        if wlog is not None:
                            wlog.append(
                                (1, depth, arg, v if type(v) in PLAIN else self.rec.enc_now(v))
                            )
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
                        stack[-1] = _get_index(stack[-1], i)
                    elif op == 13:  # CALL_METHOD
                        frame.pc = pc
                        name, spec = arg
                        if self._call_method(frame, name, spec):
                            break
                        pc = frame.pc
                    elif op == 14:  # POP
                        pop()
                    elif op == 15:  # ITER_NEXT (target, slot, var, second)
                        target, slot, var, second = arg
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
                            rec = self.rec
                            wlog.append(
                                (
                                    1,
                                    depth,
                                    var,
                                    first if type(first) in PLAIN else rec.enc_now(first),
                                )
                            )
                        if second is not None:
                            L[second] = sec
                            if wlog is not None:
                                wlog.append(
                                    (
                                        1,
                                        depth,
                                        second,
                                        sec if type(sec) in PLAIN else self.rec.enc_now(sec),
                                    )
                                )
                    elif op == 16:  # RANGE_NEXT (target, slot, var)
                        target, slot, var = arg
                        i = L[slot]
                        if i >= L[slot + "e"]:
                            pc = target
                            continue
                        L[slot] = i + 1
                        L[var] = i
                        if wlog is not None:
                            wlog.append((1, depth, var, i))
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
                                out.extend(_spread_items(v))
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
                        push(_build_object(stack, arg))
                    elif op == 31:  # BUILD_STRING
                        if arg:
                            parts = stack[-arg:]
                            del stack[-arg:]
                            push(
                                builtins.checked(
                                    "".join(p if type(p) is str else to_str(p) for p in parts)
                                )
                            )
                        else:
                            push("")
                    elif op == 32:  # SLICE
                        end = pop()
                        start = pop()
                        stack[-1] = _slice(stack[-1], start, end)
                    elif op == 33:  # ITER_INIT slot
                        v = pop()
                        t = type(v)
                        if t is JSArray:
                            seq, obj = v, None
                        elif t is JSObject:
                            seq, obj = JSArray(v.keys()), v
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
                        s, e = _int_arg(start, "range"), _int_arg(end, "range")
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
                            wlog.append((1, depth, name, new))
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
                        old = to_number(_get_index(obj, i))
                        self.set_key(obj, i, old + arg)
                        push(old)
                    elif op == 39:  # LOAD_SHARED
                        push(self.shared.get(arg))
                    elif op == 40:  # STORE_SHARED
                        v = pop()
                        if arg in self.statics and arg in self.shared:
                            raise AgencyRuntimeError(
                                f"cannot assign to `{arg}`: it is a static constant"
                            )
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
                        if _match(pattern, stack[-1], binds, self.program.types):
                            pop()
                            for name in names:
                                push(binds.get(name))
                            push(True)
                        else:
                            stack[-1] = False
                    elif op == 42:  # DESTRUCTURE (pattern, names)
                        pattern, names = arg
                        binds = {}
                        _destructure(pattern, pop(), binds)
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
                        if self.on_step is not None:
                            frame.pc = pc
                            self.on_step(self, arg)
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
                    else:  # pragma: no cover - compiler and machine disagree
                        raise AgencyRuntimeError(f"internal error: unknown opcode {op}")
            except PauseSignal:
                raise  # the call already rewound frame.pc to run again
            except BaseException:
                frame.pc = pc
                raise

    # -- names, calls, returns ----------------------------------------------------------------

    def _outer_index(self, L: dict[str, Any], name: str) -> int:
        """Where a handler body or a block finds `name`: the frame that opened its `handle`
        block or created the block (or, for one nested in another, that one's owner, and so
        on)."""
        frames = self.frames
        at = int(L["__owner"])
        while name not in frames[at].locals and frames[at].code.kind in ("handler", "block"):
            at = int(frames[at].locals["__owner"])
        return at

    def _load_name(self, name: str) -> Any:
        if name in self.globals:
            return self.globals[name]
        if name in self.shared:
            return self.shared[name]
        if name in self.functions or name in self.builtins:
            return FuncRef(name)
        raise AgencyRuntimeError(f"`{name}` is not defined")

    def _pop_args(self, stack: list[Any], spec: Any) -> tuple[list[Any], dict[str, Any]]:
        if type(spec) is int:
            if spec:
                args = stack[-spec:]
                del stack[-spec:]
                return args, {}
            return [], {}
        n = len(spec)
        values = stack[-n:]
        del stack[-n:]
        positional: list[Any] = []
        named: dict[str, Any] = {}
        for kind, v in zip(spec, values):
            if kind is None:
                positional.append(v)
            elif kind == "...":
                positional.extend(_spread_items(v))
            else:
                named[kind] = v
        return positional, named

    def _call(self, frame: Frame, spec: Any, pc: int) -> bool:
        """Run a CALL. Returns True when the frame stack changed (the loop must reload)."""
        stack = frame.stack
        args, named = self._pop_args(stack, spec)
        callee = stack.pop()
        if type(callee) is not FuncRef:
            if type(callee) is BoundFunction:
                return self._invoke_bound(frame, callee, args, named, spec, pc)
            if type(callee) is Closure:
                return self._invoke(frame, callee, args, named, spec, pc)
            raise AgencyRuntimeError(f"{_callee_text(callee)} is not a function")
        return self._invoke(frame, callee.name, args, named, spec, pc)

    def _invoke(
        self,
        frame: Frame,
        name: Any,  # a function's name, a Closure, or a BoundFunction (a builtin's TailCall)
        args: list[Any],
        named: dict[str, Any],
        spec: Any,
        pc: int,
    ) -> bool:
        if type(name) is BoundFunction:  # a builtin's TailCall of a derived function
            return self._invoke_bound(frame, name, args, named, spec, pc)
        if type(name) is Closure:
            self._enter_block(name, args, named)
            return True
        assert type(name) is str
        code = self.functions.get(name)
        if code is not None:
            if code.kind == "node":
                self._transition(code, args, named)
                return True
            if code.kind == "def" and _has_failure(args, named):
                skipped = self._propagate(code, args, named)
                if skipped is not None:
                    frame.stack.append(skipped)
                    return False
            if ACTIVE_HOOKS in self.globals and self._hooked(frame, code, args, named):
                return True
            self._push_frame(code, args, named)
            return True
        fn = self.builtins.get(name)
        if fn is None:
            raise AgencyRuntimeError(f"`{name}` is not defined")
        try:
            if "&" in named:  # a trailing block: a builtin takes it as its last argument
                result = self._call_builtin(
                    name, fn, [*args, named["&"]], {k: v for k, v in named.items() if k != "&"}
                )
            else:
                result = self._call_builtin(name, fn, args, named)
        except PauseSignal:
            # Put the call back so it runs again when the run continues.
            frame.stack.append(FuncRef(name))
            _repush_args(frame.stack, args, named, spec)
            frame.pc = pc - 1
            raise
        if type(result) is TailCall:
            return self._invoke(frame, result.name, result.args, result.named, None, pc)
        frame.stack.append(result)
        return False

    def _call_method(self, frame: Frame, name: str, spec: Any) -> bool:
        stack = frame.stack
        args, named = self._pop_args(stack, spec)
        obj = stack.pop()
        if type(obj) is JSObject:
            fn = obj.get(name)
            if type(fn) is FuncRef:
                return self._invoke(frame, fn.name, args, named, None, frame.pc)
            if type(fn) is BoundFunction:
                return self._invoke_bound(frame, fn, args, named, None, frame.pc)
            if type(fn) is Closure:
                return self._invoke(frame, fn, args, named, None, frame.pc)
        elif type(obj) is Result and name == "value" and type(obj.value) in FUNCTION_TYPES:
            fn = obj.value  # success(f).value(x) calls f
            if type(fn) is BoundFunction:
                return self._invoke_bound(frame, fn, args, named, None, frame.pc)
            return self._invoke(frame, fn.name, args, named, None, frame.pc)
        elif name in builtins.FUNCTION_METHODS and type(obj) in FUNCTION_TYPES:
            stack.append(builtins.function_method(self, obj, name, args, named))
            return False
        if "&" in named:
            args = [*args, named["&"]]
        try:
            result = self.methods(self, obj, name, args)
        except HOST_ERRORS as exc:
            raise host_error(f".{name}()", exc) from exc
        if type(result) is TailCall:
            return self._invoke(frame, result.name, result.args, result.named, None, frame.pc)
        stack.append(result)
        return False

    def _call_builtin(self, name: str, fn: Any, args: list[Any], named: dict[str, Any]) -> Any:
        """The builtin boundary: a Python exception from inside a builtin is an Agency error
        naming it (see `runtime.vm.boundary`)."""
        try:
            return fn(self, args, named)
        except HOST_ERRORS as exc:
            raise host_error(f"{name}()", exc) from exc

    def _invoke_bound(
        self,
        frame: Frame,
        fn: BoundFunction,
        args: list[Any],
        named: dict[str, Any],
        spec: Any,
        pc: int,
    ) -> bool:
        """Call a derived function: its base with the bound arguments merged in; a preapproved
        one runs in a frame whose handler approves what no handler around it decided."""
        base_args, base_named = builtins.bind_call(self, fn, args, named)
        code = self.functions.get(fn.base.name)
        if code is None or code.kind == "node":
            if fn.preapprove and code is None:
                raise AgencyRuntimeError(f"`{fn.base.name}` is a builtin: it cannot be preapproved")
            # (No builtin a program can name pauses, so this call never needs re-running.)
            return self._invoke(frame, fn.base.name, base_args, base_named, None, pc)
        if code.kind == "def" and _has_failure(base_args, base_named):
            skipped = self._propagate(code, base_args, base_named)
            if skipped is not None:
                frame.stack.append(skipped)
                return False
        f = self._push_frame(code, base_args, base_named)
        if fn.preapprove:
            f.handlers.append(builtins.PREAPPROVE)
        return True

    def _propagate(self, code: Code, args: list[Any], named: dict[str, Any]) -> Result | None:
        """A failure passed for a parameter that does not accept Results skips the call: the
        call's value is that failure, with this hop recorded (leftmost parameter first)."""
        values = self.bind_args(code, args, named)
        for p in code.params:
            v = values.get(p.name)
            items = v if p.rest and type(v) is JSArray else (v,)
            for x in items:
                if type(x) is Result and not x.ok and not _accepts_results(p.type, self.program):
                    return Result(
                        False,
                        error=x.error,
                        checkpoint=x.checkpoint,
                        origin=x.origin,
                        skipped=(*x.skipped, (code.name, p.name)),
                    )
        return None

    def bind_args(self, code: Code, args: list[Any], named: dict[str, Any]) -> dict[str, Any]:
        params = code.params
        if "&" in named:
            args, named = _bind_block(code, args, named)
        locals_: dict[str, Any] = {}
        i = 0
        for p in params:
            if p.rest:
                locals_[p.name] = JSArray(args[i:])
                i = len(args)
            elif i < len(args):
                locals_[p.name] = args[i]
                i += 1
            else:
                locals_[p.name] = None
        if named:
            for key, v in named.items():
                if key in locals_:
                    locals_[key] = v
                elif any(p.name == "__named" for p in params):
                    extra = locals_.get("__named")
                    if extra is None:
                        extra = locals_["__named"] = JSObject()
                    extra[key] = v
                else:
                    raise AgencyRuntimeError(f"`{code.name}` has no parameter named `{key}`")
        return locals_

    def _enter_block(self, block: Closure, args: list[Any], named: dict[str, Any]) -> None:
        """Call a block: a frame of its code whose `__owner` is the frame that created it."""
        code = self.functions.get(block.name)
        at = block.frame
        frames = self.frames
        if code is None or at >= len(frames) or frames[at].code.name != block.owner:
            raise AgencyRuntimeError(
                f"a block from `{block.owner}` can only be called while that call is running"
            )
        f = self._push_frame(code, args, named)
        f.locals["__owner"] = at

    def _push_frame(self, code: Code, args: list[Any], named: dict[str, Any]) -> Frame:
        if len(self.frames) > 2000:
            raise AgencyRuntimeError("maximum call depth exceeded (2000 frames)")
        f = Frame(code, self.bind_args(code, args, named))
        if code.kind == "def":
            f.entry = dict(f.locals)
            f.entry_env = (dict(self.globals), {t: len(ms) for t, ms in self.threads.items()})
            if (
                code.modifiers
            ):  # lifecycle: a destructive def's call goes through the effect journal
                if journaled(code):
                    begin_destructive(self, f)
        if self.wlog is not None:
            caller = self.frames[-1] if self.frames else None
            self.rec.log_frame(f, stmt_position(caller) if caller else (0, 0))
        self.frames.append(f)
        return f

    def _return(self, value: Any) -> None:
        frames = self.frames
        if type(value) is Result and not value.ok and value.checkpoint is None:
            f = frames[-1]
            if f.code.kind == "def":
                value = Result(
                    False,
                    error=value.error,
                    checkpoint=entry_checkpoint(self, f),
                    origin=value.origin or f.code.name,
                    skipped=value.skipped,
                )
        f = frames.pop()
        if DESTRUCTIVE in f.locals or (f.code.modifiers and "destructive" in f.code.modifiers):
            value = destructive_return(self, f, value)
        if f.code.modifiers and "__effect" in f.locals:  # lifecycle: journal the destructive def
            value = end_destructive(self, f, value)
        if f.code.kind == "node":
            self.location = stmt_location(f) or self.location  # the end shows the node's return
        if self.wlog is not None:
            self.wlog.append((W_POP_FRAME,))
            if f.threads:
                self.wlog.append((W_ACTIVE, self.active_thread()))
        if not frames:
            self._finish(value)
            return
        frames[-1].stack.append(value)

    def _enter_node(self) -> None:
        code = self.functions.get(self.node)
        if code is None or code.kind != "node":
            nodes = ", ".join(self.program.nodes()) or "none"
            raise AgencyRuntimeError(f"no node named `{self.node}` (nodes: {nodes})")
        self.nodes_traversed.append(code.name)
        self._push_frame(code, self.entry_args, self.entry_named)

    def _transition(self, code: Code, args: list[Any], named: dict[str, Any]) -> None:
        """A node called another node: the current node ends; the other one takes over."""
        while len(self.frames) > 1:
            self.frames.pop()
            if self.wlog is not None:
                self.wlog.append((W_POP_FRAME,))
        self.nodes_traversed.append(code.name)
        self.event("transition", f"→ {code.name}", {"node": code.name})
        self._push_frame(code, args, named)

    def _finish(self, value: Any) -> None:
        if self.wlog is not None:
            self.wlog.extend((W_POP_FRAME,) for _ in self.frames)
        self.frames.clear()
        self.status = HALTED
        self.result = value
        self.log((W_STATUS, HALTED, value, None))

    # -- errors ---------------------------------------------------------------------------

    def _raise(self, err: AgencyRuntimeError) -> bool:
        """Deliver a runtime error: the innermost trap catches it; a def returns a failure;
        in a node the run fails. Returns True if execution can go on."""
        if err.span is None:
            loc = self.current_location()
            if loc is not None:
                err.span = Span(loc.line, loc.col, loc.end_line, loc.end_col)
                err.path = loc.file
        frames = self.frames
        while frames:
            f = frames[-1]
            if f.traps:
                target, sp, push_failure = f.traps.pop()
                del f.stack[sp:]
                if push_failure:
                    f.stack.append(Result(False, error=err.message))
                f.pc = target
                return True
            kind = f.code.kind
            if kind == "def":
                cp = entry_checkpoint(self, f)
                frames.pop()
                self.log((W_POP_FRAME,))
                self.event("error", err.message, {"scope": f.code.name, "handled": True})
                if frames:
                    frames[-1].stack.append(
                        Result(False, error=err.message, checkpoint=cp, origin=f.code.name)
                    )
                    return True
                break
            if kind in ("prelude", "handler", "block"):
                frames.pop()
                self.log((W_POP_FRAME,))
                if kind == "prelude" and FORK_LOCAL in f.locals:
                    fork_unwound(self, f.locals[FORK_LOCAL])  # the parent's globals come back
                continue
            break
        self.status = FAILED
        self.error = err
        self.event("error", err.message, {"handled": False})
        self.log((W_STATUS, FAILED, None, err.message))
        return False

    def _hooked(self, frame: Frame, code: Code, args: list[Any], named: dict[str, Any]) -> bool:
        """A def call while `onFunctionStart` callbacks are registered: call the prelude's
        `__hooked_call`, which runs them and then the def (runtime/vm/builtins_callbacks.py)."""
        if code.kind != "def" or code.name.startswith("__") or frame.code.name == HOOKED_CALL:
            return False
        fns = active_callbacks(self, "onFunctionStart")
        if not fns:
            return False
        values = self.bind_args(code, args, named)
        data = JSObject(
            {
                "functionName": code.name,
                "args": JSObject({k: v for k, v in values.items() if not k.startswith("__")}),
                "moduleId": code.file,
            }
        )
        hooked = self.functions[HOOKED_CALL]
        self._push_frame(
            hooked, [fns, data, FuncRef(code.name), JSArray(args), JSObject(named)], {}
        )
        return True

    def _unwind(self, depth: int, value: Any) -> None:
        """Drop the frames above frame `depth`; it continues with `value` as its call's result."""
        frames = self.frames
        threads = False
        while len(frames) > depth + 1:
            threads = threads or bool(frames.pop().threads)
            self.log((W_POP_FRAME,))
        if threads and self.wlog is not None:
            self.wlog.append((W_ACTIVE, self.active_thread()))
        frames[-1].stack.append(value)

    def _reject(self, value: Any = None) -> None:
        """An interrupt was rejected: the nearest def, node or handler function (the one that
        raised it) returns a failure carrying the rejection's value."""
        frames = self.frames
        while frames and frames[-1].code.kind == "prelude":
            frames.pop()
            self.log((W_POP_FRAME,))
        if not frames:
            return
        self._return(Result(False, error="interrupt rejected" if value is None else value))


# ----------------------------------------------------------------------------------------------
# Helpers shared by the loop


def stmt_location(f: Frame) -> Location | None:
    """The location of the statement a frame is at (its last STEP)."""
    code = f.code
    pcs = code.step_pcs
    for i in range(len(pcs) - 1, -1, -1):
        if pcs[i] <= f.stmt_pc:
            return code.locations[i]
    return None


def stmt_position(f: Frame) -> tuple[int, int]:
    """(line, col) of the statement a frame is at (its last STEP), for the call stack view."""
    code = f.code
    pcs = code.step_pcs
    for i in range(len(pcs) - 1, -1, -1):
        if pcs[i] <= f.stmt_pc:
            loc = code.locations[i]
            return loc.line, loc.col
    return code.span.line, code.span.col


def _bind_block(
    code: Code, args: list[Any], named: dict[str, Any]
) -> tuple[list[Any], dict[str, Any]]:
    """A trailing block (argument kind `&`) binds to the callee's last parameter by name, so
    `row() as g { … }` with `def row(gap = 0, block = null)` leaves `gap` to its default."""
    named = dict(named)
    block = named.pop("&")
    params = [p for p in code.params if not p.name.startswith("__")]
    if not params:
        raise AgencyRuntimeError(f"`{code.name}` takes no parameters, so it cannot take a block")
    last = params[-1]
    if last.rest:
        return [*args, block], named
    named[last.name] = block
    return args, named


def _has_failure(args: list[Any], named: dict[str, Any]) -> bool:
    for a in args:
        if type(a) is Result and not a.ok:
            return True
    return any(type(v) is Result and not v.ok for v in named.values()) if named else False


def _accepts_results(t: Any, program: Any, depth: int = 0) -> bool:
    """Whether a parameter declared with type `t` takes a failure as it is: `Result…`, `any`,
    or a union holding one (an alias is looked through). Untyped parameters do not."""
    if t is None or depth > 20:
        return False
    kind = type(t)
    if kind is A.TName:
        if t.name in ("any", "Result"):
            return True
        alias = program.types.get(t.name)
        return alias is not None and _accepts_results(alias, program, depth + 1)
    if kind is A.TGeneric:
        return bool(t.name == "Result")
    if kind is A.TUnion:
        return any(_accepts_results(o, program, depth + 1) for o in t.options)
    return False


def _callee_text(v: Any) -> str:
    if v is None:
        return "null"
    return f"{a_type(v)} value"


def _index(key: Any) -> int | None:
    t = type(key)
    if t is int:
        return key if key >= 0 else None
    if t is float and key.is_integer() and key >= 0:
        return int(key)
    if t is str and key.isdigit():
        return int(key)
    return None


def _int_arg(v: Any, what: str) -> int:
    n = to_number(v)
    if n != n or n in (math.inf, -math.inf):
        raise AgencyRuntimeError(f"{what}: expected a number, got {to_str(v)}")
    return int(n)


def _get_index(obj: Any, key: Any) -> Any:
    t = type(obj)
    if t is JSArray:
        i = _index(key)
        if i is not None:
            return obj[i] if i < len(obj) else None
        if type(key) is int and key < 0:
            return None
        if key == "length":
            return len(obj)
        return None
    if t is JSObject:
        return obj.get(key if type(key) is str else to_str(key))
    if t is str:
        i = _index(key)
        if i is not None:
            return obj[i] if i < len(obj) else None
        return len(obj) if key == "length" else None
    if obj is None:
        raise AgencyRuntimeError(f"cannot read index {to_str(key)} of null")

    return get_member(obj, to_str(key))


def _slice(obj: Any, start: Any, end: Any) -> Any:
    if type(obj) not in (JSArray, str):
        raise AgencyRuntimeError(f"cannot slice {a_type(obj)}")
    n = len(obj)
    s = 0 if start is None else int(to_number(start))
    e = n if end is None else int(to_number(end))
    r = obj[s:e]
    return JSArray(r) if type(obj) is JSArray else r


def _spread_items(v: Any) -> list[Any]:
    t = type(v)
    if t is JSArray:
        return list(v)
    if t is str:
        return list(v)
    if v is None:
        return []
    raise AgencyRuntimeError(f"cannot spread {a_type(v)}")


def _build_object(stack: list[Any], spec: tuple[str, ...]) -> JSObject:
    n = sum(2 if s == "pair" else 1 for s in spec)
    values = stack[-n:] if n else []
    if n:
        del stack[-n:]
    out = JSObject()
    i = 0
    for s in spec:
        if s == "spread":
            v = values[i]
            i += 1
            if type(v) is JSObject:
                out.update(v)
            elif type(v) is JSArray:
                for j, x in enumerate(v):
                    out[str(j)] = x
            elif v is not None:
                raise AgencyRuntimeError(f"cannot spread {a_type(v)} into an object")
        else:
            k, v = values[i], values[i + 1]
            i += 2
            out[k if type(k) is str else to_str(k)] = v
    return out


def _repush_args(stack: list[Any], args: list[Any], named: dict[str, Any], spec: Any) -> None:
    if spec is None or type(spec) is int:
        stack.extend(args)
        if named:  # a named call re-pushed with an int spec cannot happen; keep it honest
            raise AgencyRuntimeError("internal error: cannot pause inside this call")
        return
    it = iter(args)
    for kind in spec:
        if kind is None:
            stack.append(next(it))
        elif kind == "...":
            stack.append(JSArray(it))
        else:
            stack.append(named[kind])


_NULL = A.PLiteral(None)


def _match(p: Any, v: Any, binds: dict[str, Any], types: Any = None) -> bool:
    """Whether `v` matches pattern `p`, collecting binders in `binds`; `types` are the
    program's type aliases (for type patterns)."""
    t = type(p)
    if t is A.PWildcard:
        return True
    if t is A.PBind:
        binds[p.name] = v
        return True
    if t is A.PLiteral:
        return js_eq(p.value, v)
    if t is A.PObject:
        if type(v) is not JSObject:
            if type(v) is Result:
                v = JSObject(
                    {"success": v.ok, "value": v.value}
                    if v.ok
                    else {"success": False, "error": v.error}
                )
            else:
                return False
        for f in p.fields:
            if f.key not in v and type(f.pattern) is not A.PBind and f.pattern != _NULL:
                return False  # a missing key matches only a binder or `null` (loose)
            if not _match(f.pattern, v.get(f.key), binds, types):
                return False
        if p.rest is not None:
            taken = {f.key for f in p.fields}
            binds[p.rest] = JSObject((k, x) for k, x in v.items() if k not in taken)
        return True
    if t is A.PArray:
        if type(v) is not JSArray:
            return False
        n = len(p.items)
        m = len(p.tail)
        if p.rest is None and len(v) != n:
            return False
        if len(v) < n + m:
            return False
        for sub, x in zip(p.items, v):
            if not _match(sub, x, binds, types):
                return False
        for sub, x in zip(p.tail, v[len(v) - m :]):
            if not _match(sub, x, binds, types):
                return False
        if p.rest is not None:
            binds[p.rest] = JSArray(v[n : len(v) - m])
        return True
    if t is A.PResult:
        if type(v) is not Result:
            return False
        if v.ok != (p.kind == "success"):
            return False
        if p.inner is None:
            return True
        return _match(p.inner, v.value if v.ok else v.error, binds, types)
    if t is A.PType:
        if not conforms(v, p.type, types or {}):
            return False
        return p.inner is None or _match(p.inner, v, binds, types)
    return False


def _destructure(p: Any, v: Any, binds: dict[str, Any]) -> None:
    t = type(p)
    if t is A.PBind:
        binds[p.name] = v
    elif t is A.PArray:
        items = list(v) if type(v) in (JSArray, str) else []
        for i, sub in enumerate(p.items):
            _destructure(sub, items[i] if i < len(items) else None, binds)
        if p.tail:
            _destructure_tail(p, items, binds)
        elif p.rest is not None:
            binds[p.rest] = JSArray(items[len(p.items) :])
    elif t is A.PObject:
        if v is None:
            raise AgencyRuntimeError("cannot destructure null")
        for f in p.fields:
            if type(v) is JSObject:
                x = v.get(f.key)
            else:
                x = get_member(v, f.key)
            _destructure(f.pattern, x, binds)
        if p.rest is not None:
            taken = {f.key for f in p.fields}
            rest = v if type(v) is JSObject else JSObject()
            binds[p.rest] = JSObject((k, x) for k, x in rest.items() if k not in taken)
    elif t is A.PWildcard:
        pass


def _destructure_tail(p: A.PArray, items: list[Any], binds: dict[str, Any]) -> None:
    """`[first, ...mid, last] = xs`: the tail binds from the end; the two ends may not
    overlap."""
    n, m = len(p.items), len(p.tail)
    if len(items) < n + m:
        raise AgencyRuntimeError(
            f"cannot destructure an array of {len(items)} into {n + m} elements around `...{p.rest}`"
        )
    for sub, x in zip(p.tail, items[len(items) - m :]):
        _destructure(sub, x, binds)
    binds[p.rest or ""] = JSArray(items[n : len(items) - m])
