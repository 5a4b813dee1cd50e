"""Issue 11, item 7: a fuzzer of checkpoint files. Real checkpoints are exported from recorded
runs of the examples; each attempt tampers with one or a few fields (drops or retypes a field,
overflows a number, moves a pc, renames a frame's function, points a function value at the
prelude or an internal builtin, marks the run failed) and runs `agency run PROG --checkpoint
FILE`. The only acceptable outcomes: one line of error naming the file, or a run equal to the
untampered one; for an edit of a value (a local, a message) any run that ends without an
internal error. `python -m tests.hardening.checkpoint_fuzz [N]` prints the figures."""

from __future__ import annotations

import copy
import json
import os
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from debugger.cli import cli
from runtime.language.stack_depths import stack_depths, unfused

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# (program, extra run arguments, steps to export)
SOURCES = [
    ("dice", ["--mock", "dice.mocks.json"], [1, 4, 6, 10]),
    ("tools", ["--mock", "tools.mocks.json"], [1, 2, 5]),
    ("retry", ["--mock", "retry.mocks.json"], [2, 4, 9]),
    ("approval", ["--approve-all"], [2, 6, 9]),
]
HUGE = "1" + "0" * 5000  # a 5,001-digit integer, written into the file's text as it is
HOSTILE = [None, "x", -1, 2**64, 1e300, [], {}, True, "\ud800", HUGE, -(2**70)]
FUNCTION_NAMES = ["__interrupt_wait", "__llm_call", "__throw", "__fs_remove", "llm", "nope", 5]


@dataclass
class Base:
    program: str
    args: list[str]
    path: Path  # the untampered checkpoint file
    data: dict[str, Any]
    outcome: tuple[int, str]  # exit code and output of the untampered run


@dataclass
class Tally:
    attempts: Counter[str] = field(default_factory=Counter)
    defects: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)


def agency(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=True)
    out = result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        out += f"\nuncaught {type(result.exception).__name__}: {result.exception}"
        return 70, out
    return result.exit_code, out


def make_corpus(work: Path) -> list[Base]:
    """Record each example, export some of its steps, and run each checkpoint untampered."""
    cwd = os.getcwd()
    os.chdir(work)
    try:
        for f in EXAMPLES.iterdir():
            (work / f.name).write_text(f.read_text())
        corpus = []
        for name, args, steps in SOURCES:
            code, out = agency("run", f"{name}.agency", *args)
            assert code == 0, out
            for k in steps:
                path = work / f"{name}-{k}.json"
                code, out = agency("export", f"last:{k}", "-o", str(path))
                assert code == 0, out
                data = json.loads(path.read_text())
                run_args = [a for a in args if a != "--approve-all"] or []
                if "--approve-all" in args:
                    run_args.append("--approve-all")
                outcome = agency(
                    "run", f"{name}.agency", "--no-record", "--checkpoint", str(path), *run_args
                )
                corpus.append(Base(name, run_args, path, data, outcome))
        return corpus
    finally:
        os.chdir(cwd)


def paths_of(x: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(x, dict):
        for k, v in x.items():
            out.extend(paths_of(v, (*prefix, k)))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            out.extend(paths_of(v, (*prefix, i)))
    return out


def at(data: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        data = data[key]
    return data


def structural_paths(data: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Fields that say where the run is and what it is: tampering with them must never give a
    different run."""
    out: list[tuple[Any, ...]] = []
    for i, f in enumerate(data["stack"]):
        for key in ("pc", "stmt_pc", "stmt_sp", "line", "col"):
            if key in f["position"]:
                out.append(("stack", i, "position", key))
        out.append(("stack", i, "scope"))
    saved = (data.get("machine") or {}).get("checkpoints") or {}
    for k, inner in saved.items():  # restored by id later in the run: checked when read
        for i in range(len(inner["stack"])):
            for key in ("pc", "stmt_pc", "stmt_sp"):
                out.append(("machine", "checkpoints", k, "stack", i, "position", key))
            out.append(("machine", "checkpoints", k, "stack", i, "scope"))
    for key in ("step", "id", "branch", "node"):
        out.append((key,))
    for key in ("step_index", "cp_counter", "thread_counter", "llm_calls", "status"):
        out.append(("machine", key))
    return out


def to_text(data: Any) -> str:
    """JSON text, with the HUGE marker written as a bare 5,001-digit number."""
    return json.dumps(data, ensure_ascii=False).replace(f'"{HUGE}"', HUGE)


def judge(base: Base, tampered: dict[str, Any], structural: bool, work: Path) -> str | None:
    """None when the outcome is acceptable, else what was wrong."""
    path = work / "tampered.json"
    try:
        text = to_text(tampered)
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
    except (ValueError, TypeError):
        return None
    cwd = os.getcwd()
    os.chdir(work)
    try:
        code, out = agency(
            "run", f"{base.program}.agency", "--no-record", "--checkpoint", str(path), *base.args
        )
    finally:
        os.chdir(cwd)
    if code == 70 or "Traceback" in out or "internal error" in out:
        return f"internal error: {out.strip().splitlines()[-1][:150] if out.strip() else code}"
    if (code, out) == base.outcome:
        return None
    lines = out.strip().splitlines()
    refused = code == 2 and len(lines) == 1 and "tampered.json" in lines[0]
    if refused:
        return None
    if structural:
        return f"accepted a tampered field (exit {code}): {(lines or [''])[-1][:150]}"
    if code in (0, 1, 3):  # a different value may give a different run
        return None
    return f"unclear outcome (exit {code}): {(lines or [''])[-1][:150]}"


_PROGRAMS: dict[str, Any] = {}


def code_of(base: Base, scope: str) -> Any:
    """The compiled function a frame of `base` runs in."""
    from runtime.language.program import load_program

    program = _PROGRAMS.get(base.program)
    if program is None:
        program = _PROGRAMS[base.program] = load_program(str(EXAMPLES / f"{base.program}.agency"))
    return program.module if scope == "<module>" else program.functions[scope]


def return_points(code: Any) -> list[int]:
    """The pcs just after a call in `code`: where a caller frame waits."""
    from runtime.language import bytecode

    calls = (bytecode.CALL, bytecode.CALL_METHOD, bytecode.ENTER_NODE)
    return [
        pc
        for pc in range(1, len(code.ops))
        if unfused(code.ops[pc - 1], code.args[pc - 1])[0] in calls
    ]


def move_to(pos: dict[str, Any], code: Any, pc: int) -> None:
    """Put a frame's position at `pc`, with the statement, line and column that go with it, so
    only its operand stack can tell."""
    starts = [p for p in code.step_pcs if p <= pc]
    if not starts:
        return
    stmt = starts[-1]
    loc = code.locations[code.step_pcs.index(stmt)]
    pos.update(pc=pc, stmt_pc=stmt, stmt_sp=min(stack_depths(code)[stmt], default=0))
    if "line" in pos:
        pos["line"] = loc.line
    if "col" in pos:
        pos["col"] = loc.col


@st.composite
def tampering(draw: st.DrawFn, corpus: list[Base]) -> tuple[Base, dict[str, Any], bool, str]:
    base = draw(st.sampled_from(corpus))
    data = copy.deepcopy(base.data)
    kind = draw(
        st.sampled_from(
            ["structure", "pc", "scope", "function", "failed", "drop", "retype", "return-point"]
        )
    )
    structural = kind not in ("drop", "retype")
    if kind == "return-point":  # a caller moved to another call's return point
        callers = [i for i, f in enumerate(data["stack"][:-1]) if f["scope"] in _SCOPES(base)]
        if not callers:
            return base, data, structural, kind
        frame = data["stack"][draw(st.sampled_from(callers))]
        code = code_of(base, frame["scope"])
        others = [pc for pc in return_points(code) if pc != frame["position"]["pc"]]
        if others:
            move_to(frame["position"], code, draw(st.sampled_from(others)))
    elif kind == "pc":
        frame = draw(st.integers(0, len(data["stack"]) - 1))
        key = draw(st.sampled_from(["pc", "stmt_pc"]))
        pos = data["stack"][frame]["position"]
        delta = draw(st.sampled_from([-2, -1, 1, 2, 3, 7]))
        pos[key] = max(0, pos[key] + delta)
        if draw(st.booleans()):
            pos["stmt_pc" if key == "pc" else "pc"] = max(0, pos[key] + draw(st.integers(-1, 1)))
    elif kind == "scope":
        frame = draw(st.integers(0, len(data["stack"]) - 1))
        data["stack"][frame]["scope"] = draw(
            st.sampled_from(["llm", "interrupt", "map", "__arr_map", "main", "nope", "<module>"])
        )
    elif kind == "function":
        targets = [p for p in paths_of(data) if p and p[0] != "machine"]
        path = draw(st.sampled_from(targets))
        parent = at(data, path[:-1])
        parent[path[-1]] = {"$function": draw(st.sampled_from(FUNCTION_NAMES))}
        structural = False  # a value changed: a different run is fine, a reachable builtin not
    elif kind == "failed":
        data.setdefault("machine", {})["status"] = "failed"
        data["machine"]["error"] = "boom"
    elif kind == "structure":
        path = draw(st.sampled_from(structural_paths(data)))
        parent = at(data, path[:-1]) if len(path) > 1 else data
        if path[-1] not in parent and not isinstance(parent, list):
            return base, data, structural, kind
        if draw(st.booleans()) and isinstance(parent, dict):
            parent.pop(path[-1])
            structural = path[-1] not in ("line", "col", "id")  # optional fields
        else:
            parent[path[-1]] = draw(st.sampled_from([*HOSTILE, 10**18, 2**53 + 1]))
    else:
        path = draw(st.sampled_from(paths_of(data)))
        parent = at(data, path[:-1])
        if kind == "drop" and isinstance(parent, dict):
            parent.pop(path[-1])
        else:
            parent[path[-1]] = draw(st.sampled_from(HOSTILE))
    return base, data, structural, kind


def _SCOPES(base: Base) -> set[str]:  # noqa: N802 - the scopes a frame of `base` can be in
    code_of(base, "<module>")
    program = _PROGRAMS[base.program]
    return {"<module>", *program.functions}


def fuzz(work: Path, corpus: list[Base], examples: int, tally: Tally) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        phases=(Phase.generate,),
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(case=tampering(corpus))
    def attempt(case: tuple[Base, dict[str, Any], bool, str]) -> None:
        base, data, structural, kind = case
        tally.attempts[kind] += 1
        problem = judge(base, data, structural, work)
        if problem is not None:
            tally.defects[kind] += 1
            if len(tally.examples) < 60:
                tally.examples.append(f"{kind} {base.path.name}: {problem}")

    attempt()


def main() -> None:
    import tempfile

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 600
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        corpus = make_corpus(work)
        tally = Tally()
        fuzz(work, corpus, n, tally)
    total = sum(tally.attempts.values())
    bad = sum(tally.defects.values())
    print(f"checkpoint files: {total} attempts, {total - bad} clean, {bad} defects")
    for kind in sorted(tally.attempts):
        print(f"  {kind}: {tally.attempts[kind]} attempts, {tally.defects[kind]} defects")
    for line in tally.examples:
        print("   ", line)


if __name__ == "__main__":
    main()
