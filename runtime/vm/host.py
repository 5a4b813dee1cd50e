"""Provides `Host`: what a machine gets from whoever runs it, besides its program and model.

A plain live run needs none of it. The runs layer fills it in: the durable effect journal of a
recorded run; while re-executing from a record (fork, resume, replay), the effects the record
holds and, for replay, a check that each effect is the one recorded; and how a call that names
its own model (`llm(p, {model: …})`) is routed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from runtime.vm.machine import Machine


class EffectJournal(Protocol):
    """Durable storage of effects (the run store); `put` must be durable when it returns.

    `in_doubt` is true on a resumed run until its first effect: the process that died may have
    performed that one just before it died, so its postcondition is checked first."""

    in_doubt: bool

    def get(self, key: str) -> dict[str, Any] | None: ...

    def put(self, key: str, entry: dict[str, Any]) -> None: ...


EffectCheck = Callable[["Machine", str, str, dict[str, Any]], None]


@dataclass
class Host:
    """The machine's view of its runner.

    `journal`: the durable effect journal (None: effects are kept in the machine only).
    `recorded`: while the machine is `replaying`, the effects the record holds, by
    `step:call` key; they are served instead of touching the world.
    `check_effect(machine, key, kind, args)`: called before each effect while replaying (replay's
    divergence check).
    `models`: a call's requested model spec → the model that answers it (a dict, or a mapping
    that sends every request to the run's own model while answers come from the record).
    """

    journal: EffectJournal | None = None
    recorded: dict[str, dict[str, Any]] | None = None
    check_effect: EffectCheck | None = None
    models: dict[str, Any] = field(default_factory=dict)
