"""Provides `revive`: fills a machine built without a frame with the state a snapshot or a user
checkpoint holds (the part of `rebuild` that needs no `Machine` class, so code below the machine
— a builtin running a child program — can revive one too, with `type(parent)`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.language.bytecode import CompiledProgram
from runtime.vm.checkpoint_reading import decode_frames, decode_threads
from runtime.vm.state import Decoder

if TYPE_CHECKING:
    from runtime.vm.machine_state import MachineState


def revive(
    m: MachineState, program: CompiledProgram, data: dict[str, Any], *, model: Any = None
) -> bool:
    """Load `data` (already validated against `program`) into `m`; True if it was a whole-machine
    snapshot, False for a user checkpoint (whose kept state the caller starts fresh)."""
    dec = Decoder(data.get("heap"))
    m.frames[:] = decode_frames(program, data, dec)
    m.globals.update({k: dec.dec(v) for k, v in data["globals"].items()})
    m.threads = decode_threads(data, dec)
    usage = data.get("usage") or {}
    m.usage.update({k: usage[k] for k in ("input_tokens", "output_tokens", "cost") if k in usage})
    m.run_id = str(data.get("run_id") or "")
    m.branch = int(data.get("branch") or 0)
    extra = data.get("machine")
    if not isinstance(extra, dict):
        return False
    m.shared.update({k: dec.dec(v) for k, v in (extra.get("shared") or {}).items()})
    for label in extra.get("frozen") or []:
        m.freeze(dec.dec({"$ref": label}), deep=False)
    m.freeze_statics()
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
    return True
