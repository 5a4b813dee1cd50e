"""Measures `CheckpointManager.save` for a Python agent: cost and bytes per roundtrip for a
1,000-roundtrip run whose message list grows by one message a roundtrip, side by side with
LangGraph's `SqliteSaver` on the same workload when `langgraph` is importable.

Run: `python benchmarks/bench_agents.py [--roundtrips 1000] [--message-bytes 200]`.

The two sides run in turns, `--repeat` rounds of one run each (this box is shared: taking turns
puts both under the same load); times are the best of each side, and the time ratio is also
given as the median of the rounds' own ratios. "save" is the time the agent's thread spends in `save` (SQLite writes are queued to a writer
thread, as for Agency runs); "incl. flush" adds waiting for every write to be committed. Bytes
are the SQLite file's growth (database and WAL, after a checkpoint) per roundtrip.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runtime import CheckpointManager, MemoryStorage, SqliteStorage  # noqa: E402

WORDS = "the agent rolled a die and reported the result to the user who asked again".split()
REPORTED = "LangGraph SqliteSaver (reported in issue 14, not run here): ~4.6 ms and ~200 KB per step at 1k messages"


def message(i: int, size: int, rng: random.Random) -> dict[str, Any]:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < size:
        words.append(rng.choice(WORDS))
    role = ("user", "assistant", "tool")[i % 3]
    out: dict[str, Any] = {"role": role, "content": " ".join(words)}
    if role == "tool":
        out["tool_call_id"] = f"call_{i}"
    return out


def workload(n: int, size: int) -> list[dict[str, Any]]:
    rng = random.Random(7)
    return [message(i, size, rng) for i in range(n)]


def file_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def ours(n: int, msgs: list[dict[str, Any]], where: Path | None) -> tuple[float, float, int]:
    """(seconds in save, seconds incl. flush, bytes) for n roundtrips."""
    storage = SqliteStorage(where) if where is not None else MemoryStorage()
    m = CheckpointManager(storage, agent="bench")
    history: list[dict[str, Any]] = []
    in_save = 0.0
    start = time.perf_counter()
    for i in range(n):
        history.append(msgs[i])
        t0 = time.perf_counter()
        m.save(
            run_id="bench",
            roundtrip=i + 1,
            messages=history,
            token_usage={"input_tokens": 10 * i, "output_tokens": 5 * i},
            session_state={"roundtrip": i, "topic": "dice"},
        )
        in_save += time.perf_counter() - t0
    m.store.flush()
    total = time.perf_counter() - start
    m.close()
    size = 0
    if where is not None:
        with sqlite3.connect(where) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = file_bytes(where)
    return in_save, total, size


def langgraph(n: int, msgs: list[dict[str, Any]], where: Path) -> tuple[float, int] | None:
    """(seconds in put, bytes) for n roundtrips with LangGraph's SqliteSaver, None without it."""
    try:
        from langgraph.checkpoint.base import empty_checkpoint
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        return None
    conn = sqlite3.connect(where, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    config: Any = {"configurable": {"thread_id": "bench", "checkpoint_ns": ""}}
    history: list[dict[str, Any]] = []
    in_put = 0.0
    for i in range(n):
        history.append(msgs[i])
        cp = empty_checkpoint()
        cp["id"] = f"{i:020d}"
        cp["channel_values"] = {"messages": list(history), "roundtrip": i}
        cp["channel_versions"] = {"messages": i + 1, "roundtrip": i + 1}
        t0 = time.perf_counter()
        config = saver.put(config, cp, {"source": "loop", "step": i}, {"messages": i + 1})
        in_put += time.perf_counter() - t0
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return in_put, file_bytes(where)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--roundtrips", type=int, default=1000)
    ap.add_argument("--message-bytes", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5, help="rounds: one run of each side each")
    args = ap.parse_args()
    n = args.roundtrips
    msgs = workload(n, args.message_bytes)
    print(f"# bench_agents: {n} roundtrips, one ~{args.message_bytes}-byte message more each")
    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "empty.db"
        ours(0, msgs, empty)
        base = file_bytes(empty)
        # The two sides take turns, so both are measured under the same load (this box is
        # shared): each round runs ours, then LangGraph's; the ratio is given for the best of
        # each side and as the median of the rounds' own ratios.
        runs, peers = [], []
        for i in range(args.repeat):
            runs.append(ours(n, msgs, Path(tmp) / f"ours{i}.db"))
            peers.append(langgraph(n, msgs, Path(tmp) / f"langgraph{i}.db"))
        in_save, total = min(r[0] for r in runs), min(r[1] for r in runs)
        size = runs[0][2]
        mem_save = min(ours(n, msgs, None)[0] for _ in range(args.repeat))
        per_bytes = (size - base) / n
        print(
            f"CheckpointManager, SQLite:  save {in_save / n * 1e3:.3f} ms/roundtrip "
            f"({total / n * 1e3:.3f} ms incl. flush; median {median(r[1] for r in runs) / n * 1e3:.3f}), "
            f"{per_bytes / 1024:.2f} KB/roundtrip"
        )
        print(f"CheckpointManager, memory:  save {mem_save / n * 1e3:.3f} ms/roundtrip")
        measured = [p for p in peers if p is not None]
        if not measured:
            print(REPORTED)
            peer_ms, peer_bytes = 4.6, 200 * 1024.0
            rounds = [peer_ms / (r[1] / n * 1e3) for r in runs]
            print("(langgraph is not installed: ratios against the reported figures)")
        else:
            peer_ms = min(p[0] for p in measured) / n * 1e3
            peer_bytes = (measured[0][1] - base) / n
            rounds = [p[0] / r[1] for r, p in zip(runs, measured, strict=True)]
            print(
                f"LangGraph SqliteSaver:      put  {peer_ms:.3f} ms/roundtrip "
                f"(median {median(p[0] for p in measured) / n * 1e3:.3f}), "
                f"{peer_bytes / 1024:.2f} KB/roundtrip (measured here)"
            )
        print(
            f"ratio, time (incl. flush):  {peer_ms / (total / n * 1e3):.0f}x best against best, "
            f"{median(rounds):.0f}x median of {len(rounds)} rounds  (goal >= 20x)"
        )
        print(f"ratio, bytes:               {peer_bytes / per_bytes:.0f}x  (goal >= 100x)")


if __name__ == "__main__":
    main()
