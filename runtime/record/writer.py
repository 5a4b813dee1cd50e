"""Provides the writer thread of the SQL run stores (`sql_store.py`): one thread per store
that commits queued writes in groups, and the `Dialect` that says how a database differs from
SQLite.

The interpreter records every step, so writes must never make it wait on the database. Every
write goes to the writer thread through a queue; the writer commits what has piled up as one
transaction, at the latest ~50 ms after the first write of a group, sooner when someone waits
(`Writer.wait`) or a lot is waiting. A write that fails is handed to whoever waits for it, or
kept for the store to raise at its next call.

Each group is one transaction, so a killed writer leaves a consistent prefix of what it queued,
never half a batch. A database whose connection can drop (a server) gets a `reconnect` function:
the writer waits for the server to come back and commits the group again.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from runtime.record.store import StoreError, format_ts

__all__ = ["Connection", "Dialect", "NoWriter", "Op", "Writer", "WriteResult", "start_background"]

GROUP_WINDOW = 0.05  # seconds a queued write may wait for company before it is committed
GROUP_BYTES = 4 << 20  # commit early once this much is queued
MAX_QUEUED_BYTES = 64 << 20  # beyond this, writers wait for the database (bounded memory)

Connection = Any  # a DB-API connection: sqlite3.Connection or psycopg.Connection

_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def start_background(target: Callable[[], Any], name: str) -> threading.Thread:
    """Start a daemon thread that never receives Ctrl-C or SIGTERM. The kernel may hand a
    signal sent to the process to any thread that does not block it; Python then runs the
    handler in the main thread, but a main thread blocked in a read (a person's answer, a
    model's stream) is not woken, and the stop is lost until the read ends. The thread is made
    with the signals blocked, which it inherits, so there is no moment it could take one."""
    thread = threading.Thread(target=target, name=name, daemon=True)
    if not hasattr(signal, "pthread_sigmask"):  # (Windows: signals go to the main thread)
        thread.start()
        return thread
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        thread.start()  # (returns once the thread runs, with the mask it was made with)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
    return thread


class Dialect:
    """How one database differs from SQLite, for the statements `SQLStore` runs.

    The base class is SQLite's; `PostgresStore` has its own.
    """

    errors: tuple[type[BaseException], ...] = ()  # the driver's errors (a read failed)
    # Rows per INSERT when a group inserts many rows with one statement: SQLite's driver lets go
    # of the GIL around every statement it runs, and while the interpreter holds the GIL in a
    # tight loop, getting it back takes a switch interval (5 ms) each time. One statement per
    # row let the writer fall seconds behind a recorded loop (a crash lost those steps); one per
    # hundred rows keeps up. 1 means one statement per row (`executemany`).
    rows_per_insert = 1
    for_update = ""  # appended to a SELECT that must lock the row it reads
    effect_order = "rowid"  # the column that keeps the effect journal's recording order

    def sql(self, text: str) -> str:
        """`text`, written for SQLite, in this database's dialect."""
        return text.replace("GREATEST(", "max(")

    def begin(self, conn: Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")

    def commit(self, conn: Connection) -> None:
        conn.execute("COMMIT")

    def rollback(self, conn: Connection) -> None:
        if conn.in_transaction:
            conn.execute("ROLLBACK")

    def group(self, conn: Connection) -> contextlib.AbstractContextManager[Any]:
        """Around a group's statements (a pipeline, where the driver has one)."""
        return contextlib.nullcontext()

    def rows(self, conn: Connection, sql: str, params: tuple[Any, ...]) -> list[Any]:
        """The rows of a query as mappings from column name to value."""
        raise NotImplementedError

    def is_disconnect(self, exc: BaseException, conn: Connection) -> bool:
        """Whether `exc` means the connection is gone (and a new one may succeed)."""
        return False

    def transaction_id(self, conn: Connection) -> Any:
        """An id of the open transaction by which `committed` can tell, after the connection
        dropped, whether it committed (the COMMIT may have been lost on the way back)."""
        return None

    def committed(self, conn: Connection, transaction: Any) -> bool:
        return False


class WriteResult:
    """Where a synchronous write leaves its result or its error for the waiting caller."""

    __slots__ = ("result", "error")

    def __init__(self) -> None:
        self.result: Any = None
        self.error: BaseException | None = None


class Op:
    """One queued write: a statement, or a function of the writer's connection.

    `grows` marks a batch append as (run_id, branch, last_step): after the group, the writer
    raises the branch's length, the run's step count and `updated_at`, once per branch.
    `free` marks an insert that commutes with every other free one of a group (a step batch, a
    keyframe: rows of different tables, each in the order it came): a group runs each such
    statement once over all its rows, as one `executemany`, where the recorder's alternating
    batches and keyframes would otherwise be a call each.
    (A plain class, not a dataclass, which would cost every command that opens a store ~1 ms
    to build at import.)
    """

    __slots__ = ("sql", "params", "fn", "box", "grows", "free")

    def __init__(
        self,
        sql: str | None,
        params: tuple[Any, ...] | None = None,
        fn: Callable[[Connection], Any] | None = None,
        box: WriteResult | None = None,
        grows: tuple[str, int, int] | None = None,
        free: bool = False,
    ) -> None:
        self.sql = sql
        self.params = params
        self.fn = fn
        self.box = box
        self.grows = grows
        self.free = free


class Writer:
    """The one thread that writes to the database, committing queued writes in groups.

    `reconnect`, when given, is called after the connection dropped; it returns a new one (it may
    wait for the server) or None to give up, and the group is committed again on the new one.
    `fence`, when given, runs first in every transaction and raises to refuse the whole group
    (a run this process held was taken over: `SQLOwners`).
    """

    def __init__(
        self,
        conn: Connection,
        where: str,
        clock: Callable[[], datetime],
        dialect: Dialect,
        reconnect: Callable[[], Connection | None] | None = None,
        fence: Callable[[Connection], None] | None = None,
    ) -> None:
        self._conn = conn
        self._fence = fence
        self._where = where
        self._clock = clock
        self._dialect = dialect
        self._reconnect = reconnect
        # An RLock, not a Lock: a Condition takes a Lock back in Python code, where a signal
        # handler that raises (a second Ctrl-C) leaves `wait` without it, and the `with`
        # around it then releases it from under the thread that holds it; an RLock is taken
        # back in C, past any handler (tests/runtime/store/test_writer_signals.py).
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._queue: list[Op] = []
        self._queued_bytes = 0
        self._first_at = 0.0
        self.enqueued = 0  # sequence number of the last write queued
        self.committed = 0  # ... and of the last one the writer is done with
        self._urgent = 0  # commit without waiting up to this sequence number
        self._closing = False
        self._errors: list[BaseException] = []
        self._transaction: Any = None  # the group's transaction id, where the database has one
        self._thread = start_background(self._main, "agency-store-writer")

    # called by store users (any thread)

    def submit(self, op: Op, nbytes: int = 0, urgent: bool = False) -> int:
        with self._cond:
            while self._queued_bytes > MAX_QUEUED_BYTES and self._thread.is_alive():
                self._urgent = self.enqueued
                self._cond.notify_all()
                self._cond.wait()
            if not self._thread.is_alive():
                raise StoreError(f"run store {self._where}: the writer thread has stopped")
            if not self._queue:
                self._first_at = time.monotonic()
                wake = True
            else:
                wake = urgent or (self._queued_bytes < GROUP_BYTES <= self._queued_bytes + nbytes)
            self._queue.append(op)
            self._queued_bytes += nbytes
            self.enqueued += 1
            if urgent:
                self._urgent = self.enqueued
            if wake:
                self._cond.notify_all()
            return self.enqueued

    def wait(self, seq: int | None = None) -> None:
        """Block until write `seq` (default: every write queued so far) is committed."""
        with self._cond:
            target = self.enqueued if seq is None else seq
            if self.committed >= target:
                return
            self._urgent = max(self._urgent, target)
            self._cond.notify_all()
            while self.committed < target:
                if not self._thread.is_alive():
                    raise StoreError(f"run store {self._where}: the writer thread has stopped")
                self._cond.wait(1.0)

    def take_errors(self) -> list[BaseException]:
        with self._cond:
            errors, self._errors = self._errors, []
            return errors

    def has_errors(self) -> bool:
        return bool(self._errors)

    def stop(self) -> None:
        """Commit what is queued and end the thread."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if threading.current_thread() is not self._thread:
            self._let_go()
            self._thread.join()

    def _let_go(self) -> None:
        """Release the lock if this thread still holds it, however many times. A signal
        handler that raises (a second Ctrl-C) between a `with self._cond:`'s acquire and its
        block, or inside `Condition.__enter__` (Python code) after it acquired, leaves the
        lock held: the writer, notified, could then never take it back to finish, and joining
        it would wait for ever."""
        while True:
            try:
                self._lock.release()
            except RuntimeError:  # not (or no longer) held by this thread
                return

    def close_connection(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.close()

    # the writer thread

    def _main(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._queue and not self._closing:
                        self._cond.wait()
                    if not self._queue:
                        return
                    deadline = self._first_at + GROUP_WINDOW
                    while not (
                        self._closing
                        or self._urgent > self.committed
                        or self._queued_bytes >= GROUP_BYTES
                    ):
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            break
                        self._cond.wait(remaining)
                    ops, self._queue = self._queue, []
                    self._queued_bytes = 0
                    seq = self.enqueued
                    self._cond.notify_all()  # writers held back by MAX_QUEUED_BYTES
                self._commit(ops)
                with self._cond:
                    self.committed = seq
                    self._cond.notify_all()
        except BaseException as exc:  # a bug in the loop itself: report it, never hang callers
            with self._cond:
                self._errors.append(exc)
                self._cond.notify_all()

    def _commit(self, ops: list[Op]) -> None:
        pending = None  # the group's last transaction, whose COMMIT may have gone through
        while True:
            self._transaction = None
            try:
                if pending is not None and self._dialect.committed(self._conn, pending):
                    return  # the server committed the group; only its answer was lost
                self._commit_group(ops)
                return
            except Exception as exc:
                self._rollback()
                if self._transaction is not None:
                    pending = self._transaction
                if not self._reconnected(exc):
                    break
        # Something in the group failed: redo it one write at a time, each in a savepoint,
        # so the good writes commit and each failure goes to whoever is waiting for it.
        self._commit_one_by_one(ops)

    def _commit_group(self, ops: list[Op]) -> None:
        conn = self._conn
        sql_of = self._dialect.sql
        self._dialect.begin(conn)
        self._transaction = self._dialect.transaction_id(conn)
        if self._fence is not None:
            self._fence(conn)
        # Runs of the same statement go to executemany: its loop runs in C, which keeps this
        # thread's hold on the GIL (and so its cost to the interpreter) short.
        with self._dialect.group(conn):
            for sql, run in _statements(ops):
                if sql is None:
                    for op in run:
                        self._apply(op)
                else:
                    self._insert(sql_of(sql), [op.params for op in run if op.params is not None])
            self._grow([op for op in ops if op.grows is not None])
        self._dialect.commit(conn)

    def _insert(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        """Run `sql` once for each of `rows`: as few multi-row INSERTs as the dialect takes,
        in order, or one `executemany`."""
        per = self._dialect.rows_per_insert
        many = multirow(sql, per) if per > 1 and len(rows) > 1 else None
        if many is None:
            self._conn.cursor().executemany(sql, rows)
            return
        cursor = self._conn.cursor()
        for start in range(0, len(rows), per):
            chunk = rows[start : start + per]
            text = many if len(chunk) == per else multirow(sql, len(chunk))
            assert text is not None
            cursor.execute(text, [value for row in chunk for value in row])

    def _reconnected(self, exc: BaseException) -> bool:
        """After a dropped connection: a new one (waiting for the server), True if there is."""
        if self._reconnect is None or not self._dialect.is_disconnect(exc, self._conn):
            return False
        self.close_connection()
        conn = self._reconnect()
        if conn is None:
            return False
        self._conn = conn
        return True

    def _commit_one_by_one(self, ops: list[Op]) -> None:
        conn = self._conn
        try:
            self._dialect.begin(conn)
            if self._fence is not None:
                self._fence(conn)
            done: list[Op] = []
            for op in ops:
                if op.box is not None:
                    op.box.result = op.box.error = None
                conn.execute("SAVEPOINT one_write")
                try:
                    self._apply(op)
                except Exception as exc:
                    conn.execute("ROLLBACK TO SAVEPOINT one_write")
                    self._fail(op, exc)
                else:
                    done.append(op)
                conn.execute("RELEASE SAVEPOINT one_write")
            self._grow([op for op in done if op.grows is not None])
            self._dialect.commit(conn)
        except Exception as exc:  # the transaction itself failed (disk full, locked, I/O)
            self._rollback()
            for op in ops:
                if op.box is not None and op.box.error is None:
                    op.box.error = exc if isinstance(exc, StoreError) else self._store_error(exc)
            if any(op.box is None for op in ops):
                self._errors.append(exc)

    def _apply(self, op: Op) -> None:
        if op.fn is not None:
            result = op.fn(self._conn)
            if op.box is not None:
                op.box.result = result
        elif op.sql is not None and op.params is not None:
            self._conn.execute(self._dialect.sql(op.sql), op.params)

    def _grow(self, appends: list[Op]) -> None:
        """Raise branch lengths and step counts, and touch `updated_at`, for a group's batches."""
        ends: dict[tuple[str, int], int] = {}
        for op in appends:
            assert op.grows is not None
            run_id, branch, end = op.grows
            ends[run_id, branch] = max(ends.get((run_id, branch), end), end)
        if not ends:
            return
        stamp = format_ts(self._clock())
        sql = self._dialect.sql
        for (run_id, branch), end in ends.items():
            self._conn.execute(
                sql(
                    "UPDATE branches SET length = GREATEST(length, ?) WHERE run_id = ? AND branch = ?"
                ),
                (end + 1, run_id, branch),
            )
            if branch == 0:
                self._conn.execute(
                    sql(
                        "UPDATE runs SET step_count = GREATEST(step_count, ?), updated_at = ?"
                        " WHERE id = ?"
                    ),
                    (end + 1, stamp, run_id),
                )
            else:
                self._conn.execute(
                    sql("UPDATE runs SET updated_at = ? WHERE id = ?"), (stamp, run_id)
                )

    def _fail(self, op: Op, exc: BaseException) -> None:
        if op.box is not None:
            op.box.error = exc if isinstance(exc, StoreError) else self._store_error(exc)
        else:
            self._errors.append(exc)

    def _store_error(self, exc: BaseException) -> StoreError:
        return StoreError(f"run store {self._where}: write failed: {exc}")

    def _rollback(self) -> None:
        with contextlib.suppress(Exception):
            self._dialect.rollback(self._conn)


_MULTIROW: dict[tuple[str, int], str | None] = {}


def multirow(sql: str, n: int) -> str | None:
    """`sql`, an `INSERT … VALUES (?, …)` of one row, as one of `n` rows (its clauses after
    the values, such as ON CONFLICT, kept); None for a statement of another shape or with a
    parameter outside the values."""
    key = (sql, n)
    if key not in _MULTIROW:
        head, sep, rest = sql.partition(" VALUES (")
        row, close, tail = rest.partition(")")
        one = f"({row})"
        shaped = (
            sep
            and close
            and head.lstrip().upper().startswith("INSERT")
            and "(" not in row
            and "?" not in head + tail  # every parameter is a row's
        )
        _MULTIROW[key] = f"{head} VALUES {', '.join([one] * n)}{tail}" if shaped else None
    return _MULTIROW[key]


def _statements(ops: list[Op]) -> list[tuple[str | None, list[Op]]]:
    """A group's writes as (statement, its ops) to run in this order: consecutive ops of one
    statement together, and within a stretch of `free` ops, all of one statement together."""
    out: list[tuple[str | None, list[Op]]] = []
    free: dict[str, list[Op]] = {}
    for op in ops:
        if op.free and op.sql is not None:
            free.setdefault(op.sql, []).append(op)
            continue
        if free:
            out.extend(free.items())
            free = {}
        if out and out[-1][0] == op.sql and op.sql is not None and not out[-1][1][-1].free:
            out[-1][1].append(op)
        else:
            out.append((op.sql, [op]))
    out.extend(free.items())
    return out


class NoWriter:
    """The writer of a store opened read-only: every write is refused."""

    enqueued = committed = 0

    def __init__(self, where: str) -> None:
        self._where = where

    def submit(self, op: Op, nbytes: int = 0, urgent: bool = False) -> int:
        raise StoreError(f"run store {self._where} is open read-only; this command cannot write")

    def wait(self, seq: int | None = None) -> None:
        pass

    def take_errors(self) -> list[BaseException]:
        return []

    def has_errors(self) -> bool:
        return False

    def stop(self) -> None:
        pass

    def close_connection(self) -> None:
        pass
