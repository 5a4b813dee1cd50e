"""Checkpoints cross process boundaries: saved by one process, continued by another.

Every run here is a real subprocess (`agency run …` or a tiny `python -c` script) with its own
working directory, so nothing can leak through module state of the test process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from runtime.language.program import load_program
from runtime.llm.mock import MockModel
from runtime.vm.builtins import World
from runtime.vm.machine import Machine
from runtime.vm.values import stringify
from runtime.vm.writelog import HALTED

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
TIMEOUT = 60


def _env(mocks: str = "[]") -> dict[str, str]:
    env = dict(os.environ)
    env.pop("AGENCY_MODEL", None)
    env["AGENCY_LLM_MOCKS"] = mocks  # scripted (empty) answers: no sim banner, no network
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def agency(cwd: Path, *args: str, mocks: str = "[]") -> subprocess.CompletedProcess[str]:
    """`agency ARGS…` in a fresh process."""
    return subprocess.run(
        [sys.executable, "-c", "from debugger.cli import main; main()", *args],
        cwd=cwd,
        env=_env(mocks),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def python(cwd: Path, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def _ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, (
        f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout


# A checkpoint taken inside a def called from the middle of an expression (`100 + work(20)`), so
# the continuation needs the caller's operand stack as well as the callee's locals. The first run
# saves it (checkpoint id 0) and stops; a process continuing from the file re-enters `checkpoint()`,
# which hands out the next id (1), so the program can tell the two runs apart. `resumed` is
# shared (it survives a restore): a run that restores from the file sets it first.
PROGRAM = """\
let calls = 0
shared resumed = false

def work(x: number) {
  let y = x * 2
  const cp = checkpoint()
  y++
  calls++
  if (cp == 0 && !resumed) {
    saveToDisk(getCheckpoint(cp), "cp.json")
    return -1
  }
  print("continued in work: y =", y, "cp =", cp)
  return y
}

node main() {
  let base = 100
  const total = base + work(20)
  if (total < 100) {
    print("saved")
    return "saved"
  }
  print("total", total)
  return {total: total, calls: calls}
}
"""


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    """tmp_path holding prog.agency and the cp.json its first run saved."""
    (tmp_path / "prog.agency").write_text(PROGRAM, encoding="utf-8")
    out = _ok(agency(tmp_path, "run", "prog.agency", "--json"))
    assert out.splitlines() == ["saved", '"saved"']
    data = json.loads((tmp_path / "cp.json").read_text(encoding="utf-8"))
    assert data["format"] == "agency-checkpoint" and data["id"] == 0
    assert [f["scope"] for f in data["stack"]] == ["main", "work"]
    return tmp_path


def test_continue_from_checkpoint_file_in_a_new_process(saved: Path) -> None:
    out = _ok(agency(saved, "run", "prog.agency", "--checkpoint", "cp.json", "--json"))
    # y was 40 at the checkpoint; `calls` is a global, so it is rolled back to 0 and counts once.
    assert out.splitlines() == [
        "continued in work: y = 41 cp = 1",
        "total 141",
        '{"total":141,"calls":1}',
    ]


def test_checkpoint_file_continues_twice_identically(saved: Path) -> None:
    """The file is not consumed: two processes continuing from it agree."""
    first = _ok(agency(saved, "run", "prog.agency", "--checkpoint", "cp.json", "--json"))
    second = _ok(agency(saved, "run", "prog.agency", "--checkpoint", "cp.json", "--json"))
    assert first == second


def test_checkpoint_from_changed_source_is_refused(saved: Path) -> None:
    source = saved / "prog.agency"
    source.write_text(PROGRAM.replace("x * 2", "x * 3"), encoding="utf-8")
    proc = agency(saved, "run", "prog.agency", "--checkpoint", "cp.json", "--json")
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("agency:")
    assert "cp.json" in lines[0] and "prog.agency" in lines[0]
    assert "same source" in lines[0]


def test_checkpoint_of_another_program_names_both_files(saved: Path) -> None:
    (saved / "other.agency").write_text(PROGRAM + "\n// another program\n", encoding="utf-8")
    proc = agency(saved, "run", "other.agency", "--checkpoint", "cp.json")
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("agency:")
    assert "prog.agency" in lines[0] and "other.agency" in lines[0] and "cp.json" in lines[0]


# -- restore(loadFromDisk(…)) inside a program, in a second process -----------------------------

RESTORING = (
    PROGRAM
    + """
node again() {
  resumed = true
  restore(loadFromDisk("cp.json"))
}

node againWithArgs() {
  restore(loadFromDisk("cp.json"), {args: {x: 50}})
}
"""
)


@pytest.fixture
def saved_restoring(tmp_path: Path) -> Path:
    (tmp_path / "prog.agency").write_text(RESTORING, encoding="utf-8")
    _ok(agency(tmp_path, "run", "prog.agency", "--json"))
    assert (tmp_path / "cp.json").exists()
    return tmp_path


def test_restore_loaded_checkpoint_in_a_new_process(saved_restoring: Path) -> None:
    # The restoring run had taken no checkpoint, so the re-entered checkpoint() hands out id 0
    # again; `resumed` (shared, so kept by restore) sends work() down the continuation. The run
    # started at node `again` and finishes in main's frames, rebuilt from the file.
    out = _ok(agency(saved_restoring, "run", "prog.agency", "--node", "again", "--json"))
    assert out.splitlines() == [
        "continued in work: y = 41 cp = 0",
        "total 141",
        '{"total":141,"calls":1}',
    ]


def test_restore_loaded_checkpoint_with_args_in_a_new_process(saved_restoring: Path) -> None:
    cp = saved_restoring / "cp.json"
    before = cp.read_text(encoding="utf-8")
    out = _ok(agency(saved_restoring, "run", "prog.agency", "--node", "againWithArgs", "--json"))
    assert out.splitlines() == ["saved", '"saved"']
    after = json.loads(cp.read_text(encoding="utf-8"))
    # Rewritten by the continued run, with the overridden argument and the locals of the file.
    assert after != json.loads(before)
    assert after["stack"][-1]["args"] == {"x": 50}
    assert after["stack"][-1]["locals"]["y"] == 40
    assert after["stack"][0]["locals"] == {"base": 100}


# -- shared and static values when continuing from a checkpoint file ----------------------------

KEPT = """\
shared visits = 10
static const LIMIT = 7

node main() {
  const cp = checkpoint()
  visits++
  if (cp == 0) {
    saveToDisk(getCheckpoint(cp), "cp.json")
    return "saved"
  }
  return [visits, LIMIT]
}
"""


def test_shared_and_static_start_fresh_when_continuing_from_a_file(tmp_path: Path) -> None:
    (tmp_path / "prog.agency").write_text(KEPT, encoding="utf-8")
    assert _ok(agency(tmp_path, "run", "prog.agency", "--json")).splitlines() == ['"saved"']
    out = _ok(agency(tmp_path, "run", "prog.agency", "--checkpoint", "cp.json", "--json"))
    assert out.splitlines() == ["[11,7]"]


# -- a whole-machine snapshot written to a file and rebuilt by another process ------------------

REBUILD_SCRIPT = """
import json, sys
from runtime.vm.checkpoint_reading import load_file
from runtime.vm.rebuild import rebuild
from runtime.llm.mock import MockModel
from runtime.vm.builtins import World
from runtime.vm.values import stringify
from runtime.language.program import load_program

program = load_program(sys.argv[1])
mocks = json.loads(open(sys.argv[2], encoding="utf-8").read())
out = []
for path in sys.argv[3:]:
    data = load_file(path, program)
    m = rebuild(program, data, model=MockModel(mocks), world=World(root=".", quiet=True))
    m.run()
    out.append({"file": path, "status": m.status, "result": stringify(m.result),
                "output": m.output, "position": m.model.position})
print(json.dumps(out))
"""


def _dice(tmp_path: Path) -> tuple[Any, list[Any], Machine]:
    program = load_program(EXAMPLES / "dice.agency")
    mocks = json.loads((EXAMPLES / "dice.mocks.json").read_text(encoding="utf-8"))
    m = Machine(program, "main", model=MockModel(mocks), world=World(root=tmp_path, quiet=True))
    return program, mocks, m


def test_dice_snapshot_rebuilt_in_another_process(tmp_path: Path) -> None:
    from runtime.vm.checkpoints import snapshot

    program, mocks, straight = _dice(tmp_path)
    straight.run()
    assert straight.status == HALTED
    assert straight.output == [
        "Bad roll, rolling back...",
        "Bad roll, rolling back...",
        "Good roll: 5 after 1 rolls",
    ]
    n = straight.step_index + 1
    files = []
    positions = set()
    for k in range(1, n):  # every step boundary strictly inside the run
        _, _, m = _dice(tmp_path)
        m.step(k)
        assert m.status == "running" and m.step_index + 1 == k
        positions.add(m.model.position)
        path = tmp_path / f"snap{k:03d}.json"
        path.write_text(json.dumps(snapshot(m)), encoding="utf-8")
        files.append(path.name)
    assert positions == {0, 1, 2, 3}, "the snapshots should cover every mock position"
    proc = python(
        tmp_path,
        REBUILD_SCRIPT,
        str(EXAMPLES / "dice.agency"),
        str(EXAMPLES / "dice.mocks.json"),
        *files,
    )
    runs = json.loads(_ok(proc))
    assert len(runs) == len(files)
    for run in runs:
        assert run["status"] == HALTED, run
        assert run["result"] == stringify(straight.result), run
        assert run["output"] == straight.output, run
        assert run["position"] == len(mocks), run


def test_dice_snapshot_taken_in_another_process(tmp_path: Path) -> None:
    """The other direction: a child process steps the dice run and writes the snapshot."""
    script = """
    import json, sys
    from runtime.vm.checkpoints import snapshot
    from runtime.llm.mock import MockModel
    from runtime.vm.builtins import World
    from runtime.vm.machine import Machine
    from runtime.language.program import load_program

    program = load_program(sys.argv[1])
    mocks = json.loads(open(sys.argv[2], encoding="utf-8").read())
    m = Machine(program, "main", model=MockModel(mocks), world=World(root=".", quiet=True))
    m.step(int(sys.argv[3]))
    with open("snap.json", "w", encoding="utf-8") as fh:
        json.dump(snapshot(m), fh)
    """
    from runtime.vm.checkpoint_reading import load_file
    from runtime.vm.rebuild import rebuild

    program, mocks, straight = _dice(tmp_path)
    straight.run()
    k = (straight.step_index + 1) // 2
    _ok(
        python(
            tmp_path,
            script,
            str(EXAMPLES / "dice.agency"),
            str(EXAMPLES / "dice.mocks.json"),
            str(k),
        )
    )
    data = load_file(str(tmp_path / "snap.json"), program)
    assert data["step"] == k - 1
    m = rebuild(program, data, model=MockModel(mocks), world=World(root=tmp_path, quiet=True))
    m.run()
    assert (m.status, stringify(m.result), m.output) == (
        straight.status,
        stringify(straight.result),
        straight.output,
    )
