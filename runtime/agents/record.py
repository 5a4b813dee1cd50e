"""Provides auto-checkpointing for a plain Python agent: `record_agent(...)`, a context manager
and decorator, and `side_effect`, which puts a tool through the run's effect journal.

    from runtime import record_agent, side_effect
    from runtime.agents.adapters.openai import wrap_openai

    @side_effect
    def send_email(to: str, body: str) -> str: ...

    client = wrap_openai(OpenAI())
    with record_agent(storage="runs.db", run_id="job-7", agent="mailer") as rec:
        messages = rec.messages or [{"role": "user", "content": "Mail the team."}]
        ...   # the usual tool loop: client.chat.completions.create(messages=messages, …)

Inside the block a wrapped client checkpoints the messages after every tool roundtrip: when a
model call is sent whose messages end with the results of every tool call of the previous
answer (never between a call and its result). Model answers are recorded; a side-effecting tool
that already ran in this roundtrip (the process was killed after it, before the checkpoint) is
not run again: its recorded result is given back. Running the block again with the same `run_id`
resumes the run from its last checkpoint (`rec.messages`, `rec.session_state`); `replay=True`
answers every model call from the record instead, calling nothing.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import json
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any, TypeVar

from runtime.agents.manager import (
    CheckpointError,
    CheckpointManager,
    caller_location,
    shared_prefix,
)
from runtime.agents.storage import usage_triple
from runtime.runs.journal import StoreJournal

__all__ = [
    "CUT",
    "EffectInDoubt",
    "Recording",
    "ReplayMissing",
    "current_recording",
    "record_agent",
    "side_effect",
]

F = TypeVar("F", bound=Callable[..., Any])
CUT = "agency_stream_cut"  # in a recorded answer: its stream was left before its end
_current: contextvars.ContextVar[Recording | None] = contextvars.ContextVar(
    "agency_recording", default=None
)


class ReplayMissing(CheckpointError):
    """A replayed agent asked the model something the record has no answer for."""


class EffectInDoubt(CheckpointError):
    """A side-effecting tool the stopped process may have performed (see `Recording.effect`)."""


def current_recording() -> Recording | None:
    """The recording of the `record_agent` block this code runs in, None outside one."""
    return _current.get()


class Recording:
    """One recorded run of a Python agent (what `with record_agent(...) as rec` gives).

    `messages`, `session_state`, `token_usage` and `roundtrip` are the state the run resumes
    from (empty for a new run); `checkpoint` saves one by hand."""

    def __init__(self, manager: CheckpointManager, run_id: str, *, replay: bool = False) -> None:
        self.manager = manager
        self.run_id = run_id
        self.replay = replay
        self.messages: list[Any]
        self.session_state: dict[str, Any]
        self.token_usage: dict[str, Any]
        self.final: list[Any] | None = None  # the messages with the last answer, when it ended
        self._calls: dict[int, list[Any]] = {}  # step -> recorded model calls not reused yet
        self._seen: dict[tuple[int, str], int] = {}  # (step, effect) -> calls so far
        self._sources: list[Any] = []  # the messages of the latest checkpoint, as given
        if replay:  # from the run's first roundtrip, reading its record only
            run = manager.find_run(run_id)
            if run is None:
                raise CheckpointError(f"no run {run_id!r} to replay")
            self.run_id = run.id
            self._head = int((run.meta or {}).get("head") or 0)
            self._step = 0
            self.messages, self.session_state, self.token_usage = [], {}, {}
            self.roundtrip, self._saved = 0, -1
        else:
            resumed = manager.resume(run_id)
            self.run_id = resumed.run_id
            self.messages = resumed.messages
            self.session_state = resumed.session_state
            self.token_usage = resumed.token_usage
            self.roundtrip = resumed.roundtrip
            self._saved = len(self.messages) if resumed.checkpoint is not None else -1
            self._sources = list(self.messages)
        self._journal = StoreJournal(manager.store, self.run_id)

    def _where(self) -> tuple[str, int, int]:
        """(run, branch, step) of the roundtrip in progress; the branch is the one that owns
        the step (an earlier branch of the run, for a replayed step before a rollback)."""
        if not self.replay:
            return self.manager.position(self.run_id)
        for seg in self.manager.store.lineage(self.run_id, self._head):
            if seg.lo <= self._step <= seg.hi:
                return self.run_id, seg.branch, self._step
        return self.run_id, self._head, self._step

    # -- checkpoints ----------------------------------------------------------------------------

    def checkpoint(
        self,
        messages: Sequence[Any],
        *,
        session_state: dict[str, Any] | None = None,
        token_usage: dict[str, Any] | None = None,
    ) -> str | None:
        """Save a checkpoint of `messages` (and the session state and usage), unless nothing
        was added since the last one; returns its id (None when skipped)."""
        if len(messages) == self._saved and session_state is None:
            return None
        if self.replay:  # the record already holds it: move on to the next roundtrip
            self._step += 1
            self._saved = len(messages)
            self.messages = self._sources = list(messages)
            self.roundtrip += 1
            self.final = None
            return None
        if session_state is not None:
            self.session_state = dict(session_state)
        if token_usage is not None:
            self.token_usage = dict(token_usage)
        self.roundtrip += 1
        cp = self.manager.save(
            run_id=self.run_id,
            roundtrip=self.roundtrip,
            messages=messages,
            token_usage=self.token_usage,
            session_state=self.session_state,
            location=caller_location(),
        )
        self._saved = len(messages)
        self.messages = self._sources = list(messages)
        self.final = None
        return cp

    def add_usage(self, usage: dict[str, Any]) -> None:
        """Add a model call's token usage to the run's running total."""
        for k, v in usage.items():
            if isinstance(v, int | float) and not isinstance(v, bool):
                self.token_usage[k] = self.token_usage.get(k, 0) + v

    # -- model calls ------------------------------------------------------------------------------

    def model_call(
        self,
        *,
        provider: str,
        request: dict[str, Any],
        call: Callable[[], Any],
        encode: Callable[[Any], Any],
        usage: Callable[[Any], dict[str, Any]],
    ) -> tuple[Any, Any]:
        """The answer to a model call: the recorded one when this roundtrip already asked the
        same (a resumed run redoing the roundtrip it was killed in, or a replay), else `call()`,
        recorded before it is given back. Returns (answer as data, live answer or None)."""
        where, plain, answer = self.lookup(request, usage)
        if answer is not None:
            return answer, None
        live = call()
        return self.keep(where, plain, provider, request, encode(live), usage), live

    async def amodel_call(
        self,
        *,
        provider: str,
        request: dict[str, Any],
        call: Callable[[], Awaitable[Any]],
        encode: Callable[[Any], Any],
        usage: Callable[[Any], dict[str, Any]],
    ) -> tuple[Any, Any]:
        """`model_call` for an async client: `call()` is awaited."""
        where, plain, answer = self.lookup(request, usage)
        if answer is not None:
            return answer, None
        live = await call()
        return self.keep(where, plain, provider, request, encode(live), usage), live

    def lookup(
        self, request: dict[str, Any], usage: Callable[[Any], dict[str, Any]]
    ) -> tuple[tuple[str, int, int], Any, Any]:
        """(where the call is, the request as recorded, the recorded answer or None): a model
        call about to be made, looked up in the record (`keep` records its answer).

        A recorded answer whose stream was cut is not the model's: a resumed agent asks again;
        a replayed one is given it (the events received) unless the recorded agent asked the
        same again after it, as a resumed one did."""
        run, branch, step = where = self._where()
        plain = self._request(request)
        recorded = self._recorded(run, branch, step)
        while (
            recorded and _is_cut(recorded[0], plain) and (not self.replay or _asked_again(recorded))
        ):
            self.add_usage(usage(recorded.pop(0).response))  # not the model's answer
        if recorded and recorded[0].request == plain:
            answer = recorded.pop(0).response
            self.add_usage(usage(answer))
            return where, plain, answer
        if self.replay:
            raise ReplayMissing(
                f"replay of run {run}: no recorded answer for the model call of roundtrip "
                f"{self.roundtrip + 1} (the agent asked something else than when it was recorded)"
            )
        return where, plain, None

    def keep(
        self,
        where: tuple[str, int, int],
        plain: Any,
        provider: str,
        request: dict[str, Any],
        answer: Any,
        usage: Callable[[Any], dict[str, Any]],
    ) -> Any:
        """Record the answer to a call `lookup` did not find (durably, before the agent acts on
        it; a streamed one once the stream is read) and give back its data."""
        run, branch, step = where
        answer = _json(answer)
        tokens = usage(answer)
        inp, out, cost = usage_triple(tokens)
        self.manager.store.add_llm_call(
            run,
            branch,
            step,
            provider=provider,
            model=str(request.get("model") or ""),
            request=plain,
            response=answer,
            input_tokens=inp,
            output_tokens=out,
            cost=cost,
        )
        self.manager.store.flush()
        self.add_usage(tokens)
        return answer

    def _request(self, request: dict[str, Any]) -> Any:
        """A request as recorded: the messages the latest checkpoint holds are referred to by
        their count (`{"checkpoint": k, "then": [...]}`), so a roundtrip records what it added."""
        field = "messages" if "messages" in request else "input"  # chat / responses
        messages = request.get(field)
        if not isinstance(messages, list | tuple):
            return _json(request)
        k = shared_prefix(self._sources, messages)
        plain = _json({key: v for key, v in request.items() if key != field})
        plain[field] = {"checkpoint": k, "then": _json(list(messages[k:]))}
        return plain

    def _recorded(self, run: str, branch: int, step: int) -> list[Any]:
        if step not in self._calls:
            self._calls[step] = [
                c for c in self.manager.store.llm_calls(run, branch) if c.step == step
            ]
        return self._calls[step]

    # -- effects ----------------------------------------------------------------------------------

    def effect(
        self,
        name: str,
        args: dict[str, Any],
        act: Callable[[], Any],
        done: Callable[[], bool] | None = None,
    ) -> Any:
        """`act()` unless this roundtrip already performed the same effect (same tool, same
        arguments, same occurrence): then its recorded result.

        The intent is journaled before `act()` runs and the result after it, so a process killed
        in between leaves the effect in doubt: the resumed agent asks `done()` (did it happen?)
        and, without a `done`, raises `EffectInDoubt` rather than perform it a second time."""
        run, branch, step = self._where()
        digest = hashlib.sha256(
            json.dumps(_json(args), sort_keys=True).encode("utf-8")
        ).hexdigest()[:16]
        n = self._seen.get((step, f"{name}:{digest}"), 0)
        self._seen[(step, f"{name}:{digest}")] = n + 1
        key = f"{run}:{branch}:{step}:{name}:{digest}:{n}"
        self._journal.branch = branch
        entry = self._journal.get(key)
        if entry is not None and entry.get("status") == "applied":
            self.manager.store.add_event(
                run, branch, step, "effect", f"{name} (already done)", {"key": key, "skipped": True}
            )
            return entry.get("result")
        if self.replay:
            raise ReplayMissing(f"replay of run {run}: the effect {name} was never performed")
        intent = self._journal.get(key + ":intent")
        if intent is not None:
            if done is None:
                raise EffectInDoubt(_in_doubt(name, args, run, self.roundtrip + 1))
            if done():
                self._journal.put(
                    key,
                    {"step": step, "kind": name, "status": "applied", "args": args, "result": None},
                )
                self.manager.store.add_event(
                    run,
                    branch,
                    step,
                    "effect",
                    f"{name} (found done)",
                    {"key": key, "skipped": True},
                )
                return None
        else:
            self._journal.put(
                key + ":intent",
                {"step": step, "kind": f"{name} (intent)", "status": "applied", "args": args},
            )
        result = act()
        self._journal.put(
            key,
            {"step": step, "kind": name, "status": "applied", "args": args, "result": result},
        )
        self.manager.store.add_event(run, branch, step, "effect", name, {"key": key})
        return result


class record_agent:  # noqa: N801 - used as a function: `with record_agent(...)`, `@record_agent(...)`
    """Record a Python agent's run: a context manager giving a `Recording`, or a decorator that
    records every call of the function (which finds it with `current_recording()`).

    `manager` (or `storage`: a path, a store, a `Storage`) is where the run goes; `run_id`
    names it: a run already there is resumed from its last checkpoint. The run is marked
    finished when the block ends, failed when it raises."""

    def __init__(
        self,
        manager: CheckpointManager | None = None,
        *,
        storage: Any = None,
        run_id: str | None = None,
        agent: str = "agent",
        replay: bool = False,
    ) -> None:
        self.manager = manager
        self.storage = storage
        self.run_id = run_id
        self.agent = agent
        self.replay = replay
        self._owned: CheckpointManager | None = None
        self._token: contextvars.Token[Recording | None] | None = None
        self.recording: Recording | None = None

    def __enter__(self) -> Recording:
        manager = self.manager
        if manager is None:
            manager = self._owned = CheckpointManager(self.storage, agent=self.agent)
        run_id = self.run_id
        if run_id is None or manager.find_run(run_id) is None:
            run_id = manager.start_run(agent=self.agent, name=run_id)
        self.recording = Recording(manager, run_id, replay=self.replay)
        self._token = _current.set(self.recording)
        return self.recording

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        rec = self.recording
        assert rec is not None and self._token is not None
        _current.reset(self._token)
        try:
            if rec.final is not None and exc is None:
                rec.checkpoint(rec.final)
            if exc is None:
                status, error = "finished", None
            elif isinstance(exc, KeyboardInterrupt):
                status, error = "interrupted", "stopped (Ctrl-C)"
            else:
                status, error = "failed", f"{type(exc).__name__}: {exc}"
            if not rec.replay:
                rec.manager.finish(rec.run_id, status=status, error=error)
        finally:
            if self._owned is not None:
                self._owned.close()

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            with record_agent(
                self.manager,
                storage=self.storage,
                run_id=self.run_id,
                agent=self.agent,
                replay=self.replay,
            ):
                return fn(*args, **kwargs)

        return recorded  # type: ignore[return-value]


def side_effect(fn: F | None = None, *, done: Callable[..., bool] | None = None) -> Any:
    """Mark a tool as side-effecting (`@side_effect`, or `@side_effect(done=check)`): inside a
    recording it goes through the run's effect journal, so a resumed (or replayed) agent never
    performs it twice; its result must be JSON data. `done(*args, **kwargs)` tells whether the
    effect already happened, for one a killed process left in doubt. Outside a recording the
    tool simply runs."""

    def mark(tool: F) -> F:
        @functools.wraps(tool)
        def journaled(*args: Any, **kwargs: Any) -> Any:
            rec = _current.get()
            if rec is None:
                return tool(*args, **kwargs)
            return rec.effect(
                tool.__qualname__,
                {"args": list(args), "kwargs": kwargs},
                lambda: tool(*args, **kwargs),
                (lambda: bool(done(*args, **kwargs))) if done is not None else None,
            )

        return journaled  # type: ignore[return-value]

    return mark(fn) if fn is not None else mark


def _in_doubt(name: str, args: dict[str, Any], run: str, roundtrip: int) -> str:
    """Why a resumed agent stops at a side-effecting tool left in doubt, and what to do."""
    given = [repr(a) for a in args.get("args") or ()]
    given += [f"{k}={v!r}" for k, v in (args.get("kwargs") or {}).items()]
    return (
        f"the side-effecting tool {name} was started, {name}({', '.join(given)}), in "
        f"roundtrip {roundtrip} of run {run} by a process that stopped before its result was "
        "journaled: it may or may not have happened, so it is not run again. Declare how to "
        "tell, @side_effect(done=lambda *args, **kwargs: ...) returning True when the effect "
        "already happened (it is given the tool's arguments), and run the agent again"
    )


def _is_cut(call: Any, request: Any) -> bool:
    """Whether a recorded call is `request`'s and its stream was cut (see `CUT`)."""
    return bool(
        call.request == request and isinstance(call.response, dict) and CUT in call.response
    )


def _asked_again(recorded: list[Any]) -> bool:
    """Whether the call after the first of `recorded` asked the same (a retry of a cut one)."""
    return len(recorded) > 1 and recorded[1].request == recorded[0].request


def _json(value: Any) -> Any:
    """`value` as JSON data (SDK objects by their `model_dump`)."""

    def dump(v: Any) -> Any:
        model_dump = getattr(v, "model_dump", None)
        if callable(model_dump):
            return model_dump(exclude_none=True)
        return repr(v)

    return json.loads(json.dumps(value, default=dump))
