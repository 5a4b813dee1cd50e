"""Provides `SQLiteStore`, the default `RunStore`: one SQLite file (WAL) per working directory.

What it shares with `PostgresStore` (statements, row decoding, the writer thread that commits
in groups) is `SQLStore` (`sql_store.py`). Readers use their own connection per thread. After a
`kill -9` the file holds a consistent prefix of what was queued: each group is one SQLite
transaction, so there is never half a batch.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import sys
import threading
import time
import urllib.parse
import weakref
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from runtime.language.files import STORE_SUFFIXES, kind_of, protect
from runtime.record import migrations
from runtime.record.rows import stored_text
from runtime.record.sql_store import SQLStore
from runtime.record.store import StoreError, utcnow
from runtime.record.writer import Dialect, NoWriter, Writer

__all__ = ["SQLiteStore", "default_db_path"]

PAGE_SIZE = 16384  # for new stores
BUSY_TIMEOUT = 10.0  # seconds to wait for another process's write lock


def _has_wal(path: Path) -> bool:
    try:
        return path.with_name(path.name + "-wal").stat().st_size > 0
    except OSError:
        return False


def _busy(exc: BaseException) -> bool:
    """Whether a SQLite error is another connection's lock (worth trying again)."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def file_size(path: Path | str) -> int:
    """The bytes a SQLite store takes on disk: the database and its write-ahead log."""
    total = 0
    for suffix in ("", "-wal"):
        with contextlib.suppress(OSError):
            total += os.stat(f"{path}{suffix}").st_size
    return total


def default_db_path(env: Mapping[str, str] = os.environ) -> Path:
    """`$AGENCY_DB` if set, else `.agency/runs.db` under the current working directory."""
    configured = env.get("AGENCY_DB")
    if configured:
        return Path(configured).expanduser()
    return Path.cwd() / ".agency" / "runs.db"


class SQLiteDialect(Dialect):
    errors = (sqlite3.Error,)
    rows_per_insert = 100  # 500 values: far under SQLite's oldest limit on them (999)

    def rows(self, conn: Any, sql: str, params: tuple[Any, ...]) -> list[Any]:
        cursor = conn.cursor()
        cursor.row_factory = sqlite3.Row
        rows: list[Any] = cursor.execute(sql, params).fetchall()
        return rows


SQLITE = SQLiteDialect()


def _refuse_special(path: Path) -> None:
    """A run store is a regular file: a device, FIFO or socket is refused before SQLite opens
    it (SQLite would put a `-journal` or `-wal` beside it, e.g. `/dev/null-journal`)."""
    try:
        st = os.stat(path)
    except OSError:
        return
    if stat.S_ISDIR(st.st_mode):
        raise StoreError(f"cannot open run store {path}: it is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise StoreError(
            f"cannot open run store {path}: it is {kind_of(st.st_mode)}, not a regular file"
        )


# The store files this process has open (by device and inode), with how many stores. A file is
# read directly (its header checked) only while none is open here: closing any descriptor of a
# file drops every POSIX lock the process holds on it, SQLite's included, and a writer in
# another process that then finds no lock takes itself for the last connection and removes the
# write-ahead log this process still reads ("database disk image is malformed", "disk I/O
# error" in a debugger or server that opens a second store on the same file).
_open_files: dict[tuple[int, int], int] = {}
_open_lock = threading.Lock()


def _file_key(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _check_file(path: Path) -> None:
    """`migrations.check_file`, unless a store of this process has the file open already."""
    key = _file_key(path)
    with _open_lock:
        if key is not None and _open_files.get(key):
            return
    migrations.check_file(path)


def _hold(path: Path) -> tuple[int, int] | None:
    key = _file_key(path)
    if key is not None:
        with _open_lock:
            _open_files[key] = _open_files.get(key, 0) + 1
    return key


def _let_go(key: tuple[int, int] | None) -> None:
    if key is not None:
        with _open_lock:
            left = _open_files.get(key, 0) - 1
            if left > 0:
                _open_files[key] = left
            else:
                _open_files.pop(key, None)


def _shutdown(writer: Writer | NoWriter, path: Path, key: tuple[int, int] | None = None) -> None:
    """Commit what a store still has queued when it was never closed: at interpreter exit or
    when it is garbage-collected. Failures can only be printed by then."""
    writer.stop()
    writer.close_connection()
    _let_go(key)
    for exc in writer.take_errors():
        print(f"agency: run store {path}: a background write failed: {exc}", file=sys.stderr)


class SQLiteStore(SQLStore):
    """A `RunStore` in a SQLite file (`default_db_path()` unless a path is given).

    Opening creates the file and its folder if needed, migrates an older store, and refuses a
    newer, foreign or damaged file with `StoreError`.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
        read_only: bool = False,
    ) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        self.where = str(self.path)
        self.read_only = read_only
        self._dialect = SQLITE
        self._clock = clock or utcnow
        self._closed = False
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._init_lineages()
        try:
            _refuse_special(self.path)
            if read_only:
                self._uri = self._read_only_uri()
            else:
                conn = self._open_writer()
        except OSError as exc:  # a name too long, a loop of links, a file in the path, …
            raise StoreError(f"cannot open run store {self.path}: {exc.strerror or exc}") from None
        if read_only:
            self._writer: Writer | NoWriter = NoWriter(self.where)
            self._key = _hold(self.path)
            self._finalizer = weakref.finalize(self, _shutdown, self._writer, self.path, self._key)
            return
        for suffix in STORE_SUFFIXES:  # out of reach of the file builtins (a program's write())
            protect(self.path.with_name(self.path.name + suffix), "the run store")
        self._writer = Writer(conn, self.where, self._clock, SQLITE, fence=self._check_fences)
        self._key = _hold(self.path)
        # Not a method of self: the finalizer must not keep the store alive.
        self._finalizer = weakref.finalize(self, _shutdown, self._writer, self.path, self._key)

    def _open_writer(self) -> sqlite3.Connection:
        path = self.path
        if path.is_dir():
            raise StoreError(f"cannot open run store {path}: it is a directory")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot open run store {path}: {exc.strerror or exc}") from exc
        _check_file(path)
        deadline = time.monotonic() + BUSY_TIMEOUT
        while True:
            try:
                conn = sqlite3.connect(
                    path, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False
                )
                conn.text_factory = stored_text
            except sqlite3.Error as exc:
                raise StoreError(f"cannot open run store {path}: {exc}") from exc
            try:
                # Look before writing anything: a foreign or newer file must be left as it is.
                if migrations.read_version(conn, path) == 0:
                    # Before the first write (it cannot change in WAL mode): 16 KiB pages hold
                    # a whole step batch with fewer overflow pages; range reads ~3x faster.
                    conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute("PRAGMA foreign_keys = ON")
                migrations.migrate(conn, path)
                return conn
            except sqlite3.Error as exc:
                conn.close()
                # Several processes creating the store at once: switching it to WAL takes a
                # lock SQLite does not wait for (no busy handler), so wait here, a while.
                if _busy(exc) and time.monotonic() < deadline:
                    time.sleep(0.02)
                    continue
                raise StoreError(f"cannot open run store {path}: {exc}") from exc
            except BaseException:
                conn.close()
                raise

    def _read_only_uri(self) -> str:
        """Open an existing store for reading only (`agency runs`, `show`, `export`): it works
        in a read-only directory or on a read-only file. Nothing is created or migrated."""
        path = self.path
        if not path.exists():
            raise StoreError(f"cannot open run store {path}: no such file")
        _check_file(path)
        base = "file:" + urllib.parse.quote(str(path.resolve()))
        # `mode=ro` still needs the WAL index beside the file; where it cannot be made (a
        # read-only directory) and no log is pending, the file is read as it is. Where the file
        # and its directory are writable, a read-write connection that only reads (`query_only`)
        # is used instead: as the last one to close it removes the `-wal` and `-shm` it made,
        # where a `mode=ro` one leaves them behind.
        uris = [base + "?mode=ro"]
        if os.access(path, os.W_OK) and os.access(path.resolve().parent, os.W_OK):
            uris.insert(0, base + "?mode=rw")
        else:
            # Only where nothing can be written: read the file as it is. Elsewhere the file may
            # be a store another process is creating, which read this way looks damaged.
            uris.append(base + "?immutable=1")
        started = time.monotonic()
        while True:
            found = self._try_read_only(uris)
            if isinstance(found, str):
                return found
            # No schema yet (another process is creating the store: milliseconds), or a lock
            # taken while it is made: wait for it, a while.
            waited = time.monotonic() - started
            if (found is None and waited < 2.0) or (
                found is not None and _busy(found) and waited < BUSY_TIMEOUT
            ):
                time.sleep(0.02)
                continue
            if found is None:
                raise StoreError(f"cannot open run store {path}: it holds no run store yet")
            raise StoreError(f"cannot open run store {path} read-only: {found}")

    def _try_read_only(self, uris: list[str]) -> str | sqlite3.Error | None:
        """The first of `uris` that opens the store; else the last error, or None when the
        file holds no schema yet."""
        path = self.path
        last: sqlite3.Error | None = None
        for uri in uris:
            if uri.endswith("immutable=1") and _has_wal(path):
                break
            try:
                conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT)
                conn.text_factory = stored_text
                try:
                    version = migrations.read_version(conn, path)
                finally:
                    conn.close()
            except sqlite3.Error as exc:
                last = exc
                continue
            if version > migrations.latest_version():
                raise StoreError(
                    f"cannot open run store {path}: written by a newer agency (schema "
                    f"v{version}; this version reads up to v{migrations.latest_version()}); "
                    "upgrade agency to open it"
                )
            if version == 0:
                return None
            return uri
        return last

    def size_bytes(self) -> int:
        """What the store takes on disk: the database and its write-ahead log (the size cap)."""
        return file_size(self.path)

    # plumbing

    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None and self.read_only:
            conn = sqlite3.connect(
                self._uri,
                uri=True,
                timeout=BUSY_TIMEOUT,
                isolation_level=None,
                check_same_thread=False,
            )
            conn.text_factory = stored_text
            conn.execute("PRAGMA query_only = ON")
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        if conn is None:
            conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False
            )
            conn.text_factory = stored_text
            conn.execute("PRAGMA query_only = ON")
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    @contextlib.contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        yield self._reader()

    def _release(self) -> None:
        self._finalizer.detach()
        self._writer.stop()
        with self._readers_lock:
            readers, self._readers = self._readers, []
        for conn in readers:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        # The writer's connection closes last: the last connection folds the WAL back into
        # the database file and removes it.
        self._writer.close_connection()
        _let_go(self._key)
