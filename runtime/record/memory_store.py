"""Provides `MemoryStore`, the reference `RunStore`: everything in process memory (tests, runs
that are not kept)."""

from __future__ import annotations

import bisect
import json
import threading
from collections.abc import Callable, Collection
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, Self

from runtime.record.contract import (
    EFFECT_STATUSES,
    LEASE_LEFT,
    MAX_STEP,
    Batch,
    Blob,
    BranchRecord,
    EffectRecord,
    EventRecord,
    Keyframe,
    LLMCallRecord,
    RunMeta,
    RunRecord,
    Segment,
    StateSpan,
    StoreError,
    choose_prunable,
)
from runtime.record.requests import PACKED, WHOLE, RequestPacker, packable
from runtime.record.rows import (
    ambiguous_prefix,
    as_blob,
    branch_from_row,
    check_step_range,
    dumps,
    effect_from_row,
    format_ts,
    lineage_segments,
    llm_call_from_row,
    new_run_id,
    row_of_run,
    run_from_row,
    run_row,
    run_update_columns,
    utcnow,
)

__all__ = ["MemoryStore"]


class _MemBranch:
    __slots__ = ("row", "firsts", "batches", "kf_steps", "kf_blobs", "kf_bases", "events", "llm")

    def __init__(self, row: dict[str, Any]) -> None:
        self.row = row
        self.firsts: list[int] = []  # first_step of each batch, sorted, for bisect
        self.batches: list[tuple[int, int, bytes]] = []
        self.kf_steps: list[int] = []
        self.kf_blobs: list[bytes] = []
        self.kf_bases: list[int | None] = []  # what `put_keyframe` was told, for a copy
        self.events: list[tuple[int, int, str, str, str]] = []  # step, seq, kind, summary, data
        self.llm: list[tuple[int, dict[str, Any]]] = []  # seq, row

    def recorded_end(self) -> int | None:
        return self.batches[-1][1] if self.batches else None


class _MemRun:
    __slots__ = ("row", "branches", "parts")

    def __init__(self, row: dict[str, Any]) -> None:
        self.row = row
        self.branches: dict[int, _MemBranch] = {}
        self.parts: dict[tuple[int, int], str] = {}  # packed LLM requests' parts (requests.py)


def _recorded_bytes(run: _MemRun) -> int:
    """What a run's steps, keyframes and model calls take (as `prune --max-size` counts)."""
    total = 0
    for b in run.branches.values():
        total += sum(len(blob) for _, _, blob in b.batches) + sum(len(k) for k in b.kf_blobs)
        total += sum(len(str(row)) for _, row in b.llm)
    return total + sum(len(text) for text in run.parts.values())


class MemoryStore:
    """A `RunStore` in process memory: nothing survives the process. Thread-safe.

    Behaves like `SQLiteStore` (same validation, same JSON round-trip), except that errors
    surface at the call that caused them, since nothing is queued.
    """

    def __init__(self, clock: Callable[[], datetime] | None = None) -> None:
        self._clock = clock or utcnow
        self._lock = threading.RLock()
        self._runs: dict[str, _MemRun] = {}
        self._effects: dict[str, dict[str, Any]] = {}
        self._owners: dict[str, dict[str, Any]] = {}  # run id -> the process continuing it
        self._leases: dict[str, datetime] = {}  # run id -> when its owner's lease ends
        self._seq = 0
        self._closed = False
        self._packer = RequestPacker(self._max_part_seq)

    # plumbing

    def _max_part_seq(self, run_id: str, branch: int) -> int:
        return max((s for b, s in self._run(run_id).parts if b == branch), default=-1)

    def _load_parts(self, run_id: str, branch: int, lo: int, hi: int) -> list[tuple[int, str]]:
        parts = self._run(run_id).parts
        return [(s, parts[(branch, s)]) for s in range(lo, hi + 1) if (branch, s) in parts]

    def _now(self) -> datetime:
        moment: datetime = self._clock()
        return moment

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _open(self) -> None:
        if self._closed:
            raise StoreError("the run store is closed")

    def _run(self, run_id: str) -> _MemRun:
        run = self._runs.get(run_id)
        if run is None:
            raise StoreError(f"no run {run_id!r} in the store")
        return run

    def _branch(self, run_id: str, branch: int) -> _MemBranch:
        b = self._run(run_id).branches.get(branch)
        if b is None:
            raise StoreError(f"run {run_id} has no branch {branch}")
        return b

    def _resolve(self, run_id: str) -> str | None:
        if run_id in self._runs:
            return run_id
        if not run_id:
            return None
        ids = sorted(i for i in self._runs if i.startswith(run_id))
        if len(ids) > 1:
            raise ambiguous_prefix(run_id, ids)
        return ids[0] if ids else None

    def _segments(self, run_id: str, branch: int) -> list[Segment]:
        run = self._run(run_id)
        parents = {
            b: (mb.row["parent_branch"], mb.row["fork_step"]) for b, mb in run.branches.items()
        }
        return lineage_segments(run_id, branch, parents)

    def _bump_length(self, run: _MemRun, mb: _MemBranch, end: int) -> None:
        if end + 1 > mb.row["length"]:
            mb.row["length"] = end + 1
        if mb.row["branch"] == 0 and end + 1 > run.row["step_count"]:
            run.row["step_count"] = end + 1

    # runs

    def create_run(self, meta: RunMeta) -> str:
        with self._lock:
            self._open()
            now = self._now()
            run_id = new_run_id()
            while run_id in self._runs:
                run_id = new_run_id()
            run = _MemRun(run_row(run_id, meta, now))
            run.branches[0] = _MemBranch(
                {
                    "run_id": run_id,
                    "branch": 0,
                    "parent_branch": None,
                    "fork_step": None,
                    "edits_json": "{}",
                    "created_at": format_ts(now),
                    "length": 0,
                }
            )
            self._runs[run_id] = run
            return run_id

    def update_run(self, run_id: str, **fields: Any) -> None:
        with self._lock:
            self._open()
            columns = run_update_columns(fields, self._now())
            self._run(run_id).row.update(columns)

    def put_run(self, record: RunRecord) -> None:
        row = row_of_run(record)
        with self._lock:
            self._open()
            run = self._runs.get(record.id)
            if run is not None:
                run.row.update(row)
                return
            run = self._runs[record.id] = _MemRun(row)
            run.branches[0] = _MemBranch(
                {
                    "run_id": record.id,
                    "branch": 0,
                    "parent_branch": None,
                    "fork_step": None,
                    "edits_json": "{}",
                    "created_at": row["created_at"],
                    "length": 0,
                }
            )

    def get_run(self, run_id: str) -> RunRecord | None:
        with self._lock:
            self._open()
            resolved = self._resolve(run_id)
            return None if resolved is None else run_from_row(self._runs[resolved].row)

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        with self._lock:
            self._open()
            rows = sorted(
                (r.row for r in self._runs.values()),
                key=lambda row: (row["created_at"], row["id"]),
                reverse=True,
            )
            return [run_from_row(row) for row in rows[: max(limit, 0)]]

    def latest_run(self) -> RunRecord | None:
        runs = self.list_runs(1)
        return runs[0] if runs else None

    def delete_run(self, run_id: str) -> None:
        with self._lock:
            self._open()
            resolved = self._resolve(run_id)
            if resolved is None:
                raise StoreError(f"no run {run_id!r} in the store")
            del self._runs[resolved]
            self._packer.forget(resolved)
            self._effects = {k: e for k, e in self._effects.items() if e["run_id"] != resolved}

    def prune(
        self,
        older_than: timedelta | None,
        keep: Collection[str] = (),
        keep_failed: bool = False,
        *,
        keep_latest: int | None = None,
        max_bytes: int | None = None,
    ) -> int:
        with self._lock:
            self._open()
            cutoff = None if older_than is None else format_ts(self._now() - older_than)
            runs = [
                (i, r.row["updated_at"], r.row["status"], _recorded_bytes(r))
                for i, r in self._runs.items()
            ]
            now = self._now()  # a claim whose lease has expired is a dead owner's
            live = {i for i in self._owners if i not in self._leases or self._leases[i] > now}
            spared = set(keep) | live
            doomed = choose_prunable(runs, cutoff, spared, keep_failed, keep_latest, max_bytes)
            for run_id in doomed:
                self.delete_run(run_id)
            return len(doomed)

    # steps

    def append_batch(
        self, run_id: str, branch: int, first_step: int, last_step: int, blob: Blob
    ) -> None:
        check_step_range(first_step, last_step)
        data = as_blob(blob)
        with self._lock:
            self._open()
            run = self._run(run_id)
            mb = self._branch(run_id, branch)
            at = bisect.bisect_left(mb.firsts, first_step)
            if at < len(mb.firsts) and mb.firsts[at] == first_step:
                raise StoreError(
                    f"run {run_id} branch {branch} already has a batch starting at {first_step}"
                )
            mb.firsts.insert(at, first_step)
            mb.batches.insert(at, (first_step, last_step, data))
            self._bump_length(run, mb, last_step)
            run.row["updated_at"] = format_ts(self._now())

    def put_keyframe(
        self, run_id: str, branch: int, step: int, blob: Blob, base: int | None = None
    ) -> None:
        data = as_blob(blob)  # `base` is for stores a round trip away (`state_span`), and copies
        with self._lock:
            self._open()
            mb = self._branch(run_id, branch)
            at = bisect.bisect_left(mb.kf_steps, step)
            if at < len(mb.kf_steps) and mb.kf_steps[at] == step:
                mb.kf_blobs[at] = data
                mb.kf_bases[at] = base
            else:
                mb.kf_steps.insert(at, step)
                mb.kf_blobs.insert(at, data)
                mb.kf_bases.insert(at, base)

    def keyframe_at_or_before(self, run_id: str, branch: int, step: int) -> Keyframe | None:
        with self._lock:
            self._open()
            run = self._run(run_id)
            for seg in reversed(self._segments(run_id, branch)):
                if step < seg.lo:
                    continue
                mb = run.branches[seg.branch]
                at = bisect.bisect_right(mb.kf_steps, min(step, seg.hi)) - 1
                if at >= 0 and mb.kf_steps[at] >= seg.lo:
                    return Keyframe(seg.branch, mb.kf_steps[at], mb.kf_blobs[at], mb.kf_bases[at])
            return None

    def keyframe_steps(self, run_id: str, branch: int, a: int, b: int) -> list[int]:
        with self._lock:
            self._open()
            run = self._run(run_id)
            steps: set[int] = set()
            for seg in self._segments(run_id, branch):
                lo, hi = max(a, seg.lo), min(b, seg.hi)
                mb = run.branches[seg.branch]
                at = bisect.bisect_left(mb.kf_steps, lo)
                while at < len(mb.kf_steps) and mb.kf_steps[at] <= hi:
                    steps.add(mb.kf_steps[at])
                    at += 1
            return sorted(steps)

    def state_span(
        self, run_id: str, branch: int, step: int, batches_to: int, keyframes_to: int
    ) -> StateSpan:
        keyframe = self.keyframe_at_or_before(run_id, branch, step)
        start = step if keyframe is None or keyframe.step == step else keyframe.step + 1
        return StateSpan(
            keyframe,
            None,
            self.batches(run_id, branch, start, batches_to),
            self.keyframe_steps(run_id, branch, step + 1, keyframes_to),
        )

    def batches(self, run_id: str, branch: int, a: int, b: int) -> list[Batch]:
        with self._lock:
            self._open()
            run = self._run(run_id)
            out: list[Batch] = []
            for seg in self._segments(run_id, branch):
                lo, hi = max(a, seg.lo), min(b, seg.hi)
                if lo > hi:
                    continue
                mb = run.branches[seg.branch]
                at = max(bisect.bisect_right(mb.firsts, lo) - 1, 0)
                while at < len(mb.batches) and mb.batches[at][0] <= hi:
                    first, last, blob = mb.batches[at]
                    if last >= lo:
                        out.append(Batch(seg.branch, first, last, blob))
                    at += 1
            return out

    def lineage(self, run_id: str, branch: int) -> list[Segment]:
        with self._lock:
            self._open()
            return self._segments(run_id, branch)

    def step_count(self, run_id: str, branch: int = 0) -> int:
        with self._lock:
            self._open()
            run = self._run(run_id)
            for seg in reversed(self._segments(run_id, branch)):
                mb = run.branches[seg.branch]
                at = bisect.bisect_right(mb.firsts, seg.hi) - 1
                if at >= 0:
                    last = min(mb.batches[at][1], seg.hi)
                    if last >= seg.lo:
                        return last + 1
            return 0

    # events, LLM calls, effects

    def add_event(
        self,
        run_id: str,
        branch: int,
        step: int,
        kind: str,
        summary: str,
        data: dict[str, Any] | None = None,
    ) -> None:
        data_json = dumps({} if data is None else data, "event data")
        with self._lock:
            self._open()
            self._branch(run_id, branch).events.append(
                (step, self._next_seq(), kind, summary, data_json)
            )

    def events(
        self,
        run_id: str,
        branch: int = 0,
        kind: str | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> list[EventRecord]:
        a = -MAX_STEP if start is None else start
        b = MAX_STEP if end is None else end
        with self._lock:
            self._open()
            run = self._run(run_id)
            out: list[EventRecord] = []
            for seg in self._segments(run_id, branch):
                lo, hi = max(a, seg.lo), min(b, seg.hi)
                found = sorted(
                    e
                    for e in run.branches[seg.branch].events
                    if lo <= e[0] <= hi and (kind is None or e[2] == kind)
                )
                out.extend(
                    EventRecord(run_id, seg.branch, s, k, summary, json.loads(d))
                    for s, _, k, summary, d in found
                )
            return out

    def add_llm_call(
        self,
        run_id: str,
        branch: int,
        step: int,
        *,
        provider: str,
        model: str,
        request: Any,
        response: Any,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cost: float = 0.0,
        latency_ms: float = 0.0,
    ) -> None:
        response_json = dumps(response, "LLM response")
        row = {
            "run_id": run_id,
            "branch": branch,
            "step": step,
            "provider": provider,
            "model": model,
            "request_json": "",
            "request_form": WHOLE,
            "response_json": response_json,
            "input_tokens": int(input_tokens),
            "output_tokens": int(output_tokens),
            "cost": float(cost),
            "latency_ms": float(latency_ms),
            "created_at": format_ts(self._now()),
        }
        if not packable(request):
            row["request_json"] = dumps(request, "LLM request")
        with self._lock:
            self._open()
            mb = self._branch(run_id, branch)
            if packable(request):
                packed, parts = self._packer.pack(run_id, branch, request)
                self._runs[run_id].parts.update(((b, s), text) for b, s, text in parts)
                row["request_json"], row["request_form"] = dumps(packed, "LLM request"), PACKED
            mb.llm.append((self._next_seq(), row))

    def llm_calls(self, run_id: str, branch: int | None = None) -> list[LLMCallRecord]:
        with self._lock:
            self._open()
            run = self._run(run_id)
            if branch is None:
                rows = sorted(c for mb in run.branches.values() for c in mb.llm)
                return [self._llm_call(row) for _, row in rows]
            out: list[LLMCallRecord] = []
            for seg in self._segments(run_id, branch):
                calls = sorted(
                    ((row["step"], seq, row) for seq, row in run.branches[seg.branch].llm),
                    key=lambda c: (c[0], c[1]),
                )
                out.extend(self._llm_call(r) for s, _, r in calls if seg.lo <= s <= seg.hi)
            return out

    def last_llm_call(self, run_id: str, branch: int, step: int) -> LLMCallRecord | None:
        with self._lock:
            self._open()
            run = self._run(run_id)
            for seg in reversed(self._segments(run_id, branch)):
                if seg.lo > step:
                    continue
                hi = min(seg.hi, step)
                found = max(
                    (
                        (row["step"], seq, row)
                        for seq, row in run.branches[seg.branch].llm
                        if seg.lo <= row["step"] <= hi
                    ),
                    key=lambda c: (c[0], c[1]),
                    default=None,
                )
                if found is not None:
                    return self._llm_call(found[2])
            return None

    def _llm_call(self, row: dict[str, Any]) -> LLMCallRecord:
        run_id = row["run_id"]
        return llm_call_from_row(
            row,
            lambda packed: self._packer.unpack(
                run_id, packed, lambda b, lo, hi: self._load_parts(run_id, b, lo, hi)
            ),
        )

    def put_effect(
        self,
        key: str,
        *,
        run_id: str,
        branch: int,
        step: int,
        kind: str,
        status: str,
        args: Any,
        result: Any,
    ) -> None:
        if status not in EFFECT_STATUSES:
            raise ValueError(f"effect status must be 'applied' or 'failed', not {status!r}")
        args_json = dumps(args, "effect args")
        result_json = dumps(result, "effect result")
        with self._lock:
            self._open()
            self._branch(run_id, branch)
            old = self._effects.get(key)
            self._effects[key] = {
                "key": key,
                "run_id": run_id,
                "branch": branch,
                "step": step,
                "kind": kind,
                "status": status,
                "args_json": args_json,
                "result_json": result_json,
                "created_at": old["created_at"] if old else format_ts(self._now()),
            }

    def get_effect(self, key: str) -> EffectRecord | None:
        with self._lock:
            self._open()
            row = self._effects.get(key)
            return None if row is None else effect_from_row(row)

    def effects(self, run_id: str, branch: int | None = None) -> list[EffectRecord]:
        with self._lock:
            self._open()
            rows = [e for e in self._effects.values() if e["run_id"] == run_id]
            if branch is None:
                return [effect_from_row(e) for e in rows]
            out: list[EffectRecord] = []
            for seg in self._segments(run_id, branch):
                mine = [e for e in rows if e["branch"] == seg.branch]
                mine = [e for e in mine if seg.lo <= e["step"] <= seg.hi]
                out.extend(effect_from_row(e) for e in sorted(mine, key=lambda e: e["step"]))
            return out

    # branches

    def create_branch(
        self, run_id: str, parent_branch: int, fork_step: int, edits: dict[str, Any] | None = None
    ) -> int:
        if fork_step < -1:
            raise ValueError(f"fork step must be -1 or more, not {fork_step}")
        edits_json = dumps({} if edits is None else edits, "branch edits")
        with self._lock:
            self._open()
            run = self._run(run_id)
            self._branch(run_id, parent_branch)
            new = max(run.branches) + 1
            run.branches[new] = _MemBranch(
                {
                    "run_id": run_id,
                    "branch": new,
                    "parent_branch": parent_branch,
                    "fork_step": fork_step,
                    "edits_json": edits_json,
                    "created_at": format_ts(self._now()),
                    "length": fork_step + 1,
                }
            )
            return new

    def branches(self, run_id: str) -> list[BranchRecord]:
        with self._lock:
            self._open()
            run = self._run(run_id)
            return [branch_from_row(run.branches[b].row) for b in sorted(run.branches)]

    def claim_run(
        self,
        run_id: str,
        owner: dict[str, Any],
        may_take: Callable[[dict[str, Any]], bool] | None = None,
        lease: float | None = None,
    ) -> dict[str, Any] | None:
        mine = json.loads(dumps(owner, "a run owner"))
        with self._lock:
            self._open()
            self._run(run_id)
            held = self._owners.get(run_id)
            if held is not None and held != mine:
                holder = dict(held)
                until = self._leases.get(run_id)
                if until is not None:
                    holder[LEASE_LEFT] = (until - self._now()).total_seconds()
                if not (may_take and may_take(holder)):
                    return holder
            self._owners[run_id] = mine
            self._leases.pop(run_id, None)
            if lease is not None:
                self._leases[run_id] = self._now() + timedelta(seconds=lease)
            return None

    def renew_lease(self, run_id: str, owner: dict[str, Any], lease: float) -> bool:
        mine = json.loads(dumps(owner, "a run owner"))
        with self._lock:
            self._open()
            if self._owners.get(run_id) != mine:
                return False
            self._leases[run_id] = self._now() + timedelta(seconds=lease)
            return True

    def release_run(self, run_id: str, owner: dict[str, Any]) -> None:
        mine = json.loads(dumps(owner, "a run owner"))
        with self._lock:
            self._open()
            if self._owners.get(run_id) == mine:
                del self._owners[run_id]
                self._leases.pop(run_id, None)

    def run_owner(self, run_id: str, lease: bool = False) -> dict[str, Any] | None:
        with self._lock:
            self._open()
            holder = self._owners.get(run_id)
            if holder is None or run_id not in self._runs:
                return None
            out = dict(holder)
            until = self._leases.get(run_id)
            if lease and until is not None:
                out[LEASE_LEFT] = (until - self._now()).total_seconds()
            return out

    def truncate_after(self, run_id: str, branch: int, step: int) -> None:
        with self._lock:
            self._open()
            run = self._run(run_id)
            mb = self._branch(run_id, branch)
            keep = bisect.bisect_right(mb.firsts, step)
            del mb.firsts[keep:], mb.batches[keep:]
            keep = bisect.bisect_right(mb.kf_steps, step)
            del mb.kf_steps[keep:], mb.kf_blobs[keep:], mb.kf_bases[keep:]
            mb.events = [e for e in mb.events if e[0] <= step]
            mb.llm = [c for c in mb.llm if c[1]["step"] <= step]
            fork = mb.row["fork_step"]
            end = mb.recorded_end()
            length = max(0 if fork is None else fork + 1, 0 if end is None else end + 1)
            mb.row["length"] = length
            if branch == 0:
                run.row["step_count"] = length

    # lifecycle

    def flush(self) -> None:
        with self._lock:
            self._open()

    def close(self) -> None:
        self._closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
