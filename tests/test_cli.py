"""The `agency` command with bad input: every failure is one clear message (located when it is
about a program), a non-zero exit code and never a Python traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import click
import pytest

from debugger.cli import cli

from .cli_helpers import AGENCY, agency, clean, plain_workdir

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
OK = 'node main() {\n  print("hi")\n}\n'
GREET = 'node greet(name: string) {\n  return "hi ${name}"\n}\n'
LOOP = "node main() {\n  let i = 0\n  while (true) {\n    i++\n  }\n}\n"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    plain_workdir(tmp_path, monkeypatch)
    (tmp_path / "ok.agency").write_text(OK)
    (tmp_path / "greet.agency").write_text(GREET)
    (tmp_path / "bin.agency").write_bytes(bytes(range(128, 256)))
    return tmp_path


def recorded(db: Path) -> str:
    result = agency("runs", "--db", str(db), "--json")
    return str(json.loads(result.output)[0]["id"])


# -- run ------------------------------------------------------------------------------------------


def test_unknown_node_is_refused_before_recording(work: Path) -> None:
    clean(agency("run", "ok.agency", "--node", "nope"), 2, "no node named `nope`", "main")
    assert not (work / ".agency").exists()  # nothing was recorded


def test_program_without_nodes_says_so(work: Path) -> None:
    (work / "empty.agency").write_text("")
    clean(agency("run", "empty.agency"), 2, "no node to run")


def test_bad_named_and_extra_arguments(work: Path) -> None:
    clean(agency("run", "greet.agency", "--node", "greet", "--args", '{"x": 1}'), 2, "`x`")
    clean(agency("run", "ok.agency", "--args", "[1, 2]"), 2, "takes 0 arguments, got 2")
    clean(agency("run", "ok.agency", "--args", "[1,"), 2, "--args is not valid JSON")
    ok = agency("run", "greet.agency", "--node", "greet", "--args", '["Ada"]', "--json")
    clean(ok, 0, '"hi Ada"')


def test_mock_file_that_is_binary(work: Path) -> None:
    clean(agency("run", "ok.agency", "--mock", "bin.agency"), 2, "not UTF-8")


def test_unknown_model_is_reported_before_anything_runs(work: Path) -> None:
    clean(agency("run", "ok.agency", "--model", "foo/bar"), 1, "unknown model provider")
    assert not (work / ".agency").exists()


def test_checkpoint_refuses_node_and_args(work: Path) -> None:
    (work / "cp.json").write_text("{}")
    clean(agency("run", "ok.agency", "--checkpoint", "cp.json", "--node", "x"), 2, "--node")


def test_long_source_lines_are_cut_around_the_caret(work: Path) -> None:
    deep = "node main() {\n  const x = " + "(" * 3000 + "1" + ")" * 3000 + "\n}\n"
    (work / "deep.agency").write_text(deep)
    result = agency("check", "deep.agency")
    clean(result, 65, "deep.agency:2:", "too deeply nested", "…")
    assert max(len(line) for line in result.output.splitlines()) < 200


def test_expression_too_deep_to_compile_is_located(work: Path) -> None:
    src = "node main() {\n  const x = " + "1 + " * 20000 + "1\n  print(x)\n}\n"
    (work / "long.agency").write_text(src)
    clean(agency("run", "long.agency", "--no-record"), 65, "long.agency:2:", "too deep")


def test_a_deeply_nested_value_is_recorded(work: Path) -> None:
    src = "node main() {\n  let a = []\n  let i = 0\n  while (i < 5000) {\n    a = [a]\n    i++\n  }\n}\n"
    (work / "nest.agency").write_text(src)
    assert agency("run", "nest.agency", "--db", "r.db").exit_code == 0
    runs = json.loads(agency("runs", "--db", "r.db", "--json").output)
    assert runs[0]["status"] == "finished"
    shown = agency("show", runs[0]["id"], "--db", "r.db")
    assert shown.exit_code == 0 and "Traceback" not in shown.output


LONE = """node main() {
  const c = String.fromCharCode(55296)
  const parsed = JSON.parse("[\\"a\\ud800\\"]")
  const said = llm("say " + c)
  print(parsed, said)
  return c + said
}
"""


def test_lone_surrogates_are_recorded_and_printed(work: Path) -> None:
    # Half a UTF-16 pair, made by the program, a JSON text or the model, has no UTF-8 form: the
    # run store refused it mid-run ("write failed", the run left interrupted) and `--json` was
    # an internal error. JSON writes it escaped, as JavaScript does; print shows U+FFFD.
    (work / "lone.agency").write_text(LONE)
    (work / "lone.json").write_text('[{"return": "b\\ud800"}]')
    cmd = [*AGENCY, "run", "lone.agency", "--mock", "lone.json", "--json", "--db", "r.db"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ['["a\\ud800"] b\ufffd', '"\\ud800b\\ud800"']
    run = json.loads(agency("runs", "--db", "r.db", "--json").output)[0]
    assert run["status"] == "finished"
    shown = json.loads(agency("show", run["id"], "--db", "r.db", "--json").output)
    assert shown["result"] == "\ud800b\ud800"  # kept as it was
    clean(agency("replay", run["id"], "--db", "r.db"), 0)
    greet = [*AGENCY, "run", "greet.agency", "--node", "greet", "--args", '["\\udc00"]']
    proc = subprocess.run([*greet, "--json"], capture_output=True, text=True, timeout=60, cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == '"hi \\udc00"'


def test_a_program_whose_path_is_not_utf8(work: Path) -> None:
    # Bytes that are not UTF-8 in a file name reach Python as lone surrogates, which the run
    # store cannot keep: one clear refusal before the run, and --no-record still runs it.
    name = os.fsdecode(b"b\xffad.agency")
    (work / name).write_text(OK)
    clean(agency("run", name), 2, "its path is not UTF-8 text", "--no-record")
    assert agency("runs", "--json").output.strip() in ("", "[]")
    clean(agency("run", name, "--no-record"), 0, "hi")


def test_unexpected_errors_are_one_line(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import runtime.language.program

    def broken(path: str) -> None:
        raise ValueError("boom")

    monkeypatch.setattr(runtime.language.program, "load_program", broken)
    result = agency("run", "ok.agency")
    clean(result, 70, "internal error: ValueError: boom", "agency-crash-")


# -- check ----------------------------------------------------------------------------------------


def test_check_reports_every_file(work: Path) -> None:
    (work / "syn.agency").write_text("node main() {\n  let x = \n}\n")
    result = agency("check", "bin.agency", "syn.agency", "missing.agency", "ok.agency")
    clean(result, 66, "bin.agency: not UTF-8", "syn.agency:3:1", "missing.agency: no such")
    clean(result, 66, "ok.agency: ok", "3 of 4 files failed")


# -- test -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("suite", "needle"),
    [
        (b"\x91\x92 not text", "not UTF-8"),
        (b"not json", "not valid JSON"),
        (b'{"tests": [1]}', "tests[0] is 1, not an object"),
        (b'{"sourceFile": "greet.agency", "tests": [{"nodeName": ["x"]}]}', '"nodeName" must'),
        (
            b'{"sourceFile": "greet.agency", "tests": [{"interruptHandlers": [1]}]}',
            "interruptHandlers[0] must be",
        ),
        (b'{"tests": []}', 'name another one with "sourceFile"'),
    ],
)
def test_bad_suites(work: Path, suite: bytes, needle: str) -> None:
    (work / "s.test.json").write_bytes(suite)
    clean(agency("test", "s.test.json"), 1, "FAIL", needle)


def test_suite_whose_program_has_a_syntax_error(work: Path) -> None:
    (work / "syn.agency").write_text("node main() {\n  let x = \n}\n")
    (work / "syn.test.json").write_text('{"tests": [{"nodeName": "main"}]}')
    clean(agency("test", "syn.agency"), 1, "syn.agency:3:1", "^")


def test_no_suites_found(work: Path) -> None:
    (work / "empty").mkdir()
    clean(agency("test", "empty"), 2, "no *.test.json suites")


def test_exit_sets_the_exit_status(work: Path) -> None:
    """std::system's exit(code) ends the run at once, and `agency run` exits with the code; the
    recorded run reads back as ended."""
    (work / "quit.agency").write_text(
        'import { exit } from "std::system"\n'
        "node main() {\n"
        '  print("before")\n'
        "  exit(3)\n"
        '  print("after")\n'
        "}\n"
    )
    result = agency("run", "quit.agency", "--approve-all", "--db", "r.db")
    assert result.exit_code == 3
    assert "before" in result.output and "after" not in result.output
    clean(agency("show", recorded(work / "r.db"), "--db", "r.db"), 0, "status finished")


# -- the run store --------------------------------------------------------------------------------


def test_refs_and_steps(work: Path) -> None:
    assert agency("run", "ok.agency", "--db", "r.db").exit_code == 0
    run = recorded(work / "r.db")
    clean(agency("show", f"{run}:1", "--db", "r.db"), 0, f"run {run}")
    for ref in (f"{run}:999", f"{run}:-1"):
        clean(agency("show", ref, "--db", "r.db"), 2, "is outside run")
        clean(agency("export", ref, "-o", "cp.json", "--db", "r.db"), 2, "is outside run")
    clean(agency("show", f"{run}:abc", "--db", "r.db"), 2, "expected RUN or RUN:STEP")
    clean(agency("show", ":3", "--db", "r.db"), 2, "give the run before the step")
    clean(agency("show", "nope", "--db", "r.db"), 2, "no run 'nope'")
    clean(agency("runs", "--limit", "-1", "--db", "r.db"), 2, "--limit")


def test_export_to_an_unwritable_place(work: Path) -> None:
    assert agency("run", "ok.agency", "--db", "r.db").exit_code == 0
    clean(agency("export", "last", "-o", "nodir/cp.json", "--db", "r.db"), 1, "cannot write")
    clean(agency("export", "last", "-o", "cp.json", "--db", "r.db"), 0, "wrote step")
    assert json.loads((work / "cp.json").read_text())["format"] == "agency-checkpoint"


@pytest.mark.parametrize("age", ["garbage", "7", "-1d", "1.5h", "", "99999999999w"])
def test_prune_bad_ages(work: Path, age: str) -> None:
    assert agency("run", "ok.agency", "--db", "r.db").exit_code == 0
    clean(agency("prune", "--older-than", age, "--db", "r.db"), 2, "--older-than")


def test_prune_by_count_and_size(work: Path) -> None:
    for _ in range(3):
        assert agency("run", "ok.agency", "--db", "r.db").exit_code == 0
    clean(agency("prune", "--db", "r.db"), 2, "say what to delete")
    clean(agency("prune", "--max-size", "lots", "--db", "r.db"), 2, "--max-size")
    clean(agency("prune", "--keep", "-1", "--db", "r.db"), 2, "--keep")
    clean(agency("prune", "--keep", "2", "--db", "r.db"), 0, "deleted 1 run")
    clean(agency("prune", "--max-size", "1GB", "--db", "r.db"), 0, "deleted 0 runs")
    clean(agency("prune", "--max-size", "0", "--db", "r.db"), 0, "deleted 2 runs")


def test_stores_that_are_not_stores(work: Path) -> None:
    (work / "junk.db").write_bytes(b"junk" * 100)
    (work / "dir.db").mkdir()
    clean(agency("runs", "--db", "junk.db"), 2, "not a SQLite database")
    clean(agency("runs", "--db", "missing.db"), 2, "no run store here yet")
    clean(agency("run", "ok.agency", "--db", "junk.db"), 2, "not a SQLite database")
    assert agency("runs", "--db", "dir.db").exit_code == 2


def test_resume_and_replay_arguments(work: Path) -> None:
    assert agency("run", "ok.agency", "--db", "r.db").exit_code == 0
    clean(agency("resume", "--last", "--approve", "--reject", "--db", "r.db"), 2, "choose one")
    clean(agency("resume", "--last", "--resolve", "{bad", "--db", "r.db"), 2, "--resolve")
    clean(agency("resume", "--last", "--mock", "bin.agency", "--db", "r.db"), 2, "not UTF-8")
    clean(agency("replay", "--db", "r.db"), 2, "which run?")
    clean(agency("replay", "--last", "--from", "999", "--db", "r.db"), 2, "--from 999")


# -- help -----------------------------------------------------------------------------------------


def test_every_command_has_an_example() -> None:
    for name in cli.list_commands(click.Context(cli)):
        text = agency(name, "--help").output
        assert "Example" in text, name
        assert f"agency {name}" in text, name
        assert "r01HX" not in text, name  # examples show run ids as they look


# -- processes: signals and pipes ------------------------------------------------------------------


def spawn(tmp: Path, *args: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENCY_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.Popen(
        [*AGENCY, *args],
        cwd=tmp,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_ctrl_c_without_recording(tmp_path: Path) -> None:
    # The program says it is running (print flushes each line), so SIGINT lands in the loop,
    # never in the interpreter's start-up, however slow the machine is.
    (tmp_path / "loop.agency").write_text(LOOP.replace("let i = 0", 'let i = 0\n  print("ready")'))
    p = spawn(tmp_path, "run", "loop.agency", "--no-record")
    assert p.stdout is not None
    assert p.stdout.readline() == b"ready\n"
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    text = err.decode()
    assert p.returncode == 130, text
    assert "Traceback" not in text and "Aborted!" not in text
    assert "stopped at step" in text


def test_closed_stdout_keeps_the_run_resumable(tmp_path: Path) -> None:
    (tmp_path / "many.agency").write_text(
        'node main() {\n  let i = 0\n  while (i < 100000) {\n    print("line ${i}")\n'
        "    i++\n  }\n}\n"
    )
    p = spawn(tmp_path, "run", "many.agency", "--db", "r.db")
    assert p.stdout is not None and p.stderr is not None
    p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=30) != 0
    assert "Traceback" not in err
    runs = json.loads(
        subprocess.run(
            [*AGENCY, "runs", "--db", "r.db", "--json"],
            cwd=tmp_path,
            capture_output=True,
            check=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        ).stdout
    )
    assert runs[0]["status"] == "interrupted"
    assert "output was closed" in runs[0]["error"]


def test_show_says_a_killed_run_stopped_and_how_to_go_on(tmp_path: Path) -> None:
    # The last recorded state of a run killed with -9 says `running` (a step is recorded before
    # its end is known): `show` printed "status running" for a run nothing runs any more.
    (tmp_path / "loop.agency").write_text(LOOP.replace("  while", '  print("ready")\n  while'))
    p = spawn(tmp_path, "run", "loop.agency", "--db", "r.db")
    assert p.stdout is not None
    assert p.stdout.readline() == b"ready\n"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = [*AGENCY, "runs", "--db", "r.db", "--json"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # until the writer has committed some steps
        listed = subprocess.run(runs, cwd=tmp_path, capture_output=True, env=env).stdout
        if json.loads(listed or b"[]") and json.loads(listed)[0]["steps"] > 0:
            break
    p.kill()
    p.wait(timeout=30)
    show = [*AGENCY, "show", "last", "--db", "r.db"]
    shown = subprocess.run(show, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert shown.returncode == 0, shown.stderr
    first, second = shown.stdout.splitlines()[:2]
    assert first.endswith("status interrupted") or first.endswith("status stale"), first
    assert "`agency resume r" in second
    as_json = subprocess.run([*show, "--json"], cwd=tmp_path, capture_output=True, env=env)
    assert json.loads(as_json.stdout)["status"] in ("interrupted", "stale")
    step0 = [*AGENCY, "show", "last:0", "--db", "r.db"]
    before = subprocess.run(step0, cwd=tmp_path, capture_output=True, env=env)
    assert b"status running" in before.stdout  # an earlier step is as it was


def test_show_of_a_run_that_has_not_recorded_a_step_yet_says_so(tmp_path: Path) -> None:
    # A run's row is written when it starts, its first steps a moment later (the writer
    # batches them): a reader in between was told the run "recorded no steps", as if it had
    # ended empty.
    from click.testing import CliRunner

    from runtime.record.contract import RunMeta
    from runtime.record.sqlite_store import SQLiteStore

    with SQLiteStore(tmp_path / "r.db") as store:
        run_id = store.create_run(RunMeta("p.agency", "0" * 64))
    result = CliRunner().invoke(cli, ["show", run_id, "--db", str(tmp_path / "r.db")])
    assert result.exit_code == 1
    assert f"run {run_id} is running and has not recorded a step yet" in result.output
    assert "Traceback" not in result.output


def test_the_debugger_opens_the_last_run_by_name_as_show_does(tmp_path: Path) -> None:
    # `agency show last` worked but `agency debugger --run last` said there was no run "last";
    # and `agency debugger last` (a run, not a file) said only "no such file".
    from click.testing import CliRunner

    from debugger.debug_command import build_app
    from runtime.record.contract import RunMeta
    from runtime.record.sqlite_store import SQLiteStore

    db = tmp_path / "r.db"
    with SQLiteStore(db) as store:
        store.create_run(RunMeta("p.agency", "0" * 64))
        store.create_run(RunMeta("p.agency", "0" * 64))
        newest = store.latest_run().id
    for ref in ("last", "latest"):
        app = build_app(None, trace=str(db), run_id=ref)
        assert app._opening == f"opening run {newest}"  # what its first screen says
    result = CliRunner().invoke(cli, ["debugger", "last", "--db", str(db)])
    assert result.exit_code != 0
    assert "agency debugger --run last" in result.output
