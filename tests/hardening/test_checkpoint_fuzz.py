"""Issue 11, item 7: tampered checkpoint files give one line of error naming the file, or the
untampered run; never an internal error, never a different run from a moved pc."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from runtime.language import bytecode as B
from tests.hardening import checkpoint_fuzz as fuzz


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[fuzz.Base]]:
    work = tmp_path_factory.mktemp("fuzz")
    return work, fuzz.make_corpus(work)


def test_tampered_checkpoints_are_refused_or_run_as_they_were(corpus: Any) -> None:
    work, bases = corpus
    assert all(b.outcome[0] in (0, 3) for b in bases)
    tally = fuzz.Tally()
    fuzz.fuzz(work, bases, 150, tally)
    assert sum(tally.attempts.values()) == 150
    assert not tally.defects, "\n".join(tally.examples)


def refused(corpus: Any, edit: Any, base_name: str = "dice-4.json") -> str:
    work, bases = corpus
    base = next(b for b in bases if b.path.name == base_name)
    data = json.loads(json.dumps(base.data))
    edit(data)
    problem = fuzz.judge(base, data, True, work)
    assert problem is None, problem
    path = work / "tampered.json"
    path.write_text(fuzz.to_text(data))
    cwd = os.getcwd()
    os.chdir(work)
    try:
        code, out = fuzz.agency(
            "run", f"{base.program}.agency", "--no-record", "--checkpoint", str(path), *base.args
        )
    finally:
        os.chdir(cwd)
    assert code == 2, out
    return out


def test_a_pc_that_is_not_a_statement_boundary(corpus: Any) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["stack"][0]["position"]["pc"] += 1

    assert "`position.pc` is not a statement boundary" in refused(corpus, edit)


def test_a_pc_moved_to_another_statement(corpus: Any) -> None:
    def edit(d: dict[str, Any]) -> None:
        pos = d["stack"][0]["position"]
        pos["stmt_pc"], pos["pc"] = 3, 4  # the statement at line 3, while line/col say line 5

    assert "the statement there is at line 3" in refused(corpus, edit)


def test_an_internal_builtin_is_not_callable_from_a_file(corpus: Any) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["stack"][0]["locals"]["result"] = {"$function": "__interrupt_wait"}

    assert "names '__interrupt_wait', which is not a function" in refused(corpus, edit)


def test_a_frame_inside_the_prelude(corpus: Any) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["stack"][0]["scope"] = "llm"

    out = refused(corpus, edit)
    assert "is inside the prelude" in out or "not a statement boundary" in out


@pytest.mark.parametrize("field", ["step", "branch"])
def test_huge_step_numbers(corpus: Any, field: str) -> None:
    def edit(d: dict[str, Any]) -> None:
        d[field] = fuzz.HUGE

    assert f"`{field}` should be a whole number" in refused(corpus, edit)


def test_a_failed_run_says_so(corpus: Any) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["machine"]["status"] = "failed"
        d["machine"]["error"] = "division by zero"

    out = refused(corpus, edit)
    assert "the run failed at this point (division by zero)" in out


@pytest.mark.parametrize("status", [{}, [], 5, None])
def test_a_status_that_is_not_a_string(corpus: Any, status: Any) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["machine"]["status"] = status  # a dict was an internal error (unhashable)

    assert "not a run status" in refused(corpus, edit, "approval-9.json")


def _moved(corpus: Any, name: str, frame: int, pc: int) -> str:
    """The refusal of checkpoint `name` with frame `frame` moved to `pc` (its statement, line
    and column moved along, so only the frame's shape or its callee can tell)."""
    work, bases = corpus
    base = next(b for b in bases if b.path.name == name)

    def edit(d: dict[str, Any]) -> None:
        f = d["stack"][frame]
        fuzz.move_to(f["position"], fuzz.code_of(base, f["scope"]), pc)

    return refused(corpus, edit, name)


def test_a_caller_moved_to_a_builtins_return_point(corpus: Any) -> None:
    # `main` waits on `llm(…)` (pc 12); at pc 6 it would be waiting on `checkpoint()`, whose
    # operand stack is as empty: only the call it waits on tells them apart.
    out = _moved(corpus, "dice-10.json", 0, 6)
    assert "it waits on a call to `checkpoint`, but the frame above it runs `llm`" in out


def test_a_caller_moved_into_a_handler_region(corpus: Any) -> None:
    # `main` waits on the second `deleteFile` (pc 11); the first one's return point (pc 5) has
    # the same callee and stack, but is inside `with approve`: a handler would be popped that
    # was never pushed.
    out = _moved(corpus, "approval-6.json", 0, 5)
    assert "its handlers, threads or traps are not those the function has" in out


def test_an_operand_stack_that_does_not_fit_its_pc(corpus: Any) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["stack"][0]["stack"].append(7)

    assert "the operand stack holds 1 value, but at `position.pc`" in refused(corpus, edit)


DYNAMIC = """def inc(x: number, h: any): number {
  h()
  const y = x + 1
  return y
}

def dbl(x: number, h: any): number {
  h()
  const y = x * 2
  return y
}

node main() {
  let f = inc
  const g = dbl
  const a = f(10) as {
    f = dbl
  }
  const b = g(20) as {
    print("in g")
  }
  print(a, b, f == dbl)
  return a + b
}
"""


def _inside(tmp_path: Path, scope: str, f: str) -> tuple[dict[str, Any], Any]:
    """A checkpoint of DYNAMIC taken in `scope` while `main`'s `f` holds `f`, and `main`."""
    from runtime.language.program import load_program

    (tmp_path / "dyn.agency").write_text(DYNAMIC)
    db = str(tmp_path / "runs.db")
    prog = str(tmp_path / "dyn.agency")
    code, out = fuzz.agency("run", prog, "--db", db)
    assert code == 0 and "11 40 true" in out, out
    for step in range(1, 40):
        path = tmp_path / f"s{step}.json"
        code, out = fuzz.agency("export", f"last:{step}", "--db", db, "-o", str(path))
        assert code == 0, out
        data = json.loads(path.read_text())
        main = data["stack"][0]
        if data["stack"][-1]["scope"] == scope and main["locals"]["f"] == {"$function": f}:
            return data, load_program(prog).functions["main"]
    raise AssertionError(f"no step inside {scope}")


def _restore(tmp_path: Path, data: dict[str, Any]) -> tuple[int, str]:
    path = tmp_path / "cp.json"
    path.write_text(json.dumps(data))
    return fuzz.agency(
        "run", str(tmp_path / "dyn.agency"), "--no-record", "--checkpoint", str(path)
    )


def test_a_caller_moved_between_calls_through_function_values(tmp_path: Path) -> None:
    # `main` waits on `f(10)`, `f` holding `inc`; the return point of `g(20)` has the same
    # stack, handlers and traps: only the function `g` holds tells them apart.
    data, main = _inside(tmp_path, "inc", "inc")
    first, second = [pc for pc in fuzz.return_points(main) if main.ops[pc - 1] == B.CALL][:2]
    assert data["stack"][0]["position"]["pc"] == first
    fuzz.move_to(data["stack"][0]["position"], main, second)
    code, out = _restore(tmp_path, data)
    assert code == 2, out
    assert "it waits on a call to `dbl`, but the frame above it runs `inc`" in out
    assert "cp.json" in out and len(out.strip().splitlines()) == 1


def test_a_callee_whose_variable_a_block_reassigned_is_not_refused(tmp_path: Path) -> None:
    # Inside `f(10)` the block has set `f = dbl` already: `main` waits on a call through `f`,
    # and `inc` runs above it. A real state, restored as it was.
    data, _ = _inside(tmp_path, "inc", "dbl")
    code, out = _restore(tmp_path, data)
    assert code == 0 and "in g\n11 40 true" in out, out


@pytest.mark.parametrize(
    "field, value",
    [("traps", "../../etc/passwd"), ("traps", [[1]]), ("handlers", ["x"]), ("stack", [1, 2])],
)
def test_a_saved_checkpoint_inside_the_file_is_checked_when_the_file_is_read(
    corpus: Any, field: str, value: Any
) -> None:
    # dice-4 holds the checkpoint `main` saved at line 3, which the run restores by id after a
    # bad roll: a damaged frame in it was an internal error at that restore, mid-run.
    def edit(d: dict[str, Any]) -> None:
        saved = d["machine"]["checkpoints"]
        assert saved, "dice-4 holds a saved checkpoint"
        next(iter(saved.values()))["stack"][0][field] = value

    out = refused(corpus, edit)
    assert "saved checkpoint 0: frame 0 (`main`)" in out


def test_a_saved_checkpoint_from_another_program_is_refused(corpus: Any) -> None:
    def edit(d: dict[str, Any]) -> None:
        next(iter(d["machine"]["checkpoints"].values()))["source"]["sha256"] = "0" * 64

    assert "saved checkpoint 0 was taken from" in refused(corpus, edit)
