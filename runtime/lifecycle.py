"""Provides the run lifecycle over a run store: resume after a stop, offline replay.

Resume continues a run from its last recorded (completed) step: the steps before it are
re-executed from the record (model answers served from it, effects looked up in the journal,
never repeated), then the run goes on live on the same branch. Replay re-executes the whole run
from the record with side effects suppressed, checking at every step that the program still
does what was recorded, and stops at the first divergence.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from runtime.errors import AgencyError
from runtime.machine.builtins import World
from runtime.machine.machine import INTERRUPTED, Machine
from runtime.machine.values import from_plain
from runtime.program import load_program
from runtime.runner import drive
from runtime.timeline.fork import (
    ReplayModel,
    _live_model,
    machine_at,
    recorded_answers,
    recorded_decisions,
)
from runtime.timeline.recorder import Recorder
from runtime.timeline.timeline import Timeline


class StoreJournal:
    """The effect journal kept in the run store (durable when `put` returns)."""

    def __init__(self, store: Any, run_id: str, branch: int = 0) -> None:
        self.store = store
        self.run_id = run_id
        self.branch = branch

    def get(self, key: str) -> dict[str, Any] | None:
        rec = self.store.get_effect(key)
        if rec is None:
            return None
        return {"status": rec.status, "result": rec.result, "kind": rec.kind, "step": rec.step}

    def put(self, key: str, entry: dict[str, Any]) -> None:
        self.store.put_effect(
            key,
            run_id=self.run_id,
            branch=self.branch,
            step=int(entry.get("step", 0)),
            kind=str(entry.get("kind", "")),
            status=str(entry.get("status", "applied")),
            args=entry.get("args"),
            result=entry.get("result"),
        )


def resume_run(store: Any, run: Any, *, decision: Any = None, force: bool = False, model_spec: str | None = None) -> Machine:
    if run.status == "finished":
        raise AgencyError(f"run {run.id} already finished; nothing to resume (replay it with `agency replay {run.id}`)")
    program = load_program(run.source_path)
    if program.sha256 != run.source_sha256 and not force:
        raise AgencyError(
            f"{run.source_path} changed since run {run.id} was recorded "
            f"(sha256 {run.source_sha256[:12]}… then, {program.sha256[:12]}… now); "
            "resuming would mix two programs — pass --force to do it anyway"
        )
    recorded = dict(run.config or {})
    if model_spec is not None:
        from runtime.llm.registry import split_spec

        provider, name = split_spec(model_spec)
        if (provider, name) != (recorded.get("provider"), recorded.get("model")) and not force:
            raise AgencyError(
                f"run {run.id} was recorded with {recorded.get('provider')}/{recorded.get('model')}, "
                f"not {model_spec}; pass --force to resume with a different model"
            )
    tl = Timeline(store, run.id, 0, program)
    n = len(tl)
    if n == 0:
        raise AgencyError(f"run {run.id} recorded no steps; run it again instead")
    journal = StoreJournal(store, run.id, 0)
    m = machine_at(tl, n - 1, journal=journal)
    if model_spec is not None:
        from runtime.llm.registry import resolve_model

        live = resolve_model(model_spec)
    else:
        live = _live_model(tl)
    replayed = m.model
    if isinstance(replayed, ReplayModel) and hasattr(live, "position"):
        live.position = replayed.position
    m.model = live
    m.world = World()
    rec = Recorder(m, store, run.id, 0)
    rec.write_keyframe(m.step_index)
    m.journal = journal
    store.update_run(run.id, status="running")
    if m.status == INTERRUPTED and decision is not None:
        m.answer_interrupt(decision)
        store.add_event(run.id, 0, m.step_index, "interrupt", f"answered: {decision.action}", {"action": decision.action, "answer": None if decision.value is None else _plain(decision.value)})
    try:
        drive(m, None)
    finally:
        rec.finish()
    return m


def _plain(v: Any) -> Any:
    from runtime.machine.values import to_plain

    return to_plain(v)


def replay_run(store: Any, run: Any, *, then_live: bool = False, progress: Callable[[int, int], None] | None = None) -> tuple[Machine, str | None]:
    """Re-execute a recorded run offline; returns the machine and a divergence message."""
    program = load_program(run.source_path)
    tl = Timeline(store, run.id, 0)
    total = len(tl)
    args = run.args or {}
    model = ReplayModel(recorded_answers(tl))
    m = Machine(
        program,
        run.node,
        from_plain(args.get("args") or []),
        dict(from_plain(args.get("named") or {})),
        model=model,
        world=World(),
    )
    m.replaying = True
    m.journal = StoreJournal(store, run.id, 0)
    decisions = [d for _, d in recorded_decisions(tl)]
    state: dict[str, Any] = {"divergence": None}

    def check(machine: Machine, kind: str) -> None:
        step = machine.step_index
        if progress is not None and step % 1000 == 0:
            progress(step, total)
        if state["divergence"] is not None:
            return
        if step >= total:
            loc = machine.location
            state["divergence"] = f"diverged at step {step} ({loc}): the record ends at step {total - 1}, the program goes on"
        else:
            was = tl.location_at(step)
            now = machine.location
            if was is not None and now is not None and (was.line, was.col, was.scope) != (now.line, now.col, now.scope):
                state["divergence"] = f"diverged at step {step} ({now.file}:{now.line}): recorded {was.scope} line {was.line}, now {now.scope} line {now.line}"
        if state["divergence"] is not None:
            machine.stop_at = step  # stop here (the loop checks after the hook)

    m.on_step = check
    while True:
        m.run()
        if state["divergence"] is not None:
            if not then_live:
                return m, state["divergence"]
            m.on_step = None
            m.model = _live_model(tl)
            m.replaying = False
            drive(m, None)
            return m, state["divergence"]
        if m.status == INTERRUPTED and decisions:
            m.answer_interrupt(decisions.pop(0))
            continue
        break
    if progress is not None:
        progress(total - 1, total)
    return m, None
