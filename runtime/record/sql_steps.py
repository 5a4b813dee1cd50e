"""Provides `SQLSteps`, the part of `SQLStore` that holds a run's timeline: step batches,
keyframes, branches (forks) and their lineage, and truncation for resume."""

from __future__ import annotations

from typing import Any

from runtime.record.rows import stored_blob, stored_int
from runtime.record.sql_base import SQLBase
from runtime.record.store import (
    Batch,
    Blob,
    BranchRecord,
    Keyframe,
    Segment,
    StateSpan,
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
    "INSERT INTO keyframes (run_id, branch, step, blob, base_step) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (run_id, branch, step) DO UPDATE SET blob = excluded.blob,"
    " base_step = excluded.base_step"
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
    "SELECT step, blob, base_step FROM keyframes"
    " WHERE run_id = ? AND branch = ? AND step <= ? AND step >= ?"
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

# The parts of `state_span`'s one query, told apart by its first column.
_KEYFRAME, _BASE, _LATER, _BATCH = 0, 1, 2, 3


def _span_query(
    run_id: str, segments: list[Segment], step: int, batches_to: int, keyframes_to: int
) -> tuple[str, tuple[Any, ...]]:
    """One statement for `state_span`: the latest keyframe at or before `step` along the
    lineage (each segment's latest, then the latest of those), its base, the later keyframe
    steps, and the batches from the keyframe on, each segment clipped to its steps as
    `keyframe_at_or_before`, `keyframe_steps` and `batches` do."""
    params: list[Any] = []
    candidates = []
    for i, seg in enumerate(segments):
        if step < seg.lo:
            continue
        candidates.append(
            "SELECT * FROM (SELECT branch, step, base_step, blob FROM keyframes"
            " WHERE run_id = ? AND branch = ? AND step <= ? AND step >= ?"
            f" ORDER BY step DESC LIMIT 1) AS k{i}"
        )
        params += [run_id, seg.branch, min(step, seg.hi), seg.lo]
    # Batches start after the keyframe, or at `step` when it is the keyframe's own step.
    parts = [
        "WITH candidates AS (" + " UNION ALL ".join(candidates) + "),"
        " top AS (SELECT branch, step, base_step, blob FROM candidates"
        "  ORDER BY step DESC LIMIT 1),"
        " start AS (SELECT coalesce((SELECT CASE WHEN step < ? THEN step + 1 ELSE ? END"
        "  FROM top), ?) AS lo)"
        f" SELECT {_KEYFRAME}, branch, step, base_step, blob FROM top",
        f"SELECT {_BASE}, k.branch, k.step, k.step, k.blob FROM keyframes k, top"
        " WHERE k.run_id = ? AND k.branch = top.branch AND k.step = top.base_step",
    ]
    params += [step, step, step, run_id]
    for seg in segments:
        lo, hi = max(step + 1, seg.lo), min(keyframes_to, seg.hi)
        if lo <= hi:
            parts.append(
                f"SELECT {_LATER}, branch, step, step, NULL FROM keyframes"
                " WHERE run_id = ? AND branch = ? AND step >= ? AND step <= ?"
            )
            params += [run_id, seg.branch, lo, hi]
    for seg in segments:
        hi = min(batches_to, seg.hi)
        if seg.lo > hi:
            continue
        # As _SELECT_BATCHES, from max(segment start, where the batches start).
        start = "GREATEST(?, (SELECT lo FROM start))"
        parts.append(
            f"SELECT {_BATCH}, branch, first_step, last_step, blob FROM step_batches"
            f" WHERE run_id = ? AND branch = ? AND {start} <= ? AND first_step <= ?"
            f" AND last_step >= {start} AND first_step >= coalesce((SELECT max(first_step)"
            f"  FROM step_batches WHERE run_id = ? AND branch = ? AND first_step <= {start}),"
            f" {start})"
        )
        params += [run_id, seg.branch, seg.lo, hi, hi, seg.lo, run_id, seg.branch]
        params += [seg.lo, seg.lo]
    return " UNION ALL ".join(parts), tuple(params)


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
                free=True,
            ),
            len(data),
        )

    def put_keyframe(
        self, run_id: str, branch: int, step: int, blob: Blob, base: int | None = None
    ) -> None:
        data = as_blob(blob)
        self._enqueue(
            Op(_INSERT_KEYFRAME, (run_id, branch, step, data, base), free=True), len(data)
        )

    def state_span(
        self, run_id: str, branch: int, step: int, batches_to: int, keyframes_to: int
    ) -> StateSpan:
        with self._reading() as conn:
            segments = self._segments(conn, run_id, branch)
            sql, params = _span_query(run_id, segments, step, batches_to, keyframes_to)
            rows = self._exec(conn, sql, params).fetchall()
        keyframe = base = None
        batches: list[tuple[int, Batch]] = []
        later: set[int] = set()
        order = {seg.branch: i for i, seg in enumerate(segments)}
        for part, b, first, last, blob in rows:
            what = f"run {run_id}: a {'keyframe' if part in (_KEYFRAME, _BASE) else 'step batch'}"
            if part == _KEYFRAME:
                on = None if last is None else stored_int(last, what)
                keyframe = Keyframe(b, stored_int(first, what), stored_blob(blob, what), on)
            elif part == _BASE:
                base = Keyframe(b, stored_int(first, what), stored_blob(blob, what))
            elif part == _LATER:
                later.add(stored_int(first, what))
            else:
                first, last = stored_int(first, what), stored_int(last, what)
                batches.append((order[b], Batch(b, first, last, stored_blob(blob, what))))
        batches.sort(key=lambda item: (item[0], item[1].first_step))
        return StateSpan(keyframe, base, [batch for _, batch in batches], sorted(later))

    def keyframe_at_or_before(self, run_id: str, branch: int, step: int) -> Keyframe | None:
        with self._reading() as conn:
            for seg in reversed(self._segments(conn, run_id, branch)):
                if step < seg.lo:
                    continue
                row = self._one(
                    conn, _SELECT_KEYFRAME, (run_id, seg.branch, min(step, seg.hi), seg.lo)
                )
                if row is not None:
                    what = f"run {run_id}: a keyframe of branch {seg.branch}"
                    base = None if row[2] is None else stored_int(row[2], what)
                    return Keyframe(
                        seg.branch, stored_int(row[0], what), stored_blob(row[1], what), base
                    )
            return None

    def keyframe_steps(self, run_id: str, branch: int, a: int, b: int) -> list[int]:
        steps: set[int] = set()
        with self._reading() as conn:
            for seg in self._segments(conn, run_id, branch):
                lo, hi = max(a, seg.lo), min(b, seg.hi)
                if lo <= hi:
                    steps.update(
                        stored_int(row[0], f"run {run_id}: a keyframe's step")
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
                what = f"run {run_id}: a step batch of branch {seg.branch}"
                for first, last, blob in self._exec(conn, _SELECT_BATCHES, params):
                    out.append(
                        Batch(
                            seg.branch,
                            stored_int(first, what),
                            stored_int(last, what),
                            stored_blob(blob, what),
                        )
                    )
        return out

    def lineage(self, run_id: str, branch: int) -> list[Segment]:
        with self._reading() as conn:
            return list(self._segments(conn, run_id, branch))

    def step_count(self, run_id: str, branch: int = 0) -> int:
        with self._reading() as conn:
            for seg in reversed(self._segments(conn, run_id, branch)):
                row = self._one(conn, _SELECT_LAST_BATCH, (run_id, seg.branch, seg.hi))
                if row is not None:
                    last = min(stored_int(row[0], f"run {run_id}: a step batch's end"), seg.hi)
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
