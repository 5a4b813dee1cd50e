"""Provides resume: continue a run that stopped (killed, failed on a timeout, waiting on an
interrupt, Ctrl-C) from its last completed step. The steps before it are re-executed from the
record (`fork.machine_at`: model answers, reads and interrupt answers served from it, effects
looked up in the journal, never repeated); then the run goes on live on branch 0, its new steps
appended after the old ones. Model answers the stopped process got but had not yet tied to a
recorded step are served from the record too, before the live model takes over."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from runtime.errors import AgencyError
from runtime.llm.registry import config_of
from runtime.record.store import MAX_STEP
from runtime.runs.answers import RecordedAnswers
from runtime.runs.config import config_differences, current_config, program_of
from runtime.runs.fork import (
    Timeline,
    live_model,
    machine_at,
    recorded_answers,
)
from runtime.runs.journal import StoreJournal
from runtime.runs.processes import (
    claim_run,
    mark_running,
    process_alive,
    reap_dead_runs,
    statement_texts,
)
from runtime.runs.recorder import Recorder, location_table, public_base_url
from runtime.runs.runner import drive
from runtime.runs.stopping import (
    GracefulStop,
    Stopper,
    mark_stopped,
    record_answer,
    recording_answers,
)
from runtime.vm.builtins import World
from runtime.vm.frames import Decision
from runtime.vm.machine import Machine


def _resume_point(store: Any, run: Any, tl: Timeline) -> tuple[int, int]:
    """(step to rebuild, last step whose recorded model answers may be served)."""
    n = len(tl)
    last = n - 1
    if tl.kind_at(last) != "end":
        return last, MAX_STEP  # stopped: every recorded step is complete; serve every answer
    # Failed (the end step records the failure): retry the failing statement, live. Its step
    # and the end step share a batch; the whole batch goes and is recorded again.
    failing = last - 1
    batches = store.batches(run.id, 0, last, last)
    first = min((b.first_step for b in batches if b.branch == 0), default=last)
    return min(failing, first - 1), failing


def resume_run(store: Any, run: Any, *, force: bool = False, **options: Any) -> Machine:
    """Continue `run` from its last completed step, live, recording on branch 0 (see
    `_resume_run` for the options), as the one process that owns it: another live process
    continuing it is refused (`RunBusy`, naming it); a dead one's claim is taken over."""
    with claim_run(store, run.id, force=force, doing="resume") as claim:
        return _resume_run(store, run, force=force, taken_from=claim.taken_from, **options)


def _resume_run(
    store: Any,
    run: Any,
    *,
    decision: Decision | None = None,
    force: bool = False,
    model_spec: str | None = None,
    base_url: str | None = None,
    mocks: list[Any] | None = None,
    answer: Callable[[Any], Decision | None] | None = None,
    notice: Callable[[str], None] | None = None,
    stop: GracefulStop | None = None,
    stopper: Stopper | None = None,
    root: Any = None,
    quiet: bool = False,
    taken_from: dict[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Machine:
    """Continue `run` from its last completed step, live, recording on branch 0.

    `decision` answers the interrupt the run was waiting on; `answer` answers later ones.
    Paths resolve against `root`, by default the directory the run was started in.
    `stopper` stops it sooner (its step budget, the run-store size cap), leaving it
    interrupted and resumable again. `progress` is told (steps re-executed, steps to
    re-execute) while the record is re-executed, then (-1, -1).
    Refuses (AgencyError) a finished run, a run another process is recording, and a changed
    source or model configuration unless `force`. `taken_from` is the owner whose claim this
    process took over (`Claim.taken_from`): a run still `running` by that process (on another
    host, its lease expired) is resumed.
    """
    reap_dead_runs(store, [run])
    run = store.get_run(run.id) or run
    if run.status == "finished":
        raise AgencyError(
            f"run {run.id} already finished; nothing to resume (replay it with `agency replay {run.id}`)"
        )
    proc = (run.meta or {}).get("process")
    if run.status == "running" and not force and not _same_process(proc, taken_from):
        alive = process_alive(proc) if isinstance(proc, dict) else None
        where = f" (pid {proc.get('pid')} on {proc.get('host')})" if isinstance(proc, dict) else ""
        if alive is not False:
            raise AgencyError(
                f"run {run.id} is still running{where}; resume it once that process has ended "
                "(or pass --force if it is gone)"
            )
    if decision is not None and run.status != "interrupted":
        raise AgencyError(
            f"run {run.id} is not waiting on an interrupt (it is {run.status}); resume it without --approve/--reject/--resolve"
        )
    program = program_of(run)
    recorded = dict(run.config or {})
    problems = []
    if program.sha256 != run.source_sha256:
        problems.append(
            f"{run.source_path} (or a file it imports) changed since the run was recorded "
            f"(sha256 {run.source_sha256[:12]} then, {program.sha256[:12]} now)"
        )
    live = None
    current: dict[str, Any] = {}
    if model_spec is not None or base_url is not None or mocks is not None:
        if base_url is None and model_spec in (None, recorded.get("spec")):
            recorded_url = (run.meta or {}).get("base_url")  # the same model, the same server
            base_url = recorded_url if isinstance(recorded_url, str) else None
        live, current = current_config(model_spec or recorded.get("spec"), base_url, mocks)
        problems.extend(config_differences(recorded, current))
    if problems and not force:
        raise AgencyError(
            f"cannot resume run {run.id}: " + "; ".join(problems) + ". Resuming would mix two "
            "different runs; pass --force to resume anyway"
        )
    tl = Timeline(store, run.id, 0, program)
    if live is None:
        # The recorded model, on the recorded server; one that cannot be made now (no API key)
        # is an error, never silently another model.
        live = live_model(tl, strict=True)
        if not force:
            differences = config_differences(recorded, dict(config_of(live)))
            if differences:
                raise AgencyError(
                    f"cannot resume run {run.id}: {'; '.join(differences)}. Pass the recorded "
                    "model's settings (--model, --base-url) or --force to go on with this one"
                )
    if len(tl) == 0:  # stopped before its first step was stored: nothing to re-execute
        step, serve_up_to = -1, MAX_STEP
    else:
        step, serve_up_to = _resume_point(store, run, tl)
    answers = [a for a, s in zip(recorded_answers(tl), _answer_steps(tl)) if s <= serve_up_to]
    journal = StoreJournal(store, run.id, 0, in_doubt=True)
    try:
        m = machine_at(
            tl, step, journal=journal, progress=(lambda s: progress(s, step)) if progress else None
        )
    finally:
        if progress is not None:
            progress(-1, -1)
    served = int(getattr(m.model, "served", 0))
    m.model = RecordedAnswers(answers[served:], live=live, served=served, machine=m)
    if root is None:
        recorded_root = (run.meta or {}).get("cwd")
        root = recorded_root if recorded_root and Path(recorded_root).is_dir() else None
    m.world = World(root=root, quiet=quiet)
    m.world.writable = tuple(Path(d).resolve() for d in recorded.get("writable") or ())
    m.world.fetch_mocks = recorded.get("fetchMocks")
    m.world.memory_config = recorded.get("memory")
    m.host.journal = journal
    store.truncate_after(run.id, 0, step)
    if problems:  # forced: the run goes on with the new program / model
        fields: dict[str, Any] = {"source_sha256": program.sha256}
        meta = dict(run.meta or {})
        meta["locations"] = location_table(program)
        meta["statements"] = statement_texts(program)
        fields["meta"] = meta
        if current:
            fields["config"] = {**recorded, **current}
            meta.pop("base_url", None)
            if (url := public_base_url(getattr(live, "base_url", None))) is not None:
                meta["base_url"] = url
        store.update_run(run.id, **fields)
    store.update_run(run.id, status="running", error=None, result=None, finished_at=None)
    mark_running(store, run.id, m.world.root, program)
    rec = Recorder(m, store, run.id, 0)
    if m.step_index >= 0:
        rec.write_keyframe(m.step_index)
    if notice is not None:
        notice(f"resuming run {run.id} after step {m.step_index} (re-executed from the record)")
    answers_fn = recording_answers(answer, store, run.id, m)
    if decision is not None:
        first = [decision]

        def answers_fn(pending: Any, later: Any = answers_fn) -> Decision | None:  # noqa: F811
            if first:
                d = first.pop()
                record_answer(store, run.id, 0, m.step_index, d)
                return d
            return later(pending) if later is not None else None

    graceful = stop if stop is not None else GracefulStop(m)
    graceful.m = m
    if stopper is not None:
        stopper.watch_store(store, rec)
    with graceful:  # held while the record is completed too (a SIGTERM waits for it)
        try:
            drive(m, graceful.answer(answers_fn), stopper)
        except KeyboardInterrupt:
            graceful.requested = True
        finally:
            graceful.reached()
            rec.finish()
            if graceful.stopped():
                mark_stopped(store, run.id, graceful.why())
            elif stopper is not None and stopper.stopped():
                mark_stopped(store, run.id, stopper.reason())
    return m


def _same_process(proc: Any, holder: dict[str, Any] | None) -> bool:
    """Whether the process in a run's meta is the owner `holder` (pid, host, start time)."""
    if not isinstance(proc, dict) or holder is None:
        return False
    return all(proc.get(k) == holder.get(k) for k in ("pid", "host", "started"))


def _answer_steps(tl: Timeline) -> list[int]:
    return [call.step for call in tl.store.llm_calls(tl.run_id, tl.branch)]
