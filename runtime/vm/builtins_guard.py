"""Provides the host side of `guard(cost:, time:, label:) { … }`, `saveDraft` and `sleep`.

A guard is the prelude function `guard` (runtime/language/prelude.agency). Its frame holds the
guard's state as an ordinary local, `__g` (limits, the cost and clock readings it started from,
what it has been granted), so a checkpoint taken inside a guarded block carries its budget with
it. The budget is checked where work is spent: both dimensions before and after every LLM
request (and after a child program's spend is charged); time also after `sleep`, after the
fake clock moves, at statement boundaries about every millisecond of work (`step_poll`), and
when the block ends. Inside a fork or race branch, time counts the branch's virtual clock (its
sleeps), and a rejected trip of a guard around the fork stops only that branch until the join
(see `_abort`). While a trip is being decided, its guard is frozen. An exceeded budget raises a
`std::guard` interrupt (the prelude's `__guard_check`); a rejection aborts the guard: every
frame above it is dropped and the guard returns the block's saved draft (`saveDraft(v)`, kept
in the frame's hidden `__draft` local) as a success, or a failure describing the trip.
"""

from __future__ import annotations

import bisect
import time
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.language.bytecode import RETURN as _RETURN
from runtime.language.bytecode import STORE_LOCAL as _STORE_LOCAL
from runtime.vm.builtin_base import arg, builtin
from runtime.vm.builtins_fork import (
    FORK_LOCAL,
    branch_clocks,
    branch_sleep,
    innermost_fork_above,
)
from runtime.vm.builtins_std import FAKE_CLOCK, now_ms
from runtime.vm.builtins_values import MAX_SLEEP_MS, journaled_wait
from runtime.vm.effects import observe
from runtime.vm.frames import Decision, Frame, TailCall, UnwindSignal
from runtime.vm.guard_feedback import queue_feedback
from runtime.vm.values import (
    Closure,
    JSArray,
    JSObject,
    Result,
    to_number,
    to_plain,
    to_str,
    truthy,
)
from runtime.vm.writelog import PLAIN, W_SHARED

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

DRAFT = "__draft"  # the hidden local `saveDraft` writes in the frame that called it


def _limit(v: Any, what: str) -> float | None:
    if v is None:
        return None
    n = to_number(v)
    if n != n or n < 0:  # NaN or negative
        raise AgencyRuntimeError(f"guard: `{what}:` must be a non-negative number, got {v!r}")
    return None if n == 0 else float(n)  # zero means no limit on that dimension


@builtin("__guard_open")
def _guard_open(m: Machine, args: list[Any], named: dict[str, Any]) -> JSObject:
    """The state of a new guard: its limits and where cost and clock stood when it began."""
    max_cost = _limit(arg(args, named, 0, "cost"), "cost")
    max_time = _limit(arg(args, named, 1, "time"), "time")
    label = arg(args, named, 2, "label")
    if max_time is not None:
        m.poll_soon()
    return JSObject(
        {
            "label": label,
            "maxCost": max_cost,
            "maxTime": max_time,
            "costBase": m.usage["cost"],
            "timeBase": guard_now(m) if max_time is not None else None,
            "disarmed": JSArray(),
            "aborted": None,
        }
    )


def guard_now(m: Machine) -> Any:
    """The instant time budgets are measured by: the clock plus the virtual time the running
    fork branches have slept (a branch's `sleep` moves its own clock, not the real one)."""
    return now_ms(m) + branch_clocks(m)


def running_guards(m: Machine, deciding: bool = True) -> list[tuple[int, JSObject]]:
    """The running guards, innermost first: (frame index, state). With `deciding` False, not
    the guards whose trip is being decided (the tripped guard and those inside it, while the
    handlers asked about its trip run): they neither trip nor count that time, as the
    reference freezes a scope while its question is out."""
    out = []
    frames = m.frames
    frozen: list[tuple[int, int]] = []
    if not deciding:
        for k in range(len(frames) - 1, -1, -1):
            f = frames[k]
            if f.code.kind == "prelude" and f.code.name == "__guard_check":
                t = f.locals.get("__t")
                if type(t) is JSObject and isinstance(f.locals.get("__n"), (int, float)):
                    frozen.append((int(t["at"]), k))
    for i in range(len(frames) - 1, -1, -1):
        f = frames[i]
        if f.code.kind == "prelude" and f.code.name == "guard":
            g = f.locals.get("__g")
            if type(g) is JSObject and g.get("aborted") is None and not g.get("aborting"):
                if not any(lo <= i < hi for lo, hi in frozen):
                    out.append((i, g))
    return out


# -- time budgets at step boundaries ----------------------------------------------------------

STEP_GUARD = "__step_guard"  # the prelude function a step boundary calls to ask a time guard
POLL = "guard-poll"  # the observed effect marking the step where that call was made
POLL_EVERY = 1024  # at most this many steps between looks at the running time guards
POLL_MS = 1.0  # and about this much work: the next look comes at the step rate just measured


def next_poll(m: Machine) -> int:
    """The step at which to look at the running time guards next: about a millisecond of
    work ahead (a few slow steps, or many fast ones; the next step under a fake clock). While re-executing a record, also each
    step where the recorded run made its check (so it is made there again)."""
    step = m.step_index
    if FAKE_CLOCK in m.mutable:
        # The fake clock moves only when the program moves it, so the look comes at every
        # statement: where a check fires is then the same in every run, rebuilt or replayed.
        return step + 1
    now = time.monotonic()
    last_step, last_time = m.poll_mark
    m.poll_mark = (step, now)
    ahead = step + 16  # (no rate measured yet)
    if 0 <= last_step < step and now > last_time:
        per_ms = (step - last_step) / ((now - last_time) * 1000)
        ahead = step + max(1, min(POLL_EVERY, int(per_ms * POLL_MS)))
    recorded = m.host.recorded if m.replaying else None
    if recorded:
        steps = _poll_steps(m, recorded)
        i = bisect.bisect_right(steps, step)
        if i < len(steps):
            return min(ahead, steps[i])
    return ahead


def _poll_steps(m: Machine, recorded: dict[str, Any]) -> list[int]:
    """The steps where the record holds a check made by `step_poll`, in order (kept on the
    machine while it re-executes that record)."""
    cached = m.poll_steps
    if cached is not None and cached[0] is recorded:
        return cached[1]
    steps = sorted(
        int(key.split(":")[0])
        for key, entry in recorded.items()
        if isinstance(entry, dict) and entry.get("kind") == POLL
    )
    m.poll_steps = (recorded, steps)
    return steps


def timing(m: Machine) -> bool:
    """Whether a guard with a time budget is running (its clock is looked at while one is)."""
    return any(g["maxTime"] is not None for _at, g in running_guards(m))


def step_poll(m: Machine) -> bool:
    """At a statement boundary of the program's own code: is a running time guard over its
    budget? Then the statement waits while `__step_guard` asks about it (pushed here; it
    returns to the statement's start). A long computation is stopped this way, as the
    reference checks its time guards at every step. Live, the clock is peeked without being
    recorded, and a check that fires is recorded (an observed effect at this step); a
    re-execution fires where the record says, never by its own clock."""
    frames = m.frames
    if not frames:
        return False
    top = frames[-1]
    if top.code.kind == "prelude":
        return False
    if m.replaying and m.host.recorded is not None:
        entry = m.host.recorded.get(f"{m.step_index}:0")
        if not isinstance(entry, dict) or entry.get("kind") != POLL:
            return False
    else:
        guards = [
            g
            for _at, g in running_guards(m, deciding=False)
            if g["maxTime"] is not None and "time" not in g["disarmed"]
        ]
        if not guards:
            return False
        now = (
            m.mutable[FAKE_CLOCK] if FAKE_CLOCK in m.mutable else m.world.clock()
        ) + branch_clocks(m)
        if not any(now - g["timeBase"] > g["maxTime"] for g in guards):
            return False
    if m.call_step != m.step_index:  # the check is this step's first effect
        m.call_step, m.call_index = m.step_index, 0
    if m.call_index != 0:
        return False
    observe(m, POLL, {}, lambda: True)
    top.pc = top.stmt_pc  # the statement runs (from its start) once the check returns
    code = m.functions[STEP_GUARD]
    m._push_frame(code, [], {})
    return True


def _draft_above(m: Machine, at: int) -> Any:
    """The innermost saved draft among the frames above frame `at` (a preview for handlers)."""
    frames = m.frames
    for i in range(len(frames) - 1, at, -1):
        if DRAFT in frames[i].locals:
            return frames[i].locals[DRAFT]
    return None


def _over(
    m: Machine, g: JSObject, time_only: bool, now: list[Any]
) -> tuple[str, float, float] | None:
    """(dimension, limit, spent) of the first exceeded budget of guard `g`, or None. `now`
    caches the clock's reading (one journaled read per check)."""
    disarmed = g["disarmed"]
    limit = g["maxCost"]
    if limit is not None and "cost" not in disarmed and not time_only:
        spent = m.usage["cost"] - g["costBase"]
        if spent > limit + 1e-15:
            return "cost", limit, spent
    limit = g["maxTime"]
    if limit is not None and "time" not in disarmed and g["timeBase"] is not None:
        if not now:
            now.append(guard_now(m))
        spent = now[0] - g["timeBase"]
        if spent > limit:
            return "time", limit, spent
    return None


@builtin("__guard_trip")
def _guard_trip(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """The innermost guard over its budget, as {at, message, data}, or null. With `timeOnly`
    (a step that spends no money: a sleep, the end of a guarded block) only time budgets are
    read: a cost budget is asked about at the LLM calls that spend it, so a guard left over
    budget by a rejected trip of a guard inside it is not asked again until it spends more."""
    time_only = truthy(arg(args, named, 0, "timeOnly", False))
    now: list[Any] = []
    for at, g in running_guards(m, deciding=False):
        over = _over(m, g, time_only, now)
        if over is None:
            continue
        dimension, limit, spent = over
        label = g["label"]
        name = f'guard "{label}"' if label is not None else "a guard"
        unit = "$" if dimension == "cost" else ""
        suffix = "" if dimension == "cost" else " ms"
        data = JSObject(
            {
                "dimension": dimension,
                "limit": limit,
                "spent": spent,
                "label": label,
                "maxCost": g["maxCost"],
                "maxTime": g["maxTime"],
                "draftValue": _draft_above(m, at),
            }
        )
        message = (
            f"{name} exceeded its {dimension} budget: spent {unit}{spent:g}{suffix} "
            f"of {unit}{limit:g}{suffix}"
        )
        if not now and any(i >= at and h["maxTime"] is not None for i, h in running_guards(m)):
            now.append(guard_now(m))
        since = now[0] if now else None  # the decision's time is not the work's (_exempt_decision)
        return JSObject({"at": at, "message": message, "data": data, "since": since})
    return None


def _failure_data(trip: JSObject) -> JSObject:
    data = trip["data"]
    cost = data["dimension"] == "cost"
    return JSObject(
        {
            "type": "guardFailure" if cost else "timeoutFailure",
            "label": data["label"],
            "maxCost": data["limit"] if cost else None,
            "actualCost": data["spent"] if cost else None,
            "maxTime": None if cost else data["limit"],
            "actualTime": None if cost else data["spent"],
        }
    )


def _abort(m: Machine, trip: JSObject, error: Any) -> Any:
    """A rejected trip. Raised inside a fork or race branch running in the guarded work, it
    stops that branch only: the fork keeps the trip and runs its other branches (which meet the
    same budget on their own, as concurrent branches would), and its join goes on with the
    abort (`branch_trip_joined`). Otherwise the guarded work stops (`_abort_guard`)."""
    at = int(trip["at"])
    fork_at = innermost_fork_above(m, at, below=len(m.frames))
    if fork_at is None:
        return _abort_guard(m, trip, error)
    return _abort_branch(m, fork_at, trip, error)


def _abort_branch(m: Machine, fork_at: int, trip: JSObject, error: Any) -> Any:
    """Drop the running branch of the fork at frame `fork_at`: what it saved or finalized is
    not salvaged (a branch's partial result has no place in the fork's value)."""
    state = m.frames[fork_at].locals[FORK_LOCAL]
    if state.get("tripped") is None:
        m.set_key(state, "tripped", JSObject({"trip": trip, "error": error}))
    m.event("guard", "branch aborted", {"label": to_plain(trip["data"]["label"])})
    raise UnwindSignal(fork_at, None)


@builtin("__guard_fork_joined")
def _guard_fork_joined(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """The prelude's fork or race joined (`__fork_end` ran; the top frame is the fork's): a
    fork outside any branch moves the running time guards on by its duration, and a trip a
    branch's handlers rejected goes on stopping the guarded work."""
    state = args[0]
    elapsed = state.get("joined") or 0
    if elapsed:
        fork_time_joined(m, elapsed)
    tripped = state.get("tripped")
    if type(tripped) is JSObject:
        return branch_trip_joined(m, tripped)
    return None


def branch_trip_joined(m: Machine, tripped: JSObject) -> Any:
    """A fork whose branch was stopped by a trip has joined (the top frame is the fork's):
    the abort goes on from here, through an enclosing fork's branch first."""
    trip, error = tripped["trip"], tripped["error"]
    fork_at = innermost_fork_above(m, int(trip["at"]), below=len(m.frames) - 1)
    if fork_at is None:
        return _abort_guard(m, trip, error)
    return _abort_branch(m, fork_at, trip, error)


def fork_time_joined(m: Machine, elapsed: Any) -> None:
    """A fork outside any branch joined after `elapsed` virtual milliseconds (its slowest
    branch's sleeps): the running time guards count that time as passed."""
    for _at, g in running_guards(m):
        if g["timeBase"] is not None:
            m.set_key(g, "timeBase", g["timeBase"] - elapsed)


def _abort_guard(m: Machine, trip: JSObject, error: Any) -> Any:
    """Stop the guarded work. The aborted frames are salvaged innermost first: a frame's value is
    its `finalize` block's (run by the prelude's `__guard_abort`), else what the frame it was
    waiting on salvaged when that call was its `return` value, else its saved draft; a salvage
    delivered to a pending `const x = call()` sets `x` for the caller's finalize. The guard
    returns the block's salvage as a success, else a failure of `error`."""
    at = int(trip["at"])
    g = m.frames[at].locals["__g"]
    m.set_key(g, "aborting", True)
    state = JSObject(
        {
            "at": at,
            "error": error,
            "i": len(m.frames) - 1,
            "prev": -1,
            "has": False,
            "value": None,
            "draft": None,
        }
    )
    return TailCall("__guard_abort", [state])


_SALVAGED = ("def", "block")  # the frames an abort salvages (not the prelude's or handlers')


@builtin("__abort_step")
def _abort_step(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """Salvage the next aborted frame: its finalize block to run (the prelude calls it with the
    frame's draft and reports back through `__abort_finalized`), or null when its value is
    already known; after the guard's block, drop the frames and return from the guard."""
    s = args[0]
    frames = m.frames
    at = s["at"]
    i = s["i"]
    while i > at and frames[i].code.kind not in _SALVAGED:
        i -= 1
    if i <= at:
        g = frames[at].locals["__g"]
        if s["has"] and s["prev"] == at + 1:
            outcome = Result(True, value=s["value"])
        else:
            outcome = Result(False, error=s["error"])
        m.set_key(g, "aborted", outcome)
        m.event("guard", "aborted", {"label": to_plain(g["label"])})
        raise UnwindSignal(at, None)
    f = frames[i]
    has, value = False, None
    if s["has"] and s["prev"] == i + 1:  # the frame above returned its salvage to this one
        pc = f.pc
        op = f.code.ops[pc] if pc < len(f.code.ops) else None
        if op == _STORE_LOCAL:
            name = f.code.args[pc]
            f.locals[name] = s["value"]
            if m.wlog is not None:
                v = s["value"]
                m.wlog.append((1, i, name, v if type(v) in PLAIN else m.rec.enc_now(v)))
        elif op == _RETURN:
            has, value = True, s["value"]
    draft = f.locals.get(DRAFT)
    if not has and DRAFT in f.locals:
        has, value = True, draft
    m.set_key(s, "i", i - 1)
    m.set_key(s, "has", has)
    m.set_key(s, "value", value)
    m.set_key(s, "prev", i if has else -1)
    m.set_key(s, "draft", draft)
    if f.code.finalize is not None and f.code.finalize in m.functions:
        m.set_key(s, "prev", i)
        return Closure(f.code.finalize, i, f.code.name)
    return None


@builtin("__abort_finalized")
def _abort_finalized(m: Machine, args: list[Any], named: dict[str, Any]) -> None:
    """A finalize block answered: its value is the frame's salvage, unless it failed (then the
    frame keeps what it had)."""
    s, r = args[0], args[1]
    if type(r) is Result and not r.ok:
        if not s["has"]:
            m.set_key(s, "prev", -1)
        return None
    m.set_key(s, "has", True)
    m.set_key(s, "value", r.value if type(r) is Result else r)  # `try` wraps it as a success
    return None


def _exempt_decision(m: Machine, trip: JSObject) -> None:
    """An approved trip goes on: the time its question was out (handlers running, a person
    answering) is not the work's, for the tripped guard and the guards inside it."""
    since = trip.get("since")
    if since is None:
        return
    at = int(trip["at"])
    waited = None
    for i, g in running_guards(m):
        if i >= at and g["timeBase"] is not None:
            if waited is None:
                waited = guard_now(m) - since
            if waited > 0:
                m.set_key(g, "timeBase", g["timeBase"] + waited)


def _grant(v: Any, what: str) -> float:
    n = to_number(v) if v is not None else 0.0
    return 0.0 if n != n or n < 0 else float(n)  # a negative grant is no grant


@builtin("__guard_answer")
def _guard_answer(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """Apply the handlers' answer to a trip: a rejection aborts the guard; approvals add their
    grants together (`{maxCost?, maxTime?, disarm?}`) and the work goes on."""
    trip, rejected, approvals = args[0], args[1], args[2]
    # Logged as `interrupt()` logs its decision: a re-execution answers the pause from it.
    decided = rejected if rejected is not None else approvals[0] if approvals else None
    if type(decided) is Decision:
        m.event(
            "interrupt",
            decided.action,
            {"action": decided.action, "value": to_plain(decided.value)},
        )
    if rejected is not None:
        return _abort(m, trip, _failure_data(trip))
    g = m.frames[int(trip["at"])].locals["__g"]
    cost = time_ = 0.0
    disarm: list[str] = []
    messages: list[str] = []
    for d in approvals:
        grant = d.value if type(d) is Decision else None
        if type(grant) is not JSObject:
            continue
        cost += _grant(grant.get("maxCost"), "maxCost")
        time_ += _grant(grant.get("maxTime"), "maxTime")
        note = grant.get("message")
        if type(note) is str and note:
            messages.append(note)
        for name in grant.get("disarm") or ():
            if name in ("cost", "time") and name not in disarm:
                disarm.append(name)
    _exempt_decision(m, trip)
    dimension = trip["data"]["dimension"]
    granted = cost if dimension == "cost" else time_
    if granted <= 0 and dimension not in disarm:
        return _abort(
            m,
            trip,
            f"approving a std::guard interrupt must grant more {dimension} "
            f'(approve({{max{dimension.title()}: …}})) or disarm it (approve({{disarm: ["{dimension}"]}}))',
        )
    if cost and g["maxCost"] is not None:
        m.set_key(g, "maxCost", g["maxCost"] + cost)
    if time_ and g["maxTime"] is not None:
        m.set_key(g, "maxTime", g["maxTime"] + time_)
    for name in disarm:
        if name not in g["disarmed"]:
            m.splice(g["disarmed"], len(g["disarmed"]), 0, (name,))
    if messages:
        queue_feedback(m, "\n".join(messages))
    return None


@builtin("__guard_handlers")
def _guard_handlers(m: Machine, args: list[Any], named: dict[str, Any]) -> JSArray:
    """The handlers a guard's trip asks: those registered outside the guard (a handler inside
    the guarded work never sees that guard's trip). Each entry ends with its frame's index."""
    at = int(args[0]["at"])
    return JSArray(h for h in args[1] if int(h[-1]) < at)


@builtin("__guard_mark")
def _guard_mark(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """The run's LLM cost so far (before a handler runs)."""
    return m.usage["cost"]


@builtin("__guard_exempt")
def _guard_exempt(m: Machine, args: list[Any], named: dict[str, Any]) -> None:
    """A handler ran: what it spent is charged to the guards around its registration, not to
    the guards inside it (those it was deciding for): they start that much later."""
    handler, before = args[0], args[1]
    spent = m.usage["cost"] - to_number(before)
    if spent <= 0:
        return None
    registered = int(handler[-1])
    for at, g in running_guards(m):
        if at > registered:
            m.set_key(g, "costBase", g["costBase"] + spent)
    return None


@builtin("__guard_close")
def _guard_close(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """What `guard` returns: what an abort decided, else the block's value as a success."""
    g, value = args[0], args[1]
    if g["aborted"] is not None:
        return g["aborted"]
    return value if type(value) is Result else Result(True, value=value)


@builtin("__save_draft")
def _save_draft(m: Machine, args: list[Any], named: dict[str, Any]) -> None:
    """Keep `value` as the best result so far of the function (or guarded block) that called
    the prelude's `saveDraft`, directly or as an LLM tool (then: the one that called `llm`): if a
    guard aborts that work, it is worth this value instead of a failure."""
    value = arg(args, named, 0, "value")
    at = len(m.frames) - 1
    while at > 0 and m.frames[at].code.kind == "prelude":
        at -= 1
    f: Frame = m.frames[at]
    f.locals[DRAFT] = value
    if m.wlog is not None:
        m.wlog.append((1, at, DRAFT, value if type(value) in PLAIN else m.rec.enc_now(value)))
    return None


def request_deadline(m: Machine) -> float | None:
    """The time.monotonic() instant by which a model request made now must end: where the
    tightest running time guard's budget runs out (None without one, and under a fake clock,
    which a request does not move)."""
    if FAKE_CLOCK in m.mutable:
        return None
    left: float | None = None
    for _at, g in running_guards(m, deciding=False):
        if g["maxTime"] is not None and g["timeBase"] is not None and "time" not in g["disarmed"]:
            ms = g["maxTime"] - (m.world.clock() - g["timeBase"]) + 1
            left = ms if left is None else min(left, ms)
    return None if left is None else time.monotonic() + max(left, 0.0) / 1000


@builtin("sleep")
def _sleep(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """Wait `ms` milliseconds. Inside a fork or race branch it advances the branch's virtual
    clock instead; under a fake clock it moves the clock; otherwise it waits through the effect
    journal (a resumed or replayed run does not wait again), cut short at a time guard's
    deadline. Then the running guards are checked (a time budget may have run out)."""
    ms = to_number(arg(args, named, 0, "ms", 0))
    if ms < 0:
        ms = 0  # a time already past: no wait, as JavaScript's timers do
    if ms != ms or ms > MAX_SLEEP_MS:
        raise AgencyRuntimeError(
            f"sleep(ms): ms must be a number of at most {MAX_SLEEP_MS} (a day), not {to_str(ms)}"
        )
    if branch_sleep(m, ms):
        return TailCall("__guard_check", [True])
    if FAKE_CLOCK in m.mutable:
        value = m.mutable[FAKE_CLOCK] + ms
        value = int(value) if float(value).is_integer() else value
        m.mutable[FAKE_CLOCK] = value
        m.log((W_SHARED, "mutable:" + FAKE_CLOCK, value))
    elif ms > 0:
        deadline = float(ms)
        for _at, g in running_guards(m, deciding=False):
            if g["maxTime"] is not None and g["timeBase"] is not None:
                left = g["maxTime"] - (m.world.clock() - g["timeBase"]) + 1
                deadline = min(deadline, max(left, 0.0))
        journaled_wait(m, ms, deadline)
    return TailCall("__guard_check", [True])


# -- destructive regions --------------------------------------------------------------------------

DESTRUCTIVE = "__destructive"  # hidden local: this activation has begun destructive work


def _mark_destructive(m: Machine, at: int) -> None:
    f = m.frames[at]
    if f.locals.get(DESTRUCTIVE) is not True:
        f.locals[DESTRUCTIVE] = True
        if m.wlog is not None:
            m.wlog.append((1, at, DESTRUCTIVE, True))


@builtin("__destructive_mark")
def _destructive_mark(m: Machine, args: list[Any], named: dict[str, Any]) -> None:
    """`destructive { … }` began: from here on, a failure of this function says destructive
    work ran (`destructiveRan`)."""
    at = len(m.frames) - 1
    while at > 0 and m.frames[at].code.kind == "prelude":
        at -= 1
    _mark_destructive(m, at)
    return None


def destructive_return(m: Machine, f: Frame, value: Any) -> Any:
    """A frame that began destructive work (a `destructive { … }` region, or a destructive
    def) returns: its failure is marked, and so is its caller's activation (frame `f` has just
    been popped, so the caller is the top frame)."""
    if type(value) is Result and not value.ok and not value.destructive:
        marked = Result(
            False,
            error=value.error,
            checkpoint=value.checkpoint,
            origin=value.origin,
            skipped=value.skipped,
        )
        marked.destructive = True
        value = marked
    if m.frames:
        _mark_destructive(m, len(m.frames) - 1)
    return value
