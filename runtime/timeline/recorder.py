"""Provides the recorder: every step of a run, stored as O(change) deltas plus keyframes.

The machine appends each write it makes to `machine.wlog` and calls `on_step` at every step
boundary. The recorder turns the writes made since the last boundary into one compact record
(`(location, kind, writes, depth, keyframe?)`), groups records into batches of consecutive steps
(marshal-encoded bytes, never live objects) and hands them to the run store. A keyframe (the full
visible state) is taken when the bytes written since the last one outweigh its size, so its cost
stays proportional to what changed; and after a restore, which replaces the state wholesale.

Containers get a stable object id (`oid`) the first time the recorder meets them; a delta
refers to them by id, and defines a container (its whole contents) the first time it becomes
visible. Names starting with `__` (loop iterators, prelude internals) are not recorded: the
recorded state is what a person inspects; exact machine state is rebuilt by re-execution.
"""

from __future__ import annotations

import marshal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runtime.compile import CompiledProgram
from runtime.machine.frames import Decision
from runtime.machine.machine import (
    FAILED,
    HALTED,
    INTERRUPTED,
    Machine,
    stmt_position,
)
from runtime.machine.values import FuncRef, JSArray, JSObject, Result
from runtime.timeline.store import MemoryStore, RunMeta, RunStore

KINDS = ("step", "llm", "tool", "interrupt", "end")
KIND_CODES = {k: i for i, k in enumerate(KINDS)}
STORE_EVENT_KINDS = {"llm", "tool", "checkpoint", "restore", "interrupt", "error", "debugger", "effect", "branch"}
BATCH_STEPS = 256
MIN_KEYFRAME_GAP = 2048  # bytes of deltas, at least, between two keyframes
_PRIMITIVE = frozenset({type(None), bool, int, float, str})


def location_table(program: CompiledProgram) -> list[list[Any]]:
    """Every step location of a program, numbered: the ids step records refer to."""
    table = []
    for code in [program.module, *program.functions.values()]:
        for loc in code.locations:
            table.append([loc.file, loc.scope, loc.path, loc.line, loc.col, loc.end_line, loc.end_col])
    return table


class Recorder:
    """Records one branch of one run from a live machine into a store."""

    def __init__(
        self,
        machine: Machine,
        store: RunStore,
        run_id: str,
        branch: int = 0,
        *,
        next_oid: int = 1,
    ) -> None:
        self.m = machine
        self.store = store
        self.run_id = run_id
        self.branch = branch
        self.loc_ids: dict[int, int] = {}
        n = 0
        for code in [machine.program.module, *machine.program.functions.values()]:
            for loc in code.locations:
                self.loc_ids[id(loc)] = n
                n += 1
        self.next_oid = next_oid
        self.known: set[int] = set()
        self.fresh: set[int] = set()
        self.batch: list[Any] = []
        self.batch_first = -1
        self.since_keyframe = 0
        self.keyframe_size = 0
        self.force_keyframe = True
        self.prev_loc: Any = None
        self.last_step = -1
        self.bytes_written = 0
        self.listeners: list[Callable[[int], None]] = []
        machine.wlog = []
        machine.on_step = self.on_step
        machine.run_id = run_id
        machine.branch = branch

    # -- encoding -------------------------------------------------------------------------------

    def oid_of(self, c: Any) -> int:
        oid = getattr(c, "oid", None)
        if oid is None:
            oid = self.next_oid
            self.next_oid += 1
            c.oid = oid
        return oid  # type: ignore[no-any-return]

    def enc(self, v: Any, out: list[Any]) -> Any:
        t = type(v)
        if t in _PRIMITIVE:
            return v
        if t is JSArray or t is JSObject:
            oid = self.oid_of(v)
            if oid not in self.known:
                self.known.add(oid)
                self.fresh.add(oid)
                if t is JSArray:
                    contents: Any = [self.enc(x, out) for x in v]
                else:
                    contents = {k: self.enc(x, out) for k, x in v.items()}
                out.append((17, oid, contents))
            return ("r", oid)
        if t is Result:
            return ("R", v.ok, self.enc(v.value if v.ok else v.error, out))
        if t is FuncRef:
            return ("F", v.name)
        if t is Decision:
            return ("D", v.action, self.enc(v.value, out))
        if t is dict:
            return {k: self.enc(x, out) for k, x in v.items()}
        if t is list or t is tuple:
            return [self.enc(x, out) for x in v]
        return repr(v)

    def capture(self) -> dict[str, Any]:
        """The full visible state, as a keyframe: every reachable container under `heap`."""
        m = self.m
        heap: dict[int, Any] = {}

        def enc(v: Any) -> Any:
            t = type(v)
            if t in _PRIMITIVE:
                return v
            if t is JSArray or t is JSObject:
                oid = self.oid_of(v)
                if oid not in heap:
                    heap[oid] = None
                    heap[oid] = [enc(x) for x in v] if t is JSArray else {k: enc(x) for k, x in v.items()}
                return ("r", oid)
            if t is Result:
                return ("R", v.ok, enc(v.value if v.ok else v.error))
            if t is FuncRef:
                return ("F", v.name)
            if t is Decision:
                return ("D", v.action, enc(v.value))
            if t is dict:
                return {k: enc(x) for k, x in v.items()}
            if t is list or t is tuple:
                return [enc(x) for x in v]
            return repr(v)

        frames = []
        for f in m.frames:
            code = f.code
            line, col = stmt_position(f)
            frames.append(
                [
                    code.name,
                    code.kind,
                    tuple(code.param_names),
                    {k: enc(v) for k, v in f.locals.items() if not k.startswith("__")},
                    line,
                    col,
                ]
            )
        state = {
            "frames": frames,
            "globals": {k: enc(v) for k, v in m.globals.items()},
            "shared": {k: enc(v) for k, v in m.shared.items()},
            "threads": {tid: [enc(msg) for msg in msgs] for tid, msgs in m.threads.items()},
            "active": m.active_thread(),
            "output": list(m.output),
            "usage": [m.usage["input_tokens"], m.usage["output_tokens"], m.usage["cost"]],
            "status": m.status if m.status in (HALTED, FAILED, INTERRUPTED) else "running",
            "result": enc(m.result),
            "error": m.error.message if m.error else None,
            "heap": heap,
        }
        self.known = set(heap)
        return state

    # -- the step hook --------------------------------------------------------------------------

    def on_step(self, m: Machine, kind: str) -> None:
        step = m.step_index
        writes = self.drain(step)
        if self.batch_first < 0:
            self.batch_first = step
        loc = m.location
        loc_id = self.loc_ids.get(id(loc), -1) if loc is not None else -1
        keyframe = False
        self.since_keyframe += len(writes) * 16 + 8
        if self.force_keyframe or self.since_keyframe > max(self.keyframe_size, MIN_KEYFRAME_GAP):
            keyframe = True
        self.batch.append((loc_id, KIND_CODES.get(kind, 0), tuple(writes), len(m.frames), keyframe))
        self.last_step = step
        if keyframe:
            self.write_keyframe(step)
        self.prev_loc = loc
        if len(self.batch) >= BATCH_STEPS:
            self.flush_batch()
        for listener in self.listeners:
            listener(step)

    def drain(self, step: int) -> list[Any]:
        """Encode the writes made since the last step boundary and clear the log."""
        wlog = self.m.wlog
        out: list[Any] = []
        if not wlog:
            return out
        known = self.known
        fresh = self.fresh
        fresh.clear()
        enc = self.enc
        for w in wlog:
            code = w[0]
            if code == 1:
                name = w[2]
                if name.startswith("__"):
                    continue
                v = w[3]
                out.append((1, w[1], name, v if type(v) in _PRIMITIVE else enc(v, out)))
            elif code == 2:
                v = w[2]
                out.append((2, w[1], v if type(v) in _PRIMITIVE else enc(v, out)))
            elif code == 3 or code == 4 or code == 5:
                oid = getattr(w[1], "oid", None)
                if oid is None or oid not in known or oid in fresh:
                    continue  # not visible yet, or defined this step with its final contents
                if code == 3:
                    out.append((3, oid, w[2], enc(w[3], out)))
                elif code == 4:
                    out.append((4, oid, w[2]))
                else:
                    out.append((5, oid, w[2], w[3], [enc(x, out) for x in w[4]]))
            elif code == 6:
                f = w[1]
                code_ = f.code
                line, col = w[2]
                out.append(
                    (
                        6,
                        code_.name,
                        code_.kind,
                        tuple(code_.param_names),
                        {k: enc(v, out) for k, v in f.locals.items() if not k.startswith("__")},
                        line,
                        col,
                    )
                )
            elif code == 7 or code == 8 or code == 11 or code == 12:
                out.append(w)
            elif code == 9:
                out.append((9, w[1], enc(w[2], out)))
            elif code == 10:
                out.append((10, w[1], [enc(x, out) for x in w[2]]))
            elif code == 13:
                self.force_keyframe = True
            elif code == 14:
                self.event(step, w[1], w[2], w[3])
            elif code == 15:
                name = w[1]
                if not name.startswith("mutable:"):
                    out.append((15, name, enc(w[2], out)))
            elif code == 16:
                out.append((16, w[1], enc(w[2], out), w[3]))
        del wlog[:]
        return out

    def event(self, step: int, kind: str, summary: str, data: dict[str, Any]) -> None:
        if kind not in STORE_EVENT_KINDS:
            return
        from runtime.machine.values import to_plain

        plain = {k: to_plain(v) if type(v) in (JSArray, JSObject, Result) else v for k, v in data.items()}
        if kind == "llm":
            self.store.add_llm_call(
                self.run_id,
                self.branch,
                step,
                provider=str(plain.get("provider", "")),
                model=str(plain.get("model", "")),
                request=plain.get("request"),
                response={"completion": plain.get("response"), "value": plain.get("value")},
                input_tokens=int(plain.get("input_tokens") or 0),
                output_tokens=int(plain.get("output_tokens") or 0),
                cost=float(plain.get("cost") or 0.0),
                latency_ms=float(plain.get("latency_ms") or 0.0),
            )
            small: dict[str, Any] = {k: plain[k] for k in ("provider", "model", "input_tokens", "output_tokens", "latency_ms", "round") if k in plain}
            self.store.add_event(self.run_id, self.branch, step, kind, summary, small)
            return
        self.store.add_event(self.run_id, self.branch, step, kind, summary, plain)

    def write_keyframe(self, step: int) -> None:
        self.flush_batch()  # keyframes and batches must agree on order for readers
        blob = marshal.dumps(self.capture())
        self.store.put_keyframe(self.run_id, self.branch, step, blob)
        self.keyframe_size = len(blob)
        self.bytes_written += len(blob)
        self.since_keyframe = 0
        self.force_keyframe = False

    def flush_batch(self) -> None:
        if not self.batch:
            return
        blob = marshal.dumps(self.batch)
        self.store.append_batch(self.run_id, self.branch, self.batch_first, self.last_step, blob)
        self.bytes_written += len(blob)
        self.batch = []
        self.batch_first = -1

    def finish(self) -> None:
        """Record the end of the run (a final step holding the result) and flush."""
        m = self.m
        if m.status in (HALTED, FAILED):
            m.step_index += 1
            self.on_step(m, "end")
            if not (self.batch and self.batch[-1][4]):
                self.write_keyframe(m.step_index)  # the last step is where a reader often lands
        else:
            self.drain(m.step_index + 1)
        self.flush_batch()
        status = {HALTED: "finished", FAILED: "failed", INTERRUPTED: "interrupted"}.get(m.status, "running")
        from runtime.machine.values import to_plain

        fields: dict[str, Any] = {"status": status}
        if m.status == HALTED:
            fields["result"] = to_plain(m.result)
        if m.error is not None:
            fields["error"] = m.error.message
        self.store.update_run(self.run_id, **fields)
        self.store.flush()

    def detach(self) -> None:
        self.m.wlog = None
        self.m.on_step = None


def _stmt_position(f: Any) -> tuple[int, int]:
    code = f.code
    pcs = code.step_pcs
    for i in range(len(pcs) - 1, -1, -1):
        if pcs[i] <= f.stmt_pc:
            loc = code.locations[i]
            return loc.line, loc.col
    return code.span.line, code.span.col


# ----------------------------------------------------------------------------------------------
# Running under the recorder


@dataclass
class Recording:
    """A live, recorded run: the machine, its recorder and a timeline over it."""

    machine: Machine
    recorder: Recorder
    store: RunStore
    run_id: str
    branch: int = 0

    @property
    def timeline(self) -> Any:
        from runtime.timeline.timeline import Timeline

        return Timeline(self.store, self.run_id, self.branch, program=self.machine.program)

    def continue_run(self, answer_decision: Any = None, progress: Callable[[int], None] | None = None) -> None:
        """Answer the pending interrupt (if given) and run on, recording."""
        from runtime.runner import drive

        if answer_decision is not None:
            self.machine.answer_interrupt(answer_decision)
            self.store.add_event(self.run_id, self.branch, max(self.machine.step_index, 0), "interrupt", f"answered: {answer_decision.action}", {"action": answer_decision.action, "answer": _plain(answer_decision.value)})
        if progress is not None:
            self.recorder.listeners.append(progress)
        try:
            drive(self.machine, None)
        finally:
            if progress is not None:
                self.recorder.listeners.remove(progress)
        self.recorder.finish()


def _plain(v: Any) -> Any:
    from runtime.machine.values import to_plain

    return to_plain(v)


def start_run(program: CompiledProgram, machine: Machine, store: RunStore, config: dict[str, Any] | None = None, args: Any = None) -> Recording:
    run_id = store.create_run(
        RunMeta(
            source_path=program.path,
            source_sha256=program.sha256,
            node=machine.node,
            args=args if args is not None else {"args": _plain(machine.entry_args), "named": _plain(machine.entry_named)},
            config=config or {},
            meta={"locations": location_table(program)},
        )
    )
    recorder = Recorder(machine, store, run_id, 0)
    return Recording(machine, recorder, store, run_id, 0)


def record_program(
    program: CompiledProgram,
    config: Any,
    store: RunStore | None = None,
    answer: Any = None,
    progress: Callable[[int], None] | None = None,
) -> Recording:
    """Run `program` to the end (or to an unanswered interrupt), recording every step."""
    from runtime.llm.registry import config_of
    from runtime.runner import drive, new_machine

    store = store if store is not None else MemoryStore()
    model = config.make_model()
    machine = new_machine(program, config, model=model)
    run_config = dict(config_of(model))
    run_config["seed"] = config.seed
    if config.mocks is not None:
        run_config["mocks"] = config.mocks
    rec = start_run(program, machine, store, run_config)
    if progress is not None:
        rec.recorder.listeners.append(progress)
    try:
        drive(machine, answer)
    finally:
        rec.recorder.finish()
        if progress is not None:
            rec.recorder.listeners.remove(progress)
    return rec


def record_machine(machine: Machine, store: RunStore | None = None, answer: Any = None) -> Recording:
    """Record a machine built elsewhere (e.g. rebuilt from a checkpoint file) as a new run."""
    from runtime.runner import drive

    store = store if store is not None else MemoryStore()
    config = {"provider": getattr(machine.model, "provider", ""), "from_checkpoint": True}
    rec = start_run(machine.program, machine, store, config)
    try:
        drive(machine, answer)
    finally:
        rec.recorder.finish()
    return rec
