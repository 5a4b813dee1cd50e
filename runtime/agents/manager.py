"""Provides `CheckpointManager`: a Python agent's state saved after every tool roundtrip, listed,
rolled back, pruned and resumed, over a run store.

    from runtime import CheckpointManager

    manager = CheckpointManager()                       # MemoryStorage; SqliteStorage(path) …
    cp = manager.save(run_id="run-1", roundtrip=1, messages=messages,
                      token_usage={"input_tokens": 120, "output_tokens": 30},
                      session_state={"topic": "dice"}, agent="helper")
    manager.list("run-1")                               # its checkpoints, oldest first
    manager.rollback(cp)                                # the run goes on from there
    manager.prune(older_than_ms=7 * 24 * 3600 * 1000)

A run is a run of the store: one step per roundtrip (see `storage.py`), so the CLI and the
debugger read it. Checkpoint ids are `RUN.BRANCH.STEP`, stable for the life of the run.

Rolling back does not destroy the checkpoints after the one rolled back to: the run's current
line forks there (a new branch of the run; `meta["head"]` names it) and the later checkpoints stay
on the branch they were on, as a kept branch that `get` still finds and the debugger shows.
`rollback(id, discard=True)` deletes them instead. Rolling back is a compare-and-set: a
checkpoint that is already the latest of the current line, or not on it, is a conflict
(`CheckpointConflict`), so of two concurrent rollbacks of one run exactly one wins.
"""

from __future__ import annotations

import asyncio
import builtins
import hashlib
import json
import operator
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from runtime.agents.storage import (
    AGENT_KIND,
    SESSION_OID,
    THREAD,
    Storage,
    as_storage,
    initial_state,
    keyframe_blob,
    keyframe_due,
    message_writes,
    session_writes,
    step_blob,
    usage_triple,
    usage_writes,
)
from runtime.errors import AgencyError
from runtime.record.store import RunMeta, RunRecord, StoreError
from runtime.record.timeline import Timeline
from runtime.runs.processes import Claim, RunBusy, claim_run, process_alive, process_meta

__all__ = [
    "AgentCheckpoint",
    "CheckpointConflict",
    "CheckpointError",
    "CheckpointManager",
    "CheckpointNotFound",
    "Resumed",
]

_HERE = str(Path(__file__).resolve().parent)


class CheckpointError(AgencyError):
    """A checkpoint request that cannot be done (the message says why)."""

    exit_code = 2


class CheckpointNotFound(CheckpointError):
    """No checkpoint (or run) with this id."""


class CheckpointConflict(CheckpointError):
    """A rollback that lost: the checkpoint is no longer where the caller thought (already the
    latest, on a kept branch), or another process is recording the run."""

    exit_code = 75


@dataclass
class AgentCheckpoint:
    """One saved roundtrip. `messages` and `session_state` are read from the store when first
    asked for (a list of checkpoints costs no history)."""

    id: str
    run_id: str
    agent: str
    roundtrip: int
    timestamp: int  # milliseconds since 1970
    token_usage: dict[str, Any]
    branch: int
    step: int
    message_count: int
    location: str | None = None
    _load: Callable[[], dict[str, Any]] | None = field(default=None, repr=False, compare=False)
    _state: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    def _payload(self) -> dict[str, Any]:
        if self._state is None:
            self._state = self._load() if self._load is not None else {}
        return self._state

    @property
    def messages(self) -> list[Any]:
        return list(self._payload().get("messages") or [])

    @property
    def session_state(self) -> dict[str, Any]:
        return dict(self._payload().get("session_state") or {})

    def to_dict(self, payload: bool = True) -> dict[str, Any]:
        """The checkpoint as JSON-ready data (`runId`, `roundtrip`, … as the REST API gives
        them); without `payload`, no messages or session state."""
        out: dict[str, Any] = {
            "id": self.id,
            "runId": self.run_id,
            "agent": self.agent,
            "roundtrip": self.roundtrip,
            "timestamp": self.timestamp,
            "tokenUsage": self.token_usage,
            "branch": self.branch,
            "step": self.step,
            "messageCount": self.message_count,
            "location": self.location,
        }
        if payload:
            out["messages"] = self.messages
            out["sessionState"] = self.session_state
        return out


@dataclass(frozen=True)
class Resumed:
    """Where a run goes on from: its latest checkpoint's messages, usage and session state
    (empty when the run has none yet)."""

    run_id: str
    checkpoint: AgentCheckpoint | None
    messages: list[Any]
    token_usage: dict[str, Any]
    session_state: dict[str, Any]
    roundtrip: int


@dataclass
class _Line:
    """What the manager knows of a run it records: its current branch, the state after its
    latest checkpoint (to write the next one as a delta) and this process's claim on it."""

    run_id: str
    agent: str
    branch: int
    next_step: int
    roundtrip: int = 0
    messages: list[Any] = field(default_factory=list)
    sources: list[Any] = field(default_factory=list)  # the caller's message objects
    session: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict)
    since_keyframe: int = 0
    keyframe_size: int = 0
    locations: dict[tuple[str, int], int] = field(default_factory=dict)
    table: list[list[Any]] = field(default_factory=list)
    claim: Claim | None = None


class CheckpointManager:
    """Saves, lists, rolls back, prunes and resumes Python agents' checkpoints in `storage`
    (a `Storage`, a run store, a SQLite path; default: in memory). Thread-safe."""

    def __init__(self, storage: Storage | Any | None = None, *, agent: str = "agent") -> None:
        self.storage = as_storage(storage)
        self.store = self.storage.store
        self.agent = agent
        self._lock = threading.RLock()
        self._lines: dict[str, _Line] = {}
        self._names: dict[str, str] = {}
        self._current: str | None = None

    def __enter__(self) -> CheckpointManager:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- runs -------------------------------------------------------------------------------

    def start_run(
        self, *, agent: str | None = None, name: str | None = None, source: str | None = None
    ) -> str:
        """A new run of this manager's agent (or `agent`); later `save`s without a `run_id`
        go to it. `name` is a run id of your own (`run_id=` finds the run by it)."""
        with self._lock:
            path = source or caller_location()[0]
            meta: dict[str, Any] = {
                "kind": AGENT_KIND,
                "agent": agent or self.agent,
                "name": name,
                "head": 0,
                "locations": [],
                "process": process_meta(),
                "cwd": os.getcwd(),
            }
            run_id = self.store.create_run(
                RunMeta(
                    source_path=path,
                    source_sha256=_sha256(path),
                    node=agent or self.agent,
                    config={"agent": agent or self.agent},
                    meta=meta,
                )
            )
            line = _Line(run_id, agent or self.agent, 0, 0)
            line.claim = self._claim(run_id, "record")
            self._lines[run_id] = line
            if name is not None:
                self._names[name] = run_id
            self._current = run_id
            return run_id

    def finish(
        self, run_id: str | None = None, *, status: str = "finished", error: str | None = None
    ) -> None:
        """Mark a run finished (or "failed", "interrupted") and give up this process's claim."""
        with self._lock:
            rid = self._resolve(run_id) if run_id is not None else self._current
            if rid is None:
                return
            self.store.update_run(rid, status=status, error=error)
            self.store.flush()
            line = self._lines.pop(rid, None)
            if line is not None and line.claim is not None:
                line.claim.release()

    def close(self) -> None:
        """Give up every claim this manager holds and close the storage it opened."""
        with self._lock:
            for line in self._lines.values():
                if line.claim is not None:
                    line.claim.release()
            self._lines.clear()
            self.storage.close()

    def runs(self, agent: str | None = None, limit: int = 50) -> list[RunRecord]:
        """The most recent Python-agent runs (of `agent` when given), newest first."""
        out = []
        for r in self.store.list_runs(max(limit, 0) * 4 + 50):
            meta = r.meta or {}
            if meta.get("kind") == AGENT_KIND and agent in (None, meta.get("agent")):
                out.append(r)
        return out[:limit]

    # -- saving -----------------------------------------------------------------------------

    def save(
        self,
        *,
        run_id: str | None = None,
        roundtrip: int | None = None,
        messages: Sequence[Any] = (),
        token_usage: dict[str, Any] | None = None,
        session_state: dict[str, Any] | None = None,
        agent: str | None = None,
        location: tuple[str, int] | None = None,
    ) -> str:
        """Save the agent's state after a roundtrip and return the checkpoint's id.

        Only what changed since the run's previous checkpoint is written: the messages
        appended (the whole list once, when an earlier message was changed or dropped), the
        session-state keys that changed, the usage. `run_id` is a run id or a name of your own
        (a new run is started for a name not seen yet); default: the manager's current run."""
        loc = location or caller_location()
        with self._lock:
            line = self._line_for_save(run_id, agent, loc[0])
            msgs, prefix, sources = _messages(line, messages)
            session = _plain(dict(session_state or {}), "session state")
            usage = _plain(dict(token_usage or {}), "token usage")
            rt = int(roundtrip) if roundtrip is not None else line.roundtrip + 1
            writes = message_writes(line.messages, msgs, prefix)
            writes += session_writes(line.session, session)
            writes += usage_writes(rt, usage)
            step, branch, run = line.next_step, line.branch, line.run_id
            loc_id = self._location_id(line, loc)
            blob = step_blob(step, writes, loc_id)
            self.store.append_batch(run, branch, step, step, blob)
            cp_id = f"{run}.{branch}.{step}"
            data = {
                "roundtrip": rt,
                "timestamp": int(time.time() * 1000),
                "token_usage": usage,
                "messages": len(msgs),
                "loc": loc_id,
            }
            self.store.add_event(run, branch, step, "checkpoint", f"roundtrip {rt}", data)
            for name in _tool_names(msgs[prefix:] if prefix == len(line.messages) else []):
                self.store.add_event(run, branch, step, "tool", name, {"name": name})
            line.messages, line.sources, line.session, line.usage = msgs, sources, session, usage
            line.roundtrip, line.next_step = rt, step + 1
            line.since_keyframe += len(blob)
            if step == 0 or keyframe_due(line.since_keyframe, line.keyframe_size):
                kf = keyframe_blob(_state_of(line, loc[1]))
                self.store.put_keyframe(run, branch, step, kf)
                line.since_keyframe, line.keyframe_size = 0, len(kf)
            return cp_id

    def _line_for_save(self, run_id: str | None, agent: str | None, source: str) -> _Line:
        if run_id is None:
            if self._current is None or self._current not in self._lines:
                self.start_run(agent=agent, source=source)
            assert self._current is not None
            return self._lines[self._current]
        rid = self._names.get(run_id, run_id)
        if rid in self._lines:
            return self._lines[rid]
        found = self.find_run(run_id)
        if found is None:
            self.start_run(agent=agent, name=run_id, source=source)
            return self._lines[self._names[run_id]]
        self._current = found.id
        return self._load_line(found)

    def _load_line(self, run: RunRecord) -> _Line:
        """The run's current line, read back from the store (another process recorded it, or
        a rollback moved it), claimed by this process."""
        meta = dict(run.meta or {})
        head = int(meta.get("head") or 0)
        line = _Line(run.id, str(meta.get("agent") or run.node), head, 0)
        line.claim = self._claim(run.id, "record")
        line.next_step = self.store.step_count(run.id, head)
        line.table = [list(row) for row in meta.get("locations") or []]
        line.locations = {(row[0], row[3]): i for i, row in enumerate(line.table)}
        if line.next_step:
            state = _read_state(self.store, run.id, head, line.next_step - 1)
            line.messages = state["messages"]
            line.sources = list(line.messages)
            line.session = state["session_state"]
            line.usage = state["token_usage"]
            line.roundtrip = state["roundtrip"]
        if run.status != "running" or meta.get("process") != process_meta():
            meta["process"] = process_meta()
            self.store.update_run(run.id, status="running", error=None, meta=meta)
        self._lines[run.id] = line
        return line

    def _location_id(self, line: _Line, loc: tuple[str, int]) -> int:
        at = line.locations.get(loc)
        if at is None:
            at = line.locations[loc] = len(line.table)
            line.table.append([loc[0], line.agent, "", loc[1], 1, loc[1], 1])
            run = self.store.get_run(line.run_id)
            meta = dict(run.meta if run is not None else {})
            meta["locations"] = line.table
            self.store.update_run(line.run_id, meta=meta)
        return at

    def _claim(self, run_id: str, doing: str) -> Claim:
        try:
            return claim_run(self.store, run_id, doing=doing)
        except RunBusy as e:
            raise CheckpointConflict(str(e)) from None

    def position(self, run_id: str) -> tuple[str, int, int]:
        """(run id, branch, step) the run's next checkpoint will have: where what happens
        during the roundtrip in progress (model calls, effects) is recorded."""
        with self._lock:
            rid = self._names.get(run_id, run_id)
            line = self._lines.get(rid)
            if line is None:
                run = self.find_run(run_id)
                if run is None:
                    raise CheckpointNotFound(f"no run {run_id!r}")
                line = self._lines.get(run.id) or self._load_line(run)
            return line.run_id, line.branch, line.next_step

    # -- reading ----------------------------------------------------------------------------

    def find_run(self, ref: str) -> RunRecord | None:
        """A run by name (`save(run_id=…)` of your own), id, or unique id prefix."""
        rid = self._names.get(ref)
        if rid is not None:
            return self.store.get_run(rid)
        try:
            run = self.store.get_run(ref)
        except StoreError:
            run = None
        if run is not None and run.id == ref:
            return run
        for r in self.store.list_runs(100_000):
            if (r.meta or {}).get("kind") == AGENT_KIND and (r.meta or {}).get("name") == ref:
                self._names[ref] = r.id
                return r
        return run

    def _resolve(self, ref: str) -> str:
        run = self.find_run(ref)
        if run is None:
            raise CheckpointNotFound(f"no run {ref!r}")
        return run.id

    def list(self, run_id: str) -> list[AgentCheckpoint]:
        """The checkpoints of the run's current line, oldest first (kept branches are not
        listed; `branches` and `get` reach them)."""
        with self._lock:
            run = self.find_run(run_id)
            if run is None:
                raise CheckpointNotFound(f"no run {run_id!r}")
            if (run.meta or {}).get("kind") != AGENT_KIND:
                raise CheckpointNotFound(f"run {run.id} is not a Python agent's run")
            head = int((run.meta or {}).get("head") or 0)
            events = self.store.events(run.id, head, "checkpoint")
            return [self._checkpoint(run, e.branch, e.step, e.data) for e in events]

    def get(self, checkpoint_id: str) -> AgentCheckpoint | None:
        """The checkpoint with this id (on the current line or a kept branch), None if none."""
        with self._lock:
            parsed = parse_id(checkpoint_id)
            if parsed is None:
                return None
            run_id, branch, step = parsed
            try:
                run = self.store.get_run(run_id)
                if run is None or run.id != run_id or (run.meta or {}).get("kind") != AGENT_KIND:
                    return None
                events = self.store.events(run_id, branch, "checkpoint", step, step)
            except StoreError:
                return None
            for e in events:
                if e.branch == branch and checkpoint_id == f"{run_id}.{branch}.{step}":
                    return self._checkpoint(run, branch, step, e.data)
            return None

    def at(self, run_id: str, step: int, branch: int | None = None) -> AgentCheckpoint | None:
        """The checkpoint at `step` of the run's `branch` (default: its current line), None
        when there is none there."""
        with self._lock:
            run = self.find_run(run_id)
            if run is None:
                raise CheckpointNotFound(f"no run {run_id!r}")
            if branch is None:
                branch = int((run.meta or {}).get("head") or 0)
            for e in self.store.events(run.id, branch, "checkpoint", step, step):
                return self._checkpoint(run, e.branch, e.step, e.data)
            return None

    def _checkpoint(
        self, run: RunRecord, branch: int, step: int, data: dict[str, Any]
    ) -> AgentCheckpoint:
        store = self.store
        table = (run.meta or {}).get("locations") or []
        loc = data.get("loc")
        where = table[loc] if isinstance(loc, int) and 0 <= loc < len(table) else None
        return AgentCheckpoint(
            id=f"{run.id}.{branch}.{step}",
            run_id=run.id,
            agent=str((run.meta or {}).get("agent") or run.node),
            roundtrip=int(data.get("roundtrip") or 0),
            timestamp=int(data.get("timestamp") or 0),
            token_usage=dict(data.get("token_usage") or {}),
            branch=branch,
            step=step,
            message_count=int(data.get("messages") or 0),
            location=f"{where[0]}:{where[3]}" if where else None,
            _load=lambda: _read_state(store, run.id, branch, step),
        )

    def resume(self, run_id: str) -> Resumed:
        """Where the run goes on from (its latest checkpoint on the current line), claimed by
        this process: the next `save(run_id=…)` continues the run."""
        with self._lock:
            run = self.find_run(run_id)
            if run is None:
                raise CheckpointNotFound(f"no run {run_id!r}")
            line = self._lines.get(run.id) or self._load_line(run)
            self._current = run.id
            cps = self.list(run.id)
            return Resumed(
                run.id,
                cps[-1] if cps else None,
                list(line.messages),
                dict(line.usage),
                dict(line.session),
                line.roundtrip,
            )

    # -- rolling back and pruning -----------------------------------------------------------

    def rollback(self, checkpoint_id: str, *, discard: bool = False) -> AgentCheckpoint:
        """Make `checkpoint_id` the latest checkpoint of its run and return it.

        The checkpoints after it are kept, on the branch they were on (the run's current line
        forks at the checkpoint); with `discard` they are deleted. Raises `CheckpointNotFound`
        for an unknown id and `CheckpointConflict` when the checkpoint is already the latest,
        is not on the run's current line, or another process records the run."""
        with self._lock:
            cp = self.get(checkpoint_id)
            if cp is None:
                raise CheckpointNotFound(f"no checkpoint {checkpoint_id!r}")
            with self._claim(cp.run_id, "roll back"):
                run = self.store.get_run(cp.run_id)
                assert run is not None
                meta = dict(run.meta or {})
                head = int(meta.get("head") or 0)
                segs = self.store.lineage(run.id, head)
                if not any(s.branch == cp.branch and s.lo <= cp.step <= s.hi for s in segs):
                    raise CheckpointConflict(
                        f"checkpoint {cp.id} is not on run {run.id}'s current line "
                        f"(it is on kept branch {cp.branch})"
                    )
                if self.store.step_count(run.id, head) == cp.step + 1:
                    raise CheckpointConflict(
                        f"checkpoint {cp.id} is already the latest of run {run.id}: "
                        "nothing to roll back"
                    )
                new = self.store.create_branch(
                    run.id, head, cp.step, {"rollback": cp.id, "discard": discard}
                )
                self.store.add_event(
                    run.id,
                    new,
                    cp.step,
                    "branch",
                    f"rolled back to roundtrip {cp.roundtrip}",
                    {"checkpoint": cp.id, "kept": None if discard else head},
                )
                if discard:
                    self._discard(run.id, segs, cp.step)
                meta["head"] = new
                self.store.update_run(run.id, meta=meta)
                self.store.flush()
                line = self._lines.pop(run.id, None)
                if line is not None and line.claim is not None:
                    line.claim.release()
                    if self._current == run.id:
                        self._load_line(self.store.get_run(run.id) or run)
            return self.get(checkpoint_id) or cp

    def _discard(self, run_id: str, segs: Sequence[Any], step: int) -> None:
        """Delete what the old line recorded after `step`, and every branch grown from it."""
        doomed = {s.branch: max(step + 1, s.lo) for s in segs if s.hi > step}
        branches = self.store.branches(run_id)
        grown = True
        while grown:
            grown = False
            for b in branches:
                if b.branch in doomed or b.parent_branch is None or b.fork_step is None:
                    continue
                first = doomed.get(b.parent_branch)
                if first is not None and b.fork_step >= first:
                    doomed[b.branch] = b.fork_step
                    grown = True
        for branch, first in doomed.items():
            self.store.truncate_after(run_id, branch, first - 1)

    def prune(self, older_than_ms: int) -> int:
        """Delete the Python-agent runs whose latest checkpoint is older than `older_than_ms`
        and return how many checkpoints went. A run is one timeline, so it goes whole; runs
        another live process records are kept."""
        with self._lock:
            cutoff = datetime.now(UTC) - timedelta(milliseconds=older_than_ms)
            gone = 0
            for run in self.runs(limit=100_000):
                if run.updated_at >= cutoff:
                    continue
                owner = self.store.run_owner(run.id)
                if owner is not None and owner.get("pid") != os.getpid():
                    if process_alive(owner) is not False:
                        continue
                gone += sum(
                    1
                    for b in self.store.branches(run.id)
                    for e in self.store.events(run.id, b.branch, "checkpoint")
                    if e.branch == b.branch
                )
                line = self._lines.pop(run.id, None)
                if line is not None and line.claim is not None:
                    line.claim.release()
                self.store.delete_run(run.id)
                self._names = {k: v for k, v in self._names.items() if v != run.id}
            return gone

    # -- async twins ------------------------------------------------------------------------

    async def asave(self, **kwargs: Any) -> str:
        kwargs.setdefault("location", caller_location())
        return await asyncio.to_thread(lambda: self.save(**kwargs))

    async def alist(self, run_id: str) -> builtins.list[AgentCheckpoint]:
        return await asyncio.to_thread(self.list, run_id)

    async def aget(self, checkpoint_id: str) -> AgentCheckpoint | None:
        return await asyncio.to_thread(self.get, checkpoint_id)

    async def arollback(self, checkpoint_id: str, *, discard: bool = False) -> AgentCheckpoint:
        return await asyncio.to_thread(lambda: self.rollback(checkpoint_id, discard=discard))

    async def aprune(self, older_than_ms: int) -> int:
        return await asyncio.to_thread(self.prune, older_than_ms)

    async def aresume(self, run_id: str) -> Resumed:
        return await asyncio.to_thread(self.resume, run_id)


# -- helpers ----------------------------------------------------------------------------------


def parse_id(checkpoint_id: str) -> tuple[str, int, int] | None:
    """(run id, branch, step) of a checkpoint id `RUN.BRANCH.STEP`, None if it is not one."""
    parts = str(checkpoint_id).rsplit(".", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    return parts[0], int(parts[1]), int(parts[2])


def caller_location() -> tuple[str, int]:
    """(file, line) of the innermost caller outside this package: the agent's own code."""
    f = sys._getframe(1)
    while f is not None:
        name = f.f_code.co_filename
        if not name.startswith(_HERE) and not name.startswith("<frozen"):
            return name, f.f_lineno
        f = f.f_back  # type: ignore[assignment]
    return "<python>", 0


def _sha256(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""


def _plain(value: Any, what: str) -> Any:
    """`value` as JSON-like data (SDK objects by their `model_dump`), a copy of it."""
    try:
        return copy_json(value)
    except (_NotJson, RecursionError):  # the round trip says why a cycle is no JSON
        pass
    try:
        return json.loads(json.dumps(value, default=_dump))
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"the {what} cannot be saved as JSON: {e}") from None


class _NotJson(Exception):
    """`copy_json` met something only the JSON round trip can turn into data."""


def copy_json(value: Any) -> Any:
    """A copy of `value` when it is JSON data already (dicts with string keys, lists, tuples,
    strings, numbers, booleans, None), as `json.loads(json.dumps(value))` would give it but
    ten times faster; raises `_NotJson` on anything else (an SDK object, a non-string key)."""
    t = type(value)
    if t is str or t is int or t is float or t is bool or value is None:
        return value
    if t is dict:
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise _NotJson
            tv = type(v)
            plain = tv is str or tv is int or tv is float or tv is bool or v is None
            out[k] = v if plain else copy_json(v)
        return out
    if t is list or t is tuple:
        return [v if type(v) in _ATOMS else copy_json(v) for v in value]
    raise _NotJson


_ATOMS = frozenset((str, int, float, bool, type(None)))


def _dump(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(exclude_none=True)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    raise TypeError(f"{type(value).__name__} is not JSON data")


def _messages(line: _Line, messages: Sequence[Any]) -> tuple[list[Any], int, list[Any]]:
    """(the messages as plain data, how many lead ones are the previous checkpoint's, the
    caller's objects). The messages the previous checkpoint saved, still the same objects at
    the same places, are not looked at again (one pointer comparison each, in C), so a
    roundtrip costs what it added; a message replaced or dropped makes the whole list be
    compared by value. A message is taken as unchanged while it is the same object: change one
    by replacing it, not in place."""
    src = list(messages)
    old, old_src = line.messages, line.sources
    if len(src) >= len(old_src) and src[: len(old_src)] == old_src:  # by identity, mostly
        return old + [_plain(m, "message") for m in src[len(old) :]], len(old), src
    out = [_plain(m, "message") for m in src]
    k = 0
    lim = min(len(out), len(old))
    while k < lim and out[k] == old[k]:
        k += 1
    return out, k, src


def shared_prefix(saved: Sequence[Any], messages: Sequence[Any]) -> int:
    """How many lead `messages` are, object for object, `saved`."""
    if len(messages) >= len(saved) and all(map(operator.is_, messages, saved)):
        return len(saved)
    k = 0
    for a, b in zip(messages, saved):
        if a is not b:
            break
        k += 1
    return k


def _tool_names(messages: Sequence[Any]) -> list[str]:
    """The tools called in `messages` (OpenAI's `tool_calls`, Anthropic's `tool_use` blocks)."""
    names = []
    for m in messages:
        if not isinstance(m, dict):
            continue
        for call in m.get("tool_calls") or ():
            if isinstance(call, dict):
                fn = call.get("function")
                names.append(
                    str((fn or {}).get("name") if isinstance(fn, dict) else call.get("name"))
                )
        content = m.get("content")
        if isinstance(content, list):
            names.extend(
                str(b.get("name"))
                for b in content
                if isinstance(b, dict) and b.get("type") == "tool_use"
            )
    return names


def _state_of(line: _Line, source_line: int) -> dict[str, Any]:
    state = initial_state(line.agent, source_line)
    frame_locals = state["frames"][0][3]
    frame_locals["roundtrip"] = line.roundtrip
    frame_locals["token_usage"] = line.usage
    state["threads"][THREAD] = list(line.messages)
    state["heap"][SESSION_OID] = dict(line.session)
    state["usage"] = list(usage_triple(line.usage))
    return state


def _read_state(store: Any, run_id: str, branch: int, step: int) -> dict[str, Any]:
    """A checkpoint's payload, rebuilt from the run's record at `step` of `branch`."""
    plain = Timeline(store, run_id, branch).plain_state_at(step)
    frame = plain["frames"][0]["locals"] if plain["frames"] else {}
    return {
        "messages": list(plain["threads"].get(THREAD) or []),
        "session_state": dict(frame.get("session_state") or {}),
        "token_usage": dict(frame.get("token_usage") or {}),
        "roundtrip": int(frame.get("roundtrip") or 0),
    }
