"""Provides the feedback queue of guard approvals: `approve({message})` on a std::guard trip
queues the message for the guarded work (the running fork branch's, else the run's), and the
next LLM request takes it into its thread as a user message (runtime/vm/llm_calls.py). The
queue is a hidden local of the branch's first frame, so checkpoints carry it and a branch's
queue ends with the branch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtime.vm.builtins_fork import innermost_fork_above
from runtime.vm.values import JSArray, to_str

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

FEEDBACK = "__guard_feedback"  # hidden local: approvals' messages for the next LLM request


def _feedback_holder(m: Machine) -> int:
    """The frame that keeps this branch's feedback queue: the first frame of the innermost
    fork or race branch running (a branch's queue ends with it), else the entry node's frame,
    else (while the module initialises) the module's. Not the module frame under the node: a
    checkpoint or snapshot leaves that frame out and rebuilds it empty (runtime/vm/checkpoints.py),
    so a queue kept there was lost by a round trip."""
    frames = m.frames
    fork_at = innermost_fork_above(m, -1, below=len(frames))
    if fork_at is not None:
        return fork_at + 1
    if len(frames) > 1 and frames[0].code.kind == "module" and frames[1].code.kind == "node":
        return 1
    return 0


def queue_feedback(m: Machine, text: str) -> None:
    """An approval carried `message`: it reaches the model as a user message before the
    work's next request (`take_feedback`)."""
    at = _feedback_holder(m)
    f = m.frames[at]
    queue = f.locals.get(FEEDBACK)
    if type(queue) is not JSArray:
        queue = JSArray()
        f.locals[FEEDBACK] = queue
        if m.wlog is not None:
            m.wlog.append((1, at, FEEDBACK, m.rec.enc_now(queue)))
    m.splice(queue, len(queue), 0, (text,))


def take_feedback(m: Machine) -> list[str]:
    """The queued feedback of the running branch (emptied): what the next request carries."""
    if len(m.frames) == 0:
        return []
    at = _feedback_holder(m)
    texts: list[str] = []
    # (an approval's message queued while the module initialised, still waiting, comes first)
    for i in (0, at) if at == 1 else (at,):
        queue = m.frames[i].locals.get(FEEDBACK)
        if type(queue) is JSArray and queue:
            texts.extend(to_str(t) for t in queue)
            m.splice(queue, 0, len(queue), ())
    return texts
