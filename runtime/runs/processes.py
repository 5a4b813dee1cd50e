"""Provides process bookkeeping for runs: which process records a run (pid, host, start time),
whether it is still alive, and marking the runs of dead processes `interrupted`."""

from __future__ import annotations

import os
import socket
import time
from types import TracebackType
from typing import Any

from runtime.errors import AgencyError
from runtime.language.files import read_text
from runtime.record.store import StoreError


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


_me: dict[int, dict[str, Any]] = {}  # pid -> process_meta(), so one process is always equal


def process_meta() -> dict[str, Any]:
    """This process, as written in a run's meta (and as the owner of a run it continues)."""
    pid = os.getpid()
    if pid not in _me:
        stat = _proc_stat(pid)
        started = stat[1] if stat is not None and stat[1] is not None else time.time()
        _me[pid] = {"pid": pid, "host": socket.gethostname(), "started": round(started, 2)}
    return dict(_me[pid])


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
                    lines = read_text(loc.file, "source file").splitlines()
                except (OSError, UnicodeDecodeError, AgencyError):
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


# -- owning a run --------------------------------------------------------------------------------


class RunBusy(AgencyError):
    """Another live process continues this run (resume, replay --then-live, a fork)."""

    exit_code = 75  # EX_TEMPFAIL: try again once that process has ended


_held: dict[tuple[int, str], int] = {}  # (id(store), run id) -> claims this process holds


def _takeover(force: bool) -> Any:
    def may_take(holder: dict[str, Any]) -> bool:
        alive = process_alive(holder)
        return alive is False or (force and alive is None)

    return may_take


def owner_text(holder: dict[str, Any]) -> str:
    started = holder.get("started")
    since = (
        time.strftime(", started %Y-%m-%d %H:%M:%S UTC", time.gmtime(started))
        if isinstance(started, int | float)
        else ""
    )
    return f"pid {holder.get('pid')} on {holder.get('host')}{since}"


class Claim:
    """This process's hold on a run: taken by `claim_run`, given back by `release` (or at the
    end of a `with` block). Claims of one run in one process nest."""

    def __init__(self, store: Any, run_id: str, owner: dict[str, Any]) -> None:
        self.store = store
        self.run_id = run_id
        self.owner = owner
        self.released = False

    def release(self) -> None:
        if self.released:
            return
        self.released = True
        key = (id(self.store), self.run_id)
        _held[key] -= 1
        if _held[key]:
            return
        del _held[key]
        try:
            self.store.release_run(self.run_id, self.owner)
        except StoreError:
            pass  # the store is closed or gone: a dead owner's claim is taken over anyway

    def __enter__(self) -> Claim:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def claim_run(store: Any, run_id: str, *, force: bool = False, doing: str = "continue") -> Claim:
    """Make this process the one owner of `run_id`, atomically in the store; a claim of a dead
    process is taken over (with `force`, also one whose liveness cannot be told: another host).
    Raises `RunBusy`, naming the owner, when another live process holds the run."""
    me = process_meta()
    key = (id(store), run_id)
    if not _held.get(key):
        holder = store.claim_run(run_id, me, _takeover(force))
        if holder is not None:
            raise RunBusy(
                f"cannot {doing} run {run_id}: another process owns it ({owner_text(holder)}); "
                "one process at a time continues a run, so wait for that one to end"
            )
    _held[key] = _held.get(key, 0) + 1
    return Claim(store, run_id, me)


def reap_dead_runs(store: Any, runs: list[Any] | None = None, limit: int = 200) -> list[str]:
    """Mark `interrupted` every run still `running` whose recording process is gone (killed,
    crashed) on this host. Returns their ids. A run another live process has claimed (resumed
    it) is left alone: the run is claimed first and its status read again under the claim."""
    reaped: list[str] = []
    for listed in runs if runs is not None else store.list_runs(limit):
        if listed is None or listed.status != "running":
            continue
        proc = (listed.meta or {}).get("process")
        if not isinstance(proc, dict) or process_alive(proc) is not False:
            continue
        try:
            claim = claim_run(store, listed.id)
        except RunBusy:
            continue
        except StoreError:
            continue  # a read-only store: it is shown as it is
        with claim:
            run = store.get_run(listed.id)
            proc = (run.meta or {}).get("process") if run is not None else None
            if run is None or run.status != "running" or not isinstance(proc, dict):
                continue
            if process_alive(proc) is not False:
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
