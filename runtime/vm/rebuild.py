"""Provides `rebuild`: a machine from a snapshot or a checkpoint, ready to run on.

A snapshot (`checkpoints.snapshot`) holds the whole machine, kept state included; a user
checkpoint (`checkpoint()` / `getCheckpoint()`) holds what restore rolls back, so the kept state
(`shared`, `static`) starts as the module's initialisers make it.
"""

from __future__ import annotations

from typing import Any

from runtime.language.bytecode import CompiledProgram
from runtime.vm.builtins import World
from runtime.vm.checkpoint_reading import validate
from runtime.vm.machine import Machine
from runtime.vm.revive import revive


def module_shared(program: CompiledProgram) -> dict[str, Any]:
    """`shared` and `static` values as the module's initialisers make them (a checkpoint does not
    hold them: they are not rolled back)."""
    if not program.shared:
        return {}
    m = Machine(program, "__none__", world=World(quiet=True))
    try:
        m.run()  # runs the module statements, then fails to find the node: that is fine
    except Exception:  # noqa: BLE001 - best effort: a module that cannot initialise keeps nulls
        return {}
    return dict(m.shared)


def rebuild(
    program: CompiledProgram, data: dict[str, Any], *, model: Any = None, world: Any = None
) -> Machine:
    """A machine rebuilt from a snapshot or checkpoint (validated against `program`)."""
    validate(data, program)
    m = Machine(program, str(data.get("node") or "main"), model=model, world=world, start=False)
    if not revive(m, program, data, model=model):
        # A user checkpoint: continue at the checkpoint() statement; kept state starts fresh,
        # except the checkpoint counter, which must not hand out an id that is already taken.
        ident = data.get("id")
        m.cp_counter = (ident + 1) if isinstance(ident, int) else 0
        m.shared.update(module_shared(program))
        m.freeze_statics()
        m.step_index = int(data.get("step") or 0) - 1
        m.nodes_traversed = [str(data.get("node") or "main")]
    return m
