"""Provides `SQLOwners`, the part of `SQLStore` that says which process continues a run: a
claim per run, taken by compare-and-set with the run's row locked, and its lease.

A lease is `run_owners.lease_until`, a timestamp by the store's clock. The owner renews it
(`renew_lease`, every third of the lease from `runs/processes.py`), one small write through the
writer; a claim whose lease has ended is one a process on another machine may take over.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from runtime.record.sql_base import SQLBase
from runtime.record.store import (
    LEASE_LEFT,
    StoreError,
    dumps,
    format_ts,
    lease_left,
    loads,
)
from runtime.record.writer import Connection, Op, WriteResult

__all__ = ["SQLOwners"]

_SELECT_OWNER = "SELECT owner_json, lease_until FROM run_owners WHERE run_id = ?"


class SQLOwners(SQLBase):
    """Run owners in a SQL run store."""

    def _lease_until(self, lease: float | None) -> str | None:
        return None if lease is None else format_ts(self._clock() + timedelta(seconds=lease))

    def claim_run(
        self,
        run_id: str,
        owner: dict[str, Any],
        may_take: Callable[[dict[str, Any]], bool] | None = None,
        lease: float | None = None,
    ) -> dict[str, Any] | None:
        owner_json = dumps(owner, "a run owner")
        mine = loads(owner_json)

        def claim(conn: Connection) -> dict[str, Any] | None:
            # Inside the writer's transaction, with the run's row locked (PostgreSQL) or the
            # database's write lock held (SQLite's BEGIN IMMEDIATE): no other process reads or
            # writes the owner between this look and the write below.
            exists = self._lock_run(conn, run_id)
            row = self._one(conn, _SELECT_OWNER, (run_id,))
            if row is not None:
                holder: dict[str, Any] = loads(row[0])
                if holder != mine:
                    left = lease_left(row[1], self._clock())
                    if left is not None:
                        holder[LEASE_LEFT] = left
                    if not (may_take and may_take(holder)):
                        return holder
            if not exists:
                raise StoreError(f"no run {run_id!r} in {self.where}")
            self._exec(
                conn,
                "INSERT INTO run_owners (run_id, owner_json, claimed_at, lease_until)"
                " VALUES (?, ?, ?, ?)"
                " ON CONFLICT (run_id) DO UPDATE SET owner_json = excluded.owner_json,"
                " claimed_at = excluded.claimed_at, lease_until = excluded.lease_until",
                (run_id, owner_json, format_ts(self._clock()), self._lease_until(lease)),
            )
            return None

        holder: dict[str, Any] | None = self._call(claim)
        return holder

    def renew_lease(self, run_id: str, owner: dict[str, Any], lease: float) -> bool:
        mine = loads(dumps(owner, "a run owner"))

        def renew(conn: Connection) -> bool:
            row = self._one(conn, _SELECT_OWNER, (run_id,))
            if row is None or loads(row[0]) != mine:
                return False
            self._exec(
                conn,
                "UPDATE run_owners SET lease_until = ? WHERE run_id = ?",
                (self._lease_until(lease), run_id),
            )
            return True

        # Not `_call`: this runs on the owner's heartbeat thread, which must not take (and
        # raise) the errors of writes the recorder queued; those stay for the recorder.
        if self._closed:
            raise StoreError(f"run store {self.where} is closed")
        box = WriteResult()
        self._writer.wait(self._writer.submit(Op(None, fn=renew, box=box), urgent=True))
        if box.error is not None:
            raise box.error
        return bool(box.result)

    def release_run(self, run_id: str, owner: dict[str, Any]) -> None:
        mine = loads(dumps(owner, "a run owner"))

        def release(conn: Connection) -> None:
            row = self._one(conn, _SELECT_OWNER, (run_id,))
            if row is not None and loads(row[0]) == mine:
                self._exec(conn, "DELETE FROM run_owners WHERE run_id = ?", (run_id,))

        self._call(release)

    def run_owner(self, run_id: str) -> dict[str, Any] | None:
        with self._reading() as conn:
            row = self._one(conn, _SELECT_OWNER, (run_id,))
        return None if row is None else dict(loads(row[0]))
