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
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Collection, Iterator
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, Self

from runtime.record.contract import choose_prunable
from runtime.record.requests import PACKED, RequestPacker, packable
from runtime.record.rows import stored_blob, stored_int, stored_json
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
    row_of_run,
    run_from_row,
    run_row,
    run_update_columns,
)
from runtime.record.writer import Connection, Dialect, NoWriter, Op, Writer, WriteResult

__all__ = ["SQLStore"]

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


class SQLStore:
    """A `RunStore` in a SQL database, through one `Writer` thread and read connections.

    A subclass opens the database and sets `where` (the store as named in messages), `_dialect`,
    `_writer` and `_clock`, and provides `_connection()` (a read connection) and `_release()`
    (what `close` frees besides the writer).
    """

    where: str
    _dialect: Dialect
    _writer: Writer | NoWriter
    _clock: Callable[[], datetime]
    _closed: bool

    def _init_lineages(self) -> None:
        # Branch rows never change once written, so a lineage can be kept for the process.
        self._lineages: dict[tuple[str, int], list[Segment]] = {}
        # Packed LLM requests (requests.py): what is known of each run's parts.
        self._packer = RequestPacker(self._max_part_seq)
        self._packer_lock = threading.Lock()

    # plumbing

    def _connection(self) -> contextlib.AbstractContextManager[Connection]:
        raise NotImplementedError

    def _release(self) -> None:
        raise NotImplementedError

    def _sql(self, text: str) -> str:
        return _translate(self._dialect, text)

    def _check(self) -> None:
        """Refuse calls on a closed store; raise what the writer failed to do since last time."""
        if self._closed:
            raise StoreError(f"run store {self.where} is closed")
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
            f"run store {self.where}: a background write failed: {detail}{more}"
        ) from first

    def _enqueue(self, op: Op, nbytes: int = 0) -> None:
        self._check()
        self._writer.submit(op, nbytes)

    def _call(self, fn: Callable[[Connection], Any]) -> Any:
        """Run `fn` on the writer's connection in its own turn; wait for the commit."""
        self._check()
        box = WriteResult()
        seq = self._writer.submit(Op(None, fn=fn, box=box), urgent=True)
        self._writer.wait(seq)
        if box.error is not None:
            raise box.error
        self._check()
        return box.result

    @contextlib.contextmanager
    def _reading(self) -> Iterator[Connection]:
        """A read connection that sees every write made so far through this store."""
        self._check()
        writer = self._writer
        if writer.committed != writer.enqueued:
            writer.wait()
            self._check()
        try:
            with self._connection() as conn:
                yield conn
        except self._dialect.errors as exc:
            raise StoreError(f"run store {self.where}: read failed: {exc}") from exc

    def _exec(self, conn: Connection, sql: str, params: tuple[Any, ...] = ()) -> Any:
        return conn.execute(self._sql(sql), params)

    def _one(self, conn: Connection, sql: str, params: tuple[Any, ...] = ()) -> Any:
        return self._exec(conn, sql, params).fetchone()

    def _rows(self, conn: Connection, sql: str, params: tuple[Any, ...]) -> list[Any]:
        return self._dialect.rows(conn, self._sql(sql), params)

    def _segments(self, conn: Connection, run_id: str, branch: int) -> list[Segment]:
        key = (run_id, branch)
        segments = self._lineages.get(key)
        if segments is None:
            rows = self._exec(
                conn,
                "SELECT branch, parent_branch, fork_step FROM branches WHERE run_id = ?",
                (run_id,),
            ).fetchall()
            if not rows:
                raise StoreError(f"no run {run_id!r} in {self.where}")
            parents = {b: (parent, fork) for b, parent, fork in rows}
            segments = lineage_segments(run_id, branch, parents)
            self._lineages[key] = segments
        return segments

    def _resolve(self, conn: Connection, run_id: str) -> str | None:
        if not run_id:
            return None
        if self._one(conn, "SELECT 1 FROM runs WHERE id = ?", (run_id,)):
            return run_id
        ids = [
            row[0]
            for row in self._exec(
                conn,
                "SELECT id FROM runs WHERE id >= ? AND id < ? ORDER BY id LIMIT 6",
                (run_id, prefix_upper_bound(run_id)),
            )
        ]
        if len(ids) > 1:
            raise ambiguous_prefix(run_id, ids)
        return ids[0] if ids else None

    def _lock_run(self, conn: Connection, run_id: str) -> bool:
        """Whether the run exists; where the database can, its row stays locked until commit
        (claims and new branches of one run from many processes take turns)."""
        row = self._one(
            conn, "SELECT 1 FROM runs WHERE id = ?" + self._dialect.for_update, (run_id,)
        )
        return row is not None

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
                " EXISTS (SELECT 1 FROM run_owners WHERE run_id = runs.id)"
                " FROM runs" + self._dialect.for_update,
            ).fetchall()
            runs = [(r[0], r[1], r[2], int(r[3])) for r in rows]
            spared = set(keep) | {r[0] for r in rows if r[4]}
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

    # steps

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
                    what = f"run {run_id}: a keyframe of branch {seg.branch}"
                    return Keyframe(seg.branch, stored_int(row[0], what), stored_blob(row[1], what))
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
        self._enqueue(Op(_INSERT_EVENT, (run_id, branch, step, kind, summary, data_json)))

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
                for step, k, summary, data_json in self._exec(
                    conn, query + " ORDER BY step, id", params
                ):
                    what = f"run {run_id}: an event at step {step}"
                    out.append(
                        EventRecord(
                            run_id,
                            seg.branch,
                            stored_int(step, what),
                            k,
                            summary,
                            stored_json(data_json, what),
                        )
                    )
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
                self._enqueue(Op(_INSERT_LLM_PART, (run_id, *part)), len(part[2]))
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
        self._enqueue(Op(sql, params))

    def _max_part_seq(self, run_id: str, branch: int) -> int:
        with self._reading() as conn:
            row = self._one(
                conn,
                "SELECT max(seq) FROM llm_parts WHERE run_id = ? AND branch = ?",
                (run_id, branch),
            )
        return -1 if row[0] is None else int(row[0])

    def _llm_call(self, conn: Connection, row: Any) -> LLMCallRecord:
        """A call's record, its request rebuilt from its parts when it is stored packed."""
        run_id = row["run_id"]

        def load(b: int, lo: int, hi: int) -> Any:
            return self._exec(
                conn,
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
                f"run store {self.where}: run {run_id} has an LLM call at step {row['step']} "
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

        def upsert(conn: Connection) -> None:
            found = self._one(
                conn, "SELECT 1 FROM branches WHERE run_id = ? AND branch = ?", (run_id, branch)
            )
            if found is None:
                raise StoreError(
                    f"put_effect {key!r}: run {run_id} has no branch {branch} in {self.where}"
                )
            self._exec(conn, _UPSERT_EFFECT, params)

        self._call(upsert)

    def get_effect(self, key: str) -> EffectRecord | None:
        with self._reading() as conn:
            rows = self._rows(conn, "SELECT * FROM effects WHERE key = ?", (key,))
            return effect_from_row(rows[0]) if rows else None

    def effects(self, run_id: str, branch: int | None = None) -> list[EffectRecord]:
        order = self._dialect.effect_order
        with self._reading() as conn:
            if branch is None:
                rows = self._rows(
                    conn, f"SELECT * FROM effects WHERE run_id = ? ORDER BY {order}", (run_id,)
                )
                return [effect_from_row(row) for row in rows]
            out: list[EffectRecord] = []
            for seg in self._segments(conn, run_id, branch):
                rows = self._rows(
                    conn,
                    "SELECT * FROM effects WHERE run_id = ? AND branch = ? AND step >= ?"
                    f" AND step <= ? ORDER BY step, {order}",
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


@functools.lru_cache(maxsize=512)
def _translate_cached(dialect: Dialect, text: str) -> str:
    return dialect.sql(text)


def _translate(dialect: Dialect, text: str) -> str:
    return _translate_cached(dialect, text)
