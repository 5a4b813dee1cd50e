"""Provides process bookkeeping for runs: which process records a run (pid, host, start time),
whether it is still alive, and marking the runs of dead processes `interrupted`."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any


def _boot_time() -> float | None:
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except OSError:
        return None
    return None


def _proc_stat(pid: int) -> tuple[str, float | None] | None:
    """(state letter, start time in seconds since the epoch) of a process, from /proc."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    boot = _boot_time()
    try:
        ticks = int(fields[19])
        started = boot + ticks / os.sysconf("SC_CLK_TCK") if boot is not None else None
    except (IndexError, ValueError, OSError):
        started = None
    return fields[0] if fields else "?", started


def process_meta() -> dict[str, Any]:
    """This process, as written in a run's meta."""
    stat = _proc_stat(os.getpid())
    started = stat[1] if stat is not None and stat[1] is not None else time.time()
    return {"pid": os.getpid(), "host": socket.gethostname(), "started": round(started, 2)}


def process_alive(proc: dict[str, Any]) -> bool | None:
    """Whether the process of a run's meta still runs: None when it cannot be told (another
    host, no pid)."""
    pid = proc.get("pid")
    if not isinstance(pid, int) or proc.get("host") != socket.gethostname():
        return None
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    except OSError:
        return None
    stat = _proc_stat(pid)
    if stat is None:
        return not os.path.isdir("/proc")  # no /proc: believe kill()
    state, started = stat
    if state in ("Z", "X"):
        return False
    recorded = proc.get("started")
    if isinstance(recorded, int | float) and started is not None and abs(started - recorded) > 2.0:
        return False  # the pid belongs to another process now
    return True


def mark_running(store: Any, run_id: str, root: Any = None, program: Any = None) -> None:
    """Write this process (and the run's working directory, and the text of the program's
    statements, for replay to quote) into the run's meta, durably."""
    run = store.get_run(run_id)
    meta = dict((run.meta if run is not None else None) or {})
    meta["process"] = process_meta()
    if root is not None:
        meta["cwd"] = str(root)
    if program is not None:
        meta["statements"] = statement_texts(program)
    store.update_run(run_id, meta=meta)
    store.flush()


def statement_texts(program: Any) -> list[str]:
    """The source text of every step location (whitespace collapsed, at most 120 characters),
    in the order of the recorder's location table."""
    sources: dict[str, list[str]] = {program.path: program.source.splitlines()}
    out = []
    for code in [program.module, *program.functions.values()]:
        for loc in code.locations:
            lines = sources.get(loc.file)
            if lines is None:
                try:
                    lines = Path(loc.file).read_text(encoding="utf-8").splitlines()
                except OSError:
                    lines = []
                sources[loc.file] = lines
            out.append(span_text(lines, loc))
    return out


def span_text(lines: list[str], loc: Any) -> str:
    if not 0 < loc.line <= len(lines):
        return ""
    if loc.end_line == loc.line:
        text = lines[loc.line - 1][loc.col - 1 : loc.end_col - 1]
    else:
        text = " ".join(
            [
                lines[loc.line - 1][loc.col - 1 :],
                *lines[loc.line : loc.end_line - 1],
                lines[min(loc.end_line, len(lines)) - 1][: loc.end_col - 1],
            ]
        )
    text = " ".join(text.split())
    return text[:120]


def reap_dead_runs(store: Any, runs: list[Any] | None = None, limit: int = 200) -> list[str]:
    """Mark `interrupted` every run still `running` whose recording process is gone (killed,
    crashed) on this host. Returns their ids."""
    reaped: list[str] = []
    for run in runs if runs is not None else store.list_runs(limit):
        if run is None or run.status != "running":
            continue
        proc = (run.meta or {}).get("process")
        if not isinstance(proc, dict) or process_alive(proc) is not False:
            continue
        store.update_run(
            run.id,
            status="interrupted",
            error=f"the process recording it (pid {proc.get('pid')}) ended without finishing it",
        )
        reaped.append(run.id)
    if reaped:
        store.flush()
    return reaped
