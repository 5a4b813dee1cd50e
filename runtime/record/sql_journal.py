"""Provides `SQLJournal`, the part of `SQLStore` that keeps what happened around a run's
steps: events, LLM calls (their requests packed into parts, `requests.py`) and the effect
journal."""

from __future__ import annotations

from typing import Any

from runtime.record.requests import PACKED, packable
from runtime.record.rows import stored_int, stored_json, well_formed
from runtime.record.sql_base import SQLBase
from runtime.record.store import (
    EFFECT_STATUSES,
    MAX_STEP,
    EffectRecord,
    EventRecord,
    LLMCallRecord,
    StoreError,
    dumps,
    effect_from_row,
    format_ts,
    llm_call_from_row,
)
from runtime.record.writer import Connection, Op

__all__ = ["SQLJournal"]

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


class SQLJournal(SQLBase):
    """Events, LLM calls and effects in a SQL run store."""

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
        self._enqueue(
            Op(_INSERT_EVENT, (run_id, branch, step, kind, well_formed(summary), data_json))
        )

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

    def last_llm_call(self, run_id: str, branch: int, step: int) -> LLMCallRecord | None:
        with self._reading() as conn:
            for seg in reversed(self._segments(conn, run_id, branch)):
                if seg.lo > step:
                    continue
                rows = self._rows(  # one seek down the (run, branch, step) index
                    conn,
                    "SELECT * FROM llm_calls WHERE run_id = ? AND branch = ? AND step >= ?"
                    " AND step <= ? ORDER BY step DESC, id DESC LIMIT 1",
                    (run_id, seg.branch, seg.lo, min(seg.hi, step)),
                )
                if rows:
                    return self._llm_call(conn, rows[0])
            return None

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
