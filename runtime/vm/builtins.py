"""Provides the builtin functions and methods of Agency.

A builtin is `fn(machine, args, named) -> value`. A builtin that needs user code to run (a tool,
a handler, `map` with a def) returns a `TailCall` and the machine calls the function in its
place; loops over user functions live in the prelude (`prelude.agency`), written in Agency, so
their state is frames like any other and survives snapshots.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.language.bytecode import FuncRef
from runtime.language.files import protected_reason, read_text
from runtime.vm import (  # noqa: F401  (they register)
    builtins_callbacks,
    builtins_fork,
    builtins_fs,
    builtins_guard,
    builtins_policy,
    builtins_shell,
    builtins_std,
    builtins_threads,
    builtins_values,
    classes,
)
from runtime.vm.boundary import well_formed
from runtime.vm.builtin_base import BUILTINS as BUILTINS
from runtime.vm.builtin_base import builtin
from runtime.vm.checkpoints import prepare_restore, take_checkpoint
from runtime.vm.effects import atomic_write, content_hash, file_holds, observe, perform
from runtime.vm.frames import Decision, PauseSignal, RejectSignal, RestoreSignal, TailCall
from runtime.vm.limits import SMALL, check_array_length, check_string_length
from runtime.vm.llm_calls import call_model, call_tool, open_request, tool_result
from runtime.vm.values import (
    FUNCTION_TYPES,
    BoundFunction,
    Closure,
    JSArray,
    JSObject,
    Result,
    a_type,
    display,
    format_number,
    from_plain,
    is_regex,
    js_eq,
    js_pow,
    parse_json,
    stringify,
    to_number,
    to_plain,
    to_str,
    truthy,
    type_name,
)

if TYPE_CHECKING:
    from runtime.vm.machine import Machine


class World:
    """What the program can touch outside the machine: output stream and the file system.

    `root` is the working directory that paths resolve against. Tests use `quiet=True`.
    """

    def __init__(self, root: str | os.PathLike[str] | None = None, quiet: bool = False) -> None:
        self.root = Path(root or os.getcwd()).resolve()
        self.quiet = quiet
        self.announced = False  # the simulated-model notice was printed

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
        refused = _runtime_owned(self.root, p)
        if refused is not None:
            raise AgencyRuntimeError(f"path {path!r} is {refused}; programs cannot touch it")
        return p


def _runtime_owned(root: Path, p: Path) -> str | None:
    """What the runtime keeps at `p` (the run store, `.agency/`, a file being written), if so."""
    if ".agency" in p.relative_to(root).parts:
        return "inside .agency/, where runs are recorded"
    return protected_reason(p)


def _arg(args: list[Any], named: dict[str, Any], i: int, name: str, default: Any = None) -> Any:
    if name in named:
        return named[name]
    return args[i] if i < len(args) else default


# -- output -------------------------------------------------------------------------------------


@builtin("print")
def _print(m: Machine, args: list[Any], named: dict[str, Any]) -> None:
    m.print(well_formed(" ".join(display(a) for a in args)))


@builtin("printJSON")
def _print_json(m: Machine, args: list[Any], named: dict[str, Any]) -> None:
    m.print(well_formed(stringify(args[0] if args else None, 2)))


# -- collections --------------------------------------------------------------------------------


@builtin("range")
def _range(m: Machine, args: list[Any], named: dict[str, Any]) -> JSArray:
    nums = [integer(a) for a in args]
    if not nums:
        raise AgencyRuntimeError("range() needs at least one argument")
    if len(nums) >= 3 and nums[2] == 0:
        raise AgencyRuntimeError("range(): the step cannot be 0")
    span = range(nums[0]) if len(nums) == 1 else range(*nums[:3])
    if len(span) > SMALL:
        check_array_length(len(span))
    return JSArray(span)


def integer(v: Any) -> int:
    """A number argument as an integer, as JavaScript's ToIntegerOrInfinity with the infinities
    clamped to ±2**63 (far past any length): NaN is 0."""
    n = to_number(v)
    if n != n:
        return 0
    if n in (math.inf, -math.inf):
        return 2**63 if n > 0 else -(2**63)
    return int(n)


@builtin("keys")
def _keys(m: Machine, args: list[Any], named: dict[str, Any]) -> JSArray:
    obj = args[0] if args else None
    if type(obj) is JSObject:
        return JSArray(obj.keys())
    if type(obj) is JSArray:
        return JSArray(str(i) for i in range(len(obj)))
    raise AgencyRuntimeError(f"keys() expects an object, got {type_name(obj)}")


@builtin("values")
def _values(m: Machine, args: list[Any], named: dict[str, Any]) -> JSArray:
    obj = args[0] if args else None
    if type(obj) is JSObject:
        return JSArray(obj.values())
    if type(obj) is JSArray:
        return JSArray(obj)
    raise AgencyRuntimeError(f"values() expects an object, got {type_name(obj)}")


@builtin("entries")
def _entries(m: Machine, args: list[Any], named: dict[str, Any]) -> JSArray:
    obj = args[0] if args else None
    if type(obj) is not JSObject:
        raise AgencyRuntimeError(f"entries() expects an object, got {type_name(obj)}")
    return JSArray(JSArray([k, v]) for k, v in obj.items())


@builtin("len")
def _len(m: Machine, args: list[Any], named: dict[str, Any]) -> int:
    v = args[0] if args else None
    if isinstance(v, (JSArray, str, JSObject)):
        return len(v)
    raise AgencyRuntimeError(f"len() expects an array, string or object, got {type_name(v)}")


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
    key = to_str(_arg(args, named, 0, "key"))
    if key in m.mutable:
        return m.mutable[key]
    return _arg(args, named, 1, "default")


@builtin("setMutable")
def _set_mutable(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    key = to_str(_arg(args, named, 0, "key"))
    value = _arg(args, named, 1, "value")
    m.mutable[key] = value
    m.log((15, "mutable:" + key, value))
    return value


# -- conversions ---------------------------------------------------------------------------------


@builtin("String")
def _string(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    return to_str(args[0]) if args else ""


@builtin("Number")
def _number(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    return to_number(args[0]) if args else 0


@builtin("Boolean")
def _boolean(m: Machine, args: list[Any], named: dict[str, Any]) -> bool:
    return truthy(args[0]) if args else False


@builtin("parseInt")
def _parse_int(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    text = to_str(args[0] if args else None).strip()
    digits = ""
    for i, ch in enumerate(text):
        if ch.isdigit() or (i == 0 and ch in "+-"):
            digits += ch
        else:
            break
    if digits in ("", "+", "-"):
        return math.nan
    return int(digits) if len(digits) <= 16 else num_of_text(digits)


@builtin("parseFloat")
def _parse_float(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    text = to_str(args[0] if args else None).strip()
    found = _FLOAT_PREFIX.match(text)
    if found is None:
        return math.nan
    return num_of_text(found.group(0))


_FLOAT_PREFIX = re.compile(r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")


def num_of_text(text: str) -> Any:
    """A decimal number's text as JavaScript reads it: a double (so 5,000 digits are
    Infinity, never a 5,000-digit integer)."""
    f = float(text)
    return int(f) if f.is_integer() and abs(f) < 2**53 else f


@builtin("JSON")
def _json_ns(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    raise AgencyRuntimeError("JSON is not a function (use JSON.stringify or JSON.parse)")


@builtin("Object")
def _object_ns(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    raise AgencyRuntimeError("Object is not a function (use Object.keys)")


@builtin("Math")
def _math_ns(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    raise AgencyRuntimeError("Math is not a function (use Math.floor, Math.max, …)")


def _math_round(x: Any) -> Any:
    if x is None:
        return math.nan
    n = to_number(x)
    if type(n) is int:
        return n
    return math.floor(n + 0.5) if n == n and abs(n) != math.inf else n


NAMESPACES: dict[str, dict[str, Callable[..., Any]]] = {
    "JSON": {
        "stringify": lambda *a: stringify(a[0] if a else None, a[2] if len(a) > 2 else None),
        "parse": lambda *a: parse_json(to_str(a[0] if a else None)),
    },
    "Object": {
        "keys": lambda *a: _keys(None, list(a), {}),  # type: ignore[arg-type]
        "values": lambda *a: _values(None, list(a), {}),  # type: ignore[arg-type]
        "entries": lambda *a: _entries(None, list(a), {}),  # type: ignore[arg-type]
        "assign": lambda *a: _object_assign(*a),
    },
    "Array": {
        "from": classes.array_from,
        "isArray": lambda *a: bool(a) and type(a[0]) is JSArray,
    },
    "Math": {
        "floor": lambda x=None, *_: math.floor(to_number(x)) if _finite(x) else _nan_or(x),
        "ceil": lambda x=None, *_: math.ceil(to_number(x)) if _finite(x) else _nan_or(x),
        "round": lambda x=None, *_: _math_round(x),
        "abs": lambda x=None, *_: abs(to_number(x)) if x is not None else math.nan,
        "sqrt": lambda x=None, *_: _sqrt(x),
        "max": lambda *a: _extreme(max, a, -math.inf),
        "min": lambda *a: _extreme(min, a, math.inf),
        "pow": lambda x=None, y=None, *_: js_pow(x, y) if y is not None else math.nan,
        "trunc": lambda x=None, *_: math.trunc(to_number(x)) if _finite(x) else _nan_or(x),
        "sign": lambda x=None, *_: _sign(x),
    },
}


def _object_assign(target: Any = None, *sources: Any) -> Any:
    if type(target) is not JSObject:
        raise AgencyRuntimeError("Object.assign expects an object")
    for s in sources:
        if type(s) is JSObject:
            target.update(s)
    return target


def _extreme(pick: Callable[..., Any], args: tuple[Any, ...], empty: float) -> Any:
    """Math.max / Math.min: NaN if any argument is NaN, as in JavaScript."""
    nums = [to_number(x) for x in args]
    if any(n != n for n in nums):
        return math.nan
    return pick(nums, default=empty)


def _finite(x: Any) -> bool:
    n = to_number(x)
    return x is not None and n == n and n not in (math.inf, -math.inf)


def _nan_or(x: Any) -> Any:
    """What Math.floor and the like give for a value that is not a finite number: NaN for a
    missing argument (JavaScript's undefined), else the number itself (NaN, ±Infinity)."""
    return math.nan if x is None else to_number(x)


def _sqrt(x: Any) -> Any:
    n = to_number(x)
    if x is None or n != n or n < 0:
        return math.nan
    if n == math.inf:
        return n
    return _num(math.sqrt(n if type(n) is float or n < 2**53 else float(n)))


def _sign(x: Any) -> Any:
    n = to_number(x)
    if x is None or n != n:
        return math.nan
    return (n > 0) - (n < 0)


def _num(f: float) -> Any:
    return int(f) if f.is_integer() else f


# -- files ---------------------------------------------------------------------------------------


@builtin("read")
def _read(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    path_arg = _arg(args, named, 0, "path")
    if path_arg is None:
        path_arg = named.get("filename")
    dir_ = _arg(args, named, 1, "dir")
    if dir_ is not None:  # read(filename, dir): the file inside an explicitly named directory
        path = builtins_fs.inside(m, path_arg, dir_, changes=False, what="read")
    else:
        path = m.world.resolve(path_arg)

    def act() -> str:
        try:
            return read_text(path, "read:", AgencyRuntimeError, str(path_arg))
        except OSError as exc:
            raise AgencyRuntimeError(f"read: cannot read {path.name}: {exc.strerror}") from None

    return observe(m, "read", {"path": path_arg}, act)  # type: ignore[no-any-return]


@builtin("write")
def _write(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    path_arg = _arg(args, named, 0, "path")
    if path_arg is None:
        path_arg = named.get("filename")
    text = well_formed(to_str(_arg(args, named, 1, "text", named.get("content", ""))))
    dir_ = _arg(args, named, 2, "dir")
    if dir_ is not None:  # write(filename, content, dir), inside the working directory
        path = builtins_fs.inside(m, path_arg, dir_, changes=True, what="write")
        path_arg = str(path.relative_to(m.world.root))
    else:
        path = m.world.resolve(path_arg)

    def act() -> Any:
        try:
            atomic_write(path, text)
        except OSError as exc:
            raise AgencyRuntimeError(f"write: cannot write {path_arg}: {exc.strerror}") from None
        return True

    args_ = {"path": path_arg, "bytes": len(text), "sha256": content_hash(text)}
    return perform(m, "write", args_, act, lambda: file_holds(path, text))


@builtin("saveToDisk")
def _save_to_disk(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    value = _arg(args, named, 0, "value")
    path_arg = _arg(args, named, 1, "path")
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
    path_arg = _arg(args, named, 0, "path")
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
    ident = _arg(args, named, 0, "id")
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
    target = _arg(args, named, 0, "checkpoint")
    options = _arg(args, named, 1, "options")
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
        if f.code.kind == "prelude" and f.code.name in ("interrupt", "__guard_check"):
            outer = f.locals.get("__i")
            done = f.locals.get("__n")
            if type(outer) is JSObject and isinstance(done, (int, float)):
                handlers.extend(outer["handlers"][int(done) :])
                return handlers, True
        for h in reversed(f.handlers):
            # i: the frame a handler body reads from
            (weakest if h[0] == PREAPPROVE[0] else handlers).append(JSArray([*h, i]))
    handlers.extend(weakest)
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
    answer = call_model(m, args[0])
    builtins_fork.llm_tick(m)  # inside a race branch: a loser stops here
    return answer


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


@builtin("__call")
def _call_value(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """Call a function value with positional args (used by the prelude's map/filter/...)."""
    fn = args[0]
    if type(fn) is BoundFunction or type(fn) is Closure:
        return TailCall(fn, list(args[1:]))
    if type(fn) is not FuncRef:
        raise AgencyRuntimeError(f"expected a function, got {type_name(fn)}")
    return TailCall(fn.name, list(args[1:]))


# -- members and methods ------------------------------------------------------------------------


def get_member(obj: Any, name: str) -> Any:
    """`obj.name` for every kind of value."""
    t = type(obj)
    if t is JSObject:
        return obj.get(name)
    if t is JSArray or t is str:
        if name == "length":
            return len(obj)
        return None
    if t is Result:
        if name == "value":
            return obj.value
        if name == "error":
            return obj.error
        if name == "checkpoint":
            return obj.checkpoint
        if name == "success":
            return obj.ok
        if name == "skippedFunctions":
            return JSArray(JSObject({"name": n, "param": p}) for n, p in obj.skipped)
        if name == "functionName":
            return obj.origin
        if name == "destructiveRan":
            return obj.destructive
        if name == "neverStarted":
            return False if not obj.ok else None
        return None
    if obj is None:
        raise AgencyRuntimeError(f"cannot read property `{name}` of null")
    if t is FuncRef:
        if name == "name":
            return obj.name
        if obj.name in NAMESPACES and name in NAMESPACES[obj.name]:
            return FuncRef(f"{obj.name}.{name}")
        return None
    if t is BoundFunction:
        return obj.name if name == "name" else None
    if t in classes.CLASS_TYPES:
        return classes.get_member(obj, name)
    if t is Decision:
        if name == "action" or name == "type":
            return obj.action
        if name == "value":
            return obj.value
    return None


def call_method(m: Machine, obj: Any, name: str, args: list[Any] | None) -> Any:
    """`obj.name` when `args` is None, else `obj.name(*args)`."""
    if args is None:
        return get_member(obj, name)
    t = type(obj)
    if t is JSArray:
        fn = ARRAY_METHODS.get(name)
        if fn is not None:
            return fn(m, obj, args)
    elif t is str:
        fn2 = STRING_METHODS.get(name)
        if fn2 is not None:
            return fn2(obj, args)
    elif t is int or t is float:
        if name == "toFixed":
            from decimal import ROUND_HALF_UP, Decimal

            digits = integer(args[0]) if args else 0
            if not 0 <= digits <= 100:  # as JavaScript's RangeError
                raise AgencyRuntimeError(
                    f"toFixed() digits must be between 0 and 100, got {to_str(args[0])}"
                )
            if obj != obj or abs(obj) >= 1e21:  # JavaScript: NaN, Infinity, 1e+21
                return format_number(obj)
            q = Decimal(1).scaleb(-digits)
            return str(Decimal(obj).quantize(q, rounding=ROUND_HALF_UP))
        if name == "toString":
            return format_number(obj)
    elif t in classes.CLASS_TYPES:
        return classes.call_method(m, obj, name, args)
    elif t is FuncRef and obj.name == "Date" and name == "now":
        return classes.now_ms(m)
    elif t is FuncRef and obj.name in NAMESPACES:
        ns = NAMESPACES[obj.name]
        if name in ns:
            return ns[name](*args)
    elif t is JSObject:
        if is_regex(obj):
            return builtins_values.regex_method(obj, name, args)
        if name == "hasOwnProperty":
            return to_str(args[0] if args else None) in obj
        if name == "toString":
            return to_str(obj)
    elif obj is None:
        raise AgencyRuntimeError(f"cannot call method `{name}` of null")
    if t is not JSObject and name == "toString":
        return to_str(obj)
    if t is Result:
        if obj.ok:
            raise AgencyRuntimeError(
                f"cannot call `.{name}()` on a Result; unwrap it first: `r.value.{name}()`"
            )
        origin = f" returned by `{obj.origin}`" if obj.origin else ""
        raise AgencyRuntimeError(
            f"cannot call `.{name}()` on a failure{origin}: {to_str(obj.error)}"
        )
    raise AgencyRuntimeError(f"{a_type(obj)} has no method `{name}`")


def _a(args: list[Any], i: int, default: Any = None) -> Any:
    return args[i] if i < len(args) else default


def _slice_index(v: Any, n: int, default: int) -> int:
    if v is None:
        return default
    i = integer(v)
    if i < 0:
        i = max(n + i, 0)
    return min(i, n)


def _arr_push(m: Machine, arr: JSArray, args: list[Any]) -> int:
    m.splice(arr, len(arr), 0, tuple(args))
    return len(arr)


def _arr_pop(m: Machine, arr: JSArray, args: list[Any]) -> Any:
    if not arr:
        return None
    return m.splice(arr, len(arr) - 1, 1, ())[0]


def _arr_shift(m: Machine, arr: JSArray, args: list[Any]) -> Any:
    if not arr:
        return None
    return m.splice(arr, 0, 1, ())[0]


def _arr_unshift(m: Machine, arr: JSArray, args: list[Any]) -> int:
    m.splice(arr, 0, 0, tuple(args))
    return len(arr)


def _arr_splice(m: Machine, arr: JSArray, args: list[Any]) -> JSArray:
    n = len(arr)
    start = _slice_index(_a(args, 0, 0), n, 0)
    count = n - start if len(args) < 2 else max(0, min(integer(args[1]), n - start))
    return m.splice(arr, start, count, tuple(args[2:]))


def _arr_concat(arr: JSArray, args: list[Any]) -> JSArray:
    n = len(arr) + sum(len(v) if type(v) is JSArray else 1 for v in args)
    if n > SMALL:
        check_array_length(n)
    return JSArray([*arr, *(x for v in args for x in (v if type(v) is JSArray else [v]))])


def _arr_index_of(arr: JSArray, x: Any) -> int:
    for i, v in enumerate(arr):
        if js_eq(v, x):
            return i
    return -1


def _arr_join(m: Machine, arr: JSArray, args: list[Any]) -> str:
    sep = "," if not args or args[0] is None else to_str(args[0])
    return checked(sep.join("" if v is None else to_str(v) for v in arr))


def checked(s: str) -> str:
    """`s`, refused when longer than a program may build (after the fact: for results at most
    a few times their inputs' size)."""
    if len(s) > SMALL:
        check_string_length(len(s))
    return s


def _arr_sort(m: Machine, arr: JSArray, args: list[Any]) -> Any:
    if args and type(args[0]) in FUNCTION_TYPES:
        return TailCall("__sort_by", [arr, args[0]])
    items = sorted(arr, key=lambda v: (v is None, to_str(v)))
    m.splice(arr, 0, len(arr), tuple(items))
    return arr


def _arr_reverse(m: Machine, arr: JSArray, args: list[Any]) -> JSArray:
    m.splice(arr, 0, len(arr), tuple(reversed(arr)))
    return arr


def _arr_flat(m: Machine, arr: JSArray, args: list[Any]) -> JSArray:
    out = JSArray()
    for v in arr:
        if type(v) is JSArray:
            out.extend(v)
        else:
            out.append(v)
    return out


def _prelude(name: str) -> Callable[[Machine, JSArray, list[Any]], Any]:
    def method(m: Machine, arr: JSArray, args: list[Any]) -> Any:
        return TailCall(name, [arr, *args])

    return method


ARRAY_METHODS: dict[str, Callable[[Machine, JSArray, list[Any]], Any]] = {
    "push": _arr_push,
    "pop": _arr_pop,
    "shift": _arr_shift,
    "unshift": _arr_unshift,
    "splice": _arr_splice,
    "includes": lambda m, a, args: _arr_index_of(a, _a(args, 0)) >= 0,
    "indexOf": lambda m, a, args: _arr_index_of(a, _a(args, 0)),
    "lastIndexOf": lambda m, a, args: (
        len(a) - 1 - _arr_index_of(JSArray(reversed(a)), _a(args, 0))
        if _arr_index_of(a, _a(args, 0)) >= 0
        else -1
    ),
    "join": _arr_join,
    "slice": lambda m, a, args: JSArray(
        a[_slice_index(_a(args, 0), len(a), 0) : _slice_index(_a(args, 1), len(a), len(a))]
    ),
    "concat": lambda m, a, args: _arr_concat(a, args),
    "at": lambda m, a, args: (
        a[integer(_a(args, 0, 0))] if -len(a) <= integer(_a(args, 0, 0)) < len(a) else None
    ),
    "reverse": _arr_reverse,
    "sort": _arr_sort,
    "flat": _arr_flat,
    "toString": lambda m, a, args: to_str(a),
    "map": _prelude("__arr_map"),
    "filter": _prelude("__arr_filter"),
    "reduce": _prelude("__arr_reduce"),
    "find": _prelude("__arr_find"),
    "findIndex": _prelude("__arr_findIndex"),
    "some": _prelude("__arr_some"),
    "every": _prelude("__arr_every"),
    "forEach": _prelude("__arr_forEach"),
}


def _str_replace(s: str, args: list[Any], count: int) -> str:
    old, new = to_str(_a(args, 0, "")), to_str(_a(args, 1, ""))
    if "$" not in new:
        return s.replace(old, new, count) if count > 0 else s.replace(old, new)
    # JavaScript replacement patterns: `$$` `$&` `` $` `` `$'`.
    out, start, done = [], 0, 0
    while count == 0 or done < count:
        i = s.find(old, start)
        if i < 0:
            break
        out.extend([s[start:i], _substitution(new, old, s[:i], s[i + len(old) :])])
        done += 1
        start = i + len(old)
        if not old:  # an empty pattern matches between every two characters
            if i >= len(s):
                break
            out.append(s[i])
            start += 1
    return "".join(out) + s[start:]


def _substitution(template: str, matched: str, before: str, after: str) -> str:
    parts = {"$": "$", "&": matched, "`": before, "'": after}
    out, i = [], 0
    while i < len(template):
        c = template[i]
        if c == "$" and i + 1 < len(template) and template[i + 1] in parts:
            out.append(parts[template[i + 1]])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _repeat(s: str, count: Any) -> str:
    n = to_number(count)
    if n != n:
        n = 0
    if n < 0 or n == math.inf:
        raise AgencyRuntimeError(
            f"repeat() count must be a finite number of 0 or more, got {to_str(count)}"
        )
    n = int(n)
    if n * len(s) > SMALL:
        check_string_length(n * len(s))
    return s * n


def _pad(s: str, args: list[Any], start: bool) -> str:
    width = integer(_a(args, 0, 0))
    fill = " " if _a(args, 1) is None else to_str(args[1])
    if width <= len(s) or not fill:
        return s
    if width > SMALL:
        check_string_length(width)
    need = width - len(s)
    padding = (fill * (need // len(fill) + 1))[:need]
    return padding + s if start else s + padding


def _str_split(s: str, args: list[Any]) -> JSArray:
    sep = _a(args, 0)
    if sep is None:
        return JSArray([s])
    sep = to_str(sep)
    parts = list(s) if sep == "" else s.split(sep)
    if len(args) > 1 and args[1] is not None:
        parts = parts[: max(0, integer(args[1]))]
    return JSArray(parts)


def _position(args: list[Any], n: int, default: int) -> int:
    """The optional second argument of indexOf/includes/startsWith/endsWith, clamped to 0..n."""
    v = _a(args, 1)
    if v is None:
        return default
    x = to_number(v)
    return default if x != x else int(min(max(x, 0), n))


def _substring(s: str, args: list[Any]) -> str:
    n = len(s)
    a = min(max(integer(_a(args, 0, 0)), 0), n)
    b = n if _a(args, 1) is None else min(max(integer(args[1]), 0), n)
    return s[min(a, b) : max(a, b)]


STRING_METHODS: dict[str, Callable[[str, list[Any]], Any]] = {
    "split": _str_split,
    "trim": lambda s, a: s.strip(),
    "trimStart": lambda s, a: s.lstrip(),
    "trimEnd": lambda s, a: s.rstrip(),
    "startsWith": lambda s, a: s.startswith(to_str(_a(a, 0, "")), _position(a, len(s), 0)),
    "endsWith": lambda s, a: s.endswith(to_str(_a(a, 0, "")), 0, _position(a, len(s), len(s))),
    "includes": lambda s, a: s.find(to_str(_a(a, 0, "")), _position(a, len(s), 0)) >= 0,
    "indexOf": lambda s, a: s.find(to_str(_a(a, 0, "")), _position(a, len(s), 0)),
    "lastIndexOf": lambda s, a: s.rfind(to_str(_a(a, 0, ""))),
    "replace": lambda s, a: checked(_str_replace(s, a, 1)),
    "replaceAll": lambda s, a: checked(_str_replace(s, a, 0)),
    "toLowerCase": lambda s, a: s.lower(),
    "toUpperCase": lambda s, a: s.upper(),
    "substring": _substring,
    "slice": lambda s, a: s[
        _slice_index(_a(a, 0), len(s), 0) : _slice_index(_a(a, 1), len(s), len(s))
    ],
    "charAt": lambda s, a: s[integer(_a(a, 0, 0))] if 0 <= integer(_a(a, 0, 0)) < len(s) else "",
    "repeat": lambda s, a: _repeat(s, _a(a, 0, 0)),
    "padStart": lambda s, a: _pad(s, a, True),
    "padEnd": lambda s, a: _pad(s, a, False),
    "toString": lambda s, a: s,
    "at": lambda s, a: (
        s[integer(_a(a, 0, 0))] if -len(s) <= integer(_a(a, 0, 0)) < len(s) else None
    ),
}


# Namespaced functions (JSON.stringify, Math.max, ...) are also callable through FuncRef values
# named "JSON.stringify": register them as builtins so `const f = Math.max; f(1, 2)` works.
def _register_namespaces() -> None:
    for ns, members in NAMESPACES.items():
        for member, fn in members.items():

            def call(m: Machine, args: list[Any], named: dict[str, Any], fn: Any = fn) -> Any:
                return fn(*args)

            BUILTINS[f"{ns}.{member}"] = call


_register_namespaces()


# -- function values: f.partial(a: 1), f.describe(text), f.rename(name), f.preapprove() --------

# The handler a preapproved function's frame opens (checkpoints store handlers as two strings).
PREAPPROVE = ("preapprove", "approve")

FUNCTION_METHODS = frozenset({"partial", "describe", "rename", "preapprove"})


def function_method(
    m: Machine, fn: FuncRef | BoundFunction, name: str, args: list[Any], named: dict[str, Any]
) -> BoundFunction:
    """A new function value derived from `fn`; `fn` itself never changes."""
    bf = fn if type(fn) is BoundFunction else BoundFunction(fn)  # type: ignore[arg-type]
    base = bf.base.name
    if name == "partial":
        if args:
            raise AgencyRuntimeError(
                f"{base}.partial() binds parameters by name only, e.g. {base}.partial(x: 1)"
            )
        code = m.functions.get(base)
        for key in named:
            if code is not None and key not in code.param_names:
                raise AgencyRuntimeError(f"Unknown named argument '{key}' in call to '{base}'")
            if key in bf.bound:
                raise AgencyRuntimeError(f"parameter '{key}' of '{base}' is already bound")
        return bf.derive(bound={**bf.bound, **named})
    if name == "preapprove":
        return bf.derive(preapprove=True)
    text = _arg(args, named, 0, "description" if name == "describe" else "name")
    if type(text) is not str:
        raise AgencyRuntimeError(f"{base}.{name}() expects a string, got {type_name(text)}")
    if name == "describe":
        return bf.derive(description=text)
    if not text:
        raise AgencyRuntimeError(f"{base}.rename() needs a non-empty name")
    return bf.derive(tool_name=text)


def bind_call(
    m: Machine, fn: BoundFunction, args: list[Any], named: dict[str, Any]
) -> tuple[list[Any], dict[str, Any]]:
    """The arguments a call of a bound function passes to its base: positional arguments fill
    the parameters left unbound, in declaration order (a rest parameter takes the remainder);
    extra ones are dropped, as JavaScript does (`xs.map(add5)` passes an index too)."""
    merged = dict(fn.bound)
    code = m.functions.get(fn.base.name)
    if code is None:  # a builtin: its own positions, plus what was bound by name
        merged.update(named)
        return list(args), merged
    free = [p for p in code.params if p.name not in merged and p.name not in named]
    i = 0
    for p in free:
        if i >= len(args):
            break
        if p.rest:
            merged[p.name] = JSArray(args[i:])
            i = len(args)
            break
        merged[p.name] = args[i]
        i += 1
    for key, v in named.items():
        if key in fn.bound:
            raise AgencyRuntimeError(f"parameter '{key}' of '{fn.base.name}' is already bound")
        merged[key] = v
    return [], merged


# -- JavaScript classes: `new Set(xs)` is the call `Set(xs)` (see classes.py) -------------------


def _register_classes() -> None:
    for name, make in classes.CONSTRUCTORS.items():

        def construct(m: Machine, args: list[Any], named: dict[str, Any], make: Any = make) -> Any:
            return make(m, args)

        builtin(name)(construct)


_register_classes()


@builtin("Array")
def _array_ns(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    raise AgencyRuntimeError("Array is not a function (use Array.from or an array literal)")


def _date_now(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    return classes.now_ms(m)


BUILTINS["Date.now"] = _date_now  # `const now = Date.now; now()`
