"""A property-based test of `agency serve` against its own OpenAPI schema (schemathesis): every
answer to generated requests is documented, JSON as described, and never a server error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, settings  # noqa: E402

from runtime import CheckpointManager, SqliteStorage  # noqa: E402
from tests.agents.serving import serving  # noqa: E402


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    db = tmp_path_factory.mktemp("schema") / "runs.db"
    m = CheckpointManager(SqliteStorage(db), agent="helper")
    for i in range(3):
        m.save(run_id="one", messages=[{"role": "user", "content": str(i)}] * (i + 1))
    m.finish()
    m.close()
    with serving(db, "--token", TOKEN) as base:
        loaded = schemathesis.openapi.from_url(
            base + "/openapi.json", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        # Requests the schema allows; unknown query parameters are ignored, as HTTP APIs do.
        loaded.config.generation.update(modes=[schemathesis.GenerationMode.POSITIVE])
        yield loaded


TOKEN = "s3cret"
schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
def test_the_api_keeps_its_schema(case: Any) -> None:
    case.call_and_validate(headers={"Authorization": f"Bearer {TOKEN}"})
