"""Provides the run lifecycle over a run store: resume after a stop, offline replay, and the
bookkeeping around them (the durable effect journal, dead processes, Ctrl-C).

Resume (`resume_run`) continues a run that stopped (killed, failed on a timeout, waiting on an
interrupt, Ctrl-C) from its last completed step. The steps before it are re-executed from the
record (`fork.machine_at`: model answers, reads and interrupt answers served from it, effects
looked up in the journal, never repeated); then the run goes on live on branch 0, its new steps
appended after the old ones. Model answers the stopped process got but had not yet tied to a
recorded step are served from the record too, before the live model takes over.

Replay (`replay_run`) re-executes the whole run from the record with side effects suppressed and
checks at every step that the program still does what was recorded: the same statement, the
same model request, the same effect, the same result. The first difference is the divergence.

A run's process is written in its meta (`process`: pid, host, start time). A run still marked
`running` whose process is gone is marked `interrupted` by `reap_dead_runs`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runtime.effects import short_key
from runtime.errors import AgencyError
from runtime.llm.base import Completion
from runtime.machine.builtins import World
from runtime.machine.frames import Decision
from runtime.machine.machine import HALTED, INTERRUPTED, Machine
from runtime.machine.values import from_plain, to_plain
from runtime.program import load_program
from runtime.runner import drive
from runtime.timeline.fork import (
    DecisionFeed,
    RouteAll,
    _live_model,
    counts_calls,
    machine_at,
    recorded_answers,
    recorded_effects,
)
from runtime.timeline.recorder import Recorder, location_table, public_base_url
from runtime.timeline.store import MAX_STEP
from runtime.timeline.timeline import Timeline

EXIT_DIVERGED = 4
EXIT_STOPPED = 130  # Ctrl-C, as shells report it

# ----------------------------------------------------------------------------------------------
# The durable journal


class StoreJournal:
    """The effect journal kept in the run store (durable when `put` returns: the store commits
    the entry together with everything recorded before it).

    The run's entries are read once, at the first lookup, and kept: only this process writes
    to a run's journal while it runs it.

    `in_doubt` is set on a resumed run: the first effect the journal does not know may be the
    one the stopped process was performing when it died (see `effects.perform`).
    """

    def __init__(self, store: Any, run_id: str, branch: int = 0, *, in_doubt: bool = False) -> None:
        self.store = store
        self.run_id = run_id
        self.branch = branch
        self.in_doubt = in_doubt
        self._known: dict[str, dict[str, Any]] | None = None

    def get(self, key: str) -> dict[str, Any] | None:
        if self._known is None:
            self._known = {
                rec.key: {
                    "status": rec.status,
                    "result": rec.result,
                    "kind": rec.kind,
                    "step": rec.step,
                    "args": rec.args,
                }
                for rec in self.store.effects(self.run_id)
            }
        return self._known.get(key)

    def put(self, key: str, entry: dict[str, Any]) -> None:
        self.store.put_effect(
            key,
            run_id=self.run_id,
            branch=self.branch,
            step=int(entry.get("step", 0)),
            kind=str(entry.get("kind", "")),
            status=str(entry.get("status", "applied")),
            args=entry.get("args"),
            result=entry.get("result"),
        )
        if self._known is not None:
            self._known[key] = dict(entry)


# ----------------------------------------------------------------------------------------------
# Processes: who is recording a run, and whether it is still alive


def _boot_time() -> float | None:
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except OSError:
        return None
    return None


def _proc_stat(pid: int) -> tuple[str, float | None] | None:
    """(state letter, start time in seconds since the epoch) of a process, from /proc."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    boot = _boot_time()
    try:
        ticks = int(fields[19])
        started = boot + ticks / os.sysconf("SC_CLK_TCK") if boot is not None else None
    except (IndexError, ValueError, OSError):
        started = None
    return fields[0] if fields else "?", started


def process_meta() -> dict[str, Any]:
    """This process, as written in a run's meta."""
    stat = _proc_stat(os.getpid())
    started = stat[1] if stat is not None and stat[1] is not None else time.time()
    return {"pid": os.getpid(), "host": socket.gethostname(), "started": round(started, 2)}


def process_alive(proc: dict[str, Any]) -> bool | None:
    """Whether the process of a run's meta still runs: None when it cannot be told (another
    host, no pid)."""
    pid = proc.get("pid")
    if not isinstance(pid, int) or proc.get("host") != socket.gethostname():
        return None
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    except OSError:
        return None
    stat = _proc_stat(pid)
    if stat is None:
        return not os.path.isdir("/proc")  # no /proc: believe kill()
    state, started = stat
    if state in ("Z", "X"):
        return False
    recorded = proc.get("started")
    if isinstance(recorded, int | float) and started is not None and abs(started - recorded) > 2.0:
        return False  # the pid belongs to another process now
    return True


def mark_running(store: Any, run_id: str, root: Any = None, program: Any = None) -> None:
    """Write this process (and the run's working directory, and the text of the program's
    statements, for replay to quote) into the run's meta, durably."""
    run = store.get_run(run_id)
    meta = dict((run.meta if run is not None else None) or {})
    meta["process"] = process_meta()
    if root is not None:
        meta["cwd"] = str(root)
    if program is not None:
        meta["statements"] = statement_texts(program)
    store.update_run(run_id, meta=meta)
    store.flush()


def statement_texts(program: Any) -> list[str]:
    """The source text of every step location (whitespace collapsed, at most 120 characters),
    in the order of the recorder's location table."""
    sources: dict[str, list[str]] = {program.path: program.source.splitlines()}
    out = []
    for code in [program.module, *program.functions.values()]:
        for loc in code.locations:
            lines = sources.get(loc.file)
            if lines is None:
                try:
                    lines = Path(loc.file).read_text(encoding="utf-8").splitlines()
                except OSError:
                    lines = []
                sources[loc.file] = lines
            out.append(_span_text(lines, loc))
    return out


def _span_text(lines: list[str], loc: Any) -> str:
    if not 0 < loc.line <= len(lines):
        return ""
    if loc.end_line == loc.line:
        text = lines[loc.line - 1][loc.col - 1 : loc.end_col - 1]
    else:
        text = " ".join(
            [
                lines[loc.line - 1][loc.col - 1 :],
                *lines[loc.line : loc.end_line - 1],
                lines[min(loc.end_line, len(lines)) - 1][: loc.end_col - 1],
            ]
        )
    text = " ".join(text.split())
    return text[:120]


def reap_dead_runs(store: Any, runs: list[Any] | None = None, limit: int = 200) -> list[str]:
    """Mark `interrupted` every run still `running` whose recording process is gone (killed,
    crashed) on this host. Returns their ids."""
    reaped: list[str] = []
    for run in runs if runs is not None else store.list_runs(limit):
        if run is None or run.status != "running":
            continue
        proc = (run.meta or {}).get("process")
        if not isinstance(proc, dict) or process_alive(proc) is not False:
            continue
        store.update_run(
            run.id,
            status="interrupted",
            error=f"the process recording it (pid {proc.get('pid')}) ended without finishing it",
        )
        reaped.append(run.id)
    if reaped:
        store.flush()
    return reaped


# ----------------------------------------------------------------------------------------------
# Ctrl-C and interrupt answers


class GracefulStop:
    """Ctrl-C while a run goes on: the first stops it at the next step boundary (nothing is
    left half done); a second one stops it at once (`KeyboardInterrupt`)."""

    def __init__(self, machine: Machine, notice: bool = True) -> None:
        self.m = machine
        self.notice = notice
        self.requested = False
        self._old: Any = None
        self._installed = False

    def __enter__(self) -> GracefulStop:
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._handle)
            self._installed = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._old)
            self._installed = False

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        self.m.stop_at = self.m.step_index  # the loop stops at the next step boundary
        if self.notice:
            print(
                "\nagency: stopping after this step (Ctrl-C again to stop now)",
                file=sys.stderr,
                flush=True,
            )

    def stopped(self) -> bool:
        """The run ended because of Ctrl-C (not because it finished or is waiting)."""
        return self.requested and not self.m.done and self.m.status != INTERRUPTED

    def answer(
        self, inner: Callable[[Any], Decision | None] | None
    ) -> Callable[[Any], Decision | None] | None:
        """An interrupt answerer that gives no answer once a stop was asked for."""
        if inner is None:
            return None

        def answer(pending: Any) -> Decision | None:
            return None if self.requested else inner(pending)

        return answer


def recording_answers(
    answer: Callable[[Any], Decision | None] | None,
    store: Any,
    run_id: str,
    machine: Machine,
    branch: int = 0,
) -> Callable[[Any], Decision | None] | None:
    """Wrap an interrupt answerer so every answer it gives is recorded (replay and resume feed
    the same answers to the re-executed run)."""
    if answer is None:
        return None

    def wrapped(pending: Any) -> Decision | None:
        decision = answer(pending)
        if decision is not None:
            record_answer(store, run_id, branch, machine.step_index, decision)
        return decision

    return wrapped


def record_answer(store: Any, run_id: str, branch: int, step: int, decision: Decision) -> None:
    store.add_event(
        run_id,
        branch,
        max(step, 0),
        "interrupt",
        f"answered: {decision.action}",
        {
            "action": decision.action,
            "answer": None if decision.value is None else to_plain(decision.value),
        },
    )


def mark_stopped(store: Any, run_id: str, why: str) -> None:
    store.update_run(run_id, status="interrupted", error=why)
    store.flush()


# ----------------------------------------------------------------------------------------------
# Config


def _config_value(config: dict[str, Any], key: str) -> Any:
    value = config.get(key)
    return None if value in ("", None) else value


def config_differences(recorded: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """What differs between the model/provider/tools configuration a run was recorded with and
    the one it would go on with, in words."""
    out = []
    for key, label in (
        ("provider", "provider"),
        ("model", "model"),
        ("base_url_host", "base URL host"),
        ("tools", "tools"),
    ):
        was, now = _config_value(recorded, key), _config_value(current, key)
        if key in ("base_url_host", "tools") and now is None:
            continue  # not given now: the recorded one is used
        if was != now:
            out.append(f"{label} {json.dumps(was)} then, {json.dumps(now)} now")
    if "mocks" in current and current.get("mocks") != recorded.get("mocks"):
        out.append("the scripted model answers (--mock) differ")
    return out


def current_config(
    model_spec: str | None, base_url: str | None, mocks: list[Any] | None
) -> tuple[Any, dict[str, Any]]:
    from runtime.llm.registry import config_of, resolve_model

    model = resolve_model(model_spec, mocks=mocks, base_url=base_url)
    config = dict(config_of(model))
    if mocks is not None:
        config["mocks"] = mocks
    return model, config


# ----------------------------------------------------------------------------------------------
# Resume


class _Handover:
    """Serves the model answers the stopped process got after its last recorded step, then
    hands over to the live model (and puts it in the machine's hands). It looks like the live
    model to the program (provider, a scripted queue's position)."""

    def __init__(self, answers: list[Completion], live: Any, machine: Machine, served: int) -> None:
        self.answers = answers
        self.index = 0
        self.live = live
        self.m = machine
        self.served = served  # answers the run has had so far
        self.provider = str(getattr(live, "provider", ""))
        self.model = str(getattr(live, "model", ""))
        if hasattr(live, "position"):
            self.position = served
        machine.model_cache = RouteAll(self) if answers else {}  # type: ignore[attr-defined]

    def config(self) -> dict[str, Any]:
        from runtime.llm.registry import config_of

        return config_of(self.live)

    def __getattr__(self, name: str) -> Any:  # the rest of the live model's interface
        if name == "live":
            raise AttributeError(name)
        return getattr(self.live, name)

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[Any],
        response_schema: Any,
        params: dict[str, Any],
    ) -> Completion:
        if self.index < len(self.answers):
            answer = self.answers[self.index]
            self.index += 1
            self.served += 1
            if hasattr(self.live, "position"):
                self.position = self.served
            if self.index == len(self.answers):
                self.m.model_cache = {}  # type: ignore[attr-defined]
            return answer
        live = self.live
        if hasattr(live, "position"):
            live.position = self.served
        if self.m.model is self:
            self.m.model = live
        return live.complete(messages, tools, response_schema, params)  # type: ignore[no-any-return]


def _resume_point(store: Any, run: Any, tl: Timeline) -> tuple[int, int]:
    """(step to rebuild, last step whose recorded model answers may be served)."""
    n = len(tl)
    last = n - 1
    if tl.kind_at(last) != "end":
        return last, MAX_STEP  # stopped: every recorded step is complete; serve every answer
    # Failed (the end step records the failure): retry the failing statement, live. Its step
    # and the end step share a batch; the whole batch goes and is recorded again.
    failing = last - 1
    batches = store.batches(run.id, 0, last, last)
    first = min((b.first_step for b in batches if b.branch == 0), default=last)
    return min(failing, first - 1), failing


def resume_run(
    store: Any,
    run: Any,
    *,
    decision: Decision | None = None,
    force: bool = False,
    model_spec: str | None = None,
    base_url: str | None = None,
    mocks: list[Any] | None = None,
    answer: Callable[[Any], Decision | None] | None = None,
    notice: Callable[[str], None] | None = None,
    stop: GracefulStop | None = None,
    root: Any = None,
    quiet: bool = False,
) -> Machine:
    """Continue `run` from its last completed step, live, recording on branch 0.

    `decision` answers the interrupt the run was waiting on; `answer` answers later ones.
    Paths resolve against `root`, by default the directory the run was started in.
    Refuses (AgencyError) a finished run, a run another process is recording, and a changed
    source or model configuration unless `force`.
    """
    reap_dead_runs(store, [run])
    run = store.get_run(run.id) or run
    if run.status == "finished":
        raise AgencyError(
            f"run {run.id} already finished; nothing to resume (replay it with `agency replay {run.id}`)"
        )
    proc = (run.meta or {}).get("process")
    if run.status == "running" and not force:
        alive = process_alive(proc) if isinstance(proc, dict) else None
        where = f" (pid {proc.get('pid')} on {proc.get('host')})" if isinstance(proc, dict) else ""
        if alive is not False:
            raise AgencyError(
                f"run {run.id} is still running{where}; resume it once that process has ended "
                "(or pass --force if it is gone)"
            )
    if decision is not None and run.status != "interrupted":
        raise AgencyError(
            f"run {run.id} is not waiting on an interrupt (it is {run.status}); resume it without --approve/--reject/--resolve"
        )
    program = _program_of(run)
    recorded = dict(run.config or {})
    problems = []
    if program.sha256 != run.source_sha256:
        problems.append(
            f"{run.source_path} (or a file it imports) changed since the run was recorded "
            f"(sha256 {run.source_sha256[:12]} then, {program.sha256[:12]} now)"
        )
    live = None
    current: dict[str, Any] = {}
    if model_spec is not None or base_url is not None or mocks is not None:
        if base_url is None and model_spec in (None, recorded.get("spec")):
            recorded_url = (run.meta or {}).get("base_url")  # the same model, the same server
            base_url = recorded_url if isinstance(recorded_url, str) else None
        live, current = current_config(model_spec or recorded.get("spec"), base_url, mocks)
        problems.extend(config_differences(recorded, current))
    if problems and not force:
        raise AgencyError(
            f"cannot resume run {run.id}: " + "; ".join(problems) + ". Resuming would mix two "
            "different runs; pass --force to resume anyway"
        )
    tl = Timeline(store, run.id, 0, program)
    if live is None:
        # The recorded model, on the recorded server; one that cannot be made now (no API key)
        # is an error, never silently another model.
        live = _live_model(tl, strict=True)
        if not force:
            from runtime.llm.registry import config_of

            differences = config_differences(recorded, dict(config_of(live)))
            if differences:
                raise AgencyError(
                    f"cannot resume run {run.id}: {'; '.join(differences)}. Pass the recorded "
                    "model's settings (--model, --base-url) or --force to go on with this one"
                )
    if len(tl) == 0:  # stopped before its first step was stored: nothing to re-execute
        step, serve_up_to = -1, MAX_STEP
    else:
        step, serve_up_to = _resume_point(store, run, tl)
    answers = [a for a, s in zip(recorded_answers(tl), _answer_steps(tl)) if s <= serve_up_to]
    journal = StoreJournal(store, run.id, 0, in_doubt=True)
    m = machine_at(tl, step, journal=journal)
    served = int(getattr(m.model, "served", 0))
    m.model = _Handover(answers[served:], live, m, served)
    if root is None:
        recorded_root = (run.meta or {}).get("cwd")
        root = recorded_root if recorded_root and Path(recorded_root).is_dir() else None
    m.world = World(root=root, quiet=quiet)
    m.journal = journal
    store.truncate_after(run.id, 0, step)
    if problems:  # forced: the run goes on with the new program / model
        fields: dict[str, Any] = {"source_sha256": program.sha256}
        meta = dict(run.meta or {})
        meta["locations"] = location_table(program)
        meta["statements"] = statement_texts(program)
        fields["meta"] = meta
        if current:
            fields["config"] = {**recorded, **current}
            meta.pop("base_url", None)
            if (url := public_base_url(getattr(live, "base_url", None))) is not None:
                meta["base_url"] = url
        store.update_run(run.id, **fields)
    store.update_run(run.id, status="running", error=None, result=None, finished_at=None)
    mark_running(store, run.id, m.world.root, program)
    rec = Recorder(m, store, run.id, 0)
    if m.step_index >= 0:
        rec.write_keyframe(m.step_index)
    if notice is not None:
        notice(f"resuming run {run.id} after step {m.step_index} (re-executed from the record)")
    answers_fn = recording_answers(answer, store, run.id, m)
    if decision is not None:
        first = [decision]

        def answers_fn(pending: Any, later: Any = answers_fn) -> Decision | None:  # noqa: F811
            if first:
                d = first.pop()
                record_answer(store, run.id, 0, m.step_index, d)
                return d
            return later(pending) if later is not None else None

    stopper = stop if stop is not None else GracefulStop(m)
    stopper.m = m
    try:
        with stopper:
            drive(m, stopper.answer(answers_fn))
    except KeyboardInterrupt:
        stopper.requested = True
    finally:
        rec.finish()
        if stopper.stopped():
            mark_stopped(store, run.id, "stopped by Ctrl-C")
    return m


def _program_of(run: Any) -> Any:
    """The run's program as its source is now (a relative path is taken from the directory the
    run was started in, wherever resume or replay are)."""
    checkpoint = (run.config or {}).get("from_checkpoint")
    if checkpoint:
        where = f" ({checkpoint})" if isinstance(checkpoint, str) else ""
        raise AgencyError(
            f"run {run.id} was started from a checkpoint file{where}: resume and replay "
            "re-execute a run from its start, which this one does not have; run it again with "
            "`agency run --checkpoint FILE`"
        )
    path = Path(run.source_path)
    cwd = (run.meta or {}).get("cwd")
    if not path.is_absolute() and cwd and Path(cwd).resolve() != Path.cwd().resolve():
        path = Path(cwd) / path
    if not path.exists():
        raise AgencyError(f"{run.source_path}: the program of run {run.id} is not there any more")
    return load_program(path)


def _answer_steps(tl: Timeline) -> list[int]:
    return [call.step for call in tl.store.llm_calls(tl.run_id, tl.branch)]


# ----------------------------------------------------------------------------------------------
# Replay


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
        m.journal = None  # the program went its own way: its effects are its own now
        m.recorded_effects = None  # type: ignore[attr-defined]
        m.check_effect = None  # type: ignore[attr-defined]
        m.on_step = None
        m.on_event = None
        live = _live_model(self.tl)
        if hasattr(live, "position"):
            live.position = self.position
        m.model = live
        m.model_cache = {}  # type: ignore[attr-defined]

    # -- the checks ------------------------------------------------------------------------

    def on_step(self, m: Machine, kind: str) -> None:
        step = m.step_index
        if self.progress is not None and step % 500 == 0 and step >= self.from_step:
            self.progress(step, self.total)
        if step >= self.total or self.tl.kind_at(step) == "end":
            if self.run.status in ("finished", "failed"):
                self.diverge(m, step, self._where(m), "the end of the run", self._now(m), False)
            else:  # the record of a stopped run ends here: so does the replay
                self.record_ended = True
                m.stop_at = step
            return
        if self.suspect is not None:  # the edited statement ran without asking for more
            self.report_suspect(m)
            return
        was = self.tl.location_at(step)
        now = m.location
        if was is None or now is None:
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

    def text_of(self, loc: Any) -> str:
        lines = self.lines.get(loc.file)
        if lines is None:
            try:
                lines = Path(loc.file).read_text(encoding="utf-8").splitlines()
            except OSError:
                lines = []
            self.lines[loc.file] = lines
        return _span_text(lines, loc)

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


class _Checker:
    """The replay's model: every answer from the record, each request checked against it.

    It looks like the recorded model (provider, a scripted queue's position) to the program,
    which can save it in a checkpoint; a call that names another model is routed to it too
    (`_RouteAll`), never to a live one.
    """

    def __init__(self, replay: _Replay, config: dict[str, Any]) -> None:
        self.replay = replay
        self.provider = str(config.get("provider") or "replay")
        self.model = str(config.get("model") or "replay")
        if counts_calls(config):
            self.position = 0

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[Any],
        response_schema: Any,
        params: dict[str, Any],
    ) -> Completion:
        answer = self.replay.complete(messages, tools, response_schema, params)
        if hasattr(self, "position"):
            self.position = self.replay.position
        return answer


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
) -> tuple[Machine, str | None]:
    """Re-execute a recorded run offline; returns the machine and the divergence (None when
    the program did exactly what was recorded). Nothing is recorded; no model is called and no
    effect is performed (unless `then_live`, from the divergence on)."""
    program = _program_of(run)
    tl = Timeline(store, run.id, 0)  # the recorded locations, even if the source changed
    replay = _Replay(store, run, tl, program, then_live, from_step, progress)
    args = run.args or {}
    recorded_root = (run.meta or {}).get("cwd")
    if root is None and recorded_root and Path(recorded_root).is_dir():
        root = recorded_root
    world = _ReplayWorld(root, quiet, from_step)
    m = Machine(
        program,
        run.node,
        from_plain(args.get("args") or []),
        dict(from_plain(args.get("named") or {})),
        model=_Checker(replay, dict(run.config or {})),
        world=world,
    )
    m.model_cache = RouteAll(m.model)  # type: ignore[attr-defined]
    world.machine = m
    replay.m = m
    m.replaying = True
    m.run_id = run.id
    m.branch = 0
    m.journal = StoreJournal(store, run.id, 0)
    m.recorded_effects = replay.effects  # type: ignore[attr-defined]
    m.check_effect = replay.check_effect  # type: ignore[attr-defined]
    decisions = DecisionFeed(tl)
    decisions.attach(m)
    m.on_step = replay.on_step
    while True:
        try:
            m.run()
        except Diverged:
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
