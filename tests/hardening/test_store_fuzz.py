"""Issue 11, item 8: tampered run-store rows give one line of error naming the run, or a result
read without an error; never a traceback or an internal error, and one damaged run never hides
the others (`tests/hardening/store_fuzz.py`)."""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hardening import store_fuzz as fuzz


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[fuzz.Corpus]:
    work = tmp_path_factory.mktemp("store-fuzz")
    was = tempfile.tempdir
    tempfile.tempdir = str(work)  # crash files, if any, stay in the test's folder
    try:
        yield fuzz.make_corpus(work)
    finally:
        tempfile.tempdir = was


def run_of(corpus: fuzz.Corpus, what: str) -> str:
    return next(r for r, kind in corpus.runs.items() if kind == what)


def tampered(corpus: fuzz.Corpus, sql: str, *params: object) -> Path:
    db = fuzz.fresh_copy(corpus)
    conn = sqlite3.connect(db)
    conn.execute(sql, params)
    conn.commit()
    conn.close()
    return db


def one_line_error(corpus: fuzz.Corpus, run_id: str, *args: str) -> str:
    cwd = os.getcwd()
    os.chdir(corpus.work)
    try:
        code, _, err = fuzz.agency(*args)
    finally:
        os.chdir(cwd)
    assert code not in (0, 70), err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and run_id in lines[0], err
    assert "internal error" not in err and "Traceback" not in err
    return lines[0]


def test_tampered_rows_are_refused_or_read(corpus: fuzz.Corpus) -> None:
    tally = fuzz.Tally()
    fuzz.fuzz(corpus, 60, tally)
    assert sum(tally.attempts.values()) == 60
    assert not tally.defects, "\n".join(tally.examples)


def test_a_keyframe_that_is_not_bytes(corpus: fuzz.Corpus) -> None:
    run = run_of(corpus, "tools")
    db = tampered(corpus, "UPDATE keyframes SET blob = 'x' WHERE run_id = ?", run)
    line = one_line_error(corpus, run, "show", f"{run}:3", "--db", str(db))
    assert "keyframe" in line and "damaged" in line
    db = tampered(corpus, "UPDATE keyframes SET blob = ? WHERE run_id = ?", 10**12, run)
    one_line_error(corpus, run, "show", run, "--db", str(db))  # not a MemoryError


def test_a_step_batch_that_does_not_add_up(corpus: fuzz.Corpus) -> None:
    run = run_of(corpus, "tools")
    db = tampered(  # every batch holds another run's steps
        corpus,
        "UPDATE step_batches SET blob ="
        " (SELECT blob FROM step_batches WHERE run_id != ?1 ORDER BY rowid LIMIT 1)"
        " WHERE run_id = ?1",
        run,
    )
    line = one_line_error(corpus, run, "show", f"{run}:3", "--db", str(db))
    assert "damaged" in line or "not recorded" in line


def test_a_damaged_config_refuses_re_execution_and_hides_nothing(corpus: fuzz.Corpus) -> None:
    run = run_of(corpus, "checkpoint")
    db = tampered(corpus, "UPDATE runs SET config_json = 'x' WHERE id = ?", run)
    for command in ("replay", "resume"):
        line = one_line_error(corpus, run, command, run, "--db", str(db))
        assert "config_json" in line and "damaged" in line
    code, out, _ = fuzz.agency("runs", "--json", "--db", str(db))
    assert code == 0 and all(r in out for r in corpus.runs)
    assert '"damaged": ["config_json"]' in out


@pytest.mark.parametrize(
    ("table", "column", "value"),
    [
        ("llm_calls", "request_json", "not json {"),
        ("llm_calls", "created_at", "yesterday"),
        ("llm_calls", "input_tokens", "many"),
        ("events", "data_json", "{"),
        ("llm_parts", "json", "{"),
    ],
)
def test_damaged_rows_of_a_call_or_event(
    corpus: fuzz.Corpus, table: str, column: str, value: str
) -> None:
    run = run_of(corpus, "tools")
    db = tampered(corpus, f"UPDATE {table} SET {column} = ? WHERE run_id = ?", value, run)
    cwd = os.getcwd()
    os.chdir(corpus.work)
    try:
        code, _, err = fuzz.agency("export", f"{run}:2", "-o", "out.json", "--db", str(db))
    finally:
        os.chdir(cwd)
    assert code != 70 and "internal error" not in err, err
    if code != 0:
        assert run in err.strip().splitlines()[-1], err


def test_a_branch_whose_fork_step_is_text(corpus: fuzz.Corpus) -> None:
    run = run_of(corpus, "finished")
    db = tampered(corpus, "UPDATE branches SET fork_step = 'x' WHERE run_id = ?", run)
    line = one_line_error(corpus, run, "show", run, "--db", str(db))
    assert "branches table is damaged" in line
    other = run_of(corpus, "tools")
    code, _, err = fuzz.agency("show", other, "--db", str(db))
    assert code == 0, err
