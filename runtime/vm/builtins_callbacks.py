"""Provides callback hooks: `callback("onFunctionStart") as data { … }` and
`callback("onFunctionStart", namedFn)`.

A registration is data: one made at the top level of a module goes into the hidden global
`__callbacks` (active for the whole run); one made inside a def, node or block goes into that
frame's hidden `__callbacks` local and ends when the frame returns. Registering anything sets the
hidden global `__hooks`, which is what the machine tests before looking for callbacks on a call.
When a def is called while callbacks for `onFunctionStart` are active, the machine calls the
prelude's `__hooked_call` instead, which runs each callback (innermost registration scope first,
in registration order within a scope) and then the def. A callback's own calls fire nothing.

`onFunctionEnd` ({functionName, timeTaken}) runs after the def returns, in the same
`__hooked_call`; `onToolCallStart` ({toolName, args}) and `onToolCallEnd` ({toolName, result,
timeTaken}) around each tool call `llm()` makes; `onLLMCallEnd` ({model, result: {output,
toolCalls}, usage, cost, timeTaken, messages}) after each answer. timeTaken (ms) reads the recorded clock, and
only while someone listens, so a run without these callbacks reads no clock.

`onNodeEnd` ({nodeName, data}) fires as a node falls off its end, and `onAgentEnd` ({nodeName,
result: {messages, data, tokens}}) once the run's last node returned (`__node_end`,
`__agent_end`: the compiler calls them there).

`onNodeStart` ({nodeName}) fires as a node begins: the entry node, and each node a transition
enters; the machine calls the prelude's `__hooked_node`, which runs the callbacks and then enters
the node.

A child program (std::agency's `run()`) forwards its lifecycle events to its parent: the parent
tells it which hooks it (or an ancestor of it) has callbacks for, the child puts each such event
into its `outbox`, and after each segment the parent relays them upward and runs its own
callbacks for them (`forwarded_calls`). Forwarded events only observe: they never change the
child's run.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.language.bytecode import FuncRef
from runtime.vm.builtin_base import arg, builtin
from runtime.vm.builtins_fork import _clone as clone_value
from runtime.vm.builtins_std import now_ms
from runtime.vm.builtins_threads import REGISTRY as THREAD_REGISTRY
from runtime.vm.builtins_threads import messages_of, parent_of, public_id
from runtime.vm.frames import TailCall
from runtime.vm.values import (
    FUNCTION_TYPES,
    Closure,
    JSArray,
    JSObject,
    from_plain,
    to_str,
    truthy,
    type_name,
)
from runtime.vm.writelog import PLAIN

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

REGISTRY = "__callbacks"  # where registrations live: a frame's local, or a module global
ACTIVE = "__hooks"  # module global set once anything registered: the machine's cheap test
HOOKED_CALL = "__hooked_call"  # the prelude function that runs the callbacks, then the call
FIRE_CALLBACKS = "__fire_callbacks"  # the prelude function that runs an event's callbacks
HOOKED_NODE = "__hooked_node"  # the prelude function that runs onNodeStart, then the node
AGENT_ENDED = "__agent_ended"  # the prelude function that runs onAgentEnd, then gives the result
_FIRING_FRAMES = (HOOKED_CALL, FIRE_CALLBACKS, HOOKED_NODE, AGENT_ENDED)
# The functions every program has (std::index) that the reference writes in Agency, so its
# `onFunctionStart` / `onFunctionEnd` callbacks fire for them as for the program's own defs:
# here they are builtins (with the reference's parameter names, for the event's `args`) or
# prelude defs (which the prelude never calls itself: every call of one is the program's, directly
# or as a function value, `map(xs, print)`).
STD_INDEX_BUILTINS: dict[str, tuple[str, ...]] = {
    "print": ("...messages",),
    "printJSON": ("obj", "highlight"),
    "input": ("prompt",),
    "sleep": ("ms",),
    "range": ("start", "end"),
}
STD_INDEX_PRELUDE = frozenset(
    (
        "saveDraft read write readBinary writeBinary map mapWithIndex filter exclude find "
        "findIndex reduce flatMap flatten every some count sortBy unique groupBy"
    ).split()
)


def builtin_call_args(name: str, args: list[Any], named: dict[str, Any]) -> JSObject:
    """A hooked builtin call's arguments by the reference's parameter names."""
    out = JSObject()
    params = STD_INDEX_BUILTINS[name]
    for i, param in enumerate(params):
        if param.startswith("..."):
            out[param[3:]] = JSArray(args[i:])
        elif i < len(args):
            out[param] = args[i]
    for key, value in named.items():
        if key in params:
            out[key] = value
    return out


# A child's events kept for its parent per segment at most; more are dropped (forwarding only
# observes, as the reference drops an oversize message), so a busy child cannot fill memory.
OUTBOX_MAX = 100_000


def _log(m: Machine, record: tuple[Any, ...], value: Any) -> None:
    if m.wlog is not None:
        enc = value if type(value) in PLAIN else m.rec.enc_now(value)
        m.wlog.append((*record, enc))


@builtin("callback")
def _callback(m: Machine, args: list[Any], named: dict[str, Any]) -> None:
    """Register `fn` for the hook named `hook` until the registering frame returns (for the whole
    run when registered at the top level of a module)."""
    hook = arg(args, named, 0, "name")
    fn = arg(args, named, 1, "fn")
    if type(hook) is not str:
        raise AgencyRuntimeError(
            'callback: the hook\'s name must be a string, like "onFunctionStart"'
        )
    if type(fn) not in FUNCTION_TYPES:
        raise AgencyRuntimeError(f'callback("{hook}"): needs a block or a function to call')
    entry = JSArray([hook, fn])
    at = len(m.frames) - 1
    f = m.frames[at]
    if f.code.kind == "module":
        registered = JSArray([*(m.globals.get(REGISTRY) or ()), entry])
        m.globals[REGISTRY] = registered
        _log(m, (2, REGISTRY), registered)
    else:
        registered = JSArray([*(f.locals.get(REGISTRY) or ()), entry])
        f.locals[REGISTRY] = registered
        _log(m, (1, at, REGISTRY), registered)
    if ACTIVE not in m.globals:
        m.globals[ACTIVE] = True
        _log(m, (2, ACTIVE), True)
    return None


def active_callbacks(m: Machine, hook: str) -> JSArray:
    """The callbacks a `hook` event raised now runs, in order; none while a callback runs."""
    found = JSArray()
    for f in reversed(m.frames):
        if f.code.name in _FIRING_FRAMES and f.locals.get("__firing"):
            return JSArray()
        for h, fn in f.locals.get(REGISTRY) or ():
            if h == hook:
                found.append(fn)
    for h, fn in m.globals.get(REGISTRY) or ():
        if h == hook:
            found.append(fn)
    return found


@builtin("__run_callback")
def _run_callback(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """Call one callback with the event's data (its value is ignored). A block written at the
    top level of a module reads only module variables, so it runs over the current frame."""
    fn, data = arg(args, named, 0, "fn"), arg(args, named, 1, "data")
    _callable(fn, "__run_callback")
    if type(fn) is Closure:
        owner = m.functions.get(fn.owner)
        if owner is None or owner.kind == "module":
            at = len(m.frames) - 1
            fn = Closure(fn.name, at, m.frames[at].code.name)
        return TailCall(fn, [data])
    if type(fn) is FuncRef:
        return TailCall(fn.name, [data])
    return TailCall(fn, [data])


@builtin("__callback_failed")
def _callback_failed(m: Machine, args: list[Any], named: dict[str, Any]) -> None:
    """A callback's body failed: say so on stderr (the run goes on, as in the reference)."""
    message = to_str(args[0]) if args else ""
    m.event("error", f"callback error: {message}", {"handled": True})
    if not m.world.quiet:
        sys.stderr.write(f"[agency] callback error: {message}\n")
        sys.stderr.flush()
    return None


@builtin("__call_spread")
def _call_spread(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """Call a function value with an array of arguments and an object of named ones."""
    fn = arg(args, named, 0, "fn")
    call_args, call_named = arg(args, named, 1, "args"), arg(args, named, 2, "named")
    _callable(fn, "__call_spread")
    if not isinstance(call_args, JSArray | None) or not isinstance(call_named, dict | None):
        raise AgencyRuntimeError("__call_spread takes a function, an array and an object")
    target = fn.name if type(fn) is FuncRef else fn
    return TailCall(target, list(call_args or ()), dict(call_named or {}))


def _callable(fn: Any, what: str) -> None:
    if type(fn) not in FUNCTION_TYPES:
        raise AgencyRuntimeError(f"{what}: expected a function, got {type_name(fn)}")


@builtin("__callbacks_for")
def _callbacks_for(m: Machine, args: list[Any], named: dict[str, Any]) -> JSArray:
    """The callbacks an event of hook `name` runs now, in order (std::statelog's `emit`). Given
    the event's data, a child program also forwards the event to its parent."""
    hook = arg(args, named, 0, "name")
    if type(hook) is not str:
        return JSArray()
    if len(args) > 1:
        forward(m, hook, args[1])
    return active_callbacks(m, hook)


def forward(m: Machine, hook: str, data: Any) -> None:
    """Hand an event to the parent program when one of its callbacks (or an ancestor's) listens
    for `hook`; nothing happens in a program that is not a child."""
    if hook in m.forward and len(m.outbox) < OUTBOX_MAX and not firing(m):
        m.outbox.append((hook, data))


def firing(m: Machine) -> bool:
    """True while a callback runs (its own calls raise no events)."""
    for f in reversed(m.frames):
        if f.code.name in _FIRING_FRAMES and f.locals.get("__firing"):
            return True
    return False


def forwarded_calls(m: Machine, events: list[tuple[str, Any]]) -> JSArray:
    """The parent's side of a child's forwarded events: relay each one further up (this
    program may itself be a child) and pair it with the callbacks this program runs for it:
    `[[callbacks, data], …]`, for the prelude's `__child_events`."""
    calls = JSArray()
    for hook, data in events:
        forward(m, hook, data)
        fns = active_callbacks(m, hook)
        if fns:
            calls.append(JSArray([fns, data]))
    return calls


def listening(m: Machine, hook: str) -> bool:
    """Whether an event of `hook` raised now runs a callback or goes to a parent program."""
    return (hook in m.forward and not firing(m)) or bool(active_callbacks(m, hook))


@builtin("__hook_clock")
def _hook_clock(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """The clock (ms) when someone listens for the hook named, else 0: where a timeTaken
    starts."""
    hook = arg(args, named, 0, "hook")
    return now_ms(m) if type(hook) is str and listening(m, hook) else 0


@builtin("__hook_elapsed")
def _hook_elapsed(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """Milliseconds since `__hook_clock` gave `start` (0 when it gave 0: nobody listened)."""
    start = arg(args, named, 0, "start")
    if not start:
        return 0
    return now_ms(m) - start


def listened(m: Machine) -> frozenset[str]:
    """The hooks a child program run from here forwards: those this program has callbacks
    for now, and those its own parent listens for."""
    hooks = set(m.forward)
    for f in m.frames:
        for h, _fn in f.locals.get(REGISTRY) or ():
            hooks.add(h)
    for h, _fn in m.globals.get(REGISTRY) or ():
        hooks.add(h)
    return frozenset(hooks)


# -- thread blocks -------------------------------------------------------------------------------


@builtin("__thread_event")
def _thread_event(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """A thread block began (after its options) or is ending: run the `onThreadStart` /
    `onThreadEnd` callbacks that listen, with the thread's id, type, parent (a subthread's),
    label, whether the block resumed an earlier thread; at the end its messages. Nothing when
    none listens."""
    which = to_str(args[0]) if args else "start"
    kind = to_str(args[1]) if len(args) > 1 else "thread"
    hook = "onThreadStart" if which == "start" else "onThreadEnd"
    fns = active_callbacks(m, hook)
    if not fns:
        return None
    tid = m.active_thread()
    entry = m.mutable.get(THREAD_REGISTRY)
    info = entry.get(tid) if type(entry) is JSObject else None
    label = info.get("label") if type(info) is JSObject else None
    if which == "start":
        parent = parent_of(m)
        data = JSObject(
            {
                "threadId": public_id(tid),
                "threadType": kind,
                "parentThreadId": public_id(parent) if kind == "subthread" else None,
                "label": label,
                "isResumption": tid != str(m.thread_counter - 1),
            }
        )
    else:
        messages = [dict(msg) for msg in m.threads.get(tid, [])]
        data = JSObject(
            {
                "threadId": public_id(tid),
                "label": label,
                "eagerSummarize": truthy(args[2]) if len(args) > 2 else False,
                "messages": from_plain(messages),
            }
        )
    return TailCall("__fire_callbacks", [fns, data])


# -- node and agent ends -------------------------------------------------------------------------


@builtin("__node_end")
def _node_end(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """A node fell off its end (a `return` or a transition skips this, as in the reference): run
    the `onNodeEnd` callbacks that listen with {nodeName, data} (data is null: the reference
    hands them no value), and forward the event to a listening parent program."""
    if not m.forward and ACTIVE not in m.globals:
        return None
    data = JSObject({"nodeName": to_str(args[0]) if args else m.node, "data": None})
    forward(m, "onNodeEnd", data)
    fns = active_callbacks(m, "onNodeEnd")
    if not fns:
        return None
    return TailCall("__fire_callbacks", [fns, data])


@builtin("__agent_end")
def _agent_end(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """The run's entry node (or the node it handed over to) returned `value`: run the
    `onAgentEnd` callbacks that listen with {nodeName: the entry node, result: {messages, data,
    tokens}}, then give `value` back as the run's result. (A run that pauses for an interrupt
    has not ended: this runs when it resumes and finishes.)"""
    value = args[0] if args else None
    if not m.forward and ACTIVE not in m.globals:
        return value
    # the result as it stood when the node returned: what a callback changes later (a list the
    # result holds and a callback appends to) is not part of it, as the reference copies it
    value = clone_value(value, {})
    u = m.usage
    tokens = JSObject(
        {
            "inputTokens": u["input_tokens"],
            "outputTokens": u["output_tokens"],
            "totalTokens": u["input_tokens"] + u["output_tokens"],
        }
    )
    result = JSObject(
        {"messages": messages_of(m, m.active_thread()), "data": value, "tokens": tokens}
    )
    data = JSObject({"nodeName": m.node, "result": result})
    forward(m, "onAgentEnd", data)
    fns = active_callbacks(m, "onAgentEnd")
    if not fns:
        return value
    return TailCall("__agent_ended", [fns, data, value])
