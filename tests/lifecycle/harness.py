"""Provides the kill-anywhere harness: a real `agency run` in a subprocess, stopped by a signal at
a chosen point, then read, shown, replayed and resumed the way a user would, with the invariants
a user relies on checked after each step.

- `Shape`: a program of one kind (a tight loop, many scripted `llm()` calls, tool rounds against
  a model server, threads, `fork`/`parallel`, interrupts) with the files it needs.
- `LLMServer`: an OpenAI-compatible endpoint on 127.0.0.1 that answers deterministically from
  the request (so an answer asked twice is the same answer), counts every request by a key
  (the last user prompt, the length of the conversation, the last role), and can hold one
  request in flight, so a process can be killed while it waits on a model.
- `KillPoint`: where to stop a process: once the store holds N steps, once it printed N lines,
  once the server received (or answered) its Nth request; plus a few milliseconds; and how
  (SIGKILL, SIGTERM, one or two Ctrl-C).
- `reference(shape)` runs a shape without interruption; `kill_and_resume(shape, point, ...)`
  runs it again, stops it at the point, and checks:
  * `agency runs --json` and `agency show RUN[:STEP]` answer with no traceback and the run is
    `interrupted` (never `running` once its process is gone);
  * the stopped run opens in a debugging session (`trace_session`) and can be moved through;
  * `agency replay` of the stopped run calls no model (`thorough` only);
  * `agency resume` finishes it with the uninterrupted run's result and files, going on right
    after the last stored step; no file written before the stop is written again (each is
    stamped with a sentinel mtime first); no model answer stored before the stop is asked
    again, and every answer that was not stored is asked exactly once;
  * an append-only log holds every line of the uninterrupted run, in order, once: the append
    the process may have been performing when it died is checked against the file's size,
    noted in the journal before it (an append has no postcondition of its own);
  * the finished timeline equals the uninterrupted one step for step (location and kind at
    every step, the whole state at sampled steps and around the resume point), with the same
    effect journal; `agency replay` of it gives the same result and calls no model.

Run as a script (`python -m tests.lifecycle.harness --points 20`) it sweeps more points than CI.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
AGENCY = [sys.executable, "-m", "debugger"]
SENTINEL_NS = 1_000_000_007_000_000_000  # an mtime no write made now can give a file (2001)
STORE_FILES = {"runs.db", "runs.db-wal", "runs.db-shm", "runs.db-journal"}
TIMEOUT = 120.0


def agency_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for key in ("AGENCY_MODEL", "AGENCY_LLM_MOCKS", "AGENCY_DB", "OPENAI_BASE_URL"):
        env.pop(key, None)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["OPENAI_API_KEY"] = "test-key"  # the local server below takes any key
    env.update(extra)
    return env


def agency(cwd: Path, *args: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    """`agency ARGS` run to its end in `cwd` (stdin is not a terminal: nobody answers)."""
    return subprocess.run(
        [*AGENCY, *args],
        cwd=cwd,
        env=agency_env(),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
    )


def no_traceback(proc: subprocess.CompletedProcess[str], what: str) -> None:
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, (
        f"{what} crashed:\n{proc.stderr}"
    )


# -- the model server ------------------------------------------------------------------------


TOOL_ASK = re.compile(r"\[tool:(\w+):(\d+)\]")
KEY_MARK = re.compile(r"(?:«|call-)([0-9a-f]{12})")


def request_key(body: dict[str, Any]) -> str:
    """What identifies a model request across runs: the last user prompt, how long the
    conversation is and who spoke last (a tool round repeats the prompt)."""
    messages = body.get("messages") or []
    prompt = next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), "")
    last = messages[-1].get("role") if messages else ""
    text = f"{prompt}\x00{len(messages)}\x00{last}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def answer_for(body: dict[str, Any]) -> dict[str, Any]:
    """The deterministic answer to a request: a tool call when the prompt asks for one
    (`[tool:NAME:N]`) and no tool has answered yet, else text carrying the request's key."""
    messages = body.get("messages") or []
    key = request_key(body)
    prompt = next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), "")
    message: dict[str, Any] = {"role": "assistant", "content": f"answer «{key}»"}
    asked = TOOL_ASK.search(str(prompt))
    if asked and messages and messages[-1].get("role") == "user":
        name, n = asked.group(1), int(asked.group(2))
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call-{key}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps({"n": n})},
                }
            ],
        }
    return {
        "id": f"chatcmpl-{key}",
        "object": "chat.completion",
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }


class LLMServer:
    """An OpenAI-compatible server counting requests by key; `hold(n)` keeps the nth request
    from now in flight until `release()` (or the client goes away)."""

    def __init__(self) -> None:
        self.keys: list[str] = []  # every request received, in order
        self.answered = 0
        self._cond = threading.Condition()
        self._hold: int | None = None
        self._released = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                except ValueError:
                    return  # the client was killed while it sent the request
                with server._cond:
                    server.keys.append(request_key(body))
                    held = server._hold == len(server.keys)
                    server._cond.notify_all()
                if held:
                    server._released.wait(TIMEOUT)
                payload = json.dumps(answer_for(body)).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    self.wfile.flush()
                except OSError:
                    return  # the client was killed while it waited
                with server._cond:
                    server.answered += 1
                    server._cond.notify_all()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def count(self) -> int:
        with self._cond:
            return len(self.keys)

    def hold(self, n: int) -> None:
        """Keep the nth request from now (1-based) waiting for `release()`."""
        with self._cond:
            self._released.clear()
            self._hold = len(self.keys) + n

    def release(self) -> None:
        with self._cond:
            self._hold = None
        self._released.set()

    def close(self) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()


# -- programs --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """A program to kill: its source, the files beside it, and how it is run."""

    name: str
    source: str
    files: dict[str, str] = field(default_factory=dict)
    args: tuple[str, ...] = ()
    server: bool = False  # answered by `LLMServer` (else by the scripted mock or nothing)
    logs: tuple[str, ...] = ()  # append-only files: each line must appear once

    def prepare(self, work: Path) -> None:
        work.mkdir(parents=True, exist_ok=True)
        (work / "prog.agency").write_text(self.source)
        for name, text in self.files.items():
            (work / name).write_text(text)

    def run_args(self, server: LLMServer | None) -> list[str]:
        args = ["run", "prog.agency", "--db", "runs.db", "--json", *self.args]
        if server is not None:
            args += ["--model", "openai/fake-model", "--base-url", server.url]
        return args

    def inputs(self) -> set[str]:
        return {"prog.agency", *self.files}


LOOP = Shape(
    "loop",
    """\
node main() {
  let total = 0
  let marks = []
  for (i in range(20000)) {
    total = total + i
    if (i % 2000 == 0) {
      marks.push(i)
      write("progress.log", "at ${i}\\n", mode: "append") with approve
      print("tick ${i}")
    }
  }
  return {total: total, marks: marks}
}
""",
    logs=("progress.log",),
)

MOCKED = Shape(
    "mocked_llm",
    """\
def note(i: number, text: string) {
  write("answers.log", "${i}: ${text}\\n", mode: "append") with approve
  write("answer-${i}.txt", text) with approve
}

node main() {
  let answers = []
  for (i in range(24)) {
    const a = llm("question ${i}")
    answers.push(a)
    note(i, a)
    print("answered ${i}")
  }
  saveToDisk(answers, "answers.json")
  return answers.join("|")
}
""",
    files={"mocks.json": json.dumps([{"return": f"mock answer {i}"} for i in range(24)])},
    args=("--mock", "mocks.json"),
    logs=("answers.log",),
)

TOOLS = Shape(
    "tools",
    """\
def record(n: number): string {
  \"\"\"Records a number.\"\"\"
  write("tool-${n}.txt", "recorded ${n}") with approve
  write("tools.log", "tool ${n}\\n", mode: "append") with approve
  return "ok ${n}"
}

node main() {
  let out = []
  for (i in range(6)) {
    out.push(llm("plain ${i}"))
    out.push(llm("please call [tool:record:${i}]", {tools: [record]}))
    print("round ${i}")
  }
  return out
}
""",
    server=True,
    logs=("tools.log",),
)

THREADS = Shape(
    "threads",
    """\
def ask(label: string): string {
  const a = llm(label)
  write("thread.log", "${label}\\n", mode: "append") with approve
  return a
}

node main() {
  let out = []
  out.push(ask("outer 0"))
  for (i in range(4)) {
    thread {
      out.push(ask("fresh ${i}"))
      out.push(ask("fresh ${i} again"))
    }
    subthread {
      out.push(ask("copy ${i}"))
    }
    print("thread round ${i}")
  }
  out.push(ask("outer 1"))
  return out
}
""",
    server=True,
    logs=("thread.log",),
)

FORKS = Shape(
    "forks",
    """\
def work(x: number): string {
  const a = llm("fork item ${x}")
  write("fork-${x}.txt", a) with approve
  write("fork.log", "item ${x}\\n", mode: "append") with approve
  return a
}

node main() {
  const results = fork([1, 2, 3, 4, 5, 6]) as x {
    return work(x)
  }
  print("forked")
  parallel {
    let pa = work(7)
    seq {
      let pb = work(8)
      let pc = work(9)
    }
  }
  const grid = fork([1, 2]) as row {
    return fork([10, 20]) as col { return work(row * col) }
  }
  return [results, pa, pb, pc, grid]
}
""",
    server=True,
    logs=("fork.log",),
)

INTERRUPTS = Shape(
    "interrupts",
    """\
def approveStep(i: number): number {
  const ok = interrupt("go on with ${i}?", {i: i})
  write("approved.log", "approved ${i}\\n", mode: "append") with approve
  return i
}

node main() {
  let done = []
  for (i in range(10)) {
    const r = approveStep(i) with approve
    let busy = 0
    for (j in range(400)) { busy = busy + j }
    done.push(r + busy)
    print("approved ${i}")
  }
  let chosen = null
  handle {
    chosen = interrupt("which?")
  } with (data) {
    return resolve("the second")
  }
  return [done, chosen]
}
""",
    logs=("approved.log",),
)

# All of them in one program, for CI: one uninterrupted run to compare with, stopped at a few
# points in its different parts.
MIXED = Shape(
    "mixed",
    """\
def record(n: number): string {
  \"\"\"Records a number.\"\"\"
  write("tool-${n}.txt", "recorded ${n}") with approve
  write("effects.log", "tool ${n}\\n", mode: "append") with approve
  return "ok ${n}"
}

def confirm(i: number): number {
  const ok = interrupt("go on with ${i}?", {i: i})
  write("confirmed-${i}.txt", "confirmed ${i}") with approve
  return i
}

node main() {
  let out = []
  for (i in range(3)) {
    out.push(llm("please call [tool:record:${i}]", {tools: [record]}))
    thread {
      out.push(llm("fresh ${i}"))
    }
    subthread {
      out.push(llm("copy ${i}"))
    }
    const c = confirm(i) with approve
    let busy = 0
    for (j in range(300)) {
      busy = busy + j
    }
    out.push(c + busy)
    print("round ${i}")
  }
  const forked = fork([1, 2, 3]) as x {
    const a = llm("fork ${x}")
    write("fork-${x}.txt", a) with approve
    return a
  }
  print("forked")
  return [out, forked]
}
""",
    server=True,
    logs=("effects.log",),
)

SHAPES = {s.name: s for s in (LOOP, MOCKED, TOOLS, THREADS, FORKS, INTERRUPTS, MIXED)}


# -- reading a run ---------------------------------------------------------------------------


def run_ids(work: Path) -> list[str]:
    with contextlib.closing(
        sqlite3.connect(f"file:{work / 'runs.db'}?mode=ro", uri=True, timeout=10)
    ) as conn:
        return [str(r[0]) for r in conn.execute("SELECT id FROM runs ORDER BY created_at")]


def stored_steps(conn: sqlite3.Connection | None) -> int:
    if conn is None:
        return 0
    try:
        row = conn.execute("SELECT max(step_count) FROM runs").fetchone()
    except sqlite3.Error:
        return 0
    return int(row[0] or 0) if row else 0


@dataclass
class Record:
    """What a finished (or stopped) run holds, read in this process."""

    status: str
    result: Any
    steps: list[tuple[Any, ...]]  # (scope, path, kind) per step
    effects: list[tuple[str, str, str]]  # (step:call, kind, status)
    answer_keys: list[str]  # the server keys of the stored model answers
    llm_calls: int
    writes: list[tuple[int, str]]  # (step, file) of each `write` in the effect journal


def read_record(work: Path, run_id: str) -> Record:
    from runtime.record.sqlite_store import SQLiteStore
    from runtime.runs.fork import Timeline

    with SQLiteStore(work / "runs.db", read_only=True) as store:
        run = store.get_run(run_id)
        assert run is not None
        tl = Timeline(store, run_id, 0)
        steps = []
        for k in range(len(tl)):
            loc = tl.location_at(k)
            steps.append((loc.scope if loc else None, loc.path if loc else None, tl.kind_at(k)))
        effects = store.effects(run_id)
        calls = store.llm_calls(run_id, 0)
        keys = []
        for call in calls:
            keys.extend(set(KEY_MARK.findall(json.dumps(call.response, ensure_ascii=False))))
        return Record(
            status=run.status,
            result=run.result,
            steps=steps,
            effects=sorted((e.key.split(":", 2)[2], e.kind, e.status) for e in effects),
            answer_keys=keys,
            llm_calls=len(calls),
            writes=[
                (e.step, e.args["path"])
                for e in effects
                if e.kind == "write" and isinstance(e.args, dict) and "path" in e.args
            ],
        )


def states(work: Path, run_id: str, steps: list[int]) -> dict[int, Any]:
    """The whole visible state at each of `steps` (materialised from the record)."""
    from runtime.record.sqlite_store import SQLiteStore
    from runtime.runs.fork import Timeline

    with SQLiteStore(work / "runs.db", read_only=True) as store:
        tl = Timeline(store, run_id, 0)
        return {k: _comparable(tl.state_at(k)) for k in steps if 0 <= k < len(tl)}


def _comparable(state: Any) -> Any:
    data = {name: getattr(state, name) for name in type(state).__slots__ if name != "usage"}
    usage = state.usage
    data["tokens"] = (usage.input_tokens, usage.output_tokens)  # time and price may differ
    return repr(data)


def files_of(work: Path, shape: Shape) -> dict[str, bytes]:
    skip = STORE_FILES | shape.inputs()
    return {p.name: p.read_bytes() for p in sorted(work.iterdir()) if p.name not in skip}


# -- stopping a process ----------------------------------------------------------------------


@dataclass(frozen=True)
class KillPoint:
    """Where and how to stop a process: once `what` reaches `n` (`steps` in the store, `lines`
    printed, `requests` received by the server and held in flight, `answers` sent by it), then
    `delay` seconds more, with `how`: KILL, TERM, INT (one Ctrl-C) or INT2 (two)."""

    what: str
    n: int
    delay: float
    how: str

    def __str__(self) -> str:
        return f"{self.how}@{self.what}={self.n}+{self.delay * 1000:.1f}ms"


SIGNALS = {"KILL": signal.SIGKILL, "TERM": signal.SIGTERM, "INT": signal.SIGINT}


class Lines:
    """The lines a process prints, read by a thread as they come."""

    def __init__(self, stream: Any) -> None:
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()

    def count(self) -> int:
        with self._cond:
            return len(self.lines)

    def text(self) -> str:
        self._thread.join(TIMEOUT)
        return "\n".join(self.lines)


@dataclass
class Stopped:
    """A process stopped at a point (or that ended before it)."""

    killed: bool
    returncode: int
    stdout: str
    stderr: str
    steps_at_kill: int
    # The run's record says it finished: a signal that came after the process had recorded
    # the run's end (while it closed the store or printed the result) stopped nothing.
    finished: bool = False


def start(work: Path, args: list[str]) -> tuple[subprocess.Popen[str], Lines, Lines]:
    proc = subprocess.Popen(
        [*AGENCY, *args],
        cwd=work,
        env=agency_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    return proc, Lines(proc.stdout), Lines(proc.stderr)


def stop_at(
    proc: subprocess.Popen[str],
    out: Lines,
    err: Lines,
    work: Path,
    point: KillPoint,
    server: LLMServer | None,
    base: dict[str, int] | None = None,
) -> Stopped:
    """Wait for `point` (counted from `base`: what a resumed process starts from), signal
    `proc`, and wait for it to end."""
    base = base or {}
    target = base.get(point.what, 0) + point.n
    if point.what == "requests":
        assert server is not None
        server.hold(target - server.count())
    db = work / "runs.db"
    conn: sqlite3.Connection | None = None
    reached = False
    deadline = time.monotonic() + TIMEOUT
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            if point.what == "steps":
                if conn is None and db.exists():
                    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
                value = stored_steps(conn)
            elif point.what == "lines":
                value = out.count()
            elif point.what == "requests":
                assert server is not None
                value = server.count()
            else:
                assert server is not None
                value = server.answered
            if value >= target:
                reached = True
                break
            time.sleep(0.0005)
        if reached:
            if point.delay:
                time.sleep(point.delay)
            if proc.poll() is None:
                proc.send_signal(SIGNALS[point.how.rstrip("2")])
                if point.how == "INT" and server is not None:
                    server.release()  # Ctrl-C stops at the next step: after the answer
                if point.how == "INT2":
                    time.sleep(0.002)
                    if proc.poll() is None:
                        proc.send_signal(signal.SIGINT)
    finally:
        if conn is not None:
            conn.close()
    try:
        proc.wait(TIMEOUT)
    finally:
        if server is not None:
            server.release()
    if proc.returncode is None:
        proc.kill()
        proc.wait()
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)) as c:
        steps = stored_steps(c)
        statuses = {row[0] for row in c.execute("SELECT status FROM runs")}
    finished = statuses == {"finished"}
    killed = reached and proc.returncode != 0 and not finished
    return Stopped(killed, proc.returncode, out.text(), err.text(), steps, finished)


# -- the checks ------------------------------------------------------------------------------


@dataclass
class Reference:
    """An uninterrupted run of a shape."""

    shape: Shape
    work: Path
    run_id: str
    result_line: str
    record: Record
    files: dict[str, bytes]
    requests: list[str]
    lines: int

    def measure(self, what: str) -> int:
        """How far the uninterrupted run got in `what` (where a kill point may fall)."""
        if what == "steps":
            return len(self.record.steps)
        if what == "lines":
            return self.lines
        return len(self.requests)


def reference(shape: Shape, work: Path) -> Reference:
    shape.prepare(work)
    server = LLMServer() if shape.server else None
    try:
        proc = agency(work, *shape.run_args(server))
        assert proc.returncode == 0, proc.stderr
        run_id = run_ids(work)[0]
        record = read_record(work, run_id)
        assert record.status == "finished"
        out = proc.stdout.strip().splitlines()
        return Reference(
            shape,
            work,
            run_id,
            out[-1],
            record,
            files_of(work, shape),
            list(server.keys) if server else [],
            len(out),
        )
    finally:
        if server is not None:
            server.close()


def draw_points(
    ref: Reference, rng: random.Random, count: int, signals: list[str]
) -> list[KillPoint]:
    """`count` kill points inside the uninterrupted run (not in its last stretch, where the
    process may end before the signal lands)."""
    kinds = ["steps", "lines"] + (["requests", "answers"] if ref.shape.server else [])
    points = []
    for i in range(count):
        what = kinds[rng.randrange(len(kinds))]
        total = ref.measure(what)
        n = rng.randrange(1, max(2, int(total * 0.8)))
        how = signals[i % len(signals)]
        points.append(KillPoint(what, n, round(rng.uniform(0, 0.003), 4), how))
    return points


def repeated_lines(got: bytes, want: bytes, what: str) -> int:
    """How many lines of an append-only log appear more often than in the reference; every
    reference line must be there, in order, and nothing else."""
    have = got.decode().splitlines()
    lines = want.decode().splitlines()
    extra = collections.Counter(have) - collections.Counter(lines)
    assert set(extra) <= set(lines), f"{what}: lines the reference never wrote: {extra}"
    rest = iter(have)
    assert all(line in rest for line in lines), f"{what}: lines lost or out of order"
    return sum(extra.values())


def stamp(work: Path, shape: Shape) -> dict[str, tuple[bytes, int]]:
    """Every file the stopped process left (not a log, which later appends change), with its
    inode; each gets the sentinel mtime, which a write would replace."""
    out = {}
    for p in work.iterdir():
        if p.name in STORE_FILES or p.name in shape.inputs() or p.name.endswith(".agency-tmp"):
            continue
        if p.name in shape.logs:
            continue
        out[p.name] = (p.read_bytes(), p.stat().st_ino)
        os.utime(p, ns=(SENTINEL_NS, SENTINEL_NS))
    return out


def check_readable(
    work: Path, run_id: str, statuses: tuple[str, ...], thorough: bool = True
) -> dict[str, Any]:
    """`agency runs` and `agency show` on a stopped run: no traceback, the run not `running`."""
    listed = agency(work, "runs", "--db", "runs.db", "--json")
    no_traceback(listed, "agency runs")
    assert listed.returncode == 0, listed.stderr
    rows = {r["id"]: r for r in json.loads(listed.stdout)}
    row = rows[run_id]
    assert row["status"] in statuses, f"agency runs shows {row}"
    steps = int(row["steps"])
    refs = [f"{run_id}:{max(steps - 1, 0)}"]
    if thorough:
        refs += [run_id, f"{run_id}:0", f"{run_id}:{steps // 2}"]
    for ref in refs:
        shown = agency(work, "show", ref, "--db", "runs.db", "--json")
        no_traceback(shown, f"agency show {ref}")
        assert shown.returncode == 0, f"agency show {ref}: {shown.stderr}"
        json.loads(shown.stdout)
    return row


def check_session(work: Path, run_id: str) -> None:
    """The stopped run opens in a debugging session, read-only, and can be moved through."""
    from debugger.opening import trace_session
    from runtime.record.stores import open_run_store

    store = open_run_store(work / "runs.db", read_only=True)
    try:
        session = trace_session(store, run_id)
        session.goto(session.last)
        assert session.run_status() == "interrupted", session.run_status()
        session.variables  # noqa: B018 (reading it is the check)
        session.step_back()
        session.reverse_continue()
        session.continue_forward()
        session.prev_llm()
        session.goto(session.last)
        assert session.state().step == session.last
    finally:
        store.close()


def resumed_after(stderr: str) -> int | None:
    for line in stderr.splitlines():
        if "resuming run" in line and "after step" in line:
            return int(line.split("after step")[1].split()[0])
    return None


def kill_and_resume(
    ref: Reference,
    point: KillPoint,
    work: Path,
    again: KillPoint | None = None,
    thorough: bool = True,
) -> dict[str, Any]:
    """Run `ref.shape` in `work`, stop it at `point` (and its resume at `again`), resume it to
    its end and check every invariant. `thorough` also shows more steps and replays the
    stopped run (each an `agency` process: CI runs the lighter form). Returns what happened."""
    shape = ref.shape
    shape.prepare(work)
    server = LLMServer() if shape.server else None
    try:
        return _kill_and_resume(ref, point, work, again, server, thorough)
    finally:
        if server is not None:
            server.close()


def _after_stop(
    work: Path, run_id: str, server: LLMServer | None, thorough: bool
) -> tuple[int, collections.Counter[str]]:
    """The checks on a stopped run; (requests the server had then, the answers stored)."""
    check_readable(work, run_id, ("interrupted",), thorough)
    check_session(work, run_id)
    asked = server.count() if server else 0
    if thorough:
        replayed = agency(work, "replay", run_id, "--db", "runs.db", "--json")
        no_traceback(replayed, "agency replay of the stopped run")
        assert replayed.returncode in (0, 4), f"replay of the stopped run: {replayed.stderr}"
        assert (server.count() if server else 0) == asked, "the replay asked the model"
    return asked, collections.Counter(read_record(work, run_id).answer_keys)


def _kill_and_resume(
    ref: Reference,
    point: KillPoint,
    work: Path,
    again: KillPoint | None,
    server: LLMServer | None,
    thorough: bool,
) -> dict[str, Any]:
    shape = ref.shape
    proc, out, err = start(work, shape.run_args(server))
    stopped = stop_at(proc, out, err, work, point, server)
    detail = f"{shape.name} {point}: exit {stopped.returncode}\n{stopped.stderr}"
    (run_id,) = run_ids(work)
    if not stopped.killed:  # it ended first: it must simply be right
        assert stopped.returncode == 0 or stopped.finished, detail
        record = read_record(work, run_id)
        assert record.status == "finished" and record.result == ref.record.result, detail
        return {"point": str(point), "killed": False}
    assert "Traceback" not in stopped.stderr, detail
    stops = [_after_stop(work, run_id, server, thorough)]
    before = stamp(work, shape)
    first_stamped = dict.fromkeys(before, stopped.steps_at_kill)  # file -> steps stored then
    kills = [stopped.steps_at_kill]
    done: subprocess.CompletedProcess[str] | None = None
    cut_after_end = False  # the resume was signalled after it had recorded the run's end
    if again is not None:
        proc, o2, e2 = start(work, ["resume", run_id, "--db", "runs.db", "--json"])
        base = {
            "steps": stopped.steps_at_kill,
            "lines": 0,
            "requests": server.count() if server else 0,
            "answers": server.answered if server else 0,
        }
        second = stop_at(proc, o2, e2, work, again, server, base)
        if second.killed:
            assert "Traceback" not in second.stderr, second.stderr
            stops.append(_after_stop(work, run_id, server, thorough))
            kills.append(second.steps_at_kill)
            for name, entry in stamp(work, shape).items():
                before.setdefault(name, entry)
                first_stamped.setdefault(name, second.steps_at_kill)
        else:
            done = subprocess.CompletedProcess(
                proc.args, second.returncode, second.stdout, second.stderr
            )
            cut_after_end = second.returncode != 0 and second.finished
    if done is None:
        done = agency(work, "resume", run_id, "--db", "runs.db", "--json")
    detail = (
        f"{shape.name} {point} then {again} (stored steps at the stops: {kills}):\n{done.stderr}"
    )
    no_traceback(done, "agency resume")
    if cut_after_end:  # its result is in the record, not (or not all) on its stdout
        assert read_record(work, run_id).result == ref.record.result, detail
    else:
        assert done.returncode == 0, detail
        assert done.stdout.strip().splitlines()[-1] == ref.result_line, detail
    assert resumed_after(done.stderr) == kills[-1] - 1, f"{detail}\na completed step was lost"

    final = read_record(work, run_id)
    assert final.status == "finished", detail
    assert final.steps == ref.record.steps, f"{detail}\nthe timeline differs from the reference"
    assert final.effects == ref.record.effects, f"{detail}\nthe effect journals differ"
    files = files_of(work, shape)
    repeated = 0
    for name in shape.logs:
        extra = repeated_lines(files.pop(name, b""), ref.files.get(name, b""), f"{detail}\n{name}")
        # An append the process was performing when it died is in doubt; the size noted
        # before it tells the resumed run whether it happened, so no line appears twice.
        assert extra == 0, f"{detail}\n{name}: {extra} lines appended twice"
        repeated += extra
    want = {k: v for k, v in ref.files.items() if k not in shape.logs}
    differ = sorted(k for k in set(files) | set(want) if files.get(k) != want.get(k))
    assert not differ, f"{detail}\nfiles differ: {differ}"
    rewritten = []
    for name, (data, ino) in before.items():
        assert data == ref.files.get(name), f"{detail}\n{name} was half written"
        st = (work / name).stat()
        # A file the program writes again at a step not stored yet at that stop (`fork`
        # writing "fork-20.txt" for 1 x 20 and again for 2 x 10) is rightly written again.
        later = any(at >= first_stamped[name] and f == name for at, f in ref.record.writes)
        if (st.st_ino != ino or st.st_mtime_ns != SENTINEL_NS) and not later:
            rewritten.append(name)
    assert not rewritten, f"{detail}\nwritten again after the stop: {rewritten}"

    if server is not None:
        # No answer stored before a stop is asked again; each one the run uses is stored.
        # Two calls of a run may send the same request (`fork` asking "item 20" for 2 x 10
        # and for 1 x 20): a key is asked again when the requests for it after the stop and
        # the answers stored for it before outnumber the uninterrupted run's requests for it.
        once = collections.Counter(ref.requests)
        for asked, stored in stops:
            after = collections.Counter(server.keys[asked:])
            asked_again = {k: after[k] for k in stored & after if stored[k] + after[k] > once[k]}
            assert not asked_again, f"{detail}\nstored answers asked again: {asked_again}"
        assert collections.Counter(final.answer_keys) == collections.Counter(
            ref.record.answer_keys
        ), detail
        if again is None:  # ... and what was asked after the stop had not been stored by then
            resumed = collections.Counter(server.keys[stops[0][0] :])
            assert resumed == collections.Counter(ref.record.answer_keys) - stops[0][1], detail

    # Every step reads back, and the steps where the process stopped read as the reference's.
    total = len(ref.record.steps)
    sample = set(range(0, total, max(1, total // 60))) | {total - 1}
    for k in kills:
        sample |= set(range(max(0, k - 3), min(total, k + 3)))
    got = states(work, run_id, sorted(sample))
    want = states(ref.work, ref.run_id, sorted(sample))
    for k in sorted(sample):
        assert got.get(k) == want.get(k), f"{detail}\nstate at step {k} differs"

    replay = agency(work, "replay", run_id, "--db", "runs.db", "--json")
    no_traceback(replay, "agency replay")
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout.strip().splitlines()[-1] == ref.result_line
    if server is not None:
        assert server.count() == len(server.keys)
    return {
        "point": str(point),
        "killed": True,
        "kills": kills,
        "resumed_after": resumed_after(done.stderr),
        "stored_answers": sum(stops[0][1].values()),
        "appends_repeated": repeated,
    }


def iter_cases(
    refs: dict[str, Reference], seed: int, per_shape: int, signals: list[str]
) -> Iterator[tuple[Reference, KillPoint, KillPoint | None]]:
    """Seeded cases: per program, `per_shape` kill points; every third one also stops the
    resume, a little later (counted from where the resume starts)."""
    for name, ref in refs.items():
        rng = random.Random(f"{seed}:{name}")
        for i, point in enumerate(draw_points(ref, rng, per_shape, signals)):
            again = None
            if i % 3 == 2:
                what = "steps" if point.what == "lines" else point.what
                left = max(2, ref.measure(what) - point.n)
                n = rng.randrange(1, max(2, left // 2))
                again = KillPoint(what, n, round(rng.uniform(0, 0.003), 4), rng.choice(signals))
            yield ref, point, again


def main(argv: list[str] | None = None) -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description="Kill recorded runs at seeded points.")
    parser.add_argument("--points", type=int, default=5, help="kill points per program")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--shape", action="append", help="only these programs")
    parser.add_argument("--signals", default="KILL,TERM,INT,INT2")
    ns = parser.parse_args(argv)
    signals = ns.signals.split(",")
    base = Path(tempfile.mkdtemp(prefix="kill-anywhere-"))
    refs = {
        name: reference(shape, base / f"ref-{name}")
        for name, shape in SHAPES.items()
        if not ns.shape or name in ns.shape
    }
    failures = 0
    for i, (ref, point, again) in enumerate(iter_cases(refs, ns.seed, ns.points, signals)):
        started = time.perf_counter()
        try:
            outcome = kill_and_resume(ref, point, base / f"case{i:03d}-{ref.shape.name}", again)
            print(
                f"ok   {ref.shape.name:12} {point}  {outcome}  {time.perf_counter() - started:.1f}s"
            )
        except AssertionError as exc:
            failures += 1
            import traceback

            print(
                f"FAIL {ref.shape.name:12} {point} then {again}\n{exc}\n{traceback.format_exc(limit=-2)}"
            )
    print(f"{failures} failures; cases under {base}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
