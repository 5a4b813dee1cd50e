"""Provides the host side of `fork`, `race` and `parallel`: branch isolation and the virtual
clock (the loops themselves are written in Agency: `fork`/`race` in the prelude, `parallel`
desugared by the parser).

Branches run one after another, in source order, on the one frame stack, so every step of a
branch is an ordinary step (checkpointable, resumable after an interrupt). What makes them
branches is the fork's state, a plain object held in a local of the frame running the loop
(`__fork` in the prelude's frames; a hidden local for `parallel`), changed only through the
machine's logged writes:

    {shared, race, saved, clock, times, best, winner, cancelled,
     seenTokens, seenCost, spentTokens, spentCost, tripped}

* `saved` is the parent's module globals (the values themselves) when the fork started. A
  non-shared branch starts from a deep copy of them and its writes are thrown away: the parent's
  values come back at the join (or when a runtime error unwinds the fork). A shared fork
  (`shared: true`) leaves globals alone.
* Each branch runs in a fresh subthread of the parent's active thread, popped at its end.
* `clock` is the branch's virtual time: `sleep(ms)` inside a branch advances it by `ms` instead
  of waiting, and each LLM call by one tick. A race's winner is the branch that finished at the
  smallest virtual time (the first in source order on a tie). A later branch is cancelled (its
  frames unwound to the race) once its clock passes the winner's, at a `sleep` or after an LLM
  call, or when it would wait for a person at or after the winner's time: so only the winner's
  interrupts reach the person, as the reference's race aborts its losers.
* A time guard counts the running branches' clocks as time passed, and a fork that joins
  outside any branch moves the running time guards on by its duration. `tripped` holds a
  guard's trip that a branch's handlers rejected (the guard is around the fork): the branch
  stopped, the others ran, and the join goes on with the abort (runtime/vm/builtins_guard.py).
* `getCost()`/`getTokens()` inside a branch see the parent's usage at the fork plus the
  branch's own calls (`seen*` + `spent*`); the run's totals count every branch, losers too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.vm.builtin_base import arg, builtin
from runtime.vm.builtins_policy import TAGS
from runtime.vm.frames import Frame, Signal
from runtime.vm.values import JSArray, JSObject, truthy
from runtime.vm.writelog import PLAIN, W_ACTIVE, W_GLOBAL, W_POP_FRAME, W_THREAD

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

FORK_LOCAL = "__fork"  # the local of the prelude's fork/race frames that holds their state


class BranchCancelled(Signal):
    """A race branch lost: its frames are gone and the race frame has its (ignored) result;
    the machine loop carries on from the race frame."""


def _clone(v: Any, memo: dict[int, Any]) -> Any:
    """A deep copy of arrays and objects, keeping the sharing between them."""
    t = type(v)
    if t is not JSArray and t is not JSObject:
        return v
    done = memo.get(id(v))
    if done is not None:
        return done
    if t is JSArray:
        arr = JSArray()
        memo[id(v)] = arr
        arr.extend(_clone(x, memo) for x in v)
        return arr
    obj = JSObject()
    memo[id(v)] = obj
    for k, x in v.items():
        obj[k] = _clone(x, memo)
    return obj


def _clone_tag_table(table: Any, memo: dict[int, Any]) -> Any:
    """The branch's copy of std::tag's table: a tagged object the branch sees as a copy (held
    by a global) is tagged as that copy; one it sees as it is (a local of a frame, shared with
    the parent) keeps its entry, so its tags stay visible inside the branch."""
    if type(table) is not JSArray:
        return table
    out = JSArray()
    for entry in table:
        value, tags = entry[0], entry[1]
        out.append(JSArray([memo.get(id(value), value), _clone(tags, memo)]))
    return out


def _set_globals(m: Machine, values: dict[str, Any]) -> None:
    """Replace the module globals' values in place (the loop holds the dict), logged."""
    for name, v in values.items():
        m.globals[name] = v
        if m.wlog is not None:
            m.wlog.append((W_GLOBAL, name, v if type(v) in PLAIN else m.rec.enc_now(v)))


def _state(v: Any) -> JSObject:
    if type(v) is not JSObject or "saved" not in v:
        raise AgencyRuntimeError("internal error: not a fork state")
    return v


@builtin("__fork_begin")
def _fork_begin(m: Machine, args: list[Any], named: dict[str, Any]) -> JSObject:
    shared = truthy(arg(args, named, 0, "shared", False))
    race = truthy(arg(args, named, 1, "race", False))
    saved = None if shared else JSObject(m.globals)
    tokens, cost = branch_usage(m)
    return JSObject(
        {
            "shared": shared,
            "race": race,
            "saved": saved,
            "clock": 0,
            "times": JSArray(),
            "best": None,
            "winner": None,
            "cancelled": False,
            "seenTokens": tokens,  # what the parent saw at the fork: each branch starts there
            "seenCost": cost,
            "spentTokens": 0,  # the current branch's own LLM usage
            "spentCost": 0,
            "tripped": None,  # a guard around the fork whose trip a branch's handlers rejected
        }
    )


@builtin("__fork_branch")
def _fork_branch(m: Machine, args: list[Any], named: dict[str, Any]) -> None:
    """A branch starts: its own copy of the globals and a fresh subthread."""
    state = _state(args[0])
    saved = state["saved"]
    if type(saved) is JSObject:
        memo: dict[int, Any] = {}
        copies = {k: _clone(v, memo) for k, v in saved.items() if k != TAGS}
        if TAGS in saved:
            copies[TAGS] = _clone_tag_table(saved[TAGS], memo)
        _set_globals(m, copies)
    for key, zero in (("clock", 0), ("cancelled", False), ("spentTokens", 0), ("spentCost", 0)):
        m.set_key(state, key, zero)
    frame = m.frames[-1]
    tid = str(m.thread_counter)
    m.thread_counter += 1
    base = [dict(msg) for msg in m.threads.get(m.active_thread(), [])]
    m.threads[tid] = base
    frame.threads.append(tid)
    if m.wlog is not None:
        m.wlog.append((W_THREAD, tid, tuple(base)))
        m.wlog.append((W_ACTIVE, tid))
    return None


@builtin("__fork_branch_end")
def _fork_branch_end(m: Machine, args: list[Any], named: dict[str, Any]) -> None:
    """A branch ended: note its virtual finish time (a race keeps the earliest)."""
    state = _state(args[0])
    frame = m.frames[-1]
    if frame.threads:
        frame.threads.pop()
        if m.wlog is not None:
            m.wlog.append((W_ACTIVE, m.active_thread()))
    clock = state["clock"]
    times = state["times"]
    index = len(times)
    m.splice(times, index, 0, (None if state["cancelled"] else clock,))
    if not state["cancelled"] and (state["best"] is None or clock < state["best"]):
        m.set_key(state, "best", clock)
        m.set_key(state, "winner", index)
    return None


@builtin("__fork_end")
def _fork_end(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """The join: the parent's globals come back; the parent's clock moves on by the fork's
    duration (the slowest branch; for a race, the winner's)."""
    state = _state(args[0])
    saved = state["saved"]
    if type(saved) is JSObject:
        _set_globals(m, dict(saved))
    if state["race"]:
        elapsed = state["best"] or 0
    else:
        elapsed = max((t for t in state["times"] if t is not None), default=0)
    outer = _innermost(m, below=len(m.frames) - 1)
    if outer is not None and elapsed:
        m.set_key(outer[1], "clock", outer[1]["clock"] + elapsed)
    m.set_key(state, "clock", 0)  # the branches' time is the parent's now
    # the time guards' share (runtime/vm/builtins_guard.py's `__guard_fork_joined`)
    m.set_key(state, "joined", 0 if outer is not None else elapsed)
    return state["winner"]


def fork_unwound(m: Machine, state: Any) -> None:
    """A runtime error left a fork or race mid-branch: the parent's globals come back, as at
    a join (the error then goes on to the def or node around the fork)."""
    if type(state) is JSObject and type(state.get("saved")) is JSObject:
        _set_globals(m, dict(state["saved"]))
    if m.wlog is not None:  # the branch's subthread went with the fork's frame
        m.wlog.append((W_ACTIVE, m.active_thread()))


def _innermost(m: Machine, below: int) -> tuple[int, JSObject] | None:
    """The innermost running fork or race (frame index, state) under frame `below`."""
    frames = m.frames
    for i in range(below - 1, -1, -1):
        st = frames[i].locals.get(FORK_LOCAL)
        if type(st) is JSObject and "saved" in st:
            return i, st
    return None


def branch_clocks(m: Machine) -> Any:
    """The virtual time the running branches have spent so far (each enclosing fork's current
    branch's clock), which time guards count as time passed."""
    total: Any = 0
    for f in m.frames:
        st = f.locals.get(FORK_LOCAL)
        if type(st) is JSObject and "saved" in st:
            total += st["clock"]
    return total


def innermost_fork_above(m: Machine, at: int, below: int) -> int | None:
    """The frame index of the innermost fork or race running between frames `at` and
    `below` (both excluded), or None."""
    found = _innermost(m, below=below)
    if found is None or found[0] <= at:
        return None
    return found[0]


def branch_sleep(m: Machine, ms: Any) -> bool:
    """`sleep(ms)` inside a fork or race branch: advance the branch's virtual clock (a race
    branch that can no longer win stops here). False outside any branch."""
    found = _innermost(m, below=len(m.frames))
    if found is None:
        return False
    _advance(m, found, ms)
    return True


def _advance(m: Machine, found: tuple[int, JSObject], by: Any) -> None:
    """Move a branch's virtual clock; a race branch now slower than the winner so far stops."""
    at, state = found
    m.set_key(state, "clock", state["clock"] + by)
    if state["race"] and state["best"] is not None and state["clock"] > state["best"]:
        _cancel(m, at, state)


def branch_usage(m: Machine) -> tuple[Any, Any]:
    """(tokens, cost) as the running branch sees them: the parent's usage when its fork began
    plus the branch's own calls (siblings that ran before it do not count). Outside any branch,
    the run's totals."""
    found = _innermost(m, below=len(m.frames))
    if found is None:
        u = m.usage
        return u["input_tokens"] + u["output_tokens"], u["cost"]
    state = found[1]
    return state["seenTokens"] + state["spentTokens"], state["seenCost"] + state["spentCost"]


def branch_spend(m: Machine, tokens: int, cost: float) -> None:
    """An LLM call's usage counts for every enclosing branch's own view (`getCost()`)."""
    for f in m.frames:
        st = f.locals.get(FORK_LOCAL)
        if type(st) is JSObject and "saved" in st:
            m.set_key(st, "spentTokens", st["spentTokens"] + tokens)
            m.set_key(st, "spentCost", st["spentCost"] + cost)


def before_waiting(m: Machine) -> None:
    """A branch is about to wait for a person: inside a race that another branch has already
    settled (at this branch's time or earlier) it is cancelled instead, so only the winner's
    interrupts reach the person."""
    frames = m.frames
    for i in range(len(frames) - 1, -1, -1):
        st = frames[i].locals.get(FORK_LOCAL)
        if type(st) is JSObject and "saved" in st and st["race"]:
            if st["best"] is not None and st["clock"] >= st["best"]:
                _cancel(m, i, st)


def llm_tick(m: Machine) -> None:
    """An LLM call finished inside a branch: its virtual clock moves one tick (a call takes
    time, so a race branch making more calls than the winner is cancelled after one)."""
    found = _innermost(m, below=len(m.frames))
    if found is not None:
        _advance(m, found, 1)


def _cancel(m: Machine, at: int, state: JSObject) -> None:
    """Unwind the losing branch to the race frame `at`, as if its block returned null."""
    frames = m.frames
    while len(frames) > at + 1:
        frames.pop()
        if m.wlog is not None:
            m.wlog.append((W_POP_FRAME,))
    if m.wlog is not None:
        m.wlog.append((W_ACTIVE, m.active_thread()))
    m.set_key(state, "cancelled", True)
    race: Frame = frames[at]
    race.stack.append(None)
    m.event("fork", "race branch cancelled", {})
    raise BranchCancelled("cancelled")
