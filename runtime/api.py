"""Provides the public Python API: run programs, open run stores, read any step of a run,
export and continue checkpoints, resume and replay.

    from runtime import continue_from, run_program

    run = run_program("examples/dice.agency", mocks="examples/dice.mocks.json")
    state = run.timeline().state_at(4)
    print(state.locals, state.output)
    cp = run.export(4)               # the exact machine at step 4, as a checkpoint
    cp.save("cp.json")
    again = continue_from(cp, overrides={"locals": {"result": 6}})

Everything here is plain Python: states are dicts, lists, strings, numbers and None. The CLI and
the debugger are built on this module and the layers below it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.agents.manager import (
    AgentCheckpoint,
    CheckpointConflict,
    CheckpointManager,
    CheckpointNotFound,
    Resumed,
)
from runtime.agents.record import Recording, current_recording, record_agent, side_effect
from runtime.agents.storage import MemoryStorage, RunStoreStorage, SqliteStorage
from runtime.errors import AgencyError, UsageError
from runtime.language.program import checked_source, load_program
from runtime.llm.mock import load_mocks
from runtime.llm.registry import config_of
from runtime.record.sqlite_store import SQLiteStore
from runtime.record.store import MemoryStore, RunRecord, RunStore
from runtime.record.stores import is_url, open_run_store
from runtime.record.views import Event, StateView
from runtime.runs import fork as runs_fork
from runtime.runs.fork import apply_edits
from runtime.runs.recording import run_recorded
from runtime.runs.replay import replay_run
from runtime.runs.resume import resume_run
from runtime.runs.runner import RunConfig, check_entry, decision_from, new_machine
from runtime.vm.builtins import World
from runtime.vm.checkpoint_reading import load_file
from runtime.vm.effects import atomic_write
from runtime.vm.machine import Machine
from runtime.vm.rebuild import rebuild
from runtime.vm.values import from_plain, to_plain

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

Answer = Callable[[Any], Any]


# -- reading ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class State:
    """The visible state of a run at one step, as plain Python values.

    `locals` are the innermost user frame's arguments and locals; `frames` lists every frame,
    outermost first, as `{"scope", "kind", "line", "col", "args", "locals"}`; `threads` maps a
    message thread's id to its messages (`{"role", "content", …}`)."""

    step: int
    branch: int
    location: dict[str, Any] | None
    locals: dict[str, Any]
    globals: dict[str, Any]
    frames: list[dict[str, Any]]
    threads: dict[str, list[dict[str, Any]]]
    active_thread: str
    output: list[str]
    usage: dict[str, Any]
    status: str
    result: Any
    error: str | None
    view: StateView = field(repr=False, compare=False)

    @classmethod
    def of(cls, view: StateView) -> State:
        frames: list[dict[str, Any]] = [
            {
                "scope": f.scope,
                "kind": f.kind,
                "line": f.line,
                "col": f.col,
                "args": dict(f.args),
                "locals": dict(f.locals),
            }
            for f in view.frames
        ]
        user = [f for f in frames if f["kind"] != "prelude"] or frames
        loc = view.location
        return cls(
            step=view.step,
            branch=view.branch,
            location=(
                {"file": loc.file, "scope": loc.scope, "line": loc.line, "col": loc.col}
                if loc is not None
                else None
            ),
            locals={**user[-1]["args"], **user[-1]["locals"]} if user else {},
            globals=dict(view.globals),
            frames=frames,
            threads={
                tid: [_message(m) for m in messages] for tid, messages in view.threads.items()
            },
            active_thread=view.active_thread,
            output=list(view.output),
            usage={
                "input_tokens": view.usage.input_tokens,
                "output_tokens": view.usage.output_tokens,
                "cost": view.usage.cost,
            },
            status=view.status,
            result=view.result,
            error=view.error,
            view=view,
        )


def _message(m: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.name is not None:
        out["name"] = m.name
    if m.tool_calls:
        out["tool_calls"] = [dict(c) for c in m.tool_calls]
    return out


class Timeline(runs_fork.Timeline):
    """Every step of one branch of a run. `state_at(step)` is the state there as plain values;
    `view_at(step)` the same as the debugger's typed view. Reading never runs anything."""

    def state_at(self, step: int) -> State:  # type: ignore[override]
        return State.of(super().state_at(step))

    def view_at(self, step: int) -> StateView:
        return super().state_at(step)

    def events(self, kind: str | None = None) -> list[Event]:
        return super().events(kind)

    def fork(
        self,
        step: int,
        edits: dict[str, Any],
        progress: Callable[[int], None] | None = None,
        stopper: Any = None,
    ) -> Timeline:
        forked = super().fork(step, edits, progress, stopper)
        return Timeline(self.store, self.run_id, forked.branch, self.program, self.locations)


# -- checkpoints --------------------------------------------------------------------------------


@dataclass
class Checkpoint:
    """A checkpoint: the exact state of a run at one step, as the JSON a file holds
    (`getCheckpoint`, `saveToDisk`, `agency export`). `data` is that JSON."""

    data: dict[str, Any]

    @classmethod
    def load(cls, path: str | Path) -> Checkpoint:
        """Read and validate a checkpoint file (one clear error per problem)."""
        return cls(load_file(str(path)))

    def save(self, path: str | Path) -> None:
        """Write the checkpoint to `path` (atomically: a crash leaves the old file or this)."""
        atomic_write(Path(path), json.dumps(self.data, indent=2, ensure_ascii=False) + "\n")

    @property
    def step(self) -> int:
        return int(self.data.get("step") or 0)

    @property
    def node(self) -> str:
        return str(self.data.get("node") or "main")

    @property
    def source_path(self) -> str:
        return str((self.data.get("source") or {}).get("path") or "")


# -- runs and stores --------------------------------------------------------------------------


class Run:
    """One recorded run. Its fields are read from the store when asked, so a run that is still
    going shows its latest status and length."""

    def __init__(self, store: Store, record: RunRecord) -> None:
        self.store = store
        self.record = record

    def __repr__(self) -> str:
        return f"<Run {self.id} {self.status} {self.steps} steps>"

    def refresh(self) -> Run:
        self.record = self.store.backend.get_run(self.record.id) or self.record
        return self

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def status(self) -> str:
        return self.refresh().record.status

    @property
    def steps(self) -> int:
        return self.store.backend.step_count(self.id)

    @property
    def result(self) -> Any:
        return self.refresh().record.result

    @property
    def error(self) -> str | None:
        return self.refresh().record.error

    @property
    def output(self) -> list[str]:
        n = self.steps
        return self.timeline().state_at(n - 1).output if n else []

    def timeline(self, branch: int = 0) -> Timeline:
        return Timeline(self.store.backend, self.id, branch)

    def export(self, step: int, branch: int = 0) -> Checkpoint:
        """The exact machine at `step`, rebuilt from the record (no model is called)."""
        tl = self.timeline(branch)
        if not 0 <= step < len(tl):
            raise UsageError(f"step {step} is outside run {self.id} (steps 0..{len(tl) - 1})")
        return Checkpoint(tl.export_checkpoint(step))


class Store:
    """A run store: SQLite (the default, `.agency/runs.db`) or in memory."""

    def __init__(self, backend: RunStore) -> None:
        self.backend = backend

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.backend.close()

    def runs(self, limit: int = 50) -> list[Run]:
        """The `limit` most recent runs, newest first."""
        return [Run(self, r) for r in self.backend.list_runs(limit)]

    def run(self, ref: str = "last") -> Run:
        """A run by id, unique id prefix, or `"last"`."""
        if ref in ("last", "latest"):
            record = self.backend.latest_run()
            if record is None:
                raise UsageError("no runs in this store yet")
        else:
            record = self.backend.get_run(ref)
            if record is None:
                raise UsageError(f"no run {ref!r} in this store")
        return Run(self, record)


def open_store(url: str | Path | None = None) -> Store:
    """The run store at `url`: a SQLite file path (or `sqlite:///path`), a PostgreSQL URL
    (`postgresql://user@host/db`), `":memory:"` for one in memory, or None for `AGENCY_DB`, else
    `.agency/runs.db` under the working directory."""
    if url is None:
        return Store(open_run_store(None))
    text = str(url)
    if text == ":memory:":
        return Store(MemoryStore())
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") - 1 :]
    elif is_url(text):
        return Store(open_run_store(text))
    elif "://" in text:
        raise UsageError(
            f"unsupported store URL {text!r}: give a SQLite file path, a postgresql:// URL or "
            ":memory:"
        )
    return Store(SQLiteStore(text))


# -- running ------------------------------------------------------------------------------------


def _store(db: str | Path | Store | None, record: bool) -> Store:
    if isinstance(db, Store):
        return db
    return open_store(db) if record else open_store(":memory:")


def _mocks(mocks: str | Path | Sequence[Any] | None) -> list[Any] | None:
    if mocks is None:
        return None
    if isinstance(mocks, str | Path):
        return load_mocks(str(mocks))
    return list(mocks)


def _record(
    program: Any, machine: Machine, store: Store, config: dict[str, Any], answer: Answer | None
) -> Run:
    outcome = run_recorded(program, machine, store.backend, config, answer, stop_notice=False)
    if outcome.crash is not None:
        raise outcome.crash
    store.backend.flush()
    return store.run(outcome.run_id)


def run_program(
    path: str | Path,
    *,
    node: str = "main",
    args: Sequence[Any] | Mapping[str, Any] | None = None,
    model: str | None = None,
    mocks: str | Path | Sequence[Any] | None = None,
    db: str | Path | Store | None = None,
    record: bool = True,
    answer: Answer | None = None,
    root: str | Path | None = None,
    quiet: bool = True,
) -> Run:
    """Run `node` of the program at `path` and return the recorded run.

    `args` are the node's arguments (a list, or a dict of named ones); `model` a model spec
    (`"sim"`, `"openai/gpt-4o-mini"`, …; default: `mocks` when given, else `sim`); `mocks` the
    scripted answers (a list or a JSON file); `answer(pending)` answers interrupts (return
    `approve()`-like decisions from `runtime.runs.runner.decision_from`, or None to leave the
    run waiting). With `record=False` the run is kept in memory only."""
    program = load_program(path)
    positional = list(args) if isinstance(args, Sequence) and not isinstance(args, str) else []
    named = dict(args) if isinstance(args, Mapping) else {}
    config = RunConfig(
        node=node,
        args=[from_plain(a) for a in positional],
        named={k: from_plain(v) for k, v in named.items()},
        model_spec=model if model is not None else (None if mocks is not None else "sim"),
        mocks=_mocks(mocks),
        root=str(root) if root is not None else None,
        quiet=quiet,
    )
    check_entry(program, node, config.args, config.named)
    chat = config.make_model()
    machine = new_machine(program, config, model=chat)
    run_config = dict(config_of(chat))
    run_config["seed"] = config.seed
    if config.mocks is not None:
        run_config["mocks"] = config.mocks
    return _record(program, machine, _store(db, record), run_config, answer)


def continue_from(
    checkpoint: Checkpoint | str | Path,
    *,
    overrides: Mapping[str, Any] | None = None,
    model: str | None = None,
    mocks: str | Path | Sequence[Any] | None = None,
    db: str | Path | Store | None = None,
    record: bool = True,
    answer: Answer | None = None,
    root: str | Path | None = None,
    quiet: bool = True,
) -> Run:
    """Run on from a checkpoint (an object or a file), as a new recorded run.

    `overrides` change the checkpoint's state first, as `restore()` takes them:
    `{"args": {…}, "locals": {…}, "globals": {…}}` (the innermost user frame's arguments and
    locals, and module globals)."""
    cp = checkpoint if isinstance(checkpoint, Checkpoint) else Checkpoint.load(checkpoint)
    if not cp.source_path:
        raise AgencyError("the checkpoint does not name its source file")
    source = cp.data.get("source")
    sha256 = source.get("sha256") if isinstance(source, dict) else None
    program = load_program(checked_source(cp.source_path, sha256, "the checkpoint"))
    config = RunConfig(
        model_spec=model if model is not None else (None if mocks is not None else "sim"),
        mocks=_mocks(mocks),
        root=str(root) if root is not None else None,
        quiet=quiet,
    )
    chat = config.make_model()
    world = World(root=config.root or ".", quiet=quiet)
    machine = rebuild(program, cp.data, model=chat, world=world)
    if overrides:
        apply_edits(
            machine, {k: v for k, v in overrides.items() if k in ("args", "locals", "globals")}
        )
    run_config = dict(config_of(chat))
    run_config["from_checkpoint"] = cp.source_path
    return _record(program, machine, _store(db, record), run_config, answer)


def resume(
    run: Run, *, approve: bool | None = None, resolve: Any = None, force: bool = False
) -> Run:
    """Continue `run` from its last completed step (a crash, Ctrl-C, or an interrupt it waits
    on: `approve=True` / `False`, or `resolve=value`). Effects already applied are not redone."""
    decision = None
    if resolve is not None:
        decision = decision_from("resolve", from_plain(resolve))
    elif approve is not None:
        decision = decision_from("approve" if approve else "reject")
    resume_run(run.store.backend, run.record, decision=decision, force=force, quiet=True)
    run.store.backend.flush()
    return run.refresh()


@dataclass(frozen=True)
class Replayed:
    """A replay's outcome: `divergence` is None when the program did exactly what was
    recorded, else where and how it differs."""

    status: str
    result: Any
    divergence: str | None


def replay(run: Run, *, from_step: int = 0) -> Replayed:
    """Re-execute `run` offline: answers from the record, no model called, no effect done."""
    machine, divergence = replay_run(run.store.backend, run.record, from_step=from_step, quiet=True)
    return Replayed(machine.status, to_plain(machine.result), divergence)
