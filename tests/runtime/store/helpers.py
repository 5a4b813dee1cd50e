"""Helpers shared by the run store tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from runtime.record.store import RunMeta


class FakeClock:
    """A clock that only moves when told to."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


def meta(**overrides: object) -> RunMeta:
    fields: dict[str, object] = {
        "source_path": "examples/hello.agency",
        "source_sha256": "ab" * 32,
        "node": "main",
        "args": {"name": "Ada"},
        "config": {"model": "sim/default"},
    }
    fields.update(overrides)
    return RunMeta(**fields)  # type: ignore[arg-type]
