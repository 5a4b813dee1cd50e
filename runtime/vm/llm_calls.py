"""Provides the runtime side of `llm()`: building requests, calling the model, tool rounds.

The loop itself is in the prelude (`llm` in prelude.agency); these primitives do one piece each
and keep their state in a request object held by the prelude frame, so a snapshot taken during
a tool round resumes exactly. Every call is reported as an "llm" event carrying the whole
request and answer, which the recorder stores on its step (stepping back never calls a model).
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyError, AgencyRuntimeError
from runtime.language.bytecode import FuncRef
from runtime.language.syntax.ast import TFunc
from runtime.llm.base import (
    DEADLINE,
    MISSING,
    TRANSPORT,
    CallTransport,
    Completion,
    DeadlinePassed,
    ToolSpec,
)
from runtime.llm.registry import KNOWN_PROVIDERS, route_model
from runtime.llm.schema import parse_structured, structured_value, type_to_schema
from runtime.message_text import readable_content
from runtime.vm.boundary import well_formed
from runtime.vm.builtins_fork import branch_spend
from runtime.vm.frames import TailCall
from runtime.vm.guard_feedback import take_feedback
from runtime.vm.reply_attachments import harvest, message_content
from runtime.vm.values import (
    BoundFunction,
    JSArray,
    JSObject,
    Result,
    from_plain,
    stringify,
    to_number,
    to_plain,
    to_str,
    truthy,
)
from runtime.vm.writelog import W_SHARED, W_THREAD, W_USAGE

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

MAX_TOOL_ROUNDS = 10
LLM_DEFAULTS = "__llmDefaults"  # m.globals key: std::llm's defaults for llm() options


def open_request(m: Machine, args: list[Any]) -> JSObject:
    prompt, options, schema, named = (list(args) + [None] * 4)[:4]
    opts = JSObject()
    if type(options) is JSObject:
        opts.update(options)
    elif options is not None:
        raise AgencyRuntimeError("llm: the second argument must be an options object")
    if type(named) is JSObject:
        opts.update(named)
    defaults = m.globals.get(LLM_DEFAULTS)
    if type(defaults) is JSObject:  # std::llm's setLlmOptions: an option of the call wins
        for key, value in defaults.items():
            if opts.get(key) is None:
                opts[key] = value
    tools = opts.get("tools")
    tool_names = JSArray()
    tool_fns = JSArray()
    if tools is not None:
        if type(tools) is not JSArray:
            raise AgencyRuntimeError("llm: `tools` must be an array of defs")
        for t in tools:
            base = t.base if type(t) is BoundFunction else t
            if type(base) is not FuncRef or m.functions.get(base.name) is None:
                raise AgencyRuntimeError(f"llm: tool {to_str(t)} is not a def")
            if t.name in tool_names:
                raise AgencyRuntimeError(
                    f"llm: two tools are named `{t.name}`; "
                    'give each copy its own name with .rename("…")'
                )
            tool_names.append(t.name)
            tool_fns.append(t)
    params = JSObject()
    for key in ("model", "temperature", "maxTokens"):
        if opts.get(key) is not None:
            params[key] = opts[key]
    provider = opts.get("provider")
    model = params.get("model")
    if type(provider) is str and type(model) is str and "/" not in model:
        # `{model: "claude-…", provider: "anthropic"}` names the model `anthropic/claude-…`
        # (a provider this runtime does not know leaves the model name as it is)
        if provider.strip().lower() in KNOWN_PROVIDERS:
            params["model"] = f"{provider.strip().lower()}/{model}"
    extra = opts.get("messages")
    thread = m.active_thread()
    for note in take_feedback(m):  # a guard approval's message goes before this prompt
        m.append_message(thread, {"role": "user", "content": note})
    prompt_at = len(m.threads.get(thread, []))
    content = message_content(m, prompt, "llm")  # text, or text and attachments
    if type(content) is str:
        content = text = well_formed(content)
    else:
        text = well_formed(readable_content(content, stringify))
    m.append_message(thread, {"role": "user", "content": content})
    return JSObject(
        {
            "thread": thread,
            "prompt": text,
            "memory": truthy(opts.get("memory")),
            "stream": truthy(opts.get("stream")),
            "schema": schema,
            "tools": tool_names,
            "tool_fns": tool_fns,
            "params": params,
            "messages": extra if type(extra) is JSArray else None,
            "round": 0,
            "promptAt": prompt_at,
            "validationRetries": _count(opts.get("validationRetries")),
            "maxToolResultChars": _tool_result_cap(opts.get("maxToolResultChars")),
            "validationAttempt": 0,
            "transport": _transport_options(opts),
        }
    )


DEFAULT_TOOL_RESULT_CAP = 100_000  # characters of one tool result the model sees (the reference's)


def _tool_result_cap(v: Any) -> int:
    """`maxToolResultChars`: how much of a tool result the model is sent; 0 (or less) sends all."""
    if v is None:
        return DEFAULT_TOOL_RESULT_CAP
    n = to_number(v)
    return int(n) if n == n and 0 < n < float("inf") else 0


def _capped(text: str, cap: int) -> str:
    """A tool result as the model sees it: past `cap` characters it is cut, with a note saying
    so (the program still gets the whole value)."""
    if cap <= 0 or len(text) <= cap:
        return text
    return f"{text[:cap]}\n\n[tool result truncated: showing {cap} of {len(text)} chars]"


def _transport_options(opts: JSObject) -> JSObject:
    """The call's `retries`, `timeout` (ms) and `backoff: {initial, factor, max}` (ms) options,
    as given (the provider's own apply to what is absent)."""
    out = JSObject()
    for key in ("retries", "timeout"):
        n = _number(opts.get(key))
        if n is not None:
            out[key] = n
    backoff = opts.get("backoff")
    if type(backoff) is JSObject:
        for key in ("initial", "factor", "max"):
            n = _number(backoff.get(key))
            if n is not None:
                out[key] = n
    return out


def _number(v: Any) -> float | None:
    """A non-negative finite number option, else None (absent or unusable: the default)."""
    if v is None:
        return None
    n = to_number(v)
    return float(n) if n == n and 0 <= n < float("inf") else None


def call_transport(req: JSObject) -> CallTransport:
    """The HTTP transport settings of a request (`retries`, `timeout`, `backoff`) in seconds."""
    t = req.get("transport")
    given: dict[str, Any] = dict(t.items()) if type(t) is JSObject else {}

    def seconds(key: str) -> float | None:
        return None if given.get(key) is None else given[key] / 1000

    retries = given.get("retries")
    return CallTransport(
        retries=None if retries is None else int(retries),
        timeout=seconds("timeout"),
        initial=seconds("initial"),
        factor=given.get("factor"),
        max=seconds("max"),
    )


def _count(v: Any) -> int:
    """A retry count option: a whole number, 0 when absent or not a positive number."""
    n = to_number(v) if v is not None else 0.0
    return int(n) if n == n and n > 0 and n != float("inf") else 0


# The message sent before a validation retry (as the reference words it: the model is told what
# was wrong, the response format itself goes with the request again).
def validation_feedback(error: str) -> str:
    return (
        "Your previous response did not match the required output format. "
        f"Validation error: {error[:2000]}\n"
        "Respond again. Return only the structured output, with no extra text."
    )


def tool_specs(m: Machine, tools: list[Any]) -> list[Any]:
    """What the model is told about each tool (a def, or a function derived from one: its
    bound parameters are hidden, from the schema and from the docstring's `@param` lines)."""
    specs = []
    for t in tools:
        bound = t.bound if type(t) is BoundFunction else {}
        code = m.functions[(t.base if type(t) is BoundFunction else t).name]
        props: dict[str, Any] = {}
        required = []
        for p in code.params:
            if isinstance(p.type, TFunc) or p.name in bound:  # a block parameter, or bound
                continue
            props[p.name] = (
                type_to_schema(
                    p.type, m.program.types, m.program.type_params, m.program.type_defaults
                )
                if p.type is not None
                else {}
            )
            if not p.has_default and not p.rest:
                required.append(p.name)
        description = t.description if type(t) is BoundFunction else None
        if description is None:
            description = _without_params(code.doc, bound) if code.doc else f"Call {t.name}"
        specs.append(
            ToolSpec(
                name=t.name,
                description=description,
                parameters={"type": "object", "properties": props, "required": required},
            )
        )
    return specs


def _without_params(doc: str, bound: dict[str, Any]) -> str:
    """A docstring without the `@param name - …` lines of bound parameters."""
    if not bound:
        return doc
    kept = []
    for line in doc.split("\n"):
        words = line.split()
        if len(words) >= 2 and words[0] == "@param" and words[1] in bound:
            continue
        kept.append(line)
    return "\n".join(kept)


def announce(m: Machine) -> None:
    """Say once, on stderr, that answers are simulated (only when a model is really asked)."""
    model = m.model
    if getattr(model, "provider", "") != "sim" or getattr(m.world, "quiet", True):
        return
    if getattr(m.world, "announced", False):
        return
    m.world.announced = True
    import sys

    sys.stderr.write(model.announce() + "\n")
    sys.stderr.flush()


def _deliver_feedback(m: Machine, thread: str, notes: list[str], prompt_at: Any) -> None:
    """Messages of a guard approval answered since the request was opened: before its prompt
    (a trip asked about just before the first request), else after what the thread holds."""
    messages = m.threads.setdefault(thread, [])
    added = [{"role": "user", "content": note} for note in notes]
    if type(prompt_at) is int and 0 <= prompt_at < len(messages):
        messages[prompt_at:prompt_at] = added
        if m.wlog is not None:
            m.wlog.append((W_THREAD, thread, tuple(messages)))
        return
    for msg in added:
        m.append_message(thread, msg)


def call_model(m: Machine, req: JSObject, deadline: float | None = None) -> JSObject:
    """Send the request's next round to the model; its answer as {done, value, calls}, or
    {cancelled: true} when a time guard's budget ran out first (`deadline`, a time.monotonic()
    instant): the round is then not used up, and the prelude asks the guard before trying
    again."""
    if m.model is None:
        raise AgencyRuntimeError("llm: no model is configured")
    announce(m)
    rnd = int(req.get("round") or 0)
    if rnd >= MAX_TOOL_ROUNDS:
        raise AgencyRuntimeError(
            f"llm: the model was still calling tools after {MAX_TOOL_ROUNDS} rounds"
        )
    m.set_key(req, "round", rnd + 1)
    thread = to_str(req["thread"])
    notes = take_feedback(m)
    if notes:
        _deliver_feedback(m, thread, notes, req.get("promptAt") if rnd == 0 else None)
    messages = request_messages(m, req, rnd)
    schema = to_plain(req.get("schema"))
    tools = tool_specs(m, list(_tool_values(req)))
    params = to_plain(req.get("params") or JSObject())
    started = time.perf_counter()
    limit = DEADLINE.set(deadline)
    transport = call_transport(req)
    hooks = TRANSPORT.set(transport)
    try:
        model = model_for(m, params.get("model"))
        completion = model.complete(messages, tools, schema, params)
    except DeadlinePassed as exc:  # a remote request cut short at the deadline
        name = str(getattr(model, "model", ""))
        completion = Completion(text="", model=name, provider=exc.provider, cancelled=True)
    except AgencyError as exc:
        if not transport.events:
            raise AgencyRuntimeError(str(exc)) from None
        # the retries ran out: the prelude runs their callbacks, then fails with this
        return JSObject({"failed": str(exc), "events": from_plain(transport.events)})
    finally:
        DEADLINE.reset(limit)
        TRANSPORT.reset(hooks)
    if transport.events and not completion.transport_events:
        completion = dataclasses.replace(completion, transport_events=tuple(transport.events))
    answer = _answer(m, req, rnd, completion, started, thread, messages, tools, schema, params)
    if completion.transport_events:
        answer["events"] = from_plain(list(completion.transport_events))
    return answer


def _answer(
    m: Machine,
    req: JSObject,
    rnd: int,
    completion: Any,
    started: float,
    thread: str,
    messages: list[Any],
    tools: list[ToolSpec],
    schema: Any,
    params: dict[str, Any],
) -> JSObject:
    """The prelude's view of a model's answer (recorded as an "llm" event on the way)."""
    if completion.cancelled:
        return _cancelled(m, req, rnd, completion, messages, tools, schema, params)
    latency = completion.latency_ms or (time.perf_counter() - started) * 1000
    m.llm_calls += 1
    usage = completion.usage
    cost = usage.cost or 0.0
    m.usage["input_tokens"] += usage.input_tokens
    m.usage["output_tokens"] += usage.output_tokens
    m.usage["cost"] += cost
    m.log((W_USAGE, m.usage["input_tokens"], m.usage["output_tokens"], m.usage["cost"]))
    branch_spend(m, usage.input_tokens + usage.output_tokens, cost)  # fork branches' views
    count_model_usage(
        m, completion.model or "unknown", usage.input_tokens, usage.output_tokens, cost
    )
    calls = JSArray()
    value: Any = None
    failed: AgencyError | None = None
    if completion.tool_calls:
        for tc in completion.tool_calls:
            calls.append(JSObject({"id": tc.id, "name": tc.name, "args": from_plain(tc.args)}))
        m.append_message(
            thread,
            {
                "role": "assistant",
                "content": completion.text or "",
                "tool_calls": [
                    {"id": tc.id, "name": tc.name, "args": to_plain(tc.args)}
                    for tc in completion.tool_calls
                ],
            },
        )
    else:
        try:
            if completion.value is not MISSING:
                # A ready value (a mock answer) is checked and unwrapped like a model's reply.
                value = completion.value
                if schema is not None:
                    if type(value) is str or not isinstance(value, dict | list):
                        value = parse_structured(completion.text, schema)
                    else:
                        value = structured_value(value, schema)
                value = from_plain(value)
            elif schema is not None:
                value = from_plain(parse_structured(completion.text, schema))
            else:
                value = completion.text
        except AgencyError as exc:
            # The answer is recorded all the same (a paid call; replay and resume serve it),
            # then the mismatch is the program's error.
            failed = exc
            value = None
        m.append_message(
            thread,
            {
                "role": "assistant",
                "content": completion.text if completion.text is not None else to_str(value),
            },
        )
    summary = "reply did not match the type" if failed else _summary(completion, value)
    m.event(
        "llm",
        summary,
        {
            "provider": completion.provider,
            "model": completion.model,
            "request": _request(messages, tools, schema, params),
            "response": completion.to_json()
            if hasattr(completion, "to_json")
            else {"text": completion.text},
            "value": to_plain(value),
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cost": usage.cost,
            "latency_ms": latency,
            "round": rnd + 1,
        },
    )
    if not calls and failed is not None:
        attempt = int(req.get("validationAttempt") or 0)
        allowed = int(req.get("validationRetries") or 0)
        if attempt >= allowed:
            raise AgencyRuntimeError(str(failed))
        # `validationRetries`: tell the model what was wrong and ask again; the prelude runs
        # the onLLMRetry callbacks with `retry` first
        m.set_key(req, "validationAttempt", attempt + 1)
        m.append_message(thread, {"role": "user", "content": validation_feedback(str(failed))})
        retry = JSObject(
            {
                "attempt": attempt + 1,
                "maxRetries": allowed,
                "delayMs": 0,
                "reason": "invalidStructuredOutput",
                "detail": str(failed)[:500],
            }
        )
        return JSObject({"done": False, "value": None, "calls": calls, "retry": retry})
    return JSObject({"done": not calls, "value": value, "calls": calls})


def request_messages(m: Machine, req: JSObject, rnd: int) -> list[dict[str, Any]]:
    """The messages request round `rnd` (0: the first) sends: the `messages` option, the
    thread, and on the first round the memory's facts (`memory: true`), which the thread does
    not keep (as the reference removes them once the call is made)."""
    messages: list[dict[str, Any]] = []
    extra = req.get("messages")
    if type(extra) is JSArray:
        messages.extend(
            {k: to_plain(v) for k, v in msg.items()} for msg in extra if type(msg) is JSObject
        )
    messages.extend(dict(msg) for msg in m.threads.get(to_str(req["thread"]), []))
    inject = req.get("inject")
    if rnd == 0 and type(inject) is str and inject:
        messages.append({"role": "system", "content": inject})
    return messages


MEMORY_FACTS = "__memoryFacts"  # std::memory's recall for injection (no question, no model)
MEMORY_HEADING = "Relevant context from memory:\n"


def memory_facts(m: Machine, req: JSObject) -> Any:
    """For `llm(prompt, {memory: true})`: a call of std::memory's `__memoryFacts(prompt)` when
    the program has std::memory, else null (nothing to inject)."""
    if req.get("memory") is not True or MEMORY_FACTS not in m.functions:
        return None
    return TailCall(MEMORY_FACTS, [req.get("prompt") or ""])


def inject_facts(m: Machine, req: JSObject, facts: Any) -> None:
    """Keep the facts on the request for its first round (none found: nothing is injected)."""
    if type(facts) is str and facts.strip():
        m.set_key(req, "inject", MEMORY_HEADING + facts)


def start_data(m: Machine, req: JSObject) -> JSObject:
    """What `onLLMCallStart` callbacks get before each request: the prompt, the tools (name,
    description, schema), the model and the messages about to be sent."""
    rnd = int(req.get("round") or 0)
    params = req.get("params")
    model = params.get("model") if type(params) is JSObject else None
    if not isinstance(model, str) or not model:
        model = getattr(m.model, "model", None)
    tools = JSArray(
        JSObject({"name": t.name, "description": t.description, "schema": from_plain(t.parameters)})
        for t in tool_specs(m, list(_tool_values(req)))
    )
    return JSObject(
        {
            "prompt": req.get("prompt"),
            "tools": tools,
            "model": model,
            "messages": from_plain(request_messages(m, req, rnd)),
        }
    )


def _cancelled(
    m: Machine,
    req: JSObject,
    rnd: int,
    completion: Any,
    messages: list[Any],
    tools: list[ToolSpec],
    schema: Any,
    params: dict[str, Any],
) -> JSObject:
    """A request a time guard cut short: recorded like an answer (replay serves it back in its
    place), nothing added to the thread, and the round given back for the retry."""
    m.set_key(req, "round", rnd)
    m.llm_calls += 1
    m.event(
        "llm",
        "cancelled: a time guard ran out",
        {
            "provider": completion.provider,
            "model": completion.model,
            "request": _request(messages, tools, schema, params),
            "response": completion.to_json(),
            "value": None,
            "input_tokens": 0,
            "output_tokens": 0,
            "cost": 0.0,
            "latency_ms": completion.latency_ms,
            "round": rnd + 1,
        },
    )
    return JSObject({"done": False, "cancelled": True, "value": None, "calls": JSArray()})


def end_data(
    m: Machine, req: JSObject, answer: JSObject, before: dict[str, Any], taken: Any
) -> JSObject:
    """What `onLLMCallEnd` callbacks get after each answer: the model, the result (the reply's
    output and the tool calls it asks for), this call's usage and cost, the time it took (ms,
    from the recorded clock) and the thread's messages with the answer."""
    start = start_data(m, req)
    inp = m.usage["input_tokens"] - before["input_tokens"]
    out = m.usage["output_tokens"] - before["output_tokens"]
    thread = m.threads.get(to_str(req["thread"])) or []
    return JSObject(
        {
            "model": start["model"],
            "result": JSObject({"output": answer.get("value"), "toolCalls": answer.get("calls")}),
            "usage": JSObject({"inputTokens": inp, "outputTokens": out, "totalTokens": inp + out}),
            "cost": m.usage["cost"] - before["cost"],
            "timeTaken": taken,
            "messages": from_plain([dict(msg) for msg in thread]),
        }
    )


def model_for(m: Machine, requested: Any) -> Any:
    """The model that answers a call whose options name `requested` (`{model: "openai/gpt-4o"}`).

    The option wins over the run's model; another provider's model is resolved once per run and
    kept in the host's `models`. Scripted, simulated and replayed runs keep their own model (see
    `registry.route_model`). Raises `AgencyError` for an unknown provider or a missing key.
    """

    if not isinstance(requested, str) or not requested.strip():
        return m.model
    return route_model(m.model, requested.strip(), m.host.models)


def _summary(completion: Any, value: Any) -> str:
    if completion.tool_calls:
        return "calls " + ", ".join(tc.name for tc in completion.tool_calls)
    text = stringify(value) if type(value) is not str else value
    text = " ".join(text.split())
    return text[:80] + ("…" if len(text) > 80 else "")


def _tool_values(req: JSObject) -> Any:
    """The request's tools as function values (a request saved before derived functions
    existed lists names only)."""
    fns = req.get("tool_fns")
    if type(fns) is JSArray:
        return fns
    return [FuncRef(to_str(n)) for n in req.get("tools") or []]


def call_tool(m: Machine, req: JSObject, tc: JSObject) -> Any:
    name = to_str(tc.get("name"))
    names = list(req.get("tools") or [])
    if name not in names:
        return f"Error: No handler found for tool call {name}"
    fn = _tool_values(req)[names.index(name)]
    bound = fn.bound if type(fn) is BoundFunction else {}
    code = m.functions[(fn.base if type(fn) is BoundFunction else fn).name]
    raw_args = tc.get("args")
    args = raw_args if type(raw_args) is JSObject else JSObject()
    known = set(code.param_names)
    named = {k: v for k, v in args.items() if k in known and k not in bound}
    return TailCall(fn if type(fn) is BoundFunction else fn.name, [], named)


# After a tool fails the model is told whether it may call it again (the reference's tiers): a
# failure after a destructive operation began removes the tool at once, any tool is removed
# after MAX_TOOL_FAILURES failures, an `idempotent` one says retrying is safe.
MAX_TOOL_FAILURES = 5
REMOVED_DESTRUCTIVE = (
    "The call failed after starting a destructive operation. This tool can no longer be called "
    "in this conversation. Verify state manually."
)
REMOVED_TOO_MANY = "This tool has failed too many times and can no longer be called."
RETRY_IDEMPOTENT = "This tool is idempotent: calling it again is safe."
RETRY_NEUTRAL = "The call failed. You may call this tool again."


def _failed_tool(m: Machine, req: JSObject, name: str, out: Result) -> str:
    """The tool message for a failed call, removing the tool from the request when it may not
    be called again."""
    counts = req.get("toolFailures")
    counts = JSObject(counts) if type(counts) is JSObject else JSObject()
    counts[name] = int(counts.get(name) or 0) + 1
    m.set_key(req, "toolFailures", counts)
    fn = _tool_named(req, name)
    base = fn.base if type(fn) is BoundFunction else fn
    code = m.functions.get(base.name) if type(base) is FuncRef else None
    if out.destructive:
        suffix = REMOVED_DESTRUCTIVE
    elif counts[name] >= MAX_TOOL_FAILURES:
        suffix = REMOVED_TOO_MANY
    else:
        idempotent = code is not None and "idempotent" in code.modifiers
        retry = RETRY_IDEMPOTENT if idempotent else RETRY_NEUTRAL
        return f"Error: {_capped(to_str(out.error), _cap_of(req))}. {retry}"
    names = list(req.get("tools") or [])
    if name in names:
        i = names.index(name)
        fns = list(_tool_values(req))
        m.set_key(req, "tools", JSArray(names[:i] + names[i + 1 :]))
        m.set_key(req, "tool_fns", JSArray(fns[:i] + fns[i + 1 :]))
    return f"Error: {_capped(to_str(out.error), _cap_of(req))}. {suffix}"


def _cap_of(req: JSObject) -> int:
    cap = req.get("maxToolResultChars")
    return cap if type(cap) is int else DEFAULT_TOOL_RESULT_CAP


def _tool_named(req: JSObject, name: str) -> Any:
    names = list(req.get("tools") or [])
    return _tool_values(req)[names.index(name)] if name in names else None


def tool_result(m: Machine, req: JSObject, tc: JSObject, out: Any) -> None:
    content = _capped(out if type(out) is str else stringify(out), _cap_of(req))
    if type(out) is Result and not out.ok:
        content = _failed_tool(m, req, to_str(tc.get("name")), out)
    content += harvest(m, req, to_str(tc.get("name")))  # what the tool attached to its reply
    m.append_message(
        to_str(req["thread"]),
        {
            "role": "tool",
            "tool_call_id": to_str(tc.get("id")),
            "name": to_str(tc.get("name")),
            "content": well_formed(content),
        },
    )
    m.event(
        "tool",
        f"{to_str(tc.get('name'))} → {content[:60]}",
        {"name": to_str(tc.get("name")), "args": to_plain(tc.get("args")), "result": to_plain(out)},
    )


MODEL_USAGE = "__modelUsage"  # m.mutable key: per-model usage, kept across restore (std::thread)


def count_model_usage(m: Machine, model: str, inp: int, out: int, cost: float) -> None:
    """Add one answer's usage to the per-model table `getModelCosts()` reads. The table is
    replaced, not changed in place, so snapshots taken earlier keep their own."""
    old = m.mutable.get(MODEL_USAGE)
    table = JSObject()
    if type(old) is JSObject:
        for name, entry in old.items():
            table[name] = JSObject(entry) if type(entry) is JSObject else entry
    entry = table.get(model)
    if type(entry) is not JSObject:
        entry = JSObject({"model": model, "inputTokens": 0, "outputTokens": 0, "cost": 0})
        table[model] = entry
    entry["inputTokens"] = entry["inputTokens"] + inp
    entry["outputTokens"] = entry["outputTokens"] + out
    entry["cost"] = entry["cost"] + cost
    m.mutable[MODEL_USAGE] = table
    m.log((W_SHARED, "mutable:" + MODEL_USAGE, table))


def _request(messages: Any, tools: Any, schema: Any, params: dict[str, Any]) -> dict[str, Any]:
    """An `llm` event's request as the recorder stores it (what the provider was sent)."""
    return {
        "messages": messages,
        "tools": [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in tools
        ],
        "schema": schema,
        "params": params,
    }
