"""The crash matrix (DESIGN.md §7): kill -9 a recorded run at many points, resume it, and check
that nothing was lost and nothing was done twice.

The program makes 40 model calls and 121 effects (a `write` per item, a `destructive` def per
item that writes a file of its own, a `saveToDisk` at the end). It is first run without
interruption, as `agency run` in a process of its own, for the reference result, files and
steps. Then,
for each of 50 kill points drawn with `random.Random(1234)` (a step count, plus a few
milliseconds), a fresh run is started, the store is polled until it has recorded that many
steps, the process gets SIGKILL, and `agency resume` finishes the run; every fifth resume is
itself killed and resumed again.

Checked for every kill point:

- the result and every file equal the uninterrupted run's (no temporary file is left over);
- no effect ran twice: every file that existed when the process was killed is stamped (its
  mtime set to a sentinel) before the resume; a resumed run that wrote it again would give it a
  new inode and mtime. A file is never found half-written (writes are atomic). The effect
  journal holds exactly the reference run's effects, each once;
- no completed step was lost: the resume continued after the last step the store had when the
  process died, and the finished run has the reference run's steps, statement for statement;
- the killed run shows as `interrupted` (its process is gone) before it is resumed.

Each command is a process of its own, forked from a server that has imported the `agency`
command once (`tests/runtime/agency_forks.py`): the kills and the resumes are those of real
processes, without the Python start-up that was most of this test's CPU.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.runtime.agency_forks import Forked, Forks

REPO = Path(__file__).resolve().parents[2]
SEED = 1234
KILL_POINTS = 50
WORKERS = 3  # cases run at once (each is one or two processes at a time)
SENTINEL_NS = 1_000_000_007_000_000_000  # an mtime no write now can give a file (in 2001)

PROGRAM = """\
destructive def commit(i: number, answer: string) {
  write("d${i}.txt", "commit ${i}: ${answer}") with approve
  return "committed ${i}"
}

node main() {
  let log = []
  for (i in range(40)) {
    const a = llm("item ${i}")
    write("f${i}.txt", "item ${i} = ${a}") with approve
    const c = commit(i, a)
    log.push(c)
  }
  saveToDisk(log, "log.json")
  return log.length
}
"""
MOCKS = [{"return": f"answer-{i}"} for i in range(40)]
STORE_FILES = {"runs.db", "runs.db-wal", "runs.db-shm", "crash.agency", "mocks.json"}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("AGENCY_MODEL", None)
    env.pop("AGENCY_LLM_MOCKS", None)
    env.pop("AGENCY_DB", None)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


_FORKS: list[Forks] = []  # the module's one fork server per thread (see `forks`)


@pytest.fixture(scope="module", autouse=True)
def forks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Forks]:
    made = Forks(_env(), tmp_path_factory.mktemp("crash-output"))
    _FORKS.append(made)
    try:
        yield made
    finally:
        _FORKS.remove(made)
        made.close()


def _workdir(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "crash.agency").write_text(PROGRAM)
    (path / "mocks.json").write_text(json.dumps(MOCKS))
    return path


def _files(work: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in work.iterdir() if p.name not in STORE_FILES}


def _run_id(work: Path) -> str:
    with sqlite3.connect(f"file:{work / 'runs.db'}?mode=ro", uri=True, timeout=5) as conn:
        return str(conn.execute("SELECT id FROM runs").fetchone()[0])


def _timeline(work: Path) -> dict[str, Any]:
    from runtime.record.sqlite_store import SQLiteStore
    from runtime.runs.fork import Timeline

    with SQLiteStore(work / "runs.db") as store:
        run = store.list_runs(5)[0]
        tl = Timeline(store, run.id, 0)
        steps = [
            (loc.scope, loc.path) if loc else None for loc in map(tl.location_at, range(len(tl)))
        ]
        effects = store.effects(run.id)
        return {
            "status": run.status,
            "steps": steps,
            "effects": sorted((e.key.split(":", 1)[1], e.kind, e.status) for e in effects),
            "found_done": sum(
                1 for e in store.events(run.id, 0, kind="effect") if "found done" in e.summary
            ),
        }


def _start(work: Path, *args: str) -> Forked:
    return _FORKS[-1].start(work, *args, "--db", "runs.db", "--json")


def _kill_after(
    proc: Forked, work: Path, steps: int, delay: float, floor: int = 0
) -> tuple[int | None, str, str]:
    """SIGKILL `proc` once the store holds `steps` steps (then `delay` seconds more). Returns
    the steps the store held when it died (None if the process ended first) and its output."""
    db = work / "runs.db"
    conn = None
    killed = False
    try:
        while proc.poll() is None:
            if conn is None and db.exists():
                conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
            count = 0
            if conn is not None:
                try:
                    row = conn.execute("SELECT step_count FROM runs").fetchone()
                    count = row[0] if row else 0
                except sqlite3.Error:
                    count = 0
            if count >= max(steps, floor + 1):
                if delay:
                    time.sleep(delay)
                proc.send_signal(signal.SIGKILL)
                killed = True
                break
            time.sleep(0.0005)
    finally:
        if conn is not None:
            conn.close()
    out, err = proc.communicate()
    if not killed or proc.returncode != -signal.SIGKILL:
        return None, out, err
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as c:
        return int(c.execute("SELECT step_count FROM runs").fetchone()[0]), out, err


def _stamp(work: Path) -> dict[str, tuple[bytes, int]]:
    """Every file the killed process left, with its inode; each gets the sentinel mtime."""
    out = {}
    for p in work.iterdir():
        if p.name in STORE_FILES or p.name.endswith(".agency-tmp"):
            continue  # the store; a write the kill cut short (the file itself is untouched)
        out[p.name] = (p.read_bytes(), p.stat().st_ino)
        os.utime(p, ns=(SENTINEL_NS, SENTINEL_NS))
    return out


def _resume(work: Path, run_id: str) -> subprocess.CompletedProcess[str]:
    return _FORKS[-1].run(work, "resume", run_id, "--db", "runs.db", "--json", timeout=120)


def _reaped(work: Path, run_id: str) -> str:
    from runtime.record.sqlite_store import SQLiteStore
    from runtime.runs.processes import reap_dead_runs

    with SQLiteStore(work / "runs.db") as store:
        reap_dead_runs(store)
        run = store.get_run(run_id)
        return str(run.status if run else "missing")


def _result(work: Path) -> Any:
    with sqlite3.connect(f"file:{work / 'runs.db'}?mode=ro", uri=True, timeout=5) as conn:
        return json.loads(conn.execute("SELECT result_json FROM runs").fetchone()[0])


def _resumed_after(stderr: str) -> int:
    for line in stderr.splitlines():
        if "resuming run" in line and "after step" in line:
            return int(line.split("after step")[1].split()[0])
    raise AssertionError(f"no resume notice in:\n{stderr}")


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = _workdir(tmp_path_factory.mktemp("crash") / "reference")
    proc = _start(work, "run", "crash.agency", "--mock", "mocks.json")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    tl = _timeline(work)
    assert tl["status"] == "finished"
    assert len(tl["effects"]) == 121
    return {"result": out.strip().splitlines()[-1], "files": _files(work), **tl}


def _case(
    index: int,
    base: Path,
    target: int,
    delay: float,
    again: tuple[int, float] | None,
    reference: dict[str, Any],
) -> dict[str, Any]:
    kills = []
    for attempt in range(4):
        # Near the end the run may finish before the signal lands: then kill earlier.
        work = _workdir(base / f"case{index:02d}-{attempt}")
        proc = _start(work, "run", "crash.agency", "--mock", "mocks.json")
        killed_at, _, _ = _kill_after(proc, work, max(1, target - 25 * attempt), delay)
        run_id = _run_id(work)
        if killed_at is not None and _reaped(work, run_id) == "interrupted":
            break
    else:
        raise AssertionError(f"case {index}: the run always finished before it was killed")
    kills.append(killed_at)
    before = _stamp(work)
    done: Any = None
    if again is not None:  # kill the resume too, later on, then resume once more
        proc = _start(work, "resume", run_id)
        second, out, err = _kill_after(proc, work, again[0], again[1], floor=killed_at)
        if second is not None and _reaped(work, run_id) == "finished":
            second = None  # the signal landed as the finished process was exiting
        if second is None:  # it finished first: that is the resume to check
            done = subprocess.CompletedProcess(["agency", "resume", run_id], 0, out, err)
        else:
            kills.append(second)
            for name, (data, ino) in _stamp(work).items():
                before.setdefault(name, (data, ino))
    if done is None:
        done = _resume(work, run_id)
    detail = f"case {index} (killed at {kills}):\n{done.stderr}"
    assert done.returncode == 0, detail
    if done.stdout.strip():
        assert done.stdout.strip().splitlines()[-1] == reference["result"], detail
    assert json.dumps(_result(work)) == reference["result"], detail
    assert _resumed_after(done.stderr) == kills[-1] - 1, detail  # no completed step lost
    files = _files(work)
    assert files == reference["files"], detail  # also: no temporary file left over
    rewritten = []
    for name, (data, ino) in before.items():
        assert data == reference["files"].get(name), f"{detail}\n{name} was half written"
        st = (work / name).stat()
        if st.st_ino != ino or st.st_mtime_ns != SENTINEL_NS:
            rewritten.append(name)
    assert not rewritten, f"{detail}\neffects done twice: {rewritten}"
    tl = _timeline(work)
    assert tl["status"] == "finished", detail
    assert tl["steps"] == reference["steps"], detail
    assert tl["effects"] == reference["effects"], detail
    return {"kills": kills, "files_before": len(before), "found_done": tl["found_done"]}


def test_kill_9_at_50_points_then_resume(reference: dict[str, Any], tmp_path: Path) -> None:
    started = time.perf_counter()
    rng = random.Random(SEED)
    total = len(reference["steps"])
    cases = []
    for i in range(KILL_POINTS):
        target = rng.randrange(1, total - 12)
        delay = rng.uniform(0, 0.004)
        again = None
        if i % 5 == 4:
            again = (rng.randrange(target + 1, total - 4), rng.uniform(0, 0.004))
        cases.append((i, tmp_path, target, delay, again, reference))
    with ThreadPoolExecutor(WORKERS) as pool:
        outcomes = list(pool.map(lambda c: _case(*c), cases))
    kills = sum(len(o["kills"]) for o in outcomes)
    resumes = kills
    elapsed = time.perf_counter() - started
    report = (
        f"crash matrix: {kills} kills at steps {sorted(k for o in outcomes for k in o['kills'])}, "
        f"{resumes} resumes, {len(reference['effects'])} effects per run, "
        f"{sum(o['files_before'] for o in outcomes)} files stamped before resuming, none rewritten; "
        f"{sum(o['found_done'] for o in outcomes)} in-doubt effects found done; {elapsed:.1f}s"
    )
    print(report)
    assert kills >= KILL_POINTS
