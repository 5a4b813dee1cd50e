"""Provides the `agency` command."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from typing import TYPE_CHECKING, Any

import click

from debugger import __version__
from debugger.click_context import CONTEXT
from runtime.errors import (
    EXIT_STOPPED,
    EXIT_TERMINATED,
    AgencyError,
    AgencySyntaxError,
    CheckpointFormatError,
    Terminated,
    UsageError,
)

if TYPE_CHECKING:  # the machine is imported by the commands that run programs (start-up time)
    from runtime.vm.machine import Machine

EXIT_RUNTIME = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 3

EXIT_INTERNAL = 70  # EX_SOFTWARE: a bug in agency itself

# Errors of the file system about a path, not about agency (see AgencyGroup.invoke).
_PATH_ERRORS = frozenset(
    {errno.ENAMETOOLONG, errno.ELOOP, errno.ENOTDIR, errno.EISDIR, errno.EACCES, errno.EPERM}
)


def fail(message: str, code: int = EXIT_USAGE) -> None:
    click.echo(f"agency: {message}", err=True)
    sys.exit(code)


def report(exc: AgencyError) -> None:
    """Print an error the way a person wants to read it and exit with its code."""
    if isinstance(exc, AgencySyntaxError):
        click.echo(exc.render(), err=True)
        n = len(exc.diagnostics)
        click.echo(f"{n} error{'s' if n != 1 else ''}", err=True)
    else:
        click.echo(f"agency: {exc}", err=True)
    sys.exit(getattr(exc, "exit_code", 1))


def internal_error(exc: BaseException) -> None:
    """A bug in agency: one line naming it and where the traceback went (AGENCY_DEBUG=1 prints
    it), exit 70."""
    import traceback

    from debugger.errors import internal_error_line

    if os.environ.get("AGENCY_DEBUG"):
        click.echo("".join(traceback.format_exception(exc)), err=True, nl=False)
        sys.exit(EXIT_INTERNAL)
    click.echo(f"agency: {internal_error_line(exc)}", err=True)
    sys.exit(EXIT_INTERNAL)


# The commands that live in modules of their own, by name, and the module whose `register(cli)`
# adds them. A module is imported when one of its commands is asked for, so `agency show` does
# not load the debugger or the server (start-up time); `--help` lists them all.
LAZY_COMMANDS = {
    "debugger": "debugger.debug_command",
    "debug": "debugger.debug_command",
    "runs": "debugger.store_commands",
    "show": "debugger.store_commands",
    "export": "debugger.store_commands",
    "prune": "debugger.store_commands",
    "resume": "debugger.store_commands",
    "replay": "debugger.store_commands",
    "copy": "debugger.store_commands",
    "serve": "debugger.serve",
}


class AgencyGroup(click.Group):
    """Turns every error escaping a command into a clear message, never a traceback: an
    AgencyError is printed as it is, Ctrl-C says so (exit 130), anything else is a bug
    (`internal_error`). The commands of `LAZY_COMMANDS` are loaded when asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = LAZY_COMMANDS.get(cmd_name)
        if cmd_name not in self.commands and module is not None:
            import importlib

            importlib.import_module(module).register(self)
        return self.commands.get(cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except AgencyError as exc:
            report(exc)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except KeyboardInterrupt as exc:
            if isinstance(exc, Terminated):
                click.echo("\nagency: stopped (SIGTERM)", err=True)
                sys.exit(EXIT_TERMINATED)
            click.echo("\nagency: stopped (Ctrl-C)", err=True)
            sys.exit(EXIT_STOPPED)
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                raise  # stdout was closed (`| head`): click exits quietly
            if exc.errno in _PATH_ERRORS and exc.filename is not None:
                # A path given on the command line that the system refuses (a name too long, a
                # loop of links, a file where a directory should be), met by a check that did
                # not expect it (`Path.exists()` lets these through): the user's to fix.
                name = os.fsdecode(exc.filename)
                shown = name if len(name) <= 120 else name[:120] + "…"
                fail(f"{shown}: {exc.strerror}")
            internal_error(exc)
        except RecursionError:
            fail(
                "too deeply nested to handle (Python's recursion limit was reached); "
                "split the nesting into smaller parts",
                EXIT_RUNTIME,
            )
        except Exception as exc:
            internal_error(exc)


@click.group(cls=AgencyGroup, context_settings=CONTEXT)
@click.version_option(__version__, prog_name="agency")
def cli() -> None:
    """Run, test and time-travel-debug Agency agent programs.

    \b
    Start with:
      agency run examples/dice.agency --mock examples/dice.mocks.json
      agency debugger examples/dice.agency
    """


def main() -> None:
    from debugger import signals

    signals.signal(signals.SIGINT, signals.default_int_handler)  # see debugger/__init__.py
    try:
        cli(prog_name="agency")
    except KeyboardInterrupt as exc:  # a second Ctrl-C while the first was being handled
        click.echo("\nagency: interrupted", err=True)
        sys.exit(EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_STOPPED)
    finally:
        _quiet_from_here(signals)


def _quiet_from_here(signals: Any) -> None:
    """The command is done and everything it stores is stored: a Ctrl-C from now on, while
    Python shuts down, ends the process at once with 130, as it does while the command starts
    (debugger/__init__.py), instead of a KeyboardInterrupt traceback from `threading`'s
    shutdown (a second Ctrl-C that came a moment late). What is printed is flushed first."""
    from debugger import _quiet_exit

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # (a closed pipe: nothing more to say anyway)
            stream.flush()
    signals.signal(signals.SIGINT, _quiet_exit)


# -- shared options ------------------------------------------------------------------------------


def model_options(fn: Any) -> Any:
    fn = click.option(
        "--seed", type=int, default=0, show_default=True, help="Seed of the offline `sim` model."
    )(fn)
    fn = click.option(
        "--mock",
        "mock",
        type=click.Path(dir_okay=False),
        help='Scripted LLM answers: a JSON list of {"return": v} / {"toolCall": …} (or set AGENCY_LLM_MOCKS).',
    )(fn)
    fn = click.option("--base-url", help="Base URL of an OpenAI-compatible or Anthropic endpoint.")(
        fn
    )
    fn = click.option(
        "--model",
        "model_spec",
        metavar="PROVIDER/NAME",
        help="Model to call, e.g. openai/gpt-4o-mini, anthropic/claude-…, ollama/llama3, sim (or set AGENCY_MODEL).",
    )(fn)
    return fn


def entry_options(fn: Any) -> Any:
    fn = click.option(
        "--args",
        "args_json",
        metavar="JSON",
        help="Arguments: a JSON array (positional) or object (named).",
    )(fn)
    fn = click.option("--node", default="main", show_default=True, help="The node to start at.")(fn)
    fn = click.option(
        "--allow-write",
        "allow_write",
        multiple=True,
        type=click.Path(file_okay=False, exists=True),
        metavar="DIR",
        help="A directory besides the working directory where the program may change files "
        "(repeatable). Without it, a write outside the working directory is an error.",
    )(fn)
    return fn


def make_config(
    node: str,
    args_json: str | None,
    model_spec: str | None,
    base_url: str | None,
    mock: str | None,
    seed: int,
    allow_write: tuple[str, ...] = (),
) -> Any:
    from runtime.runs.runner import RunConfig, env_mocks, parse_args_json

    args, named = parse_args_json(args_json)
    mocks = None
    if mock:
        mocks = read_mocks(mock)
    elif model_spec is None:
        mocks = env_mocks()
    config = RunConfig(
        node=node,
        args=args,
        named=named,
        model_spec=model_spec,
        mocks=mocks,
        seed=seed,
        base_url=base_url,
    )
    config.writable = [os.path.realpath(d) for d in allow_write]
    config.make_model()  # an unknown provider or a missing API key is reported now
    return config


def read_mocks(mock: str) -> list[Any]:
    """`--mock FILE` (or JSON text): its entries, or a UsageError that says what is wrong."""
    from runtime.llm.base import LLMError
    from runtime.llm.mock import load_mocks

    try:
        return load_mocks(mock)
    except LLMError as exc:  # unreadable, not JSON, wrong shape: the flag's value is wrong
        raise UsageError(str(exc)) from None


def interactive_answer(approve_all: bool, reject_all: bool) -> Any:
    import json

    from runtime.language.files import JSONTooDeep, loads_json
    from runtime.runs.runner import decision_from

    def answer(pending: Any) -> Any:
        if approve_all:
            return decision_from("approve")
        if reject_all:
            return decision_from("reject")
        if not sys.stdin.isatty():
            return None
        message = pending.get("message") if isinstance(pending, dict) else pending
        data = pending.get("data") if isinstance(pending, dict) else None
        click.echo(f"\ninterrupt: {message}", err=True)
        if data is not None:
            click.echo(f"  data: {json.dumps(data)}", err=True)
        while True:
            choice = (
                click.prompt("  [a]pprove, [r]eject or [v]alue", default="a", err=True)
                .strip()
                .lower()
            )
            if choice in ("a", "approve"):
                return decision_from("approve")
            if choice in ("r", "reject"):
                return decision_from("reject", "rejected by the user")
            if choice in ("v", "value"):
                text = click.prompt("  value (JSON)", err=True)
                try:
                    return decision_from("resolve", loads_json(text))
                except JSONTooDeep as exc:
                    click.echo(f"  {exc.msg}; try again", err=True)
                except json.JSONDecodeError:
                    click.echo("  not JSON; try again", err=True)

    return answer


def finish(machine: Machine, as_json: bool) -> None:
    """Print the outcome of a run and exit with the right code."""
    from runtime.vm.values import stringify
    from runtime.vm.writelog import FAILED, HALTED, INTERRUPTED

    if machine.status == HALTED:
        if as_json:
            click.echo(stringify(machine.result))
        if machine.exit_code:  # the program called exit(code)
            sys.exit(machine.exit_code)
        return
    if machine.status == FAILED:
        err = machine.error
        if err is not None:
            click.echo(err.render(machine.program.source), err=True)
        sys.exit(EXIT_RUNTIME)
    if machine.status == INTERRUPTED:
        pending = machine.pending
        message = pending.get("message") if isinstance(pending, dict) else pending
        hint = "rerun with --approve-all or --reject-all"
        if machine.run_id:
            hint += f", or answer it with `agency resume {machine.run_id} --approve` (or --reject / --resolve JSON)"
        click.echo(f"agency: the run is waiting on an interrupt: {message}\n  {hint}", err=True)
        sys.exit(EXIT_INTERRUPTED)


def stopped_because(exc: BaseException) -> str:
    """Why a recorded run ended early, as `agency runs` shows it."""
    if isinstance(exc, OSError) and exc.errno == errno.EPIPE:
        return "its output was closed (the reader of a pipe exited)"
    if isinstance(exc, AgencyError):
        return str(exc)
    if isinstance(exc, RecursionError):
        return "a value was nested too deeply to record"
    return f"agency stopped on an internal error ({type(exc).__name__}: {exc})"


# -- commands -------------------------------------------------------------------------------------


@cli.command(context_settings=CONTEXT)
@click.argument("file", type=click.Path(dir_okay=False))
@entry_options
@model_options
@click.option(
    "--json", "as_json", is_flag=True, help="Also print the result as JSON on the last line."
)
@click.option(
    "--checkpoint",
    "checkpoint_file",
    type=click.Path(),
    help="Continue from a checkpoint file of this program.",
)
@click.option("--approve-all", is_flag=True, help="Approve every interrupt nobody else answers.")
@click.option("--reject-all", is_flag=True, help="Reject every interrupt nobody else answers.")
@click.option(
    "--no-record",
    is_flag=True,
    help="Do not record the run (by default every step is kept in the run store).",
)
@click.option(
    "--db",
    type=click.Path(dir_okay=False),
    help="Run store to record into (default .agency/runs.db, or AGENCY_DB).",
)
@click.option(
    "--max-steps",
    type=click.IntRange(min=1),
    metavar="N",
    help="Stop after N steps (a program that never ends); the run is saved as interrupted.",
)
@click.option(
    "--max-store-size",
    metavar="SIZE",
    help="Stop (saved as interrupted, resumable) once the run store grows past SIZE, e.g. 500M "
    "(default AGENCY_MAX_STORE_SIZE, else 8G).",
)
@click.pass_context
def run(
    ctx: click.Context,
    file: str,
    node: str,
    allow_write: tuple[str, ...],
    args_json: str | None,
    model_spec: str | None,
    base_url: str | None,
    mock: str | None,
    seed: int,
    as_json: bool,
    checkpoint_file: str | None,
    approve_all: bool,
    reject_all: bool,
    no_record: bool,
    db: str | None,
    max_steps: int | None,
    max_store_size: str | None,
) -> None:
    """Run an Agency program and print what it prints.

    Every step is recorded in the run store (see `agency runs`, `agency show`, `agency debugger
    --trace`) unless --no-record is given; the run id is printed on stderr.

    \b
    Examples:
      agency run examples/dice.agency --mock examples/dice.mocks.json
      agency run agent.agency --node greet --args '["Ada"]' --json
      agency run agent.agency --model openai/gpt-4o-mini
      agency run agent.agency --checkpoint cp.json
      agency run agent.agency --allow-write /tmp     (it may also change files in /tmp)
    """
    from runtime.language.program import load_program
    from runtime.runs.recording import at_checkpoint_step
    from runtime.runs.runner import check_entry, drive, new_machine
    from runtime.runs.stopping import GracefulStop, Stopper, max_store_bytes

    if approve_all and reject_all:
        fail("choose one of --approve-all and --reject-all")
    if checkpoint_file is not None and not checkpoint_file.strip():
        fail("--checkpoint: give a checkpoint file (written by `agency export` or the debugger)")
    if checkpoint_file:
        given = [
            f"--{name}"
            for name in ("node", "args")
            if ctx.get_parameter_source("args_json" if name == "args" else name)
            == click.core.ParameterSource.COMMANDLINE
        ]
        if given:
            fail(
                f"{' and '.join(given)} cannot go with --checkpoint: the run goes on from the "
                "node and arguments the checkpoint was taken in"
            )
    program = load_program(file)
    config = make_config(node, args_json, model_spec, base_url, mock, seed, allow_write)
    model = config.make_model()
    at_step = False
    if checkpoint_file:
        from runtime.runs.runner import new_world
        from runtime.vm.checkpoint_reading import load_file
        from runtime.vm.rebuild import rebuild

        data = load_file(checkpoint_file, program)
        machine = rebuild(program, data, model=model, world=new_world(config))
        at_step = at_checkpoint_step(data)
    else:
        check_entry(program, node, config.args, config.named)
        machine = new_machine(program, config, model=model)
    answer = interactive_answer(approve_all, reject_all)
    stopper = Stopper(max_steps) if max_steps is not None else None
    if not no_record:
        stopper = Stopper(max_steps, max_store_bytes(max_store_size))
    if no_record:
        # Ctrl-C or SIGTERM stops at the next step boundary, as a recorded run does; a second
        # one (or a SIGTERM past its grace) stops it where it is.
        stop = GracefulStop(machine)
        with stop:
            try:
                drive(machine, stop.answer(answer), stopper)
            except KeyboardInterrupt as exc:
                stop.cut(exc)
        if stop.stopped():
            click.echo(
                f"agency: stopped at step {machine.step_index} ({stop.signal_name}); the run "
                "was not recorded (--no-record), so it cannot be resumed",
                err=True,
            )
            sys.exit(stop.exit_code())
        if stopper is not None and stopper.stopped():
            click.echo(
                f"agency: {stopper.reason()} at step {machine.step_index}; the run was not "
                "recorded (--no-record), so it cannot be resumed",
                err=True,
            )
            sys.exit(EXIT_STOPPED)
        finish(machine, as_json)
        return
    from pathlib import Path

    from runtime.record.stores import open_run_store
    from runtime.runs.recording import run_config_of, run_recorded

    store = open_run_store(db)
    # (re-execution from the record starts at the node, not at the checkpoint)
    from_checkpoint = str(Path(checkpoint_file).resolve()) if checkpoint_file else None
    run_config = run_config_of(config, model, from_checkpoint)

    def announce(run_id: str) -> None:
        click.echo(f"agency: recording run {run_id} (agency show {run_id})", err=True)

    try:
        outcome = run_recorded(
            program,
            machine,
            store,
            run_config,
            answer,
            announce=announce,
            why=stopped_because,
            at_step=at_step,
            stopper=stopper,
        )
    finally:
        store.close()
    crash, rec_id = outcome.crash, outcome.run_id
    if crash is not None:
        raise crash
    if outcome.stopped:
        by = outcome.signal_name or "Ctrl-C"
        click.echo(
            f"agency: stopped at step {machine.step_index} ({by}); the run is saved as "
            f"interrupted: continue it with `agency resume {rec_id}`",
            err=True,
        )
        sys.exit(EXIT_TERMINATED if by == "SIGTERM" else EXIT_STOPPED)
    if stopper is not None and stopper.stopped():
        click.echo(
            f"agency: {stopper.reason()} at step {machine.step_index}; the run is saved as "
            f"interrupted: continue it with `agency resume {rec_id}`",
            err=True,
        )
        sys.exit(EXIT_STOPPED)
    finish(machine, as_json)


@cli.command(context_settings=CONTEXT)
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
def check(files: tuple[str, ...]) -> None:
    """Parse and compile programs without running them; report every error found.

    \b
    Example:
      agency check examples/*.agency
    """
    from runtime.language.program import load_program

    failed = 0
    code = 0
    for file in files:
        try:
            program = load_program(file)
        except AgencySyntaxError as exc:
            click.echo(exc.render(), err=True)
            failed += 1
            code = code or exc.exit_code
            continue
        except AgencyError as exc:  # unreadable, not UTF-8, missing: the other files go on
            click.echo(f"agency: {exc}", err=True)
            failed += 1
            code = code or exc.exit_code
            continue
        nodes = program.nodes()
        defs = [
            c.name for c in program.functions.values() if c.kind == "def" and c.file == program.path
        ]
        click.echo(
            f"{file}: ok ({len(nodes)} node{'s' if len(nodes) != 1 else ''}, {len(defs)} def{'s' if len(defs) != 1 else ''})"
        )
    if failed:
        if len(files) > 1:
            click.echo(f"{failed} of {len(files)} files failed", err=True)
        sys.exit(code)


@cli.command("test", context_settings=CONTEXT)
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("-q", "--quiet", is_flag=True, help="Print only failures and the summary.")
def test_cmd(paths: tuple[str, ...], quiet: bool) -> None:
    """Run *.test.json suites and compare each node's result with the expected output.

    \b
    A suite is {"sourceFile"?, "tests": [{"nodeName", "input", "expectedOutput",
    "llmMocks"?, "interruptHandlers"?, "skip"?}]}; the source defaults to the test file's name.
    Example:
      agency test tests/programs/
    """
    from runtime.runs.stopping import sigterm_as_interrupt
    from runtime.runs.testing import find_suites, run_suite

    suites = find_suites(list(paths))
    if not suites:
        fail(f"no *.test.json suites in {', '.join(paths)}")
    passed = failed = skipped = 0
    stopped = ""
    try:
        with sigterm_as_interrupt():
            for suite in suites:
                for outcome in run_suite(suite):
                    if outcome.skipped:
                        skipped += 1
                        if not quiet:
                            click.echo(f"SKIP {outcome.suite} › {outcome.name}")
                    elif outcome.passed:
                        passed += 1
                        if not quiet:
                            click.echo(f"PASS {outcome.suite} › {outcome.name}")
                    else:
                        failed += 1
                        click.echo(f"FAIL {outcome.suite} › {outcome.name}\n     {outcome.detail}")
    except KeyboardInterrupt as exc:
        stopped = "SIGTERM" if isinstance(exc, Terminated) else "Ctrl-C"
    tail = f", {skipped} skipped" if skipped else ""
    click.echo(f"{passed} passed, {failed} failed{tail}")
    if stopped:
        click.echo(f"agency: stopped ({stopped}); the other tests did not run", err=True)
        sys.exit(EXIT_TERMINATED if stopped == "SIGTERM" else EXIT_STOPPED)
    if failed:
        sys.exit(EXIT_RUNTIME)


__all__ = ["cli", "main", "CheckpointFormatError"]
