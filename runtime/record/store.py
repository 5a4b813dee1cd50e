"""Provides the storage interface for recorded runs (`RunStore`) and its in-memory implementation.

A run store keeps, per run: its metadata, its branches, the recorder's encoded step batches and
keyframes, timeline events, LLM calls and the effect journal. Step batches and keyframes are
opaque bytes: a store never decodes them. `SQLiteStore` (`sqlite_store.py`) is the durable
implementation; `MemoryStore` here is the reference one (tests, runs that are not kept).

Steps are numbered per branch from the fork point. Branch 0 is the main line and starts at step
0; a branch forked after step k of its parent has its first own step k+1. A branch's history (its
*lineage*) is its parent's history up to step k followed by its own steps, so every read that
takes a branch walks the lineage: the branch itself supplies steps from k on, its parent supplies
steps up to k, and so on up to branch 0. Both sides own step k: the parent recorded the step, the
child may record what happened to it there (the edit, a "branch" event, a keyframe of the edited
state), and the child's records of step k come after the parent's.

Values that are not blobs (run arguments, config, event data, LLM requests and answers, effect
results, edits) are JSON-like Python values; the store keeps them as JSON text, so what comes back
is a copy, with tuples turned into lists. An LLM request of the shape `llm()` sends is kept packed
(`requests.py`: each message stored once per run, a call referring to them), so a long thread
costs O(new messages) per call; it comes back exactly as it went in, its messages shared with the
other requests read with it.
"""

from __future__ import annotations

import bisect
import json
import os
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any, NamedTuple, Protocol, Self

from runtime.errors import AgencyError
from runtime.record.requests import PACKED, WHOLE, RequestPacker, packable

__all__ = [
    "EVENT_KINDS",
    "MAX_STEP",
    "RUN_STATUSES",
    "Batch",
    "Blob",
    "BranchRecord",
    "EffectRecord",
    "EventRecord",
    "Keyframe",
    "LLMCallRecord",
    "MemoryStore",
    "RunMeta",
    "RunRecord",
    "RunStore",
    "Segment",
    "StoreError",
    "lineage_segments",
    "new_run_id",
]

RUN_STATUSES = frozenset({"running", "finished", "failed", "interrupted"})
TERMINAL_STATUSES = frozenset({"finished", "failed", "interrupted"})
EVENT_KINDS = frozenset(
    {"llm", "tool", "checkpoint", "restore", "interrupt", "error", "debugger", "effect", "branch"}
)
EFFECT_STATUSES = frozenset({"applied", "failed"})
MAX_STEP = 2**62  # "no upper bound" in step ranges; fits a SQLite INTEGER

# Fields `update_run` may change; step_count and updated_at are kept by the store itself.
UPDATABLE_RUN_FIELDS = frozenset(
    {
        "status",
        "result",
        "error",
        "finished_at",
        "node",
        "args",
        "config",
        "meta",
        "source_path",
        "source_sha256",
    }
)


class StoreError(AgencyError):
    """A run store that cannot be used: unreadable, foreign, too new, corrupt, or a failed write.

    The message is one line and names the file when there is one.
    """

    exit_code = 2  # like CheckpointFormatError: the file given cannot be used


# --- records -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunMeta:
    """What is known about a run when it starts; `create_run` gives it an id and timestamps."""

    source_path: str
    source_sha256: str
    node: str = "main"
    args: Any = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    status: str = "running"


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One stored run. `step_count` is branch 0's (highest recorded step + 1)."""

    id: str
    source_path: str
    source_sha256: str
    node: str
    args: Any
    config: dict[str, Any]
    status: str
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None
    step_count: int
    result: Any
    error: str | None
    meta: dict[str, Any]


@dataclass(frozen=True, slots=True)
class BranchRecord:
    """One branch of a run. Branch 0 has no parent and no fork step.

    `length` is the branch's step count along its lineage (highest recorded step + 1, and at
    least `fork_step + 1` for a fork).
    """

    run_id: str
    branch: int
    parent_branch: int | None
    fork_step: int | None
    edits: dict[str, Any]
    created_at: datetime
    length: int


@dataclass(frozen=True, slots=True)
class EventRecord:
    """A timeline marker; `branch` is the branch that recorded it (a lineage may mix several)."""

    run_id: str
    branch: int
    step: int
    kind: str
    summary: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class LLMCallRecord:
    """One model call: the request as sent, the answer as received, usage and timing."""

    run_id: str
    branch: int
    step: int
    provider: str
    model: str
    request: Any
    response: Any
    input_tokens: int
    output_tokens: int
    cost: float
    latency_ms: float
    created_at: datetime


@dataclass(frozen=True, slots=True)
class EffectRecord:
    """One entry of the effect journal, keyed `run:branch:step:call`."""

    key: str
    run_id: str
    branch: int
    step: int
    kind: str
    status: str
    args: Any
    result: Any
    created_at: datetime


Blob = bytes | bytearray | memoryview  # what the store accepts; it always gives back bytes


class Batch(NamedTuple):
    """An encoded batch of consecutive steps `first_step..last_step` recorded on `branch`."""

    branch: int
    first_step: int
    last_step: int
    blob: bytes


class Keyframe(NamedTuple):
    """An encoded full state at `step`, recorded on `branch`."""

    branch: int
    step: int
    blob: bytes


@dataclass(frozen=True, slots=True)
class Segment:
    """The part of a lineage one branch supplies: steps `lo..hi` (both inclusive)."""

    branch: int
    lo: int
    hi: int


# --- the interface ---------------------------------------------------------------------------


class RunStore(Protocol):
    """Where recorded runs live. Implementations: `MemoryStore`, `SQLiteStore`.

    Writes may be queued (see `flush`); reads always see every write made before them through
    the same store object. Errors are `StoreError`, except programming errors (a bad argument:
    `ValueError`/`TypeError`).
    """

    def create_run(self, meta: RunMeta) -> str:
        """Store a new run with branch 0 and return its id (`new_run_id()`); durable on return."""
        ...

    def update_run(self, run_id: str, **fields: Any) -> None:
        """Change some of a run's fields (`UPDATABLE_RUN_FIELDS`); `updated_at` becomes now.

        Setting a terminal status sets `finished_at` too unless it is given. May be queued; an
        unknown run id is reported by a later call.
        """
        ...

    def get_run(self, run_id: str) -> RunRecord | None:
        """The run with this id or unique id prefix (like git), None if there is none.

        An ambiguous prefix raises `StoreError` naming some of the candidates.
        """
        ...

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        """The `limit` most recently created runs, newest first."""
        ...

    def latest_run(self) -> RunRecord | None:
        """The most recently created run, None if the store is empty."""
        ...

    def delete_run(self, run_id: str) -> None:
        """Delete a run (id or unique prefix) and everything recorded for it; durable on return.

        An unknown run raises `StoreError`.
        """
        ...

    def prune(self, older_than: timedelta, keep: Collection[str] = ()) -> int:
        """Delete runs not updated for `older_than`, except the runs in `keep`; return how many
        went.

        Finished, failed and interrupted runs go when their `updated_at` is older than the cutoff.
        A run still marked "running" whose `updated_at` is older than the cutoff is one whose
        process died without saying so (a live recording bumps `updated_at` with every commit);
        it counts as interrupted and goes too. `keep` holds the runs known to be recorded right
        now (a live process waiting on a slow model commits nothing for a while).
        """
        ...

    def append_batch(
        self, run_id: str, branch: int, first_step: int, last_step: int, blob: Blob
    ) -> None:
        """Append the encoded batch of steps `first_step..last_step` of `branch`. May be queued.

        Batches of one branch are consecutive and never overlap; the recorder appends them in
        order. Durable at the next `flush` (or within ~50 ms for `SQLiteStore`).
        """
        ...

    def put_keyframe(self, run_id: str, branch: int, step: int, blob: Blob) -> None:
        """Store the encoded full state at `step` of `branch` (replacing one already there)."""
        ...

    def keyframe_at_or_before(self, run_id: str, branch: int, step: int) -> Keyframe | None:
        """The latest keyframe at or before `step` in the branch's lineage, None if none.

        Searches the branch itself, then its parent up to the fork step, and so on; a child's
        keyframe at its fork step (the edited state) wins over the parent's at the same step.
        """
        ...

    def keyframe_steps(self, run_id: str, branch: int, a: int, b: int) -> list[int]:
        """The steps within `a..b` (inclusive) that have a keyframe along the branch's lineage,
        ascending (no blobs read: a reader walking forward knows where the next one is)."""
        ...

    def batches(self, run_id: str, branch: int, a: int, b: int) -> list[Batch]:
        """The batches covering steps `a..b` (inclusive) along the branch's lineage, in order.

        That is: the ancestors' batches up to their fork steps, then the branch's own. Batches
        are returned whole, so the first may start before `a`, the last may end after `b`, and a
        parent's batch that straddles a fork step holds steps after it that are not part of this
        lineage: the reader skips a batch's steps beyond its segment (`lineage`).
        """
        ...

    def lineage(self, run_id: str, branch: int) -> list[Segment]:
        """Which branch supplies which steps of this branch's history, branch 0 first."""
        ...

    def step_count(self, run_id: str, branch: int = 0) -> int:
        """Highest recorded step along the branch's lineage + 1 (0 when nothing is recorded)."""
        ...

    def add_event(
        self,
        run_id: str,
        branch: int,
        step: int,
        kind: str,
        summary: str,
        data: dict[str, Any] | None = None,
    ) -> None:
        """Record a timeline marker (`EVENT_KINDS` lists the kinds the debugger draws). May be
        queued."""
        ...

    def events(
        self,
        run_id: str,
        branch: int = 0,
        kind: str | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> list[EventRecord]:
        """The markers along the branch's lineage, by step then recording order, optionally of
        one kind and within steps `start..end` (inclusive)."""
        ...

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
        """Record one model call made at `step`. May be queued: call `flush` after it so the
        answer is durable before the program goes on."""
        ...

    def llm_calls(self, run_id: str, branch: int | None = None) -> list[LLMCallRecord]:
        """The run's model calls in recording order, or those along one branch's lineage."""
        ...

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
        """Record (or update) an effect journal entry; committed before it returns."""
        ...

    def get_effect(self, key: str) -> EffectRecord | None:
        """The journal entry with this key, None if the effect never ran."""
        ...

    def effects(self, run_id: str, branch: int | None = None) -> list[EffectRecord]:
        """The run's effect journal in recording order, or the entries along a branch's lineage."""
        ...

    def create_branch(
        self, run_id: str, parent_branch: int, fork_step: int, edits: dict[str, Any] | None = None
    ) -> int:
        """Fork `parent_branch` after `fork_step` and return the new branch's id (the run's next
        one); durable on return."""
        ...

    def branches(self, run_id: str) -> list[BranchRecord]:
        """The run's branches by id, branch 0 first."""
        ...

    def truncate_after(self, run_id: str, branch: int, step: int) -> None:
        """Drop what `branch` itself recorded after `step`: batches starting after it, keyframes,
        events and LLM calls. The effect journal is kept (resume relies on it). Durable on
        return."""
        ...

    def claim_run(
        self,
        run_id: str,
        owner: dict[str, Any],
        may_take: Callable[[dict[str, Any]], bool] | None = None,
    ) -> dict[str, Any] | None:
        """Make `owner` (a process: pid, host, start time) the one that continues `run_id`.

        Compare-and-set in one transaction: with no owner, or `owner` itself, or an owner for
        which `may_take(holder)` is true (a dead process), the claim is taken and None is
        returned; otherwise nothing changes and the holder is returned. Durable on return. An
        unknown run raises `StoreError`.
        """
        ...

    def release_run(self, run_id: str, owner: dict[str, Any]) -> None:
        """Give up `owner`'s claim on `run_id` (nothing if another owner holds it now, or the
        run is gone). Durable on return."""
        ...

    def run_owner(self, run_id: str) -> dict[str, Any] | None:
        """The process that holds `run_id` (see `claim_run`), None if none does."""
        ...

    def flush(self) -> None:
        """Block until every queued write is committed; raise if one of them failed."""
        ...

    def close(self) -> None:
        """Flush and release the store; later calls raise `StoreError`. Closing twice is fine."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


# --- helpers shared by the stores ------------------------------------------------------------

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, in ASCII order: sorts right
_id_lock = threading.Lock()
_last_id_ms = 0


def new_run_id() -> str:
    """A new run id: "r", 9 base32 digits of milliseconds since 1970, 3 random base32 digits.

    Ids sort by creation time and strictly increase within a process; the random tail keeps
    runs started in the same millisecond by different processes apart.
    """
    global _last_id_ms
    with _id_lock:
        ms = max(time.time_ns() // 1_000_000, _last_id_ms + 1)
        _last_id_ms = ms
    tail = int.from_bytes(os.urandom(2), "big") % 32**3
    return "r" + _base32(ms, 9) + _base32(tail, 3)


def _base32(number: int, width: int) -> str:
    digits = []
    for _ in range(width):
        number, digit = divmod(number, 32)
        digits.append(_ALPHABET[digit])
    return "".join(reversed(digits))


def utcnow() -> datetime:
    return datetime.now(UTC)


def format_ts(moment: datetime) -> str:
    """Timestamps are stored as fixed-width ISO 8601 UTC text, so text order is time order."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_ts(text: str) -> datetime:
    return datetime.fromisoformat(text)


def dumps(value: Any, what: str) -> str:
    """JSON text for a stored value, encoded by the caller so a bad value fails at the call."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} is not JSON-serialisable: {exc}") from exc


def loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def as_blob(blob: Blob) -> bytes:
    return blob if type(blob) is bytes else bytes(blob)


def check_status(status: str) -> None:
    if status not in RUN_STATUSES:
        raise ValueError(f"run status must be one of {sorted(RUN_STATUSES)}, not {status!r}")


def check_step_range(first_step: int, last_step: int) -> None:
    if last_step < first_step:
        raise ValueError(f"batch ends ({last_step}) before it starts ({first_step})")


def lineage_segments(
    run_id: str, branch: int, parents: dict[int, tuple[int | None, int | None]]
) -> list[Segment]:
    """The lineage of `branch` from `parents` (branch -> (parent, fork_step)), branch 0 first.

    Raises `StoreError` for an unknown branch or a cycle (a damaged store).
    """
    chain: list[tuple[int, int | None]] = []  # (branch, fork_step), from `branch` upwards
    seen: set[int] = set()
    current: int | None = branch
    while current is not None:
        if current not in parents:
            if current == branch:
                raise StoreError(f"run {run_id} has no branch {branch}")
            raise StoreError(f"run {run_id}: branch {current} (an ancestor) is missing")
        if current in seen:
            raise StoreError(f"run {run_id}: branch {branch} has a cycle in its ancestry")
        seen.add(current)
        parent, fork = parents[current]
        chain.append((current, fork))
        current = parent
    segments: list[Segment] = []
    hi = MAX_STEP
    for b, fork in chain:
        lo = fork if fork is not None else 0
        if lo <= hi:  # an ancestor forked before this branch's own fork supplies nothing
            segments.append(Segment(b, lo, hi))
        hi = min(hi, lo)
    segments.reverse()
    return segments


def run_update_columns(fields: dict[str, Any], now: datetime) -> dict[str, Any]:
    """Column values for `update_run(**fields)`: validated and encoded, with updated_at."""
    unknown = set(fields) - UPDATABLE_RUN_FIELDS
    if unknown:
        raise TypeError(
            f"update_run cannot set {', '.join(sorted(unknown))}; "
            f"it sets {', '.join(sorted(UPDATABLE_RUN_FIELDS))}"
        )
    columns: dict[str, Any] = {"updated_at": format_ts(now)}
    for name, value in fields.items():
        if name == "status":
            check_status(value)
            columns["status"] = value
            if value in TERMINAL_STATUSES and "finished_at" not in fields:
                columns["finished_at"] = format_ts(now)
        elif name == "finished_at":
            columns["finished_at"] = None if value is None else format_ts(value)
        elif name in ("args", "config", "meta", "result"):
            columns[f"{name}_json"] = dumps(value, f"run {name}")
        else:
            columns[name] = value
    return columns


def run_from_row(row: Any) -> RunRecord:
    """A `RunRecord` from a row of the runs table (a dict or a `sqlite3.Row`)."""
    finished = row["finished_at"]
    return RunRecord(
        id=row["id"],
        source_path=row["source_path"],
        source_sha256=row["source_sha256"],
        node=row["node"],
        args=loads(row["args_json"]),
        config=loads(row["config_json"]),
        status=row["status"],
        created_at=parse_ts(row["created_at"]),
        updated_at=parse_ts(row["updated_at"]),
        finished_at=None if finished is None else parse_ts(finished),
        step_count=row["step_count"],
        result=loads(row["result_json"]),
        error=row["error"],
        meta=loads(row["meta_json"]),
    )


def run_row(run_id: str, meta: RunMeta, now: datetime) -> dict[str, Any]:
    """A row of the runs table for a new run."""
    check_status(meta.status)
    stamp = format_ts(now)
    return {
        "id": run_id,
        "source_path": meta.source_path,
        "source_sha256": meta.source_sha256,
        "node": meta.node,
        "args_json": dumps(meta.args, "run args"),
        "config_json": dumps(meta.config, "run config"),
        "status": meta.status,
        "created_at": stamp,
        "updated_at": stamp,
        "finished_at": stamp if meta.status in TERMINAL_STATUSES else None,
        "step_count": 0,
        "result_json": None,
        "error": None,
        "meta_json": dumps(meta.meta, "run meta"),
    }


def effect_from_row(row: Any) -> EffectRecord:
    return EffectRecord(
        key=row["key"],
        run_id=row["run_id"],
        branch=row["branch"],
        step=row["step"],
        kind=row["kind"],
        status=row["status"],
        args=loads(row["args_json"]),
        result=loads(row["result_json"]),
        created_at=parse_ts(row["created_at"]),
    )


def llm_call_from_row(row: Any, unpack: Callable[[Any], Any] | None = None) -> LLMCallRecord:
    """An `LLMCallRecord` from a row of the llm_calls table; `unpack` rebuilds a packed request
    (`request_form` PACKED, a column older stores do not have)."""
    request = loads(row["request_json"])
    if unpack is not None and "request_form" in row.keys() and row["request_form"] == PACKED:
        request = unpack(request)
    return LLMCallRecord(
        run_id=row["run_id"],
        branch=row["branch"],
        step=row["step"],
        provider=row["provider"],
        model=row["model"],
        request=request,
        response=loads(row["response_json"]),
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        cost=row["cost"],
        latency_ms=row["latency_ms"],
        created_at=parse_ts(row["created_at"]),
    )


def branch_from_row(row: Any) -> BranchRecord:
    return BranchRecord(
        run_id=row["run_id"],
        branch=row["branch"],
        parent_branch=row["parent_branch"],
        fork_step=row["fork_step"],
        edits=loads(row["edits_json"]),
        created_at=parse_ts(row["created_at"]),
        length=row["length"],
    )


def prefix_upper_bound(prefix: str) -> str:
    """The smallest string above every string that starts with `prefix` (ids are ASCII)."""
    return prefix + "\U0010ffff"


def ambiguous_prefix(prefix: str, ids: list[str]) -> StoreError:
    shown = ", ".join(ids[:5])
    more = "" if len(ids) <= 5 else ", …"
    return StoreError(f"run id prefix {prefix!r} is ambiguous: it matches {shown}{more}")


# --- the in-memory store ---------------------------------------------------------------------


class _MemBranch:
    __slots__ = ("row", "firsts", "batches", "kf_steps", "kf_blobs", "events", "llm")

    def __init__(self, row: dict[str, Any]) -> None:
        self.row = row
        self.firsts: list[int] = []  # first_step of each batch, sorted, for bisect
        self.batches: list[tuple[int, int, bytes]] = []
        self.kf_steps: list[int] = []
        self.kf_blobs: list[bytes] = []
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

    def prune(self, older_than: timedelta, keep: Collection[str] = ()) -> int:
        with self._lock:
            self._open()
            cutoff = format_ts(self._now() - older_than)
            kept = set(keep)
            doomed = [
                i for i, r in self._runs.items() if r.row["updated_at"] < cutoff and i not in kept
            ]
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

    def put_keyframe(self, run_id: str, branch: int, step: int, blob: Blob) -> None:
        data = as_blob(blob)
        with self._lock:
            self._open()
            mb = self._branch(run_id, branch)
            at = bisect.bisect_left(mb.kf_steps, step)
            if at < len(mb.kf_steps) and mb.kf_steps[at] == step:
                mb.kf_blobs[at] = data
            else:
                mb.kf_steps.insert(at, step)
                mb.kf_blobs.insert(at, data)

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
                    return Keyframe(seg.branch, mb.kf_steps[at], mb.kf_blobs[at])
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
    ) -> dict[str, Any] | None:
        mine = json.loads(dumps(owner, "a run owner"))
        with self._lock:
            self._open()
            self._run(run_id)
            holder = self._owners.get(run_id)
            if holder is not None and holder != mine and not (may_take and may_take(holder)):
                return dict(holder)
            self._owners[run_id] = mine
            return None

    def release_run(self, run_id: str, owner: dict[str, Any]) -> None:
        mine = json.loads(dumps(owner, "a run owner"))
        with self._lock:
            self._open()
            if self._owners.get(run_id) == mine:
                del self._owners[run_id]

    def run_owner(self, run_id: str) -> dict[str, Any] | None:
        with self._lock:
            self._open()
            holder = self._owners.get(run_id)
            return dict(holder) if holder is not None and run_id in self._runs else None

    def truncate_after(self, run_id: str, branch: int, step: int) -> None:
        with self._lock:
            self._open()
            run = self._run(run_id)
            mb = self._branch(run_id, branch)
            keep = bisect.bisect_right(mb.firsts, step)
            del mb.firsts[keep:], mb.batches[keep:]
            keep = bisect.bisect_right(mb.kf_steps, step)
            del mb.kf_steps[keep:], mb.kf_blobs[keep:]
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
