"""Provides offline replay: re-execute a whole run from the record with side effects suppressed,
checking at every step that the program still does what was recorded: the same statement, the
same model request, the same effect, the same result. The first difference is the divergence."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from runtime.errors import AgencyError
from runtime.language.files import read_text
from runtime.llm.base import Completion
from runtime.record.format import KINDS
from runtime.runs.answers import RecordedAnswers, RouteAll
from runtime.runs.config import program_of
from runtime.runs.fork import (
    DecisionFeed,
    Timeline,
    live_model,
    recorded_effects,
    start_fake_clock,
)
from runtime.runs.journal import StoreJournal
from runtime.runs.processes import span_text
from runtime.runs.stopping import GracefulStop
from runtime.vm.builtins import World
from runtime.vm.effects import short_key
from runtime.vm.frames import Decision
from runtime.vm.machine import Machine
from runtime.vm.values import from_plain, to_plain
from runtime.vm.writelog import HALTED, INTERRUPTED


class Diverged(Exception):  # noqa: N818 - a control transfer out of the machine loop
    """The re-executed program asked for something the record does not have."""


class _ReplayWorld(World):
    """Prints the program's output from step `from_step` on (the re-execution starts at 0)."""

    def __init__(self, root: Any, quiet: bool, from_step: int) -> None:
        super().__init__(root=root, quiet=quiet)
        self.from_step = from_step
        self.machine: Machine | None = None
        self.announced = True  # no "using the simulated model" notice: no model is asked

    def emit(self, text: str) -> None:
        if self.machine is not None and self.machine.step_index < self.from_step:
            return
        super().emit(text)


def _norm(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str, ensure_ascii=False)


def _shape(loc: Any) -> tuple[Any, ...]:
    return (loc.scope, loc.path, loc.end_line - loc.line)


def _cut(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _lines(loc: Any) -> str:
    if loc.end_line > loc.line:
        return f"{loc.scope} lines {loc.line}-{loc.end_line}"
    return f"{loc.scope} line {loc.line}"


def _args_text(args: Any) -> str:
    if not isinstance(args, dict):
        return _norm(args)
    return ", ".join(f"{k} {v}" for k, v in args.items() if k != "path")


def _request(messages: Any, tools: Any, schema: Any) -> dict[str, Any]:
    """A model request as comparable JSON data."""
    return json.loads(_norm({"messages": messages, "tools": tools or [], "schema": schema}))  # type: ignore[no-any-return]


def _tool_dicts(tools: list[Any]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools
    ]


def _request_difference(was: dict[str, Any], now: dict[str, Any]) -> tuple[str, str]:
    """What differs between two model requests, in words: (recorded, now)."""
    a, b = _prompt(was["messages"]), _prompt(now["messages"])
    if a != b:
        return f"prompt {a}", f"prompt {b}"
    if was["messages"] != now["messages"]:
        wm, nm = was["messages"] or [], now["messages"] or []
        i = next((k for k, (x, y) in enumerate(zip(wm, nm)) if x != y), min(len(wm), len(nm)))
        return _message_text(wm, i), _message_text(nm, i)
    if was["tools"] != now["tools"]:
        return (
            "tools " + ", ".join(str(t.get("name")) for t in was["tools"]),
            "tools "
            + ", ".join(str(t.get("name")) for t in now["tools"])
            + (
                ""
                if [t.get("name") for t in was["tools"]] != [t.get("name") for t in now["tools"]]
                else " (other parameters)"
            ),
        )
    return f"the answer schema {_cut(_norm(was['schema']))}", f"{_cut(_norm(now['schema']))}"


def _message_text(messages: list[Any], i: int) -> str:
    if i >= len(messages):
        return f"no message {i + 1}"
    msg = messages[i] if isinstance(messages[i], dict) else {}
    content = msg.get("content")
    text = " ".join((content if isinstance(content, str) else _norm(content)).split())
    return f"message {i + 1} ({msg.get('role')}) {json.dumps(_cut(text), ensure_ascii=False)}"


def _prompt(messages: Any) -> str:
    for msg in reversed(messages or []):
        if isinstance(msg, dict) and msg.get("role") == "user":
            content = msg.get("content")
            text = content if isinstance(content, str) else _norm(content)
            text = " ".join(text.split())
            return json.dumps(text[:60] + ("…" if len(text) > 60 else ""), ensure_ascii=False)
    return "(no user message)"


class _Replay:
    """One replay: the checks at every step, model call and effect, and what happens at the
    first divergence (stop, or go on live)."""

    def __init__(
        self,
        store: Any,
        run: Any,
        tl: Timeline,
        program: Any,
        then_live: bool,
        from_step: int = 0,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self.store = store
        self.from_step = from_step
        self.progress = progress
        self.run = run
        self.tl = tl
        self.program = program
        self.then_live = then_live
        self.total = len(tl)
        self.divergence: str | None = None
        self.record_ended = False
        self.m: Machine | None = None
        calls = store.llm_calls(run.id, 0)
        self.answers = []
        self.requests = []
        for call in calls:
            resp = call.response if isinstance(call.response, dict) else {}
            self.answers.append(Completion.from_json(resp.get("completion") or {}))
            req = call.request if isinstance(call.request, dict) else {}
            self.requests.append(
                _request(req.get("messages"), req.get("tools"), req.get("schema"))
                if "messages" in req
                else None
            )
        self.position = 0
        self.effects = recorded_effects(tl)
        meta = run.meta or {}
        rows, texts = meta.get("locations") or [], meta.get("statements") or []
        self.texts: dict[tuple[str, str], str] = {}  # (scope, path): function names are unique
        if len(rows) == len(texts):
            for row, text in zip(rows, texts):
                self.texts[(row[1], row[2])] = text
        self.suspect: tuple[int, str, str, str] | None = None
        self.lines: dict[str, list[str]] = {program.path: program.source.splitlines()}
        # (recorded location id, id of the running statement's location, a statement step?)
        # pairs found to agree, each with that location: held here, its id is never reused
        self.agreed: dict[tuple[int, int, bool], Any] = {}
        self.markers: Iterator[int] | None = None
        self.next_step = -1

    # -- where -----------------------------------------------------------------------------

    def _where(self, m: Machine) -> str:
        loc = m.current_location() or m.location
        if loc is None:
            return f"{self.program.path}"
        return f"{loc.file}:{loc.line}"

    def _now(self, m: Machine, with_path: bool = False) -> str:
        loc = m.location
        if loc is None:
            return "nothing"
        text = ""
        lines = self.program.source.splitlines() if loc.file == self.program.path else []
        if 0 < loc.line <= len(lines):
            text = " ".join(lines[loc.line - 1].split())
            text = f": `{text[:50]}{'…' if len(text) > 50 else ''}`"
        path = f" (statement {loc.path})" if with_path else ""
        return f"{_lines(loc)}{path}{text}"

    def diverge(
        self, m: Machine, step: int, where: str, was: str, now: str, mid_step: bool
    ) -> None:
        self.suspect = None  # a precise divergence in the edited statement says more
        self.divergence = f"diverged at step {step} ({where}): recorded {was}, now {now}"
        if self.then_live:
            self.go_live(m)
            return
        if mid_step:
            raise Diverged(self.divergence)
        m.stop_at = m.step_index  # stop at this boundary (the loop checks after the hook)

    def go_live(self, m: Machine) -> None:
        m.replaying = False
        m.host.journal = None  # the program went its own way: its effects are its own now
        m.host.recorded = None
        m.host.check_effect = None
        m.on_step = None
        m.on_event = None
        live = live_model(self.tl)
        if hasattr(live, "position"):
            live.position = self.position
        m.model = live
        m.host.models = {}

    # -- the checks ------------------------------------------------------------------------

    def on_step(self, m: Machine, kind: str) -> None:
        step = m.step_index
        if self.progress is not None and step % 500 == 0 and step >= self.from_step:
            self.progress(step, self.total)
        marker = self._marker(step) if step < self.total else None
        if marker is None or KINDS[marker & 7] == "end":
            if self.run.status in ("finished", "failed"):
                self.diverge(m, step, self._where(m), "the end of the run", self._now(m), False)
            else:  # the record of a stopped run ends here: so does the replay
                self.record_ended = True
                m.stop_at = step
            return
        if self.suspect is not None:  # the edited statement ran without asking for more
            self.report_suspect(m)
            return
        now = m.location
        # What the check below decides depends only on the recorded statement and the one
        # running now (their places, shapes and texts): each pair is checked once.
        pair = (marker >> 3, id(now), kind == "step")
        if pair in self.agreed:
            return
        was = self.tl.locations[pair[0]] if 0 <= pair[0] < len(self.tl.locations) else None
        if was is None or now is None:
            self.agreed[pair] = now
            return
        # The statement's place in its function and its shape, not its line: code that only
        # moved (lines added above it) is no divergence.
        if _shape(was) != _shape(now):
            recorded = _lines(was)
            same = recorded == _lines(now)
            if same:
                recorded += f" (statement {was.path})"
            self.diverge(m, step, self._where(m), recorded, self._now(m, same), False)
            return
        # Same place, other text: the statement was edited. Let it run: if it asks the model
        # or the world for something else, that is the divergence to report; if not, the
        # edit is reported at the next step.
        was_text = self.texts.get((was.scope, was.path))
        if was_text is not None and kind == "step":
            now_text = self.text_of(now)
            if now_text and "".join(now_text.split()) != "".join(was_text.split()):
                self.suspect = (step, self._where(m), was_text, now_text)
                return
        self.agreed[pair] = now

    def _marker(self, step: int) -> int:
        """The recorded marker of `step`, read walking forward (a replay asks step after
        step; any other step starts the walk again there)."""
        if step != self.next_step or self.markers is None:
            self.markers = self.tl.markers_from(step)
        self.next_step = step + 1
        return next(self.markers)

    def text_of(self, loc: Any) -> str:
        lines = self.lines.get(loc.file)
        if lines is None:
            try:
                lines = read_text(loc.file, "source file").splitlines()
            except (OSError, AgencyError, UnicodeDecodeError):
                lines = []  # unreadable now (a FIFO, too large, gone): no text to compare
            self.lines[loc.file] = lines
        return span_text(lines, loc)

    def report_suspect(self, m: Machine, at_end: bool = False) -> None:
        assert self.suspect is not None
        step, where, was, now = self.suspect
        self.suspect = None
        self.divergence = (
            f"diverged at step {step} ({where}): recorded `{_cut(was)}`, now `{_cut(now)}`"
        )
        if self.then_live:
            self.go_live(m)
        elif not at_end:
            m.stop_at = m.step_index

    def check_effect(self, m: Machine, key: str, kind: str, args: dict[str, Any]) -> None:
        entry = self.effects.get(short_key(key))
        now = f"{kind} {args.get('path', '')}".strip()
        if entry is None:
            self.diverge(m, m.step_index, self._where(m), "no effect here", now, True)
            return
        was_kind, was_args = entry.get("kind"), entry.get("args") or {}
        if was_kind is not None and (
            was_kind != kind or _norm(was_args) != _norm(json.loads(_norm(args)))
        ):
            was = f"{was_kind} {was_args.get('path', '') if isinstance(was_args, dict) else ''}".strip()
            if was == now:  # same call, other contents
                was += f" ({_args_text(was_args)})"
                now += f" ({_args_text(args)})"
            self.diverge(m, m.step_index, self._where(m), was, now, True)

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[Any],
        response_schema: Any,
        params: dict[str, Any],
    ) -> Completion:
        m = self.m
        assert m is not None
        i = self.position
        if self.divergence is None and m.replaying:
            if i >= len(self.answers):
                self.diverge(
                    m,
                    m.step_index,
                    self._where(m),
                    "no model call",
                    f"a model call with prompt {_prompt(messages)}",
                    True,
                )
            elif (was := self.requests[i]) is not None and was != (
                now := _request(messages, _tool_dicts(tools), response_schema)
            ):
                was_text, now_text = _request_difference(was, now)
                self.diverge(
                    m, m.step_index, self._where(m), f"a model call with {was_text}", now_text, True
                )
            else:
                self.position += 1
                return self.answers[i]
        # live from here (--then-live): go_live replaced the machine's model; this call too
        return m.model.complete(messages, tools, response_schema, params)  # type: ignore[no-any-return]

    def check_end(self, m: Machine) -> None:
        if self.suspect is not None and self.divergence is None:
            self.report_suspect(m, at_end=True)
        if self.divergence is not None or self.record_ended or not m.done:
            return
        run = self.run
        recorded_end = self.total - 1
        if m.step_index + 1 < recorded_end:
            was = self.tl.location_at(m.step_index + 1)
            self.divergence = (
                f"diverged at step {m.step_index + 1} ({self._where(m)}): recorded "
                f"{was.scope + ' line ' + str(was.line) if was else 'more steps'}, now the end of the run"
            )
            return
        status = "finished" if m.status == HALTED else "failed"
        if run.status in ("finished", "failed") and status != run.status:
            self.divergence = f"diverged at step {m.step_index} ({self._where(m)}): recorded a {run.status} run, now a {status} one"
        elif status == "finished" and run.status == "finished":
            now = json.loads(_norm(to_plain(m.result)))
            if _norm(now) != _norm(run.result):
                self.divergence = (
                    f"diverged at step {m.step_index} ({self._where(m)}): recorded result "
                    f"{_norm(run.result)[:80]}, now {_norm(now)[:80]}"
                )


class _Checker(RecordedAnswers):
    """The replay's model: every answer from the record, each request checked against it first
    (`_Replay.complete`). It looks like the recorded model to the program, which can save it in
    a checkpoint; a call that names another model is routed to it too (`RouteAll`), never to a
    live one."""

    def __init__(self, replay: _Replay, config: dict[str, Any]) -> None:
        super().__init__(like=config)
        self.replay = replay

    def next_answer(
        self,
        messages: list[dict[str, Any]],
        tools: list[Any],
        response_schema: Any,
        params: dict[str, Any],
    ) -> Completion:
        return self.replay.complete(messages, tools, response_schema, params)


def replay_run(
    store: Any,
    run: Any,
    *,
    then_live: bool = False,
    from_step: int = 0,
    progress: Callable[[int, int], None] | None = None,
    quiet: bool = False,
    answer: Callable[[Any], Decision | None] | None = None,
    root: Any = None,
    stop: GracefulStop | None = None,
) -> tuple[Machine, str | None]:
    """Re-execute a recorded run offline; returns the machine and the divergence (None when
    the program did exactly what was recorded). Nothing is recorded; no model is called and no
    effect is performed (unless `then_live`, from the divergence on). With a `stop`, Ctrl-C
    and SIGTERM stop the replay at the next step boundary (`stop.stopped()` says it was)."""
    program = program_of(run)
    tl = Timeline(store, run.id, 0)  # the recorded locations, even if the source changed
    replay = _Replay(store, run, tl, program, then_live, from_step, progress)
    args = run.args or {}
    recorded_root = (run.meta or {}).get("cwd")
    if root is None and recorded_root and Path(recorded_root).is_dir():
        root = recorded_root
    world = _ReplayWorld(root, quiet, from_step)
    world.fetch_mocks = (run.config or {}).get("fetchMocks")  # served when going live
    world.memory_config = (run.config or {}).get("memory")
    m = Machine(
        program,
        run.node,
        from_plain(args.get("args") or []),
        dict(from_plain(args.get("named") or {})),
        model=_Checker(replay, dict(run.config or {})),
        world=world,
    )
    m.host.models = RouteAll(m.model)
    start_fake_clock(m, run)
    world.machine = m
    replay.m = m
    m.replaying = True
    m.run_id = run.id
    m.branch = 0
    m.host.journal = StoreJournal(store, run.id, 0)
    m.host.recorded = replay.effects
    m.host.check_effect = replay.check_effect
    decisions = DecisionFeed(tl)
    decisions.attach(m)
    m.on_step = replay.on_step
    if stop is not None:
        stop.m = m
        answer = stop.answer(answer)
    with stop if stop is not None else contextlib.nullcontext():
        while True:
            try:
                m.run()
            except Diverged:
                return m, replay.divergence
            except KeyboardInterrupt as exc:
                if stop is None:
                    raise
                stop.cut(exc)
                return m, replay.divergence
            if stop is not None and stop.stopped():
                return m, replay.divergence
            if replay.divergence is not None and not then_live:
                return m, replay.divergence
            if replay.record_ended:
                break
            if m.status == INTERRUPTED:
                decision = decisions.next(m.step_index) if m.replaying else None
                if decision is None and answer is not None and not m.replaying:
                    decision = answer(m.pending)
                if decision is None:
                    break
                m.answer_interrupt(decision)
                continue
            break
    replay.check_end(m)
    if progress is not None:
        progress(replay.total, replay.total)
    return m, replay.divergence
