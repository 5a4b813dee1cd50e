"""Provides `SQLSteps`, the part of `SQLStore` that holds a run's timeline: step batches,
keyframes, branches (forks) and their lineage, and truncation for resume."""

from __future__ import annotations

from typing import Any

from runtime.record.sql_base import SQLBase
from runtime.record.store import (
    Batch,
    Blob,
    BranchRecord,
    Keyframe,
    Segment,
    StoreError,
    as_blob,
    branch_from_row,
    check_step_range,
    dumps,
    format_ts,
)
from runtime.record.writer import Connection, Op

__all__ = ["SQLSteps"]

_INSERT_BATCH = (
    "INSERT INTO step_batches (run_id, branch, first_step, last_step, blob) VALUES (?, ?, ?, ?, ?)"
)
_INSERT_KEYFRAME = (
    "INSERT INTO keyframes (run_id, branch, step, blob) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (run_id, branch, step) DO UPDATE SET blob = excluded.blob"
)
# The batch holding step `lo` is the last one starting at or before it; from there on, the
# batches starting up to `hi`. Two index seeks, whatever the run's length. Parameters: run,
# branch, hi, lo, run, branch, lo, lo.
_SELECT_BATCHES = (
    "SELECT first_step, last_step, blob FROM step_batches"
    " WHERE run_id = ? AND branch = ? AND first_step <= ? AND last_step >= ?"
    " AND first_step >= coalesce((SELECT max(first_step) FROM step_batches"
    "  WHERE run_id = ? AND branch = ? AND first_step <= ?), ?)"
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
_INSERT_BRANCH = (
    "INSERT INTO branches (run_id, branch, parent_branch, fork_step, edits_json, created_at,"
    " length) VALUES (?, ?, ?, ?, ?, ?, ?)"
)


class SQLSteps(SQLBase):
    """Steps, keyframes and branches in a SQL run store."""

    def append_batch(
        self, run_id: str, branch: int, first_step: int, last_step: int, blob: Blob
    ) -> None:
        check_step_range(first_step, last_step)
        data = as_blob(blob)
        self._enqueue(
            Op(
                _INSERT_BATCH,
                (run_id, branch, first_step, last_step, data),
                grows=(run_id, branch, last_step),
            ),
            len(data),
        )

    def put_keyframe(self, run_id: str, branch: int, step: int, blob: Blob) -> None:
        data = as_blob(blob)
        self._enqueue(Op(_INSERT_KEYFRAME, (run_id, branch, step, data)), len(data))

    def keyframe_at_or_before(self, run_id: str, branch: int, step: int) -> Keyframe | None:
        with self._reading() as conn:
            for seg in reversed(self._segments(conn, run_id, branch)):
                if step < seg.lo:
                    continue
                row = self._one(
                    conn, _SELECT_KEYFRAME, (run_id, seg.branch, min(step, seg.hi), seg.lo)
                )
                if row is not None:
                    return Keyframe(seg.branch, row[0], bytes(row[1]))
            return None

    def keyframe_steps(self, run_id: str, branch: int, a: int, b: int) -> list[int]:
        steps: set[int] = set()
        with self._reading() as conn:
            for seg in self._segments(conn, run_id, branch):
                lo, hi = max(a, seg.lo), min(b, seg.hi)
                if lo <= hi:
                    steps.update(
                        row[0]
                        for row in self._exec(
                            conn,
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
                params = (run_id, seg.branch, hi, lo, run_id, seg.branch, lo, lo)
                for first, last, blob in self._exec(conn, _SELECT_BATCHES, params):
                    out.append(Batch(seg.branch, first, last, bytes(blob)))
        return out

    def lineage(self, run_id: str, branch: int) -> list[Segment]:
        with self._reading() as conn:
            return list(self._segments(conn, run_id, branch))

    def step_count(self, run_id: str, branch: int = 0) -> int:
        with self._reading() as conn:
            for seg in reversed(self._segments(conn, run_id, branch)):
                row = self._one(conn, _SELECT_LAST_BATCH, (run_id, seg.branch, seg.hi))
                if row is not None:
                    last = min(row[0], seg.hi)
                    if last >= seg.lo:
                        return int(last) + 1
            return 0

    def create_branch(
        self, run_id: str, parent_branch: int, fork_step: int, edits: dict[str, Any] | None = None
    ) -> int:
        if fork_step < -1:
            raise ValueError(f"fork step must be -1 or more, not {fork_step}")
        edits_json = dumps({} if edits is None else edits, "branch edits")
        created_at = format_ts(self._clock())

        def insert(conn: Connection) -> int:
            self._lock_run(conn, run_id)
            found = self._one(
                conn,
                "SELECT 1 FROM branches WHERE run_id = ? AND branch = ?",
                (run_id, parent_branch),
            )
            if found is None:
                raise StoreError(f"run {run_id} has no branch {parent_branch} in {self.where}")
            new = int(
                self._one(conn, "SELECT max(branch) + 1 FROM branches WHERE run_id = ?", (run_id,))[
                    0
                ]
            )
            self._exec(
                conn,
                _INSERT_BRANCH,
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

    def truncate_after(self, run_id: str, branch: int, step: int) -> None:
        def truncate(conn: Connection) -> None:
            row = self._one(
                conn,
                "SELECT fork_step FROM branches WHERE run_id = ? AND branch = ?",
                (run_id, branch),
            )
            if row is None:
                raise StoreError(f"run {run_id} has no branch {branch} in {self.where}")
            where = " WHERE run_id = ? AND branch = ? AND "
            params = (run_id, branch, step)
            self._exec(conn, "DELETE FROM step_batches" + where + "first_step > ?", params)
            for table in ("keyframes", "events", "llm_calls"):
                self._exec(conn, f"DELETE FROM {table}" + where + "step > ?", params)
            end = self._one(
                conn,
                "SELECT max(last_step) FROM step_batches WHERE run_id = ? AND branch = ?",
                (run_id, branch),
            )[0]
            fork = row[0]
            length = max(0 if fork is None else fork + 1, 0 if end is None else end + 1)
            self._exec(
                conn,
                "UPDATE branches SET length = ? WHERE run_id = ? AND branch = ?",
                (length, run_id, branch),
            )
            if branch == 0:
                self._exec(conn, "UPDATE runs SET step_count = ? WHERE id = ?", (length, run_id))

        self._call(truncate)
