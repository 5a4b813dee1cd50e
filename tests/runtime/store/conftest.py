"""Fixtures for the run store tests: both stores, a clock the test moves by hand."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.record.sqlite_store import SQLiteStore
from runtime.record.store import MemoryStore, RunStore

from .helpers import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[RunStore]:
    s: RunStore
    if request.param == "memory":
        s = MemoryStore(clock=clock)
    else:
        s = SQLiteStore(tmp_path / "runs.db", clock=clock)
    with s:
        yield s
