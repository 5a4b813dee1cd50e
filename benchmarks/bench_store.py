"""Measures the run stores: recording a million steps, and the lookups scrubbing makes.

Run: `python benchmarks/bench_store.py [--steps N] [--batch 256] [--bytes-per-step 30]`.

Recording appends batches of `--batch` steps (the recorder's encoded deltas, opaque here) with a
keyframe every `--keyframe-every` steps, then flushes; "caller" is the time the interpreter's
thread spends in the store's calls, "total" includes the writer thread finishing. Lookups are
what `Timeline.state_at(step)` asks for a random step: the keyframe at or before it and the
batches from there to the step.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runtime.record.sqlite_store import SQLiteStore  # noqa: E402
from runtime.record.store import MemoryStore, RunMeta, RunStore  # noqa: E402


def record(
    store: RunStore, steps: int, batch: int, per_step: int, kf_every: int, kf_size: int
) -> tuple[str, float, float]:
    pool = os.urandom(batch * per_step * 4)
    keyframe = os.urandom(kf_size)
    run_id = store.create_run(RunMeta(source_path="bench.agency", source_sha256="0" * 64))
    in_calls = 0.0
    start = time.perf_counter()
    for first in range(0, steps, batch):
        last = min(first + batch, steps) - 1
        offset = (first // batch) % 3 * batch * per_step
        blob = pool[offset : offset + (last - first + 1) * per_step]
        t0 = time.perf_counter()
        store.append_batch(run_id, 0, first, last, blob)
        if kf_every and first % kf_every == 0:
            store.put_keyframe(run_id, 0, first, keyframe)
        in_calls += time.perf_counter() - t0
    t0 = time.perf_counter()
    store.flush()
    in_calls += time.perf_counter() - t0
    total = time.perf_counter() - start
    return run_id, in_calls, total


def busy(iterations: int) -> int:
    """Stands in for the interpreter's own work between batches."""
    total = 0
    for i in range(iterations):
        total += i * i
    return total


def with_work(store: RunStore | None, steps: int, batch: int, per_step: int, work: int) -> float:
    """Wall time to produce `steps` steps doing `work` loop iterations each, recording them."""
    blob = os.urandom(batch * per_step)
    run_id = store.create_run(RunMeta("bench.agency", "0" * 64)) if store else ""
    start = time.perf_counter()
    for first in range(0, steps, batch):
        busy(work * batch)
        if store is not None:
            store.append_batch(run_id, 0, first, min(first + batch, steps) - 1, blob)
    if store is not None:
        store.flush()
    return time.perf_counter() - start


def lookups(
    store: RunStore, run_id: str, branch: int, steps: int, n: int, seed: int = 1
) -> list[float]:
    rng = random.Random(seed)
    times = []
    for _ in range(n):
        step = rng.randrange(steps)
        t0 = time.perf_counter()
        kf = store.keyframe_at_or_before(run_id, branch, step)
        start = 0 if kf is None else kf.step
        store.batches(run_id, branch, start, step)
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--bytes-per-step", type=int, default=30)
    parser.add_argument("--keyframe-every", type=int, default=16_384)
    parser.add_argument("--keyframe-bytes", type=int, default=64_000)
    parser.add_argument("--lookups", type=int, default=20_000)
    parser.add_argument("--work", type=int, default=8, help="loop iterations per step")
    args = parser.parse_args()
    steps, batch = args.steps, args.batch
    print(
        f"{steps:,} steps in batches of {batch} ({batch * args.bytes_per_step:,} B each), "
        f"a {args.keyframe_bytes:,} B keyframe every {args.keyframe_every:,} steps; "
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}"
    )
    print()
    print("recording (caller: time in store calls; total: until the last commit)")
    print(f"{'store':<10}{'caller s':>10}{'total s':>10}{'steps/s':>14}{'db+wal MB':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for name in ("memory", "sqlite"):
            store: RunStore = (
                MemoryStore() if name == "memory" else SQLiteStore(Path(tmp) / "runs.db")
            )
            run_id, caller, total = record(
                store, steps, batch, args.bytes_per_step, args.keyframe_every, args.keyframe_bytes
            )
            size = ""
            if isinstance(store, SQLiteStore):
                db = Path(tmp) / "runs.db"
                wal = Path(tmp) / "runs.db-wal"
                size = f"{db.stat().st_size / 1e6:.1f}+{wal.stat().st_size / 1e6:.1f}"
            print(f"{name:<10}{caller:>10.3f}{total:>10.3f}{steps / total:>14,.0f}{size:>12}")
            results[name] = (store, run_id)

        print()
        print(f"lookups: keyframe_at_or_before + batches for {args.lookups:,} random steps")
        print(f"{'store':<10}{'branch':<22}{'mean ms':>10}{'p50 ms':>10}{'p99 ms':>10}")
        for name, (store, run_id) in results.items():
            fork = steps // 2
            branch = store.create_branch(run_id, 0, fork)
            store.append_batch(run_id, branch, fork + 1, fork + batch, b"x" * batch * 30)
            store.put_keyframe(run_id, branch, fork, b"edited")
            store.flush()
            for label, b in (("main line", 0), (f"fork at {fork:,}", branch)):
                t = sorted(lookups(store, run_id, b, fork + batch if b else steps, args.lookups))
                print(
                    f"{name:<10}{label:<22}{statistics.mean(t) * 1e3:>10.4f}"
                    f"{t[len(t) // 2] * 1e3:>10.4f}{t[int(len(t) * 0.99)] * 1e3:>10.4f}"
                )
            rng = random.Random(2)
            t0 = time.perf_counter()
            for _ in range(args.lookups):
                step = rng.randrange(steps)
                store.batches(run_id, 0, step, step)
            single = (time.perf_counter() - t0) / args.lookups
            print(f"{name:<10}{'one batch (s..s)':<22}{single * 1e3:>10.4f}")
        for store, _ in results.values():
            store.close()

        print()
        print(
            f"overhead on a producer doing ~{args.work} loop iterations of Python per step "
            "(an interpreter stand-in)"
        )
        base = with_work(None, steps, batch, args.bytes_per_step, args.work)
        print(f"{'no store':<10}{base:>10.3f} s")
        for name in ("memory", "sqlite"):
            store = MemoryStore() if name == "memory" else SQLiteStore(Path(tmp) / "work.db")
            took = with_work(store, steps, batch, args.bytes_per_step, args.work)
            store.close()
            print(f"{name:<10}{took:>10.3f} s  (+{(took - base) / base:.0%})")

        path = Path(tmp) / "runs.db"
        t0 = time.perf_counter()
        with SQLiteStore(path) as store:
            latest = store.latest_run()
            assert latest is not None
            store.step_count(latest.id)
        print()
        print(f"reopen + latest_run + step_count: {(time.perf_counter() - t0) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
