"""Provides the side-effect journal: effects on the world happen at most once per key.

Every builtin that acts on the world (`write`, `saveToDisk`) and every `destructive` def goes
through the journal. An effect's key is `run:branch:step:call-index`: the step that performs it
and its rank among the effects of that step. Re-execution from the record is step-exact, so a
resumed or replayed run meets the same keys at the same points.

- `perform(m, kind, args, act, done=...)`: a builtin effect. A key already applied in the
  journal is not performed again: its recorded result is returned (resume after a crash).
  While a run is replayed (`machine.replaying`) effects are never performed. The entry is
  written to the durable journal (the run store, `put` commits before it returns, together with
  everything recorded before it) right after the effect.
- The one effect that may have been in flight when a process died is *in doubt*: done or not,
  the journal cannot say. The first journal miss after a resume is checked with the effect's
  postcondition (`done()`: the file already holds exactly these bytes) and not redone if it
  holds. File writes are atomic (temporary file, then rename), so a file is never half written.
- `destructive` defs (`begin_destructive`/`end_destructive`, called by the machine when such a
  def is entered and when it returns): the call gets a key; when it returns, its result is
  journaled. When the key is already applied, the recorded result is returned in place of the
  one the body computes. The body itself is always executed: step numbering, and so every
  key after it, must stay what it was; each world action inside it is a journaled builtin that
  is not repeated. `idempotent` defs are not journaled (they may be re-run freely).
- `observe(m, kind, args, act)`: a builtin that reads the world (`read`, `loadFromDisk`). Not an
  effect, but an input: its result goes in the record (an `effect` event), and re-execution
  from the record (replay, resume, fork) is served that result instead of reading the disk
  again, so the rebuilt state is the recorded one even when the files changed since.

Values in the journal use the checkpoint encoding (lossless: results, shared containers, NaN).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.vm.state import Decoder, Encoder
from runtime.vm.values import from_plain

if TYPE_CHECKING:
    from runtime.vm.frames import Frame
    from runtime.vm.machine import Machine

EFFECT_LOCAL = "__effect"  # a destructive def's frame local holding its effect key


# -- values ------------------------------------------------------------------------------------


def pack(v: Any) -> Any:
    """An Agency value as JSON data, losslessly (the checkpoint encoding)."""
    if v is None or type(v) in (bool, int, str):
        return v

    enc = Encoder()
    enc.count(v)
    out = {"$value": enc.enc(v)}
    if enc.heap:
        out["heap"] = enc.heap
    return out


def unpack(data: Any) -> Any:
    """The value `pack` encoded (also plain JSON from older journals)."""
    if type(data) is dict and "$value" in data:
        return Decoder(data.get("heap")).dec(data["$value"])

    return from_plain(data)


# -- keys and lookups --------------------------------------------------------------------------


def effect_key(m: Machine) -> str:
    if m.call_step != m.step_index:  # the step's first effect call (steps reset it lazily)
        m.call_step, m.call_index = m.step_index, 0
    key = f"{m.run_id or 'run'}:{m.branch}:{m.step_index}:{m.call_index}"
    m.call_index += 1
    return key


def lookup(m: Machine, key: str) -> dict[str, Any] | None:
    """The applied entry for `key`: this process's own, the durable journal's, or (while
    re-executing) the record's."""
    entry = m.effects.get(key)
    journal = m.host.journal
    if entry is None and journal is not None:
        entry = journal.get(key)
    if entry is not None and entry.get("status") == "applied":
        return dict(entry)
    recorded = m.host.recorded
    if recorded and m.replaying:
        entry = recorded.get(short_key(key))
        if entry is not None and "result" in entry:
            return dict(entry)
    return None


def short_key(key: str) -> str:
    """`run:branch:step:call` → `step:call`, how re-execution finds what the record holds."""
    parts = key.rsplit(":", 2)
    return f"{parts[-2]}:{parts[-1]}" if len(parts) == 3 else key


def _check(m: Machine, key: str, kind: str, args: dict[str, Any]) -> None:
    check = m.host.check_effect
    if check is not None:
        check(m, key, kind, args)


def _record(m: Machine, key: str, kind: str, args: dict[str, Any], result: Any) -> None:
    entry = {
        "kind": kind,
        "args": args,
        "status": "applied",
        "step": m.step_index,
        "result": pack(result),
    }
    m.effects[key] = entry
    journal = m.host.journal
    if journal is not None:
        journal.put(key, entry)


# -- builtin effects -----------------------------------------------------------------------------


BEFORE = "~before"  # the suffix of the key under which `perform` notes `before()`


def perform(
    m: Machine,
    kind: str,
    args: dict[str, Any],
    act: Callable[[], Any],
    done: Callable[[], bool] | None = None,
    *,
    before: Callable[[], Any] | None = None,
    done_since: Callable[[Any], bool] | None = None,
) -> Any:
    """Run `act` unless this effect already happened (or the run is a replay).

    An effect whose postcondition the world alone cannot show (an append: the file's new end
    may be an earlier append's) gives `before`, what to note of the world just before it (the
    file's size), written to the durable journal ahead of the act, and `done_since`, which
    tells from that note whether the act happened (the file grew by exactly these bytes)."""
    key = effect_key(m)
    if m.replaying:
        _check(m, key, kind, args)
    entry = lookup(m, key)
    if entry is not None:
        m.event(
            "effect",
            f"{kind} (already done)",
            {"key": key, "kind": kind, "args": args, "skipped": True},
        )
        return unpack(entry.get("result"))
    if m.replaying:
        recorded = (m.host.recorded or {}).get(short_key(key))
        if recorded is not None and "error" in recorded:
            err = AgencyRuntimeError(str(recorded["error"]))
            err.destructive = True
            raise err
        m.event(
            "effect",
            f"{kind} (suppressed in replay)",
            {"key": key, "kind": kind, "args": args, "skipped": True},
        )
        return True
    journal = m.host.journal
    if journal is not None and journal.in_doubt:
        # The first effect after a resume that the journal does not know: the crashed process
        # may have performed it just before it died. Its postcondition says.
        journal.in_doubt = False
        if done_since is not None:
            noted = lookup(m, key + BEFORE)
            done = None if noted is None else lambda: done_since(unpack(noted.get("result")))
        if done is not None and done():
            _record(m, key, kind, args, True)
            m.event(
                "effect",
                f"{kind} (found done)",
                {"key": key, "kind": kind, "args": args, "skipped": True},
            )
            return True
    if before is not None and journal is not None:
        # Durable before the act: a process that dies within it leaves the note behind. (In
        # the journal only: the note is no effect, and the machine's own entries are.)
        note = {"kind": kind + " (before)", "args": args, "step": m.step_index}
        journal.put(key + BEFORE, {**note, "status": "applied", "result": pack(before())})
    try:
        result = act()
    except AgencyRuntimeError as exc:
        m.event(
            "effect",
            f"{kind} failed",
            {"key": key, "kind": kind, "args": args, "error": exc.message},
        )
        exc.destructive = True  # the work began: a failure made of this error says so
        raise
    _record(m, key, kind, args, result)
    m.event(
        "effect",
        f"{kind} {args.get('path', '')}".strip(),
        {"key": key, "kind": kind, "args": args, "result": pack(result)},
    )
    return result


def observe(m: Machine, kind: str, args: dict[str, Any], act: Callable[[], Any]) -> Any:
    """Read the world, or, while re-executing from a record, what the record says was read."""
    key = effect_key(m)
    if m.replaying:
        _check(m, key, kind, args)
        recorded = m.host.recorded or {}
        entry = recorded.get(short_key(key))
        if entry is not None:
            if "error" in entry:
                raise AgencyRuntimeError(str(entry["error"]))
            return unpack(entry.get("result"))
    try:
        result = act()
    except AgencyRuntimeError as exc:
        m.event(
            "effect",
            f"{kind} failed",
            {"key": key, "kind": kind, "args": args, "observed": True, "error": exc.message},
        )
        raise
    m.event(
        "effect",
        f"{kind} {args.get('path', '')}".strip(),
        {"key": key, "kind": kind, "args": args, "observed": True, "result": pack(result)},
    )
    return result


# -- destructive defs --------------------------------------------------------------------------


def journaled(code: Any) -> bool:
    mods = code.modifiers
    return "destructive" in mods and "idempotent" not in mods


def begin_destructive(m: Machine, f: Frame) -> None:
    """A destructive def was entered: give the call its key (kept in a hidden local)."""
    f.locals[EFFECT_LOCAL] = effect_key(m)


def end_destructive(m: Machine, f: Frame, value: Any) -> Any:
    """A destructive def returns `value`: journal it, or return the recorded result."""
    key = f.locals.get(EFFECT_LOCAL)
    if type(key) is not str:
        return value
    kind = f"def {f.code.name}"
    entry = lookup(m, key)
    if entry is not None:
        m.event("effect", f"{kind} (already done)", {"key": key, "kind": kind, "skipped": True})
        return unpack(entry.get("result"))
    if m.replaying:
        return value
    args = {"args": pack({k: v for k, v in (f.entry or {}).items()})} if f.entry else {}
    _record(m, key, kind, args, value)
    m.event("effect", kind, {"key": key, "kind": kind, "result": pack(value)})
    return value


# -- files ---------------------------------------------------------------------------------------


def atomic_write(path: Path, data: str) -> None:
    """Write `data` to `path` so that a crash leaves either the old or the new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.agency-tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            fh.write(data)
        with contextlib.suppress(OSError):
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def content_hash(data: str) -> str:
    """A short digest of what an effect writes (the journal tells two writes apart by it)."""
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:16]


def file_holds(path: Path, data: str) -> bool:
    """Whether `path` holds exactly `data` (the postcondition of writing it)."""
    try:
        return path.read_bytes() == data.encode("utf-8")
    except OSError:
        return False
