"""Provides the durable effect journal: the run store's `effects` table behind the machine's
journal interface, so an effect applied before a crash is never applied again."""

from __future__ import annotations

from typing import Any


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
