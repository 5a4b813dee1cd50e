"""A second store opened on a file this process already reads must not cost the first one its
locks.

Opening a SQLite store checks the file's header with a plain read. Closing any descriptor of a
file drops every POSIX lock the process holds on it, SQLite's included: a writer in another
process that then closed took itself for the last connection and removed the write-ahead log
and its index under this process's readers, which from then on read a stale index: runs
recorded afterwards by other processes were missing (or the file read as "malformed"). A
debugger or `agency serve` opens stores more than once; `agency runs` opens a writable one to
mark dead runs while its read-only one is open. Found by the concurrent-writers test.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from runtime.record.sqlite_store import SQLiteStore
from runtime.record.store import RunMeta
from tests.lifecycle.harness import REPO

WRITER = """
import sys
sys.path.insert(0, {repo!r})
from runtime.record.sqlite_store import SQLiteStore
from runtime.record.store import RunMeta
store = SQLiteStore({db!r})
for _ in range({n}):
    store.create_run(RunMeta("p.agency", "0" * 64, "main", {{}}, {{}}, {{}}))
store.flush()
print("written", flush=True)
sys.stdin.readline()  # holds the store open while the test reads
store.close()
"""


def _meta() -> RunMeta:
    return RunMeta("p.agency", "0" * 64, "main", {}, {}, {})


def _write(db: Path, n: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER.format(repo=str(REPO), db=str(db), n=n)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "written"
    return proc


def _done(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("\n")
    proc.stdin.close()
    assert proc.wait(60) == 0


def test_a_second_store_on_the_file_keeps_the_first_ones_view_current(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with SQLiteStore(db) as store:
        store.create_run(_meta())
    reader = SQLiteStore(db, read_only=True)
    try:
        assert len(reader.list_runs(1000)) == 1  # its connection is open from here on
        SQLiteStore(db, read_only=True).close()  # a second store on the same file
        _done(_write(db, 20))  # another process writes, then closes its store
        assert Path(f"{db}-wal").exists(), "the log was removed under a reader"
        writer = _write(db, 30)  # ... and another one, still open while we read
        try:
            assert len(reader.list_runs(1000)) == 51
            with SQLiteStore(db, read_only=True) as fresh:
                assert len(fresh.list_runs(1000)) == 51
        finally:
            _done(writer)
    finally:
        reader.close()
