"""Provides checkpoints: taking, encoding and restoring machine state (validating and decoding
them: `checkpoint_reading`).

One JSON format serves `getCheckpoint`, `saveToDisk`, the debugger's export and whole-machine
snapshots (DESIGN.md §5). Values are readable JSON: an array or object referenced once is
written inline; one referenced more than once (aliasing, cycles) is written once under `heap`
and referenced as `{"$ref": n}`, so identity survives a round trip. JSON has no word for a
Result, a function or a non-finite number: they are `{"$result": …}`, `{"$function": name}`
and `{"$num": "Infinity"}`.

A user checkpoint (`checkpoint()`) holds what restore rolls back: frames, globals, threads. A
machine snapshot (`snapshot()`) also holds everything restore keeps (`machine` section), so a
machine rebuilt from it in another process continues exactly.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError, CheckpointFormatError
from runtime.vm.checkpoint_reading import FORMAT, VERSION, decode_frames, decode_threads, validate
from runtime.vm.effects import observe
from runtime.vm.frames import Frame
from runtime.vm.state import Decoder, Encoder
from runtime.vm.values import JSArray, JSObject, from_plain, to_plain, to_str

if TYPE_CHECKING:
    from runtime.vm.machine import Machine


# ---------------------------------------------------------------------------------------------
# Values


# ---------------------------------------------------------------------------------------------
# Encoding machine state


def _frame_parts(frame: Frame, user_top: bool) -> dict[str, Any]:
    code = frame.code
    params = code.param_names
    pc, stack, traps = frame.pc, frame.stack, frame.traps
    if user_top:
        pc = frame.stmt_pc
        stack = stack[: frame.stmt_sp]
        traps = [t for t in traps if t[1] < frame.stmt_sp]
    return {
        "code": code,
        "params": params,
        "pc": pc,
        "stack": stack,
        "traps": traps,
    }


def encode_state(
    m: Machine,
    *,
    user: bool,
    top_override: Frame | None = None,
    drop_top: int = 0,
    env: tuple[dict[str, Any], dict[str, int]] | None = None,
    failure_checkpoints: bool = True,
) -> dict[str, Any]:
    """The rolled-back part of the state (and, when not `user`, everything else too).

    `env` (globals, thread lengths) replaces the current globals and cuts the threads back:
    a failure's checkpoint is the state at its def's entry. Without `failure_checkpoints`, the
    failures in the state are saved without the checkpoints they carry."""
    frames = list(m.frames[: len(m.frames) - drop_top] if drop_top else m.frames)
    if top_override is not None:
        frames[-1] = top_override
    # The module frame sits under the entry node, waiting to HALT; it is rebuilt on decode,
    # so a checkpoint's stack starts at the node, as people expect.
    # While the module is still initialising (a module-level call is running), it stays.
    if len(frames) > 1 and frames[0].code.kind == "module" and frames[1].code.kind == "node":
        frames = frames[1:]
    # A snapshot says which containers are frozen; a user checkpoint, like the reference's
    # (a JSON copy), does not: what it restores can be changed again.
    enc = Encoder(failure_checkpoints=failure_checkpoints, frozen=None if user else m.frozen)
    roots: list[Any] = []
    for f in frames:
        roots.extend(f.locals.values())
        roots.extend(f.stack)
        if f.entry:
            roots.extend(f.entry.values())
    glob = env[0] if env is not None else m.globals
    roots.extend(glob.values())
    for f in frames:
        if f.entry_env is not None:
            roots.extend(f.entry_env[0].values())
    if not user:
        roots.extend(m.shared.values())
        roots.extend(m.mutable.values())
        roots.append(m.result)
    for v in roots:
        enc.count(v)
    out_frames = []
    for i, f in enumerate(frames):
        top = i == len(frames) - 1
        parts = _frame_parts(f, user_top=user and top and top_override is None)
        code = parts["code"]
        # (a parameter the call left out, still waiting for its default, is not written: a
        # rebuilt frame must still give it the default)
        args = {p: enc.enc(f.locals[p]) for p in parts["params"] if p in f.locals}
        # Visible locals first, then hidden ones, whatever order the frame met them in: shared
        # containers are numbered as they are met, and a rebuilt frame holds them in this order.
        names = [k for k in f.locals if k not in args]
        locals_ = {k: enc.enc(f.locals[k]) for k in names if not k.startswith("__")}
        hidden = {k: enc.enc(f.locals[k]) for k in names if k.startswith("__")}
        loc = _frame_location(f, parts["pc"])
        out_frames.append(
            {
                "scope": code.name,
                "kind": code.kind,
                "args": args,
                "locals": locals_,
                "hidden": hidden,
                "position": {
                    "pc": parts["pc"],
                    "stmt_pc": f.stmt_pc if not (user and top) else parts["pc"],
                    "stmt_sp": f.stmt_sp if not (user and top) else len(parts["stack"]),
                    "line": loc[0],
                    "col": loc[1],
                },
                "stack": [enc.enc(v) for v in parts["stack"]],
                "traps": [list(t) for t in parts["traps"]],
                "handlers": [list(h) for h in f.handlers],
                "threads": list(f.threads),
                "entry": (
                    {k: enc.enc(v) for k, v in f.entry.items()} if f.entry is not None else None
                ),
                "entry_env": (
                    {
                        "globals": {k: enc.enc(v) for k, v in f.entry_env[0].items()},
                        "threads": dict(f.entry_env[1]),
                    }
                    if f.entry_env is not None
                    else None
                ),
            }
        )
    state: dict[str, Any] = {
        "stack": out_frames,
        "globals": {k: enc.enc(v) for k, v in glob.items()},
        "threads": {
            "active": m.active_thread(),
            "threads": {
                tid: [enc.enc(msg) for msg in msgs[: env[1][tid] if env is not None else None]]
                for tid, msgs in m.threads.items()
                if env is None or tid in env[1]
            },
        },
    }
    if not user:
        state["machine"] = {
            "shared": {k: enc.enc(v) for k, v in m.shared.items()},
            "mutable": {k: enc.enc(v) for k, v in m.mutable.items()},
            "output": list(m.output),
            "thread_counter": m.thread_counter,
            "cp_counter": m.cp_counter,
            "checkpoints": {str(k): v for k, v in m.checkpoints.items()},
            "restore_counts": dict(m.restore_counts),
            "restores_of": dict(m.restores_of),
            "step_index": m.step_index,
            "status": m.status,
            "result": enc.enc(m.result),
            "error": m.error.message if m.error else None,
            "pending": m.pending,
            "answer": enc.enc(m.answer) if m.answer is not None else None,
            "entry_args": [enc.enc(a) for a in m.entry_args],
            "entry_named": {k: enc.enc(v) for k, v in m.entry_named.items()},
            "nodes_traversed": list(m.nodes_traversed),
            "llm_calls": m.llm_calls,
            "model_state": _model_state(m.model),
            "effects": dict(m.effects),
        }
    if not user:
        state["machine"]["frozen"] = list(enc.frozen_labels)
    state["heap"] = enc.heap
    return state


def _frame_location(f: Frame, pc: int) -> tuple[int, int]:
    code = f.code
    best = (code.span.line, code.span.col)
    for i, spc in enumerate(code.step_pcs):
        if spc <= pc:
            loc = code.locations[i]
            best = (loc.line, loc.col)
        else:
            break
    return best


def _model_state(model: Any) -> dict[str, Any]:
    if model is None:
        return {}
    state: dict[str, Any] = {"provider": getattr(model, "provider", "")}
    if hasattr(model, "position"):
        state["position"] = model.position
    return state


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def envelope(m: Machine, state: dict[str, Any], ident: int | None, kind: str) -> dict[str, Any]:
    """Wrap encoded state in the checkpoint file header (DESIGN.md §5)."""
    loc = m.current_location()
    head: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "kind": kind,
        "id": ident,
        "run_id": m.run_id or None,
        "step": m.step_index,
        "branch": m.branch,
        # A program can save a checkpoint it took (`saveToDisk(getCheckpoint(cp))`), so the time
        # of a user checkpoint is read like any other input: replay serves the recorded one.
        "created_at": observe(m, "clock", {}, _now) if kind == "checkpoint" else _now(),
        "source": {"path": m.program.path, "sha256": m.program.sha256},
        "node": m.nodes_traversed[-1] if m.nodes_traversed else m.node,
        "location": (
            {
                "file": loc.file,
                "scope": loc.scope,
                "path": loc.path,
                "line": loc.line,
                "col": loc.col,
            }
            if loc
            else None
        ),
    }
    head.update(state)
    head["usage"] = dict(m.usage)
    head["effects"] = sorted(m.effects)
    head["config"] = _model_state(m.model)
    return head


def take_checkpoint(m: Machine) -> int:
    """`checkpoint()`: snapshot what restore rolls back; return the new id."""
    ident = m.cp_counter
    m.cp_counter += 1
    data = envelope(m, encode_state(m, user=True), ident, "checkpoint")
    m.checkpoints[ident] = data
    loc = data["location"] or {}
    m.event("checkpoint", f"checkpoint {ident}", {"id": ident, "line": loc.get("line")})
    return ident


def entry_checkpoint(m: Machine, frame: Frame) -> Any:
    """The checkpoint carried by a failure: the def's frame as it was at entry. The failures
    it holds are kept without their own checkpoints, so its size is the state's, not the sum of
    every earlier failure's checkpoint."""
    fresh = Frame(frame.code, dict(frame.entry or {}))
    fresh.entry = dict(frame.entry or {})
    fresh.entry_env = frame.entry_env
    try:
        state = encode_state(
            m, user=True, top_override=fresh, env=frame.entry_env, failure_checkpoints=False
        )
        data = envelope(m, state, None, "entry")
    except AgencyRuntimeError:
        return None
    return from_plain(data)


def snapshot(m: Machine) -> dict[str, Any]:
    """The whole machine, exactly, as JSON-ready data (for rebuilding in another process)."""
    return envelope(m, encode_state(m, user=False), None, "machine")


# ---------------------------------------------------------------------------------------------
# Restoring


def _site(m: Machine) -> str:
    for frame in reversed(m.frames):
        if frame.code.kind not in ("prelude",):
            return f"{frame.code.name}:{frame.stmt_pc}"
    return "?"


def prepare_restore(
    m: Machine, target: Any, options: JSObject
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """Decide whether `restore()` rolls back; returns (checkpoint, options) or None to go on."""
    opts = {k: v for k, v in options.items()}
    site = _site(m)
    max_restores = opts.get("maxRestores")
    if max_restores is not None:
        count = m.restore_counts.get(site, 0)
        if count >= int(max_restores):
            return None
        m.restore_counts[site] = count + 1
    if type(target) is int or type(target) is float:
        key = int(target)
        data = m.checkpoints.get(key)
        if data is None:
            raise AgencyRuntimeError(
                f"restore: no checkpoint with id {to_str(target)} (it may have been deleted by a restore)"
            )
    elif type(target) is JSObject:
        try:
            data = validate(to_plain(target), m.program, origin="restore")
        except CheckpointFormatError as exc:
            raise AgencyRuntimeError(str(exc)) from None
    elif target is None:
        raise AgencyRuntimeError("restore: no checkpoint given (got null)")
    else:
        raise AgencyRuntimeError(
            f"restore: expected a checkpoint id or object, got {to_str(target)}"
        )
    loc = data.get("location") or {}
    cp_site = f"{loc.get('file')}:{loc.get('line')}:{loc.get('col')}:{data['stack'][-1]['position']['pc']}"
    count = m.restores_of.get(cp_site, 0)
    if max_restores is None and count >= m.restore_cap:
        ident = data.get("id")
        raise AgencyRuntimeError(
            f"checkpoint {ident if ident is not None else ''} taken at {loc.get('file')}:{loc.get('line')} "
            f"has been restored {count} times (the limit); pass maxRestores to restore() to allow more"
        )
    m.restores_of[cp_site] = count + 1
    return data, opts


def apply_restore(m: Machine, data: dict[str, Any], options: dict[str, Any]) -> None:
    """Roll the machine back to `data` (frames, globals, threads) and apply the options."""
    program = m.program
    dec = Decoder(data.get("heap"))
    frames = decode_frames(program, data, dec)
    glob = {k: dec.dec(v) for k, v in data["globals"].items()}
    threads = decode_threads(data, dec)
    top = frames[-1]
    for key in ("args", "locals"):
        over = options.get(key)
        if over is None:
            continue
        if type(over) is not JSObject:
            raise AgencyRuntimeError(f"restore: `{key}` must be an object")
        params = top.code.param_names
        for name, value in over.items():
            if key == "args" and name not in params:
                raise AgencyRuntimeError(
                    f"restore: `{top.code.name}` has no argument `{name}` (arguments: {', '.join(params) or 'none'})"
                )
            top.locals[name] = value
            if key == "args" and top.entry is not None:
                top.entry[name] = value
    over_globals = options.get("globals")
    if over_globals is not None:
        if type(over_globals) is not JSObject:
            raise AgencyRuntimeError("restore: `globals` must be an object")
        glob.update(over_globals)
    ident = data.get("id")
    if isinstance(ident, int):
        for k in [k for k in m.checkpoints if k > ident]:
            del m.checkpoints[k]
    m.frames[:] = frames
    m.globals.clear()
    m.globals.update(glob)
    m.threads = threads
    messages = options.get("messages")
    if messages is not None:
        if type(messages) is not JSArray:
            raise AgencyRuntimeError("restore: `messages` must be an array of {role, content}")
        active = m.active_thread()
        for msg in messages:
            if type(msg) is not JSObject:
                raise AgencyRuntimeError("restore: each message must be an object {role, content}")
            m.threads.setdefault(active, []).append(
                {"role": to_str(msg.get("role", "user")), "content": to_str(msg.get("content", ""))}
            )
    if m.on_reset is not None:
        m.on_reset()
    m.event(
        "restore", f"restore checkpoint {ident if ident is not None else ''}".strip(), {"id": ident}
    )
