"""Provides `SQLStore`, what the SQL run stores (`SQLiteStore`, `PostgresStore`) share: the
statements, row decoding and lineage reads, over one `Writer` thread (`writer.py`) that commits
queued writes in groups.

Step batches, keyframes, events, LLM calls and run updates return as soon as they are queued;
`flush()` blocks until the queue is committed (the recorder calls it after an LLM call and before
an effect). Effects, new runs, new branches, deletes, claims and truncations wait for their own
commit, since the effect journal and the ids the caller gets back must be durable. A read first
flushes what this store still has queued, so a store always reads its own writes. A write that
failed in the background is raised, as a `StoreError`, by the next call on the store.

The statements are written once, in SQLite's dialect with `?` parameters; a `Dialect` turns
them into another database's (`Dialect.sql`).

By concern: the plumbing is `sql_base.py`; steps, keyframes and branches `sql_steps.py`; events,
LLM calls and effects `sql_journal.py`; run owners and their leases `sql_owners.py`; the runs
themselves and the store's lifecycle are here.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, Self

from runtime.record.contract import MAX_STEP, choose_prunable
from runtime.record.requests import RequestPacker
from runtime.record.sql_journal import SQLJournal
from runtime.record.sql_owners import SQLOwners
from runtime.record.sql_steps import SQLSteps
from runtime.record.store import (
    RunMeta,
    RunRecord,
    StoreError,
    format_ts,
    lease_left,
    new_run_id,
    row_of_run,
    run_from_row,
    run_row,
    run_update_columns,
)
from runtime.record.writer import Connection, Op

__all__ = ["SQLStore"]


class SQLStore(SQLSteps, SQLJournal, SQLOwners):
    """A `RunStore` in a SQL database, through one `Writer` thread and read connections.

    A subclass opens the database and sets `where` (the store as named in messages), `_dialect`,
    `_writer` and `_clock`, and provides `_connection()` (a read connection) and `_release()`
    (what `close` frees besides the writer).
    """

    def _init_lineages(self) -> None:
        # Branch rows never change once written, so a lineage can be kept for the process.
        self._lineages = {}
        # Packed LLM requests (requests.py): what is known of each run's parts.
        self._packer = RequestPacker(self._max_part_seq)
        self._packer_lock = threading.Lock()
        self._init_fences()

    # runs

    def create_run(self, meta: RunMeta) -> str:
        row = run_row("", meta, self._clock())
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)

        def insert(conn: Connection) -> str:
            for _ in range(8):
                row["id"] = new_run_id()
                # RETURNING, not rowcount: a fetch is what waits for the answer in a pipeline.
                inserted = self._one(
                    conn,
                    f"INSERT INTO runs ({columns}) VALUES ({marks}) ON CONFLICT (id) DO NOTHING"
                    " RETURNING id",
                    tuple(row.values()),
                )
                if inserted is None:
                    continue  # another process took the id in the same millisecond
                self._exec(
                    conn,
                    "INSERT INTO branches (run_id, branch, parent_branch, fork_step, edits_json,"
                    " created_at, length) VALUES (?, 0, NULL, NULL, '{}', ?, 0)",
                    (row["id"], row["created_at"]),
                )
                return str(row["id"])
            raise StoreError(f"run store {self.where}: could not find a free run id")

        run_id: str = self._call(insert)
        return run_id

    def update_run(self, run_id: str, **fields: Any) -> None:
        columns = run_update_columns(fields, self._clock())
        sql = f"UPDATE runs SET {', '.join(f'{c} = ?' for c in columns)} WHERE id = ? RETURNING id"
        params = (*columns.values(), run_id)

        def update(conn: Connection) -> None:
            if self._one(conn, sql, params) is None:
                raise StoreError(f"update_run: no run {run_id!r} in {self.where}")

        self._enqueue(Op(None, fn=update))

    def put_run(self, record: RunRecord) -> None:
        row = row_of_run(record)
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        updates = ", ".join(f"{c} = excluded.{c}" for c in row if c != "id")

        def put(conn: Connection) -> None:
            self._exec(
                conn,
                f"INSERT INTO runs ({columns}) VALUES ({marks})"
                f" ON CONFLICT (id) DO UPDATE SET {updates}",
                tuple(row.values()),
            )
            self._exec(
                conn,
                "INSERT INTO branches (run_id, branch, parent_branch, fork_step, edits_json,"
                " created_at, length) VALUES (?, 0, NULL, NULL, '{}', ?, 0)"
                " ON CONFLICT (run_id, branch) DO NOTHING",
                (record.id, row["created_at"]),
            )

        self._call(put)

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
                (min(max(limit, 0), MAX_STEP),),  # a huge limit is no limit (SQL's is 64-bit)
            )
            return [run_from_row(row) for row in rows]

    def latest_run(self) -> RunRecord | None:
        runs = self.list_runs(1)
        return runs[0] if runs else None

    def delete_run(self, run_id: str) -> None:
        with self._reading() as conn:
            resolved = self._resolve(conn, run_id)
        if resolved is None:
            raise StoreError(f"no run {run_id!r} in {self.where}")

        def delete(conn: Connection) -> None:
            self._exec(conn, "DELETE FROM runs WHERE id = ?", (resolved,))

        self._call(delete)
        self._forget(resolved)

    def prune(
        self,
        older_than: timedelta | None,
        keep: Collection[str] = (),
        keep_failed: bool = False,
        *,
        keep_latest: int | None = None,
        max_bytes: int | None = None,
    ) -> int:
        cutoff = None if older_than is None else format_ts(self._clock() - older_than)

        def delete(conn: Connection) -> list[str]:
            # One transaction: the runs chosen are the runs deleted. A run someone holds (a
            # resume, a replay, a fork in progress) is never touched.
            rows = self._exec(
                conn,
                "SELECT id, updated_at, status,"
                " (SELECT COALESCE(SUM(LENGTH(blob)), 0) FROM step_batches b"
                "  WHERE b.run_id = runs.id)"
                " + (SELECT COALESCE(SUM(LENGTH(blob)), 0) FROM keyframes k"
                "  WHERE k.run_id = runs.id)"
                " + (SELECT COALESCE(SUM(LENGTH(request_json) + LENGTH(response_json)), 0)"
                "  FROM llm_calls c WHERE c.run_id = runs.id)"
                " + (SELECT COALESCE(SUM(LENGTH(json)), 0) FROM llm_parts p"
                "  WHERE p.run_id = runs.id),"
                " EXISTS (SELECT 1 FROM run_owners WHERE run_id = runs.id),"
                " (SELECT lease_until FROM run_owners WHERE run_id = runs.id)"
                " FROM runs" + self._dialect.for_update,
            ).fetchall()
            runs = [(r[0], r[1], r[2], int(r[3])) for r in rows]
            now = self._db_now(conn)
            # A claim whose lease has expired is a dead owner's: its run is not spared.
            held = {r[0] for r in rows if r[4] and _live_claim(r[5], now)}
            spared = set(keep) | held
            ids = choose_prunable(runs, cutoff, spared, keep_failed, keep_latest, max_bytes)
            conn.cursor().executemany(
                self._sql("DELETE FROM runs WHERE id = ?"), [(i,) for i in ids]
            )
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
            self._release()
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


def _live_claim(lease_until: str | None, now: datetime) -> bool:
    """Whether a claim counts as held: it has no lease, or one that has not expired."""
    left = lease_left(lease_until, now)
    return left is None or left > 0
