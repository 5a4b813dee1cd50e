"""`copy_run` moves a run between stores whole, under the same id: from a SQLite file into
every kind of store (and so into PostgreSQL, the point of `agency copy`)."""

from __future__ import annotations

from pathlib import Path

from runtime.record.copy import copy_run
from runtime.record.sqlite_store import SQLiteStore
from runtime.record.store import MAX_STEP, RunStore

from .helpers import FakeClock, meta


def recorded(source: RunStore, clock: FakeClock) -> str:
    """A run with two branches, keyframes, events, LLM calls and effects, finished."""
    run_id = source.create_run(meta())
    for first in range(0, 40, 4):
        source.append_batch(run_id, 0, first, first + 3, b"b0:%d" % first)
    for step in (0, 16, 32):
        source.put_keyframe(run_id, 0, step, b"k0:%d" % step, None if step == 0 else 0)
    source.add_event(run_id, 0, 5, "llm", "asked", {"n": 1})
    source.add_llm_call(run_id, 0, 5, provider="sim", model="m", request={"q": 1}, response="a")
    source.put_effect(
        "e1", run_id=run_id, branch=0, step=7, kind="write", status="applied", args=[1], result=2
    )
    assert source.create_branch(run_id, 0, 9, {"x": 3}) == 1
    source.put_keyframe(run_id, 1, 9, b"k1:9")
    source.append_batch(run_id, 1, 10, 14, b"b1:10")
    source.add_event(run_id, 1, 9, "branch", "edited")
    clock.advance(minutes=5)
    source.update_run(run_id, status="finished", result={"ok": True})
    source.flush()
    return run_id


def everything(store: RunStore, run_id: str) -> dict[str, object]:
    run = store.get_run(run_id)
    assert run is not None
    return {
        "run": run,
        "branches": [b.replace(created_at=None) for b in store.branches(run_id)],
        "batches": [store.batches(run_id, b, 0, MAX_STEP) for b in (0, 1)],
        "keyframes": [store.keyframe_at_or_before(run_id, b, s) for b in (0, 1) for s in range(45)],
        "events": [store.events(run_id, b) for b in (0, 1)],
        "llm": [c.replace(created_at=None) for c in store.llm_calls(run_id)],
        "effects": [e.replace(created_at=None) for e in store.effects(run_id)],
        "steps": [store.step_count(run_id, b) for b in (0, 1)],
    }


def test_copy_moves_a_run_whole(tmp_path: Path, store: RunStore, clock: FakeClock) -> None:
    with SQLiteStore(tmp_path / "laptop.db", clock=clock) as laptop:
        run_id = recorded(laptop, clock)
        clock.advance(days=3)
        assert copy_run(laptop, store, run_id[:8]) == 40
        assert everything(store, run_id) == everything(laptop, run_id)
        assert store.keyframe_at_or_before(run_id, 0, 20) == (0, 16, b"k0:16", 0)  # its base
        assert copy_run(laptop, store, run_id) is None  # already there: left alone


def test_a_copy_cut_short_is_done_again(tmp_path: Path, store: RunStore, clock: FakeClock) -> None:
    with SQLiteStore(tmp_path / "laptop.db", clock=clock) as laptop:
        run_id = recorded(laptop, clock)
        run = laptop.get_run(run_id)
        assert run is not None
        store.put_run(run.replace(meta={"copy_incomplete": True}))  # killed mid-copy
        store.append_batch(run_id, 0, 0, 3, b"b0:0")
        assert copy_run(laptop, store, run_id) == 40
        assert everything(store, run_id) == everything(laptop, run_id)
