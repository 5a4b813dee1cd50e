"""A batch is read in one pass (`DecodedBatch`): its entries stay as stored, a local write of the
innermost frame as its name and its value, and what a reader asks of one step (its writes as
`R_*` tuples, its depth, its marker) or of a run of steps (`RawState.apply`) is the same as
the tuple-per-write form gives. An append is two entries too: its container's shared head and
the item; and so is a call with plain locals: its call site's shared tuple and the locals."""

from __future__ import annotations

import pytest

from runtime.record.format import (
    BATCH_APPENDS,
    BATCH_CALLS,
    BATCH_LOCALS,
    R_APPEND,
    R_CONTENTS,
    R_LOCAL,
    R_POP_FRAME,
    R_PUSH_FRAME,
    BlobError,
    decode_batch,
    encode_record,
)
from runtime.record.raw_state import DecodedBatch, RawState


def _state(frames: int) -> dict[str, object]:
    return {
        "frames": [[f"f{d}", "def", (), {}, 1, 1] for d in range(frames)],
        "globals": {},
        "threads": {},
        "active": "0",
        "output": [],
        "usage": [0, 0, 0.0],
        "status": "running",
        "result": None,
        "error": None,
        "heap": {},
    }


# Steps 10..14, two frames at the start: step 10's writes set `a` (an int value, like a marker)
# and `s` (a str value, like a name); step 11 calls into a third frame whose `n` is written at
# step 12; step 13 returns from it and writes `a` again; step 14 writes nothing.
PUSH = (R_PUSH_FRAME, "g", "def", ("n",), {"n": 0}, 3, 4)
ENTRIES = ["a", 16, "s", "t", 8, PUSH, 24, "n", 5, 32, (R_POP_FRAME,), "a", 40, 16, 8]


def test_one_pass_reads_what_the_tuple_form_gives() -> None:
    blob = encode_record((10, 2, 2, ENTRIES, BATCH_LOCALS))
    batch = DecodedBatch(blob)
    assert (batch.first, batch.last) == (10, 14)
    tuples = decode_batch(blob)[3]
    steps, writes = [], []
    for e in tuples:
        if type(e) is int:
            steps.append((e, tuple(writes)))
            writes = []
        else:
            writes.append(e)
    depths = [2, 3, 3, 2, 2]
    for i, (marker, want) in enumerate(steps):
        assert batch.record(10 + i) == (marker >> 3, marker & 7, want, depths[i])
        assert batch.marker(10 + i) == marker
        assert batch.depth(i) == depths[i]
    assert batch.record(10)[2] == ((R_LOCAL, 1, "a", 16), (R_LOCAL, 1, "s", "t"))
    assert batch.record(12)[2] == ((R_LOCAL, 2, "n", 5),)

    # Applied as stored, markers and names included, the state is what the tuples make.
    as_stored, as_tuples = RawState(_state(2), 9), RawState(_state(2), 9)
    as_stored.apply(batch.entries)
    as_tuples.apply([e for e in tuples if type(e) is not int])
    assert as_stored.frames == as_tuples.frames
    assert as_stored.frames[1][3] == {"a": 40, "s": "t"}


def test_a_damaged_batch_is_refused() -> None:
    with pytest.raises(BlobError, match="without its value"):
        DecodedBatch(encode_record((1, 1, 1, [8, "x"], BATCH_LOCALS)))
    with pytest.raises(BlobError, match="neither a marker nor a write"):
        DecodedBatch(encode_record((1, 1, 1, [8, [1], 16], BATCH_LOCALS)))
    # A batch of the older form holds no names: a str there is damage, not a local write.
    with pytest.raises(BlobError, match="neither a marker nor a write"):
        DecodedBatch(encode_record((1, 1, 1, ["x", 1, 8])))


def test_a_batch_of_the_older_form_reads_as_before() -> None:
    # Stores written before local writes became names and values hold a tuple for every write.
    entries = [(R_LOCAL, 1, "a", 16), 8, PUSH, 16, (R_LOCAL, 2, "n", 5), (R_POP_FRAME,), 24]
    batch = DecodedBatch(encode_record((3, 2, 2, entries)))
    assert (batch.first, batch.last) == (3, 5)
    assert batch.record(3) == (1, 0, ((R_LOCAL, 1, "a", 16),), 2)
    assert batch.record(5) == (3, 0, ((R_LOCAL, 2, "n", 5), (R_POP_FRAME,)), 2)
    raw = RawState(_state(2), 2)
    raw.apply(batch.entries)
    assert raw.frames[1][3] == {"a": 16} and len(raw.frames) == 2


def test_a_replay_from_the_start_finds_the_markers_as_it_goes() -> None:
    # A random read replays a batch from its first step without a pass to find its markers
    # first: `apply(entries, n)` stops at the nth marker and returns it, and the state is the
    # one the sliced form gives.
    blob = encode_record((10, 2, 2, ENTRIES, BATCH_LOCALS))
    marked = DecodedBatch(blob)
    for n in range(1, 6):
        lazy = DecodedBatch(blob, 14)
        counted, sliced = RawState(_state(2), 9), RawState(_state(2), 9)
        marker = counted.apply(lazy.entries, n)
        sliced.apply(marked.entries[: marked.marks[n - 1]])
        assert counted.frames == sliced.frames
        assert marker == marked.marker(9 + n)
        lazy.found(9 + n, marker)
        assert lazy.marker(9 + n) == marker
        assert lazy.known  # found without the pass over the whole batch
        assert lazy.marks == marked.marks  # and found in full when asked


def test_a_row_that_does_not_match_its_batch_is_damage() -> None:
    blob = encode_record((10, 2, 2, ENTRIES, BATCH_LOCALS))
    with pytest.raises(BlobError, match="fewer steps than its row"):
        RawState(_state(2), 9).apply(DecodedBatch(blob, 20).entries, 11)
    with pytest.raises(BlobError, match="5 steps where its row in the store says 11"):
        DecodedBatch(blob, 20).marks  # noqa: B018 - the property checks
    # A name without its value, met by a replay rather than by the pass over the markers.
    short = encode_record((1, 1, 1, [8, "x"], BATCH_LOCALS))
    with pytest.raises(BlobError, match="without its value"):
        RawState(_state(1), 0).apply(DecodedBatch(short, 1).entries, 2)
    # … and by the other passes that read a batch before its markers are found.
    with pytest.raises(BlobError, match="without its value"):
        DecodedBatch(short, 1).resets()
    with pytest.raises(BlobError, match="without its value"):
        DecodedBatch(short, 1).depth(0)


def test_an_append_is_its_containers_head_and_the_item() -> None:
    # The head is the same tuple object each time (pickled once), and the item after it may be
    # an int, which is not a marker, or a str, which is not a name.
    head = (R_APPEND, 4)
    entries = [(R_CONTENTS, 4, []), head, 7, 8, head, "x", "y", 1, 16]
    blob = encode_record((5, 1, 1, entries, BATCH_APPENDS), memo=True)
    apart = [(e[0], e[1]) if e == head else e for e in entries]  # equal heads, but two objects
    assert len(blob) < len(encode_record((5, 1, 1, apart, BATCH_APPENDS), memo=True))
    first, before, after, got = decode_batch(blob)
    assert got == [(R_CONTENTS, 4, []), (R_APPEND, 4, 7), 8, (R_APPEND, 4, "x"), (1, 0, "y", 1), 16]
    batch = DecodedBatch(blob)
    assert batch.marks == [3, 8] and (batch.first, batch.last) == (5, 6)
    assert [batch.depth(0), batch.depth(1)] == [1, 1] and batch.resets() == []
    state = RawState(_state(1), 4)
    state.apply(batch.entries)
    assert state.heap[4] == [7, "x"] and state.frames[-1][3] == {"y": 1}
    with pytest.raises(BlobError, match="without its"):
        decode_batch(encode_record((5, 1, 1, [8, head], BATCH_APPENDS)))
    with pytest.raises(BlobError, match="without its"):
        _ = DecodedBatch(encode_record((5, 1, 1, [8, head], BATCH_APPENDS))).marks


def test_a_call_is_its_sites_tuple_and_the_locals() -> None:
    # The site's tuple has None for locals and is the same object at each call from that site;
    # the locals after it hold ints, which are not markers, and names, which are not writes.
    site = (R_PUSH_FRAME, "f", "def", ("n", "s"), None, 3, 5)
    entries = [
        site,
        {"n": 7, "s": "x"},
        8,
        "n",
        6,
        site,
        {"n": 16, "s": "y"},
        24,
        (R_POP_FRAME,),
        32,
    ]
    blob = encode_record((5, 1, 1, entries, BATCH_CALLS), memo=True)
    apart = [e[:1] + e[1:] if e is site else e for e in entries]  # equal, two objects
    assert len(blob) < len(encode_record((5, 1, 1, apart, BATCH_CALLS), memo=True))
    first, before, after, got = decode_batch(blob)
    assert got[0] == (R_PUSH_FRAME, "f", "def", ("n", "s"), {"n": 7, "s": "x"}, 3, 5)
    assert got[1:3] == [8, (R_LOCAL, 1, "n", 6)] and got[4] == 24
    batch = DecodedBatch(blob)
    assert batch.marks == [2, 7, 9] and (batch.first, batch.last) == (5, 7)
    assert [batch.depth(0), batch.depth(1), batch.depth(2)] == [2, 3, 1]
    assert batch.resets() == []
    state = RawState(_state(1), 4)
    state.apply(batch.entries, 2)  # to the second step
    assert [f[0] for f in state.frames] == ["f0", "f", "f"]
    assert state.frames[1][3] == {"n": 6, "s": "x"} and state.frames[2][3] == {"n": 16, "s": "y"}
    assert batch.record(6)[2][-1][4] == {"n": 16, "s": "y"}
    for damaged in ([8, site], [8, site, 16], [8, site, [7]]):
        blob = encode_record((5, 1, 1, damaged, BATCH_CALLS))
        with pytest.raises(BlobError, match="without its"):
            decode_batch(blob)
        with pytest.raises(BlobError):
            RawState(_state(1), 4).apply(DecodedBatch(blob).entries)
