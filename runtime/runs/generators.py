"""Provides the runner for splice generators (runtime/language/splices.py): compile the
generator program, run its one node on a machine with no model, and hand back the source of
the Code it returns. A generator must be effect-free: an interrupt (reading a file, running a
command, any `interrupt`) or an LLM call is an error, as is a result that is not Code. A step
budget stops a generator that loops forever.
"""

from __future__ import annotations

from pathlib import Path

from runtime.errors import AgencyError
from runtime.language import splices
from runtime.language.program import compile_source
from runtime.vm.builtins import World
from runtime.vm.builtins_template import is_code
from runtime.vm.machine import Machine
from runtime.vm.writelog import FAILED, HALTED, INTERRUPTED

STEP_BUDGET = 5_000_000


def run_generator(source: str, path: str) -> str:
    program = compile_source(source, str(Path(path).with_name("<splice generator>")))
    world = World(root=Path(path).resolve().parent, quiet=True)
    machine = Machine(program, splices.GENERATOR_NODE, model=None, world=world)
    machine.step(STEP_BUDGET)
    if machine.status == INTERRUPTED:
        raise AgencyError("a generator may not raise interrupts (it runs while compiling)")
    if machine.status == FAILED:
        raise AgencyError(f"the generator failed: {machine.error}")
    if machine.status != HALTED:
        raise AgencyError(f"the generator did not finish within {STEP_BUDGET:,} steps")
    if not is_code(machine.result):
        raise AgencyError("a generator must return Code (a `[| … |]` literal or a fill of one)")
    return str(machine.result["source"])


splices.RUNNERS.append(run_generator)
