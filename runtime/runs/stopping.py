"""Provides stopping a run cleanly: Ctrl-C or SIGTERM at a step boundary (`GracefulStop`), a
step budget and a cancel flag any thread may raise (`Stopper`), recording the answers given to
interrupts, and marking a stopped run."""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from runtime.errors import EXIT_STOPPED, EXIT_TERMINATED, AgencyError, Terminated, UsageError
from runtime.record.sqlite_store import file_size
from runtime.record.writer import start_background
from runtime.vm.frames import Decision
from runtime.vm.machine import Machine
from runtime.vm.values import to_plain
from runtime.vm.writelog import INTERRUPTED


class Stopper:
    """Stops a run at a step boundary from outside it: after `max_steps` steps (counted from
    where the run was when attached), or as soon as `cancel()` is called, from any thread (a
    debugger's Esc or quit). The machine keeps its state, so a stopped run is resumable.

    It works through the machine's `stop_at`, which the run loop checks at every step."""

    def __init__(self, max_steps: int | None = None, max_store_bytes: int | None = None) -> None:
        self.max_steps = max_steps
        self.max_store_bytes = max_store_bytes  # see `watch_store`
        self.cancelled = False
        self.why = ""
        self.machine: Machine | None = None
        self.start = -1

    def attach(self, machine: Machine) -> None:
        self.machine = machine
        self.start = machine.step_index

    def cancel(self, why: str = "cancelled") -> None:
        """Stop at the next step boundary (safe from another thread or a signal handler)."""
        if not self.cancelled:
            self.why = why
        self.cancelled = True
        m = self.machine
        if m is not None:
            m.stop_at = m.step_index

    def watch_store(self, store: Any, recorder: Any) -> Callable[[], None]:
        """Stop the run (resumable) once the run store grows past `max_store_bytes`, or would
        once what the recorder has written is committed: looked at each time the recorder
        writes a batch of steps. A store in a file (SQLite: `size_bytes`, the file and its
        `-wal`) is capped whole, as on a laptop; a store in a database server (PostgreSQL,
        shared by a team, grown by every writer at once, bounded by `agency prune`) or in
        memory caps what this command writes to it. Returns what stops the watching (for a
        recorder that goes on under another stopper)."""
        measure = getattr(store, "size_bytes", None)
        if self.max_store_bytes is None or recorder is None:
            return lambda: None
        limit = self.max_store_bytes
        where = getattr(store, "where", "in memory")
        # A file grows only when the store's writer thread commits, which can lag the
        # recorder by many batches on a fast machine: what the recorder has handed the store
        # since the watch began counts at once.
        start, handed = (measure() if measure else 0), recorder.bytes_written

        def check(step: int) -> None:
            added = recorder.bytes_written - handed
            size = max(measure(), start + added) if measure else added
            if size > limit and not self.cancelled:
                grown = (
                    f"the run store {where} has grown to {size_text(size)}"
                    if measure
                    else f"this run has written {size_text(size)} to the run store {where}"
                )
                self.cancel(
                    f"stopped: {grown}, over the {size_text(limit)} allowed "
                    f"(--max-store-size, {MAX_STORE_ENV})"
                )

        recorder.listeners.append(check)

        def unwatch() -> None:
            if check in recorder.listeners:
                recorder.listeners.remove(check)

        return unwatch

    def budget(self) -> float:
        """The step index to stop at, at the latest."""
        if self.max_steps is None:
            return math.inf
        return self.start + self.max_steps

    def stopped(self) -> bool:
        """The run stopped because of this stopper (not finished, failed or waiting)."""
        m = self.machine
        if m is None or m.done or m.status == INTERRUPTED:
            return False
        return self.cancelled or m.step_index >= self.budget()

    def reason(self) -> str:
        """Why the run stopped, for a person ("" when it did not)."""
        if not self.stopped():
            return ""
        if self.cancelled:
            return self.why
        return f"stopped after {self.max_steps:,} steps (--max-steps)"


MAX_STORE_ENV = "AGENCY_MAX_STORE_SIZE"
DEFAULT_MAX_STORE_BYTES = 8 << 30  # a recorded `while (true)` writes about 1 GB a minute
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str, what: str = "size") -> int:
    """`500M`, `8G`, `1048576`, `2GiB` as a number of bytes (AgencyError when it is not one)."""
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = t[-1:] if t[-1:] in _UNITS else ""
    number = t[: len(t) - len(unit)].strip()
    try:
        value = float(number) * _UNITS[unit]
    except ValueError:
        value = -1
    if not value > 0 or value > 1 << 62:
        raise AgencyError(f"{what} {text!r}: expected a size such as 500M or 8G")
    return int(value)


def max_store_bytes(option: str | None) -> int:
    """The run-store size cap: the option, else `$AGENCY_MAX_STORE_SIZE`, else 8 GiB."""
    if option:
        try:
            return parse_size(option, "--max-store-size")
        except AgencyError as exc:  # a bad command line, as click's own (exit 2)
            raise UsageError(str(exc)) from None
    env = os.environ.get(MAX_STORE_ENV, "").strip()
    return parse_size(env, MAX_STORE_ENV) if env else DEFAULT_MAX_STORE_BYTES


store_size = file_size  # the bytes a SQLite store takes on disk, by its path


def size_text(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


STOP_GRACE_ENV = "AGENCY_STOP_GRACE"  # seconds a SIGTERM waits for a step boundary
DEFAULT_STOP_GRACE = 5.0  # under the 10 s a container stop gives before SIGKILL


def stop_grace() -> float:
    """How long a SIGTERM waits for the run to reach a step boundary (`AGENCY_STOP_GRACE`,
    default 5 s) before it stops the run where it is, as a second one would."""
    text = os.environ.get(STOP_GRACE_ENV, "").strip()
    if not text:
        return DEFAULT_STOP_GRACE
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < 86400 * 365:
        raise AgencyError(f"{STOP_GRACE_ENV} must be a number of seconds, not {text!r}")
    return value


class GracefulStop:
    """Ctrl-C or SIGTERM while a run goes on: the first stops it at the next step boundary
    (nothing is left half done); a second one stops it at once (`KeyboardInterrupt`, or
    `Terminated` for SIGTERM), as does a SIGTERM whose step boundary has not come within
    `stop_grace()` seconds (a model request or an answer in flight), so a supervisor's stop
    never hangs. SIGTERM is taken over only from its default action (a program embedding the
    runtime keeps its own handler). `signal_name` says which stopped the run."""

    def __init__(self, machine: Machine, notice: bool = True) -> None:
        self.m = machine
        self.notice = notice
        self.requested = False
        self.signal_name = ""  # "Ctrl-C" or "SIGTERM": the first that asked for the stop
        self._old: dict[int, Any] = {}
        self._over = threading.Event()
        self._lock = threading.Lock()
        self._main = threading.main_thread().ident
        self._grace = DEFAULT_STOP_GRACE
        self._deadline: float | None = None  # when a SIGTERM stops the run where it is

    def __enter__(self) -> GracefulStop:
        if threading.current_thread() is threading.main_thread():
            self._over.clear()
            self._old[signal.SIGINT] = signal.signal(signal.SIGINT, self._handle)
            if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
                self._old[signal.SIGTERM] = signal.signal(signal.SIGTERM, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            with self._lock:  # a late stop is sent before the handlers go, or not at all
                self._over.set()
        finally:
            self._over.set()
            for signum, old in self._old.items():
                signal.signal(signum, old)
            self._old.clear()

    def why(self) -> str:
        """What the run is marked stopped by."""
        return f"stopped by {self.signal_name or 'Ctrl-C'}"

    def exit_code(self) -> int:
        """The status a command stopped this way exits with (130 Ctrl-C, 143 SIGTERM)."""
        return EXIT_TERMINATED if self.signal_name == "SIGTERM" else EXIT_STOPPED

    def _handle(self, signum: int, frame: Any) -> None:
        term = signum == signal.SIGTERM
        # The latest signal names the stop, so the one that ends the process decides how it
        # exits (130 or 143): a supervisor's SIGTERM after a Ctrl-C exits 143.
        self.signal_name = "SIGTERM" if term else "Ctrl-C"
        if self.requested:
            raise Terminated if term else KeyboardInterrupt
        self.requested = True
        if self.m is not None:
            self.m.stop_at = self.m.step_index  # the loop stops at the next step boundary
        if self.notice:
            again = "SIGTERM again" if term else "Ctrl-C again"
            print(
                f"\nagency: {self.signal_name}: stopping after this step ({again} to stop now)",
                file=sys.stderr,
                flush=True,
            )
        if term:
            try:
                self._grace = stop_grace()
            except AgencyError:
                self._grace = DEFAULT_STOP_GRACE
            self._deadline = time.monotonic() + self._grace
        start_background(self._watch, "agency-stop-watch")

    def reached(self) -> None:
        """The run has stopped (or ended): what is left is completing its record, which gets a
        grace of its own before a SIGTERM stops that too."""
        if self._deadline is not None:
            self._deadline = time.monotonic() + self._grace

    def _watch(self) -> None:
        """Until the run has stopped: keep its stop asked for (a handler that ran while the
        run loop was setting its own `stop_at` would be overwritten), and once a SIGTERM's
        grace is over stop it where it is (a SIGTERM to the main thread, as a second one)."""
        while not self._over.wait(0.02):
            m = self.m
            if m is not None and m.stop_at > m.step_index:
                m.stop_at = m.step_index
            deadline = self._deadline
            if deadline is not None and time.monotonic() >= deadline and self._main is not None:
                self._deadline = None
                with self._lock:
                    if not self._over.is_set():
                        # A real signal, not `interrupt_main`: it also ends a blocking read.
                        signal.pthread_kill(self._main, signal.SIGTERM)

    def cut(self, exc: KeyboardInterrupt) -> None:
        """The run was stopped where it was, mid-step: by a second Ctrl-C or SIGTERM, a
        SIGTERM past its grace, or a Ctrl-C that came before the handlers were in place."""
        self.requested = True
        if not self.signal_name:
            self.signal_name = "SIGTERM" if isinstance(exc, Terminated) else "Ctrl-C"

    def stopped(self) -> bool:
        """The run ended because of Ctrl-C or SIGTERM (not because it finished or is waiting)."""
        return self.requested and not self.m.done and self.m.status != INTERRUPTED

    def answer(
        self, inner: Callable[[Any], Decision | None] | None
    ) -> Callable[[Any], Decision | None] | None:
        """An interrupt answerer that gives no answer once a stop was asked for."""
        if inner is None:
            return None

        def answer(pending: Any) -> Decision | None:
            return None if self.requested else inner(pending)

        return answer


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM raises `Terminated` where the program is, as Ctrl-C raises
    `KeyboardInterrupt`: for a command whose runs are not recorded and are cut short by Ctrl-C
    (`agency test`), so it reports what it did before exiting 143. Taken over only from its
    default action, and only in the main thread."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL
    ):
        yield
        return

    def terminated(signum: int, frame: Any) -> None:
        raise Terminated

    signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def recording_answers(
    answer: Callable[[Any], Decision | None] | None,
    store: Any,
    run_id: str,
    machine: Machine,
    branch: int = 0,
) -> Callable[[Any], Decision | None] | None:
    """Wrap an interrupt answerer so every answer it gives is recorded (replay and resume feed
    the same answers to the re-executed run)."""
    if answer is None:
        return None

    def wrapped(pending: Any) -> Decision | None:
        decision = answer(pending)
        if decision is not None:
            record_answer(store, run_id, branch, machine.step_index, decision)
        return decision

    return wrapped


def record_answer(store: Any, run_id: str, branch: int, step: int, decision: Decision) -> None:
    store.add_event(
        run_id,
        branch,
        max(step, 0),
        "interrupt",
        f"answered: {decision.action}",
        {
            "action": decision.action,
            "answer": None if decision.value is None else to_plain(decision.value),
        },
    )


def mark_stopped(store: Any, run_id: str, why: str) -> None:
    store.update_run(run_id, status="interrupted", error=why)
    store.flush()
