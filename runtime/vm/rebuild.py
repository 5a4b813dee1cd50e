"""Provides `rebuild`: a machine from a snapshot or a checkpoint, ready to run on.

A snapshot (`checkpoints.snapshot`) holds the whole machine, kept state included; a user
checkpoint (`checkpoint()` / `getCheckpoint()`) holds what restore rolls back, so the kept state
(`shared`, `static`) starts as the module's initialisers make it.
"""

from __future__ import annotations

from typing import Any

from runtime.errors import AgencyRuntimeError
from runtime.language.bytecode import CompiledProgram
from runtime.vm.builtins import World
from runtime.vm.checkpoints import decode_frames, decode_threads, validate
from runtime.vm.machine import Machine
from runtime.vm.state import Decoder


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
    dec = Decoder(data.get("heap"))
    m.frames[:] = decode_frames(program, data, dec)
    m.globals.update({k: dec.dec(v) for k, v in data["globals"].items()})
    m.threads = decode_threads(data, dec)
    usage = data.get("usage") or {}
    m.usage.update({k: usage[k] for k in ("input_tokens", "output_tokens", "cost") if k in usage})
    m.run_id = str(data.get("run_id") or "")
    m.branch = int(data.get("branch") or 0)
    extra = data.get("machine")
    if isinstance(extra, dict):
        m.shared.update({k: dec.dec(v) for k, v in (extra.get("shared") or {}).items()})
        m.mutable.update({k: dec.dec(v) for k, v in (extra.get("mutable") or {}).items()})
        m.output = list(extra.get("output") or [])
        m.thread_counter = int(extra.get("thread_counter", 1))
        m.cp_counter = int(extra.get("cp_counter", 0))
        m.checkpoints = {int(k): v for k, v in (extra.get("checkpoints") or {}).items()}
        m.restore_counts = dict(extra.get("restore_counts") or {})
        m.restores_of = dict(extra.get("restores_of") or {})
        m.step_index = int(extra.get("step_index", -1))
        m.status = str(extra.get("status") or "running")
        m.result = dec.dec(extra.get("result"))
        if extra.get("error"):
            m.error = AgencyRuntimeError(str(extra["error"]))
        m.pending = extra.get("pending")
        ans = extra.get("answer")
        m.answer = dec.dec(ans) if ans is not None else None
        m.entry_args = [dec.dec(a) for a in extra.get("entry_args") or []]
        m.entry_named = {k: dec.dec(v) for k, v in (extra.get("entry_named") or {}).items()}
        m.nodes_traversed = list(extra.get("nodes_traversed") or [])
        m.llm_calls = int(extra.get("llm_calls", 0))
        m.effects = dict(extra.get("effects") or {})
        ms = extra.get("model_state") or {}
        if model is not None and "position" in ms and hasattr(model, "position"):
            model.position = ms["position"]
        if m.status == "paused":
            m.status = "running"
    else:
        # A user checkpoint: continue at the checkpoint() statement; kept state starts fresh,
        # except the checkpoint counter, which must not hand out an id that is already taken.
        ident = data.get("id")
        m.cp_counter = (ident + 1) if isinstance(ident, int) else 0
        m.shared.update(module_shared(program))
        m.step_index = int(data.get("step") or 0) - 1
        m.nodes_traversed = [str(data.get("node") or "main")]
    return m
