"""Reading a recorded run in any order gives the views a fresh timeline gives: the caches that
make random reads of an LLM run cheap (the longest thread converted, keyframe states sharing
their equal parts, the collector held while decoding) change what is read, never its value."""

from __future__ import annotations

import gc
import random
from pathlib import Path

import pytest

from runtime.language.program import compile_source
from runtime.record.raw_state import SharedParts, gc_held
from runtime.record.sqlite_store import SQLiteStore
from runtime.runs.fork import Timeline
from runtime.runs.recording import record_program
from runtime.runs.runner import RunConfig

CHAT = """node main() {
  let i = 0
  let said = []
  while (i < %d) {
    const answer = llm("Turn " + i + " of a conversation that keeps growing, padded: %s")
    said.push(answer)
    i = i + 1
  }
  return i
}
"""


@pytest.fixture(scope="module")
def chat_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    turns = 40
    path = tmp_path_factory.mktemp("chat") / "runs.db"
    answers = [{"return": f"Reply {i}, which the thread keeps: " + "y" * 120} for i in range(turns)]
    store = SQLiteStore(path)
    try:
        program = compile_source(CHAT % (turns, "z" * 120), "chat.agency")
        rec = record_program(program, RunConfig(mocks=answers, quiet=True), store)
    finally:
        store.close()
    assert rec.machine.result == turns
    return path, rec.run_id


def test_random_order_reads_match_fresh_reads(chat_run: tuple[Path, str]) -> None:
    path, run_id = chat_run
    with SQLiteStore(path, read_only=True) as store:
        tl = Timeline.open(store, run_id)
        steps = list(range(len(tl)))
        random.Random(7).shuffle(steps)
        seen = {k: tl.state_at(k) for k in steps}
        for k in steps[::3]:
            assert Timeline.open(store, run_id).state_at(k) == seen[k], k
        last = seen[len(tl) - 1].threads
        assert sum(len(t) for t in last.values()) == 80


def test_earlier_threads_are_slices_of_the_longest(chat_run: tuple[Path, str]) -> None:
    path, run_id = chat_run
    with SQLiteStore(path, read_only=True) as store:
        tl = Timeline.open(store, run_id)
        late = tl.state_at(len(tl) - 1)
        early = tl.state_at(len(tl) // 3)  # read after: a prefix of what was converted
        (tid,) = early.threads
        assert 0 < len(early.threads[tid]) < len(late.threads[tid])
        assert all(a is b for a, b in zip(early.threads[tid], late.threads[tid]))


def test_shared_parts_share_equal_messages_and_containers() -> None:
    shared = SharedParts()
    first = {"threads": {"0": [{"role": "user", "content": "a"}]}, "heap": {1: [1, 2]}}
    second = {
        "threads": {"0": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]},
        "heap": {1: [1, 2], 2: {"k": 3}},
    }
    third = {"threads": {"0": [{"role": "user", "content": "other"}]}, "heap": {1: [9]}}
    for data in (first, second, third):
        shared.share(data)
    assert second["threads"]["0"][0] is first["threads"]["0"][0]
    assert second["heap"][1] is first["heap"][1]
    assert third["threads"]["0"] == [{"role": "user", "content": "other"}]  # unequal: its own
    assert third["heap"][1] == [9]


def test_gc_held_restores_the_collector() -> None:
    assert gc.isenabled()
    with gc_held():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_held():
            pass
        assert not gc.isenabled()  # a caller that holds it keeps holding it
    finally:
        gc.enable()
    with pytest.raises(ValueError), gc_held():
        raise ValueError
    assert gc.isenabled()


def test_a_read_cut_short_by_a_damaged_batch_leaves_no_half_moved_state() -> None:
    # Reads walk one state forward batch by batch; a batch that turns out damaged half-way
    # (its row promises more steps than it holds) is an error, and the next read starts
    # afresh rather than from a state that took half of the damaged batch's writes.
    from runtime.record.format import BATCH_LOCALS, batch_entries, encode_record
    from runtime.record.memory_store import MemoryStore
    from runtime.record.raw_state import DecodedBatch
    from runtime.record.timeline import DamagedRecord

    source = """node main() {
  let i = 0
  while (i < 3000) {
    i = i + 1
  }
  return i
}
"""

    def i_at(tl: Timeline, k: int) -> object:
        view = tl.names_at(k, ["i"])
        return view.frames[-1].locals.get("i") if view.frames else None

    store = MemoryStore()
    rec = record_program(compile_source(source, "loop.agency"), RunConfig(), store)
    clean = Timeline.open(store, rec.run_id)
    want = [i_at(clean, k) for k in range(len(clean))]
    branch = store._runs[rec.run_id].branches[0]  # noqa: SLF001
    batches, keyframes = branch.batches, set(branch.kf_steps)
    # A batch read by replaying it: a keyframe just before it, none at its end.
    at = next(
        n
        for n in range(len(batches) // 2, len(batches))
        if batches[n][0] - 1 in keyframes and batches[n][1] not in keyframes
    )
    first, last, blob = batches[at]
    head_first, before, after, entries, _pairs = batch_entries(blob)
    marks = DecodedBatch(blob).marks
    cut = entries[: marks[len(marks) // 2] + 1]  # whole steps: only their count is wrong
    batches[at] = (first, last, encode_record((head_first, before, after, cut, BATCH_LOCALS)))

    tl = Timeline.open(store, rec.run_id)
    assert i_at(tl, first - 1) == want[first - 1]  # the timeline's state stands before it
    with pytest.raises(DamagedRecord):
        tl.state_at(last)
    for k in (first - 1, first - 2, first - 5):
        assert i_at(tl, k) == want[k]


def test_a_far_read_with_a_keyframe_nearer_reads_no_batch_before_it(
    chat_run: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A read ahead of the last one, with a keyframe between them, starts from the keyframe;
    # the batches between the two reads (one a call in an LLM run) are not read to learn
    # whether a restore replaced the state there: the keyframe's way does not need to know.
    path, run_id = chat_run
    with SQLiteStore(path, read_only=True) as store:
        tl = Timeline.open(store, run_id)
        far = len(tl) - 1
        tl.state_at(1)
        kf = tl._keyframe_step(far)  # noqa: SLF001
        assert kf > 1 + 64, "the run should keep keyframes well apart from its start"
        asked: list[tuple[int, int]] = []
        scan = Timeline._reset_between  # noqa: SLF001

        def spy(self: Timeline, a: int, b: int) -> bool:
            asked.append((a, b))
            return scan(self, a, b)

        monkeypatch.setattr(Timeline, "_reset_between", spy)
        view = tl.state_at(far)
        assert all(a > kf for a, _ in asked), asked
        assert view == Timeline.open(store, run_id).state_at(far)


def test_batch_cache_finds_a_batch_by_any_step_it_holds_and_drops_the_least_used() -> None:
    from runtime.record.format import BATCH_PUSHES, encode_record
    from runtime.record.raw_state import BatchCache, DecodedBatch

    def batch(first: int, steps: int, writes: int = 0) -> DecodedBatch:
        entries: list[object] = []
        for k in range(steps):
            entries += ["x", k] * writes
            entries.append(8)  # a step marker
        return DecodedBatch(encode_record((first, 1, 1, entries, BATCH_PUSHES)))

    cache = BatchCache(max_batches=3, max_entries=100, max_bytes=100)
    a, b, c = batch(0, 5), batch(5, 5), batch(20, 2)
    cache.keep(0, 0, a)
    cache.keep(0, 5, b)
    cache.keep(1, 20, c)  # another branch
    assert cache.find(0, 0) is a and cache.find(0, 4) is a and cache.find(0, 9) is b
    assert cache.find(0, 10) is None  # past the last batch's last step
    assert cache.find(0, 20) is None and cache.find(1, 21) is c and cache.find(1, 19) is None
    cache.find(0, 0)  # a is now the most recently used: b goes first
    cache.keep(0, 10, batch(10, 5))
    assert len(cache) == 3 and (0, 5) not in cache and cache.find(0, 7) is None
    assert cache.find(0, 3) is a
    big = batch(30, 4, writes=12)  # 100 entries: the others go to make room
    cache.keep(0, 30, big)
    assert len(cache) == 1 and cache.find(0, 33) is big
    cache.keep(0, 40, batch(40, 1), nbytes=60)
    cache.keep(0, 41, batch(41, 1), nbytes=60)  # long messages: the bytes bound holds too
    assert len(cache) == 1 and cache.find(0, 41) is not None and cache.find(0, 40) is None
    cache.clear()
    assert len(cache) == 0 and cache.find(0, 41) is None
