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
    JSObject,
    a_type,
    to_str,
)
from runtime.vm.writelog import (
    FAILED,
    HALTED,
    RUNNING,
    W_MESSAGE,
    W_OUTPUT,
)

DEFAULT_RESTORE_CAP = 100


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
        self.agency_depth = 0  # a child program's nesting (std::agency): set by its parent
        self.agency_max_depth = 0
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

    def set_key(self, obj: Any, key: Any, value: Any) -> None:
        """`obj[key] = value` with JS rules, logged."""
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
