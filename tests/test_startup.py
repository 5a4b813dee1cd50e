"""The `agency` command starts without importing what its command does not need: `--version`
and `agency show` load neither the machine nor the parser, nor the debugger, the server, the
terminal UI or the network and database clients, and the console script answers both without
click, printing the same bytes as click does (benchmarks/bench_interpreter.py measures the CPU
time; these tests hold the structure that makes it small)."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import click
import pytest

import debugger
from debugger.cli import LAZY_COMMANDS, cli
from debugger.entry import VERSION_LINE
from runtime.language.bytecode import Location as BytecodeLocation
from runtime.record.views import Location as ViewLocation

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("runtime.vm.machine", "runtime.language.syntax.parser", "runtime.language.compiler")
# What `agency show` has no use for: the other commands' modules, the terminal UI and pretty
# printing, the network, model and database clients, the machine's own modules.
NOT_FOR_SHOW = (
    "debugger.debug_command",
    "debugger.serve",
    "debugger.session",
    "textual",
    "rich",
    "pygments",
    "httpx",
    "psycopg",
    "psycopg_pool",
    "openai",
    "anthropic",
    "starlette",
    "socket",
    "runtime.runs.processes",
    "runtime.vm",
    "runtime.llm",
    "runtime.language.syntax",
    "dataclasses",
)
# What the console script's own `agency show` (debugger/entry.py) has no use for either: click
# and the commands, and what click imports (inspect with ast, dis and tokenize; uuid with
# platform; gettext).
NOT_FOR_PLAIN_SHOW = (
    "click",
    "debugger.cli",
    "debugger.store_commands",
    "inspect",
    "ast",
    "dis",
    "tokenize",
    "uuid",
    "platform",
    "gettext",
)


def loaded_after(code: str, cwd: Path = ROOT) -> set[str]:
    """The modules a fresh interpreter holds after running `code` (its last line of output)."""
    probe = f"import sys\n{code}\nprint('\\n' + ' '.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=cwd, capture_output=True, text=True, check=True
    )
    return set(done.stdout.splitlines()[-1].split())


def agency_loads(*args: str, cwd: Path = ROOT) -> set[str]:
    """The modules an `agency ARGS` process holds when the command is done."""
    code = (
        f"from debugger.cli import cli\ntry:\n    cli({list(args)!r})\nexcept SystemExit:\n    pass"
    )
    return loaded_after(code, cwd)


def console_loads(*args: str, cwd: Path = ROOT) -> set[str]:
    """The modules the console script's process holds when `agency ARGS` is done."""
    code = (
        f"import sys\nsys.argv = ['agency', *{list(args)!r}]\nfrom debugger.entry import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    return loaded_after(code, cwd)


def record(tmp_path: Path, source: str) -> str:
    """The id of a run of `source` recorded in tmp_path/runs.db."""
    from runtime.language.program import compile_source
    from runtime.record.sqlite_store import SQLiteStore
    from runtime.runs.recording import record_program
    from runtime.runs.runner import RunConfig

    store = SQLiteStore(tmp_path / "runs.db")
    try:
        rec = record_program(compile_source(source, "count.agency"), RunConfig(quiet=True), store)
    finally:
        store.close()
    return rec.run_id


COUNT = 'node main() {\n  let i = 0\n  while (i < 5) {\n    i = i + 1\n  }\n  print("done")\n}\n'


def within(mods: set[str], names: tuple[str, ...]) -> list[str]:
    """The modules of `mods` that are one of `names` or inside one of those packages."""
    return sorted(m for m in mods if any(m == n or m.startswith(n + ".") for n in names))


def test_the_command_and_its_version_load_no_machine_and_no_parser() -> None:
    mods = loaded_after(
        "from debugger.cli import cli\ntry:\n    cli(['--version'])\nexcept SystemExit:\n    pass"
    )
    assert "debugger.cli" in mods
    assert not mods & set(HEAVY), sorted(mods & set(HEAVY))
    assert "importlib.metadata" not in mods  # the version is debugger.__version__
    lazy = tuple(set(LAZY_COMMANDS.values()))
    assert not within(mods, lazy), within(mods, lazy)


def test_the_console_script_answers_its_version_without_click() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["scripts"]["agency"] == "debugger.entry:main"
    code = "import sys\nsys.argv = ['agency', '--version']\nfrom debugger.entry import main\nmain()"
    probe = f"{code}\nprint(' '.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    line, mods = done.stdout.splitlines()
    assert line + "\n" == VERSION_LINE
    extra = set(mods.split()) - loaded_after("pass")  # beyond what the interpreter loads itself
    assert extra <= {"debugger", "debugger.entry", "_signal"}, sorted(extra)


def test_the_fast_version_is_what_click_prints() -> None:
    from click.testing import CliRunner

    done = CliRunner().invoke(cli, ["--version"], prog_name="agency")
    assert done.exit_code == 0
    assert done.output == VERSION_LINE


def test_every_other_command_line_goes_to_click(tmp_path: Path) -> None:
    """Only `agency --version` alone (and the plain forms of `show` and `runs`, below) is
    answered early: with anything beside it, click parses the line as it always did."""
    for args in (["--version", "--help"], ["--help"], ["check", "--version"]):
        entry = subprocess.run(
            [sys.executable, "-m", "debugger", *args], cwd=tmp_path, capture_output=True, text=True
        )
        full = subprocess.run(
            [sys.executable, "-c", "from debugger.cli import main; main()", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert (entry.returncode, entry.stdout, entry.stderr) == (
            full.returncode,
            full.stdout,
            full.stderr,
        ), args


def test_show_loads_only_what_reading_a_run_needs(tmp_path: Path) -> None:
    run_id = record(tmp_path, COUNT)
    mods = agency_loads("show", f"{run_id}:3", "--db", str(tmp_path / "runs.db"), cwd=tmp_path)
    assert "runtime.record.timeline" in mods  # the command did run and read the run
    assert not within(mods, (*HEAVY, *NOT_FOR_SHOW)), within(mods, (*HEAVY, *NOT_FOR_SHOW))


def test_the_console_script_shows_and_lists_runs_without_click(tmp_path: Path) -> None:
    run_id = record(tmp_path, COUNT)
    db = str(tmp_path / "runs.db")
    avoided = (*HEAVY, *NOT_FOR_SHOW, *NOT_FOR_PLAIN_SHOW)
    plain = (
        ["show", f"{run_id}:3", "--db", db],
        ["show", run_id, f"--db={db}", "--json", "--branch", "0"],
        ["show", f"{run_id}:99", "--db", db],  # an error it reports itself, as click would
        ["runs", "--db", db, "--json", "--limit", "5"],
    )
    for args in plain:
        mods = console_loads(*args, cwd=tmp_path)
        assert "runtime.record.sqlite_store" in mods, args
        assert not within(mods, avoided), (args, within(mods, avoided))
    table = console_loads("runs", "--db", db, cwd=tmp_path)
    assert "rich.table" in table  # rich imports dataclasses and inspect itself
    no_click = (*HEAVY, "click", "debugger.cli", "debugger.store_commands", "runtime.runs")
    assert not within(table, no_click), within(table, no_click)
    # what it does not take as it is goes to click
    assert "click" in console_loads("show", run_id, "--db", db, "--json", "--json", cwd=tmp_path)


def agency_both_ways(
    args: list[str], cwd: Path, **io: Any
) -> list[subprocess.CompletedProcess[bytes]]:
    """(exit code, stdout, stderr) of `agency ARGS` by the console script, then by click."""
    return [
        subprocess.run(
            [sys.executable, "-c", f"from {module} import main; main()", *args],
            cwd=cwd,
            capture_output="stdout" not in io,
            **io,
        )
        for module in ("debugger.entry", "debugger.cli")
    ]


def outcomes(done: list[subprocess.CompletedProcess[bytes]]) -> list[tuple[Any, ...]]:
    return [(d.returncode, d.stdout, d.stderr) for d in done]


def test_the_console_script_prints_what_click_prints(tmp_path: Path) -> None:
    """The same bytes, exit code and errors for every form of `show` and `runs`: the ones the
    console script answers itself and the ones it leaves to click (help, forms it does not
    parse, text that click.echo would change)."""
    (tmp_path / "a dir").mkdir()
    loop = (
        'node main() {\n  let word = "héllo ✓"\n  let i = 0\n  while (i < 3) {\n'
        "    i = i + 1\n    print(`${word} ${i}`)\n  }\n  return i\n}\n"
    )
    run_id = record(tmp_path, loop)
    coloured = record(tmp_path, 'node main() {\n  print("\\u001b[31mred\\u001b[0m")\n}\n')
    db = str(tmp_path / "runs.db")
    cases = [
        ["show", run_id, "--db", db],
        ["show", f"{run_id}:5", "--db", db],
        ["show", f"{run_id}:5", "--db", db, "--json"],
        ["show", "--json", f"--db={db}", "--branch=0", f"{run_id[:6]}:0"],
        ["show", "last", "--branch", "0", "--db", db],
        ["show", coloured, "--db", db],
        ["show", f"{run_id}:999", "--db", db],
        ["show", f"{run_id}:x", "--db", db],
        ["show", ":3", "--db", db],
        ["show", "", "--db", db],
        ["show", "nope", "--db", db],
        ["show", run_id, "--db", db, "--branch", "7"],
        ["show", run_id, "--db", db, "--branch", "-1"],
        ["show", run_id, "--db", db, "--branch", "x"],
        ["show", run_id, "--db", db, "extra"],
        ["show", run_id, "--db", db, "--json", "--json"],
        ["show", run_id, "--db", db, "--db", db],
        ["show", run_id, "--db"],
        ["show", run_id, "--db", str(tmp_path / "a dir")],
        ["show", run_id, "--db", str(tmp_path / "none.db")],
        ["show", run_id, "--dbx", db],
        ["show", run_id],
        ["show", "--help"],
        ["show", run_id, "-h"],
        ["show"],
        ["runs", "--db", db],
        ["runs", f"--db={db}", "--json"],
        ["runs", "--json", "--limit", "1", "--db", db],
        ["runs", "--db", db, "--limit=0"],
        ["runs", "--db", db, "--limit", "x"],
        ["runs", "--db", db, "--json", "--json"],
        ["runs", "--db", db, "extra"],
        ["runs", "--db", str(tmp_path / "none.db")],
        ["runs", "--db", str(tmp_path / "a dir")],
        ["runs", "-h"],
        ["runs"],
    ]
    for args in cases:
        console, click_ = outcomes(agency_both_ways(args, tmp_path))
        assert console == click_, args
        assert console[1] or console[2], args  # it printed something either way
    ascii_out = dict(os.environ, PYTHONIOENCODING="ascii")  # click writes UTF-8 to it instead
    for args in (["show", f"{run_id}:9", "--db", db], ["runs", "--db", db]):
        console, click_ = outcomes(agency_both_ways(args, tmp_path, env=ascii_out))
        assert console == click_, args
        assert args[0] == "runs" or "✓".encode() in console[1]
    for args in (["show", run_id, "--db", db], ["runs", "--db", db]):
        read, write = os.pipe()  # a reader that is gone (`| head -0`): exit 1, nothing said
        os.close(read)
        try:
            done = agency_both_ways(args, tmp_path, stdout=write, stderr=-1)
        finally:
            os.close(write)
        assert [(d.returncode, d.stderr) for d in done] == [(1, b"")] * 2, args


@pytest.mark.parametrize("module", sorted(set(LAZY_COMMANDS.values())))
def test_every_lazy_command_is_listed_under_its_module(module: str) -> None:
    import importlib

    group = click.Group()
    importlib.import_module(module).register(group)
    assert set(group.commands) == {n for n, m in LAZY_COMMANDS.items() if m == module}


def test_help_lists_every_command() -> None:
    ctx = click.Context(cli)
    listed = cli.list_commands(ctx)
    assert set(LAZY_COMMANDS) <= set(listed)
    assert all(cli.get_command(ctx, name) is not None for name in listed)
    text = cli.get_help(ctx)
    for name in listed:
        assert f"\n  {name} " in text, name


def test_reading_a_recorded_run_loads_no_machine_and_no_parser() -> None:
    mods = loaded_after("import runtime.record.timeline, runtime.record.sqlite_store")
    assert not mods & {*HEAVY, "runtime.language.syntax.ast"}, sorted(mods)


def test_the_records_a_read_makes_are_not_built_at_import() -> None:
    """The store's records, the views and the errors' spans are `Frozen` classes, not
    dataclasses, which cost `agency show` a sixth of its start-up to generate (runtime/frozen.py)
    and importing `dataclasses` another seventh (runtime/errors.py)."""
    import dataclasses
    import importlib

    for name in (
        "runtime.errors",
        "runtime.record.contract",
        "runtime.record.views",
        "runtime.language.location",
        "runtime.language.syntax.ast",  # seventy node classes (runtime/language/syntax/nodes.py)
    ):
        module = importlib.import_module(name)
        built = [
            k
            for k, v in vars(module).items()
            if isinstance(v, type) and dataclasses.is_dataclass(v)
        ]
        assert not built, (name, built)


def test_the_version_is_the_packages() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert debugger.__version__ == pyproject["project"]["version"]
    assert debugger.__version__ == importlib.metadata.version("agency-debugger")


def test_bytecode_and_the_record_share_one_location_type() -> None:
    assert BytecodeLocation is ViewLocation
