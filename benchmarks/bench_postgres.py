"""Measures the PostgreSQL run store against SQLite and against not recording, side by side.

Run: `python benchmarks/bench_postgres.py [--quick] [--url postgresql://...]` (default URL:
`$AGENCY_TEST_POSTGRES`, which `.ci/run` sets; each measurement gets a fresh schema, dropped
afterwards). Figures:

1. recording overhead on a 1e5-iteration loop: bare `Machine.run()` vs recorded to SQLite vs
   recorded to PostgreSQL (best of 3 each);
2. 8 concurrent writers (processes), each recording its own run: total steps/s, PostgreSQL and
   SQLite (one file);
3. `state_at` p50/p99 at 1,000 random steps of a 1M-step run, idle and while the 8 write,
   and its round trips (queries counted) with `state_span`'s one query vs one query per read;
4. bytes per step and per run in PostgreSQL (tables + indexes + TOAST), projected to a team's
   volume (1,000 runs a day of 100k steps).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg  # noqa: E402

from runtime.language.program import compile_source  # noqa: E402
from runtime.record.pg_store import PostgresStore  # noqa: E402
from runtime.record.sqlite_store import SQLiteStore  # noqa: E402
from runtime.record.store import StateSpan  # noqa: E402
from runtime.runs.fork import Timeline  # noqa: E402
from runtime.runs.recording import record_program  # noqa: E402
from runtime.runs.runner import RunConfig, new_machine  # noqa: E402

LOOP = """node main() {
  let i = 0
  let total = 0
  while (i < %d) {
    i = i + 1
    total = total + i
  }
  return total
}
"""

WRITER = """
import sys, time
sys.path.insert(0, sys.argv[3])
from runtime.language.program import compile_source
from runtime.record.stores import open_run_store
from runtime.runs.recording import record_program
from runtime.runs.runner import RunConfig
program = compile_source(sys.argv[2], "loop.agency")
store = open_run_store(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
t0 = time.perf_counter()
rec = record_program(program, RunConfig(model_spec="sim", root=".", quiet=True), store)
store.close()
print(rec.machine.step_index + 1, time.perf_counter() - t0, flush=True)
"""


def config(root: str) -> RunConfig:
    return RunConfig(model_spec="sim", root=root, quiet=True)


@contextmanager
def schema(base: str) -> Iterator[str]:
    name = "bench_" + secrets.token_hex(4)
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    parts = urllib.parse.urlsplit(base)
    query = urllib.parse.parse_qsl(parts.query) + [("options", f"-csearch_path={name}")]
    try:
        yield urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {name} CASCADE")


def overhead(base: str, n: int, rounds: int = 3) -> dict[str, Any]:
    program = compile_source(LOOP % n, "loop.agency")
    times: dict[str, list[float]] = {"bare": [], "sqlite": [], "postgres": []}
    steps = 0
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            m = new_machine(program, config(tmp))
            t0 = time.perf_counter()
            m.run()
            times["bare"].append(time.perf_counter() - t0)
            for kind in ("sqlite", "postgres"):
                with schema(base) as url:
                    store: Any
                    if kind == "sqlite":
                        store = SQLiteStore(Path(tmp) / "runs.db")
                    else:
                        store = PostgresStore(url)
                    t0 = time.perf_counter()
                    rec = record_program(program, config(tmp), store)
                    store.close()
                    times[kind].append(time.perf_counter() - t0)
                    steps = rec.machine.step_index + 1
    best = {k: min(v) for k, v in times.items()}
    return {"steps": steps, **best}


def writers(location: str, n_writers: int, iterations: int) -> dict[str, float]:
    """`n_writers` processes record a loop each into `location`, started together."""
    root = str(Path(__file__).resolve().parents[1])
    src = LOOP % iterations
    with tempfile.TemporaryDirectory() as tmp:
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", WRITER, location, src, root],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                cwd=tmp,
                text=True,
            )
            for _ in range(n_writers)
        ]
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        t0 = time.perf_counter()
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        outs = [p.communicate()[0].split() for p in procs]
        wall = time.perf_counter() - t0
    steps = sum(int(o[0]) for o in outs)
    return {"steps": steps, "wall": wall, "steps_per_s": steps / wall}


def percentile(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


class SeparateReads:
    """A store whose `state_span` makes one query per read (the keyframe, the batches, the later
    keyframe steps; the base asked for by the timeline), as the timeline read before it."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def state_span(
        self, run_id: str, branch: int, step: int, batches_to: int, keyframes_to: int
    ) -> StateSpan:
        kf = self.store.keyframe_at_or_before(run_id, branch, step)
        start = step if kf is None or kf.step == step else kf.step + 1
        return StateSpan(
            kf,
            None,
            self.store.batches(run_id, branch, start, batches_to),
            self.store.keyframe_steps(run_id, branch, step + 1, keyframes_to),
        )


@contextmanager
def counting_queries() -> Iterator[list[int]]:
    """Counts the statements this process sends to PostgreSQL (each one a round trip)."""
    count = [0]
    execute = psycopg.Cursor.execute

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return execute(self, *args, **kwargs)

    psycopg.Cursor.execute = counted  # type: ignore[method-assign]
    try:
        yield count
    finally:
        psycopg.Cursor.execute = execute  # type: ignore[method-assign]


def access(
    location: str, run_id: str, samples: int, separate: bool = False, cold: bool = False
) -> tuple[float, float, float]:
    """p50 and p99 ms of `state_at` at random steps, and the queries (round trips) it made
    on average; `cold`: each on a new timeline (nothing cached: a first look at a step)."""
    store: Any = (
        PostgresStore(location, read_only=True)
        if location.startswith("postgresql://")
        else SQLiteStore(location, read_only=True)
    )
    with store, counting_queries() as count:
        tl = Timeline.open(SeparateReads(store) if separate else store, run_id)
        n = len(tl)
        rng = random.Random(1)
        times = []
        queries = 0
        for _ in range(samples):
            k = rng.randrange(n)
            if cold:
                tl = Timeline(tl.store, run_id)
                len(tl)
            before = count[0]
            t0 = time.perf_counter()
            tl.state_at(k)
            times.append((time.perf_counter() - t0) * 1000)
            queries += count[0] - before
        queries /= samples
    return percentile(times, 0.50), percentile(times, 0.99), queries


def round_trip(url: str, samples: int) -> tuple[float, float]:
    """p50/p99 of `SELECT 1` from Python: what one query costs before any work."""
    with psycopg.connect(url, autocommit=True) as conn:
        times = []
        for _ in range(samples):
            t0 = time.perf_counter()
            conn.execute("SELECT 1").fetchone()
            times.append((time.perf_counter() - t0) * 1000)
    return percentile(times, 0.50), percentile(times, 0.99)


def relation_bytes(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() AND c.relkind = 'r'"
        ).fetchone()
    return int(row[0]) if row else 0


def sizing(base: str, iterations: int) -> dict[str, float]:
    """Marginal bytes per step (two runs of n and 2n iterations) and bytes of a 1-step run."""
    out: dict[str, float] = {}
    sizes = []
    for n in (iterations, 2 * iterations):
        with schema(base) as url, tempfile.TemporaryDirectory() as tmp:
            store = PostgresStore(url)
            rec = record_program(compile_source(LOOP % n, "s.agency"), config(tmp), store)
            store.close()
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("VACUUM ANALYZE")
            sizes.append((rec.machine.step_index + 1, relation_bytes(url)))
    (s1, b1), (s2, b2) = sizes
    out["bytes_per_step"] = (b2 - b1) / (s2 - s1)
    with schema(base) as url, tempfile.TemporaryDirectory() as tmp:
        store = PostgresStore(url)
        empty = relation_bytes(url)
        for _ in range(50):
            record_program(compile_source(LOOP % 1, "s.agency"), config(tmp), store)
        store.close()
        out["bytes_per_small_run"] = (relation_bytes(url) - empty) / 50
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--url", default=os.environ.get("AGENCY_TEST_POSTGRES"))
    args = parser.parse_args()
    if not args.url:
        sys.exit("give --url postgresql://... or set AGENCY_TEST_POSTGRES (see .ci/run)")
    n = 10_000 if args.quick else 100_000
    big = 30_000 if args.quick else 333_334  # ~3 steps per iteration: 1M steps
    per_writer = 5_000 if args.quick else 50_000
    samples = 200 if args.quick else 1000
    print(
        f"# bench_postgres ({'quick' if args.quick else 'full'}) — python "
        f"{platform.python_version()}, nproc {os.cpu_count()}"
    )

    o = overhead(args.url, n)
    print(f"\n## Recording overhead ({n} iterations, {o['steps']} steps; best of 3)")
    print(f"bare Machine.run():        {o['bare']:.3f} s")
    print(f"recorded to SQLite:        {o['sqlite']:.3f} s  ({o['sqlite'] / o['bare']:.2f}x bare)")
    print(
        f"recorded to PostgreSQL:    {o['postgres']:.3f} s  ({o['postgres'] / o['bare']:.2f}x "
        f"bare, {o['postgres'] / o['sqlite']:.2f}x SQLite)"
    )

    with schema(args.url) as url, tempfile.TemporaryDirectory() as tmp:
        store = PostgresStore(url)
        t0 = time.perf_counter()
        rec = record_program(compile_source(LOOP % big, "big.agency"), config(tmp), store)
        store.close()
        recorded_s = time.perf_counter() - t0
        idle = access(url, rec.run_id, samples)
        separate = access(url, rec.run_id, samples, separate=True)
        cold = access(url, rec.run_id, samples, cold=True)
        cold_separate = access(url, rec.run_id, samples, separate=True, cold=True)
        pg = writers(url, 8, per_writer)
        loaded_box: dict[str, tuple[float, float, float]] = {}
        root = str(Path(__file__).resolve().parents[1])
        # Reads while 8 writers record: the writers run in their own processes.
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", WRITER, url, LOOP % (per_writer * 100), root],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                cwd=tmp,
                text=True,
            )
            for _ in range(8)
        ]
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        loaded_box["p"] = access(url, rec.run_id, samples)
        busy = sum(p.poll() is None for p in procs)
        for p in procs:  # they were only there to write meanwhile
            p.kill()
            p.communicate()
        sqlite = writers(str(Path(tmp) / "shared.db"), 8, per_writer)
        lite_path = str(Path(tmp) / "big.db")
        lite = SQLiteStore(lite_path)
        lite_rec = record_program(compile_source(LOOP % big, "big.agency"), config(tmp), lite)
        lite.close()
        lite_idle = access(lite_path, lite_rec.run_id, samples)
    print(f"\n## 8 concurrent writers ({per_writer} iterations each, one process each)")
    print(f"PostgreSQL:                {pg['steps_per_s']:,.0f} steps/s ({pg['steps']} steps)")
    print(f"SQLite (one file):         {sqlite['steps_per_s']:,.0f} steps/s")
    print(f"ratio PostgreSQL/SQLite:   {pg['steps_per_s'] / sqlite['steps_per_s']:.2f}")
    loaded = loaded_box["p"]
    print(
        f"\n## state_at on a {rec.machine.step_index + 1}-step run "
        f"(recorded to PostgreSQL in {recorded_s:.1f} s), {samples} random steps"
    )
    trip = round_trip(args.url, samples)
    print(f"SQLite, idle:              p50 {lite_idle[0]:.2f} ms, p99 {lite_idle[1]:.2f} ms")
    print(f"PostgreSQL, idle:          p50 {idle[0]:.2f} ms, p99 {idle[1]:.2f} ms")
    print(
        f"PostgreSQL, 8 writing:     p50 {loaded[0]:.2f} ms, p99 {loaded[1]:.2f} ms "
        f"({busy} of 8 still writing at the end)"
    )
    print(f"one round trip (SELECT 1): p50 {trip[0]:.2f} ms, p99 {trip[1]:.2f} ms")
    print("\nround trips per state_at (PostgreSQL, idle, the same random steps; queries counted):")
    print("                          one timeline               a new timeline per step")
    for label, warm_case, cold_case in (
        ("state_span, one query:", idle, cold),
        ("one query per read:   ", separate, cold_separate),
    ):
        print(
            f"  {label}  {warm_case[2]:.2f} (p50 {warm_case[0]:.2f} ms)"
            f"       {cold_case[2]:.2f} (p50 {cold_case[0]:.2f} ms, p99 {cold_case[1]:.2f} ms)"
        )
    print(
        f"  fewer round trips:      {separate[2] / max(idle[2], 1e-9):.1f}x"
        f"                       {cold_separate[2] / max(cold[2], 1e-9):.1f}x "
        "(one query per read: how the timeline read before state_span)"
    )

    z = sizing(args.url, n // 2)
    per_step = z["bytes_per_step"]
    per_run = z["bytes_per_small_run"]
    day_steps = 1000 * 100_000
    day_bytes = day_steps * per_step + 1000 * per_run
    print("\n## Sizing (PostgreSQL: tables + indexes + TOAST, after VACUUM)")
    print(f"marginal bytes per step:   {per_step:.1f} B")
    print(f"bytes per (tiny) run:      {per_run / 1024:.1f} KiB")
    print(
        f"1,000 runs/day x 100k steps: {day_bytes / 2**30:.1f} GiB/day, "
        f"{day_steps / 86400:,.0f} steps/s averaged over the day; "
        f"`agency prune --older-than 7d` bounds it at ~{7 * day_bytes / 2**30:.0f} GiB"
    )


if __name__ == "__main__":
    main()
