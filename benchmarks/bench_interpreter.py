"""Measures the interpreter against CPython, and the `agency` command's start-up.

Run: `python benchmarks/bench_interpreter.py [--quick] [--root DIR]`. Each program runs three
ways in one process, alternated (best of `--rounds`): our machine unrecorded (`Machine.run()`),
recorded to SQLite (`record_program`, flush and close included), and the same algorithm as
plain CPython. Times are the process's CPU time (the store's writer thread included), which a
busy shared machine disturbs less than wall time. Start-up is the CPU time (user + system) of
the `agency` console script (the one the checkout's pyproject.toml names) in a child process,
beside `python -c pass`, in a virtual environment holding the dependencies as an installed
package sees them (`installed_python`), the checkout byte-compiled.

`--root DIR` measures another checkout with this same script: its `runtime/` and `debugger/` are
imported instead of this one's. `--against DIR` measures another checkout beside this one in the
same run (say the interpreter as it was when issue 13 was filed: `git archive c60c0f0 | tar -x -C
/tmp/before`): each round runs this tree, then that one in a child process (`--one`), so both
see the same load, and the table gives both and the speed-up (theirs / ours, best against best);
`--part startup --against DIR` alternates the start-up rounds between the two trees.

With the compiled interpreter built (`make compiled`), each round also runs this tree as pure
Python in a child process (`AGENCY_PURE_PYTHON=1`), and the table gives compiled, pure and
CPython side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# name -> (Agency source, CPython source), both with a `%d` for the size.
PROGRAMS: dict[str, tuple[str, str]] = {
    "while loop": (
        """node main() {
  let i = 0
  let total = 0
  while (i < %d) {
    i = i + 1
    total = total + i
  }
  return total
}
""",
        """def main():
    i = 0
    total = 0
    while i < %d:
        i = i + 1
        total = total + i
    return total
""",
    ),
    "for range loop": (
        """node main() {
  let total = 0
  for (i in range(%d)) {
    total = total + i * 2
  }
  return total
}
""",
        """def main():
    total = 0
    for i in range(%d):
        total = total + i * 2
    return total
""",
    ),
    "array loop": (
        """node main() {
  let xs = []
  for (i in range(%d)) {
    xs.push(i)
  }
  let total = 0
  for (x in xs) {
    if (x %% 3 == 0) {
      total += x
    }
  }
  return total
}
""",
        """def main():
    xs = []
    for i in range(%d):
        xs.append(i)
    total = 0
    for x in xs:
        if x %% 3 == 0:
            total += x
    return total
""",
    ),
    "calls (fib)": (
        """def fib(n) {
  if (n < 2) {
    return n
  }
  return fib(n - 1) + fib(n - 2)
}

node main() {
  return fib(%d)
}
""",
        """def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)

def main():
    return fib(%d)
""",
    ),
}

SIZES = {"while loop": 100_000, "for range loop": 100_000, "array loop": 50_000, "calls (fib)": 20}
QUICK = {"while loop": 10_000, "for range loop": 10_000, "array loop": 5_000, "calls (fib)": 15}


def measure(name: str, n: int, rounds: int) -> dict[str, float]:
    from runtime.language.program import compile_source
    from runtime.record.sqlite_store import SQLiteStore
    from runtime.runs.recording import record_program
    from runtime.runs.runner import RunConfig, new_machine

    agency, python = PROGRAMS[name]
    program = compile_source(agency % n, "bench.agency")
    namespace: dict[str, Any] = {}
    exec(compile(python % n, "bench.py", "exec"), namespace)
    best = {"bare": float("inf"), "recorded": float("inf"), "cpython": float("inf")}
    steps = 0
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            config = RunConfig(model_spec="sim", root=tmp, quiet=True)
            m = new_machine(program, config)
            t0 = time.process_time()
            m.run()
            best["bare"] = min(best["bare"], time.process_time() - t0)
            store = SQLiteStore(Path(tmp) / "runs.db")
            t0 = time.process_time()
            rec = record_program(program, config, store)
            store.flush()
            store.close()
            best["recorded"] = min(best["recorded"], time.process_time() - t0)
            t0 = time.process_time()
            expected = namespace["main"]()
            best["cpython"] = min(best["cpython"], time.process_time() - t0)
            assert m.result == rec.machine.result == expected, (m.result, expected)
            steps = rec.machine.step_index + 1
    best["steps"] = steps
    return best


def measure_against(root: Path, name: str, n: int, pure: bool = False) -> dict[str, float]:
    """One round of `measure` on the checkout at `root`, in a child process (with the compiled
    interpreter turned off if `pure`)."""
    argv = [sys.executable, __file__, "--root", str(root), "--one", name, "--size", str(n)]
    env = dict(os.environ, AGENCY_PURE_PYTHON="1") if pure else None
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"measuring {name!r} on {root} failed:\n{done.stderr}")
    return dict(json.loads(done.stdout))


def compiled_machine() -> bool:
    """True if the machine this process imported is the compiled one (`make compiled`)."""
    import runtime.vm.machine

    return not str(runtime.vm.machine.__file__).endswith(".py")


def keep_best(best: dict[str, float], got: dict[str, float]) -> None:
    for key, value in got.items():
        best[key] = min(best.get(key, value), value)


def child_cpu(argv: list[str], cwd: str, env: dict[str, str]) -> float:
    """CPU seconds (user + system) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def console_script(root: Path) -> str:
    """The code of the `agency` console script of the checkout at `root`, as pip writes it
    from its pyproject.toml (`module:function`)."""
    import tomllib

    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    module, _, function = project["scripts"]["agency"].partition(":")
    return f"import sys; from {module} import {function}; sys.exit({function}())"


def installed_python(tmp: str) -> str:
    """A fresh virtual environment's interpreter that sees this one's packages (click and the
    rest) as an installed package does: as plain directories. This environment's editable
    install of agency-debugger adds an import hook to every interpreter's start (it imports
    pathlib, typing and importlib.util, a third of `python -c pass` here) that an installed
    package does not have; the checkout measured comes first on PYTHONPATH."""
    import site
    import venv

    home = Path(tmp) / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(home)
    (purelib,) = home.glob("lib/python*/site-packages")
    (purelib / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n", encoding="utf-8")
    return str(home / "bin" / "python")


def startup(roots: list[Path], rounds: int) -> list[dict[str, float]]:
    """Best-of CPU time of `python -c pass`, `agency --version`, `agency show`, `agency runs` and
    `agency --help`, for each checkout in `roots`, rounds alternated between them so that they
    see the same load."""
    import compileall

    from runtime.language.program import compile_source
    from runtime.record.sqlite_store import SQLiteStore
    from runtime.runs.recording import record_program
    from runtime.runs.runner import RunConfig

    for root in roots:  # byte-compiled, as an installed package is (`make` does both)
        for package in ("runtime", "debugger"):
            compileall.compile_dir(root / package, quiet=1)
        if (root / "runtime" / "language" / "parse_cache.py").exists():  # the prelude's tree
            warm = [sys.executable, "-m", "runtime.language.parse_cache"]
            subprocess.run(
                warm, check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(root)}
            )
    best: list[dict[str, float]] = [{} for _ in roots]
    with tempfile.TemporaryDirectory() as tmp:
        python = installed_python(tmp)
        db = str(Path(tmp) / "runs.db")
        store = SQLiteStore(Path(db))
        program = compile_source(PROGRAMS["while loop"][0] % 50, "bench.agency")
        rec = record_program(program, RunConfig(model_spec="sim", root=tmp, quiet=True), store)
        store.close()
        hello = Path(tmp) / "hello.agency"
        hello.write_text('node main() {\n  print("hello")\n}\n', encoding="utf-8")
        for _ in range(rounds):
            for root, out in zip(roots, best):
                agency = [python, "-c", console_script(root)]
                env = dict(os.environ, PYTHONPATH=str(root), NO_COLOR="1")
                cases = {
                    "python -c pass": [python, "-c", "pass"],
                    "agency --version": [*agency, "--version"],
                    "agency show RUN:STEP": [*agency, "show", f"{rec.run_id}:40", "--db", db],
                    "agency show RUN --json": [*agency, "show", rec.run_id, "--db", db, "--json"],
                    "agency runs": [*agency, "runs", "--db", db],
                    "agency runs --json": [*agency, "runs", "--db", db, "--json"],
                    "agency --help": [*agency, "--help"],
                    "agency run F --no-record": [*agency, "run", str(hello), "--no-record"],
                    "agency run F (recorded)": [*agency, "run", str(hello), "--db", db],
                }
                for label, argv in cases.items():
                    keep_best(out, {label: child_cpu(argv, tmp, env)})
    return best


def print_startup(roots: list[Path], rounds: int) -> None:
    print(
        f"\n## Start-up (CPU time, user + system, best of {rounds}; installed as a package,"
        " byte-compiled)"
    )
    got = startup(roots, rounds)
    here = min(
        child_cpu([sys.executable, "-c", "pass"], ".", dict(os.environ)) for _ in range(rounds)
    )
    head = f"{'':<26} {'this tree':>20}"
    if len(roots) > 1:
        head += f" {'--against':>20} {'ratio':>8}"
    print(head)
    for label, cpu in got[0].items():
        line = f"{label:<26} {cpu:>8.3f} s ({cpu / got[0]['python -c pass']:4.1f}x py)"
        if len(roots) > 1:
            them = got[1][label]
            line += (
                f" {them:>8.3f} s ({them / got[1]['python -c pass']:4.1f}x py) {them / cpu:>7.2f}x"
            )
        print(line)
    print(
        f"(python -c pass in this venv, with its editable install's import hook:"
        f" {here:.3f} s" + ("; ratio: --against / this tree)" if len(roots) > 1 else ")")
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller programs (a smoke run)")
    ap.add_argument("--rounds", type=int, default=3, help="best of this many (default 3)")
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure")
    ap.add_argument("--against", type=Path, help="another checkout, measured beside this one")
    ap.add_argument(
        "--part", choices=("all", "interpreter", "startup"), default="all", help="what to measure"
    )
    ap.add_argument("--one", choices=sorted(PROGRAMS), help=argparse.SUPPRESS)  # for --against
    ap.add_argument("--size", type=int, help=argparse.SUPPRESS)
    opts = ap.parse_args()
    root = opts.root.resolve()
    sys.path.insert(0, str(root))
    import runtime

    assert Path(runtime.__file__).resolve().parent == root / "runtime", runtime.__file__
    if opts.one:
        print(json.dumps(measure(opts.one, opts.size, 1)))
        return
    against = opts.against.resolve() if opts.against else None
    compiled = compiled_machine()
    print(
        f"# bench_interpreter ({'quick' if opts.quick else 'full'}) — {root}, "
        f"python {platform.python_version()}, nproc {os.cpu_count()}, "
        + ("compiled interpreter (make compiled)" if compiled else "pure Python")
    )
    if opts.part != "startup":
        print(
            f"\n## Interpreter (best of {opts.rounds}; ratios to CPython running the same algorithm)"
        )
        head = (
            f"{'program':<16} {'steps':>8} {'cpython':>9} {'bare':>9} {'recorded':>9}"
            f" {'bare/py':>8} {'rec/py':>8} {'rec/bare':>9} {'µs/step':>8}"
        )
        if compiled:
            head += f" | {'pure':>9} {'recorded':>9} {'pure/py':>8} {'speed-up':>9}"
        if against:
            head += f" | {'--against':>9} {'recorded':>9} {'rec/bare':>9} {'speed-up':>9}"
        print(head)
    sizes = QUICK if opts.quick else SIZES
    for name, n in sizes.items() if opts.part != "startup" else ():
        r: dict[str, float] = {}
        o: dict[str, float] = {}
        p: dict[str, float] = {}
        for _ in range(opts.rounds):  # alternated, so every column sees the same load
            keep_best(r, measure(name, n, 1))
            if compiled:
                keep_best(p, measure_against(root, name, n, pure=True))
            if against:
                keep_best(o, measure_against(against, name, n))
        line = (
            f"{name:<16} {int(r['steps']):>8} {r['cpython']:>8.3f}s {r['bare']:>8.3f}s"
            f" {r['recorded']:>8.3f}s {r['bare'] / r['cpython']:>7.1f}x"
            f" {r['recorded'] / r['cpython']:>7.1f}x {r['recorded'] / r['bare']:>8.2f}x"
            f" {r['bare'] / r['steps'] * 1e6:>8.2f}"
        )
        if p:
            line += (
                f" | {p['bare']:>8.3f}s {p['recorded']:>8.3f}s {p['bare'] / r['cpython']:>7.1f}x"
                f" {p['bare'] / r['bare']:>8.2f}x"
            )
        if o:
            line += (
                f" | {o['bare']:>8.3f}s {o['recorded']:>8.3f}s {o['recorded'] / o['bare']:>8.2f}x"
                f" {o['bare'] / r['bare']:>8.2f}x"
            )
        print(line)
    if compiled and opts.part != "startup":
        print(
            "(pure: this tree with AGENCY_PURE_PYTHON=1, in a child process; speed-up: its bare"
            " time / the compiled one's, best of each)"
        )
    if against and opts.part != "startup":
        print(f"(--against {against}; speed-up: its bare time / this tree's, best of each)")
    if opts.part == "interpreter":
        return
    print_startup([root, against] if against else [root], max(opts.rounds, 5))


if __name__ == "__main__":
    main()
