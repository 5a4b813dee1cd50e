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
