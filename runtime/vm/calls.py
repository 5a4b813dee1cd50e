"""Provides how the machine enters and leaves functions: calls of defs, builtins, methods, bound
and partial functions and blocks; returns, node transitions, raising and unwinding."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from runtime.errors import AgencyRuntimeError
from runtime.language.bytecode import Code, FuncRef
from runtime.language.syntax.ast import Span
from runtime.vm.boundary import HOST_ERRORS, host_error
from runtime.vm.builtins_callbacks import ACTIVE as ACTIVE_HOOKS
from runtime.vm.builtins_callbacks import (
    HOOKED_CALL,
    HOOKED_NODE,
    STD_INDEX_BUILTINS,
    STD_INDEX_PRELUDE,
    active_callbacks,
    builtin_call_args,
    forward,
    listening,
)
from runtime.vm.builtins_fork import FORK_LOCAL, fork_unwound
from runtime.vm.builtins_guard import DESTRUCTIVE, STEP_GUARD, destructive_return
from runtime.vm.checkpoints import entry_checkpoint
from runtime.vm.effects import begin_destructive, end_destructive, journaled
from runtime.vm.frames import (
    Frame,
    PauseSignal,
    TailCall,
)
from runtime.vm.machine_state import MachineState
from runtime.vm.methods import (
    FUNCTION_METHODS,
    PREAPPROVE,
    bind_call,
    error_preview,
    function_method,
)
from runtime.vm.operations import (
    accepts_results,
    bind_block,
    callee_text,
    check_named,
    has_failure,
    repush_args,
    spread_items,
    stmt_location,
)
from runtime.vm.values import (
    FUNCTION_TYPES,
    BoundFunction,
    Closure,
    JSArray,
    JSObject,
    Result,
)
from runtime.vm.writelog import (
    FAILED,
    HALTED,
    POPPED,
    W_ACTIVE,
    W_POP_FRAME,
    W_STATUS,
)

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

# The prelude def that asks the file functions' question (runtime/language/prelude.agency).
FILE_GATE = "__file_gate"


class CallingMachine(MachineState):
    """Calls and returns: binding arguments, pushing and popping frames, builtins, bound and
    partial functions, blocks, node transitions, raising and unwinding to a handler."""

    __slots__ = ()

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
                positional.extend(spread_items(v))
            else:
                named[kind] = v
        return positional, named

    def _call(self, frame: Frame, spec: Any, pc: int) -> bool:
        """Run a CALL. Returns True when the frame stack changed (the loop must reload)."""
        stack = frame.stack
        args, named = self._pop_args(stack, spec)
        callee = stack.pop()
        if named and type(callee) is FuncRef:
            self._check_named(callee.name, args, named)
        if type(callee) is not FuncRef:
            if type(callee) is BoundFunction:
                return self._invoke_bound(frame, callee, args, named, spec, pc)
            if type(callee) is Closure:
                return self._invoke(frame, callee, args, named, spec, pc)
            if type(callee) is Result and not callee.ok:  # the reference's words
                raise AgencyRuntimeError(
                    f"Cannot call a failure value produced by '{callee.origin or '(unknown)'}' "
                    f"({error_preview(callee.error)}). Check the Result before calling it."
                )
            raise AgencyRuntimeError(f"{callee_text(callee)} is not a function")
        return self._invoke(frame, callee.name, args, named, spec, pc)

    def _check_named(self, name: str, args: list[Any], named: dict[str, Any]) -> None:
        """A written call with named arguments, of a def or node: its names checked (see
        `check_named`). Calls the runtime makes (tool calls, bound functions) are not."""
        code = self.functions.get(name)
        if code is not None and (code.kind == "def" or code.kind == "node"):
            check_named(code, args, named)

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
            if code.kind == "def" and has_failure(args, named):
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
        if (
            ACTIVE_HOOKS in self.globals
            and name in STD_INDEX_BUILTINS
            and self._hook(name, builtin_call_args(name, args, named), None, args, named)
        ):
            return True
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
            repush_args(frame.stack, args, named, spec)
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
                if named:
                    self._check_named(fn.name, args, named)
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
        elif name in FUNCTION_METHODS and type(obj) in FUNCTION_TYPES:
            stack.append(function_method(cast("Machine", self), obj, name, args, named))
            return False
        if "&" in named:
            args = [*args, named["&"]]
        try:
            result = self.methods(cast("Machine", self), obj, name, args)
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
        base_args, base_named = bind_call(cast("Machine", self), fn, args, named)
        code = self.functions.get(fn.base.name)
        if code is None or code.kind == "node":
            if fn.preapprove and code is None:
                raise AgencyRuntimeError(f"`{fn.base.name}` is a builtin: it cannot be preapproved")
            # (No builtin a program can name pauses, so this call never needs re-running.)
            return self._invoke(frame, fn.base.name, base_args, base_named, None, pc)
        if code.kind == "def" and has_failure(base_args, base_named):
            skipped = self._propagate(code, base_args, base_named)
            if skipped is not None:
                frame.stack.append(skipped)
                return False
        f = self._push_frame(code, base_args, base_named)
        if fn.preapprove:
            f.handlers.append(PREAPPROVE)
        return True

    def _propagate(self, code: Code, args: list[Any], named: dict[str, Any]) -> Result | None:
        """A failure passed for a parameter that does not accept Results skips the call: the
        call's value is that failure, with this hop recorded (leftmost parameter first)."""
        values = self.bind_args(code, args, named)
        for p in code.params:
            v = values.get(p.name)
            items = v if p.rest and type(v) is JSArray else (v,)
            for x in items:
                if type(x) is Result and not x.ok and not accepts_results(p.type, self.program):
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
            args, named = bind_block(code, args, named)
        locals_: dict[str, Any] = {}
        i = 0
        for p in params:
            if p.rest:
                locals_[p.name] = JSArray(args[i:])
                i = len(args)
            elif i < len(args):
                locals_[p.name] = args[i]
                i += 1
            elif not p.has_default:
                locals_[p.name] = None
            # (a parameter with a default that the call leaves out stays unbound until the
            # function's first instructions give it the default: see JUMP_IF_BOUND)
        if named:
            for key, v in named.items():
                if key in locals_ or any(p.name == key for p in params):
                    locals_[key] = v
                elif any(p.name == "__named" for p in params):
                    extra = locals_.get("__named")
                    if extra is None:
                        extra = locals_["__named"] = JSObject()
                    extra[key] = v
                else:
                    raise AgencyRuntimeError(
                        f"Unknown named argument '{key}' in call to '{code.name}'"
                    )
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
                    begin_destructive(cast("Machine", self), f)
        if self.wlog is not None:
            self.rec.log_frame(f, self.frames[-1] if self.frames else None)
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
                    checkpoint=entry_checkpoint(cast("Machine", self), f),
                    origin=value.origin or f.code.name,
                    skipped=value.skipped,
                )
        f = frames.pop()
        if DESTRUCTIVE in f.locals or (f.code.modifiers and "destructive" in f.code.modifiers):
            value = destructive_return(cast("Machine", self), f, value)
        if f.code.modifiers and "__effect" in f.locals:  # lifecycle: journal the destructive def
            value = end_destructive(cast("Machine", self), f, value)
        if f.code.kind == "node":
            self.location = stmt_location(f) or self.location  # the end shows the node's return
        wlog = self.wlog
        if wlog is not None:
            wlog.append(POPPED)
            if f.threads:
                wlog.append((W_ACTIVE, self.active_thread()))
        if not frames:
            self._finish(value)
            return
        if f.code.name == STEP_GUARD and f.code.kind == "prelude":
            return  # called at a statement boundary, not by an expression: no value wanted
        frames[-1].stack.append(value)

    def _enter_node(self) -> None:
        code = self.functions.get(self.node)
        if code is None or code.kind != "node":
            nodes = ", ".join(self.program.nodes()) or "none"
            raise AgencyRuntimeError(f"no node named `{self.node}` (nodes: {nodes})")
        if self.forward or ACTIVE_HOOKS in self.globals:
            if self._node_hooks(code, self.entry_args, self.entry_named, True):
                return
        self.nodes_traversed.append(code.name)
        self._push_frame(code, self.entry_args, self.entry_named)

    def _transition(self, code: Code, args: list[Any], named: dict[str, Any]) -> None:
        """A node called another node: the current node ends; the other one takes over."""
        top = self.frames[-1]
        hooked = top.code.name == HOOKED_NODE  # its onNodeStart callbacks ran
        entry = hooked and top.locals.get("__entry") is True  # (the run's first node)
        while len(self.frames) > 1:
            self.frames.pop()
            if self.wlog is not None:
                self.wlog.append((W_POP_FRAME,))
        if not hooked and (self.forward or ACTIVE_HOOKS in self.globals):
            if self._node_hooks(code, args, named, False):
                return
        if not entry:
            self.event("transition", f"→ {code.name}", {"node": code.name})
        self.nodes_traversed.append(code.name)
        self._push_frame(code, args, named)

    def _node_hooks(self, code: Code, args: list[Any], named: dict[str, Any], entry: bool) -> bool:
        """A node begins: forward its onNodeStart to a listening parent program, and when
        callbacks for it (or, for the run's first node, for onAgentStart) are registered, call
        the prelude's `__hooked_node`, which runs them and then enters the node (True)."""
        data = JSObject({"nodeName": code.name})
        me = cast("Machine", self)
        forward(me, "onNodeStart", data)
        fns = active_callbacks(me, "onNodeStart")
        # the run's first node: onAgentStart before it, with the arguments by parameter name
        starts = active_callbacks(me, "onAgentStart") if entry else JSArray()
        if not fns and not starts:
            return False
        start = None
        if starts:
            given = {k: v for k, v in self.bind_args(code, args, named).items() if k != "__named"}
            start = JSObject(
                {"nodeName": code.name, "args": JSObject(given), "messages": JSArray()}
            )
        hooked = self.functions[HOOKED_NODE]
        call = [fns, data, FuncRef(code.name), JSArray(args), JSObject(named), entry, starts, start]
        self._push_frame(hooked, call, {})
        return True

    def _finish(self, value: Any) -> None:
        if self.wlog is not None:
            self.wlog.extend((W_POP_FRAME,) for _ in self.frames)
        self.frames.clear()
        self.status = HALTED
        self.result = value
        self.log((W_STATUS, HALTED, value, None))

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
                    failed = Result(False, error=err.message)
                    failed.destructive = err.destructive
                    f.stack.append(failed)
                f.pc = target
                return True
            kind = f.code.kind
            if kind == "def":
                cp = entry_checkpoint(cast("Machine", self), f)
                frames.pop()
                self.log((W_POP_FRAME,))
                self.event("error", err.message, {"scope": f.code.name, "handled": True})
                if frames:
                    failed = Result(False, error=err.message, checkpoint=cp, origin=f.code.name)
                    if (
                        err.destructive
                        or DESTRUCTIVE in f.locals
                        or "destructive" in (f.code.modifiers or ())
                    ):
                        # the error came after destructive work began: say so (destructiveRan)
                        failed = destructive_return(cast("Machine", self), f, failed)
                    frames[-1].stack.append(failed)
                    return True
                break
            if kind in ("prelude", "handler", "block"):
                frames.pop()
                self.log((W_POP_FRAME,))
                if kind == "prelude" and FORK_LOCAL in f.locals:
                    fork_unwound(
                        cast("Machine", self), f.locals[FORK_LOCAL]
                    )  # the parent's globals come back
                continue
            break
        self.status = FAILED
        self.error = err
        self.event("error", err.message, {"handled": False})
        self.log((W_STATUS, FAILED, None, err.message))
        return False

    def _hooked(self, frame: Frame, code: Code, args: list[Any], named: dict[str, Any]) -> bool:
        """A def call while `onFunctionStart` or `onFunctionEnd` callbacks are registered (or a
        parent program listens): call the prelude's `__hooked_call`, which runs them around the
        def (runtime/vm/builtins_callbacks.py). A prelude def that stands for one of std::index's
        functions counts as a def (the prelude never calls them itself)."""
        if code.name.startswith("__") or frame.code.name == HOOKED_CALL:
            return False
        if code.kind != "def" and not (code.kind == "prelude" and code.name in STD_INDEX_PRELUDE):
            return False
        return self._hook(code.name, None, code, args, named)

    def _hook(
        self,
        name: str,
        given: JSObject | None,
        code: Code | None,
        args: list[Any],
        named: dict[str, Any],
    ) -> bool:
        """Call `name` through `__hooked_call` when anyone listens; `given` is the event's
        `args` (else they are bound to `code`'s parameters)."""
        if self.frames[-1].code.name == HOOKED_CALL:
            return False
        me = cast("Machine", self)
        fns = active_callbacks(me, "onFunctionStart")
        forwarding = "onFunctionStart" in self.forward
        if not fns and not forwarding and not listening(me, "onFunctionEnd"):
            return False
        if given is None:
            assert code is not None
            values = self.bind_args(code, args, named)
            given = JSObject({k: v for k, v in values.items() if not k.startswith("__")})
        data = JSObject(
            {
                "functionName": name,
                "args": given,
                "moduleId": code.file if code is not None and code.kind == "def" else "std::index",
            }
        )
        if forwarding:
            forward(me, "onFunctionStart", data)
        hooked = self.functions[HOOKED_CALL]
        self._push_frame(hooked, [fns, data, FuncRef(name), JSArray(args), JSObject(named)], {})
        return True

    def _unwind(self, depth: int, value: Any) -> None:
        """Drop the frames above frame `depth`; it continues with `value` as its call's result."""
        frames = self.frames
        threads = False
        while len(frames) > depth + 1:
            if frames.pop().threads:  # (popped first: `threads or …` would stop popping)
                threads = True
            self.log((W_POP_FRAME,))
        if threads and self.wlog is not None:
            self.wlog.append((W_ACTIVE, self.active_thread()))
        frames[-1].stack.append(value)

    def _reject(self, value: Any = None) -> None:
        """An interrupt was rejected: the nearest def, node or handler function (the one that
        raised it) returns a failure carrying the rejection's value. The prelude's file
        functions (read, write, …) are defs to the program: their question's rejection is
        their failure, so the prelude frame that asks it (FILE_GATE) takes the rejection."""
        frames = self.frames
        while frames and frames[-1].code.kind == "prelude" and frames[-1].code.name != FILE_GATE:
            frames.pop()
            self.log((W_POP_FRAME,))
        if not frames:
            return
        self._return(Result(False, error="interrupt rejected" if value is None else value))
