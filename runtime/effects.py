"""Provides the side-effect journal: effects on the world happen at most once per key.

Every builtin that acts on the world (`write`, `saveToDisk`, …) and every `destructive` def goes
through `perform`. The key is `run:branch:step:call-index`; a key already in the journal is not
performed again, its recorded result is returned instead (resume after a crash). While a run is
replayed (`machine.replaying`), effects are never performed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from runtime.machine.values import from_plain, to_plain

if TYPE_CHECKING:
    from runtime.machine.machine import Machine


class EffectJournal(Protocol):
    """Durable storage of effects (the run store); `put` must be durable when it returns."""

    def get(self, key: str) -> dict[str, Any] | None: ...

    def put(self, key: str, entry: dict[str, Any]) -> None: ...


def effect_key(m: Machine) -> str:
    key = f"{m.run_id or 'run'}:{m.branch}:{m.step_index}:{m.call_index}"
    m.call_index += 1
    return key


def perform(m: Machine, kind: str, args: dict[str, Any], act: Callable[[], Any]) -> Any:
    """Run `act` unless this effect already happened (or the run is a replay)."""
    key = effect_key(m)
    journal: EffectJournal | None = getattr(m, "journal", None)
    entry = m.effects.get(key)
    if entry is None and journal is not None:
        entry = journal.get(key)
    if entry is not None and entry.get("status") == "applied":
        m.event("effect", f"{kind} (already done)", {"key": key, "kind": kind, "skipped": True})
        return from_plain(entry.get("result"))
    if getattr(m, "replaying", False):
        m.event("effect", f"{kind} (suppressed in replay)", {"key": key, "kind": kind, "skipped": True})
        return True
    result = act()
    entry = {"kind": kind, "args": args, "status": "applied", "step": m.step_index, "result": to_plain(result)}
    m.effects[key] = entry
    if journal is not None:
        journal.put(key, entry)
    m.event("effect", f"{kind} {args.get('path', '')}".strip(), {"key": key, "kind": kind, "args": args})
    return result
