"""Provides the run store contract: the `RunStore` protocol, the records it reads and writes,
and `StoreError`. Implementations: `MemoryStore` (`memory_store.py`), `SQLiteStore`
(`sqlite_store.py`) and `PostgresStore` (`pg_store.py`); `runtime.record.store` re-exports all
of it.

A run store keeps, per run: its metadata, its branches, the recorder's encoded step batches and
keyframes, timeline events, LLM calls and the effect journal. Step batches and keyframes are
opaque bytes: a store never decodes them.

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

from collections.abc import Callable, Collection
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, NamedTuple, Protocol, Self

from runtime.errors import AgencyError
from runtime.frozen import Frozen, set_field

__all__ = [
    "EFFECT_STATUSES",
    "EVENT_KINDS",
    "LEASE_LEFT",
    "MAX_STEP",
    "RUN_STATUSES",
    "TERMINAL_STATUSES",
    "UPDATABLE_RUN_FIELDS",
    "Batch",
    "Blob",
    "BranchRecord",
    "EffectRecord",
    "EventRecord",
    "Keyframe",
    "LLMCallRecord",
    "RunMeta",
    "RunRecord",
    "RunStore",
    "RunTakenOver",
    "Segment",
    "StateSpan",
    "StoreError",
]

RUN_STATUSES = frozenset({"running", "finished", "failed", "interrupted"})
TERMINAL_STATUSES = frozenset({"finished", "failed", "interrupted"})
EVENT_KINDS = frozenset(
    {"llm", "tool", "checkpoint", "restore", "interrupt", "error", "debugger", "effect", "branch"}
)
EFFECT_STATUSES = frozenset({"applied", "failed"})
MAX_STEP = 2**62  # "no upper bound" in step ranges; fits a SQLite INTEGER
LEASE_LEFT = "lease_left"  # in a run's holder (`claim_run`): seconds left of its lease

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


class RunTakenOver(StoreError):
    """A write refused: the run it belongs to was taken over by another process while this
    one held a claim on it (see `RunStore.claim_run`)."""

    exit_code = 75  # EX_TEMPFAIL, like RunBusy: the run goes on in the other process

    def __init__(self, where: str, run_id: str, holder: dict[str, Any] | None) -> None:
        now = (
            "no process holds it now"
            if holder is None
            else f"pid {holder.get('pid')} on {holder.get('host')} holds it now"
        )
        super().__init__(
            f"run store {where}: run {run_id} was taken over by another process while this one "
            f"could not renew its lease ({now}): this process's writes are refused"
        )
        self.run_id = run_id


# --- records -------------------------------------------------------------------------------


class RunMeta(Frozen):
    """What is known about a run when it starts; `create_run` gives it an id and timestamps.
    `args`, `config` and `meta` are a new empty dict each when not given (or None)."""

    __slots__ = ("source_path", "source_sha256", "node", "args", "config", "meta", "status")

    source_path: str
    source_sha256: str
    node: str
    args: Any
    config: dict[str, Any]
    meta: dict[str, Any]
    status: str

    def __init__(
        self,
        source_path: str,
        source_sha256: str,
        node: str = "main",
        args: Any = None,
        config: dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
        status: str = "running",
    ) -> None:
        set_field(self, "source_path", source_path)
        set_field(self, "source_sha256", source_sha256)
        set_field(self, "node", node)
        set_field(self, "args", {} if args is None else args)
        set_field(self, "config", {} if config is None else config)
        set_field(self, "meta", {} if meta is None else meta)
        set_field(self, "status", status)


class RunRecord(Frozen):
    """One stored run. `step_count` is branch 0's (highest recorded step + 1)."""

    __slots__ = (
        "id",
        "source_path",
        "source_sha256",
        "node",
        "args",
        "config",
        "status",
        "created_at",
        "updated_at",
        "finished_at",
        "step_count",
        "result",
        "error",
        "meta",
    )

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

    def __init__(
        self,
        id: str,
        source_path: str,
        source_sha256: str,
        node: str,
        args: Any,
        config: dict[str, Any],
        status: str,
        created_at: datetime,
        updated_at: datetime,
        finished_at: datetime | None,
        step_count: int,
        result: Any,
        error: str | None,
        meta: dict[str, Any],
    ) -> None:
        set_field(self, "id", id)
        set_field(self, "source_path", source_path)
        set_field(self, "source_sha256", source_sha256)
        set_field(self, "node", node)
        set_field(self, "args", args)
        set_field(self, "config", config)
        set_field(self, "status", status)
        set_field(self, "created_at", created_at)
        set_field(self, "updated_at", updated_at)
        set_field(self, "finished_at", finished_at)
        set_field(self, "step_count", step_count)
        set_field(self, "result", result)
        set_field(self, "error", error)
        set_field(self, "meta", meta)


class BranchRecord(Frozen):
    """One branch of a run. Branch 0 has no parent and no fork step.

    `length` is the branch's step count along its lineage (highest recorded step + 1, and at
    least `fork_step + 1` for a fork).
    """

    __slots__ = ("run_id", "branch", "parent_branch", "fork_step", "edits", "created_at", "length")

    run_id: str
    branch: int
    parent_branch: int | None
    fork_step: int | None
    edits: dict[str, Any]
    created_at: datetime
    length: int

    def __init__(
        self,
        run_id: str,
        branch: int,
        parent_branch: int | None,
        fork_step: int | None,
        edits: dict[str, Any],
        created_at: datetime,
        length: int,
    ) -> None:
        set_field(self, "run_id", run_id)
        set_field(self, "branch", branch)
        set_field(self, "parent_branch", parent_branch)
        set_field(self, "fork_step", fork_step)
        set_field(self, "edits", edits)
        set_field(self, "created_at", created_at)
        set_field(self, "length", length)


class EventRecord(Frozen):
    """A timeline marker; `branch` is the branch that recorded it (a lineage may mix several)."""

    __slots__ = ("run_id", "branch", "step", "kind", "summary", "data")

    run_id: str
    branch: int
    step: int
    kind: str
    summary: str
    data: dict[str, Any]

    def __init__(
        self, run_id: str, branch: int, step: int, kind: str, summary: str, data: dict[str, Any]
    ) -> None:
        set_field(self, "run_id", run_id)
        set_field(self, "branch", branch)
        set_field(self, "step", step)
        set_field(self, "kind", kind)
        set_field(self, "summary", summary)
        set_field(self, "data", data)


class LLMCallRecord(Frozen):
    """One model call: the request as sent, the answer as received, usage and timing."""

    __slots__ = (
        "run_id",
        "branch",
        "step",
        "provider",
        "model",
        "request",
        "response",
        "input_tokens",
        "output_tokens",
        "cost",
        "latency_ms",
        "created_at",
    )

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

    def __init__(
        self,
        run_id: str,
        branch: int,
        step: int,
        provider: str,
        model: str,
        request: Any,
        response: Any,
        input_tokens: int,
        output_tokens: int,
        cost: float,
        latency_ms: float,
        created_at: datetime,
    ) -> None:
        set_field(self, "run_id", run_id)
        set_field(self, "branch", branch)
        set_field(self, "step", step)
        set_field(self, "provider", provider)
        set_field(self, "model", model)
        set_field(self, "request", request)
        set_field(self, "response", response)
        set_field(self, "input_tokens", input_tokens)
        set_field(self, "output_tokens", output_tokens)
        set_field(self, "cost", cost)
        set_field(self, "latency_ms", latency_ms)
        set_field(self, "created_at", created_at)


class EffectRecord(Frozen):
    """One entry of the effect journal, keyed `run:branch:step:call`."""

    __slots__ = (
        "key",
        "run_id",
        "branch",
        "step",
        "kind",
        "status",
        "args",
        "result",
        "created_at",
    )

    key: str
    run_id: str
    branch: int
    step: int
    kind: str
    status: str
    args: Any
    result: Any
    created_at: datetime

    def __init__(
        self,
        key: str,
        run_id: str,
        branch: int,
        step: int,
        kind: str,
        status: str,
        args: Any,
        result: Any,
        created_at: datetime,
    ) -> None:
        set_field(self, "key", key)
        set_field(self, "run_id", run_id)
        set_field(self, "branch", branch)
        set_field(self, "step", step)
        set_field(self, "kind", kind)
        set_field(self, "status", status)
        set_field(self, "args", args)
        set_field(self, "result", result)
        set_field(self, "created_at", created_at)


Blob = bytes | bytearray | memoryview  # what the store accepts; it always gives back bytes


class Batch(NamedTuple):
    """An encoded batch of consecutive steps `first_step..last_step` recorded on `branch`."""

    branch: int
    first_step: int
    last_step: int
    blob: bytes


class Keyframe(NamedTuple):
    """An encoded full state at `step`, recorded on `branch`. `base` is the full keyframe an
    incremental one builds on, where the store keeps it (`put_keyframe`; a copy carries it)."""

    branch: int
    step: int
    blob: bytes
    base: int | None = None


class StateSpan(Frozen):
    """What rebuilding the state at a step reads, in one go (`RunStore.state_span`)."""

    __slots__ = ("keyframe", "base", "batches", "later_keyframes")

    keyframe: Keyframe | None  # the latest at or before the step
    base: Keyframe | None  # the full keyframe an incremental `keyframe` is based on, if known
    batches: list[Batch]  # covering the keyframe's next step (or the step) up to `batches_to`
    later_keyframes: list[int]  # keyframe steps after the step, up to `keyframes_to`

    def __init__(
        self,
        keyframe: Keyframe | None,
        base: Keyframe | None,
        batches: list[Batch],
        later_keyframes: list[int],
    ) -> None:
        set_field(self, "keyframe", keyframe)
        set_field(self, "base", base)
        set_field(self, "batches", batches)
        set_field(self, "later_keyframes", later_keyframes)


class Segment(Frozen):
    """The part of a lineage one branch supplies: steps `lo..hi` (both inclusive)."""

    __slots__ = ("branch", "lo", "hi")

    branch: int
    lo: int
    hi: int

    def __init__(self, branch: int, lo: int, hi: int) -> None:
        set_field(self, "branch", branch)
        set_field(self, "lo", lo)
        set_field(self, "hi", hi)


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

    def put_run(self, record: RunRecord) -> None:
        """Store a run's row exactly as `record` gives it (id, timestamps, status, step count),
        for a copy from another store (`copy.copy_run`): a new run gets branch 0, a run already
        here gets its row overwritten (what was recorded for it stays). Durable on return."""
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

    def prune(
        self,
        older_than: timedelta | None,
        keep: Collection[str] = (),
        keep_failed: bool = False,
        *,
        keep_latest: int | None = None,
        max_bytes: int | None = None,
    ) -> int:
        """Delete runs not updated for `older_than`, except the runs in `keep`, runs a process
        holds (`claim_run`; not once the claim's lease has expired) and, with `keep_failed`, failed runs; return how many went. One
        transaction: a run is either deleted whole or left whole. With `keep_latest`, also
        every run but the `keep_latest` most recently updated; with `max_bytes`, also the
        oldest runs until what the rest record fits in `max_bytes` (see `choose_prunable`).

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

    def put_keyframe(
        self, run_id: str, branch: int, step: int, blob: Blob, base: int | None = None
    ) -> None:
        """Store the encoded full state at `step` of `branch` (replacing one already there).
        `base`: the step of the full keyframe an incremental one builds on (`state_span` then
        reads both at once)."""
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

    def state_span(
        self, run_id: str, branch: int, step: int, batches_to: int, keyframes_to: int
    ) -> StateSpan:
        """What rebuilding the state at `step` needs, in one read where the store can (one
        round trip to a server): the latest keyframe at or before `step` (and the full one it
        is based on, when it was stored with a `base`), the batches covering from the step
        after that keyframe (or `step`, if it is the keyframe's) to `batches_to`, and the
        steps of the keyframes in `step+1..keyframes_to` (as `keyframe_steps`)."""
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

    def last_llm_call(self, run_id: str, branch: int, step: int) -> LLMCallRecord | None:
        """The last model call at or before `step` along one branch's lineage (the latest
        recorded of a step that made several), or None. Reads that one call only, whatever
        the run's length."""
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
        lease: float | None = None,
    ) -> dict[str, Any] | None:
        """Make `owner` (a process: pid, host, start time) the one that continues `run_id`.

        Compare-and-set in one transaction: with no owner, or `owner` itself, or an owner for
        which `may_take(holder)` is true (a dead process, an expired lease), the claim is taken
        and None is returned; otherwise nothing changes and the holder is returned. Durable on
        return. An unknown run raises `StoreError`.

        `lease` (seconds) gives the claim a lease that ends that long from now by the store's
        clock, kept alive by `renew_lease`. The holder `may_take` sees and the one returned
        carry `LEASE_LEFT`: the seconds left of its lease (0 or less once it has expired),
        when it has a lease.

        A SQL store fences its claims: once another process has taken the run over, every
        later write through the store that claimed it is refused (`RunTakenOver`, a
        `StoreError`) until that claim is released.
        """
        ...

    def renew_lease(self, run_id: str, owner: dict[str, Any], lease: float) -> bool:
        """Extend `owner`'s lease on `run_id` to `lease` seconds from now; False (and nothing
        changes) when `owner` no longer holds the run (it was taken over or released). Durable
        on return. Unlike other calls it never raises what another write failed to do."""
        ...

    def release_run(self, run_id: str, owner: dict[str, Any]) -> None:
        """Give up `owner`'s claim on `run_id` (nothing if another owner holds it now, or the
        run is gone). Durable on return."""
        ...

    def run_owner(self, run_id: str, lease: bool = False) -> dict[str, Any] | None:
        """The process that holds `run_id` (see `claim_run`), None if none does; with `lease`,
        carrying `LEASE_LEFT` when its claim has a lease."""
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


def choose_prunable(
    runs: list[tuple[str, str, str, int]],
    cutoff: str | None,
    spared: Collection[str],
    keep_failed: bool,
    keep_latest: int | None,
    max_bytes: int | None,
) -> list[str]:
    """The retention policy every store applies inside its prune transaction. `runs` are
    (id, updated_at, status, bytes recorded) of every run in the store; `spared` the runs that
    must stay (held by a process, or named by the caller); `cutoff` a timestamp: a run updated
    before it goes. A run goes when it is not spared (nor failed, with `keep_failed`) and
    any rule given says so: older than the cutoff, outside the `keep_latest` most recently
    updated, or among the oldest while the store holds more than `max_bytes`."""
    newest_first = sorted(runs, key=lambda r: r[1], reverse=True)
    deletable = {
        r[0] for r in runs if r[0] not in spared and not (keep_failed and r[2] == "failed")
    }
    doomed: set[str] = set()
    if cutoff is not None:
        doomed |= {r[0] for r in runs if r[1] < cutoff and r[0] in deletable}
    if keep_latest is not None:
        doomed |= {r[0] for r in newest_first[max(keep_latest, 0) :] if r[0] in deletable}
    if max_bytes is not None:
        total = sum(r[3] for r in runs if r[0] not in doomed)
        for run_id, _, _, size in reversed(newest_first):  # oldest first
            if total <= max_bytes:
                break
            if run_id in deletable and run_id not in doomed:
                doomed.add(run_id)
                total -= size
    return [r[0] for r in runs if r[0] in doomed]
