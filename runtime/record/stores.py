"""Provides `open_run_store`: the run store a `--db` value (or `AGENCY_DB`) names, a SQLite file
or a PostgreSQL database.

    --db .agency/runs.db                   a SQLite file (the default, per working directory)
    --db postgresql://user@host:5432/runs  a PostgreSQL database shared by a team

`PostgresStore` is imported only when a PostgreSQL URL is given, so commands on SQLite do not pay
for loading the driver.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path

from runtime.record.sql_store import SQLStore
from runtime.record.sqlite_store import SQLiteStore, default_db_path

__all__ = ["describe", "is_url", "open_run_store", "store_location"]

_URL_SCHEMES = ("postgresql://", "postgres://")


def is_url(location: str | os.PathLike[str]) -> bool:
    """Whether a store location is a database URL rather than a file path."""
    return isinstance(location, str) and location.startswith(_URL_SCHEMES)


def store_location(
    db: str | os.PathLike[str] | None, env: Mapping[str, str] = os.environ
) -> str | Path:
    """`db`, else `$AGENCY_DB`, else `.agency/runs.db`: a URL as text, a file as a `Path`."""
    if db is not None and str(db):
        return str(db) if is_url(str(db)) else Path(db)
    configured = env.get("AGENCY_DB", "")
    if is_url(configured):
        return configured
    return default_db_path(env)


def describe(location: str | Path) -> str:
    """The store as shown to the user: a file's path, a URL without its password."""
    if isinstance(location, str) and is_url(location):
        from runtime.record.pg_store import redact

        return redact(location)
    return str(location)


def open_run_store(
    db: str | os.PathLike[str] | None,
    *,
    read_only: bool = False,
    clock: Callable[[], datetime] | None = None,
) -> SQLStore:
    """Open the store `db` names (see `store_location`)."""
    location = store_location(db)
    if isinstance(location, str):
        from runtime.record.pg_store import PostgresStore

        return PostgresStore(location, read_only=read_only, clock=clock)
    return SQLiteStore(location, read_only=read_only, clock=clock)
