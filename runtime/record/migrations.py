"""Provides the run store's SQLite schema as an ordered list of migrations, and the checks that
keep the store from touching a file that is not one of ours.

`MIGRATIONS[i]` takes a database from schema version i to i + 1; version 0 is an empty database.
The version lives in the `meta` table (`schema_version`). Opening an older store runs the
missing migrations in one transaction, so a store is never left half-migrated. A store written by
a newer version, a file that is not SQLite, a SQLite database of someone else's, and a damaged
file are all refused with a one-line `StoreError` that names the file; nothing is written to them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from runtime.record.contract import StoreError

__all__ = [
    "APPLICATION_ID",
    "MIGRATIONS",
    "check_file",
    "latest_version",
    "migrate",
    "read_version",
]

Migration = Callable[[sqlite3.Connection], None]

# Written into the SQLite header (PRAGMA application_id) so tools like `file` can tell what the
# database is, and so a database stamped by another application is refused early.
APPLICATION_ID = 0x41474E59  # "AGNY"

_SQLITE_MAGIC = b"SQLite format 3\x00"
_HEADER_SIZE = 100

_V1 = (
    """
    CREATE TABLE IF NOT EXISTS meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )
    """,
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
        step_count    INTEGER NOT NULL DEFAULT 0,
        result_json   TEXT,
        error         TEXT,
        meta_json     TEXT NOT NULL DEFAULT '{}'
    )
    """,
    "CREATE INDEX runs_by_created ON runs (created_at, id)",
    "CREATE INDEX runs_by_updated ON runs (updated_at)",
    """
    CREATE TABLE branches (
        run_id        TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        branch        INTEGER NOT NULL,
        parent_branch INTEGER,
        fork_step     INTEGER,
        edits_json    TEXT NOT NULL DEFAULT '{}',
        created_at    TEXT NOT NULL,
        length        INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (run_id, branch)
    ) WITHOUT ROWID
    """,
    # Step batches and keyframes are opaque blobs; the blob is the last column so reading the
    # step bounds never touches its overflow pages. Every child table references its branch, so
    # deleting a run cascades through branches to everything recorded for it.
    """
    CREATE TABLE step_batches (
        id         INTEGER PRIMARY KEY,
        run_id     TEXT NOT NULL,
        branch     INTEGER NOT NULL,
        first_step INTEGER NOT NULL,
        last_step  INTEGER NOT NULL CHECK (last_step >= first_step),
        blob       BLOB NOT NULL,
        FOREIGN KEY (run_id, branch) REFERENCES branches (run_id, branch) ON DELETE CASCADE
    )
    """,
    "CREATE UNIQUE INDEX step_batches_by_step ON step_batches (run_id, branch, first_step)",
    """
    CREATE TABLE keyframes (
        id     INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL,
        branch INTEGER NOT NULL,
        step   INTEGER NOT NULL,
        blob   BLOB NOT NULL,
        FOREIGN KEY (run_id, branch) REFERENCES branches (run_id, branch) ON DELETE CASCADE
    )
    """,
    "CREATE UNIQUE INDEX keyframes_by_step ON keyframes (run_id, branch, step)",
    """
    CREATE TABLE events (
        id        INTEGER PRIMARY KEY,
        run_id    TEXT NOT NULL,
        branch    INTEGER NOT NULL,
        step      INTEGER NOT NULL,
        kind      TEXT NOT NULL,
        summary   TEXT NOT NULL,
        data_json TEXT NOT NULL DEFAULT '{}',
        FOREIGN KEY (run_id, branch) REFERENCES branches (run_id, branch) ON DELETE CASCADE
    )
    """,
    "CREATE INDEX events_by_step ON events (run_id, branch, step)",
    """
    CREATE TABLE llm_calls (
        id            INTEGER PRIMARY KEY,
        run_id        TEXT NOT NULL,
        branch        INTEGER NOT NULL,
        step          INTEGER NOT NULL,
        provider      TEXT NOT NULL,
        model         TEXT NOT NULL,
        request_json  TEXT NOT NULL,
        response_json TEXT NOT NULL,
        input_tokens  INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        cost          REAL NOT NULL DEFAULT 0,
        latency_ms    REAL NOT NULL DEFAULT 0,
        created_at    TEXT NOT NULL,
        FOREIGN KEY (run_id, branch) REFERENCES branches (run_id, branch) ON DELETE CASCADE
    )
    """,
    "CREATE INDEX llm_calls_by_step ON llm_calls (run_id, branch, step)",
    """
    CREATE TABLE effects (
        key         TEXT PRIMARY KEY,
        run_id      TEXT NOT NULL,
        branch      INTEGER NOT NULL,
        step        INTEGER NOT NULL,
        kind        TEXT NOT NULL,
        status      TEXT NOT NULL CHECK (status IN ('applied', 'failed')),
        args_json   TEXT NOT NULL,
        result_json TEXT NOT NULL,
        created_at  TEXT NOT NULL,
        FOREIGN KEY (run_id, branch) REFERENCES branches (run_id, branch) ON DELETE CASCADE
    )
    """,
    "CREATE INDEX effects_by_step ON effects (run_id, branch, step)",
)


def _v1(conn: sqlite3.Connection) -> None:
    """Create everything."""
    for statement in _V1:
        conn.execute(statement)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")


def _v2(conn: sqlite3.Connection) -> None:
    """Run owners: the one process that continues a run (resume, replay --then-live, a fork),
    claimed by compare-and-set inside one transaction (`SQLiteStore.claim_run`)."""
    conn.execute(
        """
        CREATE TABLE run_owners (
            run_id     TEXT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
            owner_json TEXT NOT NULL,
            claimed_at TEXT NOT NULL
        ) WITHOUT ROWID
        """
    )


def _v3(conn: sqlite3.Connection) -> None:
    """Packed LLM requests (`requests.py`): each message, tool list and schema stored once per
    run as a part, a call's request referring to them (`request_form` 1). Calls recorded
    before keep their whole request (`request_form` 0) and read as they always did."""
    conn.execute(
        """
        CREATE TABLE llm_parts (
            run_id TEXT NOT NULL,
            branch INTEGER NOT NULL,
            seq    INTEGER NOT NULL,
            json   TEXT NOT NULL,
            PRIMARY KEY (run_id, branch, seq),
            FOREIGN KEY (run_id, branch) REFERENCES branches (run_id, branch) ON DELETE CASCADE
        ) WITHOUT ROWID
        """
    )
    conn.execute("ALTER TABLE llm_calls ADD COLUMN request_form INTEGER NOT NULL DEFAULT 0")


def _v4(conn: sqlite3.Connection) -> None:
    """Run ownership leases and keyframe bases.

    The owner of a run renews `run_owners.lease_until` while it runs, so a claim of a process
    on another machine (whose pid cannot be checked here) is taken over once its lease has
    expired; claims written before have none and are taken over only with --force.
    `keyframes.base_step` is the full keyframe an incremental one builds on, so one query reads
    both (`state_span`); NULL for a full one and for keyframes written before."""
    conn.execute("ALTER TABLE run_owners ADD COLUMN lease_until TEXT")
    conn.execute("ALTER TABLE keyframes ADD COLUMN base_step BIGINT")


MIGRATIONS: list[Migration] = [_v1, _v2, _v3, _v4]


def latest_version(migrations: list[Migration] | None = None) -> int:
    """The schema version this code writes: the number of migrations."""
    return len(MIGRATIONS if migrations is None else migrations)


def _refuse(path: Path | str, reason: str) -> StoreError:
    return StoreError(f"cannot open run store {path}: {reason}")


def check_file(path: Path) -> None:
    """Refuse a file that is not a whole SQLite database, before SQLite opens it.

    A missing or empty file is fine (it becomes a new store). A file whose header is not
    SQLite's is foreign or garbage. A file shorter than its header says is truncated; this is
    only checked when there is no write-ahead log beside it, since after a crash the log may
    legitimately hold pages the main file does not have yet.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _refuse(path, exc.strerror or str(exc)) from exc
    if size == 0:
        return
    try:
        with path.open("rb") as f:
            header = f.read(_HEADER_SIZE)
    except OSError as exc:
        raise _refuse(path, exc.strerror or str(exc)) from exc
    if not header.startswith(_SQLITE_MAGIC):
        raise _refuse(path, "not a SQLite database (an agency run store is one)")
    if len(header) < _HEADER_SIZE:
        raise _refuse(path, f"the file is truncated ({size} bytes, shorter than a SQLite header)")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        raise _refuse(path, f"the SQLite header is damaged (page size {page_size})")
    wal = path.with_name(path.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        return
    # The header's page count is valid only when the change counter matches "version valid for".
    page_count = int.from_bytes(header[28:32], "big")
    if page_count and header[24:28] == header[92:96]:
        expected = page_count * page_size
        if size < expected:
            raise _refuse(path, f"the file is truncated ({size} bytes, its header says {expected})")
    elif size % page_size:
        raise _refuse(path, f"the file is truncated ({size} bytes, not whole pages)")


def read_version(conn: sqlite3.Connection, path: Path | str) -> int:
    """The schema version of an open database (0 for an empty one); refuse foreign databases."""
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    if app_id not in (0, APPLICATION_ID):
        raise _refuse(path, f"a SQLite database of another application (id {app_id:#x})")
    tables = {
        row[0]
        for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if not row[0].startswith("sqlite_")
    }
    if not tables:
        return 0
    if "meta" not in tables:
        raise _refuse(path, "a SQLite database but not an agency run store (no meta table)")
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.OperationalError as exc:
        raise _refuse(path, f"a SQLite database but not an agency run store ({exc})") from exc
    if row is None:
        raise _refuse(path, "a SQLite database but not an agency run store (no schema_version)")
    try:
        version = int(row[0])
    except (TypeError, ValueError) as exc:
        raise _refuse(path, f"the schema version {row[0]!r} is not a number") from exc
    if version < 0:  # migrating "up" from it ran the first migration again on a full store
        raise _refuse(path, f"the schema version {version} is not one agency writes (damaged)")
    if version == 0 and tables != {"meta"}:
        raise _refuse(path, "a SQLite database but not an agency run store (version 0 with data)")
    return version


def migrate(
    conn: sqlite3.Connection, path: Path | str, migrations: list[Migration] | None = None
) -> int:
    """Bring the database to the latest schema in one transaction; return the version.

    `conn` must be in autocommit mode (isolation_level=None). The version is read again inside
    the transaction, so two processes opening an old store at once migrate it once.
    """
    steps = MIGRATIONS if migrations is None else migrations
    latest = len(steps)
    version = read_version(conn, path)
    _refuse_newer(path, version, latest)
    if version == latest:
        return version
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = read_version(conn, path)
        _refuse_newer(path, version, latest)
        for target, step in enumerate(steps[version:], start=version + 1):
            try:
                step(conn)
            except sqlite3.Error as exc:
                raise _refuse(path, f"migration to schema v{target} failed: {exc}") from exc
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(latest),),
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return latest


def _refuse_newer(path: Path | str, version: int, latest: int) -> None:
    if version > latest:
        raise _refuse(
            path,
            f"written by a newer agency (schema v{version}; this version reads up to "
            f"v{latest}); upgrade agency to open it",
        )
