"""Provides the thread registry behind `thread(label:, hidden:, session:, continue:) { … }`,
`const msgs = thread { … }` and std::thread's `currentThreadId`, `listThreads`, `getThread`.

Message threads themselves are machine state (`Machine.threads`, rolled back by restore). What
the registry adds is metadata per thread id (label, hidden, parent, kind, summary) and the
session names, kept as `getMutable`-style entries: they are saved in snapshots and survive
restore, like thread ids, which are never reused. Each change replaces the table (so snapshots
taken earlier keep theirs) and is logged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.vm.builtin_base import arg, builtin
from runtime.vm.reply_attachments import content_text
from runtime.vm.values import JSArray, JSObject, Result, to_number, to_str, truthy
from runtime.vm.writelog import W_ACTIVE, W_SHARED

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

REGISTRY = "__threads"  # m.mutable: {id: {label, hidden, parentId, threadType, summary}}
SESSIONS = "__threadSessions"  # m.mutable: {session name: thread id}


def _table(m: Machine, key: str) -> JSObject:
    """A copy of a registry table, to change and put back with `store_mutable`."""
    old = m.mutable.get(key)
    table = JSObject()
    if type(old) is JSObject:
        for k, v in old.items():
            table[k] = JSObject(v) if type(v) is JSObject else v
    return table


def store_mutable(m: Machine, key: str, table: Any) -> None:
    """`getMutable`-style state: set, logged (kept in snapshots, survives restore)."""
    m.mutable[key] = table
    m.log((W_SHARED, "mutable:" + key, table))


def parent_of(m: Machine) -> str:
    """The thread that was active before the innermost frame's newest thread opened."""
    frames = m.frames
    top = frames[-1].threads
    if len(top) > 1:
        return top[-2]
    for f in reversed(frames[:-1]):
        if f.threads:
            return f.threads[-1]
    return "0"


def _switch(m: Machine, tid: str) -> None:
    """Make the innermost frame's newest thread `tid` (a session's or an earlier thread)."""
    m.frames[-1].threads[-1] = tid
    if m.wlog is not None:
        m.wlog.append((W_ACTIVE, tid))


@builtin("__thread_setup")
def _thread_setup(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    """The options of the thread block that just opened; returns the thread's id."""
    kind = to_str(args[0]) if args else "thread"
    opts = args[1] if len(args) > 1 and type(args[1]) is JSObject else JSObject()
    frame = m.frames[-1]
    if not frame.threads:
        raise AgencyRuntimeError("internal error: no thread block is open")
    tid = opened = frame.threads[-1]
    parent = parent_of(m)
    again = opts.get("continue")
    session = opts.get("session")
    if again is not None:
        target = internal_id(again)
        if target not in m.threads:
            raise AgencyRuntimeError(f"thread(continue: …): no thread with id {to_str(again)!r}")
        tid = target
        _switch(m, tid)
    elif session is not None and to_str(session) != "":  # `session: ""` is no session
        name = to_str(session)
        sessions = _table(m, SESSIONS)
        known = sessions.get(name)
        if type(known) is str and known in m.threads:
            tid = known
            _switch(m, tid)
        else:
            sessions[name] = tid
            store_mutable(m, SESSIONS, sessions)
    registry = _table(m, REGISTRY)
    if tid != opened:  # the fresh thread the block opened stays empty: keep it out of lists
        registry[opened] = JSObject({"hidden": True})
    entry = registry.get(tid)
    if type(entry) is not JSObject:
        entry = JSObject(
            {
                "label": None,
                "hidden": False,
                "parentId": parent,
                "threadType": kind,
                "summary": None,
            }
        )
    if opts.get("label") is not None:
        entry["label"] = to_str(opts["label"])
    if "hidden" in opts:
        entry["hidden"] = truthy(opts["hidden"])
    registry[tid] = entry
    store_mutable(m, REGISTRY, registry)
    return tid


def public_id(tid: str) -> str:
    """A thread's id as programs see it: `t0` is the run's default thread, `t1`, `t2`, … the
    threads opened after it."""
    return "t" + tid


def internal_id(value: Any) -> str:
    """The machine's key for a thread id a program passed (`t3`, or `3`)."""
    text = to_str(value)
    return text[1:] if text[:1] == "t" and text[1:].isdigit() else text


def messages_of(m: Machine, tid: str) -> JSArray:
    """Thread `tid`'s messages as programs read them: {role, content}, content as text."""
    return JSArray(
        JSObject({"role": msg.get("role"), "content": content_text(msg.get("content"))})
        for msg in m.threads.get(tid, [])
    )


@builtin("__thread_value")
def _thread_value(m: Machine, args: list[Any], named: dict[str, Any]) -> JSArray:
    """What `const msgs = thread { … }` binds: the thread's messages as {role, content}."""
    return messages_of(m, internal_id(args[0]) if args else m.active_thread())


@builtin("__thread_current")
def _thread_current(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    return public_id(m.active_thread())


@builtin("__thread_list")
def _thread_list(m: Machine, args: list[Any], named: dict[str, Any]) -> JSArray:
    """Every thread of the run that is not hidden, oldest first, with its messages."""
    registry = m.mutable.get(REGISTRY)
    registry = registry if type(registry) is JSObject else JSObject()
    # Only the thread being written to is active (as in the reference): an enclosing thread
    # block's thread is not, so listThreads() may summarize it.
    active = m.active_thread()
    out = JSArray()
    for tid in sorted(m.threads, key=lambda t: (len(t), t)):
        meta = registry.get(tid)
        meta = meta if type(meta) is JSObject else JSObject()
        if meta.get("hidden"):
            continue
        messages = messages_of(m, tid)
        out.append(
            JSObject(
                {
                    "id": public_id(tid),
                    "label": meta.get("label"),
                    "summary": meta.get("summary"),
                    "parentId": None
                    if meta.get("parentId") is None
                    else public_id(meta["parentId"]),
                    "threadType": meta.get("threadType") or "thread",
                    "messageCount": len(messages),
                    "isActive": tid == active,
                    "messages": messages,
                }
            )
        )
    return out


@builtin("__thread_get")
def _thread_get(m: Machine, args: list[Any], named: dict[str, Any]) -> Result:
    given = arg(args, named, 0, "id", "")
    tid = internal_id(given)
    if tid not in m.threads:  # the reference lets a program probe: an unknown id has no messages
        return Result(True, value=JSArray())
    offset = int(to_number(arg(args, named, 1, "offset", 0) or 0))
    limit = arg(args, named, 2, "limit", None)
    messages = messages_of(m, tid)
    end = len(messages) if limit is None else offset + int(to_number(limit))
    return Result(True, value=JSArray(messages[max(offset, 0) : end]))


@builtin("__thread_set_summary")
def _thread_set_summary(m: Machine, args: list[Any], named: dict[str, Any]) -> None:
    tid = internal_id(args[0]) if args else ""
    registry = _table(m, REGISTRY)
    entry = registry.get(tid)
    if type(entry) is not JSObject:
        entry = JSObject({"label": None, "hidden": False, "parentId": None, "summary": None})
    entry["summary"] = to_str(args[1]) if len(args) > 1 and args[1] is not None else None
    registry[tid] = entry
    store_mutable(m, REGISTRY, registry)
    return None
