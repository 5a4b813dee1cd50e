"""Provides the one model that serves a run's recorded answers and then, if it has one, hands
over to a live model.

Every way of re-executing a run uses it:
- rebuilding the machine at a step (`fork.machine_at`): recorded answers only; asking for more
  is an error, since the record is all there is;
- resuming a stopped run (`resume`): the answers the stopped process got after its last stored
  step, then the live model, which then takes the machine's model slot;
- replaying a run (`replay`): its subclass there checks each request against the record before
  serving the recorded answer (`next_answer`).

To the program it looks like the model the run was recorded with (`like`: its stored config) or,
without one, like the live model: provider, model name and, for a model that counts its calls (a
scripted queue, the simulated model), `position`, which a checkpoint the program takes holds.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from runtime.errors import AgencyError
from runtime.llm.base import Completion, LLMError
from runtime.llm.registry import resolve_model
from runtime.vm.machine import Machine


class RouteAll(dict):  # type: ignore[type-arg]
    """`llm_calls.model_for`'s cache of other models, while re-executing from a record: every
    model a call names is the replaying one (never a live model)."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: Any) -> Any:
        return self.model


class RecordedAnswers:
    """Serves `answers` in order, then hands over to `live` (or fails, without one).

    `served`: answers the run had had before these (a resumed run's count goes on from there).
    `machine`: while answers remain, every model a call names is this one (`RouteAll`); when they
    run out, the machine's model becomes the live one.
    """

    def __init__(
        self,
        answers: Sequence[Completion] = (),
        *,
        live: Any = None,
        like: dict[str, Any] | None = None,
        served: int = 0,
        machine: Machine | None = None,
    ) -> None:
        self.answers = list(answers)
        self.index = 0
        self.served = served
        self.live = live
        self.machine = machine
        if like is not None:
            self.provider = str(like.get("provider") or "replay")
            self.model = str(like.get("model") or "replay")
            counts = counts_calls(like)
        elif live is not None:
            self.provider = str(getattr(live, "provider", ""))
            self.model = str(getattr(live, "model", ""))
            counts = hasattr(live, "position")
        else:
            self.provider = self.model = "replay"
            counts = True
        if counts:
            self.position = served
        if machine is not None:
            machine.host.models = RouteAll(self) if self.answers else {}

    def __getattr__(self, name: str) -> Any:  # the rest of the live model's interface
        live = self.__dict__.get("live")
        if live is None or name == "live":
            raise AttributeError(name)
        return getattr(live, name)

    def next_answer(
        self,
        messages: list[dict[str, Any]],
        tools: list[Any],
        response_schema: Any,
        params: dict[str, Any],
    ) -> Completion | None:
        """The next recorded answer to this request, or None when the record has no more."""
        if self.index < len(self.answers):
            self.index += 1
            return self.answers[self.index - 1]
        return None

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[Any],
        response_schema: Any,
        params: dict[str, Any],
    ) -> Completion:
        answer = self.next_answer(messages, tools, response_schema, params)
        if answer is None:
            return self.hand_over().complete(messages, tools, response_schema, params)  # type: ignore[no-any-return]
        self.served += 1
        if "position" in self.__dict__:
            self.position = self.served
        if self.machine is not None and self.index == len(self.answers):
            self.machine.host.models = {}
        return answer

    def hand_over(self) -> Any:
        """The live model, from here on (a scripted queue goes on from where the record got
        to); an LLMError when there is none."""
        live = self.live
        if live is None:
            raise LLMError(
                f"replay: the record has no model answer for call {self.served + 1} "
                "(the program asks for more than was recorded)",
                provider="replay",
            )
        if hasattr(live, "position"):
            live.position = self.served
        if self.machine is not None and self.machine.model is self:
            self.machine.model = live
        return live


def counts_calls(config: dict[str, Any]) -> bool:
    """Whether the model a run was recorded with counts its calls (`position`: a scripted
    queue, the simulated model), which a checkpoint then holds."""
    provider = config.get("provider")
    return provider in ("mock", "sim") and _counts_calls(str(provider))


@functools.cache
def _counts_calls(provider: str) -> bool:
    try:
        return hasattr(resolve_model(provider, mocks=[]), "position")
    except AgencyError:
        return False
