"""Measures the debugger TUI on a 1,000,000-step recorded run: opening it, keypress to
updated screen while scrubbing, and search (`/`), last writer (`y`) and a watchpoint's reverse
continue (`C`) to updated screen.

    python benchmarks/bench_tui.py [--steps 1000000] [--keys 400]

The run is recorded once into a SQLite run store in a temporary folder; the app opens it the way
`agency debugger --trace runs.db` does, headless under Pilot at 120x36.

Latency is measured per key: the key event goes to the app, the clock stops when the app has
redrawn its panels for that key and the screen has been composited (the work a terminal user
waits for). Pilot's own settle time (it sleeps until the process looks idle, ~60 ms a key) is
not part of what a person sees, so it is left out; it is printed separately for reference.

Search and last writer answer from the run's write index, built once per session in a worker
(the first `/` or `y` shows its progress; Esc cancels it): its build time is reported, then the
p95 of searches for fresh texts and of last-writer jumps from random steps. Then, once each:
the scrubber's breakpoint marks for a line reached 250,000 times, and a `:trace` over a
variable written every iteration (one pass over the run; the app runs it in a worker).

Last, a run of `--calls` llm() calls in one growing conversation (mock answers): keypress to
updated screen for `[`, `]` and steps across calls, where the LLM and messages panels change.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from textual import events  # noqa: E402

PROGRAM = """\
node main() {{
  let total = 0
  let i = 0
  let log = []
  while (i < {n}) {{
    total = total + i
    i = i + 1
    if (i % 100000 == 0) {{ log.push(total) }}
  }}
  print("total", total)
  return total
}}
"""

BUDGET_MS = 50.0
OPEN_BUDGET_S = 2.0
QUERY_BUDGET_MS = 1000.0  # search, last writer and watchpoint reverse-continue, p95


def record(folder: Path, steps: int) -> tuple[Path, int]:
    from runtime.language.program import load_program
    from runtime.record.sqlite_store import SQLiteStore
    from runtime.runs.recording import record_program
    from runtime.runs.runner import RunConfig

    source = folder / "big.agency"
    source.write_text(PROGRAM.format(n=max(steps // 4, 1)))  # four steps an iteration
    program = load_program(str(source))
    db = folder / "runs.db"
    store = SQLiteStore(db)
    started = time.perf_counter()
    recording = record_program(program, RunConfig(mocks=[], quiet=True), store=store)
    length = len(recording.timeline)
    store.close()
    print(f"recorded {length:,} steps in {time.perf_counter() - started:.2f} s")
    return db, length


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def press(app, key: str) -> float:  # noqa: ANN001 - DebuggerApp
    """Seconds from a key event reaching the app to the screen being updated for it."""
    before = app.renders
    started = time.perf_counter()
    app.post_message(events.Key(key, key if len(key) == 1 else None))
    while app.renders == before:
        await asyncio.sleep(0)
    app.screen._on_timer_update()  # composite and write the update now
    return time.perf_counter() - started


async def measure(db: Path, length: int, keys: int) -> tuple[float, list[float], float]:
    from debugger.debug_command import build_app
    from tests.debugger.conftest import SIZE

    started = time.perf_counter()
    app = build_app(None, trace=str(db))
    async with app.run_test(size=SIZE) as pilot:
        while app.session is None or app.renders == 0:
            await asyncio.sleep(0.001)
        app.screen._on_timer_update()
        opened = time.perf_counter() - started
        await pilot.pause()

        rng = random.Random(7)
        latencies: list[float] = []
        script: list[str] = []
        while len(script) < keys:
            script += rng.choice(
                [
                    ["s"] * 20,
                    ["S"] * 20,
                    ["n"] * 5,
                    ["N"] * 5,
                    ["right_square_bracket"],
                    ["end"],
                    ["home"],
                ]
            )
        script = script[:keys]
        # jump around the run between bursts, as a scrub would
        for i, key in enumerate(script):
            if i % 40 == 0:
                app.session.goto(rng.randrange(length))
                app._refresh_view()
                await pilot.pause()
            latencies.append(await press(app, key))
        pilot_started = time.perf_counter()
        for _ in range(10):
            await pilot.press("s")
        pilot_each = (time.perf_counter() - pilot_started) / 10

        s = app.session
        started = time.perf_counter()
        assert s.build_index()
        queries["index build (once)"] = [time.perf_counter() - started]
        needles = ["total", "log", "tot", "i", "no such text", "otal", "lo", "al"]
        searches = []
        for n in range(24):
            s.goto(rng.randrange(length))
            s._search_hits.clear()  # a fresh search every time, not the session's cache
            searches.append(await act(app, lambda n=n: app.cmd_search(needles[n % len(needles)])))
        queries["search"] = searches
        whys = []
        for n in range(24):
            s.goto(rng.randrange(length // 2, length - 2))
            name = "log" if n % 2 else "total"
            whys.append(
                await act(app, lambda name=name: app._indexed(lambda: s.why(name, "locals")))
            )
        queries["last writer"] = whys
        # a watchpoint on a list changed in place every 100,000 iterations: C walks back
        # from write to write (the index), not step by step
        s.add_watch("log.length", stops=True)
        reverse = []
        for _ in range(12):
            s.goto(rng.randrange(length // 2, length - 2))
            reverse.append(await act(app, app.action_reverse_continue))
            assert s.message.startswith("watchpoint"), s.message
        queries["watchpoint reverse-continue"] = reverse
        s.remove_watch("all")
        # the scrubber's marks for a line reached 250,000 times, from the index
        s.break_spec("6")  # total = total + i
        started = time.perf_counter()
        hits, _ = s.breakpoint_marks() or ([], [])
        once["breakpoint marks (250k hits)"] = (time.perf_counter() - started, len(hits))
        s.break_spec("6")
        # `:trace` of an expression over a variable written every iteration: one pass
        started, cpu = time.perf_counter(), time.process_time()
        found = s.trace("i % 100000 == 0")
        once[":trace i % 100000 == 0"] = (time.perf_counter() - started, len(found))
        once[":trace CPU"] = (time.process_time() - cpu, len(found))
    return opened, latencies, pilot_each


async def act(app, fn) -> float:  # noqa: ANN001 - DebuggerApp, a callable
    """Seconds from running `fn` (what a key runs) to the screen being updated for it."""
    before = app.renders
    started = time.perf_counter()
    fn()
    while app.renders == before:
        await asyncio.sleep(0)
    app.screen._on_timer_update()
    return time.perf_counter() - started


async def measure_conversation(folder: Path, calls: int) -> list[float]:
    """Keypress latencies moving between the calls of a recorded `calls`-call conversation."""
    from benchmarks.bench_llm_runs import PAD, answers
    from benchmarks.bench_llm_runs import PROGRAM as CHAT
    from debugger.debug_command import build_app
    from runtime.language.program import load_program
    from runtime.record.sqlite_store import SQLiteStore
    from runtime.runs.recording import record_program
    from runtime.runs.runner import RunConfig
    from tests.debugger.conftest import SIZE

    source = folder / "chat.agency"
    source.write_text(CHAT % (calls, PAD))
    db = folder / "chat.db"
    store = SQLiteStore(db)
    record_program(load_program(str(source)), RunConfig(mocks=answers(calls), quiet=True), store)
    store.close()
    app = build_app(None, trace=str(db))
    latencies: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        while app.session is None or app.renders == 0:
            await asyncio.sleep(0.001)
        await pilot.pause()
        await pilot.press("end")
        rng = random.Random(11)
        for _ in range(60):
            key = rng.choice(["left_square_bracket", "right_square_bracket", "s", "S"])
            latencies.append(await press(app, key))
    return latencies


queries: dict[str, list[float]] = {}
once: dict[str, tuple[float, int]] = {}  # label -> (seconds, how many found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=400)
    parser.add_argument("--calls", type=int, default=400, help="llm() calls in the conversation")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        db, length = record(Path(tmp), options.steps)
        opened, latencies, pilot_each = asyncio.run(measure(db, length, options.keys))
        chat = asyncio.run(measure_conversation(Path(tmp), options.calls))
    ms = [x * 1000 for x in latencies]
    p50, p95, worst = percentile(ms, 0.5), percentile(ms, 0.95), max(ms)
    print(f"opened a {length:,}-step run in {opened:.2f} s (budget {OPEN_BUDGET_S:.0f} s)")
    print(
        f"keypress to updated screen over {len(ms)} keys: p50 {p50:.1f} ms, p95 {p95:.1f} ms, "
        f"max {worst:.1f} ms, mean {statistics.mean(ms):.1f} ms (budget p95 {BUDGET_MS:.0f} ms)"
    )
    print(f"for reference, Pilot's press() with its idle wait: {pilot_each * 1000:.0f} ms a key")
    ok = p95 <= BUDGET_MS and opened <= OPEN_BUDGET_S
    for label, values in queries.items():
        ms = [x * 1000 for x in values]
        if len(ms) == 1:
            print(f"{label}: {ms[0]:.0f} ms (in a worker, with progress and Esc)")
            continue
        q95 = percentile(ms, 0.95)
        print(
            f"{label} to updated screen over {len(ms)} queries: p50 {percentile(ms, 0.5):.1f} ms, "
            f"p95 {q95:.1f} ms, max {max(ms):.1f} ms (budget p95 {QUERY_BUDGET_MS:.0f} ms)"
        )
        ok = ok and q95 <= QUERY_BUDGET_MS
    for label, (seconds, found) in once.items():
        print(f"{label}: {seconds * 1000:.0f} ms ({found:,} found; in a worker, with Esc)")
    ms = [x * 1000 for x in chat]
    c95 = percentile(ms, 0.95)
    print(
        f"a {options.calls}-call conversation, [ ] s S over {len(ms)} keys: p50 "
        f"{percentile(ms, 0.5):.1f} ms, p95 {c95:.1f} ms, max {max(ms):.1f} ms "
        f"(budget p95 {BUDGET_MS:.0f} ms)"
    )
    ok = ok and c95 <= BUDGET_MS
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
