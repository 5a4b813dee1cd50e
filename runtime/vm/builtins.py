"""Provides the builtin functions and methods of Agency.

A builtin is `fn(machine, args, named) -> value`. A builtin that needs user code to run (a tool,
a handler, `map` with a def) returns a `TailCall` and the machine calls the function in its
place; loops over user functions live in the prelude (`prelude.agency`), written in Agency, so
their state is frames like any other and survives snapshots.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.language.bytecode import FuncRef
from runtime.language.files import read_text
from runtime.vm import (  # noqa: F401  (they register)
    builtins_agency,
    builtins_aws,
    builtins_callbacks,
    builtins_data,
    builtins_files,
    builtins_fork,
    builtins_fs,
    builtins_guard,
    builtins_http,
    builtins_input,
    builtins_lang,
    builtins_layout,
    builtins_markdown,
    builtins_patch,
    builtins_policy,
    builtins_safebash,
    builtins_shell,
    builtins_std,
    builtins_template,
    builtins_threads,
    builtins_values,
    classes,
    markdown_render,
    methods,
    termcolor,
)
from runtime.vm.boundary import well_formed
from runtime.vm.builtin_base import BUILTINS as BUILTINS
from runtime.vm.builtin_base import arg, builtin
from runtime.vm.builtins_callbacks import active_callbacks, forward, listening
from runtime.vm.builtins_guard import request_deadline
from runtime.vm.builtins_std import now_ms
from runtime.vm.checkpoints import prepare_restore, take_checkpoint
from runtime.vm.effects import atomic_write, content_hash, file_holds, observe, perform
from runtime.vm.frames import Decision, PauseSignal, RejectSignal, RestoreSignal, TailCall
from runtime.vm.limits import SMALL, check_array_length
from runtime.vm.llm_calls import (
    call_model,
    call_tool,
    end_data,
    inject_facts,
    memory_facts,
    open_request,
    start_data,
    tool_result,
)
from runtime.vm.methods import PREAPPROVE
from runtime.vm.values import (
    FUNCTION_TYPES,
    BoundFunction,
    Closure,
    JSArray,
    JSObject,
    Result,
    display,
    from_plain,
    parse_json,
    stringify,
    to_number,
    to_plain,
    to_str,
    type_name,
)

if TYPE_CHECKING:
    from runtime.vm.machine import Machine


def _wall_clock_ms() -> float:
    return time.time() * 1000


class World:
    """What the program can touch outside the machine: output stream and the file system.

    `root` is the working directory that paths resolve against. Tests use `quiet=True`.
    `writable` lists further directories where changes may happen as inside `root` (under
    `agency test`: the test file's folder, which `agency run` started there could change too).
    `clock` is the wall clock in epoch milliseconds that `Date.now()`, `new Date()` and time
    guards read (through the effect journal); a harness that pauses a machine between its steps
    gives it a clock that stops while the machine is not running.
    """

    def __init__(self, root: str | os.PathLike[str] | None = None, quiet: bool = False) -> None:
        # (the working directory as the kernel gives it is resolved already: POSIX's getcwd
        # names no `.`, `..` or symbolic link, and resolving it again stats every component)
        self.root = Path(root).resolve() if root else Path(os.getcwd())
        self.quiet = quiet
        self.writable: tuple[Path, ...] = ()
        self.announced = False  # the simulated-model notice was printed
        self.argv: list[str] = []  # the program's own command-line arguments (std::args)
        # A test's `fetchMocks` (see builtins_http): when set, they answer every HTTP request.
        self.fetch_mocks: list[Any] | None = None
        # The project's agency.json `memory` settings (std::memory's config when none is enabled).
        self.memory_config: dict[str, Any] | None = None
        self.clock: Callable[[], float] = _wall_clock_ms

    def emit(self, text: str) -> None:
        if not self.quiet:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()

    def resolve(self, path: Any) -> Path:
        if type(path) is not str or not path:
            raise AgencyRuntimeError(f"expected a file path, got {to_str(path)!r}")
        if "\0" in path or well_formed(path) != path:
            raise AgencyRuntimeError(
                f"path {path!r} holds a NUL character or a lone surrogate: no file has that name"
            )
        p = (self.root / path).resolve()
        if p != self.root and self.root not in p.parents:
            raise AgencyRuntimeError(f"path {path!r} escapes the working directory")
        refused = builtins_fs.runtime_owned(self.root, p)
        if refused is not None:
            raise AgencyRuntimeError(f"path {path!r} is {refused}; programs cannot touch it")
        return p


# -- output -------------------------------------------------------------------------------------


@builtin("print")
def _print(m: Machine, args: list[Any], named: dict[str, Any]) -> None:
    m.print(well_formed(" ".join(display(a) for a in args)))


@builtin("printJSON")
def _print_json(m: Machine, args: list[Any], named: dict[str, Any]) -> None:
    # (`highlight`, the reference's second parameter, colours a terminal's output: ignored)
    m.print(well_formed(stringify(arg(args, named, 0, "obj"), 2)))


# -- results and interrupt decisions -----------------------------------------------------------


@builtin("success")
def _success(m: Machine, args: list[Any], named: dict[str, Any]) -> Result:
    return Result(True, value=args[0] if args else None)


@builtin("failure")
def _failure(m: Machine, args: list[Any], named: dict[str, Any]) -> Result:
    return Result(False, error=args[0] if args else None)


@builtin("__as_result")
def _as_result(m: Machine, args: list[Any], named: dict[str, Any]) -> Result:
    """A pipe stage's value as a Result: a plain value becomes success(value)."""
    v = args[0] if args else None
    return v if type(v) is Result else Result(True, value=v)


@builtin("isSuccess")
def _is_success(m: Machine, args: list[Any], named: dict[str, Any]) -> bool:
    return type(args[0]) is Result and args[0].ok if args else False


@builtin("isFailure")
def _is_failure(m: Machine, args: list[Any], named: dict[str, Any]) -> bool:
    return type(args[0]) is Result and not args[0].ok if args else False


@builtin("approve")
def _approve(m: Machine, args: list[Any], named: dict[str, Any]) -> Decision:
    return Decision("approve", args[0] if args else None)


@builtin("reject")
def _reject(m: Machine, args: list[Any], named: dict[str, Any]) -> Decision:
    return Decision("reject", args[0] if args else None)


@builtin("resolve")
def _resolve(m: Machine, args: list[Any], named: dict[str, Any]) -> Decision:
    return Decision("resolve", args[0] if args else None)


@builtin("propagate")
def _propagate(m: Machine, args: list[Any], named: dict[str, Any]) -> Decision:
    """A handler's answer "a person must decide": the interrupt goes to the user even if other
    handlers approved it (a reject elsewhere still wins)."""
    return Decision("propagate", None)


@builtin("pass")
def _pass(m: Machine, args: list[Any], named: dict[str, Any]) -> None:
    """A handler's "no opinion", usable as a value (a match arm): the same as returning nothing."""
    return None


# -- mutable process-wide map -----------------------------------------------------------------


@builtin("getMutable")
def _get_mutable(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    key = to_str(arg(args, named, 0, "key"))
    if key in m.mutable:
        return m.mutable[key]
    return arg(args, named, 1, "default")


@builtin("setMutable")
def _set_mutable(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    key = to_str(arg(args, named, 0, "key"))
    value = arg(args, named, 1, "value")
    m.mutable[key] = value
    m.log((15, "mutable:" + key, value))
    return value


# -- files ---------------------------------------------------------------------------------------


@builtin("saveToDisk")
def _save_to_disk(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    value = arg(args, named, 0, "value")
    path_arg = arg(args, named, 1, "path")
    text = json.dumps(to_plain(value), indent=2, ensure_ascii=False)

    path = m.world.resolve(path_arg)

    def act() -> Any:
        try:
            atomic_write(path, text + "\n")
        except OSError as exc:
            raise AgencyRuntimeError(
                f"saveToDisk: cannot write {path_arg}: {exc.strerror}"
            ) from None
        return True

    args_ = {"path": path_arg, "bytes": len(text), "sha256": content_hash(text + "\n")}
    return perform(m, "saveToDisk", args_, act, lambda: file_holds(path, text + "\n"))


@builtin("loadFromDisk")
def _load_from_disk(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    path_arg = arg(args, named, 0, "path")
    path = m.world.resolve(path_arg)

    def act() -> Any:
        try:
            text = read_text(path, "loadFromDisk:", AgencyRuntimeError, str(path_arg))
        except OSError as exc:
            raise AgencyRuntimeError(
                f"loadFromDisk: cannot read {path.name}: {exc.strerror}"
            ) from None
        return parse_json(text)

    return observe(m, "loadFromDisk", {"path": path_arg}, act)


# -- checkpoints -------------------------------------------------------------------------------


@builtin("checkpoint")
def _checkpoint(m: Machine, args: list[Any], named: dict[str, Any]) -> int:
    return take_checkpoint(m)


@builtin("getCheckpoint")
def _get_checkpoint(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    ident = arg(args, named, 0, "id")
    key = (
        int(to_number(ident))
        if ident is not None and to_number(ident) == to_number(ident)
        else None
    )
    if key is None or key not in m.checkpoints:
        raise AgencyRuntimeError(
            f"no checkpoint with id {to_str(ident)} (it may have been deleted by a restore)"
        )
    return from_plain(m.checkpoints[key])


@builtin("restore")
def _restore(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    target = arg(args, named, 0, "checkpoint")
    options = arg(args, named, 1, "options")
    if options is None:
        options = JSObject({k: v for k, v in named.items() if k != "checkpoint"})
    if options is not None and type(options) is not JSObject:
        raise AgencyRuntimeError("restore: options must be an object")
    prepared = prepare_restore(m, target, options or JSObject())
    if prepared is None:
        return None  # maxRestores reached at this call site: carry on
    raise RestoreSignal(*prepared)


# -- interrupts ---------------------------------------------------------------------------------


@builtin("__interrupt_open")
def _interrupt_open(m: Machine, args: list[Any], named: dict[str, Any]) -> JSObject:
    message, data, effect = (args + [None, None, None])[:3]
    if type(effect) is not str and type(data) is JSObject and type(data.get("effect")) is str:
        effect = data["effect"]  # `interrupt(message, {effect: "std::bash", …})` names it too
    effect = effect if type(effect) is str else "unknown"  # `interrupt ns::name(…)` names it
    obj = JSObject({"effect": effect, "message": message, "data": data})
    if type(data) is JSObject:
        for k, v in data.items():
            if k not in obj:
                obj[k] = v
    handlers, in_handler = interrupt_handlers(m)
    m.event("interrupt", to_str(message), {"data": to_plain(data)})
    return JSObject({"obj": obj, "handlers": handlers, "inHandler": in_handler})


def interrupt_handlers(m: Machine) -> tuple[JSArray, bool]:
    """The handlers an interrupt raised now consults, innermost first, and whether it was raised
    while a handler function runs.

    Frames are walked from the top down. Reaching the prelude `interrupt` frame of an outer
    interrupt that is running its handlers means the new interrupt comes from one of those
    handler functions: it skips that handler and the ones inside it (no self-recursion) and
    goes on with the outer interrupt's remaining handlers, which already include every handler
    further out."""
    handlers = JSArray()
    weakest = JSArray()  # `.preapprove()` approves only what no handler around it decided
    frames = m.frames
    for i in range(len(frames) - 2, -1, -1):  # the top frame is this interrupt's own
        f = frames[i]
        if f.code.kind == "prelude" and f.code.name in (
            "interrupt",
            "__guard_check",
            "__child_ask",
        ):
            outer = f.locals.get("__i")
            done = f.locals.get("__n")
            if type(outer) is JSObject and isinstance(done, (int, float)):
                handlers.extend(outer["handlers"][int(done) :])
                return handlers, True
        for h in reversed(f.handlers):
            # i: the frame a handler body reads from
            (weakest if h[0] == PREAPPROVE[0] else handlers).append(JSArray([*h, i]))
    handlers.extend(weakest)
    if builtins_agency.is_child(m):
        handlers.append(builtins_agency.parent_handler())  # a child program's parent votes last
    return handlers, False


@builtin("__run_handler")
def _run_handler(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    handler, obj = args[0], args[1]
    kind, what = handler[0], handler[1]
    if kind == "action":
        return Decision(what, None)
    if kind == PREAPPROVE[0]:
        return Decision(what, True if what == "approve" else None)
    if kind == "code":
        return TailCall(what, [obj, handler[2]])
    if kind == builtins_agency.PARENT:
        return builtins_agency.parent_vote(m, obj)
    if what not in m.functions and what not in m.builtins:
        # `with h` where `h` is a variable holding a function (or a block): read it where the
        # `handle` block was opened, like any name there
        value = _variable_at(m, int(handler[2]), what)
        if type(value) is FuncRef:
            return TailCall(value.name, [obj])
        if type(value) is Closure:
            return TailCall(value, [obj])
    return TailCall(what, [obj])


def _variable_at(m: Machine, at: int, name: str) -> Any:
    """The value of `name` as code running in frame `at` sees it (its own variable, its
    creator's for a block or handler body, else a module variable)."""
    frames = m.frames
    while (
        name not in frames[at].locals
        and frames[at].code.kind in ("handler", "block")
        and "__owner" in frames[at].locals
    ):
        at = int(frames[at].locals["__owner"])
    if name in frames[at].locals:
        return frames[at].locals[name]
    return m.globals.get(name)


@builtin("__is_decision")
def _is_decision(m: Machine, args: list[Any], named: dict[str, Any]) -> bool:
    return type(args[0]) is Decision


@builtin("__decision_kind")
def _decision_kind(m: Machine, args: list[Any], named: dict[str, Any]) -> str | None:
    """What a handler's answer means for the chain: "approve" (also resolve), "reject",
    "propagate", or null for no opinion (nothing returned, `pass()`, any other value)."""
    d = args[0] if args else None
    if type(d) is not Decision:
        return None
    return "approve" if d.action == "resolve" else d.action


@builtin("__interrupt_decide")
def _interrupt_decide(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    d = args[0]
    if type(d) is not Decision:
        raise AgencyRuntimeError(
            "an interrupt must be answered with approve(), reject() or resolve()"
        )
    m.event("interrupt", f"{d.action}", {"action": d.action, "value": to_plain(d.value)})
    if d.action == "reject":
        raise RejectSignal("rejected", d.value)
    return d.value


@builtin("__interrupt_refuse")
def _interrupt_refuse(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """An interrupt raised inside a handler function that no outer handler answered: it cannot
    wait for a person (the handler is deciding another interrupt), so it is rejected."""
    why = (
        "an interrupt raised inside a handler function must be answered by a handler around "
        "it; it cannot wait for a person"
    )
    m.event("interrupt", "refused", {"action": "reject", "value": why})
    raise RejectSignal("rejected", why)


@builtin("__interrupt_wait")
def _interrupt_wait(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    if m.answer is not None:
        answer, m.answer = m.answer, None
        return answer
    builtins_fork.before_waiting(m)  # a race branch that can no longer win stops instead
    raise PauseSignal("interrupt", to_plain(args[0]) if args else None)


# -- LLM ----------------------------------------------------------------------------------------


@builtin("__llm_open")
def _llm_open(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    return open_request(m, args)


@builtin("__llm_call")
def _llm_call(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    started = start_data(m, args[0]) if "onLLMCallStart" in m.forward else None
    ending = listening(m, "onLLMCallEnd")
    began = now_ms(m) if ending else 0
    before = dict(m.usage)
    answer = call_model(m, args[0], request_deadline(m))
    if started is not None:  # (a child program whose parent listens; once the call is made)
        forward(m, "onLLMCallStart", started)
    if ending:  # what the prelude hands to onLLMCallEnd callbacks
        answer["ended"] = end_data(m, args[0], answer, before, now_ms(m) - began)
    if (
        args[0].get("stream") is True
        and not answer.get("cancelled")
        and active_callbacks(m, "onStream")
    ):
        # `stream: true`: onStream callbacks get the answer's end, {type: "done", result}, as
        # the reference's test provider streams it (the whole answer arrives at once here)
        result = JSObject({"output": answer.get("value"), "toolCalls": answer.get("calls")})
        answer["streamed"] = JSArray([JSObject({"type": "done", "result": result})])
    builtins_fork.llm_tick(m)  # inside a race branch: a loser stops here
    return answer


@builtin("__llm_memory")
def _llm_memory(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    return memory_facts(m, args[0])


@builtin("__llm_inject")
def _llm_inject(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    inject_facts(m, args[0], args[1] if len(args) > 1 else None)


@builtin("__llm_start_data")
def _llm_start_data(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    return start_data(m, args[0])


@builtin("__call_tool")
def _call_tool(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    return call_tool(m, args[0], args[1])


@builtin("__llm_tool_result")
def _llm_tool_result(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    return tool_result(m, args[0], args[1], args[2])


@builtin("__is_function")
def _is_function(m: Machine, args: list[Any], named: dict[str, Any]) -> bool:
    return bool(args) and type(args[0]) in FUNCTION_TYPES


@builtin("__throw")
def _throw(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """A runtime error with the given message (for the prelude's own checks)."""
    raise AgencyRuntimeError(to_str(args[0]) if args else "error")


@builtin("throw")
def _throw_error(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """`throw(message)`: a runtime error with the message (as a string). In a def it makes the
    def return a failure carrying the message; in a node it ends the run."""
    raise AgencyRuntimeError(to_str(args[0]) if args else "")


@builtin("__call")
def _call_value(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """Call a function value with positional args (used by the prelude's map/filter/...)."""
    fn = args[0]
    if type(fn) is BoundFunction or type(fn) is Closure:
        return TailCall(fn, list(args[1:]))
    if type(fn) is not FuncRef:
        raise AgencyRuntimeError(f"expected a function, got {type_name(fn)}")
    return TailCall(fn.name, list(args[1:]))


# -- JavaScript classes: `new Set(xs)` is the call `Set(xs)` (see classes.py) -------------------


def _register_classes() -> None:
    for name, make in classes.CONSTRUCTORS.items():

        def construct(m: Machine, args: list[Any], named: dict[str, Any], make: Any = make) -> Any:
            return make(m, args)

        builtin(name)(construct)


_register_classes()


@builtin("Array")
def _array_ns(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """`Array(n)` / `new Array(n)`: n empty slots (null here, as JSON shows them), for
    `new Array(3).fill(0)`; `Array(a, b)` (or one value that is not a number): those values."""
    if len(args) == 1 and type(args[0]) in (int, float):
        n = args[0]
        if n != n or n < 0 or n != int(n) or n >= 2**32:
            raise AgencyRuntimeError(f"Invalid array length: {to_str(n)}")
        if n > SMALL:
            check_array_length(int(n))
        return JSArray([None] * int(n))
    return JSArray(args)


def _date_now(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    return classes.now_ms(m)


BUILTINS["Date.now"] = _date_now  # `const now = Date.now; now()`
