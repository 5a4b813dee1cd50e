"""Provides the machine's state: every field a snapshot holds, and the writes that keep the
write log (`wlog`) in step with them (`log`, `print`, `event`, `set_key`, `splice`, messages)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.language.bytecode import CompiledProgram, Location
from runtime.vm import builtins
from runtime.vm.frames import (
    Decision,
    Frame,
)
from runtime.vm.host import Host
from runtime.vm.limits import SMALL, check_array_length
from runtime.vm.link import link
from runtime.vm.methods import (
    call_method,
)
from runtime.vm.operations import (
    array_index,
)
from runtime.vm.values import (
    JSArray,
    JSMap,
    JSObject,
    JSSet,
    Result,
    a_type,
    to_str,
    type_name,
)
from runtime.vm.writelog import (
    FAILED,
    HALTED,
    PLAIN,
    RUNNING,
    W_MESSAGE,
    W_OUTPUT,
)

DEFAULT_RESTORE_CAP = 100
NEVER = 1 << 62  # a step limit no run reaches (an int: the loop compares it with ints)


if TYPE_CHECKING:
    from runtime.vm.machine import Machine


class MachineState:
    """The machine's state (frames, globals, threads, output, the write log) and the small writes every
    part of it makes; `Machine` runs it."""

    # What every step reads or writes, as slots (quicker to reach than the instance's
    # dictionary, which holds everything else).
    __slots__ = (
        "step_index",
        "location",
        "step_limit",
        "rec",
        "methods",
        "frozen",
        "_stop_at",
        "_breakpoints",
        "_on_step",
        "_wlog_limit",
        "_check_at",
        "_checked",
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
        self.methods = call_method
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
        # The containers no write may change, by id (the value keeps the id from being reused):
        # a static constant's value at every depth, and what `Object.freeze` was given.
        self.frozen: dict[int, Any] = {}
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
        self.exit_code: int | None = None  # the program called std::system's exit(code)
        self.pending: Any = None  # the unanswered interrupt while paused
        self.answer: Decision | None = None
        # A step boundary at or past `step_limit` takes the slow path (`at_limit`): the
        # per-step hook, a look at the write log's length, the stop and the breakpoints. It
        # is the lowest step any of them needs; the setters below keep it so.
        self.step_limit = -1
        self._stop_at: float = math.inf
        self._breakpoints: frozenset[tuple[str, int]] = frozenset()  # (file, line)
        self._on_step: Callable[[Machine, str], None] | None = None
        self._wlog_limit = 4096
        self._check_at = -1  # the step at which to look at the write log's length next
        self._poll_at = 0  # the step at which to look at the running time guards next
        self.poll_mark: tuple[int, float] = (-1, 0.0)  # (step, monotonic s) of the last look
        self.poll_steps: tuple[Any, list[int]] | None = None  # (record, its time-guard checks)
        self.reenter = False  # the slow path pushed a frame (a time guard's check) to run now
        self._checked = (-1, 0, 0.0)  # (step, length) the write rate is counted from; the rate
        self.stop_on_debugger = False
        self.stopped_by: str | None = None
        self.replaying = False  # re-executing from a record: effects are not performed
        self.host = Host()  # journal, recorded effects, model routing: set by whoever runs it
        self.agency_depth = 0  # a child program's nesting (std::agency): set by its parent
        self.agency_max_depth = 0
        # Lifecycle events a parent program listens for (a child program's, std::agency): the
        # hooks whose events go into `outbox`, which the parent takes after each segment.
        self.forward: frozenset[str] = frozenset()
        self.outbox: list[tuple[str, Any]] = []
        # Recording
        self.wlog: list[Any] | None = None
        self.rec: Any = None  # the recorder, which encodes containers as they are written
        self.on_flush: Callable[[Machine], None] | None = None  # the write log is long
        self.on_mark: Callable[[Machine, str], None] | None = None  # an llm/tool step
        self.on_event: Callable[[int, str, str, dict[str, Any]], None] | None = None
        self.on_reset: Callable[[], None] | None = None  # restore replaced the state
        self.run_id = ""
        self.branch = 0
        if start:
            self.frames.append(Frame(program.module, {}))

    # -- the step limit -------------------------------------------------------------------------

    @property
    def stop_at(self) -> float:
        """The step at which the run stops (at its boundary); lowered from any thread to stop."""
        return self._stop_at

    @stop_at.setter
    def stop_at(self, step: float) -> None:
        self._stop_at = step
        self.relimit()

    @property
    def breakpoints(self) -> frozenset[tuple[str, int]]:
        """(file, line) pairs the run stops at, at the start of a statement there."""
        return self._breakpoints

    @breakpoints.setter
    def breakpoints(self, points: frozenset[tuple[str, int]]) -> None:
        self._breakpoints = frozenset(points)
        self.relimit()

    @property
    def on_step(self) -> Callable[[Machine, str], None] | None:
        """Called at every step boundary (it then appends the step marker, not the machine)."""
        return self._on_step

    @on_step.setter
    def on_step(self, hook: Callable[[Machine, str], None] | None) -> None:
        self._on_step = hook
        self.relimit()

    @property
    def wlog_limit(self) -> int:
        """The most entries a flushed write log should hold (0: flush at the next boundary).
        The length is looked at on a schedule (`_look`), not at every step: `on_flush` is
        called at the first look that finds the log half full, so a chunk holds about half
        this, and more only when writes come more than twice as fast as they did."""
        return self._wlog_limit

    @wlog_limit.setter
    def wlog_limit(self, n: int) -> None:
        self._wlog_limit = n
        self._check_at = -1
        # (set after every flush: a new chunk, whose rate is counted from here)
        self._checked = (self.step_index, len(self.wlog or ()), self._checked[2])
        self.relimit()

    @property
    def flush_at(self) -> int:
        """The length at which the write log is flushed: half its limit (`wlog_limit`)."""
        return max(self._wlog_limit // 2, 1)

    def relimit(self) -> None:
        """Recompute `step_limit`. Safe against `stop_at` lowered from another thread meanwhile:
        it looks at `stop_at` again after writing the limit."""
        if self._on_step is not None or self._breakpoints:
            self.step_limit = -1  # every boundary
            return
        stop = self._stop_at
        limit = NEVER if stop >= NEVER else int(stop)
        if self.wlog is not None and self._check_at < limit:
            limit = self._check_at
        if self._poll_at < limit:
            limit = self._poll_at
        self.step_limit = limit
        if self._stop_at < limit:
            self.step_limit = int(self._stop_at)

    def at_limit(self, marker: int) -> bool:
        """A step boundary at or past `step_limit` (the machine has counted the step and set
        `location`). True when the run stops here (`stopped_by` says why)."""
        hook = self._on_step
        if hook is not None:
            hook(self, "step")  # type: ignore[arg-type]
        elif self.wlog is not None:
            self.wlog.append(marker)
            if self.step_index >= self._check_at:
                self._look()
        # The time guards' look comes first: a run stopped at this boundary (a step limit, a
        # breakpoint) and resumed, or snapshotted here and rebuilt, must make the same look
        # here as a run that goes straight on; a look skipped for a stop would be lost (the
        # step is counted), and where a check fires decides how many steps the run takes.
        polled = self.step_index >= self._poll_at and self.poll_time_guards()
        if self.step_index >= self._stop_at:
            self.stopped_by = "step"
            return True
        loc = self.location
        # A check that fired here returns to the statement's start, a boundary again: the
        # breakpoint stops there, once per execution of the statement, not here as well.
        if (
            self._breakpoints
            and not polled
            and loc is not None
            and (loc.file, loc.line) in self._breakpoints
        ):
            self.stopped_by = "breakpoint"
            return True
        if polled:
            self.reenter = True  # (the loop starts again on the frame it pushed)
            self.relimit()
            return True
        self.relimit()
        return False

    def poll_time_guards(self) -> bool:
        """Look at the running time guards (the machine does: runtime/vm/machine.py); True
        when a check of one was pushed to run before the statement."""
        self._poll_at = NEVER
        return False

    def poll_soon(self) -> None:
        """A guard with a time budget began: look at the time guards from the next step
        boundary on (while none runs, the machine does not look)."""
        if self._poll_at > self.step_index + 1:
            self._poll_at = self.step_index + 1
            self.relimit()

    def _look(self) -> None:
        """Flush the write log once it is half full (`wlog_limit`), and say when to look
        again: when it will be half full at the rate entries have come in since the chunk
        began. At a steady rate that is one look a chunk (a look costs a few microseconds);
        aiming at half leaves room for the rate to double before a chunk outgrows the limit."""
        wlog = self.wlog
        assert wlog is not None
        n = len(wlog)
        step = self.step_index
        since, n0, rate = self._checked  # the step and length the chunk's rate is counted from
        if step > since and n > n0:
            rate = max((n - n0) / (step - since), 1.0)  # (every step logs its marker at least)
        half = self.flush_at
        if n + rate >= half and self.on_flush is not None:  # (or by the next step)
            self.on_flush(self)  # type: ignore[arg-type]
            since = step
            n = n0 = len(wlog)
        room = half - n
        ahead = -(-room // rate) if rate > 0 else room  # (rounded up: reach half, not short)
        self._check_at = step + max(1, int(ahead))
        self._checked = (since, n0, rate)

    @property
    def done(self) -> bool:
        return self.status in (HALTED, FAILED)

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

    def freeze(self, v: Any, deep: bool) -> None:
        """Refuse every later change to the container `v` (and, when `deep`, to every container
        it holds, at any depth: a static constant's value). Anything else is left as it is."""
        todo = [v]
        while todo:
            x = todo.pop()
            t = type(x)
            if t is Result:
                if deep:
                    todo.append(x.value if x.ok else x.error)
                continue
            if not (t is JSObject or t is JSArray or t is JSSet or t is JSMap):
                continue
            if id(x) in self.frozen and x is not v:
                continue  # already frozen (deeply, since only a deep walk freezes inner ones)
            self.frozen[id(x)] = x
            if deep:
                if t is JSArray:
                    todo.extend(x)
                elif t is JSObject:
                    todo.extend(x.values())
                else:  # a Set's entries are its elements; a Map's, its [key, value] pairs
                    for entry in x.values():
                        todo.extend(entry if t is JSMap else (entry,))

    def freeze_statics(self) -> None:
        """Freeze the static constants' values again after they were put back into `shared` (a
        machine rebuilt from a snapshot or a checkpoint)."""
        for name in self.statics:
            if name in self.shared:
                self.freeze(self.shared[name], deep=True)

    def refuse_frozen(self, obj: Any, what: str) -> None:
        """Raise the error for a change to a frozen container, as JavaScript's TypeError."""
        raise AgencyRuntimeError(
            f"cannot {what} this {type_name(obj)}: it is frozen (part of a static constant, "
            "or given to Object.freeze)"
        )

    def set_key(self, obj: Any, key: Any, value: Any) -> None:
        """`obj[key] = value` with JS rules, logged."""
        if self.frozen and id(obj) in self.frozen:
            self.refuse_frozen(obj, f"set {to_str(key)!r} of")
        t = type(obj)
        if t is JSObject:
            k = key if type(key) is str else to_str(key)
            obj[k] = value
        elif t is JSArray:
            i = array_index(key)
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
            raise AgencyRuntimeError(f"Cannot set properties of null (setting '{to_str(key)}')")
        else:
            raise AgencyRuntimeError(f"cannot set property {to_str(key)!r} of {a_type(obj)}")
        if self.wlog is not None:
            self.rec.log_set(obj, k if t is JSObject else i, value)

    def push(self, arr: JSArray, items: list[Any] | tuple[Any, ...]) -> int:
        """`arr.push(...items)`, the most common change to an array: `splice` at the end,
        without the removed part, logged an item at a time (`Recorder.log_push`)."""
        if self.frozen and id(arr) in self.frozen:
            self.refuse_frozen(arr, "change")
        n = len(arr) + len(items)
        if n > SMALL:
            check_array_length(n)
        wlog = self.wlog
        if wlog is None:
            arr.extend(items)
            return n
        rec = self.rec
        if len(items) == 1:  # the common push: logged here when the recorder says it may be
            x = items[0]
            arr.append(x)
            head = rec.pushes.get(id(arr))
            if head is not None and type(x) in PLAIN:
                wlog.append(head)
                wlog.append(x)
            else:
                rec.log_push(arr, x)
            return n
        for x in items:
            arr.append(x)
            rec.log_push(arr, x)
        return n

    def splice(self, arr: JSArray, start: int, delete: int, items: tuple[Any, ...]) -> JSArray:
        """The one primitive all array mutations go through (push, pop, shift, splice, …)."""
        if self.frozen and id(arr) in self.frozen:
            self.refuse_frozen(arr, "change")
        if len(arr) + len(items) - delete > SMALL:
            check_array_length(len(arr) + len(items) - delete)
        removed = JSArray(arr[start : start + delete])
        arr[start : start + delete] = items
        if self.wlog is not None:
            self.rec.log_splice(arr, start, delete, items)
        return removed
