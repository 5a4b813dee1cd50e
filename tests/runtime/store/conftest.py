"""Fixtures for the run store tests: every store (memory, SQLite, PostgreSQL), a clock the test
moves by hand."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_helpers import fresh_schema

from runtime.record.sqlite_store import SQLiteStore
from runtime.record.store import MemoryStore, RunStore

from .helpers import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[RunStore]:
    s: RunStore
    if request.param == "postgres":
        from runtime.record.pg_store import PostgresStore

        with fresh_schema() as url, PostgresStore(url, clock=clock) as pg:
            yield pg
        return
    if request.param == "memory":
        s = MemoryStore(clock=clock)
    else:
        s = SQLiteStore(tmp_path / "runs.db", clock=clock)
    with s:
        yield s
