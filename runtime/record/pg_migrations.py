"""Provides the run store's PostgreSQL schema as an ordered list of migrations, like the SQLite
one in `migrations.py`: same tables and columns, so both stores decode rows the same way.

`MIGRATIONS[i]` takes a schema from version i to i + 1; the version lives in the `meta` table
(`schema_version`). Opening runs the missing migrations in one transaction under an advisory
lock, so processes opening a new database at once migrate it once. A database written by a newer
agency, or whose schema holds a `runs` table that is not ours, is refused with a `StoreError`
and left as it is.

Types: steps are BIGINT, keyframes and step batches BYTEA (the recorder's encoded bytes),
timestamps the same fixed-width ISO text as SQLite (text order is time order), values JSON text.
"""

from __future__ import annotations

from typing import Any

from runtime.record.contract import StoreError

__all__ = ["MIGRATIONS", "latest_version", "migrate", "read_version"]

# Taken for the length of the migrating transaction: "agency" in ASCII.
_LOCK_KEY = 0x616765_6E6379

_V1 = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """
    CREATE TABLE runs (
        id            TEXT PRIMARY KEY,
        source_path   TEXT NOT NULL,
        source_sha256 TEXT NOT NULL,
        node          TEXT NOT NULL,
        args_json     TEXT NOT NULL,
        config_json   TEXT NOT NULL,
        status        TEXT NOT NULL
                      CHECK (status IN ('running', 'finished', 'failed', 'interrupted')),
        created_at    TEXT NOT NULL,
        updated_at    TEXT NOT NULL,
        finished_at   TEXT,
        step_count    BIGINT NOT NULL DEFAULT 0,
        result_json   TEXT,
        error         TEXT,
        meta_json     TEXT NOT NULL DEFAULT '{}'
    )
    """,
    "CREATE INDEX runs_by_created ON runs (created_at, id)",
    # Retention: `prune` finds old runs by updated_at, optionally sparing one status.
    "CREATE INDEX runs_by_updated ON runs (updated_at, status)",
    """
    CREATE TABLE branches (
        run_id        TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        branch        INTEGER NOT NULL,
        parent_branch INTEGER,
        fork_step     BIGINT,
        edits_json    TEXT NOT NULL DEFAULT '{}',
        created_at    TEXT NOT NULL,
        length        BIGINT NOT NULL DEFAULT 0,
        PRIMARY KEY (run_id, branch)
    )
    """,
    # State at a step: the batch holding it is found by (run, branch, first_step), the nearest
    # keyframe by (run, branch, step); both are the primary keys, so one index seek each.
    """
    CREATE TABLE step_batches (
        run_id     TEXT NOT NULL,
        branch     INTEGER NOT NULL,
        first_step BIGINT NOT NULL,
        last_step  BIGINT NOT NULL CHECK (last_step >= first_step),
        blob       BYTEA NOT NULL,
        PRIMARY KEY (run_id, branch, first_step),
        FOREIGN KEY (run_id, branch) REFERENCES branches (run_id, branch) ON DELETE CASCADE
    )
    """,
    """
    CREATE TABLE keyframes (
        run_id TEXT NOT NULL,
        branch INTEGER NOT NULL,
        step   BIGINT NOT NULL,
        blob   BYTEA NOT NULL,
        PRIMARY KEY (run_id, branch, step),
        FOREIGN KEY (run_id, branch) REFERENCES branches (run_id, branch) ON DELETE CASCADE
    )
    """,
    """
    CREATE TABLE events (
        id        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        run_id    TEXT NOT NULL,
        branch    INTEGER NOT NULL,
        step      BIGINT NOT NULL,
        kind      TEXT NOT NULL,
        summary   TEXT NOT NULL,
        data_json TEXT NOT NULL DEFAULT '{}',
        FOREIGN KEY (run_id, branch) REFERENCES branches (run_id, branch) ON DELETE CASCADE
    )
    """,
    "CREATE INDEX events_by_step ON events (run_id, branch, step, id)",
    # Search and the timeline's markers of one kind (every LLM call, every error).
    "CREATE INDEX events_by_kind ON events (run_id, kind, step)",
    """
    CREATE TABLE llm_calls (
        id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        run_id        TEXT NOT NULL,
        branch        INTEGER NOT NULL,
        step          BIGINT NOT NULL,
        provider      TEXT NOT NULL,
        model         TEXT NOT NULL,
        request_json  TEXT NOT NULL,
        response_json TEXT NOT NULL,
        input_tokens  BIGINT NOT NULL DEFAULT 0,
        output_tokens BIGINT NOT NULL DEFAULT 0,
        cost          DOUBLE PRECISION NOT NULL DEFAULT 0,
        latency_ms    DOUBLE PRECISION NOT NULL DEFAULT 0,
        created_at    TEXT NOT NULL,
        FOREIGN KEY (run_id, branch) REFERENCES branches (run_id, branch) ON DELETE CASCADE
    )
    """,
    "CREATE INDEX llm_calls_by_step ON llm_calls (run_id, branch, step, id)",
    """
    CREATE TABLE effects (
        key         TEXT PRIMARY KEY,
        seq         BIGINT GENERATED ALWAYS AS IDENTITY,
        run_id      TEXT NOT NULL,
        branch      INTEGER NOT NULL,
        step        BIGINT NOT NULL,
        kind        TEXT NOT NULL,
        status      TEXT NOT NULL CHECK (status IN ('applied', 'failed')),
        args_json   TEXT NOT NULL,
        result_json TEXT NOT NULL,
        created_at  TEXT NOT NULL,
        FOREIGN KEY (run_id, branch) REFERENCES branches (run_id, branch) ON DELETE CASCADE
    )
    """,
    "CREATE INDEX effects_by_step ON effects (run_id, branch, step, seq)",
    # Run ownership: the one process that continues a run, claimed with the run's row locked.
    """
    CREATE TABLE run_owners (
        run_id     TEXT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
        owner_json TEXT NOT NULL,
        claimed_at TEXT NOT NULL
    )
    """,
)


def _v1(conn: Any) -> None:
    """Create everything."""
    for statement in _V1:
        conn.execute(statement)


def _v2(conn: Any) -> None:
    """Packed LLM requests (`requests.py`): each message, tool list and schema stored once per
    run as a part, a call's request referring to them (`request_form` 1). Calls recorded
    before keep their whole request (`request_form` 0) and read as they always did."""
    conn.execute(
        """
        CREATE TABLE llm_parts (
            run_id TEXT NOT NULL,
            branch INTEGER NOT NULL,
            seq    BIGINT NOT NULL,
            json   TEXT NOT NULL,
            PRIMARY KEY (run_id, branch, seq),
            FOREIGN KEY (run_id, branch) REFERENCES branches (run_id, branch) ON DELETE CASCADE
        )
        """
    )
    conn.execute("ALTER TABLE llm_calls ADD COLUMN request_form INTEGER NOT NULL DEFAULT 0")


def _v3(conn: Any) -> None:
    """Run ownership leases and keyframe bases.

    The owner of a run renews `run_owners.lease_until` while it runs, so a claim of a process
    on another machine (whose pid cannot be checked here) is taken over once its lease has
    expired; claims written before have none and are taken over only with --force.
    `keyframes.base_step` is the full keyframe an incremental one builds on, so one query reads
    both (`state_span`); NULL for a full one and for keyframes written before."""
    conn.execute("ALTER TABLE run_owners ADD COLUMN lease_until TEXT")
    conn.execute("ALTER TABLE keyframes ADD COLUMN base_step BIGINT")


MIGRATIONS = [_v1, _v2, _v3]


def latest_version() -> int:
    """The schema version this code writes: the number of migrations."""
    return len(MIGRATIONS)


def _refuse(where: str, reason: str) -> StoreError:
    return StoreError(f"cannot open run store {where}: {reason}")


def read_version(conn: Any, where: str) -> int:
    """The schema version of the database's current schema (0 when it holds none of our
    tables); refuse a schema that has a `runs` table that is not ours."""
    tables = {
        row[0]
        for row in conn.execute(
            "SELECT table_name FROM information_schema.tables"
            " WHERE table_schema = current_schema() AND table_name IN ('meta', 'runs')"
        )
    }
    if not tables:
        return 0
    if "meta" not in tables:
        raise _refuse(where, "its schema has a runs table but no meta table: not an agency store")
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        raise _refuse(where, "its meta table has no schema_version: not an agency store")
    try:
        return int(row[0])
    except (TypeError, ValueError) as exc:
        raise _refuse(where, f"the schema version {row[0]!r} is not a number") from exc


def refuse_newer(where: str, version: int) -> None:
    if version > latest_version():
        raise _refuse(
            where,
            f"written by a newer agency (schema v{version}; this version reads up to "
            f"v{latest_version()}); upgrade agency to open it",
        )


def migrate(conn: Any, where: str) -> int:
    """Bring the schema to the latest version in one transaction; return the version.

    `conn` is in autocommit mode. The version is read again under the advisory lock, so two
    processes opening a new database at once migrate it once.
    """
    version = read_version(conn, where)
    refuse_newer(where, version)
    if version == latest_version():
        return version
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        version = read_version(conn, where)
        refuse_newer(where, version)
        for target, step in enumerate(MIGRATIONS[version:], start=version + 1):
            try:
                step(conn)
            except Exception as exc:
                raise _refuse(where, f"migration to schema v{target} failed: {exc}") from exc
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', %s)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(latest_version()),),
        )
    return latest_version()
