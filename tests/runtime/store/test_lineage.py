"""Reads along a branch's lineage: branch 2 forked from branch 1 after step 7, branch 1 forked
from branch 0 after step 3."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pg_helpers import fresh_schema

from runtime.record.sqlite_store import SQLiteStore
from runtime.record.store import (
    MAX_STEP,
    Batch,
    Keyframe,
    MemoryStore,
    RunStore,
    Segment,
    StoreError,
)

from .helpers import meta


@pytest.fixture
def run(store: RunStore) -> str:
    run_id = store.create_run(meta())
    for first, last in [(0, 3), (4, 7), (8, 11)]:
        store.append_batch(run_id, 0, first, last, f"b0:{first}-{last}".encode())
    store.put_keyframe(run_id, 0, 0, b"k0:0")
    store.put_keyframe(run_id, 0, 8, b"k0:8")
    assert store.create_branch(run_id, 0, 3, {"x": 1}) == 1
    for first, last in [(4, 5), (6, 9), (10, 12)]:
        store.append_batch(run_id, 1, first, last, f"b1:{first}-{last}".encode())
    store.put_keyframe(run_id, 1, 3, b"k1:3")  # the edited state at the fork step
    store.put_keyframe(run_id, 1, 6, b"k1:6")
    assert store.create_branch(run_id, 1, 7, {"y": 2}) == 2
    store.append_batch(run_id, 2, 8, 10, b"b2:8-10")
    store.put_keyframe(run_id, 2, 9, b"k2:9")
    for branch, step, kind in [
        (0, 1, "llm"),
        (0, 3, "tool"),
        (0, 5, "llm"),
        (1, 3, "branch"),
        (1, 4, "llm"),
        (1, 8, "tool"),
        (2, 7, "branch"),
        (2, 9, "llm"),
    ]:
        store.add_event(run_id, branch, step, kind, f"{kind}@{branch}:{step}")
        store.add_llm_call(
            run_id, branch, step, provider="sim", model="m", request={"at": step}, response={}
        )
    return run_id


def spans(batches: list[Batch]) -> list[tuple[int, int, int]]:
    return [(b.branch, b.first_step, b.last_step) for b in batches]


def test_lineage_segments(store: RunStore, run: str) -> None:
    assert store.lineage(run, 0) == [Segment(0, 0, MAX_STEP)]
    assert store.lineage(run, 2) == [Segment(0, 0, 3), Segment(1, 3, 7), Segment(2, 7, MAX_STEP)]


def test_batches_follow_the_lineage(store: RunStore, run: str) -> None:
    assert spans(store.batches(run, 2, 0, 10)) == [(0, 0, 3), (1, 4, 5), (1, 6, 9), (2, 8, 10)]
    assert spans(store.batches(run, 2, 2, 2)) == [(0, 0, 3)]
    assert spans(store.batches(run, 2, 5, 8)) == [(1, 4, 5), (1, 6, 9), (2, 8, 10)]
    assert spans(store.batches(run, 2, 8, 100)) == [(2, 8, 10)]
    assert spans(store.batches(run, 1, 0, 100)) == [(0, 0, 3), (1, 4, 5), (1, 6, 9), (1, 10, 12)]
    assert spans(store.batches(run, 0, 3, 4)) == [(0, 0, 3), (0, 4, 7)]
    assert store.batches(run, 2, 8, 8)[0].blob == b"b2:8-10"


def test_keyframes_follow_the_lineage(store: RunStore, run: str) -> None:
    assert store.keyframe_at_or_before(run, 2, 12) == Keyframe(2, 9, b"k2:9")
    assert store.keyframe_at_or_before(run, 2, 8) == Keyframe(1, 6, b"k1:6")
    assert store.keyframe_at_or_before(run, 2, 5) == Keyframe(1, 3, b"k1:3")
    assert store.keyframe_at_or_before(run, 2, 2) == Keyframe(0, 0, b"k0:0")
    # The child's keyframe at its fork step (the edited state) wins over the parent's history.
    assert store.keyframe_at_or_before(run, 1, 3) == Keyframe(1, 3, b"k1:3")
    # Branch 0's keyframe at 8 is not in branch 1's history.
    assert store.keyframe_at_or_before(run, 1, 12) == Keyframe(1, 6, b"k1:6")
    assert store.keyframe_at_or_before(run, 0, 12) == Keyframe(0, 8, b"k0:8")
    assert store.keyframe_at_or_before(run, 2, -1) is None


def test_step_count_follows_the_lineage(store: RunStore, run: str) -> None:
    assert store.step_count(run, 0) == 12
    assert store.step_count(run, 1) == 13
    assert store.step_count(run, 2) == 11
    assert store.create_branch(run, 2, 9) == 3
    assert store.step_count(run, 3) == 10  # nothing of its own yet: its parent's, up to the fork
    assert store.create_branch(run, 0, 20) == 4
    assert store.step_count(run, 4) == 12  # forked past what the parent has recorded


def test_events_and_llm_calls_follow_the_lineage(store: RunStore, run: str) -> None:
    expected = [(0, 1), (0, 3), (1, 3), (1, 4), (2, 7), (2, 9)]
    assert [(e.branch, e.step) for e in store.events(run, 2)] == expected
    assert [(c.branch, c.step) for c in store.llm_calls(run, 2)] == expected
    assert [(e.branch, e.step) for e in store.events(run, 2, kind="llm")] == [
        (0, 1),
        (1, 4),
        (2, 9),
    ]
    assert [(e.branch, e.step) for e in store.events(run, 2, start=3, end=7)] == [
        (0, 3),
        (1, 3),
        (1, 4),
        (2, 7),
    ]
    assert [(e.branch, e.step) for e in store.events(run, 1)] == [
        (0, 1),
        (0, 3),
        (1, 3),
        (1, 4),
        (1, 8),
    ]
    assert len(store.llm_calls(run)) == 8  # no branch: all of the run's calls


def test_the_last_llm_call_follows_the_lineage(store: RunStore, run: str) -> None:
    # What the LLM inspector reads at a step: the last call at or before it, read alone.
    for branch in (0, 1, 2):
        calls = store.llm_calls(run, branch)
        for step in range(-1, 14):
            before = [c for c in calls if c.step <= step]
            want = (before[-1].branch, before[-1].step) if before else None
            got = store.last_llm_call(run, branch, step)
            assert (None if got is None else (got.branch, got.step)) == want, (branch, step)
    store.add_llm_call(run, 2, 9, provider="sim", model="m", request={"at": "9b"}, response={})
    assert store.last_llm_call(run, 2, 9).request == {"at": "9b"}  # the later one of a step


def test_effects_follow_the_lineage(store: RunStore, run: str) -> None:
    for branch, step in [(0, 2), (0, 6), (1, 5), (2, 9)]:
        store.put_effect(
            f"{run}:{branch}:{step}:0",
            run_id=run,
            branch=branch,
            step=step,
            kind="write",
            status="applied",
            args={},
            result=None,
        )
    assert [(e.branch, e.step) for e in store.effects(run, 2)] == [(0, 2), (1, 5), (2, 9)]
    assert len(store.effects(run)) == 4


def test_unknown_branch(store: RunStore, run: str) -> None:
    with pytest.raises(StoreError, match="no branch 5"):
        store.keyframe_at_or_before(run, 5, 3)
    with pytest.raises(StoreError, match="no branch 5"):
        store.events(run, 5)


# Property: whatever the forks and batch sizes, the batches returned for a range, each cut to
# the steps its branch supplies to the lineage, cover the range exactly once and in order, and
# the keyframe returned is the latest one visible in the lineage.

_memory = MemoryStore()


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SQLiteStore]:
    with SQLiteStore(tmp_path_factory.mktemp("prop") / "runs.db") as store:
        yield store


@pytest.fixture(scope="module")
def postgres_store() -> Iterator[RunStore]:
    from runtime.record.pg_store import PostgresStore

    with fresh_schema() as url, PostgresStore(url) as store:
        yield store


layouts = st.lists(
    st.tuples(
        st.integers(0, 30),  # where it forks: this many steps before its parent's end
        st.lists(st.integers(1, 6), max_size=6),  # sizes of its own batches
        st.sets(st.integers(0, 60), max_size=4),  # its keyframes (those at or after its fork)
    ),
    min_size=1,
    max_size=4,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(layout=layouts, a=st.integers(-2, 70), width=st.integers(0, 70), use_sqlite=st.booleans())
def test_lineage_reads_cover_each_step_once(
    sqlite_store: SQLiteStore,
    layout: list[tuple[int, list[int], set[int]]],
    a: int,
    width: int,
    use_sqlite: bool,
) -> None:
    """Branch i forks from branch i - 1; reads are made on the last branch."""
    check_lineage_reads(sqlite_store if use_sqlite else _memory, layout, a, width)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(layout=layouts, a=st.integers(-2, 70), width=st.integers(0, 70))
def test_lineage_reads_cover_each_step_once_on_postgres(
    postgres_store: RunStore, layout: list[tuple[int, list[int], set[int]]], a: int, width: int
) -> None:
    check_lineage_reads(postgres_store, layout, a, width)


def check_lineage_reads(
    store: RunStore, layout: list[tuple[int, list[int], set[int]]], a: int, width: int
) -> None:
    run_id = store.create_run(meta())
    visible: list[tuple[int, int]] = []  # (step, branch) of keyframes in the lineage so far
    end = 0  # step count of the lineage so far
    for branch, (back, sizes, keyframes) in enumerate(layout):
        fork = -1
        if branch:
            fork = max(end - 1 - back, -1)
            assert store.create_branch(run_id, branch - 1, fork) == branch
            visible = [(s, b) for s, b in visible if s <= fork]
        step = fork + 1
        for size in sizes:
            store.append_batch(run_id, branch, step, step + size - 1, b"%d" % branch)
            step += size
        for k in keyframes:
            if k >= max(fork, 0):
                store.put_keyframe(run_id, branch, k, b"k")
                visible.append((k, branch))
        end = step
    last = len(layout) - 1
    assert store.step_count(run_id, last) == end

    b = a + width
    segments = {seg.branch: seg for seg in store.lineage(run_id, last)}
    covered: list[int] = []
    for batch in store.batches(run_id, last, a, b):
        seg = segments[batch.branch]
        own_start = 0 if batch.branch == 0 else seg.lo + 1
        steps = range(batch.first_step, batch.last_step + 1)
        covered.extend(s for s in steps if own_start <= s <= seg.hi)
    assert covered == sorted(set(covered))
    assert [s for s in covered if a <= s <= b] == list(range(max(a, 0), min(b, end - 1) + 1))

    best = max(((s, br) for s, br in visible if s <= b), default=None)
    found = store.keyframe_at_or_before(run_id, last, b)
    assert (None if found is None else (found.step, found.branch)) == best
