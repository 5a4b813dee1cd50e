"""`state_span` (issue 15): the keyframe, its base, the batches and the later keyframe steps a
state needs, read at once (one query on the SQL stores), equal to what the separate reads give,
along a lineage of three branches, on every store."""

from __future__ import annotations

import pytest

from runtime.record.store import MemoryStore, RunStore

from .test_lineage import run  # noqa: F401  (the fixture: three branches)


@pytest.mark.parametrize("branch", [0, 1, 2])
def test_state_span_is_the_separate_reads_at_once(
    store: RunStore,
    run: str,  # noqa: F811
    branch: int,
) -> None:
    end = store.step_count(run, branch) - 1
    for step in range(end + 1):
        for ahead, look in ((0, 0), (2, 3), (64, 4096)):
            span = store.state_span(run, branch, step, step + ahead, step + look)
            kf = store.keyframe_at_or_before(run, branch, step)
            assert span.keyframe == kf, (step, ahead)
            start = step if kf is None or kf.step == step else kf.step + 1
            assert span.batches == store.batches(run, branch, start, step + ahead), (step, ahead)
            assert span.later_keyframes == store.keyframe_steps(run, branch, step + 1, step + look)
            assert span.base is None  # stored without one


def test_an_incremental_keyframe_comes_with_its_base(store: RunStore) -> None:
    from .helpers import meta

    run_id = store.create_run(meta())
    store.append_batch(run_id, 0, 0, 20, b"steps")
    store.put_keyframe(run_id, 0, 0, b"full")
    store.put_keyframe(run_id, 0, 10, b"on 0", base=0)
    span = store.state_span(run_id, 0, 15, 16, 20)
    assert span.keyframe is not None and span.keyframe.blob == b"on 0"
    if isinstance(store, MemoryStore):
        assert span.base is None  # no round trip to save: the timeline asks for it
    else:
        assert span.base is not None and (span.base.step, span.base.blob) == (0, b"full")
    assert store.state_span(run_id, 0, 5, 6, 20).base is None  # a full keyframe has none
