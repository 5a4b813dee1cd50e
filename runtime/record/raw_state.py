"""Provides the state a timeline rebuilds: plain containers keyed by id (`RawState`), the write
records applied to it one step at a time, and the read-only views (`StateView`) made of it, with
the caches that let consecutive views share what did not change."""

from __future__ import annotations

import bisect
import contextlib
import gc
import json
from collections import OrderedDict
from collections.abc import Collection, Iterator
from typing import Any

from runtime.language.int_ops import INT_OP_LIST
from runtime.message_text import readable_content
from runtime.record.format import (
    R_ACTIVE,
    R_APPEND,
    R_CONTENTS,
    R_DELKEY,
    R_DERIVED,
    R_GLOBAL,
    R_LOCAL,
    R_MESSAGE,
    R_NESTED,
    R_OUTPUT,
    R_POP_FRAME,
    R_PUSH_FRAME,
    R_PUSHED,
    R_RESET,
    R_SETKEY,
    R_SHARED,
    R_SPLICE,
    R_STATUS,
    R_STEP_LOCAL,
    R_STEP_PUSH,
    R_STEP_WRITE,
    R_THREAD,
    R_USAGE,
    BlobError,
    batch_entries,
    expand_locals,
)
from runtime.record.requests import common_prefix
from runtime.record.views import (
    FrameView,
    Location,
    Message,
    StateView,
    Usage,
)

_MISSING = object()
_NO_USAGE = Usage(0, 0, 0.0)


@contextlib.contextmanager
def gc_held() -> Iterator[None]:
    """Holds the cyclic garbage collector while a state is decoded and viewed. Those are plain
    containers, which make no reference cycles, but allocating thousands of them sets off
    collections, and a full one walks every state and view the timeline keeps (tens of ms on
    a long thread: most of `state_at`'s slowest reads). Collection resumes afterwards."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class RawState:
    """A mutable materialised state (the recorder's encoding, applied delta by delta)."""

    __slots__ = (
        "frames",
        "globals",
        "shared",
        "threads",
        "active",
        "output",
        "usage",
        "status",
        "result",
        "error",
        "heap",
        "step",
        "heap_version",
        "base",
    )

    def __init__(self, data: dict[str, Any], step: int) -> None:
        # The keyframe step it was built from: deltas never carry a state across a replaced
        # one, so the recorder whose object ids it holds is the one that wrote that keyframe.
        self.base = step
        self.frames: list[list[Any]] = [list(f) for f in data["frames"]]
        for f in self.frames:
            f[3] = dict(f[3])
        self.globals: dict[str, Any] = dict(data["globals"])
        self.shared: dict[str, Any] = dict(data.get("shared") or {})
        self.threads: dict[str, list[Any]] = {k: list(v) for k, v in data["threads"].items()}
        self.active: str = data["active"]
        self.output: list[str] = list(data["output"])
        self.usage: list[Any] = list(data["usage"])
        self.status: str = data["status"]
        self.result: Any = data["result"]
        self.error: str | None = data["error"]
        self.heap: dict[int, Any] = {
            k: (list(v) if type(v) is list else dict(v)) for k, v in data["heap"].items()
        }
        self.step = step
        self.heap_version = 0  # raised by every change to a list or object (`ViewCache`)

    def apply(self, writes: tuple[Any, ...] | list[Any], steps: int = 0) -> int | None:  # noqa: C901 - one dispatch on write kind
        """Apply `writes`, all of them, or with `steps` a batch's entries from its start up to
        its `steps`th step marker, which it returns: the state at its `steps`th step, its
        markers found on the way rather than first (`DecodedBatch.marks`: a pass as long as
        the replay)."""
        frames = self.frames
        heap = self.heap
        items = iter(writes)
        try:
            for w in items:
                t = type(w)
                if t is str:  # a local of the innermost frame: its name, then its value
                    v = next(items)
                    if w[:2] != "__" and frames:
                        frames[-1][3][w] = v
                    continue
                if t is int:  # a step marker
                    if steps:
                        steps -= 1
                        if not steps:
                            return w  # type: ignore[no-any-return]
                    continue
                code = w[0]
                if code == R_STEP_WRITE:  # a step marker, then `name = a <op> b` on ints
                    if steps:
                        steps -= 1
                        if not steps:
                            return w[1]  # type: ignore[no-any-return]
                    if frames:  # (inline: a replay is mostly these, in an int loop)
                        vals = frames[-1][3]
                        try:
                            _, _, name, x, b, op, b_local = w
                            a = vals.get(x)
                            if b_local is True:
                                b = vals.get(b)
                            elif b_local:  # `a <op> (c <op> d)`: (c, d, op, d is a local)
                                c, d, inner, d_local = b
                                c = vals.get(c)
                                if d_local:
                                    d = vals.get(d)
                                ok = type(c) is int and type(d) is int
                                b = INT_OP_LIST[inner](c, d) if ok else None
                            if type(a) is int and type(b) is int:
                                vals[name] = INT_OP_LIST[op](a, b)
                                continue
                        except (IndexError, TypeError, ValueError):
                            pass
                        _derive(vals, w)  # (it says what is wrong)
                    continue
                if code == R_STEP_LOCAL:  # a loop head's step marker, then its variable
                    if steps:
                        steps -= 1
                        if not steps:
                            return w[1]  # type: ignore[no-any-return]
                    v = next(items)
                    if frames:
                        frames[-1][3][w[2]] = v
                    continue
                if code == R_DERIVED:  # the same write after its marker, in the next batch
                    if frames:
                        _derive(frames[-1][3], w)
                    continue
                if code == R_STEP_PUSH or code == R_PUSHED:  # `xs.push(v)`, v a local's value
                    if code == R_STEP_PUSH and steps:
                        steps -= 1
                        if not steps:
                            return w[1]  # type: ignore[no-any-return]
                    self.heap_version += 1
                    c = heap.get(w[-2])
                    if c is not None:
                        c.append(frames[-1][3].get(w[-1]) if frames else None)
                    continue
                if code == R_LOCAL:
                    name = w[2]
                    if name[:2] != "__":
                        frames[w[1]][3][name] = w[3]
                elif code == R_GLOBAL:
                    self.globals[w[1]] = w[2]
                elif code == R_CONTENTS:
                    c = w[2]
                    heap[w[1]] = list(c) if type(c) is list else dict(c)
                    self.heap_version += 1
                elif code == R_SETKEY:
                    self.heap_version += 1
                    c = heap.get(w[1])
                    if type(c) is list:
                        i = w[2]
                        if i < len(c):
                            c[i] = w[3]
                        else:
                            c.extend([None] * (i - len(c)))
                            c.append(w[3])
                    elif c is not None:
                        c[w[2]] = w[3]
                elif code == R_DELKEY:
                    self.heap_version += 1
                    c = heap.get(w[1])
                    if c is not None:
                        c.pop(w[2], None)
                elif code == R_APPEND:  # (R_APPEND, oid) then the item, or expanded
                    self.heap_version += 1
                    c = heap.get(w[1])
                    v = next(items) if len(w) == 2 else w[2]
                    if c is not None:
                        c.append(v)
                elif code == R_SPLICE:
                    self.heap_version += 1
                    c = heap.get(w[1])
                    if c is not None:
                        c[w[2] : w[2] + w[3]] = w[4]
                elif code == R_PUSH_FRAME:
                    if frames:
                        frames[-1][4], frames[-1][5] = w[5], w[6]
                    vals = w[4]  # None: a call site's tuple, and its locals next
                    vals = _locals(next(items)) if vals is None else vals
                    frames.append([w[1], w[2], w[3], dict(vals), w[5], w[6]])
                elif code == R_POP_FRAME:
                    if frames:
                        frames.pop()
                elif code == R_OUTPUT:
                    self.output.append(w[1])
                elif code == R_MESSAGE:
                    self.threads.setdefault(w[1], []).append(w[2])
                elif code == R_THREAD:
                    self.threads[w[1]] = list(w[2])
                elif code == R_ACTIVE:
                    self.active = w[1]
                elif code == R_USAGE:
                    self.usage = [w[1], w[2], w[3]]
                elif code == R_SHARED:
                    if not w[1].startswith("mutable:"):
                        self.shared[w[1]] = w[2]
                elif code == R_STATUS:
                    self.status, self.result, self.error = w[1], w[2], w[3]
        except StopIteration:  # a name or an append without its value (`next(items)`)
            raise BlobError("damaged step batch: a write without its value") from None
        if steps:
            raise BlobError("damaged step batch: fewer steps than its row in the store says")
        return None

    def reachable(self, v: Any) -> set[int]:
        """The ids of every list and object reachable from encoded value `v`."""
        seen: set[int] = set()
        todo = [v]
        heap = self.heap
        while todo:
            x = todo.pop()
            t = type(x)
            if t is tuple:
                if x and x[0] == "r":
                    oid = x[1]
                    if oid not in seen:
                        seen.add(oid)
                        c = heap.get(oid)
                        if type(c) is list:
                            todo.extend(c)
                        elif type(c) is dict:
                            todo.extend(c.values())
                elif x and x[0] in ("R", "D"):
                    todo.append(x[2])
            elif t is list:
                todo.extend(x)
            elif t is dict:
                todo.extend(x.values())
        return seen

    # -- views ------------------------------------------------------------------------------

    def plain(self, v: Any, depth: int = 0) -> Any:
        t = type(v)
        if t is tuple:
            tag = v[0]
            if tag == "r":
                c = self.heap.get(v[1])
                if depth > 60:
                    return "[…]"
                if type(c) is list:
                    return [self.plain(x, depth + 1) for x in c]
                if type(c) is dict:
                    return {k: self.plain(x, depth + 1) for k, x in c.items()}
                return None
            if tag == "R":
                if v[1]:
                    return {"$result": "success", "value": self.plain(v[2], depth + 1)}
                return {"$result": "failure", "error": self.plain(v[2], depth + 1)}
            if tag == "F":
                return {"$function": v[1]}
            if tag == "D":
                return {"$decision": v[1], "value": self.plain(v[2], depth + 1)}
            return list(v)
        if t is dict:
            return {k: self.plain(x, depth + 1) for k, x in v.items()}
        if t is list:
            return [self.plain(x, depth + 1) for x in v]
        return v

    def message(self, m: Any) -> Message:
        """Encoded message `m` as a view: what `message_view(self.plain(m))` makes, without
        copying the whole message first (a long thread converts thousands)."""
        if type(m) is not dict:
            return message_view(self.plain(m))
        plain = self.plain
        return Message(
            str(plain(m.get("role", "user"), 1)),
            readable_content(plain(m.get("content", ""), 1), _json_text),
            plain(m.get("name"), 1),
            tuple(plain(m.get("tool_calls"), 1) or ()),
        )

    def view(
        self,
        step: int,
        branch: int,
        location: Location | None,
        cache: ViewCache | None = None,
        only: Collection[str] | None = None,
    ) -> StateView:
        """The state as a view; `cache` lets it reuse what an earlier view converted. With
        `only`, a narrow view: just those names in its frames and globals, no threads, output
        or result (what reading one expression at many steps needs, at the cost of a few
        values rather than of the whole state)."""
        plain = self.plain if cache is None else cache.plain_function(self)
        frames = []
        n = len(self.frames)
        for i, f in enumerate(self.frames):
            scope, kind, params, locals_, line, col = f
            if kind == "module" and n > 1:
                continue
            if i == n - 1 and location is not None:
                line, col = location.line, location.col
            if only is None:
                args = {p: plain(locals_.get(p)) for p in params if not p.startswith("__")}
                rest = {k: plain(v) for k, v in locals_.items() if k not in params}
            else:
                args = {p: plain(locals_.get(p)) for p in params if p in only}
                rest = {k: plain(locals_[k]) for k in only if k in locals_ and k not in params}
            frames.append(FrameView(scope, kind, args, rest, line, col))
        if only is not None:
            glob = {k: plain(self.globals[k]) for k in only if k in self.globals}
            for k in only:
                if k in self.shared:
                    glob.setdefault(k, plain(self.shared[k]))
            return StateView(
                step,
                branch,
                location,
                tuple(frames),
                glob,
                {},
                self.active,
                (),
                _NO_USAGE,
                self.status,
            )
        glob = {k: plain(v) for k, v in self.globals.items()}
        for k, v in self.shared.items():
            glob.setdefault(k, plain(v))
        if cache is None:
            threads = {tid: tuple(map(self.message, msgs)) for tid, msgs in self.threads.items()}
            output = tuple(self.output)
        else:
            threads = {tid: cache.thread(self, tid, msgs) for tid, msgs in self.threads.items()}
            output = cache.output(self.output)
        return StateView(
            step=step,
            branch=branch,
            location=location,
            frames=tuple(frames),
            globals=glob,
            threads=threads,
            active_thread=self.active,
            output=output,
            usage=Usage(int(self.usage[0]), int(self.usage[1]), float(self.usage[2] or 0.0)),
            status=self.status,
            result=self.plain(self.result),
            error=self.error,
        )


class ViewCache:
    """What the last views built from materialised states converted, for the next view to reuse.

    A view is a copy of the state, so building one from scratch is O(state) however little a
    step changed: walking a history step by step would be O(steps x state). Most of a state is
    append-only (threads, output) or untouched by a step, so the cache keeps, per thread, the
    raw messages of the longest thread converted and their `Message`s (a new view reuses the
    longest common prefix, compared in C), the output as last converted, and the plain copy of every top-level list or
    object until the heap changes. Views share these (immutable by contract) pieces.
    """

    __slots__ = ("threads", "out_raw", "out_view", "plains", "plains_raw", "plains_version")

    def __init__(self) -> None:
        self.threads: dict[str, tuple[list[Any], tuple[Message, ...]]] = {}  # the longest
        self.out_raw: list[str] = []
        self.out_view: tuple[str, ...] = ()
        self.plains: dict[int, Any] = {}
        self.plains_raw: RawState | None = None  # the state `plains` were copied from
        self.plains_version = -1  # ... and its heap version then

    def plain_function(self, raw: RawState) -> Any:
        """`raw.plain`, with the copies of top-level containers kept while the heap stays."""
        if raw is not self.plains_raw or raw.heap_version != self.plains_version:
            self.plains = {}
            self.plains_raw, self.plains_version = raw, raw.heap_version
        plains = self.plains

        def plain(v: Any) -> Any:
            if type(v) is tuple and v and v[0] == "r":
                found = plains.get(v[1], _MISSING)
                if found is _MISSING:
                    found = plains[v[1]] = raw.plain(v)
                return found
            return raw.plain(v)

        return plain

    def thread(self, raw: RawState, tid: str, msgs: list[Any]) -> tuple[Message, ...]:
        """Thread `tid` as views. The cache keeps the longest thread converted so far, so an
        earlier step of the same conversation (a prefix of it) is a slice, whichever order the
        steps are read in."""
        old_raw, old_view = self.threads.get(tid) or ((), ())
        k = common_prefix(old_raw, msgs) if old_raw else 0
        if k == len(msgs):
            return old_view if k == len(old_view) else old_view[:k]
        view = old_view[:k] + tuple(map(raw.message, msgs[k:]))
        self.threads[tid] = (list(msgs), view)
        return view

    def output(self, out: list[str]) -> tuple[str, ...]:
        k = common_prefix(self.out_raw, out)
        if k == len(out) == len(self.out_view):
            return self.out_view
        self.out_view = self.out_view[:k] + tuple(out[k:])
        self.out_raw = list(out)
        return self.out_view


class SharedParts:
    """The parts of the full keyframes a timeline decodes, made one object where they are
    equal: each thread's longest list of messages, each list or object by id. The keyframe
    states a timeline keeps then cost little more than their lists of references (a thread of
    thousands of messages is decoded afresh by every full keyframe), and a view compares the
    thread it was given with the one it converted by identity, not item by item."""

    __slots__ = ("threads", "heap")

    def __init__(self) -> None:
        self.threads: dict[str, list[Any]] = {}
        self.heap: dict[int, Any] = {}

    def share(self, data: dict[str, Any]) -> None:
        """Make the equal parts of decoded full keyframe `data` the ones seen before."""
        for tid, msgs in data["threads"].items():
            if type(msgs) is not list:
                continue
            known = self.threads.get(tid)
            if known is not None:
                k = common_prefix(known, msgs)
                msgs[:k] = known[:k]
            if known is None or len(msgs) >= len(known):
                self.threads[tid] = msgs
        heap = data["heap"]
        for oid, c in heap.items():
            known = self.heap.get(oid)
            if known is not None and type(known) is type(c) and known == c:
                heap[oid] = known
            else:
                self.heap[oid] = c


class DecodedBatch:
    """A decoded batch: its entries as stored (step markers, writes, and a write to a local of
    the innermost frame as two entries, its name and its value, which `RawState.apply` takes as
    they are); where each step's marker sits (`marks`) and depths on demand.

    With `last`, the last step its row in the store gives, the markers are found only when
    asked for: a random read replays a batch from its start, finding them as it goes
    (`RawState.apply(entries, steps)`), and a separate pass to find them first cost as much
    as the replay. They are checked against `last` when found."""

    __slots__ = (
        "first",
        "last",
        "entries",
        "pairs",
        "_marks",
        "known",
        "depths",
        "depth_before",
        "depth_after",
        "reset_steps",
    )

    def __init__(self, blob: bytes, last: int | None = None) -> None:
        first, self.depth_before, self.depth_after, entries, pairs = batch_entries(blob)
        self.first: int = first
        self.entries: list[Any] = entries
        self.pairs = pairs
        self._marks: list[int] | None = None
        self.known: dict[int, int] = {}  # step -> marker, as replays found them (`found`)
        if last is None or last < first:
            self._marks = _marks(entries, pairs)
            last = first + len(self._marks) - 1
        self.last: int = last
        self.depths: list[int] | None = None
        self.reset_steps: list[int] | None = None

    @property
    def marks(self) -> list[int]:
        """Where each step's marker is in `entries`, in step order."""
        marks = self._marks
        if marks is None:
            marks = _marks(self.entries, self.pairs)
            if self.first + len(marks) - 1 != self.last:
                raise BlobError(
                    f"damaged step batch: {len(marks)} steps where its row in the store "
                    f"says {self.last - self.first + 1}"
                )
            self._marks = marks
        return marks

    def record(self, step: int) -> tuple[Any, ...]:
        """(location id, kind code, writes as `R_*` tuples, depth) of `step`."""
        i = step - self.first
        end = self.marks[i]
        start = self.marks[i - 1] if i else 0  # (the step before's marker may carry a write)
        marker = marker_of(self.entries[end])
        before = self.depth(i - 1) if i else self.depth_before
        writes = [w for w in expand_locals(before, self.entries[start:end]) if type(w) is not int]
        return (marker >> 3, marker & 7, tuple(writes), self.depth(i))

    def found(self, step: int, marker: int | None) -> None:
        """Note the marker of `step` a replay found (`RawState.apply(entries, steps)`), for
        `marker` to give without finding every marker of the batch."""
        if marker is not None and self._marks is None:
            self.known[step] = marker

    def marker(self, step: int) -> int:
        """The marker of `step`: its location id << 3 | its kind code."""
        if self._marks is None:
            found = self.known.get(step)
            if found is not None:
                return found
        return marker_of(self.entries[self.marks[step - self.first]])

    def resets(self) -> list[int]:
        """The steps of the batch whose writes replace the state (an `R_RESET`: a restore, or a
        new recorder, as a resumed run has, whose containers have other ids than before)."""
        if self.reset_steps is None:
            steps = []
            step = self.first
            items = iter(self.entries)
            for e in items:
                t = type(e)
                if t is int or e[0] == R_STEP_WRITE or e[0] == R_STEP_PUSH:
                    step += 1
                elif e[0] == R_STEP_LOCAL:
                    step += 1
                    if next(items, _MISSING) is _MISSING:  # its value
                        raise BlobError("damaged step batch: a write without its value")
                elif t is str or (e[0] == R_APPEND and len(e) == 2) or _site(e):
                    if next(items, _MISSING) is _MISSING:  # its value
                        raise BlobError("damaged step batch: a write without its value")
                elif e[0] == R_RESET:
                    steps.append(step)
            self.reset_steps = steps
        return self.reset_steps

    def depth(self, i: int) -> int:
        """Frames on the stack at the batch's `i`th step."""
        if self.depths is None:
            depths = []
            depth = self.depth_before
            items = iter(self.entries)
            for e in items:
                t = type(e)
                if t is int or e[0] == R_STEP_WRITE or e[0] == R_STEP_PUSH:
                    depths.append(depth)
                elif e[0] == R_STEP_LOCAL:
                    depths.append(depth)
                    if next(items, _MISSING) is _MISSING:  # its value
                        raise BlobError("damaged step batch: a write without its value")
                elif t is str or (e[0] == R_APPEND and len(e) == 2):
                    if next(items, _MISSING) is _MISSING:  # its value
                        raise BlobError("damaged step batch: a write without its value")
                elif e[0] == R_PUSH_FRAME:
                    depth += 1
                    if _site(e) and next(items, _MISSING) is _MISSING:  # its locals
                        raise BlobError("damaged step batch: a call without its locals")
                elif e[0] == R_POP_FRAME:
                    depth -= 1
                elif e[0] == R_RESET and len(e) > 1 and type(e[1]) is int:
                    depth = e[1]
            if depths:
                depths[-1] = self.depth_after
            self.depths = depths
        return int(self.depths[i])


class BatchCache:
    """The decoded batches a timeline keeps, found by the step they hold: a batch by bisection
    over each branch's first steps (a random read of an LLM run asks for a few dozen batches of
    a step or two each), the least recently used dropped first. Bounded by what they hold as
    much as by count: a loop's batches hold ~2,000 entries each, an LLM run's a handful (so
    many more of those fit in the same memory) but maybe long messages (their stored bytes)."""

    __slots__ = (
        "_by_key",
        "_firsts",
        "_entries",
        "_bytes",
        "max_batches",
        "max_entries",
        "max_bytes",
    )

    def __init__(
        self, max_batches: int = 4096, max_entries: int = 1 << 19, max_bytes: int = 32 << 20
    ) -> None:
        self._by_key: OrderedDict[tuple[int, int], tuple[DecodedBatch, int]] = OrderedDict()
        self._firsts: dict[int, list[int]] = {}  # branch -> its batches' first steps, sorted
        self._entries = 0
        self._bytes = 0
        self.max_batches = max_batches
        self.max_entries = max_entries
        self.max_bytes = max_bytes

    def __len__(self) -> int:
        return len(self._by_key)

    def __contains__(self, key: tuple[int, int]) -> bool:
        return key in self._by_key

    def find(self, branch: int, step: int) -> DecodedBatch | None:
        """The kept batch of `branch` that holds `step`, if any."""
        firsts = self._firsts.get(branch)
        if not firsts:
            return None
        i = bisect.bisect_right(firsts, step) - 1
        if i < 0:
            return None
        key = (branch, firsts[i])
        batch = self._by_key[key][0]
        if step > batch.last:
            return None
        self._by_key.move_to_end(key)
        return batch

    def keep(self, branch: int, first: int, batch: DecodedBatch, nbytes: int = 0) -> None:
        """Keep `batch` (stored in `nbytes`), dropping the least recently used over the bounds."""
        key = (branch, first)
        old = self._by_key.pop(key, None)
        if old is not None:
            self._entries -= len(old[0].entries)
            self._bytes -= old[1]
        else:
            bisect.insort(self._firsts.setdefault(branch, []), first)
        self._by_key[key] = (batch, nbytes)
        self._entries += len(batch.entries)
        self._bytes += nbytes
        while len(self._by_key) > 1 and (
            len(self._by_key) > self.max_batches
            or self._entries > self.max_entries
            or self._bytes > self.max_bytes
        ):
            (b, f), (dropped, size) = self._by_key.popitem(last=False)
            self._entries -= len(dropped.entries)
            self._bytes -= size
            firsts = self._firsts[b]
            del firsts[bisect.bisect_left(firsts, f)]

    def clear(self) -> None:
        self._by_key.clear()
        self._firsts.clear()
        self._entries = 0
        self._bytes = 0


def marker_of(entry: Any) -> int:
    """The step marker an entry is: an int, or an `R_STEP_WRITE`'s, `R_STEP_PUSH`'s or
    `R_STEP_LOCAL`'s."""
    return entry if type(entry) is int else int(entry[1])


def _derive(local_vals: dict[str, Any], w: tuple[Any, ...]) -> None:
    """Apply a derived write (`R_STEP_WRITE`, `R_DERIVED`): compute its value as the machine
    did, from two ints among `local_vals` (the innermost frame's) or one and a constant."""
    try:
        name, x, b, op, b_local = w[-5:]
        a = local_vals[x]
        if b_local == R_NESTED:  # `a <op> (c <op> d)`
            c, d, inner, d_local = b
            c = local_vals[c]
            if d_local:
                d = local_vals[d]
            if type(c) is not int or type(d) is not int:
                raise TypeError
            b = INT_OP_LIST[inner](c, d)
        elif b_local:
            b = local_vals[b]
        if type(a) is not int or type(b) is not int:
            raise TypeError
        local_vals[name] = INT_OP_LIST[op](a, b)
    except (KeyError, IndexError, TypeError, ValueError):  # (`w` from a damaged batch too)
        raise BlobError(
            "damaged step batch: a derived write whose operands are not two ints"
        ) from None


def _marks(entries: list[Any], pairs: bool) -> list[int]:
    """Where the step markers (ints) of a batch's entries are; a name (a str, when `pairs`)
    is followed by its value, which may be an int too. `BlobError` for anything else."""
    marks: list[int] = []
    add = marks.append
    items = iter(enumerate(entries))
    for i, e in items:
        t = type(e)
        if t is int:
            add(i)
        elif t is str and pairs:
            if next(items, None) is None:
                raise BlobError("damaged step batch: a local write without its value")
        elif t is not tuple or not e:
            raise BlobError("damaged step batch: an entry is neither a marker nor a write")
        elif e[0] == R_STEP_WRITE or e[0] == R_STEP_PUSH:
            add(i)
        elif e[0] == R_STEP_LOCAL:
            add(i)
            if next(items, None) is None:
                raise BlobError("damaged step batch: a loop head without its value")
        elif e[0] == R_APPEND and len(e) == 2 and pairs:
            if next(items, None) is None:
                raise BlobError("damaged step batch: an append without its item")
        elif _site(e) and pairs:
            if next(items, None) is None:
                raise BlobError("damaged step batch: a call without its locals")
    return marks


def _site(e: tuple[Any, ...]) -> bool:
    """Whether `e` is a call site's `R_PUSH_FRAME`, which the call's locals follow."""
    return e[0] == R_PUSH_FRAME and len(e) == 7 and e[4] is None


def _locals(vals: Any) -> dict[str, Any]:
    """The entry after a call site's `R_PUSH_FRAME`: the call's locals."""
    if type(vals) is not dict:
        raise BlobError("damaged step batch: a call without its locals")
    return vals


def _json_text(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False)


def message_view(m: Any) -> Message:
    if not isinstance(m, dict):
        return Message("user", str(m))
    return Message(
        str(m.get("role", "user")),
        readable_content(m.get("content", ""), _json_text),
        m.get("name"),
        tuple(m.get("tool_calls") or ()),
    )
