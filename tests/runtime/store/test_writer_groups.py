"""The writer runs a group's statements in an order that keeps what each depends on: only
writes marked `free` (step batches and keyframes, rows of tables nothing else in a group reads)
are gathered per statement, so the recorder's alternating batch and keyframe rows cost two
`executemany` calls a group rather than one each."""

from __future__ import annotations

from typing import Any

from runtime.record.writer import Op, _statements


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
