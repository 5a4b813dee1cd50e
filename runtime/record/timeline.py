"""Provides `Timeline`: read access to every step of a recorded run, on any branch.

`state_at(k)` loads the latest keyframe at or before k and applies the step deltas after it;
a cursor keeps the last materialised state so stepping forward applies one delta, and an LRU of
views makes going back and forth free. Nothing here re-executes the program or calls a model.
"""

from __future__ import annotations

import bisect
import contextlib
import json
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator
from typing import Any, Self

from runtime.record.format import (
    KINDS,
    R_APPEND,
    R_DELKEY,
    R_GLOBAL,
    R_LOCAL,
    R_MESSAGE,
    R_OUTPUT,
    R_POP_FRAME,
    R_PUSH_FRAME,
    R_SETKEY,
    R_SHARED,
    R_SPLICE,
    R_STATUS,
    decode_keyframe,
    merge_keyframe,
)
from runtime.record.index import ERA_SHIFT, WriteIndex
from runtime.record.raw_state import (
    BatchCache,
    DecodedBatch,
    RawState,
    SharedParts,
    ViewCache,
    gc_held,
    marker_of,
)
from runtime.record.store import Batch, Keyframe, RunStore, Segment, StoreError
from runtime.record.views import (
    BranchInfo,
    Change,
    Event,
    Location,
    StateView,
)


class DamagedRecord(StoreError, IndexError):
    """A step whose record in the store does not decode (see `Timeline._reading_record`).
    An IndexError too: a reader asking whether a step is recorded hears no."""


_KF_LOOKAHEAD = 4096  # steps past the one asked for that `_keyframe_step` looks at
_KF_LOAD_STEPS = 64  # steps of deltas that cost about as much as loading a keyframe
_READ_AHEAD = 64  # steps past the one asked for whose batches `_batch` reads with it
_KF_STATES = 32  # decoded keyframe states kept (their equal parts shared: `SharedParts`)


class Timeline:
    """Every step of one branch of one recorded run."""

    def __init__(
        self,
        store: RunStore,
        run_id: str,
        branch: int = 0,
        program: Any = None,
        locations: list[Location] | None = None,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.branch = branch
        self.program = program
        run = store.get_run(run_id)
        self.run = run
        self.source_path = run.source_path if run else (program.path if program else "")
        if locations is None:
            table = (run.meta or {}).get("locations", []) if run else []
            locations = [Location(*row) for row in table]
        self.locations = locations
        self._batches = BatchCache()
        self._last_batch: tuple[int, DecodedBatch] | None = None
        self._views: OrderedDict[int, StateView] = OrderedDict()
        self._cursor: RawState | None = None
        self._view_cache = ViewCache()
        self._marks_resets = bool(run is not None and (run.meta or {}).get("reset_marks"))
        self._kf_states: OrderedDict[tuple[int, int], dict[str, Any]] = OrderedDict()
        self._shared = SharedParts()  # what the keyframe states kept share
        self._length: int | None = None
        self._kf_cache: list[tuple[int, int]] = []
        self._span_kfs: OrderedDict[int, Keyframe] = OrderedDict()  # read by `_read_span`
        self._segs: list[Segment] | None = None
        self._index: WriteIndex | None = None

    @classmethod
    def open(cls, store: RunStore, run_id: str, branch: int = 0) -> Self:
        run = store.get_run(run_id)
        if run is None:
            raise StoreError(f"no run {run_id!r} in this store")
        return cls(store, run.id, branch)

    # -- size and records -----------------------------------------------------------------------

    def __len__(self) -> int:
        if self._length is None:
            self._length = self.store.step_count(self.run_id, self.branch)
        return self._length

    def refresh(self) -> None:
        """Forget cached facts about a run that is still being recorded."""
        self._length = None
        self._index = None
        self._batches.clear()
        self._last_batch = None
        self._kf_states.clear()
        self._shared = SharedParts()
        self._kf_cache.clear()
        self._span_kfs.clear()
        self._segs = None

    def look(self) -> tuple[int, Any]:
        """The run's length and its row as the store has them now: two small reads that
        touch none of this timeline's caches, so any thread may make them (a debugger reads
        off its event loop, then hands the answer to `follow`)."""
        return self.store.step_count(self.run_id, self.branch), self.store.get_run(self.run_id)

    def follow(self, look: tuple[int, Any] | None = None) -> bool:
        """Look again at a run another process may still be recording: its length and status
        (`look()`, or what a `look()` made elsewhere gave). True when either changed; the
        cached facts that depend on them are then forgotten (the states of recorded steps
        stay: they never change)."""
        n, run = look if look is not None else self.look()
        was = self.run.status if self.run is not None else None
        now = run.status if run is not None else None
        if n == len(self) and now == was:
            return False
        self.refresh()
        self.run = run
        self._length = n
        return True

    def _record(self, step: int) -> tuple[Any, ...]:
        """(location id, kind code, writes, depth) of one step, from its batch."""
        with self._reading_record(step):
            return self._batch(step).record(step)

    def _marker(self, step: int) -> int:
        """The step marker of one step (its location id << 3 | its kind code)."""
        with self._reading_record(step):
            return self._batch(step).marker(step)

    @contextlib.contextmanager
    def _reading_record(self, step: int) -> Iterator[None]:
        """Reading what the store holds for `step`: the store is a file from disk, so a record
        that does not decode to what the recorder writes (a batch or keyframe cut short,
        swapped, with steps that do not add up) is a `DamagedRecord` naming the run and the
        step, never a Python error from deep inside."""
        try:
            yield
        except DamagedRecord:
            raise
        except StoreError as exc:
            text = str(exc)
            if text.startswith(f"run {self.run_id}"):
                raise
            raise DamagedRecord(f"run {self.run_id}, step {step}: {text}") from None
        except (IndexError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DamagedRecord(
                f"run {self.run_id}: the record of step {step} is damaged in the run store "
                f"({type(exc).__name__}: {str(exc)[:100]})"
            ) from None

    def _batch(self, step: int) -> DecodedBatch:
        branch = self._segment_branch(step)
        last = self._last_batch
        if last is not None and last[0] == branch and last[1].first <= step <= last[1].last:
            return last[1]
        batch = self._batches.find(branch, step)
        if batch is not None:
            self._last_batch = (branch, batch)
            return batch
        # Read ahead: short batches (a run of LLM calls stores one per call) would otherwise
        # cost a query each when walking forward.
        found = None
        for stored in self.store.batches(self.run_id, self.branch, step, step + _READ_AHEAD):
            if stored.last_step < step or (stored.branch, stored.first_step) in self._batches:
                continue
            batch = self._keep_batch(stored)
            if found is None and stored.first_step <= step and stored.branch == branch:
                found = batch
        if found is not None:
            self._last_batch = (branch, found)
            return found
        raise IndexError(f"step {step} is not recorded (the timeline has {len(self)} steps)")

    def _keep_batch(self, stored: Batch) -> DecodedBatch:
        batch = DecodedBatch(stored.blob, stored.last_step)
        self._batches.keep(stored.branch, stored.first_step, batch, len(stored.blob))
        return batch

    def _segment(self, step: int) -> Segment | None:
        """The lineage segment that holds `step` (None past the lineage's steps)."""
        segs = self._segs
        if segs is None:
            segs = self._segs = self.store.lineage(self.run_id, self.branch)
        for seg in segs:
            if seg.lo <= step <= seg.hi:
                return seg
        return None

    def _segment_end(self, step: int) -> int:
        """The last step of the lineage segment that holds `step`."""
        seg = self._segment(step)
        return int(seg.hi) if seg is not None else step

    def _segment_start(self, step: int) -> int:
        """The first step of the lineage segment that holds `step`."""
        seg = self._segment(step)
        return int(seg.lo) if seg is not None else step

    def _segment_branch(self, step: int) -> int:
        seg = self._segment(step)
        return int(seg.branch) if seg is not None else self.branch

    def _check(self, step: int) -> int:
        n = len(self)
        if not 0 <= step < n:
            raise IndexError(f"step {step} is outside the timeline (0..{n - 1})")
        return step

    # -- per step -------------------------------------------------------------------------------

    def markers_from(self, step: int) -> Iterator[int]:
        """The step markers of `step`, `step + 1`, … to the end, in order: a walk forward (a
        replay checks every step) reads each batch once, not a lookup per step."""
        n = len(self)
        while step < n:
            with self._reading_record(step):
                batch = self._batch(step)
                last = min(batch.last, self._segment_end(step), n - 1)
                entries, marks, first = batch.entries, batch.marks, batch.first
                got = [marker_of(entries[marks[k - first]]) for k in range(step, last + 1)]
            yield from got
            step = last + 1

    def depths_from(self, step: int, backward: bool = False) -> Iterator[int]:
        """Frames on the stack at `step`, `step + 1`, … to the end (with `backward`: `step`,
        `step - 1`, … to 0), as `depth_at` gives them: a walk over calls (step over, step out)
        reads each batch's depths once rather than a lookup per step (~11 µs each: a step out
        of a 100,000-step call took over a second)."""
        n = len(self)
        while 0 <= step < n:
            with self._reading_record(step):
                batch = self._batch(step)
                first = batch.first
                if backward:
                    lo = max(first, self._segment_start(step))
                    got = [batch.depth(k - first) for k in range(step, lo - 1, -1)]
                    next_step = lo - 1
                else:
                    hi = min(batch.last, self._segment_end(step), n - 1)
                    got = [batch.depth(k - first) for k in range(step, hi + 1)]
                    next_step = hi + 1
            yield from got
            step = next_step

    def location_at(self, step: int) -> Location | None:
        loc_id = self._marker(self._check(step)) >> 3
        return self.locations[loc_id] if 0 <= loc_id < len(self.locations) else None

    def kind_at(self, step: int) -> str:
        return KINDS[self._marker(self._check(step)) & 7]

    def depth_at(self, step: int) -> int:
        """Frames on the stack at `step`, the module frame included."""
        with self._reading_record(step):
            batch = self._batch(self._check(step))
            return batch.depth(step - batch.first)

    def writes_at(self, step: int) -> tuple[Any, ...]:
        return self._record(self._check(step))[2]  # type: ignore[no-any-return]

    def state_at(self, step: int) -> StateView:
        self._check(step)
        view = self._views.get(step)
        if view is not None:
            self._views.move_to_end(step)
            return view
        with gc_held():
            raw = self._materialise(step)
            with self._reading_record(step):
                view = raw.view(step, self.branch, self.location_at(step), self._view_cache)
        self._views[step] = view
        if len(self._views) > 1024:
            self._views.popitem(last=False)
        return view

    def names_at(self, step: int, names: Collection[str]) -> StateView:
        """A narrow view of `step`: only `names` in its frames and globals, no threads, output
        or location (see `RawState.view`). Not cached: reading an expression along the run in
        order moves the materialised state forward delta by delta, a few values a step."""
        with self._reading_record(step):
            raw = self._build_state(self._check(step))
            return raw.view(step, self.branch, None, only=names)

    def scope_reader(self, names: Collection[str]) -> Callable[[int], dict[str, Any]]:
        """A reader of what an expression over `names` sees at a step: those of them visible
        there (the globals, then the innermost frame's arguments and locals, which shadow
        them; as `names_at(step, names)` shows them), as plain values. Made for a walk
        forward: asked for steps in ascending order, it moves one state on by the writes
        between them, sliced from the batch in hand, with no view built (a conditional
        breakpoint read at 150,000 steps of a loop took 80 µs a step through `names_at`). Any
        other order is served too, from `names_at`."""
        only = frozenset(names)
        held: list[Any] = [None, -1, ()]  # the batch in hand, its last step here, its resets

        def visible(raw: RawState) -> dict[str, Any]:
            plain = raw.plain
            scope = {k: plain(raw.globals[k]) for k in only if k in raw.globals}
            for k in only:
                if k in raw.shared and k not in scope:
                    scope[k] = plain(raw.shared[k])
            if raw.frames:
                _scope, _kind, params, locals_, _line, _col = raw.frames[-1]
                for k in only:
                    if k in params:
                        scope[k] = plain(locals_.get(k))
                    elif k in locals_:
                        scope[k] = plain(locals_[k])
            return scope

        def read(step: int) -> dict[str, Any]:
            raw, batch = self._cursor, held[0]
            if (
                raw is not None
                and batch is not None
                and raw.step < step <= held[1]
                and raw.step >= batch.first
                and not (held[2] and any(raw.step < r <= step for r in held[2]))
                and (self._marks_resets or self._keyframe_step(step) <= raw.step)
            ):
                try:
                    marks, first = batch.marks, batch.first
                    # (from the marker: an `R_STEP_WRITE` carries its step's first write)
                    raw.apply(batch.entries[marks[raw.step - first] : marks[step - first]])
                    raw.step = step
                    return visible(raw)
                except (IndexError, KeyError, TypeError, ValueError, AttributeError):
                    self._cursor = None  # said as `names_at` says it, from a fresh state
            view = self.names_at(step, only)
            with self._reading_record(step):
                batch = self._batch(step)
                held[:] = [batch, min(batch.last, self._segment_end(step)), batch.resets()]
            scope = dict(view.globals)
            if view.frames:
                scope.update(view.frames[-1].args)
                scope.update(view.frames[-1].locals)
            return scope

        return read

    def plain_state_at(self, step: int) -> dict[str, Any]:
        """The state at `step` as plain values, exactly as recorded (no view conversion):
        `frames` (`{"scope", "line", "locals"}`, outermost first), `threads` (messages as
        they were written), `usage` and `status`. What a Python agent's checkpoint reads back."""
        raw = self._materialise(self._check(step))
        return {
            "frames": [
                {"scope": f[0], "line": f[4], "locals": {k: raw.plain(v) for k, v in f[3].items()}}
                for f in raw.frames
            ],
            "threads": {t: [raw.plain(m) for m in msgs] for t, msgs in raw.threads.items()},
            "usage": list(raw.usage),
            "status": raw.status,
        }

    def _materialise(self, step: int) -> RawState:
        with self._reading_record(step):
            return self._build_state(step)

    def _build_state(self, step: int) -> RawState:
        try:
            return self._moved_to(step)
        except BaseException:
            self._cursor = None  # a replay cut short by damage leaves it half moved
            raise

    def _moved_to(self, step: int) -> RawState:
        cur = self._cursor
        if cur is not None and cur.step == step:
            return cur  # asked again (a narrow read, then a write lookup at the same step)
        kf_step = self._keyframe_step(step)
        if cur is not None and cur.step <= step and step - cur.step <= 4096:
            # On from the cursor by deltas: fine unless the state was replaced on the way
            # (marked by R_RESET in runs that mark it). A resumed run's new recorder gives its
            # containers other ids, keyframes the state at the step it resumed from and marks
            # the next step: a cursor that reached that keyframe's step by the old process's
            # deltas must not go on by the new one's.
            # Past a keyframe on deltas alone: fine unless the state was replaced on the way
            # or the lineage changes branch, and only when that is shorter than from the
            # keyframe (loading one costs about as much as _KF_LOAD_STEPS steps of deltas):
            # random reads still start from keyframes.
            if kf_step <= cur.step:
                on = True
            else:
                near = step - cur.step <= step - kf_step + _KF_LOAD_STEPS
                on = near and self._marks_resets and not self._fork_between(cur.step, step)
            # Asked last: it reads every batch on the way (a run of LLM calls stores one a
            # call), which the keyframe's way does not need.
            if on and not (self._marks_resets and self._reset_between(cur.step + 1, step)):
                self._replay(cur, cur.step + 1, step)
                cur.step = step
                return cur
        kf = self._span_kfs.get(kf_step)
        if kf is None:
            kf = self.store.keyframe_at_or_before(self.run_id, self.branch, step)
        if kf is None:
            raise IndexError(f"no keyframe at or before step {step}")
        raw = RawState(self._keyframe_state(kf), kf.step)
        self._replay(raw, kf.step + 1, step)
        raw.step = step
        self._cursor = raw
        return raw

    def _replay(self, raw: RawState, a: int, b: int) -> None:
        """Apply the writes of steps `a..b` to `raw`, a batch's run of steps at a time; from a
        batch's first step, its entries as they are, up to the marker that ends the run."""
        s = a
        while s <= b:
            batch = self._batch(s)
            hi = min(b, batch.last, self._segment_end(s))  # a parent's batch may go on past
            # the fork step: those steps are not this lineage's
            i = s - batch.first
            if i:
                marks = batch.marks
                # (from the marker: an `R_STEP_WRITE` carries its step's first write)
                raw.apply(batch.entries[marks[i - 1] : marks[hi - batch.first]])
            else:
                batch.found(hi, raw.apply(batch.entries, hi - s + 1))
            s = hi + 1

    def _reset_between(self, a: int, b: int) -> bool:
        """Whether a step in `a..b` replaced the state (an R_RESET among its writes)."""
        if a == b:  # the common walk: one step, in one batch
            return a in self._batch(a).resets()
        s = a
        while s <= b:
            batch = self._batch(s)
            hi = min(b, batch.last, self._segment_end(s))
            if any(s <= r <= hi for r in batch.resets()):
                return True
            s = hi + 1
        return False

    def _fork_between(self, a: int, b: int) -> bool:
        """Whether a lineage segment after the first starts within steps `a+1..b`."""
        if self._segs is None:
            self._segs = self.store.lineage(self.run_id, self.branch)
        return any(a < seg.lo <= b for seg in self._segs[1:])

    def _keyframe_state(self, kf: Keyframe) -> dict[str, Any]:
        """The whole state a keyframe holds, merged with its base when it is incremental.
        Kept for a while: the keyframes after a full one all start from it."""
        key = (kf.branch, kf.step)
        found = self._kf_states.get(key)
        if found is not None:
            self._kf_states.move_to_end(key)
            return found
        data: dict[str, Any] = decode_keyframe(kf.blob)
        base_step = data.get("base")
        if base_step is not None:
            base = self._span_kfs.get(base_step)
            if base is None or base.branch != kf.branch:
                base = self.store.keyframe_at_or_before(self.run_id, kf.branch, base_step)
            if base is None or base.step != base_step or base.branch != kf.branch:
                raise StoreError(
                    f"run {self.run_id}: the keyframe at step {kf.step} of branch {kf.branch} "
                    f"is based on one at step {base_step} that is not in the store"
                )
            data = merge_keyframe(self._keyframe_state(base), data)
        else:
            self._shared.share(data)
        self._kf_states[key] = data
        if len(self._kf_states) > _KF_STATES:
            self._kf_states.popitem(last=False)
        return data

    def _keyframe_step(self, step: int) -> int:
        """The step of the latest keyframe at or before `step` (cached per range)."""
        cache = self._kf_cache
        for lo, hi in reversed(cache):  # the newest range first: walks ask it step after step
            if lo <= step <= hi:
                return lo
        # Look ahead to the next keyframe, so walking forward asks the store once per keyframe
        # (or per _KF_LOOKAHEAD steps), not once per step. Only over recorded steps: a run
        # still being recorded gets keyframes later.
        end = max(step, min(step + _KF_LOOKAHEAD, len(self) - 1))
        kf, later = self._read_span(step, end)
        lo = kf.step if kf is not None else 0
        hi = later[0] - 1 if later else end
        cache.append((lo, hi))
        if len(cache) > 256:
            del cache[:128]
        return lo

    def _read_span(self, step: int, end: int) -> tuple[Keyframe | None, list[int]]:
        """The keyframe at or before `step` and the keyframe steps up to `end`, read with the
        keyframe's base and the batches on to `step` and past it in one store call (one round
        trip to a server: `RunStore.state_span`); kept for `_materialise`."""
        span = self.store.state_span(self.run_id, self.branch, step, step + _READ_AHEAD, end)
        for kf in (span.base, span.keyframe):
            if kf is not None:
                self._span_kfs[kf.step] = kf
                self._span_kfs.move_to_end(kf.step)
        while len(self._span_kfs) > 16:
            self._span_kfs.popitem(last=False)
        for stored in span.batches:
            if (stored.branch, stored.first_step) not in self._batches:
                self._keep_batch(stored)
        return span.keyframe, span.later_keyframes

    def changes_at(self, step: int) -> list[Change]:
        """What step `step` wrote (the delta from step-1 to step), readably."""
        state = self.state_at(step)
        out: list[Change] = []
        frames = self._frame_names(state)
        for w in self.writes_at(step):
            code = w[0]
            if code == R_LOCAL:
                scope = frames[w[1]] if w[1] < len(frames) else "?"
                out.append(Change(f"{scope}.{w[2]}", _find(state, w[2])))
            elif code == R_GLOBAL:
                out.append(Change(f"globals.{w[1]}", state.globals.get(w[1])))
            elif code == R_SHARED:
                out.append(Change(f"globals.{w[1]}", state.globals.get(w[1])))
            elif code == R_OUTPUT:
                out.append(Change("output", w[1]))
            elif code == R_MESSAGE:
                out.append(
                    Change(
                        f"threads.{w[1]}", w[2].get("content") if isinstance(w[2], dict) else w[2]
                    )
                )
            elif code in (R_SETKEY, R_SPLICE, R_APPEND):
                out.append(Change(f"object#{w[1]}", None))
            elif code == R_PUSH_FRAME:
                out.append(Change(f"call {w[1]}", None))
            elif code == R_POP_FRAME:
                out.append(Change("return", None))
            elif code == R_STATUS:
                out.append(Change("status", w[1]))
        return out

    def changed_names(self, step: int, frame: int | None = None) -> set[str]:
        """Names of the variables a step changed (for marking them in the variables panel): in
        the frame `frame` (an index into `state_at(step).frames`; default the innermost) and
        the globals. A variable changed when the step assigned it, or changed in place (a
        `push`, `obj.a[0] = …`) a list or object it holds."""
        writes = self.writes_at(step)
        frames = self.depth_at(step)
        depth = _raw_depth(frames, frame)
        names: set[str] = set()
        mutated: set[int] = set()
        for w in writes:
            code = w[0]
            if code == R_LOCAL and w[1] == depth:
                names.add(w[2])
            elif code in (R_GLOBAL, R_SHARED):
                names.add(w[1])
            elif code in (R_SETKEY, R_DELKEY, R_SPLICE, R_APPEND):
                mutated.add(w[1])
            elif code == R_PUSH_FRAME and depth == frames - 1:
                names.update(w[4])  # a call bound its arguments (and captured locals)
        if mutated:  # only then is the state needed: which variables hold those containers
            raw = self._state_in_ids_of(step)
            scopes: list[dict[str, Any]] = [raw.globals, raw.shared]
            if 0 <= depth < len(raw.frames):
                scopes.append(raw.frames[depth][3])
            for scope in scopes:
                for name, value in scope.items():
                    if name not in names and raw.reachable(value) & mutated:
                        names.add(name)
        return names

    def _state_in_ids_of(self, step: int) -> RawState:
        """The state at `step` holding the object ids `step`'s own writes use. A new recorder
        (a resume, a fork) keyframes the step it took over from, in ids of its own, while that
        step's writes were recorded by the process before it: looking those ids up in the new
        keyframe finds other containers, or none. There the state is rebuilt from the step
        before, whose keyframe and deltas use the ids the step was recorded with."""
        raw = self._materialise(step)
        if raw.base != step or step < 1:
            return raw  # built by deltas over the step, so in its ids
        # The last step may be where a resume that recorded nothing yet keyframed.
        if step + 1 < len(self) and step + 1 not in self._batch(step + 1).resets():
            return raw  # the keyframe's recorder also recorded the step
        kf = self.store.keyframe_at_or_before(self.run_id, self.branch, step - 1)
        if kf is None:
            return raw
        before = RawState(self._keyframe_state(kf), kf.step)  # the shared cursor stays as it is
        self._replay(before, kf.step + 1, step)
        before.step = step
        return before

    # -- the write index (who wrote what, when) --------------------------------------------------

    def indexed(self) -> bool:
        """True when `index()` is built (so last-writer and search answer at once)."""
        return self._index is not None and self._index.length == len(self)

    def index(self, progress: Any = None, cancelled: Any = None) -> WriteIndex:
        """The branch's write index, built in one pass the first time (`progress(done, total)`,
        `cancelled()`: raises IndexCancelled)."""
        n = len(self)
        if self._index is None or self._index.length != n:
            restores = [e.step for e in self.store.events(self.run_id, self.branch, "restore")]
            self._index = WriteIndex.build(
                self.store.batches(self.run_id, self.branch, 0, max(n - 1, 0)),
                self.store.lineage(self.run_id, self.branch),
                n,
                restores,
                progress,
                cancelled,
            )
            self._link_eras(self._index)
        return self._index

    def _link_eras(self, idx: WriteIndex) -> None:
        """Link each container across a change of recorder (a resume, a fork): the new one
        gave the containers other ids in the keyframe it began from, one step before its
        first. That keyframe is matched, value by value, with the state the steps recorded
        before it give, so a list pushed to before a resume is still found written there."""
        for i, start in enumerate(idx.eras):
            if i == 0 or start < 2:
                continue
            try:
                new_kf = self.store.keyframe_at_or_before(self.run_id, self.branch, start - 1)
                old_kf = self.store.keyframe_at_or_before(self.run_id, self.branch, start - 2)
                if new_kf is None or new_kf.step != start - 1 or old_kf is None:
                    continue
                new = RawState(self._keyframe_state(new_kf), new_kf.step)
                old = RawState(self._keyframe_state(old_kf), old_kf.step)
                self._replay(old, old_kf.step + 1, start - 1)
            except (IndexError, StoreError):
                continue
            _link(idx, new, i + 1, old, i)

    def _era(self, idx: WriteIndex, raw: RawState) -> int:
        """The era whose object ids `raw` holds: that of the recorder that wrote the keyframe it
        was built from (a new recorder's first keyframe is one step before its first step)."""
        return idx.era_at(raw.base + 1)

    def _frame_names(self, state: StateView) -> list[str]:
        raw = self._cursor
        if raw is not None and raw.step == state.step:
            return [f[0] for f in raw.frames]
        return ["<module>"] + [f.scope for f in state.frames]

    def last_write(
        self, name: str, before: int, frame: int | None = None, scope: str | None = None
    ) -> int | None:
        """The latest step at or before `before` that changed the value variable `name` holds
        there: assigned it, changed in place a list or object reachable from it, restored it
        (`restore()`), or edited it at a fork. `frame` is an index into
        `state_at(before).frames` (default the innermost): that call's variable, not another
        frame's of the same name. `scope` "globals" asks for the global; otherwise a local
        or argument, else the global of that name."""
        before = min(before, len(self) - 1)
        if before < 0:
            return None
        idx = self.index()
        raw = self._materialise(before)
        depth: int | None = _raw_depth(len(raw.frames), frame)
        if scope != "globals" and depth is not None and 0 <= depth < len(raw.frames):
            if name not in raw.frames[depth][3]:
                depth = None
        else:
            depth = None
        if depth is None and name not in raw.globals and name not in raw.shared:
            return None
        kinds = ("locals", "args") if depth is not None else ("globals",)
        forks = sorted(self.lineage_edits().items(), reverse=True)
        while True:
            best = self._written(idx, name, depth, before)
            floor = best if best is not None else -1
            # restore() and fork edits replace values without a write of their own: a value a
            # restore changed was written by it; one it left as it was goes back further
            # (restored lists and objects are new containers, so their history is there).
            r = next((r for r in reversed(idx.restores) if floor < r <= before), None)
            f = next((k for k, e in forks if floor < k <= before and _edits(e, kinds, name)), None)
            if f is not None and (r is None or f >= r):
                return f
            if r is None:
                return best
            if self._value_changed_at(r, name, depth):
                return r
            before = r - 1

    def next_write(
        self, name: str, after: int, frame: int | None = None, scope: str | None = None
    ) -> int | None:
        """The earliest step after `after` that may change the value variable `name` holds at
        `after` (the mirror of `last_write`, for searching forwards): assigns that variable,
        changes in place a list or object reachable from it, or replaces the state (a
        `restore()`, a fork's edits). `frame` and `scope` as for `last_write`; None when the
        variable is not visible at `after` or nothing later touches it."""
        if not 0 <= after < len(self) - 1:
            return None
        idx = self.index()
        raw = self._materialise(after)
        depth: int | None = _raw_depth(len(raw.frames), frame)
        if scope == "globals" or depth is None or not 0 <= depth < len(raw.frames):
            depth = None
        elif name not in raw.frames[depth][3]:
            depth = None
        if depth is not None:
            value = raw.frames[depth][3][name]
            fid = idx.frame_at(depth, after)
            binds = idx.binds.get((fid, name)) if fid is not None else None
        elif name in raw.globals or name in raw.shared:
            value = raw.globals.get(name, raw.shared.get(name))
            binds = idx.globals.get(name)
        else:
            return None
        candidates = [_first_after(binds, after), _first_after(idx.restores, after)]
        keys = idx.object_keys(raw.reachable(value), self._era(idx, raw))
        candidates += [_first_after(idx.objects.get(key), after) for key in keys]
        candidates += [k for k in self.lineage_edits() if k > after]
        found = [c for c in candidates if c is not None]
        return min(found) if found else None

    def _written(self, idx: WriteIndex, name: str, depth: int | None, before: int) -> int | None:
        """The last assignment of the variable at or before `before`, or change in place of
        a container it holds there."""
        raw = self._materialise(before)
        if depth is not None:
            if depth >= len(raw.frames) or name not in raw.frames[depth][3]:
                return None
            value = raw.frames[depth][3][name]
            best = idx.bound(depth, name, before)
        else:
            value = raw.globals.get(name, raw.shared.get(name))
            best = idx.global_written(name, before)
        changed = idx.object_changed(raw.reachable(value), before, self._era(idx, raw))
        if changed is not None and (best is None or changed > best):
            best = changed
        return best

    def _value_changed_at(self, step: int, name: str, depth: int | None) -> bool:
        """Whether variable `name` (local at `depth`, or global) differs from the step before."""
        if step <= 0:
            return True

        def value(k: int) -> Any:
            raw = self._materialise(k)
            if depth is None:
                return raw.plain(raw.globals.get(name, raw.shared.get(name)))
            if depth >= len(raw.frames):
                return _MISSING
            return raw.plain(raw.frames[depth][3].get(name, _MISSING))

        return bool(value(step) != value(step - 1))

    # -- across steps ---------------------------------------------------------------------------

    def events(self, kind: str | None = None) -> list[Event]:
        return [
            Event(e.step, e.kind, e.summary, e.data)
            for e in self.store.events(self.run_id, self.branch, kind=kind)
        ]

    def llm_call_at(self, step: int) -> dict[str, Any] | None:
        """The last model call at or before `step` (its request, answer, usage, time), as the
        LLM inspector and `agency show` give it; None before the first. Reads that one call
        (an indexed lookup, its request rebuilt from its own parts), so a late call of a long
        run costs what an early one does."""
        c = self.store.last_llm_call(self.run_id, self.branch, step)
        if c is None:
            return None
        completion = (
            (c.response or {}).get("completion") if isinstance(c.response, dict) else c.response
        )
        value = (c.response or {}).get("value") if isinstance(c.response, dict) else None
        edited = False
        if self.branch != 0:
            # An answer edited at a fork (at or after the call, before `step`) is what the
            # branch went on with: show that one.
            for fork_step, edits in sorted(self.lineage_edits().items()):
                if c.step <= fork_step <= step and "llm_answer" in edits:
                    value, edited = edits["llm_answer"], True
            if edited and isinstance(completion, dict):
                # the edited answer replaced any tools the model asked for (fork.apply_edits)
                completion = dict(
                    completion,
                    text=value if isinstance(value, str) else json.dumps(value),
                    tool_calls=[],
                )
        return {
            "step": c.step,
            "edited": edited,
            "provider": c.provider,
            "model": c.model,
            "request": c.request,
            "response": completion,
            "value": value,
            "input_tokens": c.input_tokens,
            "output_tokens": c.output_tokens,
            "cost": c.cost,
            "latency_ms": c.latency_ms,
        }

    def search(self, text: str) -> list[int]:
        """Steps whose output, messages, written variable names or called functions mention
        `text` (from the write index: one pass the first time, then a lookup)."""
        return self.index().search(text)

    # -- branches -------------------------------------------------------------------------------

    def branches(self) -> list[BranchInfo]:
        return [
            BranchInfo(b.branch, b.parent_branch, b.fork_step, b.length, b.edits)
            for b in self.store.branches(self.run_id)
        ]

    def switch(self, branch: int) -> Self:
        return type(self)(self.store, self.run_id, branch, self.program, self.locations)

    def diverge(self, a: int, b: int) -> int | None:
        """The first step where branches `a` and `b` differ (None for the same branch).

        A branch forked at step k shows its edited state at k, so that is where it differs."""
        if a == b:
            return None
        la = self.store.lineage(self.run_id, a)
        lb = self.store.lineage(self.run_id, b)
        common = {s.branch for s in la} & {s.branch for s in lb}
        own = [s.lo for s in la + lb if s.branch not in common]
        return min(own) if own else None

    def lineage_edits(self) -> dict[int, dict[str, Any]]:
        """{fork step: edits} of every fork along this branch's lineage."""
        if self.branch == 0:
            return {}
        records = {b.branch: b for b in self.store.branches(self.run_id)}
        out: dict[int, dict[str, Any]] = {}
        for seg in self.store.lineage(self.run_id, self.branch)[1:]:
            rec = records.get(seg.branch)
            if rec is not None and rec.fork_step is not None and rec.edits:
                out[int(rec.fork_step)] = dict(rec.edits)
        return out


_MISSING = object()


def _link(idx: WriteIndex, new: RawState, new_era: int, old: RawState, old_era: int) -> None:
    """Alias in `idx` the containers of two recordings of one state (`new` in `new_era`,
    `old` in `old_era`), matched by where they are: the same variable, element or key."""
    pairs: list[tuple[Any, Any]] = []
    for nf, of in zip(new.frames, old.frames, strict=False):
        pairs.extend((v, of[3][k]) for k, v in nf[3].items() if k in of[3])
    for scope, other in ((new.globals, old.globals), (new.shared, old.shared)):
        pairs.extend((v, other[k]) for k, v in scope.items() if k in other)
    seen: set[int] = set()
    while pairs:
        a, b = pairs.pop()
        ta = type(a)
        if ta is not type(b):
            continue
        if ta is tuple:
            if not a or not b or a[0] != b[0]:
                continue
            if a[0] == "r":
                if a[1] in seen:
                    continue
                seen.add(a[1])
                idx.alias(new_era << ERA_SHIFT | a[1], old_era << ERA_SHIFT | b[1])
                pairs.append((new.heap.get(a[1]), old.heap.get(b[1])))
            elif a[0] in ("R", "D") and len(a) > 2 and len(b) > 2:
                pairs.append((a[2], b[2]))
        elif ta is list:
            pairs.extend(zip(a, b, strict=False))
        elif ta is dict:
            pairs.extend((v, b[k]) for k, v in a.items() if k in b)


def _first_after(steps: list[int] | None, step: int) -> int | None:
    if not steps:
        return None
    i = bisect.bisect_right(steps, step)
    return steps[i] if i < len(steps) else None


def _edits(edits: dict[str, Any], kinds: tuple[str, ...], name: str) -> bool:
    return any(name in (edits.get(k) or {}) for k in kinds)


def _raw_depth(frames: int, frame: int | None) -> int:
    """The raw frame index (0: the module's) of view frame `frame` (views hide the module
    frame when another is on the stack); None: the innermost."""
    if frame is None:
        return frames - 1
    return frame + 1 if frames > 1 else frame


def _find(state: StateView, name: str) -> Any:
    if state.frames:
        top = state.frames[-1]
        if name in top.locals:
            return top.locals[name]
        if name in top.args:
            return top.args[name]
    return state.globals.get(name)
