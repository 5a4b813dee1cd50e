"""The run lifecycle (DESIGN.md §7): resume, replay, the side-effect journal, interrupts across
processes, Ctrl-C. The kill -9 matrix is in test_crash_matrix.py."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import conformance_cases
import pytest

from runtime.errors import AgencyError
from runtime.language.program import load_program
from runtime.record.sqlite_store import SQLiteStore
from runtime.record.store import MemoryStore
from runtime.runs.journal import StoreJournal
from runtime.runs.processes import mark_running, reap_dead_runs
from runtime.runs.recording import record_program, start_run
from runtime.runs.replay import replay_run
from runtime.runs.resume import resume_run
from runtime.runs.runner import RunConfig, decision_from, new_machine
from runtime.runs.stopping import record_answer
from runtime.vm.values import to_plain
from runtime.vm.writelog import HALTED

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = REPO / "tests" / "programs"
DIVERGED = re.compile(r"^diverged at step (\d+) \((.+):(\d+)\): recorded (.+), now (.+)$")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for key in ("AGENCY_MODEL", "AGENCY_LLM_MOCKS", "AGENCY_DB"):
        env.pop(key, None)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def agency(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`agency ARGS` in a process of its own (stdin is not a terminal: nobody answers)."""
    return subprocess.run(
        [sys.executable, "-c", "from debugger.cli import main; main()", *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def _ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout


def _run_id(stderr: str) -> str:
    found = re.search(r"recording run (\S+)", stderr)
    assert found, stderr
    return found.group(1)


def _status(work: Path, run_id: str) -> str:
    with sqlite3.connect(work / "runs.db") as conn:
        return str(conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()[0])


# ----------------------------------------------------------------------------------------------
# Replay equality over every conformance program


_PARAMS = conformance_cases.params()


@pytest.mark.parametrize(("suite", "index"), _PARAMS)
def test_replay_equals_the_record_for_every_conformance_program(
    suite: str, index: int, tmp_path: Path
) -> None:
    case = conformance_cases.load(suite, index)
    test, program, args, named = case.test, case.program, case.args, case.named
    answer = case.answers()

    work, elsewhere = tmp_path / "work", tmp_path / "replay"
    work.mkdir()
    elsewhere.mkdir()
    config = RunConfig(
        node=test.get("nodeName", "main"),
        args=args,
        named=named,
        mocks=test.get("llmMocks"),
        root=str(work),
        quiet=True,
        fake_clock=bool(test.get("fakeClock")),
        fetch_mocks=case.fetch_mocks,
    )
    if config.mocks is None:
        config.model_spec = "sim"
    store = MemoryStore()
    rec = record_program(program, config, store, answer)
    run = store.get_run(rec.run_id)
    # Replayed in an empty directory: reads come from the record, writes are not performed.
    m, divergence = replay_run(store, run, quiet=True, root=elsewhere)
    assert divergence is None
    assert m.status == rec.machine.status
    assert json.dumps(to_plain(m.result)) == json.dumps(to_plain(rec.machine.result))
    assert m.output == rec.machine.output
    assert list(elsewhere.iterdir()) == []


def _files(root: Path) -> dict[str, str]:
    """A directory's files, with what differs between two runs of one program (the run id and
    the time in a saved checkpoint) blanked."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_dir():  # a directory the program made is compared through its files
            out[p.relative_to(root).as_posix() + "/"] = ""
            continue
        text = p.read_text(encoding="utf-8", errors="replace")
        text = re.sub(r'"(run_id|created_at)": "[^"]*"', r'"\1": ""', text)
        out[p.relative_to(root).as_posix()] = text
    return out


@pytest.mark.parametrize(("suite", "index"), _PARAMS)
def test_resume_after_a_crash_equals_the_uninterrupted_run_for_every_conformance_program(
    suite: str, index: int, tmp_path: Path
) -> None:
    """Each program is stopped (as if killed: what the recorder had not stored is lost) at a
    fifth, half and four fifths of its steps, then resumed: same result, same files."""
    from runtime.llm.registry import config_of
    from runtime.vm.writelog import INTERRUPTED

    case = conformance_cases.load(suite, index)
    test, program, args, named = case.test, case.program, case.args, case.named
    answers = case.answers

    def config(root: Path) -> RunConfig:
        c = RunConfig(
            node=test.get("nodeName", "main"),
            args=args,
            named=named,
            mocks=test.get("llmMocks"),
            root=str(root),
            quiet=True,
            fake_clock=bool(test.get("fakeClock")),
            fetch_mocks=case.fetch_mocks,
        )
        if c.mocks is None:
            c.model_spec = "sim"
        return c

    ref_root = tmp_path / "reference"
    ref_root.mkdir()
    store = MemoryStore()
    ref = record_program(program, config(ref_root), store, answers())
    total = store.step_count(ref.run_id)
    expected = (ref.machine.status, json.dumps(to_plain(ref.machine.result)), _files(ref_root))
    for point in sorted({max(1, total // 5), max(1, total // 2), max(1, total * 4 // 5)}):
        root = tmp_path / f"at{point}"
        root.mkdir()
        store = MemoryStore()
        cfg = config(root)
        model = cfg.make_model()
        machine = new_machine(program, cfg, model=model)
        run_config = {**config_of(model), "seed": cfg.seed}
        if cfg.mocks is not None:
            run_config["mocks"] = cfg.mocks
        if cfg.fetch_mocks is not None:
            run_config["fetchMocks"] = cfg.fetch_mocks
        rec = start_run(program, machine, store, run_config)
        machine.host.journal = StoreJournal(store, rec.run_id)
        answer = answers()
        while machine.step_index < point and not machine.done:
            machine.step(point - machine.step_index)
            if machine.status == INTERRUPTED:
                decision = answer(machine.pending)
                if decision is None:
                    break
                record_answer(store, rec.run_id, 0, machine.step_index, decision)
                machine.answer_interrupt(decision)
        if machine.done:
            continue
        machine.wlog = None  # killed: nothing more is recorded
        store.update_run(rec.run_id, status="interrupted")
        resumed = resume_run(store, store.get_run(rec.run_id), answer=answer, root=root, quiet=True)
        got = (resumed.status, json.dumps(to_plain(resumed.result)), _files(root))
        assert got == expected, f"stopped at step {point} of {total}"


# ----------------------------------------------------------------------------------------------
# Divergence after an edit

AGENT = """\
node main() {
  let total = 0
  for (i in range(3)) {
    const a: number = llm("give a number")
    write("f${i}.txt", "value ${a}") with approve
    total = total + a
  }
  print("total", total)
  return total
}
"""
MOCKS = json.dumps([{"return": 1}, {"return": 2}, {"return": 3}])


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "agent.agency").write_text(AGENT)
    (tmp_path / "mocks.json").write_text(MOCKS)
    proc = agency(
        tmp_path, "run", "agent.agency", "--mock", "mocks.json", "--db", "runs.db", "--json"
    )
    assert _ok(proc).splitlines() == ["total 6", "6"]
    return tmp_path, _run_id(proc.stderr)


def _replay(work: Path, run_id: str, then_live: bool = False) -> tuple[Any, str | None]:
    with SQLiteStore(work / "runs.db") as store:
        m, divergence = replay_run(store, store.get_run(run_id), quiet=True, then_live=then_live)
        return m, divergence


def _edit(work: Path, old: str, new: str) -> None:
    path = work / "agent.agency"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_replay_of_an_unchanged_program_is_the_record(recorded: tuple[Path, str]) -> None:
    work, run_id = recorded
    for p in work.glob("f*.txt"):
        p.unlink()
    m, divergence = _replay(work, run_id)
    assert divergence is None and m.result == 6
    assert not list(work.glob("f*.txt"))  # no effect performed


def test_moving_code_is_not_a_divergence(recorded: tuple[Path, str]) -> None:
    work, run_id = recorded
    _edit(work, "  let total = 0\n", "  // a comment\n\n  let total = 0\n")
    _edit(work, 'print("total", total)', 'print( "total",  total )')
    assert _replay(work, run_id)[1] is None


@pytest.mark.parametrize(
    ("old", "new", "step", "line", "was", "now"),
    [
        (
            "  let total = 0\n",
            '  let total = 0\n  print("hi")\n',
            1,
            3,
            "`for (i in range(3))`",
            '`print("hi")`',
        ),
        (
            "give a number",
            "give me a number",
            2,
            4,
            'a model call with prompt "give a number"',
            'prompt "give me a number"',
        ),
        (
            "value ${a}",
            "VALUE ${a}",
            4,
            5,
            "write f0.txt (mode overwrite, bytes 7, sha256 ",
            "write f0.txt (mode overwrite, bytes 7, sha256 ",
        ),
        ('write("f${i}.txt"', 'write("g${i}.txt"', 4, 5, "write f0.txt", "write g0.txt"),
        ("total + a", "total + 2 * a", 5, 6, "`total = total + a`", "`total = total + 2 * a`"),
        ("range(3)", "range(4)", 1, 3, "`for (i in range(3))`", "`for (i in range(4))`"),
        ('  print("total", total)\n', "", 17, 8, '`print("total", total)`', "`return total`"),
    ],
    ids=["statement", "prompt", "contents", "file", "arithmetic", "loop", "fewer"],
)
def test_divergence_after_an_edit(
    recorded: tuple[Path, str], old: str, new: str, step: int, line: int, was: str, now: str
) -> None:
    work, run_id = recorded
    _edit(work, old, new)
    m, divergence = _replay(work, run_id)
    assert divergence is not None
    found = DIVERGED.match(divergence)
    assert found, divergence
    assert (int(found.group(1)), Path(found.group(2)).name, int(found.group(3))) == (
        step,
        "agent.agency",
        line,
    ), divergence
    assert found.group(4).startswith(was) and found.group(5).startswith(now), divergence


def test_replay_cli_reports_the_divergence_and_then_live_goes_on(
    recorded: tuple[Path, str],
) -> None:
    work, run_id = recorded
    _edit(work, "range(3)", "range(4)")
    (work / "mocks.json").write_text(json.dumps([{"return": n} for n in (1, 2, 3, 10)]))
    proc = agency(work, "replay", run_id, "--db", "runs.db")
    assert proc.returncode == 4
    assert re.search(
        r"agency: diverged at step 1 \(.*agent\.agency:3\): recorded `for \(i in range\(3\)\)`, now `for \(i in range\(4\)\)`",
        proc.stderr,
    ), proc.stderr
    assert not (work / "f3.txt").exists()
    # The recorded mocks are what the live part gets: a scripted queue goes on from 3 answers.
    proc = agency(work, "replay", run_id, "--db", "runs.db", "--then-live", "--json")
    with SQLiteStore(work / "runs.db") as store:
        mocks = store.get_run(run_id).config["mocks"]
    assert len(mocks) == 3
    assert proc.returncode == 1 and "mock queue is exhausted" in proc.stderr, proc.stderr
    assert "continued live" not in proc.stdout


def test_replay_from_a_step_shows_output_from_there(tmp_path: Path) -> None:
    (tmp_path / "p.agency").write_text(
        'node main() {\n  for (i in range(5)) {\n    print("line", i)\n  }\n  return 5\n}\n'
    )
    _ok(agency(tmp_path, "run", "p.agency", "--db", "runs.db"))
    # print("line", 2) is the statement of step 5: from step 6 on, the output is lines 3 and 4.
    out = _ok(agency(tmp_path, "replay", "--last", "--db", "runs.db", "--from", "6", "--json"))
    assert out.splitlines() == ["line 3", "line 4", "5"]
    out = _ok(agency(tmp_path, "replay", "--last", "--db", "runs.db", "--json"))
    assert out.splitlines() == ["line 0", "line 1", "line 2", "line 3", "line 4", "5"]


# ----------------------------------------------------------------------------------------------
# Resume refused on a changed source or model, accepted with --force

STOPS = """\
node main() {
  const a = llm("first")
  write("a.txt", a) with approve
  const ok = interrupt("go on?")
  const b = llm("second")
  write("b.txt", b) with approve
  return [a, b, ok]
}
"""


@pytest.fixture
def waiting(tmp_path: Path) -> tuple[Path, str]:
    """A run that ended waiting on an interrupt (exit 3), saved as interrupted."""
    (tmp_path / "stops.agency").write_text(STOPS)
    (tmp_path / "mocks.json").write_text(json.dumps([{"return": "A"}, {"return": "B"}]))
    proc = agency(tmp_path, "run", "stops.agency", "--mock", "mocks.json", "--db", "runs.db")
    assert proc.returncode == 3, proc.stderr
    run_id = _run_id(proc.stderr)
    assert f"agency resume {run_id} --approve" in proc.stderr
    assert _status(tmp_path, run_id) == "interrupted"
    assert (tmp_path / "a.txt").read_text() == "A"
    return tmp_path, run_id


def test_resume_approve_in_another_process_finishes_the_run(waiting: tuple[Path, str]) -> None:
    work, run_id = waiting
    (work / "a.txt").write_text("touched")  # the first write is journaled: it is not done again
    out = _ok(agency(work, "resume", run_id, "--approve", "--db", "runs.db", "--json"))
    assert json.loads(out.splitlines()[-1]) == ["A", "B", True]
    assert (work / "a.txt").read_text() == "touched"
    assert (work / "b.txt").read_text() == "B"
    assert _status(work, run_id) == "finished"
    # The answer is in the record: replay goes through the interrupt by itself.
    with SQLiteStore(work / "runs.db") as store:
        run = store.get_run(run_id)
        assert run.step_count > 0
        m, divergence = replay_run(store, run, quiet=True)
    assert divergence is None and to_plain(m.result) == ["A", "B", True]
    proc = agency(work, "resume", run_id, "--db", "runs.db")
    assert proc.returncode != 0 and "already finished" in proc.stderr


@pytest.mark.parametrize(
    ("how", "expected", "code"),
    [(["--reject"], None, 0), (["--resolve", '"maybe"'], ["A", "B", "maybe"], 0)],
)
def test_resume_reject_or_resolve(
    waiting: tuple[Path, str], how: list[str], expected: Any, code: int
) -> None:
    work, run_id = waiting
    proc = agency(work, "resume", run_id, *how, "--db", "runs.db", "--json")
    assert proc.returncode == code, proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1])
    if expected is None:
        assert result["success"] is False and result["error"] == "interrupt rejected"
    else:
        assert result == expected


def test_resume_without_an_answer_stays_waiting(waiting: tuple[Path, str]) -> None:
    work, run_id = waiting
    proc = agency(work, "resume", "--last", "--db", "runs.db")
    assert proc.returncode == 3 and "waiting on an interrupt: go on?" in proc.stderr
    assert _status(work, run_id) == "interrupted"
    _ok(agency(work, "resume", run_id, "--approve", "--db", "runs.db"))


def test_resume_refused_on_a_changed_source_accepted_with_force(waiting: tuple[Path, str]) -> None:
    work, run_id = waiting
    path = work / "stops.agency"
    path.write_text(path.read_text().replace("return [a, b, ok]", 'return [a, b, ok, "edited"]'))
    proc = agency(work, "resume", run_id, "--approve", "--db", "runs.db")
    assert proc.returncode == 1
    assert "stops.agency (or a file it imports) changed since the run was recorded" in proc.stderr
    assert "--force" in proc.stderr
    assert not (work / "b.txt").exists()
    out = _ok(agency(work, "resume", run_id, "--approve", "--force", "--db", "runs.db", "--json"))
    assert json.loads(out.splitlines()[-1]) == ["A", "B", True, "edited"]


def test_resume_refused_on_a_changed_model_accepted_with_force(waiting: tuple[Path, str]) -> None:
    work, run_id = waiting
    proc = agency(work, "resume", run_id, "--approve", "--model", "sim", "--db", "runs.db")
    assert proc.returncode == 1
    assert (
        'provider "mock" then, "sim" now' in proc.stderr
        and 'model "mock" then, "sim" now' in proc.stderr
    ), proc.stderr
    assert _status(work, run_id) == "interrupted"
    out = _ok(
        agency(
            work,
            "resume",
            run_id,
            "--approve",
            "--model",
            "sim",
            "--force",
            "--db",
            "runs.db",
            "--json",
        )
    )
    a, b, ok = json.loads(out.splitlines()[-1])
    assert a == "A" and b.startswith("[sim]") and ok is True
    with SQLiteStore(work / "runs.db") as store:
        assert store.get_run(run_id).config["provider"] == "sim"


def test_resume_last_picks_the_latest_run(waiting: tuple[Path, str]) -> None:
    work, first = waiting
    proc = agency(work, "run", "stops.agency", "--mock", "mocks.json", "--db", "runs.db")
    second = _run_id(proc.stderr)
    proc = agency(work, "resume", "--last", "--approve", "--db", "runs.db")
    _ok(proc)
    assert _status(work, second) == "finished" and _status(work, first) == "interrupted"


# ----------------------------------------------------------------------------------------------
# Processes: a killed run shows as interrupted; Ctrl-C


def test_a_run_whose_process_died_is_marked_interrupted(tmp_path: Path) -> None:
    program = load_program(_write(tmp_path, "node main() {\n  return 1\n}\n"))
    with SQLiteStore(tmp_path / "runs.db") as store:
        rec = start_run(program, new_machine(program, RunConfig(model_spec="sim")), store)
        mark_running(store, rec.run_id)
        assert reap_dead_runs(store) == []  # this process is alive
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        run = store.get_run(rec.run_id)
        meta = dict(run.meta)
        meta["process"] = dict(meta["process"], pid=dead.pid)
        store.update_run(rec.run_id, meta=meta)
        assert reap_dead_runs(store) == [rec.run_id]
        run = store.get_run(rec.run_id)
        assert run.status == "interrupted" and f"pid {dead.pid}" in run.error
        meta["process"] = dict(meta["process"], pid=os.getppid(), started=1.0)  # pid reused
        store.update_run(rec.run_id, meta=meta, status="running")
        assert reap_dead_runs(store) == [rec.run_id]
        meta["process"] = dict(meta["process"], host="elsewhere")
        store.update_run(rec.run_id, meta=meta, status="running")
        assert reap_dead_runs(store) == []  # cannot tell: left as it is
        with pytest.raises(AgencyError, match="still running"):
            resume_run(store, store.get_run(rec.run_id))


def _write(tmp_path: Path, text: str, name: str = "p.agency") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


LONG = """\
node main() {
  let n = 0
  for (i in range(3000000)) {
    n = n + 1
  }
  write("done.txt", "n=${n}") with approve
  return n
}
"""


def test_ctrl_c_saves_the_run_as_interrupted_and_resume_finishes_it(tmp_path: Path) -> None:
    _write(tmp_path, LONG)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from debugger.cli import main; main()",
            "run",
            "p.agency",
            "--db",
            "runs.db",
            "--json",
        ],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    deadline = time.monotonic() + 60
    count = 0
    while count < 2000 and time.monotonic() < deadline:
        time.sleep(0.02)
        try:
            with sqlite3.connect(f"file:{tmp_path / 'runs.db'}?mode=ro", uri=True) as conn:
                row = conn.execute("SELECT step_count FROM runs").fetchone()
                count = row[0] if row else 0
        except sqlite3.Error:
            pass
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    run_id = _run_id(err)
    assert f"agency resume {run_id}" in err and "Traceback" not in err
    assert _status(tmp_path, run_id) == "interrupted"
    assert not (tmp_path / "done.txt").exists()
    with SQLiteStore(tmp_path / "runs.db") as store:
        stopped_at = store.get_run(run_id).step_count
    proc = agency(tmp_path, "resume", run_id, "--db", "runs.db", "--json")
    assert _ok(proc).splitlines()[-1] == "3000000"
    assert f"after step {stopped_at - 1} " in proc.stderr
    assert (tmp_path / "done.txt").read_text() == "n=3000000"


# ----------------------------------------------------------------------------------------------
# The effect journal, in one process: destructive and idempotent defs, reads

COUNTER = """\
destructive def bump(name: string) {
  const old = read(name) catch "" with approve
  write(name, "${old}x") with approve
  return old.length + 1
}

idempotent destructive def stamp(n: number) {
  write("stamp.txt", "stamp ${n}") with approve
  return n
}

node main() {
  write("count.txt", "") with approve
  let seen = []
  for (i in range(6)) {
    seen.push(bump("count.txt"))
    stamp(i)
  }
  return seen
}
"""


def _crash_after(program: Any, store: Any, root: Path, steps: int) -> str:
    """Record a run of `program` for `steps` steps and abandon it like a killed process would
    (what the store has committed stays; the rest is gone)."""
    machine = new_machine(program, RunConfig(model_spec="sim", root=str(root), quiet=True))
    rec = start_run(program, machine, store, {"provider": "sim", "model": "sim", "spec": "sim"})
    mark_running(store, rec.run_id, root, program)
    machine.host.journal = StoreJournal(store, rec.run_id)
    machine.step(steps)
    store.flush()
    machine.wlog = None  # the process is gone: nothing more is recorded
    store.update_run(rec.run_id, status="interrupted")
    return rec.run_id


@pytest.mark.parametrize("steps", [3, 7, 8, 9, 12, 20, 33])
def test_destructive_defs_and_reads_after_a_crash(tmp_path: Path, steps: int) -> None:
    program = load_program(_write(tmp_path, COUNTER))
    with SQLiteStore(tmp_path / "runs.db") as store:
        run_id = _crash_after(program, store, tmp_path, steps)
        before = (tmp_path / "count.txt").read_text() if (tmp_path / "count.txt").exists() else None
        m = resume_run(store, store.get_run(run_id))
        assert m.status == HALTED, m.error
        assert to_plain(m.result) == [1, 2, 3, 4, 5, 6]
        assert (tmp_path / "count.txt").read_text() == "xxxxxx"  # each bump once
        assert (tmp_path / "stamp.txt").read_text() == "stamp 5"
        kinds = [e.kind for e in store.effects(run_id)]
        assert (
            kinds.count("def bump") == 6 and "def stamp" not in kinds
        )  # idempotent: not journaled
        assert kinds.count("write") == 1 + 6 + 6
        m2, divergence = replay_run(store, store.get_run(run_id), quiet=True)
        assert divergence is None and to_plain(m2.result) == [1, 2, 3, 4, 5, 6]
        assert before is None or len(before) <= 6


def test_a_journaled_destructive_def_returns_its_recorded_result(tmp_path: Path) -> None:
    """The def completed (journaled) but the steps after its call were never recorded: the
    resumed run executes it again, for the step count, and gets the journaled result."""
    program = load_program(
        _write(
            tmp_path,
            'destructive def fetch() {\n  return read("src.txt") catch "" with approve\n}\n'
            "node main() {\n  const a = fetch()\n  let n = 0\n"
            "  for (i in range(30)) {\n    n = n + 1\n  }\n  return [a, n]\n}\n",
        )
    )
    (tmp_path / "src.txt").write_text("old")
    with SQLiteStore(tmp_path / "runs.db") as store:
        run_id = _crash_after(program, store, tmp_path, 20)
        assert [e.kind for e in store.effects(run_id)] == ["def fetch"]
        store.truncate_after(run_id, 0, 0)  # as if only step 0 had reached the disk
        (tmp_path / "src.txt").write_text("new")
        m = resume_run(store, store.get_run(run_id))
        assert to_plain(m.result) == ["old", 30]
        m, divergence = replay_run(store, store.get_run(run_id), quiet=True)
        assert divergence is None and to_plain(m.result) == ["old", 30]


def test_effects_are_atomic_and_in_doubt_effects_are_checked(tmp_path: Path) -> None:
    from runtime.vm.effects import atomic_write, file_holds

    target = tmp_path / "sub" / "f.txt"
    atomic_write(target, "one")
    os.chmod(target, 0o640)
    atomic_write(target, "two")
    assert target.read_text() == "two" and (target.stat().st_mode & 0o777) == 0o640
    assert [p.name for p in target.parent.iterdir()] == ["f.txt"]
    assert file_holds(target, "two") and not file_holds(target, "one")
    assert not file_holds(tmp_path / "missing", "")


def test_replay_does_not_perform_effects_even_without_a_journal(tmp_path: Path) -> None:
    program = load_program(
        _write(
            tmp_path,
            'node main() {\n  write("x.txt", "1") with approve\n  saveToDisk({a: 1}, "y.json")\n  return loadFromDisk("y.json").a\n}\n',
        )
    )
    store = MemoryStore()
    rec = record_program(
        program, RunConfig(model_spec="sim", root=str(tmp_path / "rec"), quiet=True), store
    )
    assert rec.machine.result == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    m, divergence = replay_run(store, store.get_run(rec.run_id), quiet=True, root=empty)
    assert divergence is None and m.result == 1 and list(empty.iterdir()) == []


def test_interrupt_answers_given_by_a_callback_replay(tmp_path: Path) -> None:
    program = load_program(
        _write(
            tmp_path,
            'node main() {\n  const a = interrupt("one")\n  const b = interrupt("two")\n  return [a, b]\n}\n',
        )
    )
    store = MemoryStore()
    answers = [decision_from("resolve", "x"), decision_from("approve")]
    rec = record_program(
        program, RunConfig(model_spec="sim", quiet=True), store, lambda p: answers.pop(0)
    )
    assert to_plain(rec.machine.result) == ["x", True]
    m, divergence = replay_run(store, store.get_run(rec.run_id), quiet=True)
    assert divergence is None and to_plain(m.result) == ["x", True]


def test_resume_of_a_failed_run_retries_the_failing_step(tmp_path: Path) -> None:
    _write(
        tmp_path,
        'node main() {\n  const a = llm("one")\n  write("a.txt", a) with approve\n  const b = llm("two")\n  return [a, b]\n}\n',
    )
    (tmp_path / "one.json").write_text(json.dumps([{"return": "A"}]))
    (tmp_path / "two.json").write_text(json.dumps([{"return": "A"}, {"return": "B"}]))
    proc = agency(tmp_path, "run", "p.agency", "--mock", "one.json", "--db", "runs.db")
    assert proc.returncode == 1 and "exhausted" in proc.stderr  # like a model that timed out
    run_id = _run_id(proc.stderr)
    assert _status(tmp_path, run_id) == "failed"
    proc = agency(tmp_path, "resume", run_id, "--mock", "two.json", "--db", "runs.db")
    assert proc.returncode == 1 and "scripted model answers (--mock) differ" in proc.stderr
    out = _ok(
        agency(
            tmp_path, "resume", run_id, "--mock", "two.json", "--force", "--db", "runs.db", "--json"
        )
    )
    assert json.loads(out.splitlines()[-1]) == ["A", "B"]


def test_replay_of_a_run_that_stopped_replays_what_was_recorded(waiting: tuple[Path, str]) -> None:
    work, run_id = waiting
    proc = agency(work, "replay", run_id, "--db", "runs.db")
    assert proc.returncode == 0, proc.stderr
    assert "the run is waiting there on an interrupt: go on?" in proc.stderr
    assert f"agency resume {run_id}" in proc.stderr


def test_a_run_started_from_a_checkpoint_file_is_not_re_executed(tmp_path: Path) -> None:
    _write(
        tmp_path,
        'node main() {\n  const cp = checkpoint()\n  saveToDisk(getCheckpoint(cp), "cp.json")\n  return 1\n}\n',
    )
    _ok(agency(tmp_path, "run", "p.agency", "--db", "runs.db"))
    proc = agency(tmp_path, "run", "p.agency", "--checkpoint", "cp.json", "--db", "runs.db")
    run_id = _run_id(proc.stderr)
    proc = agency(tmp_path, "replay", run_id, "--db", "runs.db")
    assert proc.returncode == 1 and "was started from a checkpoint file" in proc.stderr
