"""The writer runs a group's statements in an order that keeps what each depends on: only
writes marked `free` (step batches and keyframes, rows of tables nothing else in a group reads)
are gathered per statement, so the recorder's alternating batch and keyframe rows cost two
`executemany` calls a group rather than one each; on SQLite, a hundred rows go in one INSERT.

Why a statement per row was too many: SQLite's driver lets go of the GIL around every statement,
and a thread that wants it back while the interpreter runs a tight loop waits a switch interval
(5 ms). At a statement per row the writer committed a recorded loop's steps seconds late (a crash
lost them): 378 rows took it 7.3 s. The statement count is what these tests hold down."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import Any

from runtime.record.sqlite_store import SQLITE
from runtime.record.writer import Op, Writer, _statements, multirow


def _shape(ops: list[Op]) -> list[tuple[str | None, list[Any]]]:
    return [
        (sql, [op.params[0] if op.params else op.fn for op in run]) for sql, run in _statements(ops)
    ]


def test_free_writes_are_gathered_per_statement_and_others_keep_their_place() -> None:
    def fn(conn: Any) -> None:
        return None

    ops = [
        Op("BATCH", (1,), free=True),
        Op("KEYFRAME", (2,), free=True),
        Op("BATCH", (3,), free=True),
        Op("KEYFRAME", (4,), free=True),
        Op(None, fn=fn),
        Op("EVENT", (5,)),
        Op("EVENT", (6,)),
        Op("BATCH", (7,), free=True),
        Op("EVENT", (8,)),
    ]
    assert _shape(ops) == [
        ("BATCH", [1, 3]),
        ("KEYFRAME", [2, 4]),
        (None, [fn]),
        ("EVENT", [5, 6]),
        ("BATCH", [7]),
        ("EVENT", [8]),
    ]


def test_a_plain_write_never_moves_past_a_free_one() -> None:
    # A branch row must be inserted before the batches of that branch: a plain write between
    # free ones splits them.
    ops = [Op("BATCH", (1,), free=True), Op("BRANCH", (2,)), Op("BATCH", (3,), free=True)]
    assert _shape(ops) == [("BATCH", [1]), ("BRANCH", [2]), ("BATCH", [3])]


def test_multirow_repeats_the_values_and_keeps_what_follows_them() -> None:
    one = "INSERT INTO t (a, b) VALUES (?, ?) ON CONFLICT (a) DO UPDATE SET b = excluded.b"
    assert multirow(one, 3) == (
        "INSERT INTO t (a, b) VALUES (?, ?), (?, ?), (?, ?)"
        " ON CONFLICT (a) DO UPDATE SET b = excluded.b"
    )
    assert multirow("INSERT INTO t (a) VALUES (json(?))", 2) is None  # not plain placeholders
    assert multirow("UPDATE t SET a = ? WHERE b = ?", 2) is None
    assert multirow("INSERT INTO t (a) VALUES (?) ON CONFLICT (a) DO UPDATE SET b = ?", 2) is None
    assert multirow("INSERT INTO t (a) SELECT a FROM u", 2) is None


def _writer_on_sqlite() -> tuple[Writer, sqlite3.Connection, list[str]]:
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    conn.execute("CREATE TABLE batches (run TEXT, step INTEGER, blob BLOB)")
    conn.execute("CREATE TABLE keyframes (run TEXT, step INTEGER PRIMARY KEY, blob BLOB)")
    inserts: list[str] = []
    conn.set_trace_callback(lambda sql: inserts.append(sql) if sql.startswith("INSERT") else None)
    writer = Writer(conn, ":memory:", lambda: datetime.now(UTC), SQLITE)
    return writer, conn, inserts


BATCH = "INSERT INTO batches (run, step, blob) VALUES (?, ?, ?)"
KEYFRAME = (
    "INSERT INTO keyframes (run, step, blob) VALUES (?, ?, ?)"
    " ON CONFLICT (step) DO UPDATE SET blob = excluded.blob"
)


def test_a_group_of_many_rows_is_a_few_statements_with_the_same_rows() -> None:
    writer, conn, inserts = _writer_on_sqlite()
    try:
        with writer._cond:  # hold the writer back so every write lands in one group
            for step in range(250):
                writer._queue.append(Op(BATCH, ("r", step, bytes([step])), free=True))
                # every keyframe twice: the later write of a step must win, as it did row by row
                for blob in (b"old", b"new%d" % step):
                    writer._queue.append(Op(KEYFRAME, ("r", step % 100, blob), free=True))
            writer.enqueued = len(writer._queue)
            writer._urgent = writer.enqueued
            writer._cond.notify_all()
        writer.wait()
        assert not writer.take_errors()
        assert len(inserts) == 3 + 5  # 250 batch rows, 500 keyframe rows: 100 a statement
        batches = conn.execute("SELECT step, blob FROM batches ORDER BY rowid").fetchall()
        assert batches == [(step, bytes([step])) for step in range(250)]
        keyframes = dict(conn.execute("SELECT step, blob FROM keyframes").fetchall())
        assert keyframes == {
            step: b"new%d" % (200 + step if step < 50 else 100 + step) for step in range(100)
        }
    finally:
        writer.stop()
