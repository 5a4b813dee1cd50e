"""Provides where a `CheckpointManager` keeps its runs, and how a roundtrip becomes a step.

Every storage is a run store (`runtime.record.store.RunStore`): `MemoryStorage()` keeps runs in
this process, `SqliteStorage(path)` in a SQLite file (the same file `agency runs --db` reads),
`RunStoreStorage(store)` in a store you already have open (`runtime.open_store(...)`, or any
`RunStore`, a PostgreSQL one included). A roundtrip is one step of the record format
(`runtime.record.format`): the messages it appended, the session-state keys it changed and the
token usage, never the whole history; a keyframe (the whole state) is written only when the
deltas since the last one outweigh it, as the recorder does for Agency programs.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

from runtime.record.format import (
    KIND_CODES,
    R_DELKEY,
    R_LOCAL,
    R_MESSAGE,
    R_SETKEY,
    R_THREAD,
    R_USAGE,
    ZLIB_PREFIX,
    encode_record,
)
from runtime.record.store import MemoryStore, RunStore
from runtime.record.stores import open_run_store

__all__ = [
    "AGENT_KIND",
    "MemoryStorage",
    "RunStoreStorage",
    "SqliteStorage",
    "Storage",
]

AGENT_KIND = "python-agent"  # a run's meta["kind"] when a Python agent recorded it
THREAD = "main"  # the message thread a Python agent's messages are recorded in
SESSION_OID = 1  # the heap object holding the session state
MIN_KEYFRAME_GAP = 2048  # bytes of deltas, at least, between two keyframes (as the recorder)


class Storage:
    """A run store for Python agents' checkpoints. `close()` closes the store when this
    storage opened it."""

    def __init__(self, store: RunStore, *, owned: bool = True) -> None:
        self.store = store
        self.owned = owned

    def close(self) -> None:
        if self.owned:
            self.store.close()
        else:
            self.store.flush()


class MemoryStorage(Storage):
    """Runs kept in this process only (the default)."""

    def __init__(self) -> None:
        super().__init__(MemoryStore())


class SqliteStorage(Storage):
    """Runs kept in a SQLite run store at `path` (created when missing)."""

    def __init__(self, path: str | Path) -> None:
        Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        super().__init__(open_run_store(Path(path).expanduser()))


class RunStoreStorage(Storage):
    """Runs kept in an open run store: a `runtime.Store` or any `RunStore`. The store stays
    open when the manager closes; its owner closes it."""

    def __init__(self, store: Any) -> None:
        super().__init__(getattr(store, "backend", store), owned=False)


def as_storage(storage: Storage | Any | None) -> Storage:
    """`storage` as a `Storage`: None is a new `MemoryStorage`, a path a `SqliteStorage`, a
    store a `RunStoreStorage`."""
    if storage is None:
        return MemoryStorage()
    if isinstance(storage, Storage):
        return storage
    if isinstance(storage, str | Path):
        return SqliteStorage(storage)
    return RunStoreStorage(storage)


# -- the record format of a roundtrip --------------------------------------------------------


def initial_state(agent: str, line: int) -> dict[str, Any]:
    """The state before a run's first roundtrip, in the keyframe layout of the record format:
    one frame (the agent) whose variables are `roundtrip`, `token_usage` and `session_state`."""
    return {
        "frames": [
            [
                agent,
                "node",
                (),
                {"roundtrip": 0, "token_usage": {}, "session_state": ("r", SESSION_OID)},
                line,
                1,
            ]
        ],
        "globals": {},
        "shared": {},
        "threads": {THREAD: []},
        "active": THREAD,
        "output": [],
        "usage": [0, 0, 0.0],
        "status": "running",
        "result": None,
        "error": None,
        "heap": {SESSION_OID: {}},
    }


def message_writes(old: list[Any], new: list[Any], same_prefix: int) -> list[tuple[Any, ...]]:
    """The writes taking the thread from `old` to `new`, whose first `same_prefix` messages are
    known to be `old`'s: appends when `new` only grew, else the whole thread once."""
    if same_prefix == len(old):
        return [(R_MESSAGE, THREAD, m) for m in new[same_prefix:]]
    return [(R_THREAD, THREAD, list(new))]


def session_writes(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The writes taking the session state from `old` to `new`, key by key."""
    out: list[tuple[Any, ...]] = [(R_DELKEY, SESSION_OID, k) for k in old if k not in new]
    out.extend((R_SETKEY, SESSION_OID, k, v) for k, v in new.items() if old.get(k, _NONE) != v)
    return out


_NONE = object()


def usage_writes(roundtrip: int, usage: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (R_LOCAL, 0, "roundtrip", roundtrip),
        (R_LOCAL, 0, "token_usage", usage),
        (R_USAGE, *usage_triple(usage)),
    ]


def usage_triple(usage: dict[str, Any]) -> tuple[int, int, float]:
    """(input tokens, output tokens, cost) of a usage dict in OpenAI's or Anthropic's words."""
    return (
        int(_number(usage, _INPUT_KEYS)),
        int(_number(usage, _OUTPUT_KEYS)),
        float(_number(usage, _COST_KEYS)),
    )


_INPUT_KEYS = ("input_tokens", "prompt_tokens", "inputTokens", "promptTokens")
_OUTPUT_KEYS = ("output_tokens", "completion_tokens", "outputTokens", "completionTokens")
_COST_KEYS = ("cost", "total_cost", "totalCost")


def _number(usage: dict[str, Any], keys: tuple[str, ...]) -> float:
    """The first of `keys` that `usage` holds as a number (not a boolean), else 0."""
    for k in keys:
        v = usage.get(k)
        if v is not None and type(v) is not bool and isinstance(v, (int, float)):
            return v
    return 0


def step_blob(step: int, writes: list[tuple[Any, ...]], location: int) -> bytes:
    """One roundtrip as a batch of one step (`(first_step, depth before, depth after,
    entries)`), its marker naming the location and the kind "tool"."""
    marker = location << 3 | KIND_CODES["tool"]
    return encode_record((step, 1, 1, [*writes, marker]))


def keyframe_blob(state: dict[str, Any]) -> bytes:
    blob = encode_record(state)
    if len(blob) > 4096:
        blob = ZLIB_PREFIX + zlib.compress(blob, 1)
    return blob


KEYFRAME_RATIO = 4  # deltas written between keyframes, at least, per byte of keyframe


def keyframe_due(since: int, size: int) -> bool:
    """A keyframe is due once the deltas since the last one outweigh it several times over:
    keyframes add a fraction of what the deltas cost (the bytes stored per roundtrip stay
    proportional to what changed), and reading a checkpoint applies at most that many bytes of
    deltas to the keyframe before it."""
    return since > max(MIN_KEYFRAME_GAP, KEYFRAME_RATIO * size)


def status_at(run: Any, branch: int, step: int, length: int, status: str) -> str:
    """The status to show at `step` of `branch` of `run`, whose state there says `status`.

    A Python agent's steps are its checkpoints, each recorded while the agent still ran, so
    every state says "running"; how the run ended (finished, failed, interrupted) is the run's
    own status, which is the status of the last step of its current line. Any other step, and
    any run of an Agency program (whose last step records how it ended), keeps `status`."""
    meta = getattr(run, "meta", None) or {}
    if meta.get("kind") != AGENT_KIND or status != "running" or run.status == "running":
        return status
    if branch != int(meta.get("head") or 0) or step != length - 1:
        return status
    return str(run.status)
