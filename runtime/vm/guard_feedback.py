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
    fork or race branch running, else the bottom frame (a branch's queue ends with it)."""
    fork_at = innermost_fork_above(m, -1, below=len(m.frames))
    return 0 if fork_at is None else fork_at + 1


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
    queue = m.frames[_feedback_holder(m)].locals.get(FEEDBACK)
    if type(queue) is not JSArray or not queue:
        return []
    texts = [to_str(t) for t in queue]
    m.splice(queue, 0, len(queue), ())
    return texts
