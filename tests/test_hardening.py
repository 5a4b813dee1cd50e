"""Issue 11: the run store is out of a program's reach, non-regular files are refused at once
(never waited on), reads are capped, and read-only stores can be read."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from .cli_helpers import AGENCY, agency, clean

OK = 'node main() {\n  print("hi")\n}\n'


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("AGENCY_DB", "AGENCY_LLM_MOCKS", "AGENCY_MODEL", "AGENCY_MAX_READ_BYTES"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "ok.agency").write_text(OK)
    return tmp_path


def run_ids(db: Path) -> list[str]:
    result = agency("runs", "--db", str(db), "--json")
    assert result.exit_code == 0, result.output
    return [r["id"] for r in json.loads(result.output)]


# -- item 1: the run store is out of reach ------------------------------------------------------


# write() and read() return Results: their refusal is a failure (printed here), not an error
# that ends the run as saveToDisk's and loadFromDisk's is.
@pytest.mark.parametrize(
    ("call", "code"),
    [
        ('write("{db}", "not a database")', 0),
        ('write("{db}-wal", "x")', 0),
        ('write("{db}-shm", "x")', 0),
        ('saveToDisk({{a: 1}}, "{db}")', 1),
        ('read("{db}")', 0),
        ('print(loadFromDisk("{db}"))', 1),
        ('write(".agency/other.txt", "x")', 0),
        ('write("x/../.agency/runs.db", "x")', 0),
        ('write(".a.txt.agency-tmp", "x")', 0),
    ],
)
def test_a_program_cannot_touch_the_run_store(work: Path, call: str, code: int) -> None:
    for db, env in ((".agency/runs.db", None), ("store.db", "store.db")):
        args = ["--db", env] if env else []
        clean(agency("run", "ok.agency", *args), 0)
        before = run_ids(work / db)
        line = call.format(db=db)
        if code == 0:
            line = f"const r = {line} with approve\n  print(r.error)"
        (work / "bad.agency").write_text("node main() {\n  " + line + "\n}\n")
        result = agency("run", "bad.agency", *args)
        clean(result, code, "programs cannot touch it")
        assert run_ids(work / db)[-len(before) :] == before  # every earlier run is still there


def test_a_hard_link_to_the_store_is_refused(work: Path) -> None:
    clean(agency("run", "ok.agency"), 0)
    os.link(work / ".agency" / "runs.db", work / "alias.db")
    (work / "bad.agency").write_text(
        'node main() {\n  const r = write("alias.db", "x") with approve\n  print(r.error)\n}\n'
    )
    clean(agency("run", "bad.agency"), 0, "the run store")
    assert len(run_ids(work / ".agency" / "runs.db")) == 2


# -- item 3: export and --db refuse what is not a regular file ----------------------------------


def test_export_refuses_devices_fifos_and_directories(work: Path) -> None:
    clean(agency("run", "ok.agency"), 0)
    os.mkfifo(work / "pipe")
    (work / "folder").mkdir()
    for target in ("/dev/null", "/dev/full", str(work / "pipe"), str(work / "folder")):
        before = sorted(os.listdir(Path(target).parent))
        result = agency("export", "last", "-o", target)
        assert result.exit_code != 0, result.output
        assert "Traceback" not in result.output
        assert sorted(os.listdir(Path(target).parent)) == before  # nothing written beside it
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode) and stat.S_ISCHR(os.stat("/dev/full").st_mode)
    assert stat.S_ISFIFO(os.stat(work / "pipe").st_mode)


def test_export_refuses_the_run_store(work: Path) -> None:
    clean(agency("run", "ok.agency"), 0)
    clean(agency("export", "last", "-o", ".agency/runs.db"), 1, "the run store")
    assert len(run_ids(work / ".agency" / "runs.db")) == 1


@pytest.mark.parametrize("command", [["runs"], ["run", "ok.agency"], ["show", "last"]])
def test_a_db_that_is_not_a_regular_file(work: Path, command: list[str]) -> None:
    os.mkfifo(work / "pipe.db")
    for db in ("/dev/null", str(work / "pipe.db")):
        before = sorted(os.listdir(Path(db).parent))
        result = agency(*command, "--db", db)
        assert result.exit_code != 0
        assert "not a regular file" in result.output, result.output
        assert sorted(os.listdir(Path(db).parent)) == before  # no -journal / -wal beside it


# -- item 4: FIFOs are refused at once, reads are capped -----------------------------------------

CHECKPOINT_PROGRAM = 'node main() {\n  const cp = checkpoint()\n  print("x")\n}\n'


def run_cli(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """In a subprocess with a timeout: a hang fails the test instead of hanging it."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AGENCY_")}
    environ.update(env)
    return subprocess.run(
        [*AGENCY, *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


# A program that prints why read() failed (read returns a Result).
READ_PRINTED = 'node main() {{\n  const r = read("{path}") with approve\n  print(r.error)\n}}\n'


@pytest.mark.parametrize(
    "case",
    ["program", "import", "mock", "checkpoint", "read", "loadFromDisk"],
)
def test_a_fifo_is_refused_at_once(work: Path, case: str) -> None:
    os.mkfifo(work / "pipe")
    os.mkfifo(work / "pipe.agency")
    args = {
        "program": ["run", "pipe"],
        "import": ["run", "imp.agency"],  # imports pipe.agency
        "mock": ["run", "ok.agency", "--mock", "pipe"],
        "checkpoint": ["run", "ok.agency", "--checkpoint", "pipe"],
        "read": ["run", "read.agency"],
        "loadFromDisk": ["run", "load.agency"],
    }[case]
    (work / "imp.agency").write_text('import { f } from "pipe.agency"\nnode main() {\n  f()\n}\n')
    (work / "read.agency").write_text(READ_PRINTED.format(path="pipe"))
    (work / "load.agency").write_text('node main() {\n  print(loadFromDisk("pipe"))\n}\n')
    proc = run_cli(work, *args)
    # read() returns a Result: its refusal is a failure the program prints, the run goes on
    out = proc.stdout if case == "read" else proc.stderr
    assert proc.returncode not in ((1, 70) if case == "read" else (0, 70)), (
        proc.stdout,
        proc.stderr,
    )
    assert "Traceback" not in proc.stderr
    assert "FIFO" in out and "pipe" in out, out


@pytest.mark.parametrize("case", ["program", "mock", "checkpoint", "read", "loadFromDisk"])
def test_reads_are_capped(work: Path, case: str) -> None:
    (work / "big").write_text("[" + " " * 5000 + "]")
    (work / "read.agency").write_text(READ_PRINTED.format(path="big"))
    (work / "load.agency").write_text('node main() {\n  print(loadFromDisk("big"))\n}\n')
    args = {
        "program": ["run", "big"],
        "mock": ["run", "ok.agency", "--mock", "big"],
        "checkpoint": ["run", "ok.agency", "--checkpoint", "big"],
        "read": ["run", "read.agency"],
        "loadFromDisk": ["run", "load.agency"],
    }[case]
    proc = run_cli(work, *args, AGENCY_MAX_READ_BYTES="4096")
    out = proc.stdout if case == "read" else proc.stderr  # read(): a failure, printed
    assert proc.returncode not in ((1, 70) if case == "read" else (0, 70)), (
        proc.stdout,
        proc.stderr,
    )
    assert "larger than the 4096 bytes" in out, out
    assert "AGENCY_MAX_READ_BYTES" in out
    ok = run_cli(work, *args, AGENCY_MAX_READ_BYTES="8192")
    assert "larger than" not in ok.stdout + ok.stderr


@pytest.mark.parametrize(
    "args", [["run", "/dev/zero"], ["run", "ok.agency", "--checkpoint", "/dev/zero"]]
)
def test_dev_zero_is_refused(work: Path, args: list[str]) -> None:
    proc = run_cli(work, *args)
    assert proc.returncode not in (0, 70) and "character device" in proc.stderr, proc.stderr


# -- item 11: a read-only store can be read ------------------------------------------------------


def read_only_view(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`agency ARGS` with `directory` mounted read-only (a private mount namespace: root
    ignores file modes), or with its modes read-only when not root."""
    if os.geteuid() != 0:
        for p in [directory, *directory.iterdir()]:
            p.chmod(0o555 if p.is_dir() else 0o444)
        return run_cli(directory, *args)
    d = str(directory)
    script = (
        f"mount --bind {d} {d} && mount -o remount,bind,ro {d} && "
        + " ".join(f"'{a}'" for a in AGENCY[:2])
        + ' "from debugger.cli import main; main()" '
        + " ".join(f"'{a}'" for a in args)
    )
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("cannot make a read-only mount here")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AGENCY_")}
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script],
        cwd=directory,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_read_only_commands_read_a_read_only_store(work: Path) -> None:
    clean(agency("run", "ok.agency", "--db", "runs.db"), 0)
    run_id = run_ids(work / "runs.db")[0]
    outside = work.parent / f"{work.name}-out"
    outside.mkdir()
    outside.chmod(0o777)
    for args in (
        ["runs", "--db", "runs.db", "--json"],
        ["show", f"{run_id}:0", "--db", "runs.db"],
        ["export", f"{run_id}:1", "--db", "runs.db", "-o", str(outside / "cp.json")],
    ):
        proc = read_only_view(work, *args)
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
        assert run_id in proc.stdout or "step 0" in proc.stdout, proc.stdout
    assert json.loads((outside / "cp.json").read_text())["step"] == 1
    left = [name for name in os.listdir(work) if not name.endswith(("-wal", "-shm"))]
    assert sorted(left) == ["ok.agency", "runs.db"]


# -- item 9: steps before a checkpoint's step ----------------------------------------------------


def test_show_before_the_checkpoint_step(work: Path) -> None:
    examples = Path(__file__).resolve().parent.parent / "examples"
    args = ["--mock", str(examples / "dice.mocks.json")]
    clean(agency("run", str(examples / "dice.agency"), *args), 0)
    clean(agency("export", "last:4", "-o", "cp.json"), 0)
    clean(agency("run", str(examples / "dice.agency"), *args, "--checkpoint", "cp.json"), 0)
    # the continued run records the checkpoint's own step (4) on
    for k in ("0", "3"):
        for command in (["show", f"last:{k}"], ["show", f"last:{k}", "--json"]):
            clean(agency(*command), 2, f"step {k} of run", "record begins at step 4")
        clean(agency("export", f"last:{k}", "-o", "again.json"), 2, "record begins at step 4")
    clean(agency("show", "last:4"), 0, "step 4/")
