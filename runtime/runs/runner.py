"""Provides the pieces every front end needs to run a program: model choice, argument
parsing and the interrupt loop. The CLI, the test runner and the debugger all go through here."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.errors import AgencyError, AgencyRuntimeError, UsageError
from runtime.language.bytecode import CompiledProgram
from runtime.language.files import JSONTooDeep, loads_json
from runtime.language.program import compile_source
from runtime.llm.mock import load_mocks
from runtime.llm.registry import resolve_model
from runtime.runs import generators  # noqa: F401  (installs the splice runner)
from runtime.runs.stopping import Stopper
from runtime.vm import builtins
from runtime.vm.builtins import World
from runtime.vm.builtins_std import FAKE_CLOCK, FAKE_CLOCK_START
from runtime.vm.frames import Decision
from runtime.vm.machine import Machine
from runtime.vm.values import JSArray, JSObject, from_plain
from runtime.vm.writelog import FAILED, HALTED, INTERRUPTED

InterruptAnswer = Callable[[Any], "Decision | None"]


@dataclass
class RunConfig:
    """How to run: entry node, arguments, model and interrupt policy."""

    node: str = "main"
    args: list[Any] = field(default_factory=list)
    named: dict[str, Any] = field(default_factory=dict)
    model_spec: str | None = None
    mocks: list[Any] | None = None
    seed: int = 0
    base_url: str | None = None
    root: str | None = None
    # Directories besides `root` where the program may change files (see World.writable).
    writable: list[str] = field(default_factory=list)
    quiet: bool = False
    # A test's `"fakeClock": true`: the clock starts at FAKE_CLOCK_START and moves only by
    # `sleep` and `_advanceTime`, so time budgets do not depend on how loaded the machine is.
    fake_clock: bool = False
    # The program's own command-line arguments, read by std::args (a test's `"argv"`).
    argv: list[str] = field(default_factory=list)
    # A test's `fetchMocks` (None: HTTP requests go to the network); see vm/builtins_http.py.
    fetch_mocks: list[Any] | None = None
    # The project's agency.json `memory` settings ({dir, …}); None: memory is off until enabled.
    memory: dict[str, Any] | None = None

    def make_model(self) -> Any:
        return resolve_model(
            self.model_spec, seed=self.seed, mocks=self.mocks, base_url=self.base_url
        )


def parse_args_json(text: str | None) -> tuple[list[Any], dict[str, Any]]:
    """`--args`: a JSON array of positional arguments, an object of named ones, or one value."""
    if text is None or text.strip() == "":
        return [], {}
    try:
        value = loads_json(text)
    except JSONTooDeep as exc:
        raise UsageError(f"--args: {exc.msg}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"--args is not valid JSON: {exc.msg} (column {exc.colno}); "
            """e.g. --args '["Ada", 3]' or --args '{"name": "Ada"}'"""
        ) from None
    v = from_plain(value)
    if type(v) is JSArray:
        return list(v), {}
    if type(v) is JSObject:
        return [], dict(v)
    return [v], {}


def evaluate_input(text: str) -> tuple[list[Any], dict[str, Any]]:
    """A test's `input`: an argument list as source text (`"\\"Ada\\", 3"`, `name: "Ada"`)."""

    if not text.strip():
        return [], {}
    source = f"node __input() {{\n  return __args({text})\n}}\n"
    program = compile_source(source, "<input>")
    m = Machine(program, "__input", world=World(quiet=True))

    captured: dict[str, Any] = {}

    def grab(machine: Machine, args: list[Any], named: dict[str, Any]) -> None:
        captured["args"], captured["named"] = list(args), dict(named)

    builtins.BUILTINS["__args"] = grab
    try:
        m.run()
    finally:
        builtins.BUILTINS.pop("__args", None)
    if m.status != HALTED:
        raise AgencyError(
            f"cannot evaluate input {text!r}: {m.error.message if m.error else m.status}"
        )
    return captured["args"], captured["named"]


def check_entry(
    program: CompiledProgram, node: str, args: list[Any], named: dict[str, Any]
) -> None:
    """Refuse, before anything runs or is recorded, an entry node the program does not have
    or named arguments it does not take (UsageError, naming what there is)."""
    nodes = program.nodes()
    code = program.functions.get(node)
    if code is None or code.kind != "node":
        if not nodes:
            raise UsageError(
                f"{program.path}: no node to run; a program starts at a `node`, "
                'e.g. node main() { print("hi") }'
            )
        raise UsageError(f"{program.path}: no node named `{node}` (--node {' | '.join(nodes)})")
    params = [p.name for p in code.params]
    if "__named" in params:
        return
    unknown = [key for key in named if key not in params]
    if unknown:
        takes = ", ".join(p for p in params if not p.startswith("__")) or "no parameters"
        raise UsageError(
            f"--args: node `{node}` has no parameter named `{unknown[0]}` (it takes {takes})"
        )
    rest = any(p.rest for p in code.params)
    if not rest and len(args) > len(params):
        n = len(params)
        raise UsageError(
            f"--args: node `{node}` takes {n} argument{'s' if n != 1 else ''}, got {len(args)}"
        )


def new_world(config: RunConfig) -> World:
    """The world a run of `config` sees: its working directory, where else it may change files,
    its command line."""
    world = World(root=config.root, quiet=config.quiet)
    world.writable = tuple(Path(d).resolve() for d in config.writable)
    world.argv = list(config.argv)
    return world


def new_machine(program: CompiledProgram, config: RunConfig, model: Any = None) -> Machine:
    world = new_world(config)
    machine = Machine(
        program,
        config.node,
        config.args,
        config.named,
        model=model if model is not None else config.make_model(),
        world=world,
    )
    if config.fake_clock:
        machine.mutable[FAKE_CLOCK] = FAKE_CLOCK_START
    world.fetch_mocks = config.fetch_mocks
    world.memory_config = config.memory
    return machine


def drive(
    machine: Machine, answer: InterruptAnswer | None = None, stopper: Stopper | None = None
) -> Machine:
    """Run to the end, answering interrupts with `answer` (None: leave the run interrupted);
    a `stopper` may stop it earlier, at a step boundary (a step budget, a cancel)."""
    if stopper is not None and stopper.machine is not machine:
        stopper.attach(machine)
    while True:
        if stopper is None:
            machine.run()
        else:
            budget = stopper.budget()
            if stopper.cancelled or machine.step_index >= budget:
                return machine
            # `step` sets the machine's `stop_at`, which `cancel()` lowers from outside (a
            # cancel racing this line is raised again by whoever waits on it).
            machine.step(int(min(budget - machine.step_index, 10**15)))
            if stopper.stopped():
                return machine
        if machine.status != INTERRUPTED:
            return machine
        decision = answer(machine.pending) if answer is not None else None
        if decision is None:
            return machine
        machine.answer_interrupt(decision)


def decision_from(action: str, value: Any = None) -> Decision:
    if action == "approve":
        # A person's bare approve makes the interrupt true (a handler's approve() makes it null).
        return Decision("approve", True if value is None else from_plain(value))
    if action == "reject":
        return Decision("reject", value)
    if action == "resolve":
        return Decision("resolve", from_plain(value))
    raise AgencyError(f"unknown interrupt action {action!r} (approve, reject or resolve)")


def outcome(machine: Machine) -> str:
    if machine.status == HALTED:
        return "finished"
    if machine.status == FAILED:
        return "failed"
    return machine.status


def env_mocks() -> list[Any] | None:
    text = os.environ.get("AGENCY_LLM_MOCKS", "").strip()
    if not text:
        return None

    return load_mocks(text)


__all__ = [
    "AgencyRuntimeError",
    "RunConfig",
    "check_entry",
    "decision_from",
    "drive",
    "env_mocks",
    "evaluate_input",
    "new_machine",
    "outcome",
    "parse_args_json",
]
