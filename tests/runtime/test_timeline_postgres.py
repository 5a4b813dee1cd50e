"""`Timeline.state_at(k)` equals the machine's state at step k on a PostgreSQL store too, read
back through the same store and through a fresh one (the property `test_timeline.py` checks on
memory and SQLite)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import conformance_cases
import pytest
from hypothesis import HealthCheck, given, settings
from pg_helpers import fresh_schema
from test_timeline import _check_all, _program, live_states

from runtime.errors import AgencyError
from runtime.language.program import compile_source
from runtime.record.pg_store import PostgresStore
from runtime.record.timeline import Timeline
from runtime.runs.recording import record_program
from runtime.runs.runner import RunConfig


def record_and_check_postgres(program: object, config: RunConfig, answer: object) -> None:
    with fresh_schema() as url:
        store = PostgresStore(url)
        with live_states() as live:
            rec = record_program(program, config, store, answer=answer)
        assert len(rec.timeline) == max(live) + 1, "every step boundary is recorded"
        _check_all(rec.timeline, live, "postgres")
        store.close()
        with PostgresStore(url, read_only=True) as again:
            _check_all(Timeline.open(again, rec.run_id), live, "postgres reopened")


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(src=_program())
def test_state_at_equals_machine_state_on_postgres(src: str) -> None:
    program = compile_source(src, "gen.agency")
    with tempfile.TemporaryDirectory() as tmp:
        config = RunConfig(model_spec="sim", root=tmp, quiet=True)
        record_and_check_postgres(program, config, None)


# Every seventh conformance case: each suite's programs, on PostgreSQL.
_PARAMS = conformance_cases.params()[::7]


@pytest.mark.parametrize(("suite", "index"), _PARAMS)
def test_state_at_on_postgres_for_conformance_programs(
    suite: str, index: int, tmp_path: Path
) -> None:
    case = conformance_cases.load(suite, index)
    config = case.config(tmp_path)
    try:
        record_and_check_postgres(case.program, config, case.answers())
    except AgencyError as exc:
        pytest.skip(f"run raised {type(exc).__name__} (not a timeline matter): {exc}")
