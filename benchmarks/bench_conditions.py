"""Measures `c` to a conditional breakpoint on a long loop: `:break 6 if i == N` on a
200,000-iteration loop (600,005 steps), the condition read at every arrival at line 6 (N of
them) before the one that holds.

    python benchmarks/bench_conditions.py [--iterations 200000] [--at 150000] [--rounds 3]
        [--against DIR]

`--against DIR` measures another checkout (e.g. `git worktree add /tmp/base main`) in the same
run, round by round alternating with this one, each in a fresh process (these machines are
noisy: compare, don't clock). Each round records the program (not timed), then measures the
process CPU time of `Session.continue_forward` from step 0, without and with the run's write
index (built first, not timed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = """\
node main() {{
  let total = 0
  let i = 0
  while (i < {n}) {{
    total = total + i
    i = i + 1
  }}
  print(total)
}}
"""


def measure(iterations: int, at: int) -> dict[str, float]:
    """One round, in this process: seconds of `c` to the breakpoint, with and without index."""
    from debugger.opening import record_session
    from runtime.language.program import load_program
    from runtime.runs.runner import RunConfig

    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        os.environ["AGENCY_DB"] = str(Path(tmp) / "runs.db")
        Path("loop.agency").write_text(PROGRAM.format(n=iterations))
        out: dict[str, float] = {}
        for indexed in (False, True):
            session = record_session(load_program("loop.agency"), RunConfig(quiet=True))
            session.break_spec(f"6 if i == {at}")
            if indexed:
                session.build_index(None, None)
            start = time.process_time()  # CPU: the box is shared, wall time says little
            move = session.continue_forward(None, None)
            out["indexed" if indexed else "plain"] = time.process_time() - start
            assert move.reason.startswith("breakpoint"), move
        return out


def round_in(tree: Path, iterations: int, at: int) -> dict[str, float]:
    code = (
        f"import sys; sys.path.insert(0, {str(tree)!r}); sys.path.insert(1, {str(ROOT)!r});"
        "import json, benchmarks.bench_conditions as b;"
        f"print(json.dumps(b.measure({iterations}, {at})))"
    )
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=200_000)
    parser.add_argument("--at", type=int, default=150_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", type=Path, default=None)
    args = parser.parse_args()
    trees = [("this tree", ROOT)] + ([("against", args.against)] if args.against else [])
    results: dict[str, list[dict[str, float]]] = {name: [] for name, _ in trees}
    for r in range(args.rounds):
        for name, tree in trees:
            got = round_in(tree, args.iterations, args.at)
            results[name].append(got)
            print(
                f"round {r + 1} {name}: " + ", ".join(f"{k} {v:.2f} s CPU" for k, v in got.items())
            )
    print(f"\n# c to `:break 6 if i == {args.at}`, {args.iterations}-iteration loop (median)")
    medians = {
        name: {k: statistics.median(g[k] for g in rounds) for k in ("plain", "indexed")}
        for name, rounds in results.items()
    }
    for name, m in medians.items():
        print(f"{name:>10}: no index {m['plain']:.2f} s, indexed {m['indexed']:.2f} s")
    if args.against:
        mine, theirs = medians["this tree"], medians["against"]
        print(
            f"   speed-up: no index {theirs['plain'] / mine['plain']:.1f}×, "
            f"indexed {theirs['indexed'] / mine['indexed']:.1f}×"
        )


if __name__ == "__main__":
    main()
