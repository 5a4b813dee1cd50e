"""Provides `SQLiteStore`, the durable `RunStore`: one SQLite file (WAL) per working directory.

The interpreter records every step, so writes must never make it wait on the disk. Every write
goes to one background writer thread through a queue; the writer commits what has piled up as
one transaction, at the latest ~50 ms after the first write of a group, sooner when someone
calls `flush()` or a lot is waiting. Step batches, keyframes, events, LLM calls and run updates
return as soon as they are queued. `flush()` blocks until the queue is committed (the recorder
calls it after an LLM call and before an effect). Effects, new runs, new branches, deletes and
truncations wait for their own commit, since the effect journal and the ids the caller gets back
must be durable.

Readers use their own connection per thread and see everything committed; a read first flushes
what this store still has queued, so a store always reads its own writes. A write that fails in
the background is raised, as a `StoreError`, by the next call on the store.

After a `kill -9` the file holds a consistent prefix of what was queued: each group is one
SQLite transaction, so there is never half a batch.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sqlite3
import stat
import sys
import threading
import time
import urllib.parse
import weakref
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from runtime.language.files import STORE_SUFFIXES, kind_of, protect
from runtime.record import migrations
from runtime.record.requests import PACKED, RequestPacker, packable
from runtime.record.store import (
    EFFECT_STATUSES,
    MAX_STEP,
    Batch,
    Blob,
    BranchRecord,
    EffectRecord,
    EventRecord,
    Keyframe,
    LLMCallRecord,
    RunMeta,
    RunRecord,
    Segment,
    StoreError,
    ambiguous_prefix,
    as_blob,
    branch_from_row,
    check_step_range,
    dumps,
    effect_from_row,
    format_ts,
    lineage_segments,
    llm_call_from_row,
    loads,
    new_run_id,
    prefix_upper_bound,
    run_from_row,
    run_row,
    run_update_columns,
    utcnow,
)

__all__ = ["SQLiteStore", "default_db_path"]

GROUP_WINDOW = 0.05  # seconds a queued write may wait for company before it is committed
GROUP_BYTES = 4 << 20  # commit early once this much is queued
MAX_QUEUED_BYTES = 64 << 20  # beyond this, writers wait for the disk (bounded memory)
PAGE_SIZE = 16384  # for new stores
BUSY_TIMEOUT = 10.0  # seconds to wait for another process's write lock


def _has_wal(path: Path) -> bool:
    try:
        return path.with_name(path.name + "-wal").stat().st_size > 0
    except OSError:
        return False


def default_db_path(env: Mapping[str, str] = os.environ) -> Path:
    """`$AGENCY_DB` if set, else `.agency/runs.db` under the current working directory."""
    configured = env.get("AGENCY_DB")
    if configured:
        return Path(configured).expanduser()
    return Path.cwd() / ".agency" / "runs.db"


class _Box:
    """Where a synchronous write leaves its result or its error for the waiting caller."""

    __slots__ = ("result", "error")

    def __init__(self) -> None:
        self.result: Any = None
        self.error: BaseException | None = None


@dataclass(slots=True)
class _Op:
    """One queued write: a statement, or a function of the writer's connection.

    `grows` marks a batch append as (run_id, branch, last_step): after the group, the writer
    raises the branch's length, the run's step count and `updated_at`, once per branch.
    """

    sql: str | None
    params: tuple[Any, ...] | None = None
    fn: Callable[[sqlite3.Connection], Any] | None = None
    box: _Box | None = None
    grows: tuple[str, int, int] | None = None


_INSERT_BATCH = (
    "INSERT INTO step_batches (run_id, branch, first_step, last_step, blob) VALUES (?, ?, ?, ?, ?)"
)
_INSERT_KEYFRAME = (
    "INSERT INTO keyframes (run_id, branch, step, blob) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (run_id, branch, step) DO UPDATE SET blob = excluded.blob"
)
_INSERT_EVENT = (
    "INSERT INTO events (run_id, branch, step, kind, summary, data_json) VALUES (?, ?, ?, ?, ?, ?)"
)
_INSERT_LLM_CALL = (
    "INSERT INTO llm_calls (run_id, branch, step, provider, model, request_json, response_json,"
    " input_tokens, output_tokens, cost, latency_ms, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_PACKED_LLM_CALL = (
    "INSERT INTO llm_calls (run_id, branch, step, provider, model, request_json, response_json,"
    " input_tokens, output_tokens, cost, latency_ms, created_at, request_form)"
    f" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, {PACKED})"
)
_INSERT_LLM_PART = "INSERT INTO llm_parts (run_id, branch, seq, json) VALUES (?, ?, ?, ?)"
_UPSERT_EFFECT = (
    "INSERT INTO effects (key, run_id, branch, step, kind, status, args_json, result_json,"
    " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (key) DO UPDATE SET run_id = excluded.run_id, branch = excluded.branch,"
    " step = excluded.step, kind = excluded.kind, status = excluded.status,"
    " args_json = excluded.args_json, result_json = excluded.result_json"
)
# The batch holding step `lo` is the last one starting at or before it; from there on, the
# batches starting up to `hi`. Two index seeks, whatever the run's length.
_SELECT_BATCHES = (
    "SELECT first_step, last_step, blob FROM step_batches"
    " WHERE run_id = ?1 AND branch = ?2 AND first_step <= ?4 AND last_step >= ?3"
    " AND first_step >= coalesce((SELECT max(first_step) FROM step_batches"
    "  WHERE run_id = ?1 AND branch = ?2 AND first_step <= ?3), ?3)"
    " ORDER BY first_step"
)
_SELECT_KEYFRAME = (
    "SELECT step, blob FROM keyframes WHERE run_id = ? AND branch = ? AND step <= ? AND step >= ?"
    " ORDER BY step DESC LIMIT 1"
)
_SELECT_LAST_BATCH = (
    "SELECT last_step FROM step_batches WHERE run_id = ? AND branch = ? AND first_step <= ?"
    " ORDER BY first_step DESC LIMIT 1"
)


class _Writer:
    """The one thread that writes to the database, committing queued writes in groups."""

    def __init__(self, conn: sqlite3.Connection, path: Path, clock: Callable[[], datetime]) -> None:
        self._conn = conn
        self._path = path
        self._clock = clock
        self._cond = threading.Condition(threading.Lock())
        self._queue: list[_Op] = []
        self._queued_bytes = 0
        self._first_at = 0.0
        self.enqueued = 0  # sequence number of the last write queued
        self.committed = 0  # ... and of the last one the writer is done with
        self._urgent = 0  # commit without waiting up to this sequence number
        self._closing = False
        self._errors: list[BaseException] = []
        self._thread = threading.Thread(target=self._main, name="agency-store-writer", daemon=True)
        self._thread.start()

    # called by store users (any thread)

    def submit(self, op: _Op, nbytes: int = 0, urgent: bool = False) -> int:
        with self._cond:
            while self._queued_bytes > MAX_QUEUED_BYTES and self._thread.is_alive():
                self._urgent = self.enqueued
                self._cond.notify_all()
                self._cond.wait()
            if not self._thread.is_alive():
                raise StoreError(f"run store {self._path}: the writer thread has stopped")
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
                    raise StoreError(f"run store {self._path}: the writer thread has stopped")
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
            self._thread.join()

    def close_connection(self) -> None:
        with contextlib.suppress(sqlite3.Error):
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

    def _commit(self, ops: list[_Op]) -> None:
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            # Runs of the same statement go to executemany: its loop runs in C, which keeps
            # this thread's hold on the GIL (and so its cost to the interpreter) short.
            for sql, run in itertools.groupby(ops, key=lambda op: op.sql):
                if sql is None:
                    for op in run:
                        self._apply(op)
                else:
                    conn.executemany(sql, [op.params for op in run if op.params is not None])
            self._grow([op for op in ops if op.grows is not None])
            conn.execute("COMMIT")
        except Exception:
            self._rollback()
            # Something in the group failed: redo it one write at a time, each in a savepoint,
            # so the good writes commit and each failure goes to whoever is waiting for it.
            self._commit_one_by_one(ops)

    def _commit_one_by_one(self, ops: list[_Op]) -> None:
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            done: list[_Op] = []
            for op in ops:
                if op.box is not None:
                    op.box.result = op.box.error = None
                conn.execute("SAVEPOINT one_write")
                try:
                    self._apply(op)
                except Exception as exc:
                    conn.execute("ROLLBACK TO one_write")
                    self._fail(op, exc)
                else:
                    done.append(op)
                conn.execute("RELEASE one_write")
            self._grow([op for op in done if op.grows is not None])
            conn.execute("COMMIT")
        except Exception as exc:  # the transaction itself failed (disk full, locked, I/O)
            self._rollback()
            for op in ops:
                if op.box is not None and op.box.error is None:
                    op.box.error = self._store_error(exc)
            if any(op.box is None for op in ops):
                self._errors.append(exc)

    def _apply(self, op: _Op) -> None:
        if op.fn is not None:
            result = op.fn(self._conn)
            if op.box is not None:
                op.box.result = result
        elif op.sql is not None and op.params is not None:
            self._conn.execute(op.sql, op.params)

    def _grow(self, appends: list[_Op]) -> None:
        """Raise branch lengths and step counts, and touch `updated_at`, for a group's batches."""
        ends: dict[tuple[str, int], int] = {}
        for op in appends:
            assert op.grows is not None
            run_id, branch, end = op.grows
            ends[run_id, branch] = max(ends.get((run_id, branch), end), end)
        if not ends:
            return
        stamp = format_ts(self._clock())
        for (run_id, branch), end in ends.items():
            self._conn.execute(
                "UPDATE branches SET length = max(length, ?) WHERE run_id = ? AND branch = ?",
                (end + 1, run_id, branch),
            )
            if branch == 0:
                self._conn.execute(
                    "UPDATE runs SET step_count = max(step_count, ?), updated_at = ? WHERE id = ?",
                    (end + 1, stamp, run_id),
                )
            else:
                self._conn.execute("UPDATE runs SET updated_at = ? WHERE id = ?", (stamp, run_id))

    def _fail(self, op: _Op, exc: BaseException) -> None:
        if op.box is not None:
            op.box.error = exc if isinstance(exc, StoreError) else self._store_error(exc)
        else:
            self._errors.append(exc)

    def _store_error(self, exc: BaseException) -> StoreError:
        return StoreError(f"run store {self._path}: write failed: {exc}")

    def _rollback(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")


class _NoWriter:
    """The writer of a store opened read-only: every write is refused."""

    enqueued = committed = 0

    def __init__(self, path: Path) -> None:
        self._path = path

    def submit(self, op: _Op, nbytes: int = 0, urgent: bool = False) -> int:
        raise StoreError(f"run store {self._path} is open read-only; this command cannot write")

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


def _refuse_special(path: Path) -> None:
    """A run store is a regular file: a device, FIFO or socket is refused before SQLite opens
    it (SQLite would put a `-journal` or `-wal` beside it, e.g. `/dev/null-journal`)."""
    try:
        st = os.stat(path)
    except OSError:
        return
    if stat.S_ISDIR(st.st_mode):
        raise StoreError(f"cannot open run store {path}: it is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise StoreError(
            f"cannot open run store {path}: it is {kind_of(st.st_mode)}, not a regular file"
        )


def _shutdown(writer: _Writer | _NoWriter, path: Path) -> None:
    """Commit what a store still has queued when it was never closed: at interpreter exit or
    when it is garbage-collected. Failures can only be printed by then."""
    writer.stop()
    writer.close_connection()
    for exc in writer.take_errors():
        print(f"agency: run store {path}: a background write failed: {exc}", file=sys.stderr)


class SQLiteStore:
    """A `RunStore` in a SQLite file (`default_db_path()` unless a path is given).

    Opening creates the file and its folder if needed, migrates an older store, and refuses a
    newer, foreign or damaged file with `StoreError`.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
        read_only: bool = False,
    ) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        self.read_only = read_only
        self._clock = clock or utcnow
        self._closed = False
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        # Branch rows never change once written, so a lineage can be kept for the process.
        self._lineages: dict[tuple[str, int], list[Segment]] = {}
        # Packed LLM requests (requests.py): what is known of each run's parts.
        self._packer = RequestPacker(self._max_part_seq)
        self._packer_lock = threading.Lock()
        _refuse_special(self.path)
        if read_only:
            self._uri = self._read_only_uri()
            self._writer: _Writer | _NoWriter = _NoWriter(self.path)
            self._finalizer = weakref.finalize(self, _shutdown, self._writer, self.path)
            return
        conn = self._open_writer()
        for suffix in STORE_SUFFIXES:  # out of reach of the file builtins (a program's write())
            protect(self.path.with_name(self.path.name + suffix), "the run store")
        self._writer = _Writer(conn, self.path, self._clock)
        # Not a method of self: the finalizer must not keep the store alive.
        self._finalizer = weakref.finalize(self, _shutdown, self._writer, self.path)

    def _open_writer(self) -> sqlite3.Connection:
        path = self.path
        if path.is_dir():
            raise StoreError(f"cannot open run store {path}: it is a directory")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot open run store {path}: {exc.strerror or exc}") from exc
        migrations.check_file(path)
        try:
            conn = sqlite3.connect(
                path, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open run store {path}: {exc}") from exc
        try:
            # Look before writing anything: a foreign or newer file must be left as it is.
            if migrations.read_version(conn, path) == 0:
                # Before the first write (it cannot change in WAL mode): 16 KiB pages hold a
                # whole step batch with fewer overflow pages; range reads measured ~3x faster.
                conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            migrations.migrate(conn, path)
        except sqlite3.Error as exc:
            conn.close()
            raise StoreError(f"cannot open run store {path}: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        return conn

    def _read_only_uri(self) -> str:
        """Open an existing store for reading only (`agency runs`, `show`, `export`): it works
        in a read-only directory or on a read-only file. Nothing is created or migrated."""
        path = self.path
        if not path.exists():
            raise StoreError(f"cannot open run store {path}: no such file")
        migrations.check_file(path)
        base = "file:" + urllib.parse.quote(str(path.resolve()))
        # `mode=ro` still needs the WAL index beside the file; where it cannot be made (a
        # read-only directory) and no log is pending, the file is read as it is.
        for uri in (base + "?mode=ro", base + "?immutable=1"):
            if uri.endswith("immutable=1") and _has_wal(path):
                break
            try:
                conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT)
                try:
                    version = migrations.read_version(conn, path)
                finally:
                    conn.close()
            except sqlite3.Error as exc:
                last = exc
                continue
            if version > migrations.latest_version():
                raise StoreError(
                    f"cannot open run store {path}: written by a newer agency (schema "
                    f"v{version}; this version reads up to v{migrations.latest_version()}); "
                    "upgrade agency to open it"
                )
            return uri
        raise StoreError(f"cannot open run store {path} read-only: {last}")

    # plumbing

    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None and self.read_only:
            conn = sqlite3.connect(
                self._uri,
                uri=True,
                timeout=BUSY_TIMEOUT,
                isolation_level=None,
                check_same_thread=False,
            )
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        if conn is None:
            conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA query_only = ON")
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def _check(self) -> None:
        """Refuse calls on a closed store; raise what the writer failed to do since last time."""
        if self._closed:
            raise StoreError(f"run store {self.path} is closed")
        if self._writer.has_errors():
            self._raise_background_errors()

    def _raise_background_errors(self) -> None:
        errors = self._writer.take_errors()
        if not errors:
            return
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        first = errors[0]
        detail = str(first) if isinstance(first, StoreError) else f"{type(first).__name__}: {first}"
        raise StoreError(
            f"run store {self.path}: a background write failed: {detail}{more}"
        ) from first

    def _enqueue(self, op: _Op, nbytes: int = 0) -> None:
        self._check()
        self._writer.submit(op, nbytes)

    def _call(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run `fn` on the writer's connection in its own turn; wait for the commit."""
        self._check()
        box = _Box()
        seq = self._writer.submit(_Op(None, fn=fn, box=box), urgent=True)
        self._writer.wait(seq)
        if box.error is not None:
            raise box.error
        self._check()
        return box.result

    @contextlib.contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """A read connection that sees every write made so far through this store."""
        self._check()
        writer = self._writer
        if writer.committed != writer.enqueued:
            writer.wait()
            self._check()
        try:
            yield self._reader()
        except sqlite3.Error as exc:
            raise StoreError(f"run store {self.path}: read failed: {exc}") from exc

    def _rows(self, conn: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> list[Any]:
        cursor = conn.cursor()
        cursor.row_factory = sqlite3.Row
        return cursor.execute(sql, params).fetchall()

    def _segments(self, conn: sqlite3.Connection, run_id: str, branch: int) -> list[Segment]:
        key = (run_id, branch)
        segments = self._lineages.get(key)
        if segments is None:
            rows = conn.execute(
                "SELECT branch, parent_branch, fork_step FROM branches WHERE run_id = ?",
                (run_id,),
            ).fetchall()
            if not rows:
                raise StoreError(f"no run {run_id!r} in {self.path}")
            parents = {b: (parent, fork) for b, parent, fork in rows}
            segments = lineage_segments(run_id, branch, parents)
            self._lineages[key] = segments
        return segments

    def _resolve(self, conn: sqlite3.Connection, run_id: str) -> str | None:
        if not run_id:
            return None
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone():
            return run_id
        ids = [
            row[0]
            for row in conn.execute(
                "SELECT id FROM runs WHERE id >= ? AND id < ? ORDER BY id LIMIT 6",
                (run_id, prefix_upper_bound(run_id)),
            )
        ]
        if len(ids) > 1:
            raise ambiguous_prefix(run_id, ids)
        return ids[0] if ids else None

    # runs

    def create_run(self, meta: RunMeta) -> str:
        row = run_row("", meta, self._clock())
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)

        def insert(conn: sqlite3.Connection) -> str:
            for _ in range(8):
                row["id"] = new_run_id()
                try:
                    conn.execute(
                        f"INSERT INTO runs ({columns}) VALUES ({marks})", tuple(row.values())
                    )
                except sqlite3.IntegrityError:
                    continue  # another process took the id in the same millisecond
                conn.execute(
                    "INSERT INTO branches (run_id, branch, parent_branch, fork_step, edits_json,"
                    " created_at, length) VALUES (?, 0, NULL, NULL, '{}', ?, 0)",
                    (row["id"], row["created_at"]),
                )
                return str(row["id"])
            raise StoreError(f"run store {self.path}: could not find a free run id")

        run_id: str = self._call(insert)
        return run_id

    def update_run(self, run_id: str, **fields: Any) -> None:
        columns = run_update_columns(fields, self._clock())
        sql = f"UPDATE runs SET {', '.join(f'{c} = ?' for c in columns)} WHERE id = ?"
        params = (*columns.values(), run_id)

        def update(conn: sqlite3.Connection) -> None:
            if conn.execute(sql, params).rowcount == 0:
                raise StoreError(f"update_run: no run {run_id!r} in {self.path}")

        self._enqueue(_Op(None, fn=update))

    def get_run(self, run_id: str) -> RunRecord | None:
        with self._reading() as conn:
            resolved = self._resolve(conn, run_id)
            if resolved is None:
                return None
            rows = self._rows(conn, "SELECT * FROM runs WHERE id = ?", (resolved,))
            return run_from_row(rows[0]) if rows else None

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        with self._reading() as conn:
            rows = self._rows(
                conn,
                "SELECT * FROM runs ORDER BY created_at DESC, id DESC LIMIT ?",
                (max(limit, 0),),
            )
            return [run_from_row(row) for row in rows]

    def latest_run(self) -> RunRecord | None:
        runs = self.list_runs(1)
        return runs[0] if runs else None

    def delete_run(self, run_id: str) -> None:
        with self._reading() as conn:
            resolved = self._resolve(conn, run_id)
        if resolved is None:
            raise StoreError(f"no run {run_id!r} in {self.path}")

        def delete(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM runs WHERE id = ?", (resolved,))

        self._call(delete)
        self._forget(resolved)

    def prune(self, older_than: timedelta, keep: Collection[str] = ()) -> int:
        cutoff = format_ts(self._clock() - older_than)
        kept = set(keep)

        def delete(conn: sqlite3.Connection) -> list[str]:
            ids = [
                row[0]
                for row in conn.execute("SELECT id FROM runs WHERE updated_at < ?", (cutoff,))
                if row[0] not in kept
            ]
            conn.executemany("DELETE FROM runs WHERE id = ?", [(i,) for i in ids])
            return ids

        ids: list[str] = self._call(delete)
        for run_id in ids:
            self._forget(run_id)
        return len(ids)

    def _forget(self, run_id: str) -> None:
        for key in [k for k in self._lineages if k[0] == run_id]:
            self._lineages.pop(key, None)
        with self._packer_lock:
            self._packer.forget(run_id)

    # steps

    def append_batch(
        self, run_id: str, branch: int, first_step: int, last_step: int, blob: Blob
    ) -> None:
        check_step_range(first_step, last_step)
        data = as_blob(blob)
        self._enqueue(
            _Op(
                _INSERT_BATCH,
                (run_id, branch, first_step, last_step, data),
                grows=(run_id, branch, last_step),
            ),
            len(data),
        )

    def put_keyframe(self, run_id: str, branch: int, step: int, blob: Blob) -> None:
        data = as_blob(blob)
        self._enqueue(_Op(_INSERT_KEYFRAME, (run_id, branch, step, data)), len(data))

    def keyframe_at_or_before(self, run_id: str, branch: int, step: int) -> Keyframe | None:
        with self._reading() as conn:
            for seg in reversed(self._segments(conn, run_id, branch)):
                if step < seg.lo:
                    continue
                row = conn.execute(
                    _SELECT_KEYFRAME, (run_id, seg.branch, min(step, seg.hi), seg.lo)
                ).fetchone()
                if row is not None:
                    return Keyframe(seg.branch, row[0], row[1])
            return None

    def keyframe_steps(self, run_id: str, branch: int, a: int, b: int) -> list[int]:
        steps: set[int] = set()
        with self._reading() as conn:
            for seg in self._segments(conn, run_id, branch):
                lo, hi = max(a, seg.lo), min(b, seg.hi)
                if lo <= hi:
                    steps.update(
                        row[0]
                        for row in conn.execute(
                            "SELECT step FROM keyframes WHERE run_id = ? AND branch = ?"
                            " AND step >= ? AND step <= ?",
                            (run_id, seg.branch, lo, hi),
                        )
                    )
        return sorted(steps)

    def batches(self, run_id: str, branch: int, a: int, b: int) -> list[Batch]:
        out: list[Batch] = []
        with self._reading() as conn:
            for seg in self._segments(conn, run_id, branch):
                lo, hi = max(a, seg.lo), min(b, seg.hi)
                if lo > hi:
                    continue
                for first, last, blob in conn.execute(
                    _SELECT_BATCHES, (run_id, seg.branch, lo, hi)
                ):
                    out.append(Batch(seg.branch, first, last, blob))
        return out

    def lineage(self, run_id: str, branch: int) -> list[Segment]:
        with self._reading() as conn:
            return list(self._segments(conn, run_id, branch))

    def step_count(self, run_id: str, branch: int = 0) -> int:
        with self._reading() as conn:
            for seg in reversed(self._segments(conn, run_id, branch)):
                row = conn.execute(_SELECT_LAST_BATCH, (run_id, seg.branch, seg.hi)).fetchone()
                if row is not None:
                    last = min(row[0], seg.hi)
                    if last >= seg.lo:
                        return int(last) + 1
            return 0

    # events, LLM calls, effects

    def add_event(
        self,
        run_id: str,
        branch: int,
        step: int,
        kind: str,
        summary: str,
        data: dict[str, Any] | None = None,
    ) -> None:
        data_json = dumps({} if data is None else data, "event data")
        self._enqueue(_Op(_INSERT_EVENT, (run_id, branch, step, kind, summary, data_json)))

    def events(
        self,
        run_id: str,
        branch: int = 0,
        kind: str | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> list[EventRecord]:
        a = -MAX_STEP if start is None else start
        b = MAX_STEP if end is None else end
        sql = (
            "SELECT step, kind, summary, data_json FROM events"
            " WHERE run_id = ? AND branch = ? AND step >= ? AND step <= ?"
        )
        out: list[EventRecord] = []
        with self._reading() as conn:
            for seg in self._segments(conn, run_id, branch):
                lo, hi = max(a, seg.lo), min(b, seg.hi)
                if lo > hi:
                    continue
                params: tuple[Any, ...] = (run_id, seg.branch, lo, hi)
                query = sql
                if kind is not None:
                    query += " AND kind = ?"
                    params += (kind,)
                for step, k, summary, data_json in conn.execute(
                    query + " ORDER BY step, id", params
                ):
                    out.append(EventRecord(run_id, seg.branch, step, k, summary, loads(data_json)))
        return out

    def add_llm_call(
        self,
        run_id: str,
        branch: int,
        step: int,
        *,
        provider: str,
        model: str,
        request: Any,
        response: Any,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cost: float = 0.0,
        latency_ms: float = 0.0,
    ) -> None:
        sql = _INSERT_LLM_CALL
        if packable(request):
            sql = _INSERT_PACKED_LLM_CALL
            self._check()
            with self._packer_lock:
                packed, parts = self._packer.pack(run_id, branch, request)
            for part in parts:
                self._enqueue(_Op(_INSERT_LLM_PART, (run_id, *part)), len(part[2]))
            request_json = dumps(packed, "LLM request")
        else:
            request_json = dumps(request, "LLM request")
        params = (
            run_id,
            branch,
            step,
            provider,
            model,
            request_json,
            dumps(response, "LLM response"),
            int(input_tokens),
            int(output_tokens),
            float(cost),
            float(latency_ms),
            format_ts(self._clock()),
        )
        self._enqueue(_Op(sql, params))

    def _max_part_seq(self, run_id: str, branch: int) -> int:
        with self._reading() as conn:
            row = conn.execute(
                "SELECT max(seq) FROM llm_parts WHERE run_id = ? AND branch = ?", (run_id, branch)
            ).fetchone()
        return -1 if row[0] is None else int(row[0])

    def _llm_call(self, conn: sqlite3.Connection, row: Any) -> LLMCallRecord:
        """A call's record, its request rebuilt from its parts when it is stored packed."""
        run_id = row["run_id"]

        def load(b: int, lo: int, hi: int) -> Any:
            return conn.execute(
                "SELECT seq, json FROM llm_parts WHERE run_id = ? AND branch = ?"
                " AND seq >= ? AND seq <= ?",
                (run_id, b, lo, hi),
            )

        def unpack(packed: Any) -> Any:
            with self._packer_lock:
                return self._packer.unpack(run_id, packed, load)

        try:
            return llm_call_from_row(row, unpack)
        except KeyError as exc:
            raise StoreError(
                f"run store {self.path}: run {run_id} has an LLM call at step {row['step']} "
                f"whose request refers to a missing part {exc}"
            ) from None

    def llm_calls(self, run_id: str, branch: int | None = None) -> list[LLMCallRecord]:
        with self._reading() as conn:
            if branch is None:
                self._segments(conn, run_id, 0)  # an unknown run is an error, as for a branch
                rows = self._rows(
                    conn, "SELECT * FROM llm_calls WHERE run_id = ? ORDER BY id", (run_id,)
                )
                return [self._llm_call(conn, row) for row in rows]
            out: list[LLMCallRecord] = []
            for seg in self._segments(conn, run_id, branch):
                rows = self._rows(
                    conn,
                    "SELECT * FROM llm_calls WHERE run_id = ? AND branch = ? AND step >= ?"
                    " AND step <= ? ORDER BY step, id",
                    (run_id, seg.branch, seg.lo, seg.hi),
                )
                out.extend(self._llm_call(conn, row) for row in rows)
            return out

    def put_effect(
        self,
        key: str,
        *,
        run_id: str,
        branch: int,
        step: int,
        kind: str,
        status: str,
        args: Any,
        result: Any,
    ) -> None:
        if status not in EFFECT_STATUSES:
            raise ValueError(f"effect status must be 'applied' or 'failed', not {status!r}")
        params = (
            key,
            run_id,
            branch,
            step,
            kind,
            status,
            dumps(args, "effect args"),
            dumps(result, "effect result"),
            format_ts(self._clock()),
        )

        def upsert(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(_UPSERT_EFFECT, params)
            except sqlite3.IntegrityError as exc:
                raise StoreError(
                    f"put_effect {key!r}: run {run_id} has no branch {branch} in {self.path}"
                ) from exc

        self._call(upsert)

    def get_effect(self, key: str) -> EffectRecord | None:
        with self._reading() as conn:
            rows = self._rows(conn, "SELECT * FROM effects WHERE key = ?", (key,))
            return effect_from_row(rows[0]) if rows else None

    def effects(self, run_id: str, branch: int | None = None) -> list[EffectRecord]:
        with self._reading() as conn:
            if branch is None:
                rows = self._rows(
                    conn, "SELECT * FROM effects WHERE run_id = ? ORDER BY rowid", (run_id,)
                )
                return [effect_from_row(row) for row in rows]
            out: list[EffectRecord] = []
            for seg in self._segments(conn, run_id, branch):
                rows = self._rows(
                    conn,
                    "SELECT * FROM effects WHERE run_id = ? AND branch = ? AND step >= ?"
                    " AND step <= ? ORDER BY step, rowid",
                    (run_id, seg.branch, seg.lo, seg.hi),
                )
                out.extend(effect_from_row(row) for row in rows)
            return out

    # branches

    def create_branch(
        self, run_id: str, parent_branch: int, fork_step: int, edits: dict[str, Any] | None = None
    ) -> int:
        if fork_step < -1:
            raise ValueError(f"fork step must be -1 or more, not {fork_step}")
        edits_json = dumps({} if edits is None else edits, "branch edits")
        created_at = format_ts(self._clock())

        def insert(conn: sqlite3.Connection) -> int:
            found = conn.execute(
                "SELECT 1 FROM branches WHERE run_id = ? AND branch = ?", (run_id, parent_branch)
            ).fetchone()
            if found is None:
                raise StoreError(f"run {run_id} has no branch {parent_branch} in {self.path}")
            new: int = conn.execute(
                "SELECT max(branch) + 1 FROM branches WHERE run_id = ?", (run_id,)
            ).fetchone()[0]
            conn.execute(
                "INSERT INTO branches (run_id, branch, parent_branch, fork_step, edits_json,"
                " created_at, length) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (run_id, new, parent_branch, fork_step, edits_json, created_at, fork_step + 1),
            )
            return new

        branch: int = self._call(insert)
        return branch

    def branches(self, run_id: str) -> list[BranchRecord]:
        with self._reading() as conn:
            self._segments(conn, run_id, 0)
            rows = self._rows(
                conn, "SELECT * FROM branches WHERE run_id = ? ORDER BY branch", (run_id,)
            )
            return [branch_from_row(row) for row in rows]

    def claim_run(
        self,
        run_id: str,
        owner: dict[str, Any],
        may_take: Callable[[dict[str, Any]], bool] | None = None,
    ) -> dict[str, Any] | None:
        owner_json = dumps(owner, "a run owner")
        mine = loads(owner_json)

        def claim(conn: sqlite3.Connection) -> dict[str, Any] | None:
            # Runs inside the writer's BEGIN IMMEDIATE: no other process reads or writes the
            # owner between this look and the write below.
            row = conn.execute(
                "SELECT owner_json FROM run_owners WHERE run_id = ?", (run_id,)
            ).fetchone()
            if row is not None:
                holder: dict[str, Any] = loads(row[0])
                if holder != mine and not (may_take and may_take(holder)):
                    return holder
            if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
                raise StoreError(f"no run {run_id!r} in {self.path}")
            conn.execute(
                "INSERT INTO run_owners (run_id, owner_json, claimed_at) VALUES (?, ?, ?)"
                " ON CONFLICT (run_id) DO UPDATE SET owner_json = excluded.owner_json,"
                " claimed_at = excluded.claimed_at",
                (run_id, owner_json, format_ts(self._clock())),
            )
            return None

        holder: dict[str, Any] | None = self._call(claim)
        return holder

    def release_run(self, run_id: str, owner: dict[str, Any]) -> None:
        mine = loads(dumps(owner, "a run owner"))

        def release(conn: sqlite3.Connection) -> None:
            row = conn.execute(
                "SELECT owner_json FROM run_owners WHERE run_id = ?", (run_id,)
            ).fetchone()
            if row is not None and loads(row[0]) == mine:
                conn.execute("DELETE FROM run_owners WHERE run_id = ?", (run_id,))

        self._call(release)

    def run_owner(self, run_id: str) -> dict[str, Any] | None:
        with self._reading() as conn:
            row = conn.execute(
                "SELECT owner_json FROM run_owners WHERE run_id = ?", (run_id,)
            ).fetchone()
        return None if row is None else dict(loads(row[0]))

    def truncate_after(self, run_id: str, branch: int, step: int) -> None:
        def truncate(conn: sqlite3.Connection) -> None:
            row = conn.execute(
                "SELECT fork_step FROM branches WHERE run_id = ? AND branch = ?", (run_id, branch)
            ).fetchone()
            if row is None:
                raise StoreError(f"run {run_id} has no branch {branch} in {self.path}")
            where = " WHERE run_id = ? AND branch = ? AND "
            params = (run_id, branch, step)
            conn.execute("DELETE FROM step_batches" + where + "first_step > ?", params)
            for table in ("keyframes", "events", "llm_calls"):
                conn.execute(f"DELETE FROM {table}" + where + "step > ?", params)
            end = conn.execute(
                "SELECT max(last_step) FROM step_batches WHERE run_id = ? AND branch = ?",
                (run_id, branch),
            ).fetchone()[0]
            fork = row[0]
            length = max(0 if fork is None else fork + 1, 0 if end is None else end + 1)
            conn.execute(
                "UPDATE branches SET length = ? WHERE run_id = ? AND branch = ?",
                (length, run_id, branch),
            )
            if branch == 0:
                conn.execute("UPDATE runs SET step_count = ? WHERE id = ?", (length, run_id))

        self._call(truncate)

    # lifecycle

    def flush(self) -> None:
        self._check()
        self._writer.wait()
        self._check()

    def close(self) -> None:
        if self._closed:
            return
        try:
            self._writer.wait()
        finally:
            self._closed = True
            self._finalizer.detach()
            self._writer.stop()
            with self._readers_lock:
                readers, self._readers = self._readers, []
            for conn in readers:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            # The writer's connection closes last: the last connection folds the WAL back into
            # the database file and removes it.
            self._writer.close_connection()
        self._raise_background_errors()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
