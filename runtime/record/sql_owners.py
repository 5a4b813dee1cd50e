"""Provides `SQLOwners`, the part of `SQLStore` that says which process continues a run: a
claim per run, taken by compare-and-set with the run's row locked, and its lease.

A lease is `run_owners.lease_until`, a timestamp by the database's clock (`_db_now`: the
server's `now()` on PostgreSQL, so machines whose clocks differ agree on when a lease ends). The
owner renews it (`renew_lease`, every third of the lease from `runs/processes.py`), one small
write through the writer; a claim whose lease has ended is one a process on another machine may
take over.

Fencing: a process cut off from the database for longer than its lease may still be running
and come back. Every write transaction of a store first checks, with the run's row locked (the
same lock a claim takes), that each run claimed through the store is still held by its
claimer (`_check_fences`); once another process has taken one over, the whole transaction is
refused with `RunTakenOver`, so nothing the old owner queued lands after the new owner's claim.
The owner (pid, host, start time) is the fencing token: no other process ever has the same.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from runtime.record.contract import RunTakenOver
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

SELECT_OWNER = "SELECT owner_json, lease_until FROM run_owners WHERE run_id = ?"


class SQLOwners(SQLBase):
    """Run owners in a SQL run store."""

    _fences: dict[str, dict[str, Any]]  # run id -> the owner that claimed it through this store
    _fences_lock: threading.Lock

    def _init_fences(self) -> None:
        self._fences = {}
        self._fences_lock = threading.Lock()

    def _db_now(self, conn: Connection) -> datetime:
        """Now, by the clock leases are measured with (the store's; PostgreSQL: the server's)."""
        return self._clock()

    def _lease_until(self, now: datetime, lease: float | None) -> str | None:
        return None if lease is None else format_ts(now + timedelta(seconds=lease))

    def _check_fences(self, conn: Connection) -> None:
        """At the start of every write transaction: refuse it if a run claimed through this
        store is held by another process now. Runs are locked in id order, as claims lock them."""
        with self._fences_lock:
            fences = sorted(self._fences.items())
        for run_id, mine in fences:
            exists = self._lock_run(conn, run_id)
            row = self._one(conn, SELECT_OWNER, (run_id,)) if exists else None
            holder = None if row is None else loads(row[0])
            if holder != mine:
                raise RunTakenOver(self.where, run_id, holder)

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
            self._end_expired_holder(conn, run_id, mine)
            # Inside the writer's transaction, with the run's row locked (PostgreSQL) or the
            # database's write lock held (SQLite's BEGIN IMMEDIATE): no other process reads or
            # writes the owner between this look and the write below.
            exists = self._lock_run(conn, run_id)
            now = self._db_now(conn)
            row = self._one(conn, SELECT_OWNER, (run_id,))
            if row is not None:
                holder: dict[str, Any] = loads(row[0])
                if holder != mine:
                    left = lease_left(row[1], now)
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
                (run_id, owner_json, format_ts(now), self._lease_until(now, lease)),
            )
            self._name_session(conn, mine)
            return None

        holder: dict[str, Any] | None = self._call(claim)
        if holder is None:
            with self._fences_lock:
                self._fences[run_id] = mine
        return holder

    def _end_expired_holder(self, conn: Connection, run_id: str, mine: dict[str, Any]) -> None:
        """Before a claim locks the run: where a holder whose lease has ended can still hold
        the run's lock in an open transaction (a suspended process), end that holder's
        session, so the claim does not wait on it for ever. Nothing to do by default."""

    def _name_session(self, conn: Connection, owner: dict[str, Any]) -> None:
        """Mark the writer's session as `owner`'s, for `_end_expired_holder`. Nothing by
        default."""

    def renew_lease(self, run_id: str, owner: dict[str, Any], lease: float) -> bool:
        mine = loads(dumps(owner, "a run owner"))

        def renew(conn: Connection) -> bool:
            row = self._one(conn, SELECT_OWNER, (run_id,))
            if row is None or loads(row[0]) != mine:
                return False
            self._exec(
                conn,
                "UPDATE run_owners SET lease_until = ? WHERE run_id = ?",
                (self._lease_until(self._db_now(conn), lease), run_id),
            )
            return True

        # Not `_call`: this runs on the owner's heartbeat thread, which must not take (and
        # raise) the errors of writes the recorder queued; those stay for the recorder.
        if self._closed:
            raise StoreError(f"run store {self.where} is closed")
        box = WriteResult()
        self._writer.wait(self._writer.submit(Op(None, fn=renew, box=box), urgent=True))
        if isinstance(box.error, RunTakenOver) and box.error.run_id == run_id:
            return False  # the fence said so before `renew` could
        if box.error is not None:
            raise box.error
        return bool(box.result)

    def release_run(self, run_id: str, owner: dict[str, Any]) -> None:
        mine = loads(dumps(owner, "a run owner"))

        def release(conn: Connection) -> None:
            row = self._one(conn, SELECT_OWNER, (run_id,))
            if row is not None and loads(row[0]) == mine:
                self._exec(conn, "DELETE FROM run_owners WHERE run_id = ?", (run_id,))

        # What this owner queued is committed (or refused) under its fence before the fence
        # goes; a fence that refused is dropped too: the run is another process's now.
        self._writer.wait()
        with self._fences_lock:
            if self._fences.get(run_id) == mine:
                del self._fences[run_id]
        self._call(release)

    def run_owner(self, run_id: str, lease: bool = False) -> dict[str, Any] | None:
        with self._reading() as conn:
            row = self._one(conn, SELECT_OWNER, (run_id,))
            if row is None:
                return None
            holder = dict(loads(row[0]))
            if lease:
                left = lease_left(row[1], self._db_now(conn))
                if left is not None:
                    holder[LEASE_LEFT] = left
        return holder
