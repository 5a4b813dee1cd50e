"""What only the SQLite store does: files, durability, migrations, refusing files it cannot use."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from runtime.record import migrations
from runtime.record.sqlite_store import SQLiteStore, default_db_path
from runtime.record.store import Batch, Keyframe, StoreError

from .helpers import meta


def fill(store: SQLiteStore) -> str:
    run_id = store.create_run(meta())
    store.append_batch(run_id, 0, 0, 9, b"\x00batch\xff")
    store.put_keyframe(run_id, 0, 0, b"kf")
    store.add_event(run_id, 0, 3, "llm", "asked", {"n": 1})
    store.add_llm_call(run_id, 0, 3, provider="sim", model="m", request={"q": 1}, response="a")
    store.put_effect(
        "e1", run_id=run_id, branch=0, step=5, kind="write", status="applied", args=[1], result=2
    )
    store.create_branch(run_id, 0, 4, {"x": 9})
    store.append_batch(run_id, 1, 5, 6, b"own")
    store.update_run(run_id, status="finished", result=42)
    return run_id


def test_default_db_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert default_db_path({}) == tmp_path / ".agency" / "runs.db"
    assert default_db_path({"AGENCY_DB": "/x/y.db"}) == Path("/x/y.db")
    with SQLiteStore() as store:
        assert store.path == tmp_path / ".agency" / "runs.db"
    assert (tmp_path / ".agency" / "runs.db").is_file()


def test_reopen_keeps_everything(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "runs.db"
    with SQLiteStore(path) as store:
        run_id = fill(store)
        before = store.get_run(run_id)
    with SQLiteStore(path) as store:
        assert store.get_run(run_id) == before
        assert store.batches(run_id, 1, 0, 10) == [
            Batch(0, 0, 9, b"\x00batch\xff"),
            Batch(1, 5, 6, b"own"),
        ]
        assert store.keyframe_at_or_before(run_id, 1, 7) == Keyframe(0, 0, b"kf")
        assert [e.data for e in store.events(run_id, 0)] == [{"n": 1}]
        assert [(c.request, c.response) for c in store.llm_calls(run_id)] == [({"q": 1}, "a")]
        effect = store.get_effect("e1")
        assert effect is not None and (effect.args, effect.result) == ([1], 2)
        assert [b.edits for b in store.branches(run_id)] == [{}, {"x": 9}]
        assert store.step_count(run_id, 1) == 7


def test_wal_mode_and_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(
        migrations.latest_version()
    )
    assert conn.execute("PRAGMA application_id").fetchone()[0] == migrations.APPLICATION_ID
    conn.close()


def test_queued_writes_are_read_back_and_flush_makes_them_durable(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as store:
        run_id = store.create_run(meta())
        store.append_batch(run_id, 0, 0, 9, b"x")
        assert store.step_count(run_id) == 10  # read-your-writes, even before the commit
        store.add_event(run_id, 0, 1, "tool", "t")
        store.flush()
        other = sqlite3.connect(path)  # another process's view of the file
        assert other.execute("SELECT count(*) FROM events").fetchone()[0] == 1
        # An effect is committed before put_effect returns.
        store.put_effect(
            "k", run_id=run_id, branch=0, step=1, kind="w", status="applied", args=0, result=0
        )
        assert other.execute("SELECT status FROM effects WHERE key = 'k'").fetchone() == (
            "applied",
        )
        other.close()


def test_background_failure_surfaces_at_the_next_call(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "runs.db") as store:
        run_id = store.create_run(meta())
        store.append_batch(run_id, 0, 0, 9, b"x")
        store.append_batch(run_id, 0, 0, 9, b"duplicate")
        with pytest.raises(StoreError, match="background write failed.*UNIQUE"):
            store.get_run(run_id)
        # Reported once; the good write was kept.
        assert store.batches(run_id, 0, 0, 9) == [Batch(0, 0, 9, b"x")]


def test_a_failed_write_costs_only_itself(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "runs.db") as store:
        run_id = store.create_run(meta())
        store.append_batch(run_id, 0, 0, 9, b"a")
        store.update_run("r-unknown", status="failed")
        store.append_batch(run_id, 0, 10, 19, b"b")
        # A synchronous write fails at its call, in the same group as the queued ones...
        with pytest.raises(StoreError, match="no branch 9"):
            store.create_branch(run_id, 9, 3)
        # ...and the queued failure is reported next; the other writes are all there.
        with pytest.raises(StoreError, match="r-unknown"):
            store.flush()
        assert store.step_count(run_id) == 20
        assert store.create_branch(run_id, 0, 3) == 1


def test_failure_is_not_lost_at_close(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    store.append_batch("r-missing", 0, 0, 9, b"x")
    with pytest.raises(StoreError, match="FOREIGN KEY"):
        store.close()


def test_store_modules_do_not_import_the_ui() -> None:
    code = (
        "import sys, runtime.record.sqlite_store, runtime.record.migrations; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')))"
    )
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True
    )
    assert done.stdout.strip() == "[]"


def test_reads_from_other_threads(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "runs.db") as store:
        run_id = store.create_run(meta())
        for first in range(0, 1000, 10):
            store.append_batch(run_id, 0, first, first + 9, b"%d" % first)
        counts: list[int] = []

        def read() -> None:
            counts.append(len(store.batches(run_id, 0, 0, 999)))

        threads = [threading.Thread(target=read) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert counts == [100] * 4


def test_two_stores_on_one_file(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as one, SQLiteStore(path) as two:
        run_id = one.create_run(meta())
        assert two.create_branch(run_id, 0, 3) == 1
        assert one.create_branch(run_id, 0, 3) == 2
        one.append_batch(run_id, 0, 0, 3, b"a")
        one.flush()
        assert two.step_count(run_id) == 4


# --- migrations and files that are not ours ------------------------------------------------


def test_migrates_an_empty_v0_file(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    sqlite3.connect(path).close()  # an empty SQLite database
    with SQLiteStore(path) as store:
        run_id = store.create_run(meta())
        assert store.get_run(run_id) is not None
    path2 = tmp_path / "v0.db"
    conn = sqlite3.connect(path2)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("INSERT INTO meta VALUES ('schema_version', '0')")
    conn.commit()
    conn.close()
    with SQLiteStore(path2) as store:
        assert store.list_runs() == []


def test_missing_migrations_run_in_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as store:
        run_id = store.create_run(meta())

    def v2(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE runs ADD COLUMN tag TEXT")

    def v3_fails(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE tags (name TEXT)")
        conn.execute("this is not SQL")

    now = migrations.latest_version()
    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, v2, v3_fails])
    with pytest.raises(StoreError, match=rf"migration to schema v{now + 2} failed") as failure:
        SQLiteStore(path)
    assert str(path) in str(failure.value)
    conn = sqlite3.connect(path)  # v2 was rolled back with v3: still a whole v1 store
    assert conn.execute("SELECT value FROM meta").fetchone() == (str(now),)
    assert "tag" not in [row[1] for row in conn.execute("PRAGMA table_info(runs)")]
    conn.close()

    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS[: now + 1]])
    with SQLiteStore(path) as store:
        assert store.get_run(run_id) is not None
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta").fetchone() == (str(now + 1),)
    conn.close()


def refused(path: Path, *words: str) -> str:
    with pytest.raises(StoreError) as failure:
        SQLiteStore(path)
    message = str(failure.value)
    assert str(path) in message
    assert "\n" not in message
    for word in words:
        assert word in message
    return message


def test_newer_store_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    refused(path, "newer", "v99")


def test_foreign_sqlite_database_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    refused(path, "not an agency run store")
    assert path.read_bytes() == before
    assert not Path(str(path) + "-wal").exists()

    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("PRAGMA application_id = 1234")
    conn.commit()
    conn.close()
    refused(other, "another application")


def test_garbage_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    path.write_bytes(os.urandom(8192))
    refused(path, "not a SQLite database")
    text = tmp_path / "notes.db"
    text.write_text("hello\n")
    refused(text, "not a SQLite database")


def test_truncated_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as store:
        run_id = store.create_run(meta())
        for first in range(0, 2000, 10):
            store.append_batch(run_id, 0, first, first + 9, os.urandom(300))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    refused(path, "truncated")
    path.write_bytes(data[:60])
    refused(path, "truncated")
    path.write_bytes(data[: len(data) - 100])
    refused(path, "truncated")


def test_damage_found_later_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as store:
        run_id = store.create_run(meta())
        for first in range(0, 4000, 10):
            store.append_batch(run_id, 0, first, first + 9, b"x" * 200)
    data = bytearray(path.read_bytes())
    page_size = int.from_bytes(data[16:18], "big")
    for at in range(2 * page_size, len(data) - page_size, page_size):
        data[at : at + 64] = os.urandom(64)  # scribble over every page but the first two
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError) as failure:
        with SQLiteStore(path) as store:
            store.batches(run_id, 0, 0, 4000)
    assert str(path) in str(failure.value)


def test_directory_is_refused(tmp_path: Path) -> None:
    refused(tmp_path, "directory")
