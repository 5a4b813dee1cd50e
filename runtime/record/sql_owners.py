"""Provides `SQLOwners`, the part of `SQLStore` that says which process continues a run: a
claim per run, taken by compare-and-set with the run's row locked, and its lease."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from runtime.record.sql_base import SQLBase
from runtime.record.store import (
    StoreError,
    dumps,
    format_ts,
    loads,
)
from runtime.record.writer import Connection

__all__ = ["SQLOwners"]


class SQLOwners(SQLBase):
    """Run owners in a SQL run store."""

    def claim_run(
        self,
        run_id: str,
        owner: dict[str, Any],
        may_take: Callable[[dict[str, Any]], bool] | None = None,
    ) -> dict[str, Any] | None:
        owner_json = dumps(owner, "a run owner")
        mine = loads(owner_json)

        def claim(conn: Connection) -> dict[str, Any] | None:
            # Inside the writer's transaction, with the run's row locked (PostgreSQL) or the
            # database's write lock held (SQLite's BEGIN IMMEDIATE): no other process reads or
            # writes the owner between this look and the write below.
            exists = self._lock_run(conn, run_id)
            row = self._one(conn, "SELECT owner_json FROM run_owners WHERE run_id = ?", (run_id,))
            if row is not None:
                holder: dict[str, Any] = loads(row[0])
                if holder != mine and not (may_take and may_take(holder)):
                    return holder
            if not exists:
                raise StoreError(f"no run {run_id!r} in {self.where}")
            self._exec(
                conn,
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

        def release(conn: Connection) -> None:
            row = self._one(conn, "SELECT owner_json FROM run_owners WHERE run_id = ?", (run_id,))
            if row is not None and loads(row[0]) == mine:
                self._exec(conn, "DELETE FROM run_owners WHERE run_id = ?", (run_id,))

        self._call(release)

    def run_owner(self, run_id: str) -> dict[str, Any] | None:
        with self._reading() as conn:
            row = self._one(conn, "SELECT owner_json FROM run_owners WHERE run_id = ?", (run_id,))
        return None if row is None else dict(loads(row[0]))
