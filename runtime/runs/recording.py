"""Provides recorded runs: starting a run in a store (its meta: locations, process, tools, base
URL), running a program or a rebuilt machine to its end while the `Recorder` keeps every step,
and continuing a recorded run after an interrupt is answered."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runtime.language.bytecode import CompiledProgram
from runtime.llm.registry import config_of
from runtime.record.store import MemoryStore, RunMeta, RunStore
from runtime.runs.fork import Timeline
from runtime.runs.journal import StoreJournal
from runtime.runs.processes import claim_run, mark_running, process_meta
from runtime.runs.recorder import Recorder, location_table, public_base_url
from runtime.runs.runner import drive, new_machine
from runtime.runs.stopping import GracefulStop, Stopper, mark_stopped, recording_answers
from runtime.vm.builtins_std import FAKE_CLOCK
from runtime.vm.checkpoints import snapshot
from runtime.vm.machine import Machine
from runtime.vm.values import to_plain


@dataclass
class Recording:
    """A live, recorded run: the machine, its recorder and a timeline over it."""

    machine: Machine
    recorder: Recorder
    store: RunStore
    run_id: str
    branch: int = 0
    stopper: Stopper | None = None  # what stopped it early (a step budget, a cancel), if any

    @property
    def timeline(self) -> Any:
        return Timeline(self.store, self.run_id, self.branch, program=self.machine.program)

    def continue_run(
        self,
        answer_decision: Any = None,
        progress: Callable[[int], None] | None = None,
        stopper: Stopper | None = None,
    ) -> None:
        """Answer the pending interrupt (if given) and run on, recording (`stopper`: as in
        `record_program`)."""

        if answer_decision is not None:
            self.machine.answer_interrupt(answer_decision)
            self.store.add_event(
                self.run_id,
                self.branch,
                max(self.machine.step_index, 0),
                "interrupt",
                f"answered: {answer_decision.action}",
                {"action": answer_decision.action, "answer": to_plain(answer_decision.value)},
            )
        if progress is not None:
            self.recorder.listeners.append(progress)
        if stopper is not None:  # what stops it now: an earlier stop no longer says "interrupted"
            self.stopper = stopper
        unwatch = stopper.watch_store(self.store, self.recorder) if stopper else None
        try:
            drive(self.machine, None, stopper)
        finally:
            if progress is not None:
                self.recorder.listeners.remove(progress)
            if unwatch is not None:
                unwatch()
        self.recorder.finish()
        self.note_stopper(stopper)

    def note_stopper(self, stopper: Stopper | None) -> None:
        """Mark the run interrupted (resumable) when `stopper` stopped it."""
        if stopper is not None:
            self.stopper = stopper
            if stopper.stopped():
                mark_stopped(self.store, self.run_id, stopper.reason())


def run_config_of(config: Any, model: Any, checkpoint: str | None = None) -> dict[str, Any]:
    """What a run records of how it was run (`config`, a `RunConfig`): the model's config, the
    seed, the scripted answers, the directories it may change besides its working directory,
    and the checkpoint file it began at."""
    out = dict(config_of(model))
    out["seed"] = config.seed
    if config.mocks is not None:
        out["mocks"] = config.mocks
    if config.fetch_mocks is not None:
        out["fetchMocks"] = config.fetch_mocks  # a resumed run goes on answering from them
    if config.memory is not None:
        out["memory"] = config.memory
    if config.writable:
        out["writable"] = list(config.writable)  # a resumed run may go on changing files there
    if checkpoint is not None:
        out["from_checkpoint"] = checkpoint
    return out


def at_checkpoint_step(data: dict[str, Any]) -> bool:
    """Whether checkpoint `data` holds a machine at a step it has started (an exported step,
    `w` in the debugger), rather than a program's own `checkpoint()`, which goes on at the
    `checkpoint()` statement."""
    return isinstance(data.get("machine"), dict)


def start_run(
    program: CompiledProgram,
    machine: Machine,
    store: RunStore,
    config: dict[str, Any] | None = None,
    args: Any = None,
    at_step: bool = False,
) -> Recording:
    """A new run of `machine` in `store`, its recorder attached. `at_step`: the machine was
    rebuilt at a step it has already started (a machine checkpoint): that step is the run's
    first, with the machine's state, and the config keeps the whole machine as
    `checkpoint`, so re-execution (fork, export, resume) starts from there, not the program's
    start."""
    config = dict(config or {})
    if machine.step_index >= 0:
        config.setdefault("from_checkpoint", True)
        config["checkpoint"] = snapshot(machine)
    meta: dict[str, Any] = {
        "locations": location_table(program),
        "process": process_meta(),
        # The defs the program can offer as tools, with their parameters (a call records the
        # tools it offered, with schemas, and its temperature).
        "tools": {c.name: c.param_names for c in program.functions.values() if c.kind == "def"},
        # Where the state was replaced is marked in the steps (R_RESET): a reader walking
        # forward may go past the other keyframes on deltas alone.
        "reset_marks": True,
    }
    base_url = public_base_url(getattr(machine.model, "base_url", None))
    if base_url is not None:
        meta["base_url"] = base_url  # resume goes on with the same server
    if FAKE_CLOCK in machine.mutable:
        meta["fake_clock"] = machine.mutable[FAKE_CLOCK]  # a replay starts its clock there too
    run_id = store.create_run(
        RunMeta(
            source_path=program.path,
            source_sha256=program.sha256,
            node=machine.node,
            args=args
            if args is not None
            else {"args": to_plain(machine.entry_args), "named": to_plain(machine.entry_named)},
            config=config,
            # The process, so a run whose process died shows as interrupted (lifecycle).
            meta=meta,
        )
    )
    recorder = Recorder(machine, store, run_id, 0)
    if at_step:
        recorder.record_current_step()
    return Recording(machine, recorder, store, run_id, 0)


def record_program(
    program: CompiledProgram,
    config: Any,
    store: RunStore | None = None,
    answer: Any = None,
    progress: Callable[[int], None] | None = None,
    stopper: Stopper | None = None,
) -> Recording:
    """Run `program` to the end (or to an unanswered interrupt), recording every step; a
    `stopper` can stop it sooner (its step budget, or a cancel from another thread), leaving
    the run interrupted and resumable."""

    store = store if store is not None else MemoryStore()
    model = config.make_model()
    machine = new_machine(program, config, model=model)
    rec = start_run(program, machine, store, run_config_of(config, model))
    return _drive_recorded(rec, answer, progress, stopper)


def record_machine(
    machine: Machine,
    store: RunStore | None = None,
    answer: Any = None,
    *,
    config: dict[str, Any] | None = None,
    at_step: bool = False,
    progress: Callable[[int], None] | None = None,
    stopper: Stopper | None = None,
) -> Recording:
    """Record a machine built elsewhere (e.g. rebuilt from a checkpoint file) as a new run
    (`at_step`, `stopper`: as in `start_run` and `record_program`)."""

    store = store if store is not None else MemoryStore()
    run_config = {"provider": getattr(machine.model, "provider", ""), **(config or {})}
    run_config["from_checkpoint"] = run_config.get("from_checkpoint") or True
    rec = start_run(machine.program, machine, store, run_config, at_step=at_step)
    return _drive_recorded(rec, answer, progress, stopper)


def _drive_recorded(
    rec: Recording,
    answer: Any,
    progress: Callable[[int], None] | None,
    stopper: Stopper | None,
) -> Recording:
    """Drive a freshly started recording to its end (or its stopper's stop), reporting each
    step to `progress`, and leave it finished whatever happens."""
    unwatch = stopper.watch_store(rec.store, rec.recorder) if stopper is not None else None
    if progress is not None:
        rec.recorder.listeners.append(progress)
    try:
        drive(rec.machine, answer, stopper)
    finally:
        rec.recorder.finish()
        if progress is not None:
            rec.recorder.listeners.remove(progress)
        if unwatch is not None:
            unwatch()  # a later `continue_run` watches under its own stopper
    rec.note_stopper(stopper)
    return rec


@dataclass
class Outcome:
    """How a recorded run ended: `stopped` by Ctrl-C or SIGTERM (`signal_name` says which),
    or `crash`ed (a closed pipe, a bug), else
    finished, failed or waiting on an interrupt as `machine.status` says."""

    machine: Machine
    run_id: str
    stopped: bool = False
    crash: BaseException | None = None
    signal_name: str = ""


def run_recorded(
    program: CompiledProgram,
    machine: Machine,
    store: RunStore,
    config: dict[str, Any],
    answer: Callable[[Any], Any] | None = None,
    *,
    announce: Callable[[str], None] | None = None,
    stop_notice: bool = True,
    why: Callable[[BaseException], str] = str,
    at_step: bool = False,
    stopper: Stopper | None = None,
) -> Outcome:
    """Record `machine` (built for `program`) as a new run in `store` and drive it to its end.

    The run notes its process and working directory (a killed run shows as interrupted; resume
    and replay work in the same directory), journals its effects durably, records the answers
    given to interrupts, and stops cleanly on Ctrl-C or SIGTERM (resumable). `announce` hears the run id
    first. The caller closes the store."""
    rec = start_run(program, machine, store, config, at_step=at_step)
    if stopper is not None:
        stopper.watch_store(store, rec.recorder)
    claim = claim_run(store, rec.run_id, doing="record")  # a resume waits until this one ends
    mark_running(store, rec.run_id, machine.world.root, program)
    machine.host.journal = StoreJournal(store, rec.run_id)
    if announce is not None:
        announce(rec.run_id)
    stop = GracefulStop(machine, notice=stop_notice)
    crash: BaseException | None = None
    # Held while the record is completed too: a SIGTERM then lets the last steps be written.
    try:
        with stop:
            try:
                drive(
                    machine,
                    stop.answer(recording_answers(answer, store, rec.run_id, machine)),
                    stopper,
                )
            except KeyboardInterrupt:
                # The second Ctrl-C or SIGTERM (or a SIGTERM past its grace): stopped
                # mid-step; resume redoes the step.
                stop.requested = True
            except Exception as exc:  # `| head` closed stdout, or a bug: keep it resumable
                crash = exc
            stop.reached()
            try:
                rec.recorder.finish()
            except Exception as exc:
                crash = crash or exc
            if stop.stopped():
                mark_stopped(store, rec.run_id, stop.why())
            elif crash is not None:
                mark_stopped(store, rec.run_id, why(crash))
            elif stopper is not None and stopper.stopped():
                mark_stopped(store, rec.run_id, stopper.reason())
    finally:
        claim.release()
    return Outcome(machine, rec.run_id, stop.stopped(), crash, stop.signal_name)
