"""Incremental keyframes (only what changed since the last full one) read back the same states
as full ones, from the keyframes themselves (random access) and walking forward."""

from __future__ import annotations

import itertools
import marshal
import random
import types
from typing import Any

import pytest

from runtime.language.program import compile_source
from runtime.record.format import decode_keyframe
from runtime.record.store import MemoryStore
from runtime.record.timeline import Timeline
from runtime.runs import recorder as recorder_module
from runtime.runs.recorder import Recorder
from runtime.runs.recording import record_program
from runtime.runs.runner import RunConfig

PROGRAM = """
let history = []
let counts = {a: 0, b: [1, 2]}

def note(i: number) {
  history.push({n: i, text: "entry " + i})
  return history.length
}

node main() {
  let i = 0
  let big = []
  while (i < 3000) {
    big.push("item number " + i)
    i = i + 1
  }
  i = 0
  let last = ""
  while (i < 1200) {
    i = i + 1
    if (i % 100 == 0) {
      note(i)
      last = llm("question " + i)
      print("got " + last)
    }
    if (i % 250 == 0) {
      counts.a = counts.a + 1
      counts.b.push(i)
      big[3] = "changed at " + i
    }
    if (i == 700) {
      thread {
        llm("in a thread of its own")
      }
    }
  }
  return history.length
}
"""


# A list pushed to, popped below its length in the last full keyframe, then pushed to again:
# an incremental keyframe must hold it whole, not as that length and a tail. Now and then an
# object is pushed: a tail that holds one is encoded item by item.
PUSH_POP = """
node main() {
  let xs = []
  let i = 0
  while (i < 4000) {
    xs.push(i)
    if (i % 700 == 0) {
      xs.push({at: i})
    }
    if (i % 500 == 499) {
      let k = 0
      while (k < 300) {
        xs.pop()
        k = k + 1
      }
    }
    i = i + 1
  }
  return xs.length
}
"""


def record(
    incremental: bool, monkeypatch: pytest.MonkeyPatch, source: str = PROGRAM
) -> tuple[MemoryStore, str]:
    monkeypatch.setattr(Recorder, "incremental", incremental)
    store = MemoryStore()
    mocks: list[Any] = [{"return": f"answer {i}"} for i in range(20)]
    rec = record_program(compile_source(source, "p.agency"), RunConfig(mocks=mocks), store)
    assert rec.machine.error is None, rec.machine.error
    return store, rec.run_id


@pytest.mark.parametrize("source", [PROGRAM, PUSH_POP], ids=["program", "push-pop"])
def test_incremental_keyframes_read_back_the_same_states(
    monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    full_store, full_id = record(False, monkeypatch, source)
    inc_store, inc_id = record(True, monkeypatch, source)
    kinds = [
        "base" in decode_keyframe(blob)
        for blob in inc_store._runs[inc_id].branches[0].kf_blobs  # noqa: SLF001
    ]
    assert kinds[0] is False and sum(kinds) >= 3  # the first is full, many are incremental

    want = Timeline.open(full_store, full_id)
    walked = Timeline.open(inc_store, inc_id)
    n = len(want)
    assert len(walked) == n
    for k in range(n):  # forward: deltas on the cursor, crossing keyframes
        assert walked.state_at(k) == want.state_at(k), k
    steps = sorted(inc_store._runs[inc_id].branches[0].kf_steps)  # noqa: SLF001
    probes = steps + [s + 1 for s in steps if s + 1 < n] + random.Random(3).sample(range(n), 60)
    for k in probes:  # each from its keyframe: a fresh timeline, nothing cached
        assert Timeline.open(inc_store, inc_id).state_at(k) == want.state_at(k), k


def test_a_large_container_written_once_is_not_captured_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = """node main() {
  let big = []
  let i = 0
  while (i < 3000) {
    big.push(i)
    i = i + 1
  }
  i = 0
  while (i < 40000) {
    i = i + 1
  }
  return big.length
}
"""

    # A full keyframe comes once enough wall time has passed since the last one, in times what
    # that one took. On a loaded machine that is at random, so the recorder reads a clock here
    # on which every reading is a tick later: time passes at the pace of keyframes.
    ticks = itertools.count()
    clock = types.SimpleNamespace(perf_counter=lambda: float(next(ticks)))
    monkeypatch.setattr(recorder_module, "time", clock)
    store = MemoryStore()
    rec = record_program(compile_source(source, "p.agency"), RunConfig(), store)
    assert rec.machine.result == 3000
    branch = store._runs[rec.run_id].branches[0]  # noqa: SLF001
    keyframes = [decode_keyframe(blob) for blob in branch.kf_blobs]
    costs = [len(marshal.dumps(k)) for k in keyframes]  # what capturing each one cost
    deltas = sum(len(blob) for _, _, blob in branch.batches)
    # Full captures come once the deltas outweigh them twice; the rest are a few hundred bytes
    # (the array is referred to, not captured again), so keyframes cost less than the deltas.
    # (The second loop is long enough that most keyframes come while the array is unchanged.)
    assert sum(costs) < deltas
    small = [c for k, c in zip(keyframes, costs, strict=True) if "base" in k and c < 1000]
    assert len(small) > len(keyframes) / 2


def test_no_full_keyframe_comes_while_nothing_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    # A full keyframe comes once time enough has passed since the last one (see the clock
    # above), but only if a container, a thread or the output changed since: else every
    # incremental keyframe on it already holds no more than the frames and globals.
    source = """node main() {
  let big = []
  for (i in range(3000)) {
    big.push(i)
  }
  let total = 0
  for (x in big) {
    if (x % 3 == 0) {
      total += x
    }
  }
  for (r in range(20)) {
    for (x in big) {
      total = total - 1
    }
  }
  return total
}
"""
    ticks = itertools.count()
    clock = types.SimpleNamespace(perf_counter=lambda: float(next(ticks)))
    monkeypatch.setattr(recorder_module, "time", clock)
    store = MemoryStore()
    rec = record_program(compile_source(source, "p.agency"), RunConfig(), store)
    assert rec.machine.error is None, rec.machine.error
    branch = store._runs[rec.run_id].branches[0]  # noqa: SLF001
    kinds = [
        (step, "base" in decode_keyframe(blob))
        for step, blob in zip(branch.kf_steps, branch.kf_blobs, strict=True)
    ]
    filled = next(step for step, inc in kinds if step > 3000 * 2 and not inc)  # `big` whole
    later = [step for step, inc in kinds if step > filled]
    assert len(later) > 2 * recorder_module.FULL_KEYFRAME_BUDGET  # (time enough, twice over)
    assert [step for step, inc in kinds if step > filled and not inc] == [kinds[-1][0]]  # the end
    timeline = Timeline.open(store, rec.run_id)
    assert (
        timeline.state_at(len(timeline) - 2).frames[-1].locals["total"]
        == sum(range(0, 3000, 3)) - 20 * 3000
    )


def test_keyframes_stay_within_a_readers_reach_after_a_large_incremental_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A list grows after the first full keyframe, then a long loop of small steps changes only
    # a local: every keyframe on the full one holds the list's tail, and with keyframes only
    # once the deltas outweigh the last one twice, the loop would go far between them.
    source = """node main() {
  let grown = []
  for (k in range(1500)) {
    grown.push("a message of a long conversation, one that goes on for a while before it comes to its point, which is that it is message number " + k + " of many, each as long as the one before and the one after, to make a keyframe that holds them large")
  }
  let i = 0
  while (i < 60000) {
    i = i + 1
  }
  return i
}
"""
    ticks = itertools.count()  # (full keyframes at the pace of keyframes: see above)
    clock = types.SimpleNamespace(perf_counter=lambda: float(next(ticks)))
    monkeypatch.setattr(recorder_module, "time", clock)

    def widest_gap() -> int:
        store = MemoryStore()
        rec = record_program(compile_source(source, "p.agency"), RunConfig(), store)
        assert rec.machine.result == 60000
        steps = store._runs[rec.run_id].branches[0].kf_steps  # noqa: SLF001
        return max(b - a for a, b in zip(steps, steps[1:]))

    # A step of the loop is one entry at least; a keyframe comes at a flush, after a chunk.
    reach = recorder_module.MAX_KEYFRAME_GAP // recorder_module.ENTRY_WEIGHT + Recorder.chunk_limit
    assert widest_gap() <= reach
    monkeypatch.setattr(recorder_module, "MAX_KEYFRAME_GAP", 1 << 40)
    assert widest_gap() > 2 * reach  # (the case above is one the bound is for)
