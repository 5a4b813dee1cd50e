"""Provides the `agency debugger` command (alias `agency debug`): open the time-travel debugger
on a program (recording a run of it), on a checkpoint file beside its source, or on a run
stored in a run store. `register(cli)` adds it to the `agency` group."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from runtime.errors import EXIT_TERMINATED

__all__ = ["register", "build_app", "DEFAULT_MAX_STEPS"]

DEFAULT_MAX_STEPS = 1_000_000  # a program that never ends stops here (resumable), not in swap


def build_app(
    file: str | None,
    *,
    config: Any = None,
    checkpoint: str | None = None,
    trace: str | None = None,
    run_id: str | None = None,
    db: str | None = None,
    record: bool = True,
    max_steps: int | None = DEFAULT_MAX_STEPS,
    max_store_size: str | None = None,
) -> Any:
    """The DebuggerApp for these options. Problems found before anything runs (a syntax error,
    a checkpoint of another source, a missing file) raise AgencyError here, so the command
    prints them and exits non-zero without a traceback."""
    from debugger.app import DebuggerApp
    from debugger.opening import checkpoint_session, record_session, trace_session
    from runtime.errors import AgencyError
    from runtime.runs.stopping import Stopper, max_store_bytes

    cap = max_store_bytes(max_store_size)  # what every recording and restore may grow it to
    if trace is not None or (run_id is not None and checkpoint is None):
        from runtime.record.stores import describe, open_run_store, store_location

        location = store_location(trace or db)
        path = describe(location)
        if isinstance(location, Path) and not location.is_file():
            raise AgencyError(f"{path}: no such run store")
        try:
            store = open_run_store(location)
        except AgencyError:  # a read-only store or directory: it can still be read (no restore)
            store = open_run_store(location, read_only=True)
        if run_id is None or run_id in ("last", "latest"):  # as `agency show last`
            found = store.latest_run()
        else:
            found = store.get_run(run_id)
        if found is None:
            what = f"no run {run_id!r}" if run_id is not None else "no runs"
            raise AgencyError(f"{path}: {what} in this run store")
        return DebuggerApp(
            # a Python agent's run opens on its current line (a rollback forks the run)
            opener=lambda progress: capped(
                trace_session(store, found.id, int((found.meta or {}).get("head") or 0)), cap
            ),
            opening=f"opening run {found.id}",
        )

    if file is None and checkpoint is not None:
        file = checkpoint_source(checkpoint)
    if file is None:
        raise click.UsageError("give a FILE to debug, or --trace RUNS.db")
    from runtime.language.program import load_program

    if not Path(file).exists() and not file.endswith(".agency"):  # `agency debugger last`?
        raise AgencyError(
            f"{file}: no such file (a recorded run opens with `agency debugger --run {file}`)"
        )
    program = load_program(file)
    recorded_in: Any = None  # None: in memory
    if record:
        from runtime.record.stores import open_run_store

        recorded_in = open_run_store(db)
    if checkpoint is not None:
        from runtime.vm.checkpoint_reading import load_file

        load_file(checkpoint, program)  # refuse a foreign or broken checkpoint before starting
        stopper = Stopper(max_steps, cap)
        return DebuggerApp(
            opener=lambda progress: checkpoint_session(
                program, checkpoint, config, recorded_in, progress, stopper
            ),
            opening=f"running on from {checkpoint}",
            stopper=stopper,
        )
    stopper = Stopper(max_steps, cap)
    return DebuggerApp(
        opener=lambda progress: record_session(program, config, recorded_in, progress, stopper),
        opening=f"recording a run of {file}",
        stopper=stopper,
    )


def capped(session: Any, cap: int) -> Any:
    """`session`, its restores held to the run-store size cap `cap`."""
    session.max_store_bytes = cap
    return session


def checkpoint_source(checkpoint: str) -> str:
    """The source file a checkpoint names (resolved beside the checkpoint when relative and not
    found here); says which file it needs when it is not there."""
    from runtime.errors import AgencyError
    from runtime.language.program import checked_source
    from runtime.vm.checkpoint_reading import load_file

    data = load_file(checkpoint)
    source = data.get("source")
    if not isinstance(source, dict):
        source = {}
    path = source.get("path")
    if not isinstance(path, str) or not path:
        raise AgencyError(f"{checkpoint} does not name its source file: give it, FILE --checkpoint")
    candidates = [Path(path)]
    if not Path(path).is_absolute():
        candidates.append(Path(checkpoint).resolve().parent / path)
    for candidate in candidates:
        if candidate.is_file():
            return checked_source(candidate, source.get("sha256"), checkpoint)
    raise AgencyError(
        f"{checkpoint} was taken in {path}, which is not there: "
        f"agency debugger PATH/TO/{Path(path).name} --checkpoint {checkpoint}"
    )


def register(cli: click.Group) -> None:
    """Add `debugger` and its alias `debug` to the `agency` command group."""
    from debugger.cli import entry_options, make_config, model_options
    from debugger.click_context import CONTEXT

    @click.command("debugger", context_settings=CONTEXT)
    @click.argument("file", required=False, type=click.Path(dir_okay=False))
    @entry_options
    @model_options
    @click.option(
        "--checkpoint",
        "checkpoint_file",
        type=click.Path(dir_okay=False),
        help="Open a checkpoint file beside its source and run on from it.",
    )
    @click.option(
        "--trace",
        type=click.Path(dir_okay=False),
        metavar="RUNS.db",
        help="Open a recorded run from a run store instead of running the program.",
    )
    @click.option(
        "--run", "run_id", metavar="ID", help="Which stored run to open (default: the latest)."
    )
    @click.option(
        "--no-record",
        is_flag=True,
        help="Keep the run in memory only (by default it goes to the run store, as with run).",
    )
    @click.option(
        "--db",
        type=click.Path(dir_okay=False),
        help="Run store to record into or open from (default .agency/runs.db, or AGENCY_DB).",
    )
    @click.option(
        "--max-steps",
        type=click.IntRange(min=1),
        default=DEFAULT_MAX_STEPS,
        show_default=True,
        metavar="N",
        help="Stop the recording after N steps (the run stays resumable); esc stops it sooner.",
    )
    @click.option(
        "--max-store-size",
        metavar="SIZE",
        help="Stop a recording or a restore (resumable) once the run store grows past SIZE, "
        "e.g. 500M (default AGENCY_MAX_STORE_SIZE, else 8G).",
    )
    def debugger(
        file: str | None,
        node: str,
        allow_write: tuple[str, ...],
        args_json: str | None,
        model_spec: str | None,
        base_url: str | None,
        mock: str | None,
        seed: int,
        checkpoint_file: str | None,
        trace: str | None,
        run_id: str | None,
        no_record: bool,
        db: str | None,
        max_steps: int,
        max_store_size: str | None,
    ) -> None:
        """Open the time-travel debugger: step back and forth through a run, inspect it, edit a
        value and restore from that step.

        \b
        Examples:
          agency debugger examples/dice.agency --mock examples/dice.mocks.json
          agency debug agent.agency --node greet --args '["Ada"]'
          agency debugger agent.agency --checkpoint cp.json
          agency debugger --trace .agency/runs.db --run r1m8kdw1
          agency debugger agent.agency --run r1m8kdw1     (a run of it in the default store)
        Inside, the footer shows the main keys and ? lists them all.
        """
        if trace is not None and checkpoint_file is not None:
            raise click.UsageError("--trace and --checkpoint do not go together")
        config = None
        if trace is None and run_id is None:
            config = make_config(node, args_json, model_spec, base_url, mock, seed, allow_write)
            config.quiet = True
        app = build_app(
            file,
            config=config,
            checkpoint=checkpoint_file,
            trace=trace,
            run_id=run_id,
            db=db,
            record=not no_record,
            max_steps=max_steps,
            max_store_size=max_store_size,
        )
        app.run()
        code = app.return_code or 0
        if code == EXIT_TERMINATED:
            _end_within_grace(code)
        if code:
            sys.exit(code)

    cli.add_command(debugger, "debugger")
    cli.add_command(debugger, "debug")


def _end_within_grace(code: int) -> None:
    """After SIGTERM the app has quit; the process ends once its workers' threads have (a
    recording stops at its next step and is saved). One waiting on a model request in flight
    is not waited for past the stop grace (`AGENCY_STOP_GRACE`): a stop never hangs."""
    import os
    import threading

    from runtime.errors import AgencyError
    from runtime.runs.stopping import DEFAULT_STOP_GRACE, stop_grace

    try:
        grace = stop_grace()
    except AgencyError:
        grace = DEFAULT_STOP_GRACE

    def end() -> None:
        sys.stderr.flush()
        os._exit(code)

    timer = threading.Timer(grace, end)
    timer.daemon = True
    timer.start()
