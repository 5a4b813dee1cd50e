"""Provides the ways a debugging `Session` is opened: `record_session` (run a program under the
recorder), `checkpoint_session` (continue from a checkpoint file) and `trace_session` (a run
already in the store).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from debugger.session import Session
from debugger.shapes import RunProgress

__all__ = ["checkpoint_session", "record_session", "trace_session"]


def _checkpoint_loader(program: Any, config: Any) -> Callable[[str, RunProgress | None], Any]:
    """Opens checkpoint files of `program` as new recorded runs (for `Session.open_checkpoint`)."""

    def load(path: str, progress: RunProgress | None = None) -> Any:
        from runtime.runs.recording import at_checkpoint_step, record_machine
        from runtime.runs.runner import new_world
        from runtime.vm.builtins import World
        from runtime.vm.checkpoint_reading import load_file
        from runtime.vm.rebuild import rebuild

        prog = program() if callable(program) else program
        data = load_file(path, prog)
        model = config.make_model() if config is not None else None
        world = new_world(config) if config is not None else World()
        world.quiet = True
        machine = rebuild(prog, data, model=model, world=world)
        return record_machine(machine, at_step=at_checkpoint_step(data), progress=progress).timeline

    return load


def record_session(
    program: Any,
    config: Any,
    store: Any = None,
    progress: RunProgress | None = None,
    stopper: Any = None,
) -> Session:
    """Run `program` under the recorder (to its end, an unanswered interrupt, or until
    `stopper` stops it: a step budget, a cancel); a session at step 0 of that run."""
    from runtime.runs.recording import record_program

    config.quiet = True  # the program's prints belong in the output panel, not the terminal
    recording = record_program(program, config, store=store, progress=progress, stopper=stopper)
    session = Session(
        recording.timeline,
        recording=recording,
        source=program.source,
        checkpoint_loader=_checkpoint_loader(program, config),
    )
    session.note_stop(stopper)
    return session


def checkpoint_session(
    program: Any,
    path: str,
    config: Any,
    store: Any = None,
    progress: RunProgress | None = None,
    stopper: Any = None,
) -> Session:
    """A session over a run continued from checkpoint file `path` (checked against `program`:
    a checkpoint of another source raises CheckpointFormatError saying so)."""
    from runtime.runs.recording import at_checkpoint_step, record_machine, run_config_of
    from runtime.runs.runner import new_world
    from runtime.vm.checkpoint_reading import load_file
    from runtime.vm.rebuild import rebuild

    config.quiet = True
    data = load_file(path, program)
    machine = rebuild(program, data, model=config.make_model(), world=new_world(config))
    recording = record_machine(
        machine,
        store=store,
        config=run_config_of(config, machine.model, str(Path(path).resolve())),
        at_step=at_checkpoint_step(data),
        progress=progress,
        stopper=stopper,
    )
    session = Session(
        recording.timeline,
        recording=recording,
        source=program.source,
        checkpoint_loader=_checkpoint_loader(program, config),
    )
    session.message = f"opened checkpoint {path} (step {data.get('step', '?')} of its run)"
    session.note_stop(stopper)
    return session


def trace_session(store: Any, run_id: str | None = None, branch: int = 0) -> Session:
    """A session over a stored run (the latest when `run_id` is None)."""
    from runtime.errors import AgencyError
    from runtime.runs.fork import Timeline

    if run_id is None:
        latest = store.latest_run()
        if latest is None:
            raise AgencyError("the run store holds no runs yet")
        run_id = latest.id
    timeline = Timeline.open(store, run_id, branch)
    _first_step(timeline)

    def program() -> Any:
        from runtime.language.program import load_program

        return load_program(timeline.source_path)

    return Session(
        timeline, checkpoint_loader=_checkpoint_loader(program, _RecordedModel(timeline))
    )


FIRST_STEP_WAIT = 30.0  # seconds a run just started is given to record its first step
FIRST_STEP_LOOK = 0.05  # how often it is looked at meanwhile


def _first_step(timeline: Any) -> None:
    """A run just started by another process may have no step in the store yet (its first
    batch is on its way): wait for one, looking now and then, while the run says it runs."""
    import time

    from runtime.errors import AgencyError

    deadline = time.monotonic() + FIRST_STEP_WAIT
    while len(timeline) == 0:
        status = timeline.run.status if timeline.run is not None else None
        if status != "running":
            raise AgencyError(f"run {timeline.run_id} recorded no steps ({status})")
        if time.monotonic() > deadline:
            raise AgencyError(
                f"run {timeline.run_id} has recorded no step yet; open it again in a moment"
            )
        time.sleep(FIRST_STEP_LOOK)
        timeline.follow()


class _RecordedModel:
    """The model a stored run was recorded with, for runs continued from its checkpoints."""

    def __init__(self, timeline: Any) -> None:
        self.timeline = timeline

    def make_model(self) -> Any:
        from runtime.runs.fork import live_model

        return live_model(self.timeline)
