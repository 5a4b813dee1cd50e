"""Provides `WriteIndex`: who wrote what, when, over a whole recorded branch, built in one pass.

The questions the debugger asks across steps ("which step last changed this value?", "which
steps mention this text?") would otherwise walk the record step by step, backwards, at every
key press. One pass over the stored batches (decoded once each, in order) notes:

- for every frame instance (a call: a number given when it is pushed), at which steps each of
  its variables was bound or assigned; for globals, the same by name;
- for every container (by the object id the recorder gave it), the steps that changed it in
  place (`push`, `obj.a[0] = …`, a delete) or defined it;
- which frame instance stands at each depth from which step on;
- the steps of `restore()`, which replace the state wholesale;
- where a new recorder took over (a resumed run, a fork: an `R_RESET` that is no restore). Each
  recorder numbers containers afresh, so an object is keyed by its recorder's era and its id,
  and the same container in two eras is linked by `alias` (the `Timeline` matches the state
  the old recorder left with the keyframe the new one began from);
- the steps at each location (where a breakpoint's line is reached, where a call begins);
- written names, printed output and messages, for search.

Queries are then bisections: a 1M-step run answers in microseconds after a pass of a second or
two, which a caller runs off the UI thread (`progress`, `cancelled`).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Any

from runtime.record.format import (
    R_APPEND,
    R_CONTENTS,
    R_DELKEY,
    R_GLOBAL,
    R_LOCAL,
    R_MESSAGE,
    R_OUTPUT,
    R_POP_FRAME,
    R_PUSH_FRAME,
    R_RESET,
    R_SETKEY,
    R_SHARED,
    R_SPLICE,
    decode_batch,
)

Progress = Callable[[int, int], None]
Cancelled = Callable[[], bool]

_OBJECT_WRITES = frozenset({R_SETKEY, R_DELKEY, R_SPLICE, R_APPEND, R_CONTENTS})
ERA_SHIFT = 48  # an object's key: its recorder's era above its id (`WriteIndex.object_keys`)


class IndexCancelled(Exception):
    """Building the index was cancelled (it can be built again later)."""


class WriteIndex:
    """Who wrote what, when, along one branch (see the module docstring)."""

    def __init__(self) -> None:
        self.binds: dict[tuple[int, str], list[int]] = {}  # (frame id, name) -> steps
        self.globals: dict[str, list[int]] = {}  # global or shared name -> steps
        self.objects: dict[int, list[int]] = {}  # object key -> steps that changed it
        self.eras: list[int] = []  # steps where a recorder began (the first one's included)
        self.aliases: dict[int, set[int]] = {}  # object key -> keys of that container in
        # the eras before and after it
        self.frame_starts: list[list[int]] = []  # per depth: steps a frame began at
        self.frame_ids: list[list[int]] = []  # per depth: the frame ids, parallel
        self.names: dict[str, list[int]] = {}  # any written name -> steps
        self.params: dict[str, list[int]] = {}  # parameter name -> steps of calls binding it
        self.calls: dict[str, list[int]] = {}  # function name -> steps its calls began at
        self.texts: list[tuple[int, str]] = []  # (step, lower-case output or message)
        self.restores: list[int] = []
        self.at_location: dict[int, list[int]] = {}  # location id -> steps at it
        self.length = 0

    # -- building -------------------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        batches: list[Any],
        segments: list[Any],
        length: int,
        restores: list[int],
        progress: Progress | None = None,
        cancelled: Cancelled | None = None,
    ) -> WriteIndex:
        """One pass over a branch's stored batches (`RunStore.batches`, along its lineage
        `segments`); `restores`: the steps of its `restore` events."""
        idx = cls()
        idx.length = length
        # restore() writes nothing of its own (the state is replaced, a keyframe follows):
        # `Timeline.last_write` compares values across these steps. Its frames keep their ids
        # (a restore within one call goes on in that call); a depth change resyncs at the next
        # batch, which a restore always starts.
        idx.restores = sorted(set(restores))
        restored = set(restores)
        era = 0
        seg_of = {s.branch: (s.lo, s.hi) for s in segments}
        stack: list[int] = []  # frame id at each depth
        next_fid = 0
        binds, objects, names, texts, glob, at_location = (
            idx.binds,
            idx.objects,
            idx.names,
            idx.texts,
            idx.globals,
            idx.at_location,
        )

        def push(step: int) -> int:
            nonlocal next_fid
            fid = next_fid
            next_fid += 1
            depth = len(stack)
            while len(idx.frame_starts) <= depth:
                idx.frame_starts.append([])
                idx.frame_ids.append([])
            starts = idx.frame_starts[depth]
            if starts and starts[-1] >= step:  # replaced within one step: the later one holds
                starts.pop()
                idx.frame_ids[depth].pop()
            starts.append(step)
            idx.frame_ids[depth].append(fid)
            stack.append(fid)
            return fid

        for n, stored in enumerate(batches):
            if cancelled is not None and n % 64 == 63 and cancelled():
                raise IndexCancelled
            if progress is not None and n % 64 == 0:
                progress(min(stored.first_step, length), length)
            lo, hi = seg_of.get(stored.branch, (0, length - 1))
            first, depth_before, depth_after, entries = decode_batch(stored.blob)
            step = first
            if lo <= step <= hi:
                while len(stack) > depth_before:
                    stack.pop()
                while len(stack) < depth_before:
                    push(step)
            for e in entries:
                if type(e) is int:  # the step's marker, after its writes: where it stands
                    if lo <= step <= hi:
                        at = e >> 3
                        if at in at_location:
                            at_location[at].append(step)
                        else:
                            at_location[at] = [step]
                    step += 1
                    continue
                if not lo <= step <= hi:
                    continue
                code = e[0]
                if code == R_LOCAL:
                    d = e[1]
                    name = e[2]
                    if d < len(stack):
                        binds.setdefault((stack[d], name), []).append(step)
                    names.setdefault(name, []).append(step)
                elif code in _OBJECT_WRITES:
                    objects.setdefault(era << ERA_SHIFT | e[1], []).append(step)
                elif code == R_GLOBAL or code == R_SHARED:
                    glob.setdefault(e[1], []).append(step)
                    names.setdefault(e[1], []).append(step)
                elif code == R_PUSH_FRAME:
                    fid = push(step)
                    idx.calls.setdefault(e[1], []).append(step)
                    for name in e[4]:
                        binds.setdefault((fid, name), []).append(step)
                        idx.params.setdefault(name, []).append(step)
                elif code == R_POP_FRAME:
                    if stack:
                        stack.pop()
                elif code == R_OUTPUT:
                    texts.append((step, str(e[1]).lower()))
                elif code == R_RESET and step not in restored:
                    era += 1  # a new recorder: its containers have ids of their own
                    idx.eras.append(step)
                elif code == R_MESSAGE:
                    texts.append((step, str(e[2]).lower()))
            last = min(step - 1, hi)
            if lo <= last:
                while len(stack) > depth_after:
                    stack.pop()
                while len(stack) < depth_after:
                    push(last)
        if progress is not None:
            progress(length, length)
        return idx

    # -- queries --------------------------------------------------------------------------------

    def frame_at(self, depth: int, step: int) -> int | None:
        """The id of the frame instance at `depth` (0: the module's) at `step`."""
        if depth >= len(self.frame_starts):
            return None
        i = bisect.bisect_right(self.frame_starts[depth], step) - 1
        return self.frame_ids[depth][i] if i >= 0 else None

    @staticmethod
    def last_at_or_before(steps: list[int] | None, step: int) -> int | None:
        if not steps:
            return None
        i = bisect.bisect_right(steps, step) - 1
        return steps[i] if i >= 0 else None

    def bound(self, depth: int, name: str, before: int) -> int | None:
        """The last step at or before `before` that bound or assigned `name` in the frame at
        `depth` at that step (that frame instance, not another call's variable of that name)."""
        fid = self.frame_at(depth, before)
        if fid is None:
            return None
        return self.last_at_or_before(self.binds.get((fid, name)), before)

    def global_written(self, name: str, before: int) -> int | None:
        return self.last_at_or_before(self.globals.get(name), before)

    def era_at(self, step: int) -> int:
        """The era of the recorder that recorded `step` (see `object_keys`)."""
        return bisect.bisect_right(self.eras, step)

    def alias(self, key: int, other: int) -> None:
        """Note that object keys `key` and `other` are one container (in two eras)."""
        if key != other:
            self.aliases.setdefault(key, set()).add(other)
            self.aliases.setdefault(other, set()).add(key)

    def object_keys(self, oids: set[int], era: int) -> set[int]:
        """The keys of the containers `oids` of a state recorded in `era`, with the keys the
        same containers have in the other eras."""
        keys = {era << ERA_SHIFT | oid for oid in oids}
        if self.aliases:
            todo = list(keys)
            while todo:
                for other in self.aliases.get(todo.pop(), ()):
                    if other not in keys:
                        keys.add(other)
                        todo.append(other)
        return keys

    def object_changed(self, oids: set[int], before: int, era: int | None = None) -> int | None:
        """The last step at or before `before` that changed any of the containers `oids` (ids
        in a state recorded in `era`, by default the era of `before`)."""
        best: int | None = None
        keys = self.object_keys(oids, self.era_at(before) if era is None else era)
        for key in keys:
            s = self.last_at_or_before(self.objects.get(key), before)
            if s is not None and (best is None or s > best):
                best = s
        return best

    def search(self, text: str) -> list[int]:
        """Steps whose output, messages, written variable names or called functions' names
        mention `text` (a call: the step it began at)."""
        needle = text.lower()
        hits: set[int] = set()
        for table in (self.names, self.calls):
            for name, steps in table.items():
                if needle in name.lower():
                    hits.update(steps)
        hits.update(step for step, blob in self.texts if needle in blob)
        return sorted(hits)
