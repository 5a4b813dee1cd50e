"""Provides process bookkeeping for runs: which process records a run (pid, host, start time),
whether it is still alive, and marking the runs of dead processes `interrupted`.

It also says which one process continues a run (`claim_run`). On this host a claim's process
is checked by its pid; a process on another host (a run store shared through PostgreSQL)
cannot be, so a claim has a lease: its owner renews it from a heartbeat thread every third of
`AGENCY_LEASE_SECONDS` (default 30) while it runs, and a process on another host takes the run
over once the lease has ended (the owner died or lost the database), without `--force`. The
host is `AGENCY_HOST_ID` when set, else the machine's hostname.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from runtime.errors import AgencyError
from runtime.language.files import read_text
from runtime.record.store import LEASE_LEFT, StoreError
from runtime.record.writer import start_background

HOST_ENV = "AGENCY_HOST_ID"  # this machine's name in run owners (default: its hostname)
LEASE_ENV = "AGENCY_LEASE_SECONDS"  # how long a run's claim outlives its last heartbeat
DEFAULT_LEASE = 30.0


def this_host() -> str:
    """The name of this machine in run owners: `AGENCY_HOST_ID`, else the hostname."""
    import socket  # only here: `agency show` starts without it (start-up time)

    return os.environ.get(HOST_ENV) or socket.gethostname()


def lease_seconds() -> float:
    """The lease a claim gets (`AGENCY_LEASE_SECONDS`, default 30 s); bad values are refused."""
    text = os.environ.get(LEASE_ENV)
    if not text:
        return DEFAULT_LEASE
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < 86400 * 365:
        raise AgencyError(f"{LEASE_ENV} must be a number of seconds above 0, not {text!r}")
    return value


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


# (pid, host) -> process_meta(), so one process is always equal
_me: dict[tuple[int, str], dict[str, Any]] = {}


def process_meta() -> dict[str, Any]:
    """This process, as written in a run's meta (and as the owner of a run it continues)."""
    key = (os.getpid(), this_host())
    if key not in _me:
        stat = _proc_stat(key[0])
        started = stat[1] if stat is not None and stat[1] is not None else time.time()
        _me[key] = {"pid": key[0], "host": key[1], "started": round(started, 2)}
    return dict(_me[key])


def process_alive(proc: dict[str, Any]) -> bool | None:
    """Whether the process of a run's meta still runs: None when it cannot be told (another
    host, no pid)."""
    pid = proc.get("pid")
    if not isinstance(pid, int) or proc.get("host") != this_host():
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


def lease_expired(holder: dict[str, Any]) -> bool:
    """Whether a holder's lease has ended (False for a claim without one)."""
    left = holder.get(LEASE_LEFT)
    return isinstance(left, int | float) and left <= 0


def _takeover(force: bool, taken: list[dict[str, Any]]) -> Any:
    """Who may be taken over: a dead process on this host; on another host, one whose lease
    has ended, or any with `force`. The holder taken over goes to `taken`."""

    def may_take(holder: dict[str, Any]) -> bool:
        alive = process_alive(holder)
        ok = alive is False or (alive is None and (force or lease_expired(holder)))
        if ok:
            taken.append(holder)
        return ok

    return may_take


def owner_text(holder: dict[str, Any]) -> str:
    started = holder.get("started")
    since = (
        time.strftime(", started %Y-%m-%d %H:%M:%S UTC", time.gmtime(started))
        if isinstance(started, int | float)
        else ""
    )
    return f"pid {holder.get('pid')} on {holder.get('host')}{since}"


def busy_text(holder: dict[str, Any]) -> str:
    """Why a holder cannot be taken over, and what to do about it."""
    host = holder.get("host")
    if process_alive(holder) is not None:  # on this host, alive
        return "one process at a time continues a run, so wait for that one to end"
    left = holder.get(LEASE_LEFT)
    if isinstance(left, int | float):
        return (
            f"{host} renews its lease on the run while it runs, and the lease expires in "
            f"{_duration(left)}: if that process is gone, it can be taken over then (or now "
            "with --force)"
        )
    return (
        f"its process on {host} cannot be checked from here and holds no lease (an older "
        "agency); pass --force if it is gone"
    )


def _duration(seconds: float) -> str:
    seconds = max(seconds, 0.0)
    if seconds < 60:
        return f"{seconds:.0f}s" if seconds >= 10 else f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"


@dataclass
class _Lease:
    store: Any
    run_id: str
    owner: dict[str, Any]
    seconds: float
    due: float  # time.monotonic() of the next renewal


class Heartbeat:
    """One daemon thread per process that renews the lease of every run the process holds,
    each every third of its lease: one small write through the store's writer, whatever the
    run is doing (recording steps, waiting on a model or on a person's answer). A claim taken
    over meanwhile (this process was stopped or cut off for longer than its lease) is said so
    on stderr and no longer renewed."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._leases: dict[tuple[int, str], _Lease] = {}
        self._thread: threading.Thread | None = None

    def add(
        self, key: tuple[int, str], store: Any, run_id: str, owner: dict[str, Any], lease: float
    ) -> None:
        with self._cond:
            self._leases[key] = _Lease(store, run_id, owner, lease, time.monotonic() + lease / 3)
            if self._thread is None or not self._thread.is_alive():  # first, or after a fork
                self._thread = start_background(self._main, "agency-lease")
            self._cond.notify_all()

    def remove(self, key: tuple[int, str]) -> None:
        with self._cond:
            self._leases.pop(key, None)

    def _main(self) -> None:
        while True:
            with self._cond:
                now = time.monotonic()
                due = [(k, held) for k, held in self._leases.items() if held.due <= now]
                if not due:
                    nearest = min((held.due for held in self._leases.values()), default=None)
                    self._cond.wait(None if nearest is None else nearest - now)
                    continue
                for _, held in due:
                    held.due = now + held.seconds / 3
            for key, held in due:
                if not self._renew(held):
                    with self._cond:
                        if self._leases.get(key) is held:
                            del self._leases[key]

    def _renew(self, held: _Lease) -> bool:
        """Renew one lease; False once there is nothing left to renew."""
        try:
            if held.store.renew_lease(held.run_id, held.owner, held.seconds):
                return True
        except StoreError:
            # The database is away for now: again at the next beat. A closed store: stop.
            return not getattr(held.store, "_closed", False)
        except Exception:
            return False  # a store that cannot renew: its claim lives until released
        with self._cond:
            still = any(h is held for h in self._leases.values())
        if still:  # not released meanwhile: someone else holds the run now
            print(
                f"agency: run {held.run_id}: another process took this run over (its lease "
                "expired while this one could not renew it)",
                file=sys.stderr,
            )
        return False


_heartbeat = Heartbeat()


class Claim:
    """This process's hold on a run: taken by `claim_run`, given back by `release` (or at the
    end of a `with` block). Claims of one run in one process nest. `taken_from` is the holder
    this claim took over (a dead process, an expired lease, or any with force), if any."""

    def __init__(
        self,
        store: Any,
        run_id: str,
        owner: dict[str, Any],
        taken_from: dict[str, Any] | None = None,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.owner = owner
        self.taken_from = taken_from
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
        _heartbeat.remove(key)
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
    """Make this process the one owner of `run_id`, atomically in the store, with a lease that
    a heartbeat renews until the claim is released. A claim of a dead process is taken over; of
    a process on another host, once its lease has ended (with `force`, at once).
    Raises `RunBusy`, naming the owner, when another live process holds the run."""
    me = process_meta()
    key = (id(store), run_id)
    taken: list[dict[str, Any]] = []
    if not _held.get(key):
        lease = lease_seconds()
        holder = store.claim_run(run_id, me, _takeover(force, taken), lease=lease)
        if holder is not None:
            raise RunBusy(
                f"cannot {doing} run {run_id}: another process owns it ({owner_text(holder)}); "
                + busy_text(holder)
            )
        _heartbeat.add(key, store, run_id, me, lease)
    _held[key] = _held.get(key, 0) + 1
    return Claim(store, run_id, me, taken[-1] if taken else None)


def stale_reason(store: Any, run: Any) -> str | None:
    """Why a run marked `running` is in fact abandoned, or None when it may still run: its
    process is dead on this host, or, on another host, no process holds it any more or the
    holder's lease has ended (it died, or lost the database). Such a run is resumable: a
    resume takes it over."""
    if run.status != "running":
        return None
    proc = (run.meta or {}).get("process")
    proc = proc if isinstance(proc, dict) else {}
    alive = process_alive(proc)
    if alive is True:
        return None
    if alive is False:
        return f"its process (pid {proc.get('pid')}) is gone"
    holder = store.run_owner(run.id, lease=True)
    if holder is None:
        return "no process holds it"
    if lease_expired(holder):
        return f"the lease of {owner_text(holder)} ended {_duration(-holder[LEASE_LEFT])} ago"
    return None


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
