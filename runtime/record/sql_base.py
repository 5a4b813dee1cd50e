"""Provides `SQLBase`, the plumbing of the SQL run stores (`sql_store.py`): the writer queue,
read connections that see this store's own writes, statement translation (`Dialect.sql`), run
id prefixes and the lineage cache. The concepts built on it are mixins: steps and branches
(`sql_steps.py`), the journal of events, LLM calls and effects (`sql_journal.py`), run owners
and their leases (`sql_owners.py`); `SQLStore` puts them together with the runs themselves.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from runtime.record.contract import RunTakenOver
from runtime.record.requests import RequestPacker
from runtime.record.store import (
    Segment,
    StoreError,
    ambiguous_prefix,
    lineage_segments,
    prefix_upper_bound,
)
from runtime.record.writer import Connection, Dialect, NoWriter, Op, Writer, WriteResult

__all__ = ["SQLBase"]


class SQLBase:
    """What every part of `SQLStore` uses: the writer, read connections and row helpers.

    A subclass opens the database and sets `where` (the store as named in messages), `_dialect`,
    `_writer` and `_clock`, and provides `_connection()` (a read connection) and `_release()`
    (what `close` frees besides the writer).
    """

    where: str
    _dialect: Dialect
    _writer: Writer | NoWriter
    _clock: Callable[[], datetime]
    _closed: bool
    _lineages: dict[tuple[str, int], list[Segment]]
    _packer: RequestPacker
    _packer_lock: threading.Lock

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
        first = errors[0]
        if isinstance(first, RunTakenOver):
            raise first  # every write refused has this one cause, which names the store
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
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
        if not run_id or not run_id.isascii() and not _encodable(run_id):
            return None  # not an id any run has (a lone surrogate from a non-UTF-8 argument)
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


@functools.lru_cache(maxsize=512)
def _translate_cached(dialect: Dialect, text: str) -> str:
    return dialect.sql(text)


def _translate(dialect: Dialect, text: str) -> str:
    return _translate_cached(dialect, text)


def _encodable(text: str) -> bool:
    """Whether `text` has a UTF-8 form (the drivers refuse to send one that has none)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
