"""Provides rebuilding the exact machine at any recorded step, and what it enables:
"restore from here" (a new branch with edits, run live) and exporting a step as a checkpoint.

The recorded deltas hold what a person inspects; the exact machine (operand stacks, loop
iterators, prelude frames) is rebuilt by re-executing the program from its start with every
model answer served from the record (`answers.RecordedAnswers`), interrupts answered as recorded and side
effects suppressed. Deterministic, so step k of the re-execution is step k of the record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from runtime.errors import AgencyError
from runtime.language.program import ProgramLoadError, load_program
from runtime.llm.base import Completion
from runtime.llm.registry import resolve_model
from runtime.record import timeline as record
from runtime.runs.answers import RecordedAnswers, RouteAll
from runtime.runs.processes import claim_run
from runtime.runs.recorder import Recorder
from runtime.runs.runner import drive
from runtime.runs.stopping import Stopper
from runtime.vm.builtins import World
from runtime.vm.builtins_std import FAKE_CLOCK
from runtime.vm.checkpoints import snapshot
from runtime.vm.effects import short_key
from runtime.vm.frames import Decision
from runtime.vm.machine import Machine
from runtime.vm.rebuild import rebuild
from runtime.vm.values import JSArray, JSObject, from_plain, to_str
from runtime.vm.writelog import INTERRUPTED


def recorded_answers(tl: record.Timeline, up_to: int | None = None) -> list[Completion]:
    out = []
    for call in tl.store.llm_calls(tl.run_id, tl.branch):
        if up_to is not None and call.step > up_to:
            break
        resp = call.response if isinstance(call.response, dict) else {}
        out.append(Completion.from_json(resp.get("completion") or {}))
    return out


def recorded_decisions(tl: record.Timeline) -> list[tuple[int, Decision]]:
    out = []
    for e in tl.store.events(tl.run_id, tl.branch, kind="interrupt"):
        action = e.data.get("action") if isinstance(e.data, dict) else None
        if action in ("approve", "reject", "resolve") and "answer" in e.data:
            out.append((e.step, Decision(action, from_plain(e.data.get("answer")))))
    return out


def recorded_effects(tl: record.Timeline) -> dict[str, dict[str, Any]]:
    """What the world gave and took along the branch's lineage, keyed `step:call`: the effect
    journal's applied entries, then the `effect` events (reads, and effects of runs recorded
    without a durable journal). Re-execution is served these instead of touching the world."""
    out: dict[str, dict[str, Any]] = {}
    for e in tl.store.events(tl.run_id, tl.branch, kind="effect"):
        data = e.data if isinstance(e.data, dict) else {}
        key = data.get("key")
        if not isinstance(key, str):
            continue
        entry = out.setdefault(short_key(key), {})
        entry.setdefault("kind", data.get("kind"))
        entry.setdefault("args", data.get("args"))
        if "result" in data:
            entry["result"] = data["result"]
        elif "error" in data:
            entry["error"] = data["error"]
    for rec in tl.store.effects(tl.run_id, tl.branch):
        if rec.status == "applied" and not str(rec.kind).startswith("def "):
            out[short_key(rec.key)] = {"kind": rec.kind, "args": rec.args, "result": rec.result}
        elif rec.status == "applied":
            out.setdefault(short_key(rec.key), {}).update(kind=rec.kind, result=rec.result)
    return out


class DecisionFeed:
    """Answers the interrupts a re-execution pauses on, as the recorded run answered them.

    An answer given from outside is recorded as an `interrupt` event with `action` and `answer`
    at the step that paused. Runs whose answers were not recorded that way (driven by a callback)
    still have the event the machine itself logs when it applies a decision (`action`, `value`,
    at the next step): the n-th such event of that step, n counted in the re-execution.
    """

    def __init__(self, tl: record.Timeline) -> None:
        self.answered = recorded_decisions(tl)
        self.applied: dict[int, list[Decision]] = {}
        for e in tl.store.events(tl.run_id, tl.branch, kind="interrupt"):
            data = e.data if isinstance(e.data, dict) else {}
            if (
                data.get("action") in ("approve", "reject", "resolve")
                and "value" in data
                and "answer" not in data
            ):
                self.applied.setdefault(e.step, []).append(
                    Decision(data["action"], from_plain(data["value"]))
                )
        self.seen: dict[int, int] = {}

    def attach(self, m: Machine) -> None:
        """Count the decisions the re-executing machine applies (to place the next one)."""

        def on_event(step: int, kind: str, summary: str, data: dict[str, Any]) -> None:
            if kind == "interrupt" and "action" in data and "value" in data:
                self.seen[step] = self.seen.get(step, 0) + 1

        m.on_event = on_event

    def next(self, step: int) -> Decision | None:
        """The answer to the interrupt the machine paused on at `step`."""
        while self.answered and self.answered[0][0] < step:
            self.answered.pop(0)  # an answer recorded for a pause that is behind us
        if self.answered and self.answered[0][0] == step:
            return self.answered.pop(0)[1]
        candidates = self.applied.get(step + 1) or []
        n = self.seen.get(step + 1, 0)
        return candidates[n] if n < len(candidates) else None


def _program(tl: record.Timeline) -> Any:
    if tl.program is not None:
        return tl.program

    try:
        program = load_program(tl.source_path, reuse=True)  # only run: compiled once
    except ProgramLoadError as exc:  # moved, deleted, or a damaged `source_path` in the store
        raise ProgramLoadError(
            f"run {tl.run_id} is re-executed from its program, which cannot be read: {exc}"
        ) from None
    if tl.run is not None and program.sha256 != tl.run.source_sha256:
        raise AgencyError(
            f"{tl.source_path} changed since run {tl.run_id} was recorded; "
            "the past can be viewed but not re-executed"
        )
    tl.program = program
    return program


def start_fake_clock(m: Machine, run: Any) -> None:
    """A run recorded under a test's fake clock re-executes from its start on that clock."""
    start = ((run.meta or {}) if run is not None else {}).get("fake_clock")
    if isinstance(start, int | float) and not isinstance(start, bool):
        m.mutable[FAKE_CLOCK] = start


def machine_at(
    tl: record.Timeline,
    step: int,
    progress: Callable[[int], None] | None = None,
    journal: Any = None,
) -> Machine:
    """The exact machine at `step`, rebuilt by re-execution from the record (no model calls)."""

    program = _program(tl)
    run = tl.run
    args = (run.args or {}) if run else {}
    model = RecordedAnswers(
        recorded_answers(tl, step), like=dict(run.config or {}) if run else None
    )
    start = (run.config or {}).get("checkpoint") if run else None
    if isinstance(start, dict):  # the run began at a checkpoint: re-execute from there
        m = rebuild(program, start, model=model, world=World(quiet=True))
    else:
        m = Machine(
            program,
            run.node if run else "main",
            from_plain(args.get("args") or []),
            dict(from_plain(args.get("named") or {})),
            model=model,
            world=World(quiet=True),
        )
        start_fake_clock(m, run)
    m.host.models = RouteAll(m.model)
    m.replaying = True
    m.host.journal = journal
    m.run_id = tl.run_id
    m.branch = tl.branch
    m.host.recorded = recorded_effects(tl)
    decisions = DecisionFeed(tl)
    decisions.attach(m)
    target = min(step, len(tl) - 1)
    # A branch's history is its ancestors' up to each fork step, where that fork's edits were
    # made: make them again on the way.
    edits_at = tl.lineage_edits()
    while m.step_index < target and not m.done:
        upcoming = [k for k in edits_at if m.step_index < k <= target]
        stop = min([target, *upcoming])
        m.step(min(stop - m.step_index, 10_000))
        if progress is not None:
            progress(m.step_index)
        if m.step_index in edits_at and m.step_index in upcoming:
            apply_edits(m, edits_at[m.step_index])
        if m.status == INTERRUPTED:
            decision = decisions.next(m.step_index)
            if decision is None:
                break
            m.answer_interrupt(decision)
    if m.step_index != target and tl.kind_at(step) != "end":
        raise AgencyError(
            f"could not re-execute run {tl.run_id} to step {step} (stopped at {m.step_index}); "
            "the record may be incomplete"
        )
    m.replaying = False
    m.on_event = None
    m.host.models = {}
    return m


def apply_edits(m: Machine, edits: dict[str, Any]) -> None:
    """Change the rebuilt machine as the person asked: locals, args, globals, messages, the
    LLM answer of this step."""
    frames = [f for f in m.frames if f.code.kind not in ("module", "prelude")]
    index = edits.get("frame")
    frame = (
        frames[index]
        if isinstance(index, int) and -len(frames) <= index < len(frames)
        else (frames[-1] if frames else None)
    )
    for key in ("locals", "args"):
        for name, value in (edits.get(key) or {}).items():
            if frame is None:
                raise AgencyError("there is no frame to edit at this step")
            if key == "args" and name not in frame.code.param_names:
                raise AgencyError(f"`{frame.code.name}` has no argument `{name}`")
            frame.locals[name] = from_plain(value)
    for name, value in (edits.get("globals") or {}).items():
        if name in m.shared or name in m.program.shared:
            m.shared[name] = from_plain(value)
        else:
            m.globals[name] = from_plain(value)
    for idx, text in (edits.get("messages") or {}).items():
        thread = m.threads.get(m.active_thread(), [])
        i = int(idx)
        if not -len(thread) <= i < len(thread):
            raise AgencyError(f"there is no message {i} in the active thread")
        thread[i] = dict(thread[i], content=str(text))
    if "llm_answer" in edits:
        answer = None
        for f in reversed(m.frames):
            if f.code.name == "llm" and f.code.kind == "prelude":
                answer = f.locals.get("__answer")
                break
        if type(answer) is not JSObject:
            raise AgencyError(
                "this step is not right after an LLM call; step to the LLM marker first"
            )
        new = from_plain(edits["llm_answer"])
        answer["value"] = new
        # An answer that asked for tools is replaced by the final answer given: the tools it
        # asked for are not run (else the round went on and the edit was lost).
        answer["done"] = True
        answer["calls"] = JSArray()
        thread = m.threads.get(m.active_thread(), [])
        for i in range(len(thread) - 1, -1, -1):
            if thread[i].get("role") == "assistant":
                message = {k: v for k, v in thread[i].items() if k != "tool_calls"}
                thread[i] = dict(message, content=new if isinstance(new, str) else to_str(new))
                break


def fork(
    tl: record.Timeline,
    step: int,
    edits: dict[str, Any],
    progress: Callable[[int], None] | None = None,
    stopper: Stopper | None = None,
) -> Timeline:
    """Restore from `step` with `edits` on a new branch and run it live (until `stopper`, if
    given, stops it at a step boundary); the old branch stays."""

    m = machine_at(tl, step, progress)
    apply_edits(m, edits)
    # After the fork, model calls continue live: the recorded answers are used up, and a
    # scripted queue goes on from where the original run had got to.
    live = live_model(tl)
    replay = m.model
    if isinstance(replay, RecordedAnswers):
        replay.live = live
        m.model = replay.hand_over() if live is not None else None
    branch = tl.store.create_branch(tl.run_id, tl.branch, step, edits)
    rec = Recorder(m, tl.store, tl.run_id, branch, next_oid=10**9)
    rec.write_keyframe(step)
    tl.store.add_event(
        tl.run_id,
        branch,
        step,
        "branch",
        f"branch {branch} from step {step}",
        {"edits": edits, "parent": tl.branch},
    )
    if progress is not None:
        rec.listeners.append(progress)
    if stopper is not None:
        stopper.watch_store(tl.store, rec)
    try:
        drive(m, None, stopper)
    finally:
        rec.finish()  # (the run's row stays its main line's: a branch ends in its last step)
    return Timeline(tl.store, tl.run_id, branch, tl.program, tl.locations)


def live_model(tl: record.Timeline, strict: bool = False) -> Any:
    """The model the run was recorded with, live (its base URL too). A model that cannot be
    made (no API key now) is the simulated one, or, with `strict` (resume), the error."""

    config = (tl.run.config or {}) if tl.run else {}
    provider = config.get("provider", "sim")
    try:
        if provider == "mock":
            return resolve_model("mock", mocks=list(config.get("mocks") or []))
        if provider in ("sim", "", None):
            return resolve_model("sim", seed=int(config.get("seed") or 0))
        spec = config.get("spec") or f"{provider}/{config.get('model', '')}"
        base_url = ((tl.run.meta or {}) if tl.run else {}).get("base_url")
        return resolve_model(spec, base_url=base_url if isinstance(base_url, str) else None)
    except AgencyError:
        if strict:
            raise
        return resolve_model("sim")


def export_checkpoint(tl: record.Timeline, step: int) -> dict[str, Any]:
    """Step `step` as a checkpoint file's contents (continues with `agency run --checkpoint`)."""

    m = machine_at(tl, step)
    data = snapshot(m)
    data["run_id"] = tl.run_id
    data["branch"] = tl.branch
    data["step"] = step
    return data


class Timeline(record.Timeline):
    """A recorded run's history (`runtime.record.timeline.Timeline`: every step, read-only) plus
    what takes re-execution: restoring from a step on a new branch, and exporting a step as a
    checkpoint."""

    def fork(
        self,
        step: int,
        edits: dict[str, Any],
        progress: Callable[[int], None] | None = None,
        stopper: Stopper | None = None,
    ) -> Timeline:
        """Restore from here: a new branch from `step` with `edits`, run live, as the one
        process continuing the run (`RunBusy` names another live one)."""
        with claim_run(self.store, self.run_id, doing="fork"):
            return fork(self, step, edits, progress, stopper)

    def export_checkpoint(self, step: int) -> dict[str, Any]:
        """The exact machine at `step` as checkpoint data (re-executed from the record)."""
        return export_checkpoint(self, step)

    def cannot_reexecute(self) -> str | None:
        """Why the run cannot be re-executed (restored from, exported): its program moved, is
        unreadable or changed since it was recorded; None when it can. Loads the program once
        (kept for the re-execution)."""
        try:
            _program(self)
        except AgencyError as exc:
            return str(exc)
        return None
