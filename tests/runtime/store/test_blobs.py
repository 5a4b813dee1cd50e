"""Stored blobs are read without `marshal.loads`: `safe_loads` reads the recorder's encoding
(so old stores read as they are) but only plain data, and refuses tampered bytes cleanly."""

from __future__ import annotations

import json
import marshal
import sqlite3
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from debugger.cli import cli
from runtime.record.format import (
    BATCH_LOCALS,
    BATCH_VERSIONS,
    MAX_INT_DIGITS,
    ZLIB_PREFIX,
    BlobError,
    decode_batch,
    decode_keyframe,
    encode_record,
    safe_loads,
)
from runtime.record.sqlite_store import SQLiteStore
from runtime.record.timeline import Timeline

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**200), 2**200)
    | st.floats(allow_nan=False)
    | st.text(max_size=30)
    | st.binary(max_size=30)
)
plain = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=6)
        | st.lists(inner, max_size=6).map(tuple)
        | st.dictionaries(st.text(max_size=8) | st.integers(), inner, max_size=6)
    ),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(value=plain)
def test_reads_what_marshal_writes(value: object) -> None:
    blob = marshal.dumps(value)
    assert safe_loads(blob) == marshal.loads(blob)


def test_shared_values_come_back_shared_and_nan_reads() -> None:
    shared = ["x" * 40, 7]
    value = ((shared, shared), {"a": float("nan")}, "x" * 40)
    got = safe_loads(marshal.dumps(value))
    assert got[0][0] == shared and got[0][0] is got[0][1]
    assert got[1]["a"] != got[1]["a"]


@settings(max_examples=300, deadline=None)
@given(value=plain, cut=st.integers(0, 400), flip=st.integers(0, 400), byte=st.integers(0, 255))
def test_tampered_bytes_are_a_blob_error_or_plain_data(
    value: object, cut: int, flip: int, byte: int
) -> None:
    blob = bytearray(marshal.dumps(value))
    if blob:
        blob[flip % len(blob)] = byte
    if cut % 3 == 0:
        del blob[len(blob) - cut % (len(blob) + 1) :]
    try:
        safe_loads(bytes(blob))
    except BlobError:
        pass


@pytest.mark.parametrize(
    "blob",
    [
        marshal.dumps(compile("1", "x", "eval")),  # a code object
        marshal.dumps({1, 2}),  # a set: not what the recorder writes
        b"[\xff\xff\xff\x7f",  # a list claiming 2**31 - 1 items
        b"s\x00\x00\x00\x40abc",  # bytes claiming 1 GiB
        b"l" + (MAX_INT_DIGITS + 1).to_bytes(4, "little") + b"\x01\x00" * (MAX_INT_DIGITS + 1),
        b"(" * 5000,  # nesting
        b"\xdb\x01\x00\x00\x00r\x00\x00\x00\x00",  # a list holding itself
        marshal.dumps(1) + b"junk",
        b"",
    ],
)
def test_what_is_refused(blob: bytes) -> None:
    with pytest.raises(BlobError, match="damaged record at byte"):
        safe_loads(blob)


def test_a_batch_of_local_writes_as_names_and_values_reads_as_tuples() -> None:
    # Two frames at the start: a write to `x` is at depth 1; a call's frame makes `n` depth 2;
    # after its return `y` is at 1 again, and after a restore to one frame `z` is at 0. A value
    # that is an int or a str is a value, not a marker or a name.
    entries = ["x", 7, 8, (6, "f", "def", ("n",), {}, 1, 1), "n", "a", 16, (7,), "y", 3]
    entries += [24, (13, 1), "z", ("r", 4), 32]
    first, before, after, got = decode_batch(encode_record((5, 2, 1, entries, BATCH_LOCALS)))
    assert (first, before, after) == (5, 2, 1)
    assert got == [
        (1, 1, "x", 7),
        8,
        (6, "f", "def", ("n",), {}, 1, 1),
        (1, 2, "n", "a"),
        16,
        (7,),
        (1, 1, "y", 3),
        24,
        (13, 1),
        (1, 0, "z", ("r", 4)),
        32,
    ]
    with pytest.raises(BlobError, match="without its value"):
        decode_batch(encode_record((5, 1, 1, [8, "x"], BATCH_LOCALS)))
    with pytest.raises(BlobError, match="damaged step batch"):  # a flag it does not know
        decode_batch(encode_record((5, 1, 1, [8], max(BATCH_VERSIONS) + 1)))


def test_batches_and_keyframes() -> None:
    batch = (5, 1, 1, [(1, "x", 2), 41, 49])
    assert decode_batch(marshal.dumps(batch)) == batch
    with pytest.raises(BlobError, match="damaged step batch"):
        decode_batch(marshal.dumps((5, 1, 1, ["not a write"])))
    state = {"globals": {"a": [1, 2, 3] * 100}}
    assert decode_keyframe(ZLIB_PREFIX + zlib.compress(marshal.dumps(state))) == state
    with pytest.raises(BlobError, match="damaged keyframe"):
        decode_keyframe(ZLIB_PREFIX + b"not zlib at all")
    bomb = ZLIB_PREFIX + zlib.compress(b"\x00" * (1 << 24))
    with pytest.raises(BlobError):
        decode_keyframe(bomb)


def test_one_damaged_run_never_hides_the_others(tmp_path: Path) -> None:
    """A bad config_json and a bad keyframe: `agency runs` lists every run (the damaged one
    marked) and `agency show` of the bad keyframe's run is one clean line."""
    db = str(tmp_path / "runs.db")
    dice = [str(EXAMPLES / "dice.agency"), "--mock", str(EXAMPLES / "dice.mocks.json")]
    for _ in range(3):
        assert CliRunner().invoke(cli, ["run", *dice, "--db", db]).exit_code == 0
    conn = sqlite3.connect(db)
    ids = [row[0] for row in conn.execute("SELECT id FROM runs ORDER BY id")]
    with conn:
        conn.execute("UPDATE runs SET config_json = '{broken' WHERE id = ?", (ids[0],))
        conn.execute("UPDATE keyframes SET blob = X'007a0000' WHERE run_id = ?", (ids[1],))
        conn.execute("UPDATE step_batches SET blob = X'8005deadbeef' WHERE run_id = ?", (ids[1],))
    conn.close()
    listed = CliRunner().invoke(cli, ["runs", "--db", db, "--json"])
    assert listed.exit_code == 0, listed.output
    runs = {r["id"]: r for r in json.loads(listed.output)}
    assert set(runs) == set(ids)
    assert runs[ids[0]]["damaged"] == ["config_json"]
    table = CliRunner().invoke(cli, ["runs", "--db", db])
    assert table.exit_code == 0 and "(damaged:" in table.output  # the table wraps the rest
    shown = CliRunner().invoke(cli, ["show", ids[1], "--db", db])
    assert shown.exit_code == 2 and "Traceback" not in shown.output
    assert "damaged" in shown.output and len(shown.output.strip().splitlines()) == 1
    good = CliRunner().invoke(cli, ["show", ids[2], "--db", db])
    assert good.exit_code == 0, good.output


def test_a_store_written_before_the_change_still_reads(tmp_path: Path) -> None:
    """Blobs written as marshal streams (every store before this format) read the same."""
    db = tmp_path / "runs.db"
    dice = [str(EXAMPLES / "dice.agency"), "--mock", str(EXAMPLES / "dice.mocks.json")]
    assert CliRunner().invoke(cli, ["run", *dice, "--db", str(db)]).exit_code == 0
    with SQLiteStore(db) as store:
        run = store.latest_run()
        assert run is not None
        before = [Timeline.open(store, run.id).state_at(k) for k in range(run.step_count)]
    conn = sqlite3.connect(db)
    with conn:
        for table in ("step_batches", "keyframes"):
            for rowid, blob in conn.execute(f"SELECT rowid, blob FROM {table}").fetchall():
                compressed = blob[:2] == ZLIB_PREFIX
                raw = zlib.decompress(blob[2:]) if compressed else blob
                old = marshal.dumps(safe_loads(raw))
                old = ZLIB_PREFIX + zlib.compress(old) if compressed else old
                conn.execute(f"UPDATE {table} SET blob = ? WHERE rowid = ?", (old, rowid))
    conn.close()
    with SQLiteStore(db) as store:
        assert [Timeline.open(store, run.id).state_at(k) for k in range(run.step_count)] == before
