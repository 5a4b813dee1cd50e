"""`keyframe_steps`: where the keyframes are along a lineage, without reading them."""

from __future__ import annotations

from runtime.record.store import RunStore

from .helpers import meta


def test_keyframe_steps_follow_the_lineage(store: RunStore) -> None:
    run_id = store.create_run(meta())
    for step in (0, 10, 20, 30):
        store.put_keyframe(run_id, 0, step, b"kf")
    child = store.create_branch(run_id, 0, 20)
    for step in (20, 25):
        store.put_keyframe(run_id, child, step, b"edited")
    assert store.keyframe_steps(run_id, 0, 0, 100) == [0, 10, 20, 30]
    assert store.keyframe_steps(run_id, 0, 11, 29) == [20]
    assert store.keyframe_steps(run_id, 0, 31, 100) == []
    # The child sees its parent's up to the fork step (both own step 20), then its own.
    assert store.keyframe_steps(run_id, child, 0, 100) == [0, 10, 20, 25]
    assert store.keyframe_steps(run_id, child, 21, 24) == []
