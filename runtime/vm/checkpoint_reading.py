"""Provides reading checkpoint data: validating it, whole, against the program before anything
runs (statement boundaries, the shapes a frame can have at its pc, visible functions, counts),
loading checkpoint files, and decoding frames and threads from it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from runtime.errors import CheckpointFormatError
from runtime.language import bytecode
from runtime.language.files import CHECKPOINT_MAX_DEPTH, JSONTooDeep, loads_json, read_text
from runtime.language.stack_depths import callee_local, frame_shapes, static_callee, unfused
from runtime.vm.builtins_callbacks import HOOKED_CALL, STD_INDEX_BUILTINS, STD_INDEX_PRELUDE
from runtime.vm.frames import Frame
from runtime.vm.state import Decoder
from runtime.vm.values import JSObject, to_plain, to_str
from runtime.vm.writelog import FAILED, HALTED, INTERRUPTED, PAUSED, RUNNING

if TYPE_CHECKING:
    from runtime.language.bytecode import CompiledProgram

FORMAT = "agency-checkpoint"
VERSION = 1


# ---------------------------------------------------------------------------------------------
# Validation


def validate(
    data: Any, program: CompiledProgram | None = None, origin: str = "checkpoint"
) -> dict[str, Any]:
    """Check a checkpoint's shape (and its source, given a program); raise one clear error."""
    if not isinstance(data, dict):
        raise CheckpointFormatError(f"{origin}: not a checkpoint (expected a JSON object)")
    if data.get("format") != FORMAT:
        raise CheckpointFormatError(
            f"{origin}: not an agency checkpoint (format is {data.get('format')!r}, expected {FORMAT!r})"
        )
    if type(data.get("version")) is not int or data.get("version") != VERSION:  # `true` == 1
        raise CheckpointFormatError(
            f"{origin}: unsupported checkpoint version {data.get('version')!r} (this agency reads version {VERSION})"
        )
    for key, kind in (("stack", list), ("globals", dict), ("threads", dict), ("source", dict)):
        if key not in data:
            raise CheckpointFormatError(f"{origin}: missing field `{key}`")
        if not isinstance(data[key], kind):
            raise CheckpointFormatError(f"{origin}: field `{key}` should be a {kind.__name__}")
    if not data["stack"]:
        raise CheckpointFormatError(f"{origin}: the stack is empty (nothing to continue)")
    for i, f in enumerate(data["stack"]):
        if not isinstance(f, dict) or not isinstance(f.get("scope"), str):
            raise CheckpointFormatError(f"{origin}: stack frame {i} has no scope")
        pos = f.get("position")
        if not isinstance(pos, dict) or not isinstance(pos.get("pc"), int):
            raise CheckpointFormatError(f"{origin}: stack frame {i} ({f['scope']}) has no position")
        for key in ("args", "locals"):
            if not isinstance(f.get(key, {}), dict):
                raise CheckpointFormatError(f"{origin}: `{key}` of frame {i} should be an object")
    if program is not None:
        src = data["source"]
        if src.get("sha256") != program.sha256:
            raise CheckpointFormatError(
                f"{origin} was taken from {src.get('path')} (sha256 {str(src.get('sha256'))[:12]}…) "
                f"but this program is {program.path} (sha256 {program.sha256[:12]}…); "
                "a checkpoint restores only against the same source"
            )
        for i, f in enumerate(data["stack"]):
            scope = f["scope"]
            if scope == "<module>":
                code = program.module
            else:
                code = program.functions.get(scope)  # type: ignore[assignment]
            if code is None:
                raise CheckpointFormatError(
                    f"{origin}: frame {i} is in `{scope}`, which this program lacks"
                )
            if not 0 <= f["position"]["pc"] < len(code.ops):
                raise CheckpointFormatError(f"{origin}: frame {i} position is outside `{scope}`")
        check_against_program(data, program, origin)
        trial_decode(data, program, origin)
        # The checkpoints the program saved inside this one are restored by id later
        # (`restore(cp)`): each is checked as strictly now, not when the run reaches it.
        extra = data.get("machine")
        saved = extra.get("checkpoints") if isinstance(extra, dict) else None
        for k, inner in (saved or {}).items():
            validate(inner, program, f"{origin}: saved checkpoint {k}")
    return data


# The largest step number, id or counter a checkpoint may hold (a double holds it exactly).
MAX_COUNT = 2**53
# Where a frame below the top one may stand: just after the call it waits on (a node's module
# frame, after entering the node).
_RETURN_POINTS = frozenset({bytecode.CALL, bytecode.CALL_METHOD, bytecode.ENTER_NODE})
_STATUSES = frozenset({RUNNING, INTERRUPTED, PAUSED, HALTED, FAILED})
_CALLS = frozenset({bytecode.CALL, bytecode.CALL_METHOD})


def _check_operands(f: dict[str, Any], code: Any, top: bool, where: str) -> None:
    """A top frame paused in a call that runs again holds the callee and its arguments."""
    pc = f["position"]["pc"]
    if not top or code.ops[pc] not in _CALLS:
        return
    spec = code.args[pc]
    if code.ops[pc] == bytecode.CALL_METHOD:
        spec = spec[1]
    need = 1 + (spec if isinstance(spec, int) else len(spec or ()))
    stack = f.get("stack") or []
    if not isinstance(stack, list) or len(stack) < need:
        raise CheckpointFormatError(f"{where}: the operand stack does not hold the call it is in")


def _check_depth(
    f: dict[str, Any], code: Any, top: bool, where: str, cache: dict[str, list[frozenset[Any]]]
) -> None:
    """The frame has a shape its function can have at its pc
    (`runtime.language.stack_depths.frame_shapes`): its operand stack's depth (a frame waiting
    on a call, one fewer: the call's value is pushed when it returns), its handlers, threads
    and traps. A pc moved to another statement or to another call's return point is refused
    unless the frame there has the same shape."""
    found = cache.get(code.name)
    if found is None:
        # Kept on the code (superinstructions leave every pc's shape as it was: `unfused`).
        found = code.frame_shapes
        if found is None:
            found = code.frame_shapes = frame_shapes(code)
        cache[code.name] = found
    pc = f["position"]["pc"]
    shapes = found[pc] if 0 <= pc < len(found) else frozenset()
    if not shapes:
        raise CheckpointFormatError(f"{where}: `position.pc` {pc} is never reached in the function")
    stack = f.get("stack") or []
    have = len(stack) if isinstance(stack, list) else -1
    want = {shape[0] - (0 if top else 1) for shape in shapes}
    if have not in want:
        shape = f"{min(want)} values" if len(want) == 1 else "another number of values"
        raise CheckpointFormatError(
            f"{where}: the operand stack holds {have} value{'s' if have != 1 else ''}, but at "
            f"`position.pc` {pc} the function holds {shape}"
        )
    handlers, threads, traps = (f.get(key) or [] for key in ("handlers", "threads", "traps"))
    lists = isinstance(handlers, list) and isinstance(threads, list)
    blocks = (len(handlers), len(threads), _traps(traps)) if lists else None
    # A preapproved def's frame starts with the handler that approves (runtime/vm/machine.py).
    preapproved = lists and bool(handlers) and handlers[0] == ["preapprove", "approve"]
    if (
        blocks is None
        or blocks[2] is None
        or not any(
            (shape[0], shape[1] + extra, shape[2], shape[3]) == (have + (0 if top else 1), *blocks)
            for shape in shapes
            for extra in ((0, 1) if preapproved else (0,))
        )
    ):
        raise CheckpointFormatError(
            f"{where}: its handlers, threads or traps are not those the function has at "
            f"`position.pc` {pc}"
        )


def _traps(traps: Any) -> tuple[tuple[Any, ...], ...] | None:
    """A frame's traps as `frame_shapes` has them ((target, depth, failure pushed), ...)."""
    if not isinstance(traps, list) or not all(
        isinstance(t, list) and len(t) == 3 and all(type(x) in (int, bool) for x in t)
        for t in traps
    ):
        return None
    return tuple((t[0], t[1], bool(t[2])) for t in traps)


# Builtins a program can name that may go on in an Agency function (a `TailCall`): `sleep`
# checks the time guards. Every other builtin a program names returns without a frame; the
# internal `__…` ones (a handler, a callback, a tool call) may run any function.
_TAIL_CALLING = frozenset({"sleep"})


def _check_callee(
    f: dict[str, Any],
    code: Any,
    above: dict[str, Any],
    program: CompiledProgram,
    where: str,
    reassigned: frozenset[str],
) -> None:
    """A frame waiting on a call whose callee the code names (`f(…)`), or takes from a local
    variable holding a function value (`g(…)`), has that function's frame above it (or, for a
    def or one of std::index's functions, the prelude's `__hooked_call` running its callbacks
    first); a builtin that returns
    without a frame has none. So a pc moved to another call's return point, whose stack
    happens to have the same depth, is refused too. `reassigned`: the variables a block may
    assign in the frame that made it, whose value the call may have changed meanwhile."""
    pc = f["position"]["pc"]
    name = static_callee(code, pc - 1) if pc > 0 else None
    if name is None and pc > 0:
        local = callee_local(code, pc - 1)
        if local is not None and local not in reassigned:
            values = {**(f.get("args") or {}), **(f.get("locals") or {})}
            name = _function_named(values.get(local))
    if name is None or above["scope"] == name:
        return
    callee = program.functions.get(name)
    if callee is None and (name.startswith("__") or name in _TAIL_CALLING):
        return
    if above["scope"] == HOOKED_CALL and (
        (callee is not None and callee.kind == "def")
        or name in STD_INDEX_BUILTINS
        or name in STD_INDEX_PRELUDE
    ):
        return  # (std::index's functions fire onFunctionStart as defs do)
    raise CheckpointFormatError(
        f"{where}: at `position.pc` {pc} it waits on a call to `{name}`, but the frame above "
        f"it runs `{above['scope']}`"
    )


def _function_named(value: Any) -> str | None:
    """The function an encoded function value runs (a def or builtin, a block, a partial
    application of one), None for anything else."""
    for _ in range(8):  # a partial of a partial of …
        if not isinstance(value, dict):
            return None
        for key in ("$function", "$block"):
            if isinstance(value.get(key), str):
                return str(value[key])
        value = value.get("$partial")
    return None


def _outer_assigned(program: CompiledProgram) -> frozenset[str]:
    """Every variable a block assigns in the frame that made it (`STORE_OUTER`, `UPDATE_OUTER`),
    found once per program (no instruction is added to a compiled program)."""
    if program.outer_assigned is not None:
        return program.outer_assigned
    out: set[str] = set()
    for fn in program.functions.values():
        for op, arg in zip(fn.ops, fn.args):
            op, arg = unfused(op, arg)
            if op in (bytecode.STORE_OUTER, bytecode.UPDATE_OUTER):
                out.add(str(arg[0] if type(arg) is tuple else arg))
    program.outer_assigned = frozenset(out)
    return program.outer_assigned


def check_against_program(data: dict[str, Any], program: CompiledProgram, origin: str) -> None:
    """What a well-formed but tampered checkpoint could slip past the shape checks: every frame
    stands at a statement boundary of its function (and at the line and column it names), a
    checkpoint of the program's own holds no frame inside the prelude, every function value
    names a function the program can see, every count is a count, every operand stack has the
    depth its function has at its pc, and a failed run is not continued."""
    user = data.get("kind") == "checkpoint"
    frames = data["stack"]
    depths: dict[str, list[frozenset[Any]]] = {}  # frame shapes per function, computed once
    reassigned = _outer_assigned(program) if len(frames) > 1 else frozenset()
    for i, f in enumerate(frames):
        code = program.module if f["scope"] == "<module>" else program.functions[f["scope"]]
        where = f"frame {i} (`{f['scope']}`)"
        # A frame below a time guard's check made at its statement boundary (`__step_guard`,
        # runtime/vm/builtins_guard.py) waits at that boundary, as a top frame does.
        stepped = i + 1 < len(frames) and frames[i + 1].get("scope") == "__step_guard"
        top = i == len(frames) - 1 or stepped
        # `checkpoint()` is called from the program's own code, which may itself run under a
        # prelude call (a validator, a `map` callback): only the ends are the program's
        if code.kind == "prelude" and (i == 0 or (user and top)):
            raise CheckpointFormatError(
                f"{origin}: {where} is inside the prelude; a checkpoint starts in the program's "
                "own code"
            )
        _check_position(f["position"], code, top, f"{origin}: {where}")
        _check_operands(f, code, top, f"{origin}: {where}")
        _check_depth(f, code, top, f"{origin}: {where}", depths)
        if not top:
            _check_callee(f, code, frames[i + 1], program, f"{origin}: {where}", reassigned)
    for key in ("step", "id", "branch"):
        _count(data.get(key), f"{origin}: `{key}`", -1 if key == "step" else 0)
    for key in ("run_id", "node"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise CheckpointFormatError(f"{origin}: `{key}` should be a string")
    node = data.get("node")
    if node is not None and getattr(program.functions.get(node), "kind", None) != "node":
        raise CheckpointFormatError(f"{origin}: `node` names `{node}`, which is not a node here")
    usage = data.get("usage")
    if usage is not None:
        if not isinstance(usage, dict):
            raise CheckpointFormatError(f"{origin}: `usage` should be an object")
        for key in ("input_tokens", "output_tokens", "cost"):
            v = usage.get(key, 0)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < MAX_COUNT:
                raise CheckpointFormatError(f"{origin}: `usage.{key}` should be a number")
    extra = data.get("machine")
    if isinstance(extra, dict):
        _check_machine(extra, origin)
    _check_functions(data, program, origin)


def _count(v: Any, what: str, low: int = 0) -> None:
    """None or a whole number from `low` to MAX_COUNT."""
    if v is None:
        return
    if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= MAX_COUNT:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) > MAX_COUNT:
            shown = "a number too large to be one"
        else:
            shown = repr(v)[:40]
        raise CheckpointFormatError(
            f"{what} should be a whole number from {low} to 2^53, got {shown}"
        )


def _check_position(pos: dict[str, Any], code: Any, top: bool, where: str) -> None:
    pc = pos["pc"]
    stmt_pc = pos.get("stmt_pc", pc)
    sp = pos.get("stmt_sp", 0)
    for key, v in (("stmt_pc", stmt_pc), ("stmt_sp", sp)):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= pc:
            raise CheckpointFormatError(f"{where}: `position.{key}` is not a place in the function")
    ops = code.ops
    before = ops[pc - 1] if pc > 0 else None
    if pc == 0 and top:
        return  # a frame that has not started yet
    if code.kind == "prelude":  # at a marked step (llm, tool), paused, or waiting on a call
        if top:
            ok = before == bytecode.MARK_STEP or ops[pc] in _CALLS
        else:
            ok = before in _RETURN_POINTS
    else:
        pcs = code.step_pcs
        if stmt_pc not in pcs:
            raise CheckpointFormatError(f"{where}: `position.stmt_pc` is not a statement boundary")
        after = [p for p in pcs if p > stmt_pc]
        if after and pc > after[0]:
            raise CheckpointFormatError(f"{where}: `position.pc` is outside its statement")
        loc = code.locations[pcs.index(stmt_pc)]
        for key in ("line", "col"):
            if key in pos and pos[key] != getattr(loc, key):
                raise CheckpointFormatError(
                    f"{where}: `position.{key}` is {pos[key]!r}, but the statement there is at "
                    f"line {loc.line}, column {loc.col}"
                )
        if top:  # at the statement's start, at a marked step, or paused in a call
            ok = pc in (stmt_pc, stmt_pc + 1) or before == bytecode.MARK_STEP or ops[pc] in _CALLS
        else:  # waiting for the call it made to return
            ok = before in _RETURN_POINTS
    if not ok:
        raise CheckpointFormatError(f"{where}: `position.pc` is not a statement boundary")


def _check_machine(extra: dict[str, Any], origin: str) -> None:
    """The fields `rebuild` reads from a snapshot's `machine`."""
    where = f"{origin}: `machine"
    for key in ("shared", "mutable", "entry_named", "checkpoints", "restore_counts"):
        if not isinstance(extra.get(key) or {}, dict):
            raise CheckpointFormatError(f"{where}.{key}` should be an object")
    for key in ("restores_of", "effects", "model_state"):
        if not isinstance(extra.get(key) or {}, dict):
            raise CheckpointFormatError(f"{where}.{key}` should be an object")
    for key in ("step_index", "cp_counter", "thread_counter", "llm_calls"):
        _count(extra.get(key), f"{where}.{key}`", -1 if key == "step_index" else 0)
    status = extra.get("status", RUNNING)
    if not isinstance(status, str) or status not in _STATUSES:
        raise CheckpointFormatError(f"{where}.status` is {str(status)[:40]!r}, not a run status")
    if status == FAILED:
        raise CheckpointFormatError(
            f"{origin}: the run failed at this point ({str(extra.get('error'))[:200]}); there is "
            "nothing to continue (export an earlier step to retry from there)"
        )
    for key, kind in (
        ("output", list),
        ("entry_args", list),
        ("frozen", list),
        ("nodes_traversed", list),
        ("model_state", dict),
    ):
        if not isinstance(extra.get(key) or kind(), kind):
            raise CheckpointFormatError(f"{where}.{key}` should be a {kind.__name__}")
    if not all(isinstance(x, str) for x in extra.get("output") or []):
        raise CheckpointFormatError(f"{where}.output` should be a list of strings")
    if not all(type(x) in (str, int) for x in extra.get("frozen") or []):
        raise CheckpointFormatError(f"{where}.frozen` should be a list of heap entries")
    if not all(isinstance(x, str) for x in extra.get("nodes_traversed") or []):
        raise CheckpointFormatError(f"{where}.nodes_traversed` should be a list of names")
    for key in ("restore_counts", "restores_of"):
        for v in (extra.get(key) or {}).values():
            _count(v, f"{where}.{key}` entry")
    for k, v in (extra.get("checkpoints") or {}).items():
        if not (isinstance(k, str) and k.isdigit() and len(k) < 16) or not isinstance(v, dict):
            raise CheckpointFormatError(f"{where}.checkpoints` should map ids to checkpoints")
    position = (extra.get("model_state") or {}).get("position")
    _count(position, f"{where}.model_state.position`")
    if extra.get("error") is not None and not isinstance(extra["error"], str):
        raise CheckpointFormatError(f"{where}.error` should be a string")


def visible_function(program: CompiledProgram, name: str) -> bool:
    """Whether a checkpoint may name `name`: a function written in Agency that the program
    holds (its own defs and nodes, the prelude's and the standard library's, the helpers its
    syntax compiles to, such as `__validate` for `T!`), or a builtin's public name; never an
    internal `__…` builtin of the host."""
    if name in program.functions:
        return True
    return not name.startswith("__") and name in bytecode.BUILTIN_NAMES


def _check_functions(data: dict[str, Any], program: CompiledProgram, origin: str) -> None:
    """Every `{"$function": name}` in the checkpoint names a visible function; only a prelude
    frame's own operand stack may hold an internal builtin (the call it is making: a paused
    interrupt re-runs it), here and in the checkpoints the program saved inside this one."""
    todo: list[tuple[Any, bool]] = [(data, False)]
    while todo:
        v, internal_ok = todo.pop()
        if isinstance(v, dict):
            name = v.get("$function")
            if "$function" in v and not (
                isinstance(name, str)
                and (
                    visible_function(program, name)
                    or (internal_ok and name in bytecode.BUILTIN_NAMES)
                )
            ):
                raise CheckpointFormatError(
                    f"{origin}: a function value names {str(name)[:60]!r}, which is not a "
                    "function of this program"
                )
            code = program.functions.get(v["scope"]) if isinstance(v.get("scope"), str) else None
            prelude_frame = code is not None and code.kind == "prelude"
            for k, item in v.items():
                if isinstance(item, (dict, list)):  # (nothing else can name a function)
                    todo.append((item, prelude_frame and k == "stack"))
        elif isinstance(v, list):
            todo.extend((item, internal_ok) for item in v if isinstance(item, (dict, list)))


def trial_decode(data: dict[str, Any], program: CompiledProgram, origin: str) -> None:
    """Decode everything once, so a damaged inside is one clear error, never a traceback."""
    try:
        dec = Decoder(data.get("heap") if isinstance(data.get("heap"), dict) else {})
        frames = decode_frames(program, data, dec)
        for f in frames:
            for t in f.traps:
                if len(t) != 3 or not all(isinstance(x, (int, bool)) for x in t):
                    raise ValueError("a frame's traps are malformed")
            for h in f.handlers:
                if len(h) != 2 or not all(isinstance(x, str) for x in h):
                    raise ValueError("a frame's handlers are malformed")
        for v in data["globals"].values():
            dec.dec(v)
        decode_threads(data, dec)
        for block in dec.closures:
            code = program.functions.get(block.name)
            if code is None or code.kind != "block":
                raise ValueError(
                    f"a block value refers to `{block.name}`, which this program lacks"
                )
        for key in ("step", "id"):
            v = data.get(key)
            if v is not None and not isinstance(v, int):
                raise ValueError(f"`{key}` should be a number")
        extra = data.get("machine")
        if extra is not None:
            if not isinstance(extra, dict):
                raise ValueError("`machine` should be an object")
            for key in (
                "shared",
                "mutable",
                "entry_named",
                "checkpoints",
                "restore_counts",
                "restores_of",
                "effects",
            ):
                if not isinstance(extra.get(key) or {}, dict):
                    raise ValueError(f"`machine.{key}` should be an object")
            for v in (extra.get("shared") or {}).values():
                dec.dec(v)
            for label in extra.get("frozen") or []:
                dec.dec({"$ref": label})  # a missing entry is an error now, not in `revive`
            int(extra.get("step_index", -1))
            int(extra.get("cp_counter", 0))
            int(extra.get("thread_counter", 1))
    except CheckpointFormatError as exc:
        raise CheckpointFormatError(f"{origin}: {exc}") from None
    except RecursionError:
        raise CheckpointFormatError(f"{origin}: a value in it is nested too deeply") from None
    except (
        TypeError,
        ValueError,
        AttributeError,
        KeyError,
        IndexError,
        ArithmeticError,
    ) as exc:
        what = str(exc) or type(exc).__name__
        raise CheckpointFormatError(f"{origin}: damaged checkpoint ({what})") from None


def load_file(path: str, program: CompiledProgram | None = None) -> dict[str, Any]:
    """Read and validate a checkpoint file; every problem is one CheckpointFormatError."""
    try:
        text = read_text(path, "checkpoint file", CheckpointFormatError)
    except FileNotFoundError:
        raise CheckpointFormatError(f"{path}: no such checkpoint file") from None
    except OSError as exc:
        raise CheckpointFormatError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise CheckpointFormatError(f"{path}: not a checkpoint (not UTF-8 text)") from None
    try:
        data = loads_json(text, CHECKPOINT_MAX_DEPTH)
    except JSONTooDeep as exc:
        raise CheckpointFormatError(f"{path}: not a checkpoint: {exc.msg}") from None
    except json.JSONDecodeError as exc:
        what = "truncated" if exc.pos >= len(text.rstrip()) else "malformed"
        raise CheckpointFormatError(
            f"{path}: {what} checkpoint JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    return validate(data, program, origin=path)


# ---------------------------------------------------------------------------------------------
# Decoding


def _after_enter_node(module: Any) -> int:
    """Where the module frame under a decoded node stands: just after its ENTER_NODE."""
    ops = module.ops
    for pc in range(len(ops) - 1, -1, -1):
        if ops[pc] == bytecode.ENTER_NODE:
            return pc + 1
    return len(ops) - 1  # (a module always enters its node; its HALT otherwise)


def decode_frames(program: CompiledProgram, data: dict[str, Any], dec: Decoder) -> list[Frame]:
    frames = []
    if data["stack"] and data["stack"][0]["scope"] != "<module>":
        module = program.module
        # just after its ENTER_NODE: the node's result goes through `__agent_end`, then HALT
        frames.append(Frame(module, {}, _after_enter_node(module)))
    for f in data["stack"]:
        scope = f["scope"]
        code = program.module if scope == "<module>" else program.functions[scope]
        locals_: dict[str, Any] = {}
        for k, v in (f.get("args") or {}).items():
            locals_[k] = dec.dec(v)
        for k, v in (f.get("locals") or {}).items():
            locals_[k] = dec.dec(v)
        for k, v in (f.get("hidden") or {}).items():
            locals_[k] = dec.dec(v)
        pos = f["position"]
        if not isinstance(pos.get("pc"), int) or not isinstance(pos.get("stmt_pc", 0), int):
            raise ValueError(f"frame `{scope}` has a bad position")
        if not isinstance(f.get("stack") or [], list) or not isinstance(f.get("entry") or {}, dict):
            raise ValueError(f"frame `{scope}` has a malformed stack or entry")
        frame = Frame(code, locals_, pos["pc"])
        frame.stmt_pc = pos.get("stmt_pc", pos["pc"])
        frame.stmt_sp = pos.get("stmt_sp", 0)
        frame.stack = [dec.dec(v) for v in f.get("stack") or []]
        frame.traps = [tuple(t) for t in f.get("traps") or []]
        frame.handlers = [tuple(h) for h in f.get("handlers") or []]
        frame.threads = [str(t) for t in f.get("threads") or []]
        entry = f.get("entry")
        frame.entry = {k: dec.dec(v) for k, v in entry.items()} if entry is not None else None
        env = f.get("entry_env")
        if env is not None:
            if not isinstance(env, dict) or not isinstance(env.get("globals"), dict):
                raise ValueError(f"frame `{scope}` has a malformed entry_env")
            lengths = env.get("threads") or {}
            if not isinstance(lengths, dict) or not all(
                isinstance(n, int) for n in lengths.values()
            ):
                raise ValueError(f"frame `{scope}` has malformed entry thread lengths")
            frame.entry_env = (
                {k: dec.dec(v) for k, v in env["globals"].items()},
                {str(t): n for t, n in lengths.items()},
            )
        if code.kind == "def" and frame.entry is None:
            frame.entry = {p: locals_.get(p) for p in code.param_names}
        frames.append(frame)
    return frames


def decode_threads(data: dict[str, Any], dec: Decoder) -> dict[str, list[dict[str, Any]]]:
    raw = data.get("threads") or {}
    threads = raw.get("threads", raw) if isinstance(raw, dict) else {}
    if not isinstance(threads, dict):
        raise ValueError("`threads.threads` should be an object")
    out: dict[str, list[dict[str, Any]]] = {}
    for tid, msgs in threads.items():
        if not isinstance(msgs, list):
            continue
        out[str(tid)] = [_decode_message(dec.dec(m), tid) for m in msgs]
    out.setdefault("0", [])
    return out


def _decode_message(v: Any, tid: Any) -> dict[str, Any]:
    if type(v) is JSObject:
        if not isinstance(v.get("role"), str):  # a provider would send it as it is
            raise ValueError(f"a message of thread {tid} has no role (a string)")
        return {k: to_plain(x) for k, x in v.items()}
    return {"role": "user", "content": to_str(v)}
