"""Measures recording on the workload this tool exists for: a run full of `llm()` calls.

1,000 `llm()` calls in one growing thread (~200-byte prompts and answers, the scripted mock
model), recorded to SQLite: bytes per call (the whole store, and the LLM call records alone),
recording CPU per call, `state_at` p50/p99 at random steps of the reopened store, and the time
to walk every step of the history forward. Beside it, LangGraph's `SqliteSaver` on the same
workload (a growing message list, one checkpoint per call) when `langgraph` is importable.

Run: `python benchmarks/bench_llm_runs.py [--calls N] [--against DIR]`. `--against DIR` runs
the same measurement on another checkout (e.g. `git worktree add --detach /tmp/before main`) in
a subprocess, in the same run, and prints both side by side with their ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for i, arg in enumerate(sys.argv):  # `--root DIR`: measure that checkout's runtime
    if arg == "--root" and i + 1 < len(sys.argv):
        ROOT = Path(sys.argv[i + 1]).resolve()
sys.path.insert(0, str(ROOT))

from runtime.language.program import compile_source  # noqa: E402
from runtime.record.sqlite_store import SQLiteStore  # noqa: E402
from runtime.runs.fork import Timeline  # noqa: E402
from runtime.runs.recording import record_program  # noqa: E402
from runtime.runs.runner import RunConfig  # noqa: E402

PAD = "x" * 160
PROGRAM = """node main() {
  let i = 0
  let last = ""
  while (i < %d) {
    last = llm("Question number " + i + " about the growing conversation: %s")
    i = i + 1
  }
  return i
}
"""


def answers(n: int) -> list[Any]:
    return [{"return": f"Answer number {i} to the question, padded out: {PAD}"} for i in range(n)]


def _llm_record_bytes(path: Path) -> int:
    """Bytes of what the store keeps for LLM calls: the call rows, and any table of parts
    they refer to (messages, tool lists stored once)."""
    conn = sqlite3.connect(path)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        total = 0
        for table in sorted(t for t in tables if t.startswith("llm_")):
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            expr = " + ".join(f"coalesce(length(CAST({c} AS BLOB)), 0)" for c in cols)
            total += conn.execute(f"SELECT coalesce(sum({expr}), 0) FROM {table}").fetchone()[0]
        return int(total)
    finally:
        conn.close()


def measure(calls: int, samples: int) -> dict[str, Any]:
    program = compile_source(PROGRAM % (calls, PAD), "llm_runs.agency")
    out: dict[str, Any] = {"calls": calls}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "runs.db"
        store = SQLiteStore(path)
        cfg = RunConfig(mocks=answers(calls), root=tmp, quiet=True)
        cpu0, t0 = time.process_time(), time.perf_counter()
        rec = record_program(program, cfg, store)
        store.flush()
        store.close()
        out["record_cpu_ms_per_call"] = (time.process_time() - cpu0) * 1000 / calls
        out["record_wall_s"] = time.perf_counter() - t0
        assert rec.machine.result == calls, rec.machine.result
        disk = sum(f.stat().st_size for f in Path(tmp).glob("runs.db*"))
        out["store_bytes_per_call"] = disk / calls
        out["llm_bytes_per_call"] = _llm_record_bytes(path) / calls

        store = SQLiteStore(path)
        tl = Timeline.open(store, rec.run_id)
        n = len(tl)
        out["steps"] = n
        rng = random.Random(1)
        times, cpus = [], []
        for _ in range(samples):
            k = rng.randrange(n)
            t1, c1 = time.perf_counter(), time.thread_time()
            tl.state_at(k)
            cpus.append((time.thread_time() - c1) * 1000)
            times.append((time.perf_counter() - t1) * 1000)
        times.sort()
        cpus.sort()
        out["state_at_p50_ms"] = times[len(times) // 2]
        out["state_at_p99_ms"] = times[int(len(times) * 0.99) - 1]
        out["state_at_cpu_p99_ms"] = cpus[int(len(cpus) * 0.99) - 1]
        out["messages_at_end"] = sum(len(t) for t in tl.state_at(n - 1).threads.values())

        tl = Timeline.open(store, rec.run_id)  # fresh caches: the walk starts cold
        t1, c1 = time.perf_counter(), time.thread_time()
        for k in range(n):
            tl.state_at(k)
        out["walk_cpu_s"] = time.thread_time() - c1
        out["walk_s"] = time.perf_counter() - t1

        tl = Timeline.open(store, rec.run_id)
        t1 = time.perf_counter()
        tl.llm_call_at(n - 1)
        out["llm_call_at_last_ms"] = (time.perf_counter() - t1) * 1000
        store.close()
    return out


def measure_langgraph(calls: int) -> dict[str, Any] | None:
    """The same workload on LangGraph with its SqliteSaver: one checkpoint per call."""
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.graph import END, START, StateGraph
    except ImportError:
        return None
    import operator
    from typing import Annotated, TypedDict

    # The functional form: this module's annotations are strings LangGraph could not resolve.
    State = TypedDict(  # noqa: UP013
        "State", {"messages": Annotated[list[dict[str, str]], operator.add], "i": int}
    )

    def ask(state: Any) -> dict[str, Any]:
        i = state["i"]
        prompt = f"Question number {i} about the growing conversation: {PAD}"
        answer = f"Answer number {i} to the question, padded out: {PAD}"
        return {
            "messages": [
                {"role": "user", "content": prompt},
                {"role": "assistant", "content": answer},
            ],
            "i": i + 1,
        }

    def more(state: Any) -> str:
        return "ask" if state["i"] < calls else END

    graph = StateGraph(State)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_conditional_edges("ask", more)
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lg.db"
        conn = sqlite3.connect(path, check_same_thread=False)
        saver = SqliteSaver(conn)
        app = graph.compile(checkpointer=saver)
        cpu0 = time.process_time()
        app.invoke(
            {"messages": [], "i": 0},
            {"configurable": {"thread_id": "t"}, "recursion_limit": calls * 2 + 10},
        )
        out["record_cpu_ms_per_call"] = (time.process_time() - cpu0) * 1000 / calls
        conn.commit()
        conn.close()
        disk = sum(f.stat().st_size for f in Path(tmp).glob("lg.db*"))
        out["store_bytes_per_call"] = disk / calls
    return out


def run_other(root: Path, calls: int, samples: int) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--root", str(root), "--json", "--calls", str(calls)]
        + ["--samples", str(samples)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"the run against {root} failed:\n{proc.stderr}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def peer(python: str, calls: int) -> dict[str, Any] | None:
    """The LangGraph figures, measured by another Python (one that has langgraph)."""
    proc = subprocess.run(
        [python, __file__, "--langgraph-json", "--calls", str(calls)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"the LangGraph run with {python} failed:\n{proc.stderr}")
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    return None if found is None else dict(found)


ROWS = [
    ("store_bytes_per_call", "store bytes / call", "{:,.0f}"),
    ("llm_bytes_per_call", "LLM call records bytes / call", "{:,.0f}"),
    ("record_cpu_ms_per_call", "recording CPU / call (ms)", "{:.3f}"),
    ("state_at_p50_ms", "state_at p50 (ms)", "{:.3f}"),
    ("state_at_p99_ms", "state_at p99 (ms)", "{:.3f}"),
    ("state_at_cpu_p99_ms", "state_at p99, thread CPU (ms)", "{:.3f}"),
    ("walk_s", "history walk, every step (s)", "{:.3f}"),
    ("walk_cpu_s", "history walk, thread CPU (s)", "{:.3f}"),
    ("llm_call_at_last_ms", "llm_call_at(last step) (ms)", "{:.1f}"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1000, help="llm() calls in the run (1000)")
    ap.add_argument("--samples", type=int, default=1000, help="random state_at probes (1000)")
    ap.add_argument("--against", type=Path, help="another checkout to measure side by side")
    ap.add_argument(
        "--peer-python",
        help="a Python that can import langgraph (e.g. a venv of its own) for the peer figures",
    )
    ap.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--langgraph-json", action="store_true", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.json:
        print(json.dumps(measure(opts.calls, opts.samples)))
        return
    if opts.langgraph_json:
        print(json.dumps(measure_langgraph(opts.calls)))
        return

    print(
        f"# bench_llm_runs — {opts.calls} llm() calls, one growing thread, mock model — "
        f"python {platform.python_version()}, nproc {os.cpu_count()}"
    )
    other = run_other(opts.against, opts.calls, opts.samples) if opts.against else None
    ours = measure(opts.calls, opts.samples)
    print(f"\n{ours['steps']} steps, {ours['messages_at_end']} messages in the thread at the end")
    head = f"{'':34} {'this tree':>14}"
    if other is not None:
        head += f" {'--against':>14} {'ratio':>8}"
    print(head)
    for key, label, fmt in ROWS:
        line = f"{label:34} {fmt.format(ours[key]):>14}"
        if other is not None:
            ratio = other[key] / ours[key] if ours[key] else float("inf")
            line += f" {fmt.format(other[key]):>14} {ratio:>7.1f}×"
        print(line)
    if other is not None:
        print(f"(ratio: --against {opts.against} / this tree; above 1 means this tree is better)")
    print(
        "(thread CPU: the reader's own time; on a shared machine wall time includes time spent"
        " descheduled)"
    )
    print(
        "goals: ≤ 2,048 LLM bytes/call; state_at p99 ≤ 5 ms; history walk ≤ 0.5 s for a "
        "1,000-call run"
    )

    lg = peer(opts.peer_python, opts.calls) if opts.peer_python else measure_langgraph(opts.calls)
    print("\n## Peer: LangGraph SqliteSaver, same workload (one checkpoint per call)")
    if lg is None:
        print(
            "langgraph is not importable here (pip install langgraph langgraph-checkpoint-sqlite,"
            " or --peer-python a Python that has it): skipped"
        )
        return
    for key in ("store_bytes_per_call", "record_cpu_ms_per_call"):
        label = dict((k, lab) for k, lab, _ in ROWS)[key]
        fmt = dict((k, f) for k, _, f in ROWS)[key]
        ratio = lg[key] / ours[key] if ours[key] else float("inf")
        print(f"{label:34} {fmt.format(lg[key]):>14}  ({ratio:.1f}× this tree)")


if __name__ == "__main__":
    main()
