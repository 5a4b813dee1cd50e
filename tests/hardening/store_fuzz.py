"""Issue 11, item 8: a fuzzer of run-store rows. Real runs of the examples are recorded into a
SQLite store (a finished run, one with tool calls, one answered interrupt, one restored on a
branch, one started from a checkpoint); each attempt copies the store and tampers with one row
of one run (a step batch or keyframe blob cut short, a byte flipped, swapped with another row's;
a JSON column that does not parse or is the wrong shape; an integer column retyped, overflowed
or negative; an id pointing elsewhere), then runs every command that reads a run:
`agency runs` (table and JSON), `show RUN`, `show RUN:N`, `export`, `replay`, `resume`, and the
debugger's session over the run (`trace_session`, no UI).

Acceptable outcomes: the untampered output, any result that reads without an error, or one line
of error naming the run; never a traceback or an internal error, and the other runs are listed
and shown as they were. `python -m tests.hardening.store_fuzz [N]` prints the figures."""

from __future__ import annotations

import gc
import os
import sqlite3
import sys
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from debugger.cli import cli
from debugger.opening import trace_session
from runtime.errors import AgencyError
from runtime.record.sqlite_store import SQLiteStore

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DEEP = "[" * 100_000 + "]" * 100_000
# What a tampered column may become (sqlite keeps any type in any column).
HOSTILE: list[Any] = [
    "x",
    "",
    "not json {",
    "[]",
    "5",
    "null",
    '{"a": 1}',
    DEEP,
    -1,
    0,
    2**63 - 1,
    -(2**63),
    10**12,
    1.5,
    float("inf"),
    b"\x00\xff",
    "\ud800",
]


@dataclass
class Corpus:
    work: Path
    pristine: Path  # the untampered store
    runs: dict[str, str]  # run id -> what it is
    outputs: dict[tuple[str, ...], tuple[int, str]]  # untampered outputs, by `key`
    copies: int = 0


@dataclass
class Tally:
    attempts: Counter[str] = field(default_factory=Counter)
    defects: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)


def agency(*args: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of one command, in this process; an exception that escapes
    the command's own handling is reported as exit 70 with its traceback."""
    result = CliRunner().invoke(cli, list(args), catch_exceptions=True)
    err = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        exc = result.exception
        err += "".join(traceback.format_exception(exc))
        return 70, result.stdout, err
    return result.exit_code, result.stdout, err


def make_corpus(work: Path) -> Corpus:
    """Record the runs the attempts tamper with into `work/pristine.db`."""
    from runtime.runs.fork import Timeline

    cwd = os.getcwd()
    os.chdir(work)
    try:
        for f in EXAMPLES.iterdir():
            (work / f.name).write_text(f.read_text())
        db = work / "pristine.db"
        runs: dict[str, str] = {}

        def record(what: str, *args: str) -> str:
            code, _, err = agency("run", *args, "--db", str(db))
            assert code == 0, err
            with SQLiteStore(db, read_only=True) as store:
                run = store.latest_run()
                assert run is not None
                runs[run.id] = what
                return run.id

        dice = record("finished", "dice.agency", "--mock", "dice.mocks.json")
        record("tools", "tools.agency", "--mock", "tools.mocks.json")
        record("interrupt", "approval.agency", "--approve-all")
        with SQLiteStore(db) as store:
            tl = Timeline.open(store, dice, 0)
            tl.fork(4, {})  # a branch: the branches table and a second lineage
        code, _, err = agency("export", f"{dice}:6", "-o", "cp.json", "--db", str(db))
        assert code == 0, err
        record("checkpoint", "dice.agency", "--mock", "dice.mocks.json", "--checkpoint", "cp.json")
        corpus = Corpus(work, db, runs, {})
        for run_id in runs:
            for cmd in commands(run_id, fresh_copy(corpus)):
                code, out, _ = agency(*cmd)
                corpus.outputs[key(cmd)] = (code, out)
        return corpus
    finally:
        os.chdir(cwd)


def key(cmd: tuple[str, ...]) -> tuple[str, ...]:
    """A command without its store's path."""
    return cmd[: cmd.index("--db")]


def commands(run_id: str, db: Path) -> list[tuple[str, ...]]:
    d = ("--db", str(db))
    return [
        ("show", run_id, *d),
        ("show", f"{run_id}:3", *d),
        ("show", f"{run_id}:3", "--json", *d),
        ("export", f"{run_id}:2", "-o", "out.json", *d),
        ("replay", run_id, *d),
        ("resume", run_id, *d),
    ]


# -- tampering ---------------------------------------------------------------------------------

TABLES: dict[str, list[str]] = {
    "runs": [
        "config_json",
        "args_json",
        "meta_json",
        "result_json",
        "status",
        "step_count",
        "created_at",
        "finished_at",
        "source_path",
        "source_sha256",
        "node",
        "error",
    ],
    "branches": ["branch", "parent_branch", "fork_step", "edits_json", "length", "created_at"],
    "step_batches": ["blob", "first_step", "last_step", "branch"],
    "keyframes": ["blob", "step", "branch"],
    "events": ["step", "kind", "summary", "data_json", "branch"],
    "llm_calls": [
        "request_json",
        "response_json",
        "step",
        "input_tokens",
        "cost",
        "request_form",
        "created_at",
        "branch",
    ],
    "llm_parts": ["json", "seq"],
    "effects": ["args_json", "result_json", "step", "status", "created_at"],
}


ROW_KEYS = {"branches": "run_id, branch", "llm_parts": "run_id, branch, seq"}  # WITHOUT ROWID


@dataclass
class Tamper:
    run_id: str
    table: str
    column: str
    how: str  # what was done, for the report
    change: Callable[[sqlite3.Connection, Any], None]


@st.composite
def tampering(draw: st.DrawFn, corpus: Corpus) -> Tamper:
    run_id = draw(st.sampled_from(sorted(corpus.runs)))
    table = draw(st.sampled_from(sorted(TABLES)))
    column = draw(st.sampled_from(TABLES[table]))
    key = "id" if table == "runs" else "run_id"
    pick = draw(st.integers(0, 1000))
    kind = draw(st.sampled_from(["hostile", "truncate", "flip", "swap", "shift", "id"]))
    if kind == "hostile":
        value = draw(st.sampled_from(HOSTILE))
        how = f"= {value!r:.40}"
    else:
        value = draw(st.integers(0, 10**6))
        how = kind

    def change(conn: sqlite3.Connection, _: Any) -> None:
        pk = ROW_KEYS.get(table, "rowid")
        rows = conn.execute(
            f"SELECT {pk}, {column} FROM {table} WHERE {key} = ? ORDER BY {pk}", (run_id,)
        ).fetchall()
        if not rows:
            return
        *where, old = rows[pick % len(rows)]
        match = " AND ".join(f"{c.strip()} = ?" for c in pk.split(","))
        new: Any
        if kind == "hostile":
            new = value
        elif kind == "truncate":
            if isinstance(old, str | bytes):
                new = old[: len(old) // 2]
            else:
                new = old // 2 if isinstance(old, int) else old
        elif kind == "flip":
            if isinstance(old, bytes) and old:
                i = value % len(old)
                new = old[:i] + bytes([old[i] ^ (1 + value % 255)]) + old[i + 1 :]
            elif isinstance(old, str) and old:
                i = value % len(old)
                new = old[:i] + chr((ord(old[i]) + 1) % 0x7F or 65) + old[i + 1 :]
            else:
                new = old ^ 1 if isinstance(old, int) else 1
        elif kind == "swap":  # another row's value of the same column, any run
            others = conn.execute(f"SELECT {column} FROM {table} ORDER BY {pk}").fetchall()
            new = others[value % len(others)][0]
        elif kind == "shift":
            new = old + 1 if isinstance(old, int) else old
        else:  # id: the row moves to another run, or to none
            ids = [*sorted(corpus.runs), "rnosuchrun00"]
            new_id = ids[value % len(ids)]
            try:
                conn.execute(f"UPDATE {table} SET {key} = ? WHERE {match}", (new_id, *where))
            except sqlite3.IntegrityError:
                pass
            return
        try:
            conn.execute(f"UPDATE {table} SET {column} = ? WHERE {match}", (new, *where))
        except (sqlite3.IntegrityError, OverflowError, UnicodeEncodeError):
            pass  # a constraint the store declares (NOT NULL, CHECK, UNIQUE) holds anyway

    return Tamper(run_id, table, column if kind != "id" else key, f"{column} {how}", change)


def fresh_copy(corpus: Corpus) -> Path:
    """A copy of the pristine store at a new path (a command of an earlier attempt may still
    hold its store open in this process)."""
    for old in corpus.work.glob("scratch-*.db*"):
        old.unlink(missing_ok=True)
    if corpus.copies % 16 == 0:
        # Closes the stores the commands left open (their files are unlinked already: Linux
        # frees them at close). Every 16th attempt: a full collection walks what every test
        # before this one in the worker left alive, up to a second each time in a full run.
        gc.collect()
    corpus.copies += 1
    db = corpus.work / f"scratch-{corpus.copies}.db"
    src, dst = sqlite3.connect(corpus.pristine), sqlite3.connect(db)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()
    return db


def tamper(corpus: Corpus, t: Tamper) -> Path:
    db = fresh_copy(corpus)
    conn = sqlite3.connect(db)
    try:
        t.change(conn, None)
        conn.commit()
    finally:
        conn.close()
    return db


# -- judging -----------------------------------------------------------------------------------


def judge_command(corpus: Corpus, run_id: str, cmd: tuple[str, ...]) -> str | None:
    code, out, err = agency(*cmd)
    if code == 70 or "Traceback" in err or "internal error" in err:
        lines = err.strip().splitlines()
        return f"internal error: {lines[-1][:160] if lines else code}"
    if (code, out) == corpus.outputs.get(key(cmd)):
        return None
    if code in (0, 3):  # read without an error (a tampered value may read as another value)
        return None
    lines = [line for line in err.strip().splitlines() if line.startswith("agency: ")]
    last = lines[-1] if lines else ""
    if code == 4 and "diverged" in last:  # replay: the record no longer matches the program
        return None
    if run_id[:8] in last or "run store" in last:
        return None
    return f"unclear error (exit {code}): {err.strip()[-200:]!r}"


def judge_session(run_id: str, db: Path) -> str | None:
    try:
        with SQLiteStore(db, read_only=True) as store:
            session = trace_session(store, run_id)
            session.goto(session.last)
            session.state()
            session.goto(0)
            session.state()
    except AgencyError as exc:
        if run_id[:8] in str(exc) or "run store" in str(exc):
            return None
        return f"session error not naming the run: {exc}"
    except Exception as exc:  # noqa: BLE001 - exactly what the fuzzer looks for
        return f"session: internal error: {type(exc).__name__}: {str(exc)[:120]}"
    return None


def judge(corpus: Corpus, t: Tamper) -> list[str]:
    """What was wrong (empty when every command behaved)."""
    db = tamper(corpus, t)
    problems: list[str] = []
    code, out, err = agency("runs", "--json", "--db", str(db))
    if code != 0 or "Traceback" in err:
        problems.append(f"runs --json: exit {code}: {err.strip()[-160:]}")
    else:
        hidden = [r for r in corpus.runs if r != t.run_id and r not in out]
        if hidden:
            problems.append(f"runs --json hides {hidden}")
    code, out, err = agency("runs", "--db", str(db))
    if code != 0:
        problems.append(f"runs: exit {code}: {err.strip()[-160:]}")
    for cmd in commands(t.run_id, db):
        if cmd[0] == "resume":
            continue  # last: it writes
        problem = judge_command(corpus, t.run_id, cmd)
        if problem is not None:
            problems.append(f"{' '.join(cmd[:2])}: {problem}")
    problem = judge_session(t.run_id, db)
    if problem is not None:
        problems.append(problem)
    for other in corpus.runs:  # one damaged run never hides the others
        if other == t.run_id:
            continue
        cmd = ("show", other, "--db", str(db))
        code, out, err = agency(*cmd)
        if t.table != "runs" and (code, out) != corpus.outputs[key(cmd)]:
            # a child row moved to another run (an id tamper) may change that run: only a crash
            # is a defect then
            if not t.how.endswith(" id") or code == 70:
                problems.append(f"show of another run {other} changed: exit {code} {err[-120:]}")
        elif code == 70:
            problems.append(f"show of another run {other}: internal error")
    problem = judge_command(corpus, t.run_id, commands(t.run_id, db)[-1])
    if problem is not None:
        problems.append(f"resume: {problem}")
    return problems


def fuzz(corpus: Corpus, examples: int, tally: Tally) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        phases=(Phase.generate,),
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(t=tampering(corpus))
    def attempt(t: Tamper) -> None:
        category = t.table
        tally.attempts[category] += 1
        cwd = os.getcwd()
        os.chdir(corpus.work)
        try:
            problems = judge(corpus, t)
        finally:
            os.chdir(cwd)
        if problems:
            tally.defects[category] += 1
            if len(tally.examples) < 80:
                what = corpus.runs[t.run_id]
                tally.examples.append(f"{t.table}.{t.how} ({what}): {problems[0]}")

    attempt()


def main() -> None:
    import tempfile

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    with tempfile.TemporaryDirectory() as tmp:
        tempfile.tempdir = tmp  # crash files of internal errors stay in it
        corpus = make_corpus(Path(tmp))
        tally = Tally()
        fuzz(corpus, n, tally)
    total = sum(tally.attempts.values())
    bad = sum(tally.defects.values())
    print(f"run-store rows: {total} attempts, {total - bad} clean, {bad} defects")
    for kind in sorted(tally.attempts):
        print(f"  {kind}: {tally.attempts[kind]} attempts, {tally.defects[kind]} defects")
    for line in tally.examples:
        print("   ", line)


if __name__ == "__main__":
    main()
