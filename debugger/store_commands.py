"""Provides the commands over recorded runs: runs, show, export, prune, resume, replay."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import click

from debugger.click_context import CONTEXT
from debugger.run_reading import (
    RUNS_LIMIT,
    check_step,
    find_run,
    open_store,
    parse_ref,
    runs_text,
    show_text,
)
from runtime.errors import AgencyError, UsageError


def db_option(fn: Any) -> Any:
    return click.option(
        "--db",
        type=click.Path(dir_okay=False),
        help="Run store: a SQLite file or a postgresql://user@host/db URL (default "
        ".agency/runs.db, or AGENCY_DB).",
    )(fn)


def max_store_option(fn: Any) -> Any:
    """`--max-store-size SIZE`: the run-store size cap of a command that records steps."""
    return click.option(
        "--max-store-size",
        metavar="SIZE",
        help="Stop (saved as interrupted, resumable) once the run store grows past SIZE, e.g. "
        "500M (default AGENCY_MAX_STORE_SIZE, else 8G).",
    )(fn)


# Fields of a run's row that re-executing it reads (its program, entry, model and answers).
_NEEDED_TO_RUN = {"config_json", "args_json", "meta_json", "source_path", "source_sha256", "node"}


def check_intact(run: Any, doing: str) -> None:
    """Refuse to re-execute a run whose row was damaged in the store (`run_from_row` reads a
    damaged field as empty): it would run something other than what was recorded."""
    damaged = sorted(_NEEDED_TO_RUN & set((run.meta or {}).get("damaged") or ()))
    if damaged:
        raise AgencyError(
            f"run {run.id} cannot be {doing}: its {', '.join(damaged)} in the run store "
            f"{'is' if len(damaged) == 1 else 'are'} damaged (the other runs are not affected)"
        )


def register(cli: click.Group) -> None:
    cli.add_command(runs)
    cli.add_command(show)
    cli.add_command(export)
    cli.add_command(prune)
    cli.add_command(resume)
    cli.add_command(replay)
    cli.add_command(copy)


@click.command(context_settings=CONTEXT)
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=RUNS_LIMIT,
    show_default=True,
    help="How many runs, newest first.",
)
def runs(db: str | None, as_json: bool, limit: int) -> None:
    """List recorded runs.

    \b
    Example:
      agency runs --limit 10
    """
    table, lines = runs_text(db, limit, as_json)
    if table:  # as rich prints it, escape sequences kept
        sys.stdout.write(table)
        sys.stdout.flush()
    click.echo(lines, nl=False)


@click.command(context_settings=CONTEXT)
@click.argument("ref")
@db_option
@click.option("--branch", default=0, show_default=True, help="Branch of the run.")
@click.option("--json", "as_json", is_flag=True, help="Print the state as JSON.")
def show(ref: str, db: str | None, branch: int, as_json: bool) -> None:
    """Print the state of a run at a step (default: its last step).

    REF is RUN or RUN:STEP; RUN is a run id from `agency runs`, a unique prefix of one, or
    `last` for the most recent run.

    \b
    Examples:
      agency show r1m8kgn1vfj1a        # the last step
      agency show r1m8kgn1vfj1a:42     # step 42
      agency show last:0 --json        # the first step of the latest run, as JSON
    """
    click.echo(show_text(ref, db, branch, as_json), nl=False)


@click.command(context_settings=CONTEXT)
@click.argument("ref")
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False),
    help="Checkpoint file to write.",
)
@db_option
@click.option("--branch", default=0, show_default=True, help="Branch of the run.")
def export(ref: str, output: str, db: str | None, branch: int) -> None:
    """Write a step of a recorded run as a checkpoint file.

    REF is RUN or RUN:STEP as for `agency show` (default: the last step).
    `agency run FILE --checkpoint cp.json` continues from it.

    \b
    Examples:
      agency export r1m8kgn1vfj1a:42 -o cp.json
      agency export last -o cp.json
    """
    from runtime.runs.fork import Timeline

    run_ref, step = parse_ref(ref)
    target = Path(output)
    from runtime.record.stores import store_location

    location = store_location(db)  # a database server has no file here to protect
    refuse_target(target, location if isinstance(location, Path) else default_store_path())
    store = open_store(db, read_only=True)
    run = find_run(store, run_ref)
    tl = Timeline.open(store, run.id, branch)
    step = check_step(run, step, len(tl), tl)
    if (run.meta or {}).get("kind") == "python-agent":
        export_agent_checkpoint(store, run, step, branch, Path(output))
        return
    check_intact(run, "exported (exporting re-executes it)")
    data = tl.export_checkpoint(step)
    write_atomically(Path(output), json.dumps(data, indent=1) + "\n")
    click.echo(f"wrote step {step} of run {run.id} to {output}")


def export_agent_checkpoint(store: Any, run: Any, step: int, branch: int, output: Path) -> None:
    """A Python agent's run: the checkpoint at `step` as JSON (messages, usage, session
    state), as `CheckpointManager.get` gives it."""
    from runtime.agents.manager import CheckpointManager
    from runtime.agents.storage import RunStoreStorage

    cp = CheckpointManager(RunStoreStorage(store)).at(run.id, step, branch)
    if cp is None:
        raise UsageError(f"step {step} of run {run.id} holds no checkpoint")
    write_atomically(output, json.dumps(cp.to_dict(), indent=1) + "\n")
    click.echo(f"wrote roundtrip {cp.roundtrip} (step {step}) of agent run {run.id} to {output}")


def refuse_target(path: Path, store: Path) -> None:
    """An export goes to a regular file (new or replaced): a device, FIFO, socket or directory
    is refused before anything is written beside it, as is a file the runtime owns (the run
    store)."""
    from runtime.language.files import kind_of, protected_reason

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise AgencyError(f"cannot write {path}: {exc.strerror or exc}") from None
    if mode is not None and not stat.S_ISREG(mode):
        raise AgencyError(f"cannot write {path}: it is {kind_of(mode)}, not a regular file")
    where = path.resolve()
    owned = protected_reason(where)
    if owned is None and any(
        where == store.resolve().with_name(store.name + suffix) for suffix in ("", "-wal", "-shm")
    ):
        owned = "the run store"
    if owned is not None:
        raise AgencyError(f"cannot write {path}: it is {owned}")


def default_store_path() -> Path:
    from runtime.record.sqlite_store import default_db_path

    return default_db_path()


def write_atomically(path: Path, text: str) -> None:
    """Write beside `path` and rename over it: a crash leaves the old file or the new one, never
    half of one. An unwritable place is an AgencyError naming it."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise AgencyError(f"cannot write {path}: {exc.strerror or exc}") from None


def parse_age(text: str) -> timedelta:
    m = re.fullmatch(r"(\d{1,12})\s*([smhdw])", text.strip().lower())
    if not m:
        raise UsageError(f"--older-than {text!r}: expected an age like 30m, 12h, 7d or 2w")
    n, unit = int(m.group(1)), m.group(2)
    try:
        return timedelta(
            **{{"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[unit]: n}
        )
    except OverflowError:
        raise UsageError(f"--older-than {text!r}: too long ago") from None


def parse_size(text: str) -> int:
    """`500MB`, `1GB`, `2.5g`, `800k`, `1000000` → bytes."""
    m = re.fullmatch(r"(\d{1,15}(?:\.\d{1,6})?)\s*([kmgt]?)(?:i?b)?", text.strip().lower())
    if not m:
        raise UsageError(f"--max-size {text!r}: expected a size like 500MB, 1GB or 800k")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2)]
    return int(float(m.group(1)) * scale)


@click.command(context_settings=CONTEXT)
@click.option(
    "--older-than",
    "older_than",
    help="Delete runs last updated longer ago than this (30m, 12h, 7d, 2w).",
)
@click.option(
    "--keep",
    "keep_latest",
    type=click.IntRange(min=0),
    metavar="N",
    help="Delete every run but the N most recently updated.",
)
@click.option(
    "--max-size",
    "max_size",
    metavar="SIZE",
    help="Delete the oldest runs until the rest record at most SIZE (500MB, 1GB).",
)
@click.option("--keep-failed", is_flag=True, help="Keep failed runs, however old.")
@db_option
def prune(
    older_than: str | None,
    keep_latest: int | None,
    max_size: str | None,
    db: str | None,
    keep_failed: bool,
) -> None:
    """Delete old runs from the store (recorded runs do not expire by themselves).

    Give one or more rules; a run goes when any of them says so. One transaction: each run
    goes whole or stays whole. A run being recorded, resumed or replayed (by any process, on
    any machine sharing the store) is never deleted.

    \b
    Examples:
      agency prune --older-than 7d
      agency prune --older-than 7d --keep-failed
      agency prune --keep 100
      agency prune --max-size 1GB
    """
    from runtime.runs.processes import process_alive

    if older_than is None and keep_latest is None and max_size is None:
        raise UsageError("say what to delete: --older-than AGE, --keep N or --max-size SIZE")
    age = parse_age(older_than) if older_than is not None else None
    max_bytes = parse_size(max_size) if max_size is not None else None
    store = open_store(db)  # runs whose process died are marked interrupted first
    live = [
        run.id
        for run in store.list_runs(1_000_000)
        if run.status == "running"
        and isinstance((run.meta or {}).get("process"), dict)
        and process_alive(run.meta["process"]) is True
    ]
    n = store.prune(
        age, keep=live, keep_failed=keep_failed, keep_latest=keep_latest, max_bytes=max_bytes
    )
    busy = f" ({len(live)} being recorded, never deleted)" if live else ""
    click.echo(f"deleted {n} run{'s' if n != 1 else ''}{busy}")


@click.command(context_settings=CONTEXT)
@click.argument("run_ref", required=False)
@click.option("--last", is_flag=True, help="Resume the most recent run in the store.")
@db_option
@click.option("--approve", is_flag=True, help="Approve the interrupt the run is waiting on.")
@click.option("--reject", is_flag=True, help="Reject the interrupt the run is waiting on.")
@click.option(
    "--resolve", "resolve_json", metavar="JSON", help="Answer the interrupt with this value."
)
@click.option(
    "--force", is_flag=True, help="Resume even if the source or the model configuration changed."
)
@click.option(
    "--model",
    "model_spec",
    metavar="PROVIDER/NAME",
    help="Model for the rest of the run (default: the recorded one; another one needs --force).",
)
@click.option("--base-url", help="Base URL of the model's endpoint (default: the recorded one).")
@click.option(
    "--mock",
    type=click.Path(dir_okay=False),
    help="Scripted model answers for the rest of the run (default: the recorded ones).",
)
@click.option("--json", "as_json", is_flag=True, help="Also print the result as JSON.")
@max_store_option
def resume(
    run_ref: str | None,
    last: bool,
    db: str | None,
    approve: bool,
    reject: bool,
    resolve_json: str | None,
    force: bool,
    model_spec: str | None,
    base_url: str | None,
    mock: str | None,
    as_json: bool,
    max_store_size: str | None,
) -> None:
    """Continue a run that stopped (killed, timed out, Ctrl-C, waiting on an interrupt) from its
    last completed step.

    Earlier steps are re-executed from the record: no model is called for them and no side
    effect is repeated (the effect journal returns what each one did). Then the run goes on
    live, on the same run: its step count continues. A changed source or a different model
    configuration is refused unless --force.

    \b
    Examples:
      agency resume --last
      agency resume r1m8kgn1vfj1a --approve
      agency resume r1m8kgn1vfj1a --resolve '{"city": "Paris"}'
    """
    from debugger.cli import finish, interactive_answer
    from runtime.errors import EXIT_STOPPED
    from runtime.runs.resume import resume_run
    from runtime.runs.runner import decision_from
    from runtime.runs.stopping import GracefulStop, Stopper, max_store_bytes

    if sum(bool(x) for x in (approve, reject, resolve_json is not None)) > 1:
        raise UsageError("choose one of --approve, --reject and --resolve")
    if run_ref and last:
        raise UsageError("give a run or --last, not both")
    if run_ref is not None and not run_ref.strip():  # an empty argument is not "the latest"
        raise UsageError("give a run id (see `agency runs`), `last`, or --last")
    stopper = Stopper(None, max_store_bytes(max_store_size))
    store = open_store(db)
    if run_ref and run_ref not in ("last", "latest"):
        run = find_run(store, run_ref)
    else:
        run = store.latest_run()
        if run is None:
            raise UsageError("no runs in this store yet (run a program with `agency run`)")
    check_intact(run, "resumed")
    decision = None
    if approve:
        decision = decision_from("approve")
    elif reject:
        decision = decision_from("reject")
    elif resolve_json is not None:
        from runtime.language.files import JSONTooDeep, loads_json

        try:
            decision = decision_from("resolve", loads_json(resolve_json))
        except JSONTooDeep as exc:
            raise UsageError(f"--resolve: {exc.msg}") from None
        except json.JSONDecodeError as exc:
            raise UsageError(f"--resolve is not valid JSON: {exc.msg}") from None
    mocks = None
    if mock:
        from debugger.cli import read_mocks

        mocks = read_mocks(mock)
    stop = GracefulStop(None)  # type: ignore[arg-type]
    try:
        machine = resume_run(
            store,
            run,
            progress=_progress_bar(label="re-executing the record"),
            decision=decision,
            force=force,
            model_spec=model_spec,
            base_url=base_url,
            mocks=mocks,
            answer=interactive_answer(False, False),
            notice=lambda text: click.echo(f"agency: {text}", err=True),
            stop=stop,
            stopper=stopper,
        )
    finally:
        store.close()
    if stop.stopped():
        click.echo(
            f"agency: stopped at step {machine.step_index} ({stop.signal_name}); the run is "
            f"saved as interrupted: continue it with `agency resume {run.id}`",
            err=True,
        )
        sys.exit(stop.exit_code())
    if stopper.stopped():
        click.echo(
            f"agency: {stopper.reason()} at step {machine.step_index}; the run is saved as "
            f"interrupted: continue it with `agency resume {run.id}`",
            err=True,
        )
        sys.exit(EXIT_STOPPED)
    finish(machine, as_json)


@click.command(context_settings=CONTEXT)
@click.argument("run_ref", required=False)
@click.option("--last", is_flag=True, help="Replay the most recent run in the store.")
@db_option
@click.option(
    "--from",
    "from_step",
    type=int,
    default=0,
    show_default=True,
    metavar="STEP",
    help="Show output from this step on (the run is still re-executed from its start).",
)
@click.option(
    "--then-live", is_flag=True, help="At a divergence, continue live instead of stopping."
)
@click.option("--json", "as_json", is_flag=True, help="Also print the result as JSON.")
def replay(
    run_ref: str | None,
    last: bool,
    db: str | None,
    from_step: int,
    then_live: bool,
    as_json: bool,
) -> None:
    """Re-execute a recorded run offline: every model answer and tool result comes from the
    record, no model is called, side effects are not performed, so the result is the recorded
    one. If the program now asks for something the record does not have (its source was
    edited), stop there and report where it diverged (exit 4), or go on live with --then-live.

    \b
    Examples:
      agency replay r1m8kgn1vfj1a
      agency replay --last --from 500
      agency replay r1m8kgn1vfj1a --then-live
    """
    from debugger.cli import finish, interactive_answer
    from runtime.errors import EXIT_DIVERGED
    from runtime.runs.processes import claim_run
    from runtime.runs.replay import replay_run
    from runtime.runs.stopping import GracefulStop

    if run_ref and last:
        raise UsageError("give a run or --last, not both")
    if not run_ref and not last:
        raise UsageError("which run? give its id (see `agency runs`) or --last")
    store = open_store(db)
    run = find_run(store, run_ref or "last")
    check_intact(run, "replayed")
    if from_step < 0 or (run.step_count and from_step >= run.step_count):
        store.close()
        raise UsageError(f"--from {from_step}: run {run.id} has steps 0..{run.step_count - 1}")
    bar = _progress_bar(from_step)
    claim = None
    # Ctrl-C or SIGTERM stops the replay at the next step boundary; a second one at once.
    stop = GracefulStop(None)  # type: ignore[arg-type]
    machine = None
    divergence = None
    try:
        if then_live:  # going live continues the run: one process at a time
            claim = claim_run(store, run.id, doing="replay --then-live")
        machine, divergence = replay_run(
            store,
            run,
            then_live=then_live,
            from_step=from_step,
            progress=bar,
            answer=interactive_answer(False, False),
            stop=stop,
        )
    except KeyboardInterrupt as exc:  # before the replay began
        stop.cut(exc)
    finally:
        if bar is not None:
            bar(-1, -1)
        if claim is not None:
            claim.release()
        store.close()
    if machine is None or stop.stopped():
        at = f" at step {machine.step_index}" if machine is not None else ""
        if divergence and then_live:
            what = (
                f"after it went live ({divergence}); what ran live was not recorded, and the "
                "recorded run is unchanged"
            )
        else:
            what = "a replay changes nothing, so there is nothing to clean up"
        click.echo(
            f"agency: replay of run {run.id} stopped{at} ({stop.signal_name}); {what}",
            err=True,
        )
        sys.exit(stop.exit_code())
    if divergence and not then_live:
        click.echo(f"agency: {divergence}", err=True)
        sys.exit(EXIT_DIVERGED)
    if divergence:
        click.echo(f"agency: {divergence}; continued live", err=True)
    elif machine.status in ("running", "interrupted"):
        # The record ends before the run did (killed, stopped, waiting on an interrupt).
        pending = machine.pending if machine.status == "interrupted" else None
        why = "the run stopped there"
        if pending is not None:
            message = pending.get("message") if isinstance(pending, dict) else pending
            why = f"the run is waiting there on an interrupt: {message}"
        click.echo(
            f"agency: replayed the {run.step_count} recorded steps of run {run.id}; {why} "
            f"(continue it with `agency resume {run.id}`)",
            err=True,
        )
        return
    machine.run_id = ""  # a replay is not a run to resume: no resume hint
    finish(machine, as_json)


def _progress_bar(from_step: int = 0, label: str = "replaying") -> Any:
    """A rich progress bar on stderr (when it is a terminal); `update(-1, -1)` closes it."""
    if not sys.stderr.isatty():
        return None
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    progress = Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task: dict[str, Any] = {"id": None}

    def update(step: int, total: int) -> None:
        if step < 0:
            if task["id"] is not None:
                progress.stop()
            return
        if task["id"] is None:
            if total < 2000:
                return  # short replays need no bar
            progress.start()
            task["id"] = progress.add_task(label, total=total, completed=from_step)
        progress.update(task["id"], completed=min(step, total))

    return update


@click.command(context_settings=CONTEXT)
@click.argument("run_refs", nargs=-1, metavar="[RUN]...")
@click.option("--from", "source", required=True, metavar="STORE", help="Store to copy from.")
@click.option("--to", "target", required=True, metavar="STORE", help="Store to copy into.")
def copy(run_refs: tuple[str, ...], source: str, target: str) -> None:
    """Copy runs from one store to another (default: every run), under the same ids.

    A STORE is a SQLite file or a postgresql://user@host/db URL. Runs already in the target
    are left alone; a copy cut short is done again.

    \b
    Example:
      agency copy --from .agency/runs.db --to postgresql://me@db.internal/agency
    """
    from runtime.record.copy import copy_run
    from runtime.record.stores import describe, open_run_store, store_location

    src_location = store_location(source)
    if isinstance(src_location, Path) and not src_location.is_file():
        raise UsageError(f"{source}: no run store here")
    if describe(src_location) == describe(store_location(target)):
        raise UsageError("--from and --to name the same store")
    with open_run_store(src_location, read_only=True) as src, open_run_store(target) as dst:
        runs = [find_run(src, ref) for ref in run_refs] or src.list_runs(10**9)[::-1]
        copied = skipped = steps = 0
        for run in runs:
            n = copy_run(src, dst, run.id)
            if n is None:
                skipped += 1
            else:
                copied += 1
                steps += n
    tail = f"; {skipped} already there" if skipped else ""
    click.echo(
        f"copied {copied} run{'s' if copied != 1 else ''} ({steps} steps) to "
        f"{describe(store_location(target))}{tail}"
    )
