"""Provides the recorder: every step of a run, stored as O(change) deltas plus keyframes.

The machine appends each write it makes to `machine.wlog` and calls `on_step` at every step
boundary. The recorder turns the writes made since the last boundary into one compact record
(`(location, kind, writes, depth, keyframe?)`), groups records into batches of consecutive steps
(bytes from `encode_record`, never live objects) and hands them to the run store. A keyframe (the full
visible state) is taken when the bytes written since the last one outweigh what it cost to make,
so its cost stays proportional to what changed; and after a restore, which replaces the state
wholesale. Most keyframes are incremental: they hold the lists and objects defined or changed since
the last full keyframe (their `base`) and the messages and output appended since, and refer to the
base for the rest, so a large container written once is not captured again and again. A full
keyframe is taken once recording has spent ten times what the last one cost to make
(`write_keyframe`), so capturing a large state takes a bounded share of the run's CPU.

Containers get a stable object id (`oid`) the first time the recorder meets them; a delta
refers to them by id, and defines a container (its whole contents) the first time it becomes
visible. Names starting with `__` (loop iterators, prelude internals) are not recorded: the
recorded state is what a person inspects; exact machine state is rebuilt by re-execution.
"""

from __future__ import annotations

import itertools
import time
import zlib
from collections.abc import Callable
from typing import Any

from runtime.language.bytecode import CompiledProgram, FuncRef
from runtime.record.format import (
    BATCH_STEP_LOCALS,
    KIND_CODES,
    R_APPEND,
    R_CONTENTS,
    R_DERIVED,
    R_PUSHED,
    R_RESET,
    R_STEP_LOCAL,
    R_STEP_PUSH,
    R_STEP_WRITE,
    ZLIB_PREFIX,
    encode_record,
)
from runtime.record.store import EVENT_KINDS, RunStore
from runtime.vm.frames import Decision
from runtime.vm.machine import Machine
from runtime.vm.operations import stmt_position
from runtime.vm.values import (
    BoundFunction,
    Closure,
    JSArray,
    JSMap,
    JSObject,
    JSSet,
    Result,
    to_plain,
)
from runtime.vm.writelog import FAILED, HALTED, INTERRUPTED

MIN_KEYFRAME_GAP = 4096  # bytes of deltas, at least, between two keyframes
# ... and at most: what a reader replays from a keyframe (~5,000 entries, a few milliseconds),
# however large the last keyframe was (`flush_chunk`).
MAX_KEYFRAME_GAP = 16384
ENTRY_WEIGHT = 3  # ... counting an entry as this many bytes at least (`flush_chunk`)
# Time between full keyframes, in times what one cost. Wall time (`perf_counter`, 0.1 µs a
# call): `process_time` costs 5-15 µs a call on these machines, more than a small keyframe.
# At 10 a growing list was captured whole again every 10x its cost: ~7% of the run (a 50,000-
# number array built by `push`). Reads barely notice 40: the incremental keyframes between two
# full ones are bounded by size anyway (`write_keyframe`).
FULL_KEYFRAME_BUDGET = 40
COMPRESS_FROM = 4096  # keyframes this large are compressed, when a sample says it pays
COMPRESS_SAMPLE = 4096  # ... bytes of it compressed first to find out
COMPRESS_RATIO = 0.6  # ... it pays when the sample shrinks to this share or less
COMPRESS_VERDICT_USES = 8  # ... and the sample's verdict holds for this many keyframes
_PRIMITIVE = frozenset({type(None), bool, int, float, str})
# A code object's name, kind and parameter names, its parameter names that are recorded, the
# positions of its statements by pc, its call sites' entries by position, and whether a frame
# of it starts with only recorded parameters for locals (`frame_head`).
_Head = tuple[
    str, str, tuple[str, ...], frozenset[str], dict[int, tuple[int, int]], dict[Any, Any], bool
]

# Object ids come from one counter for the whole process, not one per recorder: an id is kept on
# the object itself, and some objects outlive a run (a typed llm() call's schema belongs to the
# compiled program), so a second recorder of the same program, or a second fork of one
# timeline, would otherwise give the same id to another object and read it back in its place.
_oids = itertools.count(1)


def _oids_from(first: int) -> None:
    """Make every id given from now on at least `first`."""
    global _oids
    if next(_oids) < first:
        _oids = itertools.count(first)


def frame_head(code: Any) -> _Head:
    """What recording a frame of `code` needs of it, made once and kept on it (`rec_head`): it
    depends on the code alone, so every recorder of the program shares it."""
    params = tuple(code.param_names)
    clean = frozenset(p for p in params if p[:2] != "__")
    # (a destructive def's journal adds hidden locals to its frame before it is logged)
    plain = len(clean) == len(params) and not code.modifiers
    head: _Head = (code.name, code.kind, params, clean, {}, {}, plain)
    code.rec_head = head
    return head


def location_table(program: CompiledProgram) -> list[list[Any]]:
    """Every step location of a program, numbered: the ids step records refer to."""
    table = []
    for code in [program.module, *program.functions.values()]:
        for loc in code.locations:
            table.append(
                [loc.file, loc.scope, loc.path, loc.line, loc.col, loc.end_line, loc.end_col]
            )
    return table


class Recorder:
    """Records one branch of one run from a live machine into a store.

    The machine appends writes and step markers (`location id << 3 | kind`) to `machine.wlog`
    and calls `flush_chunk` when the log is long. Writes are encoded as they are made
    (containers by id, defined the first time they are met: `enc`), so a chunk is plain data,
    pickled as it is, in C. A batch blob is `(first_step, depth_before, depth_after, entries,
    BATCH_STEP_LOCALS)` (`runtime.record.format`).
    """

    per_step = False  # call `on_step` at every step (tests that probe the live machine)
    chunk_limit = 2048  # entries a batch holds at most, about half that when writes come
    # at a steady rate (`Machine.wlog_limit`): bounds what a random read decodes and replays
    incremental = True  # keyframes on a full one (False: every keyframe full, for comparison)

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
        _oids_from(next_oid)
        self.known: set[int] = set()
        self.first_step = machine.step_index + 1  # the first step of the pending chunk
        self.depth = len(machine.frames)  # frames at the step before `first_step`
        self.since_keyframe = 0
        self.keyframe_size = 0
        self.steady = False  # the last two incremental keyframes were large and alike
        self.force_keyframe = True
        # Incremental keyframes: what changed since the last full one (`capture_changes`).
        self.full_step: int | None = None  # the step of the last full keyframe
        self.full_size = 0  # its size, encoded (what capturing it cost)
        self.full_at = 0.0  # when it was taken (perf_counter)
        self.full_cost = 0.0  # the time it took
        self.since_full = 0  # bytes of the incremental keyframes taken since
        self.dirty: dict[int, Any] = {}  # oid -> list or object defined or changed since it
        self.full_seqs: dict[str, tuple[Any, int, Any]] = {}  # its threads and output, by name
        self.full_lens: dict[int, int] = {}  # oid -> length of a list (set, map) in it
        self.touched: set[int] = set()  # lists changed within that length since it
        self.mixed: set[int] = set()  # lists given items since it that may not be primitives
        self.plain_lists: set[int] = set()  # lists of primitives only, in it
        self.append_heads: dict[int, tuple[int, int]] = {}  # oid -> its `(R_APPEND, oid)`
        # id(list) -> its append head, for a list whose next push of a primitive needs nothing
        # but the log: known, in `dirty` (which keeps it alive, so its id is its own) and
        # longer than in the full keyframe. A splice (which may shrink it) or a full keyframe
        # (`capture`, which replaces `known` and empties `dirty`) forgets it.
        self.pushes: dict[int, tuple[int, int]] = {}
        self.last_step = machine.step_index
        self.bytes_written = 0
        self.compress_verdict: tuple[bool, int, int] | None = None  # (`_compressed`)
        self.listeners: list[Callable[[int], None]] = []
        machine.wlog = [(R_RESET, len(machine.frames))]  # a new recorder: the past is replaced
        machine.rec = self
        machine.wlog_limit = 0  # flush at the first step: it gets the first keyframe
        machine.on_flush = self.flush_chunk
        machine.on_mark = self.mark
        machine.on_event = self.event
        machine.on_reset = self.reset
        machine.on_step = self.on_step if self.per_step else None
        machine.run_id = run_id
        machine.branch = branch

    # -- encoding -------------------------------------------------------------------------------

    def oid_of(self, c: Any) -> int:
        oid = getattr(c, "oid", None)
        if oid is None:
            oid = c.oid = next(_oids)
        return oid

    def enc(self, v: Any, out: list[Any]) -> Any:
        t = type(v)
        if t in _PRIMITIVE:
            return v
        if t is JSArray or t is JSObject or t is JSSet or t is JSMap:
            oid = self.oid_of(v)
            if oid not in self.known:
                self.known.add(oid)
                self.dirty[oid] = v
                if t is JSArray:
                    contents: Any = _primitives(v)
                    if contents is None:
                        contents = [self.enc(x, out) for x in v]
                elif t is JSObject:
                    contents = dict(v) if _PRIMITIVE.issuperset(map(type, v.values())) else None
                    if contents is None:
                        contents = {k: self.enc(x, out) for k, x in v.items()}
                else:  # a Set as its elements, a Map as its [key, value] pairs
                    contents = [self.enc(_entry(x), out) for x in v.values()]
                out.append((R_CONTENTS, oid, contents))
            return ("r", oid)
        if t is Result:
            return ("R", v.ok, self.enc(v.value if v.ok else v.error, out))
        if t is FuncRef or t is Closure:
            return ("F", v.name)
        if t is BoundFunction:  # shown as a function; it never changes, so no oid
            return ("F", v.label())
        if t is Decision:
            return ("D", v.action, self.enc(v.value, out))
        if t is dict:
            return {k: self.enc(x, out) for k, x in v.items()}
        if t is list or t is tuple:
            return [self.enc(x, out) for x in v]
        return repr(v)

    # Writes are encoded when they happen, so a container is defined with its contents at that
    # moment and every later change to it follows in order.

    def enc_now(self, v: Any) -> Any:
        """Encode a value being written; new containers are defined in the log first."""
        return self.enc(v, self.m.wlog)  # type: ignore[arg-type]

    def enc_record(self, record: tuple[Any, ...]) -> tuple[Any, ...]:
        code = record[0]
        if code == 16:
            return (16, record[1], self.enc_now(record[2]), record[3])
        if code == 15:
            if record[1].startswith("mutable:"):
                return (0,)  # process-wide map: not part of the inspected state
            return (15, record[1], self.enc_now(record[2]))
        return record

    def log_set(self, obj: Any, key: Any, value: Any) -> None:
        oid = getattr(obj, "oid", None)
        if oid is not None and oid in self.known:
            self.dirty[oid] = obj
            self.mixed.add(oid)
            if type(key) is int and key < self.full_lens.get(oid, 0):
                self.touched.add(oid)
            wlog = self.m.wlog
            wlog.append((3, oid, key, self.enc(value, wlog)))  # type: ignore[union-attr, arg-type]

    def log_splice(self, arr: Any, start: int, delete: int, items: tuple[Any, ...]) -> None:
        self.pushes.pop(id(arr), None)
        oid = getattr(arr, "oid", None)
        if oid is not None and oid in self.known:
            self.dirty[oid] = arr
            self.mixed.add(oid)
            if start < self.full_lens.get(oid, 0):
                self.touched.add(oid)
            wlog = self.m.wlog
            if len(items) == 1 and type(items[0]) in _PRIMITIVE:  # a push: the common splice
                new = [items[0]]
            else:
                new = _primitives(items) or [self.enc(x, wlog) for x in items]  # type: ignore[arg-type]
            wlog.append((5, oid, start, delete, new))  # type: ignore[union-attr]

    def log_push(self, arr: Any, item: Any) -> None:
        """`item` added at the end of `arr` (a list, a Set or a Map), already done: the most
        common splice, as two entries, the container's `(R_APPEND, oid)` (one tuple object for
        it, which a batch pickles once and then refers to in two bytes) and the item: a third
        of a splice's bytes and time to pickle."""
        oid = getattr(arr, "oid", None)
        if oid is not None and oid in self.known:
            self.dirty[oid] = arr
            head = self.append_heads.get(oid)
            if head is None:
                head = self.append_heads[oid] = (R_APPEND, oid)
            if len(arr) <= self.full_lens.get(oid, 0):  # (it shrank since: a pop touched it)
                self.touched.add(oid)
            elif type(arr) is JSArray:
                self.pushes[id(arr)] = head  # (`Machine.push` logs the next one itself)
            wlog = self.m.wlog
            if type(item) not in _PRIMITIVE:
                self.mixed.add(oid)
                item = self.enc(item, wlog)  # type: ignore[arg-type]  # (defines it first)
            wlog.append(head)  # type: ignore[union-attr]
            wlog.append(item)  # type: ignore[union-attr]

    def log_del(self, obj: Any, key: str) -> None:
        oid = getattr(obj, "oid", None)
        if oid is not None and oid in self.known:
            self.dirty[oid] = obj
            self.m.wlog.append((4, oid, key))  # type: ignore[union-attr]

    def log_frame(self, f: Any, caller: Any) -> None:
        """A frame pushed (`caller`: the frame below it, or None): its scope, parameters and
        locals, and where the caller stands. (Run at every call.) The common call, with plain
        values in visible locals, logs its call site's tuple (one object per site and callee,
        which a batch pickles once and then refers to in two bytes) and a copy of the locals."""
        wlog = self.m.wlog
        assert wlog is not None
        code = f.code
        head = code.rec_head or frame_head(code)
        at = (0, 0)
        if caller is not None:
            below = caller.code.rec_head or frame_head(caller.code)
            got = below[4].get(caller.stmt_pc)
            if got is None:
                got = below[4][caller.stmt_pc] = stmt_position(caller)
            at = got
        if head[6]:  # a frame's locals are its parameters, none hidden, when it starts
            # A def's arguments as bound, kept apart from its locals (which change), or else
            # a copy of its locals.
            vals = f.entry
            if vals is None:
                vals = f.locals.copy()
            for v in vals.values():
                if type(v) not in _PRIMITIVE:
                    break
            else:
                site = head[5].get(at)
                if site is None:
                    site = head[5][at] = (6, head[0], head[1], head[2], None, at[0], at[1])
                wlog.append(site)
                wlog.append(vals)
                return
        vals = {k: self.enc(x, wlog) for k, x in f.locals.items() if k[:2] != "__"}
        wlog.append((6, head[0], head[1], head[2], vals, at[0], at[1]))

    def position(self, f: Any) -> tuple[int, int]:
        """`stmt_position(f)`, remembered per code object and statement."""
        head = f.code.rec_head or frame_head(f.code)
        at = head[4].get(f.stmt_pc)
        if at is None:
            at = head[4][f.stmt_pc] = stmt_position(f)
        return at

    def capture(self) -> dict[str, Any]:
        """The full visible state, as a keyframe: every reachable container under `heap`."""
        plain: set[int] = set()
        state = self._capture(None, None, plain)
        self.known = set(state["heap"])
        self.pushes = {}
        self.plain_lists = plain
        return state

    def capture_changes(self) -> dict[str, Any]:
        """An incremental keyframe: the state as `capture` gives it, except that `heap` holds
        only the containers defined or changed since the last full keyframe (`base`), and a
        thread (or the output) that only grew since is `("+", n, items)`: the base's first n
        messages, then these. The timeline merges it with its base (`Timeline`)."""
        state = self._capture(self.dirty, self.full_seqs)
        self.known.update(state["heap"])
        state["base"] = self.full_step
        return state

    def _capture(
        self,
        dirty: dict[int, Any] | None,
        grown: dict[str, Any] | None = None,
        plain: set[int] | None = None,
    ) -> dict[str, Any]:
        """The visible state; with `dirty`, known containers not in it are referred to and not
        encoded, and every container in it is encoded, reachable or not; with `grown`, a
        thread or the output that only grew since its mark there is `("+", n, new items)`.
        `plain` gets the lists it found all primitives."""
        m = self.m
        heap: dict[int, Any] = {}
        known = self.known if dirty is not None else ()

        pending: list[Any] = []  # containers met but not yet encoded: no recursion on depth

        def enc(v: Any) -> Any:
            t = type(v)
            if t in _PRIMITIVE:
                return v
            if t is JSArray or t is JSObject or t is JSSet or t is JSMap:
                oid = self.oid_of(v)
                if oid not in heap and (oid not in known or oid in dirty):  # type: ignore[operator]
                    heap[oid] = None
                    pending.append((oid, v))
                return ("r", oid)
            if t is Result:
                return ("R", v.ok, enc(v.value if v.ok else v.error))
            if t is FuncRef or t is Closure:
                return ("F", v.name)
            if t is BoundFunction:
                return ("F", v.label())
            if t is Decision:
                return ("D", v.action, enc(v.value))
            if t is dict:
                return {k: enc(x) for k, x in v.items()}
            if t is list or t is tuple:
                return [enc(x) for x in v]
            return repr(v)

        full_lens = self.full_lens if dirty is not None else {}
        touched = self.touched if dirty is not None else ()
        mixed = self.mixed
        plain_before = self.plain_lists
        if plain is None:
            plain = set()

        def drain() -> None:
            while pending:
                oid, c = pending.pop()
                n = full_lens.get(oid)
                if n is not None and oid not in touched and type(c) is not JSObject:
                    # Only grown since the full keyframe: its first n items are the base's.
                    if type(c) is JSArray:
                        tail = c[n:]
                        if oid not in mixed:  # only primitives pushed since: no need to look
                            heap[oid] = ("+", n, tail)
                        else:
                            heap[oid] = ("+", n, _primitives(tail) or [enc(x) for x in tail])
                    else:
                        heap[oid] = ("+", n, [enc(_entry(x)) for x in list(c.values())[n:]])
                    continue
                if type(c) is JSSet or type(c) is JSMap:
                    heap[oid] = [enc(_entry(x)) for x in c.values()]
                    continue
                if type(c) is JSArray:
                    if oid in plain_before and oid not in mixed:  # (and only pushed to since)
                        heap[oid] = list(c)
                        plain.add(oid)
                        continue
                    items = _primitives(c)
                    if items is None:
                        items = [enc(x) for x in c]
                    else:
                        plain.add(oid)
                    heap[oid] = items
                elif _PRIMITIVE.issuperset(map(type, c.values())):
                    heap[oid] = dict(c)
                else:
                    heap[oid] = {k: enc(x) for k, x in c.items()}

        if dirty is not None:  # changed containers, even unreachable now: they may be again
            for oid, c in dirty.items():
                if oid not in heap:
                    heap[oid] = None
                    pending.append((oid, c))
        frames = []
        for f in m.frames:
            code = f.code
            head = code.rec_head or frame_head(code)
            local_vals = f.locals
            if local_vals.keys() <= head[3] and _PRIMITIVE.issuperset(
                map(type, local_vals.values())
            ):
                vals = dict(local_vals)
            else:
                vals = {
                    k: v if type(v) in _PRIMITIVE else enc(v)
                    for k, v in local_vals.items()
                    if k[:2] != "__"
                }
            at = head[4].get(f.stmt_pc)
            if at is None:
                at = head[4][f.stmt_pc] = stmt_position(f)
            frames.append([head[0], head[1], head[2], vals, at[0], at[1]])
        glob, shared, usage, error = m.globals, m.shared, m.usage, m.error
        state = {
            "frames": frames,
            "globals": {k: v if type(v) in _PRIMITIVE else enc(v) for k, v in glob.items()}
            if glob
            else {},
            "shared": {k: v if type(v) in _PRIMITIVE else enc(v) for k, v in shared.items()}
            if shared
            else {},
            "threads": {
                tid: _appended(grown, "thread:" + tid, msgs, enc) for tid, msgs in m.threads.items()
            },
            "active": m.active_thread(),
            "output": _appended(grown, "output", m.output, None),
            "usage": [usage["input_tokens"], usage["output_tokens"], usage["cost"]],
            "status": m.status if m.status in (HALTED, FAILED, INTERRUPTED) else "running",
            "result": m.result if type(m.result) in _PRIMITIVE else enc(m.result),
            "error": error.message if error else None,
            "heap": heap,
        }
        drain()
        return state

    # -- hooks the machine calls ----------------------------------------------------------------

    def marker(self, kind: str) -> int:
        loc = self.m.location
        loc_id = self.loc_ids.get(id(loc), 0) if loc is not None else 0
        return loc_id << 3 | KIND_CODES.get(kind, 0)

    def on_step(self, m: Machine, kind: str) -> None:
        """Per-step mode: the marker is appended here rather than by the machine."""
        wlog = m.wlog
        assert wlog is not None
        wlog.append(self.marker(kind))
        if len(wlog) >= m.flush_at:
            self.flush_chunk(m)

    def mark(self, m: Machine, kind: str) -> None:
        """A step that is not a statement start: after an LLM call, a tool round, …; stored
        at once, so a crash never loses a paid answer's step."""
        m.wlog.append(self.marker(kind))  # type: ignore[union-attr]
        self.flush_chunk(m)

    def reset(self) -> None:
        """A restore replaced the state: the next step gets a keyframe (and a mark)."""
        self.force_keyframe = True
        self.m.wlog.append((R_RESET, len(self.m.frames)))  # type: ignore[union-attr]
        self.m.wlog_limit = 0

    def event(self, step: int, kind: str, summary: str, data: dict[str, Any]) -> None:
        if kind not in EVENT_KINDS:
            return
        self.m.wlog_limit = 0  # the step that shows this event is stored as soon as it starts

        plain = {
            k: to_plain(v) if type(v) in (JSArray, JSObject, Result) else v for k, v in data.items()
        }
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
            small: dict[str, Any] = {
                k: plain[k]
                for k in (
                    "provider",
                    "model",
                    "input_tokens",
                    "output_tokens",
                    "latency_ms",
                    "round",
                )
                if k in plain
            }
            self.store.add_event(self.run_id, self.branch, step, kind, summary, small)
            self.store.flush()  # a paid answer is durable before the program goes on
            return
        self.store.add_event(self.run_id, self.branch, step, kind, summary, plain)

    # -- chunks, batches, keyframes ---------------------------------------------------------------

    def flush_chunk(self, m: Machine, at_marker: bool = True) -> None:
        """Store the write log up to its last step marker (the step just started): its last
        entry, unless `at_marker` is False (the run stopped within a step)."""
        wlog = m.wlog
        if not wlog:
            return
        depth_after = len(m.frames)
        if at_marker:
            chunk = wlog[:]
            rest: list[Any] = []
            del wlog[:]
        else:
            end, undo = _last_marker(wlog)
            if end < 0:
                return  # no step started since the last flush
            chunk = wlog[: end + 1]
            rest = wlog[end + 1 :]
            last_mark = chunk[-1]
            if type(last_mark) is not int:  # the marker and a write in one: the write goes
                # with the rest (a reader recomputes a derived write on the state before it)
                chunk[-1] = last_mark[1]
                if last_mark[0] == R_STEP_LOCAL:  # its value begins the rest: a local write
                    rest.insert(0, last_mark[2])
                else:  # an R_STEP_WRITE, an R_STEP_PUSH
                    alone = R_DERIVED if last_mark[0] == R_STEP_WRITE else R_PUSHED
                    rest.insert(0, (alone, *last_mark[2:]))
            del wlog[:]
            wlog.extend(rest)
            depth_after -= undo  # the frames pushed after the marker are the next step's
        last = m.step_index  # every step appends its marker, so the last one is this step's
        head = (self.first_step, self.depth, depth_after)
        try:
            blob = encode_record((*head, chunk, BATCH_STEP_LOCALS), memo=True)
        except ValueError:  # something the machine logged unencoded: make it plain
            blob = encode_record((*head, _plain_data(chunk), BATCH_STEP_LOCALS), memo=True)
        self.store.append_batch(self.run_id, self.branch, self.first_step, last, blob)
        self.bytes_written += len(blob)
        # What a reader pays to replay it: its bytes, or ENTRY_WEIGHT an entry (a derived write
        # is two bytes of a batch, a reference to its tuple, but replaying it costs as much).
        self.since_keyframe += max(len(blob), ENTRY_WEIGHT * len(chunk))
        self.first_step = last + 1
        self.last_step = last
        self.depth = depth_after
        m.wlog_limit = self.chunk_limit
        # A keyframe once the deltas since the last one outweigh it twice: keyframes then cost
        # at most half of what the deltas cost, whatever the size of the state. But never more
        # than MAX_KEYFRAME_GAP of deltas apart, which is what bounds a random read: after a
        # large incremental keyframe (a thread grown since the full one, which every keyframe
        # on it holds until the next full one) a loop of small steps would otherwise go tens of
        # thousands of steps without one. Those keyframes add up to a full one's size soon,
        # and the next full one makes them small again (`write_keyframe`).
        due = self.since_keyframe > max(2 * self.keyframe_size, MIN_KEYFRAME_GAP)
        if not rest and (self.force_keyframe or due or self.since_keyframe > MAX_KEYFRAME_GAP):
            self.write_keyframe(last, early=not due)
        for listener in self.listeners:
            listener(last)

    def record_current_step(self) -> None:
        """Record the step the machine stands at (rebuilt there from a checkpoint) as the
        first of this run, with a keyframe of its whole state."""
        m = self.m
        m.location = m.current_location() or m.location
        self.first_step = m.step_index
        self.force_keyframe = True
        m.wlog.append(self.marker("step"))  # type: ignore[union-attr]
        self.flush_chunk(m)

    def write_keyframe(self, step: int, early: bool = False) -> None:
        """Store a keyframe at `step`: a full one when forced (the first, after a restore),
        once recording has spent FULL_KEYFRAME_BUDGET times what the last full one cost
        to make since it (so full captures take a bounded share of the run's CPU however
        large the state), when the changes since it are half its size, or when the incremental
        ones since it add up to its size (a large container changed once is in each of them
        until the next full one), if anything but the frames and globals changed since it
        (which every keyframe holds whole); else an incremental one on the last full one.
        Sizes are encoded bytes, what capturing costs: incremental keyframes cost at most half
        the deltas (the next comes once the deltas outweigh the last twice), full ones at most
        what the incremental ones cost, or a small share of the time.

        An `early` one (MAX_KEYFRAME_GAP, before the deltas outweigh the last one twice) is a
        full one when the last two incremental ones were large and as large as each other:
        what they hold since the full one has stopped changing, so every one on it would hold
        it again, and after a full one they are small."""
        started = time.perf_counter()
        full = (
            self.force_keyframe
            or not self.incremental
            or self.full_step is None
            or self.full_step >= step
            or (
                (
                    started - self.full_at > FULL_KEYFRAME_BUDGET * self.full_cost
                    or 2 * self.keyframe_size > self.full_size
                    or self.since_full > self.full_size
                    or (early and self.steady)
                )
                and self._changed_since_full()
            )
        )
        state = self.capture() if full else self.capture_changes()
        raw = encode_record(state)
        blob = raw
        if len(raw) > COMPRESS_FROM:
            blob, self.compress_verdict = _compressed(raw, self.compress_verdict)
        if full:
            self.full_at = time.perf_counter()
            self.full_cost = self.full_at - started
        base = None if full else self.full_step  # read with it in one query (`state_span`)
        self.store.put_keyframe(self.run_id, self.branch, step, blob, base)
        # The next one comes once the deltas outweigh this one twice; after a full one, what
        # the next (incremental) one costs is what counts, and that starts small.
        was = self.keyframe_size
        self.keyframe_size = 0 if full and self.incremental else len(raw)
        self.steady = (
            not full and len(raw) >= MIN_KEYFRAME_GAP and abs(len(raw) - was) * 32 <= len(raw)
        )
        self.since_full = 0 if full else self.since_full + len(raw)
        self.bytes_written += len(blob)
        self.since_keyframe = 0
        self.force_keyframe = False
        if full:
            self.full_step, self.full_size = step, len(raw)
            heap = state["heap"]
            self.full_lens = {o: len(c) for o, c in heap.items() if type(c) is list} if heap else {}
            self.touched = set()
            self.mixed = set()
            m = self.m
            self.full_seqs = {"output": _seq_mark(m.output)}
            for tid, msgs in m.threads.items():
                self.full_seqs["thread:" + tid] = _seq_mark(msgs)
        self.dirty = {} if full else self.dirty

    def _changed_since_full(self) -> bool:
        """Whether a container, a thread or the output changed since the last full keyframe:
        else the incremental keyframes on it hold only the frames and globals, which a full one
        holds whole as well, so a new full one would cost its time for nothing."""
        if self.dirty:
            return True
        m, marks = self.m, self.full_seqs
        if _grown_from(marks.get("output"), m.output) != len(m.output):
            return True
        for tid, msgs in m.threads.items():
            if _grown_from(marks.get("thread:" + tid), msgs) != len(msgs):
                return True
        return len(m.threads) + 1 != len(marks)

    def finish(self) -> None:
        """Record the end of the run (a final step holding the result) and flush."""
        m = self.m
        if m.status in (HALTED, FAILED):
            m.step_index += 1
            m.location = m.location  # the end step shows where the run stopped
            self.force_keyframe = True  # the last step is where a reader often lands
            if m.on_step is not None:
                m.on_step(m, "end")
            else:
                m.wlog.append(self.marker("end"))  # type: ignore[union-attr]
            self.flush_chunk(m)
        else:
            # Stopped mid-step (an interrupt): store every step started so far; the writes
            # after the last one stay pending for the step a continued run starts next.
            self.flush_chunk(m, at_marker=False)
        if self.branch == 0:
            # The run's row is its main line's: the one `agency runs` lists and `agency resume`
            # continues. A branch (a restore) ends in its own last step; writing its end here
            # would call a run waiting on an interrupt finished, and resume would refuse it.
            status = {HALTED: "finished", FAILED: "failed", INTERRUPTED: "interrupted"}.get(
                m.status, "running"
            )
            fields: dict[str, Any] = {"status": status}
            if m.status == HALTED:
                fields["result"] = to_plain(m.result)
            if m.error is not None:
                fields["error"] = m.error.message
            self.store.update_run(self.run_id, **fields)
        self.store.flush()

    def detach(self) -> None:
        m = self.m
        m.wlog = None
        m.rec = None
        m.on_step = m.on_flush = m.on_mark = m.on_event = m.on_reset = None


def _compressed(
    raw: bytes, verdict: tuple[bool, int, int] | None
) -> tuple[bytes, tuple[bool, int, int]]:
    """A large keyframe, zlib-compressed if that pays, and the verdict that said so: long
    message histories shrink to a third, while a long list of numbers barely shrinks and costs
    more to compress (~4 ms for 150 KB) than to store, so a sample of it is compressed first.
    The last `verdict` (pays, size, uses) holds instead for a keyframe within twice its size,
    a few times: the next keyframes hold mostly the same state, and sampling a list of
    numbers costs ~0.1 ms (messages ~0.01)."""
    n = len(raw)
    if (
        verdict is None
        or verdict[2] >= COMPRESS_VERDICT_USES
        or not verdict[1] <= 2 * n <= 4 * verdict[1]
    ):
        sample = raw[n // 2 : n // 2 + COMPRESS_SAMPLE]
        verdict = (len(zlib.compress(sample, 1)) <= COMPRESS_RATIO * len(sample), n, 0)
    verdict = (verdict[0], verdict[1], verdict[2] + 1)
    return (ZLIB_PREFIX + zlib.compress(raw, 1) if verdict[0] else raw), verdict


def _last_marker(wlog: list[Any]) -> tuple[int, int]:
    """Where the last step marker of a write log is (-1: none), and the frames pushed less
    those popped after it. Read from the start: a local write is two entries, its name and
    its value, and the value may be an int like a marker (an append too: `log_push`)."""
    end = -1
    pushed = 0
    items = iter(enumerate(wlog))
    for i, w in items:
        t = type(w)
        if t is int or w[0] == R_STEP_WRITE or w[0] == R_STEP_PUSH:
            end, pushed = i, 0
        elif w[0] == R_STEP_LOCAL:  # a marker, then its variable's value
            end, pushed = i, 0
            next(items, None)
        elif t is str or (w[0] == R_APPEND and len(w) == 2):
            next(items, None)  # its value
        elif w[0] == 6:
            pushed += 1
            if w[4] is None:  # a call site's tuple: the locals follow
                next(items, None)
        elif w[0] == 7:
            pushed -= 1
    return end, pushed


def _primitives(items: Any) -> list[Any] | None:
    """`items` as a list when every one is a primitive, which is encoded as it is (checked and
    copied in C, a third of the time a Python pass takes); else None."""
    return list(items) if _PRIMITIVE.issuperset(map(type, items)) else None


def _seq_mark(items: list[Any]) -> tuple[Any, int, Any]:
    """What tells later that an append-only list (a thread, the output) only grew: the list
    itself, its length, its last item."""
    return (items, len(items), items[-1] if items else None)


def _grown_from(mark: tuple[Any, int, Any] | None, items: list[Any]) -> int | None:
    """How many leading items `items` still shares with what `mark` saw, if it only grew."""
    if mark is None:
        return None
    was, n, last = mark
    if was is not items or len(items) < n or (n and items[n - 1] is not last):
        return None
    return n


def _appended(
    marks: dict[str, Any] | None, name: str, items: list[Any], enc: Callable[[Any], Any] | None
) -> Any:
    """A thread's messages (or the output) for a keyframe, encoded with `enc`: all of them, or
    `("+", n, the rest)` when they only grew since their mark in `marks`."""
    n = None if marks is None else _grown_from(marks.get(name), items)
    rest = items if n is None else items[n:]
    encoded = [enc(x) for x in rest] if enc is not None else list(rest)
    return encoded if n is None else ("+", n, encoded)


def _entry(x: Any) -> Any:
    """One element of a Set, or a Map's (key, value) pair as a list, as the timeline keeps it."""
    return list(x) if type(x) is tuple else x


def _plain_data(v: Any) -> Any:
    """Anything marshal cannot write, as its repr (a safety net; the machine encodes writes)."""
    t = type(v)
    if t in _PRIMITIVE:
        return v
    if t is tuple:
        return tuple(_plain_data(x) for x in v)
    if t is list:
        return [_plain_data(x) for x in v]
    if t is dict:
        return {str(k): _plain_data(x) for k, x in v.items()}
    return repr(v)


# ----------------------------------------------------------------------------------------------
# Running under the recorder


def public_base_url(url: Any) -> str | None:
    """A model's base URL without what may be secret in it (user, password, query)."""
    if not isinstance(url, str) or not url:
        return None
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
