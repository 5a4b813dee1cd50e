"""A Ctrl-C or SIGTERM whose handler raises (the second one: "stop now") while the main thread
waits on the writer must never leave the writer's lock broken.

Python runs a signal handler in the main thread wherever it stands, and `Condition.wait` on a
`Lock` takes it back in Python code: a handler that raised there left the wait without the lock,
and the `with` around it then released the lock another thread held. Two threads then ran the
writer's critical sections at once: a write went into the group being committed after that
group's sequence number was taken, so its commit was never counted and the next `flush()` waited
for ever (seen as a resumed run that hung after two Ctrl-Cs, its last answer stored). The
writer's condition is on an `RLock`, which `Condition.wait` takes back in C, past any handler.
A handler that raises just after a `with`'s acquire (inside `Condition.__enter__`, which is
Python) leaves the lock held instead: `stop()` lets go of it before it waits for the writer."""

from __future__ import annotations

import signal
import sqlite3
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from runtime.record.sqlite_store import SQLITE, SQLiteStore
from runtime.record.writer import Op, Writer
from runtime.runs.processes import Heartbeat

pytestmark = pytest.mark.skipif(
    not hasattr(signal, "pthread_kill"), reason="needs POSIX signals to a thread"
)


def test_a_raising_handler_during_a_wait_leaves_the_lock_whole() -> None:
    conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    writer = Writer(conn, "memory", lambda: datetime.now(UTC), SQLITE)
    main = threading.get_ident()
    release, started = threading.Event(), threading.Event()
    broken: list[BaseException] = []

    def slow(conn: Any) -> None:
        started.set()
        release.wait(10)  # the commit the main thread waits for

    def hold_the_lock() -> None:
        # Wake the waiting main thread while holding the lock, so that it blocks taking it
        # back, and signal it then: its handler raises.
        started.wait(10)  # the writer commits: a thread waiting on its lock is the main one
        deadline = time.monotonic() + 10
        while not writer._cond._waiters and time.monotonic() < deadline:  # type: ignore[attr-defined]  # noqa: SLF001
            time.sleep(0.01)  # until the main thread waits
        with writer._cond:  # noqa: SLF001 - the lock under test
            writer._cond.notify_all()  # noqa: SLF001
            time.sleep(0.1)
            signal.pthread_kill(main, signal.SIGINT)
            time.sleep(0.2)
            try:
                writer._cond.notify_all()  # noqa: SLF001 - fails if the lock is not held
            except RuntimeError as exc:
                broken.append(exc)
        release.set()

    def stop_now(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGINT, stop_now)
    try:
        seq = writer.submit(Op(None, fn=slow), urgent=True)
        holder = threading.Thread(target=hold_the_lock)
        holder.start()
        with pytest.raises(KeyboardInterrupt):
            writer.wait(seq)
        holder.join(10)
    finally:
        signal.signal(signal.SIGINT, old)
    assert not broken, broken
    # The writer goes on counting: what is queued next is committed and waited for.
    for _ in range(50):
        writer.wait(writer.submit(Op(None, fn=lambda conn: None)))
    assert writer.committed == writer.enqueued
    writer.stop()


def test_stopping_the_writer_lets_go_of_a_lock_a_raising_handler_left_held() -> None:
    # A second Ctrl-C raised between a `with writer._cond:`'s acquire and its block leaves the
    # thread holding the lock (once, or more): the writer thread, woken to finish, waits to
    # take it back, so `stop()` would wait for it for ever (seen in the kill sweep).
    conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    writer = Writer(conn, "memory", lambda: datetime.now(UTC), SQLITE)
    writer.wait(writer.submit(Op(None, fn=lambda conn: None)))
    released: list[bool] = []

    def interrupted_then_stopped() -> None:  # (a thread of its own: a hang fails, not hangs)
        writer._cond.acquire()  # noqa: SLF001 - as the interrupted `with` left it
        writer._cond.acquire()  # noqa: SLF001
        writer.stop()
        try:
            writer._lock.release()  # noqa: SLF001
        except RuntimeError:
            released.append(True)  # let go of, every time it was taken

    closer = threading.Thread(target=interrupted_then_stopped, daemon=True)
    closer.start()
    closer.join(10)
    assert not closer.is_alive(), "stop() waited for a writer that could not take its lock"
    assert released == [True] and not writer._thread.is_alive()  # noqa: SLF001


def _blocked(thread: threading.Thread) -> set[int]:
    """The signals a thread blocks, from the kernel's view of it."""
    with open(f"/proc/self/task/{thread.native_id}/status", encoding="ascii") as fh:
        mask = next(int(line.split()[1], 16) for line in fh if line.startswith("SigBlk:"))
    return {n for n in range(1, 65) if mask >> (n - 1) & 1}


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="needs POSIX signal masks")
def test_the_writer_thread_leaves_ctrl_c_and_sigterm_to_the_main_thread(tmp_path: Path) -> None:
    # The kernel hands a signal sent to the process to any thread not blocking it; Python then
    # runs the handler in the main thread, but one blocked in a read is not woken, and a Ctrl-C
    # taken by the writer thread was lost until the read ended (a hung interrupted agent).
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    with SQLiteStore(tmp_path / "runs.db") as store:
        beat = Heartbeat()
        beat.add((0, "r"), store, "r", {}, 3600.0)
        background = [store._writer._thread, beat._thread]  # noqa: SLF001
        if not Path(f"/proc/self/task/{threading.get_native_id()}/status").exists():
            pytest.skip("needs /proc")
        for thread in background:
            assert thread is not None
            assert {signal.SIGINT, signal.SIGTERM} <= _blocked(thread), thread.name
        main = _blocked(threading.current_thread())
        assert signal.SIGINT not in main and signal.SIGTERM not in main
        beat.remove((0, "r"))
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before
