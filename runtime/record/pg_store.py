"""Provides `PostgresStore`, a `RunStore` in a PostgreSQL database shared by a team: every
machine that records with `--db postgresql://user@host/db` (or `AGENCY_DB`) writes its runs
there, and any of them can be opened, resumed (one process at a time: `claim_run` locks the run's
row) or pruned from anywhere.

It is `SQLStore` (`sql_store.py`) over psycopg 3: the same statements and row decoding as
SQLite, one writer connection behind the grouped-commit `Writer` (recording does not wait on the
network), and a pool of read connections. When the server goes away (a restart, a failover) the
writer waits for it (up to `RECONNECT_TIMEOUT`) and commits the group it was holding again, so a
step the recorder handed over is not lost; a read fails with a `StoreError` meanwhile.

Credentials: a password in the URL is used to connect and never shown; messages name the store
by its URL without it (`redact`). Prefer libpq's own `PGPASSWORD` / `~/.pgpass`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
import time
import urllib.parse
import weakref
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from runtime.record import pg_migrations
from runtime.record.sql_owners import SELECT_OWNER
from runtime.record.sql_store import SQLStore
from runtime.record.store import StoreError, lease_left, loads, utcnow
from runtime.record.writer import Dialect, NoWriter, Writer

__all__ = ["PostgresStore", "is_postgres_url", "redact"]

RECONNECT_TIMEOUT = 60.0  # seconds the writer waits for a server that went away
CONNECT_TIMEOUT = 10  # seconds for one connection attempt
READERS = 4  # read connections kept in the pool at most
SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(text: str) -> bool:
    return text.startswith(SCHEMES)


def redact(url: str) -> str:
    """The URL without its password (and without query parameters, which may hold one)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # `postgresql://u@[::1`: nothing of it is shown, a password included
        return url.split("//", 1)[0] + "//(a URL that cannot be parsed)"
    netloc = parts.netloc
    if "@" in netloc:
        user, host = netloc.rsplit("@", 1)
        netloc = user.split(":", 1)[0] + "@" + host
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def session_name(owner: dict[str, Any]) -> str:
    """The `application_name` of an owner's writer session: a digest of the owner (a name is
    at most 63 bytes; a host name alone can be longer)."""
    digest = hashlib.sha256(json.dumps(owner, sort_keys=True).encode()).hexdigest()[:24]
    return f"agency-owner-{digest}"


class PostgresDialect(Dialect):
    errors = (psycopg.Error,)
    for_update = " FOR UPDATE"
    effect_order = "seq"

    def sql(self, text: str) -> str:
        return text.replace("?", "%s")

    def begin(self, conn: Any) -> None:
        pass  # psycopg opens the transaction at the first statement

    def commit(self, conn: Any) -> None:
        conn.commit()

    def rollback(self, conn: Any) -> None:
        conn.rollback()

    def group(self, conn: Any) -> contextlib.AbstractContextManager[Any]:
        """A group's statements go in one pipeline: sent without waiting for each answer (a
        group of 500 single-row writes is one round trip, not 500)."""
        return conn.pipeline()  # type: ignore[no-any-return]

    def rows(self, conn: Any, sql: str, params: tuple[Any, ...]) -> list[Any]:
        with conn.cursor(row_factory=dict_row) as cursor:
            rows: list[Any] = cursor.execute(sql, params).fetchall()
            return rows

    def is_disconnect(self, exc: BaseException, conn: Any) -> bool:
        return isinstance(exc, psycopg.OperationalError) and bool(conn.broken or conn.closed)

    def transaction_id(self, conn: Any) -> Any:
        return conn.execute("SELECT txid_current()").fetchone()[0]

    def committed(self, conn: Any, transaction: Any) -> bool:
        try:
            row = conn.execute("SELECT txid_status(%s)", (transaction,)).fetchone()
        except psycopg.OperationalError:
            raise  # the server is gone again: reconnect, then ask again
        except psycopg.Error:
            # "transaction ID ... is in the future": the server crashed before the id reached
            # its log, so the transaction cannot have committed.
            conn.rollback()
            return False
        conn.rollback()
        return bool(row is not None and row[0] == "committed")


POSTGRES = PostgresDialect()


def _connect(conninfo: str, where: str, autocommit: bool = False) -> psycopg.Connection[Any]:
    try:
        return psycopg.connect(conninfo, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT)
    except psycopg.Error as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StoreError(f"cannot open run store {where}: {detail}") from exc


def _shutdown(writer: Writer | NoWriter, pool: ConnectionPool[Any], where: str) -> None:
    """Commit what a store still has queued when it was never closed."""
    writer.stop()
    writer.close_connection()
    with contextlib.suppress(Exception):
        pool.close()
    for exc in writer.take_errors():
        print(f"agency: run store {where}: a background write failed: {exc}", file=sys.stderr)


class PostgresStore(SQLStore):
    """A `RunStore` in the PostgreSQL database at `url` (`postgresql://user@host:port/db`).

    Opening creates or migrates the schema (the URL's `options=-csearch_path=...` picks another
    schema than `public`) and refuses a newer or foreign one with `StoreError`. `read_only`
    opens no writer and migrates nothing.
    """

    def __init__(
        self,
        url: str,
        *,
        clock: Callable[[], datetime] | None = None,
        read_only: bool = False,
    ) -> None:
        if not is_postgres_url(url):
            raise ValueError(f"not a PostgreSQL URL: {redact(url)!r}")
        self.url = url
        self.where = redact(url)
        try:
            urllib.parse.urlsplit(url)
        except ValueError as exc:  # what psycopg would say less clearly, or raise as it is
            raise StoreError(f"cannot open run store {self.where}: {exc}") from None
        self.read_only = read_only
        self._dialect = POSTGRES
        self._clock = clock or utcnow
        self._server_clock = clock is None  # leases by the server's clock, unless one is given
        self._closed = False
        self._init_lineages()
        conn = _connect(url, self.where, autocommit=True)
        try:
            if read_only:
                pg_migrations.refuse_newer(self.where, pg_migrations.read_version(conn, self.where))
            else:
                pg_migrations.migrate(conn, self.where)
        except psycopg.Error as exc:
            raise StoreError(f"cannot open run store {self.where}: {exc}") from exc
        finally:
            conn.close()
        self._pool: ConnectionPool[Any] = ConnectionPool(
            url,
            min_size=0,
            max_size=READERS,
            kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT},
            timeout=CONNECT_TIMEOUT,
            name="agency-readers",
            open=True,
        )
        if read_only:
            self._writer: Writer | NoWriter = NoWriter(self.where)
        else:
            writer_conn = _connect(url, self.where)
            self._writer = Writer(
                writer_conn,
                self.where,
                self._clock,
                POSTGRES,
                reconnect=self._reconnect,
                fence=self._check_fences,
            )
        # Not a method of self: the finalizer must not keep the store alive.
        self._finalizer = weakref.finalize(self, _shutdown, self._writer, self._pool, self.where)

    def _reconnect(self) -> psycopg.Connection[Any] | None:
        """A new writer connection once the server answers again; None after the timeout."""
        deadline = time.monotonic() + RECONNECT_TIMEOUT
        pause = 0.05
        while True:
            try:
                return psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT)
            except psycopg.OperationalError:
                if time.monotonic() >= deadline:
                    return None
                time.sleep(pause)  # the server is restarting: try again, less and less often
                pause = min(pause * 2, 1.0)

    def _name_session(self, conn: Any, owner: dict[str, Any]) -> None:
        # Session-wide (not LOCAL): the writer's connection stays this owner's after commit.
        conn.execute("SELECT set_config('application_name', %s, false)", (session_name(owner),))

    def _end_expired_holder(self, conn: Any, run_id: str, mine: dict[str, Any]) -> None:
        # A holder suspended mid-transaction (SIGSTOP, a frozen VM) keeps its fence's row lock
        # until its connection closes, and PostgreSQL ends no session that waits on its client
        # inside a pipeline. Once its lease has ended the run is no longer its own: end its
        # writer's session (found by the name it set when it claimed), which rolls back what it
        # had not committed; on waking it reconnects and its fence refuses its writes.
        row = self._one(conn, SELECT_OWNER, (run_id,))  # a plain read: waits on no lock
        if row is None:
            return
        holder = loads(row[0])
        left = lease_left(row[1], self._db_now(conn))
        if holder == mine or left is None or left > 0:
            return
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name = %s AND pid <> pg_backend_pid()",
            (session_name(holder),),
        )

    def _db_now(self, conn: Any) -> datetime:
        """The server's clock: every machine sharing the database measures leases by it."""
        if not self._server_clock:
            return self._clock()
        now: datetime = conn.execute("SELECT now()").fetchone()[0]
        return now

    @contextlib.contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        # Not checked before each read (a round trip, half the time of a state_at); when a read
        # finds the server gone, every idle connection is checked, so only that read fails.
        try:
            with self._pool.connection() as conn:
                yield conn
        except psycopg.OperationalError:
            with contextlib.suppress(Exception):
                self._pool.check()
            raise

    def _release(self) -> None:
        self._finalizer.detach()
        self._writer.stop()
        self._writer.close_connection()
        with contextlib.suppress(Exception):
            self._pool.close()
