"""agency-debugger's runtime: the Agency language, its machine, recorded runs and their stores.

The public API is `runtime.api`, re-exported here: `run_program`, `open_store`, `Store`, `Run`,
`Timeline`, `State`, `Checkpoint`, `continue_from`, `resume`, `replay`; and for Python agents
`CheckpointManager` with its storages (`MemoryStorage`, `SqliteStorage`, `RunStoreStorage`),
`record_agent` and `side_effect`. It is loaded on first
use, so importing one inner module (say `runtime.errors`) does not load the whole runtime.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.api import (
        AgentCheckpoint,
        Checkpoint,
        CheckpointConflict,
        CheckpointManager,
        CheckpointNotFound,
        MemoryStorage,
        Replayed,
        Resumed,
        Run,
        RunStoreStorage,
        SqliteStorage,
        State,
        Store,
        Timeline,
        continue_from,
        current_recording,
        open_store,
        record_agent,
        replay,
        resume,
        run_program,
        side_effect,
    )

__all__ = [
    "AgentCheckpoint",
    "Checkpoint",
    "CheckpointConflict",
    "CheckpointManager",
    "CheckpointNotFound",
    "MemoryStorage",
    "Recording",
    "Resumed",
    "RunStoreStorage",
    "SqliteStorage",
    "Replayed",
    "Run",
    "State",
    "Store",
    "Timeline",
    "continue_from",
    "current_recording",
    "open_store",
    "record_agent",
    "replay",
    "resume",
    "run_program",
    "side_effect",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("runtime.api"), name)
    raise AttributeError(f"module 'runtime' has no attribute {name!r}")
