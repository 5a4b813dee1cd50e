"""Provides `copy_run`: a run moved from one store to another (`agency copy`, e.g. a laptop's
SQLite into the team's PostgreSQL), whole: its row, branches, step batches, keyframes, events,
LLM calls and effect journal, under the same run id.

A copy marks the run `copy_incomplete` in its meta until its last write, so a copy cut short
(killed, the network gone) is recognised and done again from the start the next time; a run
already there whole is left alone. Keyframes keep their `base_step` where the source has it.
LLM calls and effects get the time of the copy as their
`created_at` (the contract does not take one).
"""

from __future__ import annotations

from runtime.record.contract import MAX_STEP, RunStore, StoreError

__all__ = ["CHUNK_STEPS", "copy_run"]

CHUNK_STEPS = 20_000  # steps read per round trip (bounded memory for long runs)
INCOMPLETE = "copy_incomplete"


def copy_run(source: RunStore, target: RunStore, run_id: str) -> int | None:
    """Copy run `run_id` (id or unique prefix in `source`) into `target`. Returns the number of
    steps copied, or None when `target` already holds the whole run."""
    run = source.get_run(run_id)
    if run is None:
        raise StoreError(f"no run {run_id!r} in the source store")
    there = target.get_run(run.id)
    if there is not None and there.id == run.id:
        if not (there.meta or {}).get(INCOMPLETE):
            return None
        target.delete_run(run.id)  # a copy cut short: start again
    target.put_run(run.replace(meta={**(run.meta or {}), INCOMPLETE: True}, step_count=0))
    branches = source.branches(run.id)
    for br in branches[1:]:
        assert br.parent_branch is not None and br.fork_step is not None
        made = target.create_branch(run.id, br.parent_branch, br.fork_step, br.edits)
        if made != br.branch:
            raise StoreError(f"run {run.id}: copied branch {br.branch} became {made}")
    for br in branches:
        _copy_branch(source, target, run.id, br.branch)
    for call in source.llm_calls(run.id):
        target.add_llm_call(
            run.id,
            call.branch,
            call.step,
            provider=call.provider,
            model=call.model,
            request=call.request,
            response=call.response,
            input_tokens=call.input_tokens,
            output_tokens=call.output_tokens,
            cost=call.cost,
            latency_ms=call.latency_ms,
        )
    for effect in source.effects(run.id):
        target.put_effect(
            effect.key,
            run_id=run.id,
            branch=effect.branch,
            step=effect.step,
            kind=effect.kind,
            status=effect.status,
            args=effect.args,
            result=effect.result,
        )
    target.flush()
    target.put_run(run)  # last: the row as it was (timestamps, step count), and whole
    return run.step_count


def _copy_branch(source: RunStore, target: RunStore, run_id: str, branch: int) -> None:
    """What `branch` itself recorded (not what it inherits from its parent)."""
    own = source.lineage(run_id, branch)[-1]
    end = source.step_count(run_id, branch)
    lo = own.lo
    while lo < end:
        hi = min(lo + CHUNK_STEPS - 1, end - 1)
        for batch in source.batches(run_id, branch, lo, hi):
            # A batch straddling `lo` was copied with the chunk before.
            if batch.branch == branch and (batch.first_step >= lo or lo == own.lo):
                target.append_batch(run_id, branch, batch.first_step, batch.last_step, batch.blob)
        lo = hi + 1
    step = MAX_STEP
    while True:
        keyframe = source.keyframe_at_or_before(run_id, branch, step)
        if keyframe is None or keyframe.branch != branch:
            break
        target.put_keyframe(run_id, branch, keyframe.step, keyframe.blob, keyframe.base)
        step = keyframe.step - 1
    for event in source.events(run_id, branch):
        if event.branch == branch:
            target.add_event(run_id, branch, event.step, event.kind, event.summary, event.data)
