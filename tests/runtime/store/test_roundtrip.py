"""Every table round-trips through both stores, with the same behaviour."""

from __future__ import annotations

from datetime import timedelta

import pytest

from runtime.record.store import (
    Batch,
    Keyframe,
    RunStore,
    StoreError,
    new_run_id,
)

from .helpers import FakeClock, meta


def test_run_ids_sort_by_creation_and_are_unique() -> None:
    ids = [new_run_id() for _ in range(2000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 13 and i.startswith("r") for i in ids)


def test_run_round_trip(store: RunStore, clock: FakeClock) -> None:
    run_id = store.create_run(meta(meta={"user": "ada"}))
    run = store.get_run(run_id)
    assert run is not None
    assert run.id == run_id
    assert (run.source_path, run.source_sha256, run.node) == (
        "examples/hello.agency",
        "ab" * 32,
        "main",
    )
    assert run.args == {"name": "Ada"}
    assert run.config == {"model": "sim/default"}
    assert run.meta == {"user": "ada"}
    assert run.status == "running"
    assert run.created_at == run.updated_at == clock.now
    assert run.finished_at is None
    assert (run.step_count, run.result, run.error) == (0, None, None)

    clock.advance(seconds=5)
    store.update_run(run_id, status="finished", result={"answer": [1, 2]})
    run = store.get_run(run_id)
    assert run is not None
    assert run.status == "finished"
    assert run.result == {"answer": [1, 2]}
    assert run.updated_at == run.finished_at == clock.now
    assert run.created_at == clock.now - timedelta(seconds=5)

    store.update_run(run_id, status="failed", error="boom", meta={"k": 1})
    run = store.get_run(run_id)
    assert run is not None
    assert (run.status, run.error, run.meta) == ("failed", "boom", {"k": 1})


def test_update_run_refuses_bad_fields(store: RunStore) -> None:
    run_id = store.create_run(meta())
    with pytest.raises(TypeError, match="step_count"):
        store.update_run(run_id, step_count=3)
    with pytest.raises(ValueError, match="status"):
        store.update_run(run_id, status="done")


def test_update_of_an_unknown_run_is_reported(store: RunStore) -> None:
    with pytest.raises(StoreError, match="r-nope"):
        store.update_run("r-nope", status="finished")
        store.flush()  # the SQLite store reports queued failures at the next call


def test_list_and_latest(store: RunStore, clock: FakeClock) -> None:
    assert store.list_runs() == []
    assert store.latest_run() is None
    ids = []
    for _ in range(4):
        ids.append(store.create_run(meta()))
        clock.advance(seconds=1)
    assert [r.id for r in store.list_runs()] == ids[::-1]
    assert [r.id for r in store.list_runs(limit=2)] == ids[:1:-1]
    latest = store.latest_run()
    assert latest is not None and latest.id == ids[-1]


def test_prefix_lookup(store: RunStore) -> None:
    run_a = store.create_run(meta())
    run_b = store.create_run(meta())
    common = 0
    while run_a[common] == run_b[common]:
        common += 1
    found = store.get_run(run_a[: common + 1])
    assert found is not None and found.id == run_a
    found = store.get_run(run_b[: common + 1])
    assert found is not None and found.id == run_b
    with pytest.raises(StoreError, match="ambiguous"):
        store.get_run(run_a[:common])
    assert store.get_run("zzz") is None
    assert store.get_run("") is None


def test_delete_run_takes_everything(store: RunStore) -> None:
    keep = store.create_run(meta())
    run_id = store.create_run(meta())
    store.append_batch(run_id, 0, 0, 9, b"steps")
    store.put_keyframe(run_id, 0, 0, b"kf")
    store.add_event(run_id, 0, 1, "llm", "asked")
    store.put_effect(
        f"{run_id}:0:4:0",
        run_id=run_id,
        branch=0,
        step=4,
        kind="write",
        status="applied",
        args={},
        result=None,
    )
    store.create_branch(run_id, 0, 5)
    store.delete_run(run_id[:12])
    assert store.get_run(run_id) is None
    assert store.get_effect(f"{run_id}:0:4:0") is None
    assert [r.id for r in store.list_runs()] == [keep]
    with pytest.raises(StoreError):
        store.batches(run_id, 0, 0, 9)
    with pytest.raises(StoreError, match="no run"):
        store.delete_run(run_id)


def test_prune(store: RunStore, clock: FakeClock) -> None:
    old_done = store.create_run(meta())
    store.update_run(old_done, status="finished")
    old_failed = store.create_run(meta())
    store.update_run(old_failed, status="failed")
    stale = store.create_run(meta())  # its process died without marking it
    clock.advance(days=10)
    recent = store.create_run(meta())
    store.update_run(recent, status="interrupted")
    live = store.create_run(meta())
    clock.advance(days=1)
    store.append_batch(live, 0, 0, 3, b"x")  # a live recording keeps updated_at fresh
    store.flush()
    assert store.prune(timedelta(days=5)) == 3
    left = {r.id for r in store.list_runs()}
    assert left == {recent, live}
    assert {old_done, old_failed, stale}.isdisjoint(left)
    assert store.prune(timedelta(days=5)) == 0
    clock.advance(days=30)
    assert store.prune(timedelta(days=5)) == 2


def test_batches_and_keyframes(store: RunStore) -> None:
    run_id = store.create_run(meta())
    store.append_batch(run_id, 0, 0, 255, b"a" * 100)
    store.append_batch(run_id, 0, 256, 511, bytearray(b"b" * 100))
    store.append_batch(run_id, 0, 512, 600, memoryview(b"c" * 10))
    store.put_keyframe(run_id, 0, 0, b"k0")
    store.put_keyframe(run_id, 0, 300, b"k300")
    assert store.step_count(run_id) == 601
    assert store.step_count(run_id, 0) == 601
    run = store.get_run(run_id)
    assert run is not None and run.step_count == 601
    assert store.batches(run_id, 0, 0, 0) == [Batch(0, 0, 255, b"a" * 100)]
    assert [b.first_step for b in store.batches(run_id, 0, 255, 256)] == [0, 256]
    assert [b.first_step for b in store.batches(run_id, 0, 300, 10**9)] == [256, 512]
    assert store.batches(run_id, 0, 601, 700) == []
    assert all(type(b.blob) is bytes for b in store.batches(run_id, 0, 0, 700))
    assert store.keyframe_at_or_before(run_id, 0, 299) == Keyframe(0, 0, b"k0")
    assert store.keyframe_at_or_before(run_id, 0, 300) == Keyframe(0, 300, b"k300")
    assert store.keyframe_at_or_before(run_id, 0, 10**6) == Keyframe(0, 300, b"k300")
    store.put_keyframe(run_id, 0, 300, b"again")
    assert store.keyframe_at_or_before(run_id, 0, 301) == Keyframe(0, 300, b"again")
    assert store.keyframe_at_or_before(run_id, 0, -1) is None


def test_batch_errors(store: RunStore) -> None:
    run_id = store.create_run(meta())
    with pytest.raises(ValueError):
        store.append_batch(run_id, 0, 5, 4, b"")
    store.append_batch(run_id, 0, 0, 4, b"x")
    with pytest.raises(StoreError):
        store.append_batch(run_id, 0, 0, 4, b"duplicate")
        store.flush()
    with pytest.raises(StoreError):
        store.append_batch(run_id, 7, 0, 4, b"no such branch")
        store.flush()
    with pytest.raises(StoreError, match="no branch 7"):
        store.batches(run_id, 7, 0, 4)
    # The failures cost nothing else: the good batch is there, the store goes on.
    assert store.batches(run_id, 0, 0, 10) == [Batch(0, 0, 4, b"x")]
    store.append_batch(run_id, 0, 5, 9, b"y")
    assert store.step_count(run_id) == 10


def test_events(store: RunStore) -> None:
    run_id = store.create_run(meta())
    store.add_event(run_id, 0, 5, "tool", "search", {"query": "x"})
    store.add_event(run_id, 0, 2, "llm", "asked", {"model": "sim", "tokens": [1, 2]})
    store.add_event(run_id, 0, 2, "checkpoint", "cp")
    store.add_event(run_id, 0, 9, "llm", "asked again")
    events = store.events(run_id, 0)
    assert [(e.step, e.kind) for e in events] == [
        (2, "llm"),
        (2, "checkpoint"),
        (5, "tool"),
        (9, "llm"),
    ]
    assert events[0].data == {"model": "sim", "tokens": [1, 2]}
    assert events[1].data == {}
    assert (events[0].run_id, events[0].branch, events[0].summary) == (run_id, 0, "asked")
    assert [e.step for e in store.events(run_id, 0, kind="llm")] == [2, 9]
    assert [e.step for e in store.events(run_id, 0, start=3, end=9)] == [5, 9]
    assert [e.step for e in store.events(run_id, 0, kind="llm", end=8)] == [2]


def test_llm_calls(store: RunStore, clock: FakeClock) -> None:
    run_id = store.create_run(meta())
    request = {"messages": [{"role": "user", "content": "hi"}], "tools": []}
    store.add_llm_call(
        run_id,
        0,
        3,
        provider="sim",
        model="default",
        request=request,
        response={"content": "hello"},
        input_tokens=12,
        output_tokens=3,
        cost=0.0001,
        latency_ms=41.5,
    )
    store.add_llm_call(
        run_id, 0, 8, provider="mock", model="m", request={}, response={"content": None}
    )
    calls = store.llm_calls(run_id)
    assert [c.step for c in calls] == [3, 8]
    call = calls[0]
    assert (call.provider, call.model, call.request, call.response) == (
        "sim",
        "default",
        request,
        {"content": "hello"},
    )
    assert (call.input_tokens, call.output_tokens, call.cost, call.latency_ms) == (
        12,
        3,
        0.0001,
        41.5,
    )
    assert call.created_at == clock.now
    assert [c.step for c in store.llm_calls(run_id, 0)] == [3, 8]


def test_effects(store: RunStore) -> None:
    run_id = store.create_run(meta())
    key = f"{run_id}:0:7:0"
    assert store.get_effect(key) is None
    store.put_effect(
        key,
        run_id=run_id,
        branch=0,
        step=7,
        kind="write",
        status="failed",
        args={"path": "out.txt"},
        result={"error": "disk full"},
    )
    store.put_effect(
        key,
        run_id=run_id,
        branch=0,
        step=7,
        kind="write",
        status="applied",
        args={"path": "out.txt"},
        result=11,
    )
    effect = store.get_effect(key)
    assert effect is not None
    assert (effect.key, effect.run_id, effect.branch, effect.step) == (key, run_id, 0, 7)
    assert (effect.kind, effect.status, effect.args, effect.result) == (
        "write",
        "applied",
        {"path": "out.txt"},
        11,
    )
    assert [e.key for e in store.effects(run_id)] == [key]
    with pytest.raises(ValueError):
        store.put_effect(
            key, run_id=run_id, branch=0, step=7, kind="w", status="done", args=0, result=0
        )
    with pytest.raises(StoreError):
        store.put_effect(
            "x", run_id=run_id, branch=4, step=7, kind="w", status="applied", args=0, result=0
        )


def test_branches(store: RunStore, clock: FakeClock) -> None:
    run_id = store.create_run(meta())
    store.append_batch(run_id, 0, 0, 9, b"x")
    clock.advance(seconds=1)
    assert store.create_branch(run_id, 0, 4, {"main.count": 3}) == 1
    assert store.create_branch(run_id, 1, 6) == 2
    assert store.create_branch(run_id, 0, 2) == 3
    with pytest.raises(StoreError, match="no branch 9"):
        store.create_branch(run_id, 9, 2)
    records = store.branches(run_id)
    assert [(b.branch, b.parent_branch, b.fork_step, b.length) for b in records] == [
        (0, None, None, 10),
        (1, 0, 4, 5),
        (2, 1, 6, 7),
        (3, 0, 2, 3),
    ]
    assert records[1].edits == {"main.count": 3}
    assert records[1].created_at == clock.now
    store.append_batch(run_id, 1, 5, 20, b"y")
    assert store.branches(run_id)[1].length == 21


def test_truncate_after(store: RunStore) -> None:
    run_id = store.create_run(meta())
    for first in range(0, 40, 10):
        store.append_batch(run_id, 0, first, first + 9, bytes([first]))
        store.put_keyframe(run_id, 0, first, b"kf")
        store.add_event(run_id, 0, first + 5, "tool", "t")
        store.add_llm_call(run_id, 0, first + 5, provider="p", model="m", request={}, response={})
    store.put_effect(
        "e", run_id=run_id, branch=0, step=35, kind="w", status="applied", args=0, result=0
    )
    store.truncate_after(run_id, 0, 19)
    assert [b.first_step for b in store.batches(run_id, 0, 0, 100)] == [0, 10]
    assert store.step_count(run_id) == 20
    run = store.get_run(run_id)
    assert run is not None and run.step_count == 20
    assert store.keyframe_at_or_before(run_id, 0, 100) == Keyframe(0, 10, b"kf")
    assert [e.step for e in store.events(run_id, 0)] == [5, 15]
    assert [c.step for c in store.llm_calls(run_id)] == [5, 15]
    assert store.get_effect("e") is not None  # the journal outlives a truncation
    store.append_batch(run_id, 0, 20, 29, b"again")
    assert store.step_count(run_id) == 30


def test_closed_store_refuses_calls(store: RunStore) -> None:
    run_id = store.create_run(meta())
    store.close()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.get_run(run_id)
    with pytest.raises(StoreError, match="closed"):
        store.append_batch(run_id, 0, 0, 1, b"")


def test_values_must_be_json(store: RunStore) -> None:
    run_id = store.create_run(meta())
    with pytest.raises(TypeError, match="event data"):
        store.add_event(run_id, 0, 1, "tool", "t", {"x": object()})


def test_prune_keeps_failed_runs_and_held_runs_when_asked(
    store: RunStore, clock: FakeClock
) -> None:
    done = store.create_run(meta())
    store.update_run(done, status="finished")
    failed = store.create_run(meta())
    store.update_run(failed, status="failed")
    held = store.create_run(meta())
    store.update_run(held, status="interrupted")
    owner = {"pid": 1, "host": "elsewhere", "started": 1.0}
    assert store.claim_run(held, owner) is None  # a resume is continuing it right now
    clock.advance(days=10)
    assert store.prune(timedelta(days=5), keep_failed=True) == 1
    assert {r.id for r in store.list_runs()} == {failed, held}
    store.release_run(held, owner)
    assert store.prune(timedelta(days=5)) == 2
    assert store.list_runs() == []


def test_prune_keeps_the_latest_n_and_fits_a_size(store: RunStore, clock: FakeClock) -> None:
    runs = []
    for n in range(5):  # oldest first, each recording 1,000 bytes more than the one before
        run_id = store.create_run(meta())
        store.append_batch(run_id, 0, 0, 9, b"x" * (1000 * (n + 1)))
        store.update_run(run_id, status="failed" if n == 1 else "finished")
        runs.append(run_id)
        clock.advance(hours=1)
    store.flush()
    held = runs[0]
    owner = {"pid": 1, "host": "elsewhere", "started": 1.0}
    assert store.claim_run(held, owner) is None
    # --keep 3: the two oldest would go, but one is held by a process
    assert store.prune(None, keep_latest=3) == 1
    assert [r.id for r in store.list_runs()][::-1] == [runs[0], *runs[2:]]
    store.release_run(held, owner)
    # --max-size: the oldest go until the rest fit (1k + 3k + 4k + 5k = 13k > 9.5k)
    assert store.prune(None, max_bytes=9_500) == 2
    assert {r.id for r in store.list_runs()} == {runs[3], runs[4]}
    assert store.prune(None, keep_latest=0, keep_failed=True, max_bytes=10**9) == 2
    assert store.list_runs() == []
