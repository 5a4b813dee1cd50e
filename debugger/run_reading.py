"""Provides how the commands over recorded runs find what they read (`open_store`, `parse_ref`,
`find_run`, `check_step`), and what `agency show` and `agency runs` print (`show_text`,
`runs_text`).

Nothing here imports click: the console script answers a plain `agency show` or `agency runs`
with these before click and the commands are loaded (`debugger/entry.py`, start-up time); the
commands of `debugger/store_commands.py` print the same text.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from runtime.errors import AgencyError, UsageError

__all__ = [
    "check_step",
    "find_run",
    "first_recorded",
    "lowest_where",
    "open_store",
    "parse_ref",
    "runs_text",
    "show_text",
    "RUNS_LIMIT",
]

RUNS_LIMIT = 50  # how many runs `agency runs` lists without --limit


def open_store(db: str | None, must_exist: bool = True, read_only: bool = False) -> Any:
    """The run store of --db / AGENCY_DB / .agency/runs.db. `read_only` (runs, show, export):
    opened for reading only, so a read-only store or directory can be read; runs whose process
    died are still marked interrupted first when the store can be written."""
    from runtime.record.sqlite_store import SQLiteStore
    from runtime.record.stores import open_run_store, store_location

    location = store_location(db)
    if isinstance(location, str):  # a database server: there is nothing to look at beforehand
        from runtime.record.store import StoreError

        try:
            store = open_run_store(location)
        except StoreError:
            if not read_only:
                raise
            return open_run_store(location, read_only=True)  # a role that may only read
        _reap(store)  # this host's runs whose process died show as interrupted
        return store
    path = location
    try:
        there = path.exists()
    except OSError as exc:  # a name too long: `exists` lets that through
        from runtime.record.store import StoreError

        raise StoreError(f"cannot open run store {path}: {exc.strerror or exc}") from None
    if must_exist and not there:
        raise UsageError(
            f"{path}: no run store here yet (run a program with `agency run` first, or pass --db)"
        )
    if not read_only:
        store = SQLiteStore(path)
        _reap(store)  # runs whose process died (kill -9) show as interrupted
        return store
    store = SQLiteStore(path, read_only=True)
    dead = any(
        run.status == "running"
        and isinstance(proc := (run.meta or {}).get("process"), dict)
        and _process_died(proc)
        for run in store.list_runs(200)
    )
    if dead and os.access(path, os.W_OK) and os.access(path.parent, os.W_OK):
        with SQLiteStore(path) as writable:
            _reap(writable)
    return store


# The process tools are imported only when used: reading a store of finished runs (`agency
# show`) needs none of them (start-up time).


def _reap(store: Any) -> None:
    """Mark the runs whose process died as interrupted."""
    from runtime.runs.processes import reap_dead_runs

    reap_dead_runs(store)


def _process_died(proc: dict[str, Any]) -> bool:
    """Whether the process a run's row names is known to be gone."""
    from runtime.runs.processes import process_alive

    return process_alive(proc) is False


def parse_ref(ref: str) -> tuple[str, int | None]:
    """`RUN` or `RUN:STEP`."""
    if ":" in ref:
        run, step = ref.rsplit(":", 1)
        digits = step.removeprefix("-")
        if not (digits.isascii() and digits.isdigit()) or len(step) > 18:  # not `٣`, `𝟑`
            raise UsageError(
                f"{shown_ref(ref)}: expected RUN or RUN:STEP (STEP a number), e.g. last:5"
            )
        if not run:
            raise UsageError(f"{shown_ref(ref)}: give the run before the step, e.g. last{ref}")
        return run, int(step)
    if not ref.strip():
        raise UsageError("give a run id (see `agency runs`) or `last`")
    return ref, None


def check_step(run: Any, step: int | None, n: int, tl: Any = None) -> int:
    """The step to show or export (default: the last), or a UsageError naming the range. With
    the timeline `tl`, a step before the first recorded one (a run started from a checkpoint
    records from the checkpoint's step on) is refused too."""
    if n == 0:
        if run.status == "running":  # its first steps are still in the writer's hands
            raise AgencyError(
                f"run {run.id} is running and has not recorded a step yet; try again in a moment"
            )
        raise AgencyError(f"run {run.id} recorded no steps")
    if step is None:
        return n - 1
    if not 0 <= step < n:
        raise UsageError(f"step {step} is outside run {run.id} (steps 0..{n - 1})")
    if tl is not None and not _recorded(tl, step):
        first = first_recorded(tl, n)
        raise UsageError(
            f"step {step} of run {run.id} was not recorded: the run started from a checkpoint, "
            f"so its record begins at step {first} (steps {first}..{n - 1})"
        )
    return step


def _recorded(tl: Any, step: int) -> bool:
    try:
        tl.kind_at(step)
        return tl.store.keyframe_at_or_before(tl.run_id, tl.branch, step) is not None
    except IndexError:
        return False


def first_recorded(tl: Any, n: int) -> int:
    """The lowest step of `n` that `show` can read (the last one always is)."""
    return lowest_where(n, lambda step: _recorded(tl, step))


def lowest_where(n: int, holds: Callable[[int], bool]) -> int:
    """The lowest of steps 0..n-1 for which `holds` is true, given that it holds for the last
    one and for every step after one where it holds (a binary search: O(log n) calls)."""
    lo, hi = -1, n - 1
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if holds(mid):
            hi = mid
        else:
            lo = mid
    return hi


def find_run(store: Any, run_ref: str) -> Any:
    if run_ref in ("last", "latest"):
        run = store.latest_run()
    else:
        run = store.get_run(run_ref)
    if run is None:
        if run_ref in ("last", "latest"):
            raise UsageError("no runs in this store yet (run a program with `agency run`)")
        raise UsageError(f"no run {shown_ref(run_ref)} in this store (see `agency runs`)")
    return run


def shown_ref(ref: str, limit: int = 80) -> str:
    """`ref` quoted for a message, cut to `limit` characters (a 100,000-character argument
    is not echoed whole)."""
    return repr(ref if len(ref) <= limit else ref[:limit] + "…")


def show_text(ref: str, db: str | None, branch: int, as_json: bool) -> str:
    """What `agency show REF [--db DB] [--branch N] [--json]` prints, every line ended."""
    from runtime.agents.storage import status_at
    from runtime.record.timeline import Timeline  # reading needs no machine (start-up time)

    run_ref, step = parse_ref(ref)
    store = open_store(db, read_only=True)
    run = find_run(store, run_ref)
    tl = Timeline.open(store, run.id, branch)
    step = check_step(run, step, len(tl), tl)
    n = len(tl)
    state = tl.state_at(step)
    status = status_at(run, branch, step, n, state.status)
    stopped = _stopped_here(store, run, branch, step == n - 1, status)
    if stopped is not None:
        status = stopped[0]
    if as_json:
        return json.dumps({**state.as_dict(), "status": status}, default=str) + "\n"
    loc = state.location
    lines = [f"run {run.id}  step {step}/{n - 1}  branch {branch}  status {status}"]
    if stopped is not None:
        lines.append(f"  {stopped[1]}; `agency resume {run.id}` continues it")
    if loc:
        lines.append(f"at {loc.file}:{loc.line}:{loc.col} in {loc.scope}")
    for f in state.frames:
        lines.append(f"  {f.kind} {f.scope} (line {f.line})")
        lines.extend(f"    {k} = {json.dumps(v)}" for k, v in {**f.args, **f.locals}.items())
    if state.globals:
        lines.append("globals:")
        lines.extend(f"  {k} = {json.dumps(v)}" for k, v in state.globals.items())
    if state.output:
        lines.append("output (last 5 lines):")
        lines.extend(f"  {line}" for line in state.output[-5:])
    lines.append(
        f"tokens in/out {state.usage.input_tokens}/{state.usage.output_tokens}"
        f"  cost ${state.usage.cost:.4f}"
    )
    return "".join(line + "\n" for line in lines)


def _stopped_here(
    store: Any, run: Any, branch: int, last: bool, status: str
) -> tuple[str, str] | None:
    """(status, why) when the last recorded step of a run's line says `running` but nothing
    runs it any more: its process was killed or crashed (the state of a step is recorded
    before its end is known, so only the run's row can tell)."""
    if not last or branch != 0 or status != "running":
        return None
    if run.status == "interrupted":
        return "interrupted", "the run stopped after this step"
    if run.status == "running":
        from runtime.runs.processes import stale_reason

        why = stale_reason(store, run)
        if why is not None:
            return "stale", f"nothing runs it any more: {why}"
    return None


def runs_text(db: str | None, limit: int, as_json: bool) -> tuple[str, str]:
    """What `agency runs [--db DB] [--limit N] [--json]` prints: the table as rich renders it
    for this stdout (escape sequences and all; empty with --json), then the lines
    `click.echo` prints (the JSON, or what the table calls stale)."""
    store = open_store(db, read_only=True)
    records = store.list_runs(limit)
    stale: dict[str, str] = {}
    if any(r.status == "running" for r in records):  # only those can be stale (start-up time)
        from runtime.runs.processes import stale_reason

        stale = {r.id: why for r in records if (why := stale_reason(store, r)) is not None}
    if as_json:
        listed = [
            {
                "id": r.id,
                "source": r.source_path,
                "node": r.node,
                "status": r.status,
                "steps": r.step_count,
                "created_at": r.created_at.isoformat(),
                "error": r.error,
                **({"damaged": r.meta["damaged"]} if "damaged" in r.meta else {}),
                **({"stale": stale[r.id]} if r.id in stale else {}),
            }
            for r in records
        ]
        return "", json.dumps(listed) + "\n"
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{len(records)} run{'s' if len(records) != 1 else ''}")
    for col in ("run", "source", "node", "status", "steps", "started"):
        table.add_column(col)
    for r in records:
        style = {"failed": "red", "interrupted": "yellow", "running": "cyan"}.get(r.status, "")
        status = f"[{style}]{r.status}[/]" if style else r.status
        if r.id in stale:  # `running` in the store, but nothing runs it (said below the table)
            status = "[yellow]stale[/]"
        if "damaged" in r.meta:  # a field of its row would not read: shown, not hiding the rest
            status += f" [red](damaged: {', '.join(r.meta['damaged'])})[/]"
        table.add_row(
            r.id,
            r.source_path,
            r.node,
            status,
            str(r.step_count),
            r.created_at.strftime("%Y-%m-%d %H:%M:%S"),
        )
    console = Console()
    with console.capture() as shown:  # what `console.print` writes to stdout, as text
        console.print(table)
    lines = "".join(
        f"run {run_id} is stale: {why}; `agency resume {run_id}` continues it\n"
        for run_id, why in stale.items()
    )
    return shown.get(), lines
