"""Provides the host functions behind `std::agency`: compiling Agency source from Agency and
running one node of it as a child program.

A child program is a child `Machine` (built with `type(parent)`, so this module never imports
the machine or the runs layer) that runs in this process, one *segment* at a time: a segment
runs the child until it ends or until one of its interrupts needs the parent. Between segments
the child's whole state is a snapshot held as data (a JSON string) in the parent's frame, so the
parent can be checkpointed, exported, rebuilt and resumed while its child waits; the next segment
revives the child from that snapshot. Each segment is an effect of the parent (`perform`): a
resumed or replayed parent is served the segment's recorded outcome and never re-runs the
child's side effects.

The child's interrupts are asked of its own handlers first, then of the parent's: the last
handler in a child's chain is the *parent vote* (`parent_vote`), which pauses the child; the
parent's `std::agency` code asks its own handlers (and, if none decides, its user) and answers
the child with the decision. A child-side rejection is final; a child-side approval stands when
the parent's handlers are silent.

The child's LLM calls use the parent's model (and its model routing), and what they cost is
charged to the parent, so the parent's cost guards see it. Budgets: `maxCost` (dollars),
`wallClock` (ms) and `maxDepth` (nesting) stop a child with a `limit_exceeded` failure.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyError, AgencyRuntimeError, AgencySyntaxError
from runtime.language.bytecode import CompiledProgram
from runtime.language.files import loads_json, read_text
from runtime.language.module_info import describe, exported_effects
from runtime.language.program import STD_PREFIX, compile_source, source_hash
from runtime.language.source_format import format_source, items_as_data
from runtime.language.syntax.ast import Import
from runtime.language.syntax.parser import parse
from runtime.vm.builtin_base import arg, builtin
from runtime.vm.builtins_callbacks import ACTIVE as ACTIVE_HOOKS
from runtime.vm.builtins_callbacks import forwarded_calls, listened
from runtime.vm.builtins_fs import base_dir, inside, shown_path
from runtime.vm.checkpoint_reading import validate
from runtime.vm.checkpoints import snapshot
from runtime.vm.effects import (
    atomic_write,
    content_hash,
    file_holds,
    observe,
    pack,
    perform,
    unpack,
)
from runtime.vm.frames import Decision, PauseSignal, TailCall
from runtime.vm.host import Host
from runtime.vm.llm_calls import count_model_usage
from runtime.vm.revive import revive
from runtime.vm.values import JSArray, JSObject, Result, from_plain, to_number, to_plain, to_str
from runtime.vm.writelog import FAILED, HALTED, INTERRUPTED, W_USAGE

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

DEPTH_CEILING = 10  # nesting depth no maxDepth can raise
PARENT = "parent"  # the kind of the parent-vote handler entry in a child's chain
SILENT = "pass"  # a parent vote with no opinion (the child's own approval stands)
_CACHE_SIZE = 64
_compiled: dict[str, CompiledProgram] = {}  # digest → program: a memo of what compile() made


def _s(v: Any) -> str:
    return v if type(v) is str else to_str(v)


# -- compiling ----------------------------------------------------------------------------------


def _refused_imports(source: str, path: str, root: Path | None) -> list[str]:
    """Why the program's import closure may not run as a child: only `std::` modules and
    `.agency` files inside `root` (none when there is no root), no symbolic links."""
    problems: list[str] = []
    todo = [(source, path)]
    seen: set[str] = set()
    while todo:
        text, where = todo.pop()
        for item in parse(text, where).items:
            if type(item) is not Import or item.module.startswith(STD_PREFIX):
                continue
            name = item.module
            if not name.endswith(".agency"):
                problems.append(
                    f"cannot import {name!r}: it is not Agency source "
                    "(only std:: modules and .agency files can be imported)"
                )
                continue
            if root is None:
                problems.append(f"cannot import {name!r}: local imports need a directory (`dir`)")
                continue
            unresolved = Path(where).parent / name
            target = unresolved.resolve()
            if target != root and root not in target.parents:
                problems.append(f"cannot import {name!r}: it is outside {str(root)!r}")
            elif unresolved.is_symlink():
                problems.append(f"cannot import {name!r}: it is a symbolic link")
            elif str(target) not in seen and target.is_file():
                seen.add(str(target))
                todo.append((read_text(target, "import", shown=name), str(target)))
    return problems


def compile_child(source: str, root: Path | None, name: str = "<source>.agency") -> CompiledProgram:
    """The program `source` compiles to (its relative imports resolve next to `root / name`,
    inside `root`), or an `AgencyRuntimeError` saying why it does not compile."""
    path = str(root / name) if root is not None else "<source>"
    try:
        problems = _refused_imports(source, path, root)
        if problems:
            raise AgencyRuntimeError("; ".join(problems))
        # Only run: the same files compiled again (each pass of a loop, a parent rebuilt or
        # resumed going past its `compile` again) give the program compiled the first time.
        program = compile_source(source, path, reuse=True)
    except AgencySyntaxError as exc:
        raise AgencyRuntimeError(f"compile error: {exc.render()}") from None
    except AgencyRuntimeError:
        raise
    except (AgencyError, OSError, UnicodeDecodeError) as exc:
        raise AgencyRuntimeError(f"compile error: {exc}") from None
    if len(_compiled) >= _CACHE_SIZE:
        _compiled.pop(next(iter(_compiled)))
    _compiled[program.sha256] = program
    return program


def _compiled_value(program: CompiledProgram, source: str, dir_: str, name: str) -> JSObject:
    """A CompiledProgram value: its id (the digest of its source and every file it imports) and
    what it was compiled from, so a parent rebuilt in another process can compile it again."""
    return JSObject({"moduleId": program.sha256, "source": source, "dir": dir_, "file": name})


def program_of(m: Machine, run: JSObject) -> CompiledProgram:
    """The program a child run runs: the one compiled, or (in a parent rebuilt elsewhere) the
    same sources compiled again, which must still be that program."""
    program = _compiled.get(_s(run["moduleId"]))
    if program is not None:
        return program
    name = _s(run.get("file") or "<source>.agency")
    program = compile_child(_s(run["source"]), _root(m, _s(run["dir"])), name)
    if program.sha256 != run["moduleId"]:
        raise AgencyRuntimeError(
            "run: the files this program imports changed since it was compiled; compile it again"
        )
    return program


def _root(m: Machine, dir_: str) -> Path | None:
    return base_dir(m, dir_, changes=True, what="compile") if dir_ else None


@builtin("__agency_compile")
def _agency_compile(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    source = arg(args, named, 0, "source")
    if type(source) is not str:
        raise AgencyRuntimeError(f"compile: expected source text, got {to_str(source)!r}")
    dir_ = _s(arg(args, named, 1, "dir") or "")
    root = _root(m, dir_)

    def act() -> JSObject:
        return _compiled_value(compile_child(source, root), source, dir_, "<source>.agency")

    # The files it imports are inputs of the run: re-execution is given the recorded outcome.
    what = {"moduleId": source_hash(source), "dir": dir_}
    return observe(m, "compile", what, act)


@builtin("__agency_compile_file")
def _agency_compile_file(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    dir_ = _s(arg(args, named, 0, "dir") or "")
    path = inside(m, arg(args, named, 1, "filename"), dir_, changes=True, what="runFile")
    shown = shown_path(m, path)

    def act() -> str:
        try:
            return read_text(path, "the program")
        except FileNotFoundError:
            raise AgencyRuntimeError(f"runFile: {shown!r}: no such file") from None
        except (OSError, UnicodeDecodeError, AgencyError) as exc:
            raise AgencyRuntimeError(f"runFile: cannot read {shown!r}: {exc}") from None

    root = base_dir(m, dir_, changes=True, what="runFile")
    name = str(path.relative_to(root))

    def compiled() -> JSObject:
        source = act()
        return _compiled_value(compile_child(source, root, name), source, dir_, name)

    # The file and the files it imports are inputs of the run (see `__agency_compile`).
    return observe(m, "compile", {"path": shown}, compiled)


@builtin("__agency_depth")
def _agency_depth(m: Machine, args: list[Any], named: dict[str, Any]) -> int:
    """How deep in child programs this one runs (0: the top program)."""
    return m.agency_depth


# -- the parent vote (the child's side) ---------------------------------------------------------


def is_child(m: Machine) -> bool:
    return m.agency_depth > 0


def parent_handler() -> JSArray:
    """The handler entry that asks the parent: outermost (frame index -1, outside every guard)."""
    return JSArray([PARENT, PARENT, -1])


def parent_vote(m: Machine, obj: Any) -> Any:
    """Run as the last handler of a child's interrupt: the parent's decision once it is in (None
    when the parent has no opinion), else pause the child so the parent can decide. Whether a
    child handler already approved goes along (`yes`): then the parent's silence approves."""
    if m.answer is not None:
        decision, m.answer = m.answer, None
        return None if decision.action == SILENT else decision
    own = m.frames[-1].locals.get("__yes") if m.frames else None
    yes = own is not None and not (type(own) is JSArray and len(own) == 0)
    raise PauseSignal(
        "interrupt",
        {
            "forward": True,
            "effect": to_plain(obj.get("effect")) if type(obj) is JSObject else "unknown",
            "message": to_plain(obj.get("message")) if type(obj) is JSObject else None,
            "data": to_plain(obj.get("data")) if type(obj) is JSObject else None,
            "yes": yes,
        },
    )


# -- running a child (the parent's side) --------------------------------------------------------


def _limit(limit: str, threshold: Any, value: Any, message: str) -> JSObject:
    return JSObject(
        {
            "reason": "limit_exceeded",
            "limit": limit,
            "threshold": threshold,
            "value": value,
            "message": message,
        }
    )


def _payload(limit: float, size: int, what: str) -> JSObject:
    return _limit(
        "ipc_payload", limit, size, f"the child program's {what} is larger than {limit:g} bytes"
    )


def _outcome(kind: str, **fields: Any) -> JSObject:
    """A segment's outcome: plain JSON whose Agency values are packed into strings (so the
    journal, which encodes the outcome as a value, keeps them exactly)."""
    outcome: JSObject = from_plain({"kind": kind, **fields})
    return outcome


def _packed(v: Any) -> str:
    return json.dumps(pack(v))


def _unpacked(text: Any) -> Any:
    return unpack(json.loads(_s(text)))


def _start(m: Machine, run: JSObject, answer: Any) -> tuple[Any, JSObject | None]:
    """The child machine for the next segment (new, or revived from the snapshot the run holds
    and given the parent's answer), or the outcome that ends the run before it starts."""
    program = program_of(m, run)
    world = type(m.world)(root=base_dir(m, run["cwd"], changes=True, what="run"), quiet=True)
    world.writable = m.world.writable
    state = run.get("state")
    if state is None:
        node = _s(run["node"])
        code = program.functions.get(node)
        if code is None or code.kind != "node":
            return None, _outcome("error", error=_packed(f"the program has no node named {node!r}"))
        given = run.get("args")
        named = dict(given) if type(given) is JSObject else {}
        child = type(m)(program, node, named_args=named, model=m.model, world=world)
    else:
        data = json.loads(_s(state))
        validate(data, program, "child program")
        node = str(data.get("node") or "main")
        child = type(m)(program, node, model=m.model, world=world, start=False)
        revive(child, program, data)
        decision = answer if type(answer) is Decision else Decision(SILENT)
        child.answer_interrupt(Decision(decision.action, unpack(pack(decision.value))))
    child.host = Host(models=m.host.models)
    child.agency_depth = int(to_number(run["depth"]))
    child.agency_max_depth = int(to_number(run["maxDepth"]))
    child.forward = listened(m)
    if "onFunctionStart" in child.forward or "onFunctionEnd" in child.forward:
        child.globals[ACTIVE_HOOKS] = True  # (the machine's cheap test before a def call)
    return child, None


MEMORY_LOOK_EVERY = 64  # steps of a child between looks at how much memory it has taken


class _Limits:
    """A child segment's limits, looked at after each of its statements: cost (maxCost
    dollars), wall clock, bytes printed and memory (every MEMORY_LOOK_EVERY steps, and when
    the segment ends)."""

    def __init__(self, run: JSObject, child: Any) -> None:
        self.max_cost = run.get("maxCost")
        self.wall = to_number(run.get("wallClock") or 0)
        self.deadline = time.monotonic() + self.wall / 1000 if self.wall > 0 else None
        self.out_limit = to_number(run.get("stdout") or math.inf)
        self.counted = len(child.output)
        self.printed = sum(len(line.encode()) + 1 for line in child.output)
        self.memory = to_number(run.get("memory") or math.inf)
        self.resident = _resident() if self.memory != math.inf else None
        self.steps = 0
        self.stopped: JSObject | None = None

    def over(self, child: Any, stepping: bool) -> JSObject | None:
        """The limit the child has gone over (kept in `stopped`), or None."""
        self.stopped = self._over(child, stepping)
        return self.stopped

    def _over(self, child: Any, stepping: bool) -> JSObject | None:
        self.steps += 1
        if self.resident is not None and (not stepping or self.steps % MEMORY_LOOK_EVERY == 0):
            grown = _resident() - self.resident
            if grown > self.memory:
                return _limit(
                    "memory",
                    self.memory,
                    grown,
                    f"the child program used more than {self.memory:g} bytes of memory",
                )
        cost = child.usage["cost"]
        max_cost = self.max_cost
        if max_cost is not None and to_number(max_cost) >= 0 and cost > to_number(max_cost):
            return _limit(
                "cost",
                max_cost,
                cost,
                f"the child program exceeded its cost limit of ${to_number(max_cost):g} "
                f"(it spent ${cost:g})",
            )
        if self.deadline is not None and time.monotonic() > self.deadline:
            wall = self.wall
            return _limit(
                "wall_clock", wall, wall, f"the child program ran longer than {wall:g} ms"
            )
        if len(child.output) > self.counted:  # what it printed since the last look
            self.printed += sum(len(line.encode()) + 1 for line in child.output[self.counted :])
            self.counted = len(child.output)
        if self.printed > self.out_limit:
            return _limit(
                "stdout",
                self.out_limit,
                self.printed,
                f"the child program printed more than {self.out_limit:g} bytes",
            )
        return None


def _resident() -> int:
    """The process's resident memory in bytes (a child program runs inside it, so what it
    takes is the growth while it runs); its peak where /proc is missing."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        import resource

        peak = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        return peak if sys.platform == "darwin" else peak * 1024


def _page_size() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return 4096


_PAGE = _page_size()


def _segment(m: Machine, run: JSObject, answer: Any) -> JSObject:
    """Run the child until it ends or asks the parent; the outcome as JSON data."""
    child, ended = _start(m, run, answer)
    if ended is not None:
        return ended
    before = dict(child.usage)
    payload_limit = to_number(run.get("ipcPayload") or math.inf)
    limits = _Limits(run, child)

    def look(c: Any, kind: str) -> None:  # at each of the child's step boundaries
        if limits.stopped is None and limits.over(c, True) is not None:
            c.stop_at = c.step_index  # (stops at this boundary)

    child.on_step = look
    child.run()
    stopped = limits.stopped if limits.stopped is not None else limits.over(child, False)
    spent = {k: child.usage[k] - before[k] for k in before}
    outcome = _ended(child, stopped, spent, payload_limit)
    if child.outbox:
        outcome["events"] = from_plain(_events(child.outbox))
    return outcome


def _events(outbox: list[tuple[str, Any]]) -> list[list[str]]:
    """The lifecycle events a child forwards, packed; one whose data cannot be sent as data is
    dropped (forwarding only observes, so it never fails the run)."""
    events = []
    for hook, data in outbox:
        try:
            events.append([hook, _packed(data)])
        except (TypeError, ValueError, AgencyError):
            continue
    return events


def _ended(
    child: Any, stopped: JSObject | None, spent: dict[str, Any], payload_limit: float
) -> JSObject:
    """The outcome of a segment that has stopped running."""
    if stopped is None and child.status == HALTED and child.exit_code is not None:
        stopped = JSObject(
            {
                "reason": "exited",
                "code": child.exit_code,
                "message": f"the child program exited with code {child.exit_code}",
            }
        )
    if stopped is None and child.status == HALTED:
        value = _packed(child.result)
        if len(value) > payload_limit:
            stopped = _payload(payload_limit, len(value), "its result")
    if stopped is None and child.status == INTERRUPTED:
        state = json.dumps(snapshot(child))
        if len(state) > payload_limit:
            stopped = _payload(payload_limit, len(state), "its state while it waits")
    if stopped is not None:
        return _outcome("error", error=_packed(stopped), spent=spent)
    if child.status == HALTED:
        return _outcome("done", value=value, spent=spent)
    if child.status == FAILED:
        why = child.error.message if child.error is not None else "the child program failed"
        return _outcome("done", value=_packed(Result(False, error=why)), spent=spent)
    pending = child.pending if isinstance(child.pending, dict) else {}
    ask = pending if pending.get("forward") else {"obj": pending, "yes": False}
    return _outcome("ask", ask=ask, state=state, spent=spent)


def _charge(m: Machine, spent: dict[str, Any]) -> bool:
    """The child's LLM spend counts as the parent's (cost guards, getCost). True when it cost
    money: the parent's cost guards are then asked, as after one of its own LLM calls."""
    inp, out = int(spent.get("input_tokens", 0)), int(spent.get("output_tokens", 0))
    cost = float(spent.get("cost", 0.0))
    if not (inp or out or cost):
        return False
    m.usage["input_tokens"] += inp
    m.usage["output_tokens"] += out
    m.usage["cost"] += cost
    m.log((W_USAGE, m.usage["input_tokens"], m.usage["output_tokens"], m.usage["cost"]))
    count_model_usage(m, "child program", inp, out, cost)
    return cost > 0


@builtin("__agency_child_run")
def _agency_child_run(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """One segment of a child run: `{kind: "done", value}`, `{kind: "error", error}` or
    `{kind: "ask", ask: {effect, message, data, yes}, state}` (the child's snapshot)."""
    run, answer = args[0], args[1] if len(args) > 1 else None
    if type(run) is not JSObject:
        raise AgencyRuntimeError("run: expected a child run")
    depth = int(to_number(run["depth"]))
    # An ancestor's lower maxDepth holds for every descendant: a child cannot loosen it.
    limit = min(int(to_number(run["maxDepth"])), DEPTH_CEILING)
    if is_child(m):
        limit = min(limit, m.agency_max_depth)
    if run["maxDepth"] != limit:
        m.set_key(run, "maxDepth", limit)
    if depth > limit:
        return JSObject(
            {
                "kind": "error",
                "error": _limit(
                    "depth", limit, depth, f"child programs may nest only {limit} deep"
                ),
            }
        )
    what = {"node": _s(run["node"]), "moduleId": _s(run["moduleId"]), "depth": depth}
    done = perform(m, "agency.run", what, lambda: _segment(m, run, answer))
    if type(done) is not JSObject:
        raise AgencyRuntimeError("run: the record does not hold this child run's outcome")
    outcome = to_plain(done)
    charged = _charge(m, outcome.get("spent") or {})
    events = [(str(hook), _unpacked(data)) for hook, data in outcome.get("events") or ()]
    result = JSObject({"kind": outcome["kind"]})
    if "value" in outcome:
        result["value"] = _unpacked(outcome["value"])
    if "error" in outcome:
        result["error"] = _unpacked(outcome["error"])
    if "ask" in outcome:
        ask = outcome["ask"]
        obj = ask.get("obj") if "obj" in ask else ask
        result["ask"] = JSObject(
            {
                "effect": _s(obj.get("effect") or "unknown"),
                "message": unpack(obj.get("message")),
                "data": unpack(obj.get("data")),
                "yes": bool(ask.get("yes")),
            }
        )
        result["state"] = outcome["state"]
    calls = forwarded_calls(m, events) if events else JSArray()
    if calls:
        return TailCall("__child_events", [calls, result, charged])
    if charged:
        return TailCall("__child_spent", [result])
    return result


@builtin("__agency_silent")
def _agency_silent(m: Machine, args: list[Any], named: dict[str, Any]) -> Decision:
    """The parent's answer to a child's vote when its handlers have no opinion."""
    return Decision(SILENT)


@builtin("__agency_decided")
def _agency_decided(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """The parent's decision on a child's interrupt, marked on the timeline as an interrupt's
    decision is (re-execution finds the answers it applies there)."""
    d = args[0] if args else None
    if type(d) is not Decision:
        raise AgencyRuntimeError(
            "an interrupt must be answered with approve(), reject() or resolve()"
        )
    m.event("interrupt", d.action, {"action": d.action, "value": to_plain(d.value)})
    return d


# -- testing Agency from Agency (std::agency's test and testFile) ------------------------------

# The .test.json fields a sandboxed test file may use; any other is refused by name.
_SUITE_FIELDS = {"sourceFile", "tests", "defaultTimeoutMs", "description"}
_CASE_FIELDS = {
    "nodeName",
    "args",
    "expectedOutput",
    "evaluationCriteria",
    "interruptHandlers",
    "timeoutMs",
    "description",
}


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@builtin("__agency_spent")
def _agency_spent(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """What this run's LLM calls (its children's included) have cost so far, in dollars."""
    return m.usage["cost"]


@builtin("__agency_verdict")
def _agency_verdict(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    """ "" when a case's value is the expected one (as JSON), else what differs."""
    actual, expected = to_plain(args[0]), to_plain(args[1] if len(args) > 1 else None)
    if _same(actual, expected):
        return ""
    return f"expected {json.dumps(expected)}, got {json.dumps(actual)}"


@builtin("__agency_describe_error")
def _agency_describe_error(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    """A failure's error as one line of feedback (a limit failure names its reason and limit)."""
    error = to_plain(args[0] if args else None)
    if isinstance(error, dict) and "reason" in error:
        return f"{error['reason']} ({error.get('limit')}): {error.get('message', '')}".strip()
    return error if isinstance(error, str) else json.dumps(error)


def _suite_problem(suite: Any) -> str | None:
    if not isinstance(suite, dict) or not isinstance(suite.get("tests"), list):
        return 'a test file is a JSON object with a "tests" list'
    extra = sorted(set(suite) - _SUITE_FIELDS)
    if extra:
        return f"the test file field {extra[0]!r} is not supported when testing from Agency"
    for i, case in enumerate(suite["tests"], 1):
        if not isinstance(case, dict) or not isinstance(case.get("nodeName"), str):
            return f'test {i}: expected an object with a "nodeName"'
        if case.get("input"):
            return (
                f'test {i}: "input" (a command-line argument string) is not supported here; '
                'give the node\'s arguments by name in "args"'
            )
        extra = sorted(set(case) - _CASE_FIELDS - {"input"})
        if extra:
            return f"test {i}: the field {extra[0]!r} is not supported when testing from Agency"
        for crit in case.get("evaluationCriteria") or []:
            if not isinstance(crit, dict) or crit.get("type") != "exact":
                return f"test {i}: only exact evaluation criteria are supported here"
        try:
            json.loads(case.get("expectedOutput", "null"))
        except (TypeError, json.JSONDecodeError):
            return (
                f"test {i}: expectedOutput {case.get('expectedOutput')!r} is not JSON; "
                'a string result is written quoted, e.g. "\\"ok\\""'
            )
    return None


def _case(case: dict[str, Any]) -> dict[str, Any]:
    answers = [
        {
            "action": "approve" if h.get("action", "approve") != "reject" else "reject",
            **({"value": h["value"]} if "value" in h else {}),
            **({"expectedMessage": h["expectedMessage"]} if "expectedMessage" in h else {}),
        }
        for h in case.get("interruptHandlers") or []
        if isinstance(h, dict)
    ]
    out = {
        "node": case["nodeName"],
        "args": case.get("args") or {},
        "expected": json.loads(case.get("expectedOutput", "null")),
        "interrupts": answers,
    }
    if isinstance(case.get("timeoutMs"), (int, float)):
        out["wallClock"] = case["timeoutMs"]
    return out


@builtin("__agency_read_test_file")
def _agency_read_test_file(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """A .test.json file (inside the working directory) as {sourceFile, cases, wallClock}."""
    dir_ = _s(arg(args, named, 0, "dir") or "")
    filename = _s(arg(args, named, 1, "filename") or "")
    path = inside(m, filename, dir_, changes=True, what="testFile")
    shown = shown_path(m, path)

    def act() -> str:
        try:
            return read_text(path, "the test file")
        except FileNotFoundError:
            raise AgencyRuntimeError(f"testFile: {shown!r}: no such file") from None
        except (OSError, UnicodeDecodeError, AgencyError) as exc:
            raise AgencyRuntimeError(f"testFile: cannot read {shown!r}: {exc}") from None

    text = observe(m, "read", {"path": shown}, act)
    try:
        suite = loads_json(text)
    except json.JSONDecodeError as exc:
        raise AgencyRuntimeError(f"testFile: {shown!r} is not valid JSON ({exc.msg})") from None
    problem = _suite_problem(suite)
    if problem is not None:
        raise AgencyRuntimeError(f"testFile: {shown!r}: {problem}")
    source = suite.get("sourceFile") or (
        filename.removesuffix(".test.json") + ".agency"
        if filename.endswith(".test.json")
        else filename
    )
    default = suite.get("defaultTimeoutMs")
    return from_plain(
        {
            "sourceFile": source,
            "cases": [_case(c) for c in suite["tests"]],
            "wallClock": default if isinstance(default, (int, float)) else 60000,
        }
    )


# -- reading a module without running it (getEffects, describe) --------------------------------


def _module_info(what: str, source: Any, read: Any) -> Any:
    if type(source) is not str:
        raise AgencyRuntimeError(f"{what}: expected source text, got {to_str(source)!r}")
    try:
        return from_plain(read(source))
    except AgencySyntaxError as exc:
        raise AgencyRuntimeError(f"{what}: {exc.render()}") from None
    except AgencyError as exc:
        raise AgencyRuntimeError(f"{what}: {exc}") from None


@builtin("__agency_effects")
def _agency_effects(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    return _module_info("getEffects", args[0] if args else None, exported_effects)


@builtin("__agency_describe")
def _agency_describe(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    return _module_info("describe", args[0] if args else None, describe)


@builtin("__agency_typecheck")
def _agency_typecheck(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """The type checker's report on source text: {errors, warnings}."""
    from runtime.language.typecheck import typecheck  # only programs that ask (start-up time)

    return _module_info("typecheck", args[0] if args else None, typecheck)


@builtin("__agency_parse_ast")
def _agency_parse_ast(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    return _module_info("parseAST", args[0] if args else None, items_as_data)


@builtin("__agency_format")
def _agency_format(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    return _module_info("format", args[0] if args else None, format_source)


# -- files (the std::agency wrapper has checked the path and asked first) ----------------------


def _agency_file(m: Machine, args: list[Any], named: dict[str, Any], what: str) -> Path:
    dir_ = _s(arg(args, named, 0, "dir") or ".")
    return inside(
        m, arg(args, named, 1, "filename"), dir_, changes=what != "typecheckFile", what=what
    )


def _file_text(m: Machine, path: Path, what: str) -> str:
    shown = shown_path(m, path)

    def act() -> str:
        try:
            return read_text(path, "the program")
        except FileNotFoundError:
            raise AgencyRuntimeError(f"{what}: {shown!r}: no such file") from None
        except (OSError, UnicodeDecodeError, AgencyError) as exc:
            raise AgencyRuntimeError(f"{what}: cannot read {shown!r}: {exc}") from None

    return observe(m, "read", {"path": shown}, act)  # type: ignore[no-any-return]


@builtin("__agency_typecheck_file")
def _agency_typecheck_file(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """The report on dir/filename, its relative imports resolved next to it."""
    path = _agency_file(m, args, named, "typecheckFile")
    source = _file_text(m, path, "typecheckFile")
    from runtime.language.typecheck import typecheck

    return _module_info("typecheckFile", source, lambda text: typecheck(text, str(path)))


@builtin("__agency_format_file")
def _agency_format_file(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """Format dir/filename in place (through the effect journal); an already formatted file is
    not written, so its modification time stays. True when it was rewritten."""
    path = _agency_file(m, args, named, "formatFile")
    source = _file_text(m, path, "formatFile")
    text = _module_info("formatFile", source, lambda s: format_source(s, str(path)))
    if text == source:
        return False

    def act() -> bool:
        try:
            atomic_write(path, text)
        except OSError as exc:
            raise AgencyRuntimeError(
                f"formatFile: cannot write {path.name}: {exc.strerror}"
            ) from None
        return True

    what = {"path": shown_path(m, path), "bytes": len(text), "sha256": content_hash(text)}
    return perform(m, "write", what, act, lambda: file_holds(path, text))
